"""Labels as real callers set them (issue 30): every valid case labels its tensors as torch_npu and
op-plugin do, or belongs to a group that tests labels on purpose (harness/audit/labels.py); a case
file that names no format gets the callers' labels, tensor by tensor; and the gate finds a label the
real code refuses when one is put back."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from harness.audit import labels
from harness.core import formats
from harness.operators import load_case_file

pytestmark = pytest.mark.loops_over_ops


def test_no_valid_case_depends_on_a_label_the_real_code_refuses(loaded):
    found = labels.gaps(loaded)
    assert not found, ("valid cases whose labels the generic L0 operators refuse (label tensors as callers do: "
                       "leave `format` out, or move the case to an l0_ group with its evidence):\n"
                       + "\n".join(map(str, found[:20])))


def _relabelled(loaded, rank: int, label: str):
    """Every valid non-exempt case of `rank` with every tensor labelled `label`."""
    return [(op, [dataclasses.replace(c, formats={t: label for t in c.formats}) for c in cases
                  if c.kind == "valid" and len(c.shape) == rank and not labels.exempt(c)])
            for op, cases in loaded]


def test_a_label_of_another_rank_is_found_on_every_op(loaded):
    """3-D tensors labelled NCHW, as the suite once did: each op with 3-D cases is caught."""
    broken = _relabelled(loaded, 3, "NCHW")
    found = labels.gaps(broken, with_model=False)
    ops_with_3d = {op.name for op, cases in broken if cases}
    assert ops_with_3d and {g.case_id.split(".")[0] for g in found} == ops_with_3d
    assert all("NCHW/3" in g.what for g in found)


def test_a_label_without_a_fixed_rank_that_an_op_still_refuses_is_found(loaded):
    """3-D ND has no fixed rank, but AdaptiveMaxPool2d's final copy wants NCL there: only the op's
    model knows, and the gate asks it. MaxPool2dWithIndices takes 3-D ND, so nothing is found there."""
    broken = [(op, cases) for op, cases in _relabelled(loaded, 3, "ND")
              if op.name in ("AdaptiveMaxPool2dBackward", "MaxPool2dWithIndicesBackward")]
    found = labels.gaps(broken)
    assert found and {g.case_id.split(".")[0] for g in found} == {"AdaptiveMaxPool2dBackward"}
    assert all("L0.R2" in g.what for g in found)
    assert not labels.gaps(broken, with_model=False)


def test_an_l0_or_deviation_group_may_carry_any_label(loaded):
    broken = [(op, [dataclasses.replace(c, group="l0_" + c.group) for c in cases])
              for op, cases in _relabelled(loaded, 3, "NCHW")]
    assert not labels.gaps(broken, with_model=False)


def _case_file(tmp_path, groups) -> list:
    """The AdaptiveMaxPool2d case file's header with `groups` instead of its own."""
    from harness.core.paths import CASES_DIR
    doc = yaml.safe_load((CASES_DIR / "adaptive_max_pool2d_backward.yaml").read_text())
    doc["groups"] = groups
    path = tmp_path / "adaptive_max_pool2d_backward.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_case_file(path)[1]


def test_a_group_without_a_format_labels_each_tensor_as_callers_do(tmp_path):
    cases = _case_file(tmp_path, [
        {"name": "g", "matrix": {"shape": [[2, 3, 8, 8], [3, 8, 8]], "dtype": ["float32"], "index_dtype": ["int32"],
                                 "attrs": [{"outputSize": [4, 4]}]}},
        {"name": "h", "matrix": {"shape": [[2, 3, 8, 8], [3, 8, 8]], "dtype": ["float32"], "index_dtype": ["int32"],
                                 "format": ["ND", "CALLER"], "attrs": [{"outputSize": [4, 4]}]}}])
    by_rank = {(c.group, len(c.shape), tuple(sorted(set(c.formats.values())))) for c in cases}
    assert by_rank == {("g", 4, ("NCHW",)), ("g", 3, ("NCL",)), ("h", 4, ("ND",)), ("h", 3, ("ND",)),
                       ("h", 4, ("NCHW",)), ("h", 3, ("NCL",))}
    assert all("CALLER" not in c.name for c in cases)


def test_a_reshaped_tensor_keeps_a_callers_label_unless_the_base_names_one(tmp_path):
    base = {"shape": [2, 3, 9, 9], "dtype": "float32", "index_dtype": "int32", "attrs": {"outputSize": [4, 4]}}
    reshape = {"gradOutput": {"shape": [1, 2, 3, 4, 4]}}
    cases = _case_file(tmp_path, [{"name": "bad", "invalid": {"base": base, "scenarios": [
        {"name": "callers", "check": "B6", "tensors": reshape, "status": 161002},
        {"name": "named", "check": "B6", "base": {"format": "ND"}, "tensors": reshape, "status": 161002},
        {"name": "own", "check": "B6", "tensors": {"gradOutput": {"shape": [3, 4, 4], "format": "CALLER"}},
         "status": 161002}]}}])
    labels_of = {c.name: (c.formats["gradOutput"], c.mutation.tensors["gradOutput"].get("format")) for c in cases}
    assert labels_of == {"bad[callers]": ("NCHW", "NCDHW"), "bad[named]": ("ND", None), "bad[own]": ("NCHW", "NCL")}


@pytest.mark.parametrize("label, rank, fits", [("NCL", 3, True), ("NCHW", 3, False), ("ND", 3, True),
                                               ("NCL", 4, False), ("NHWC", 4, True), ("NCDHW", 4, False),
                                               ("NCDHW", 5, True), ("NDHWC", 5, True), ("NCHW", 5, False)])
def test_fixed_ranks_follow_transdata(label, rank, fits):
    assert formats.fits_rank(label, rank) is fits
    assert formats.caller_label(rank) == {3: "NCL", 4: "NCHW", 5: "NCDHW"}[rank]


def test_every_doc_deviation_names_cases_that_show_the_codes_answer(loaded):
    """golden INFO.doc_deviations: what the doc allows and the code refuses, tied to the cases that
    expect the code's status (a name that matches no case, or a case of another family, is stale)."""
    import golden
    listed = 0
    for op, cases in loaded:
        names = {c.group for c in cases} | {c.name for c in cases}
        for d in golden.load(op.golden).INFO.doc_deviations:
            listed += 1
            missing = [n for n in d.cases if n not in names]
            assert not missing, f"{op.name} {d.name}: no case {missing}"
            shown = [c for c in cases if c.name in d.cases or c.group in d.cases]
            assert {f for c in shown for f in c.families} <= set(d.families), (op.name, d.name)
            assert d.doc and d.code and "(" in d.doc, f"{op.name} {d.name}: say where the doc says it"
    assert listed >= 4
