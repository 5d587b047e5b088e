"""Malformed case files: each mistake is one line naming file, group and field."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import yaml

from harness.operators import load_case_file as load
from harness.core.errors import CaseFileError

BASE = {
    "op": "MaxPool2dWithIndicesBackward",
    "golden": "max_pool2d_with_indices_backward",
    "standard": "single_bm_high_performance",
    "families": ["ascend910b", "ascend950"],
    "output_like": "self",
    "spatial_rank": 2,
    "signature": [
        {"name": "gradOutput", "type": "tensor", "dtype": "data"},
        {"name": "self", "type": "tensor", "dtype": "data"},
        {"name": "indices", "type": "tensor", "dtype": "index"},
        {"name": "kernelSize", "type": "int_array"},
        {"name": "stride", "type": "int_array"},
        {"name": "padding", "type": "int_array"},
        {"name": "dilation", "type": "int_array"},
        {"name": "ceilMode", "type": "bool"},
        {"name": "gradInput", "type": "tensor", "dtype": "data", "output": True},
    ],
    "checks": [{"id": "B1", "what": "gradOutput != null", "status": 161001}],
    "groups": [
        {"name": "basic", "matrix": {
            "shape": [[1, 2, 4, 4]], "dtype": ["float32"], "index_dtype": ["int32"], "format": ["NCHW"],
            "attrs": [{"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}]}},
        {"name": "bad_args", "invalid": {
            "base": {"shape": [1, 1, 4, 4], "dtype": "float32", "index_dtype": "int32", "format": "NCHW",
                     "attrs": {"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}},
            "scenarios": [{"check": "B1", "null": "gradOutput", "status": 161001}]}},
    ],
}


def _write(tmp_path, doc, text=None):
    path = tmp_path / "case.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(doc, sort_keys=False))
    return path


def _matrix(doc):
    return doc["groups"][0]["matrix"]


def _scenario(doc):
    return doc["groups"][1]["invalid"]["scenarios"][0]


def _ranked(doc, ranks=(3, 4)):
    """BASE with the op's rank limits on every tensor of its signature (MaxPool2d: 3-D or 4-D)."""
    for p in doc["signature"]:
        if p["type"] == "tensor":
            p["ranks"] = ranks if isinstance(ranks, dict) else list(ranks)
    return doc


def _base(doc):
    return doc["groups"][1]["invalid"]["base"]


def test_base_document_is_valid(tmp_path):
    op, cases = load(_write(tmp_path, BASE))
    assert op.name == "MaxPool2dWithIndicesBackward" and len(cases) == 2


# (id, mutation of the document, expected group, expected field, words the message must contain)
MISTAKES = [
    ("unknown-dtype", lambda d: _matrix(d).update(dtype=["float33"]), "basic", "matrix.dtype", "unknown dtype 'float33'"),
    ("unknown-index-dtype", lambda d: _matrix(d).update(index_dtype=["int23"]), "basic", "matrix.index_dtype", "int23"),
    ("unknown-family", lambda d: d["groups"][0].update(families=["ascend999"]), "basic", "families", "ascend999"),
    ("timeout-inf", lambda d: d["groups"][0].update(timeout_s=float("inf")), "basic", "timeout_s", "got inf"),
    ("timeout-nan", lambda d: d["groups"][0].update(timeout_s=float("nan")), "basic", "timeout_s", "got nan"),
    ("deviation-unknown-family", lambda d: d["groups"][0].update(deviations=[
        {"backend": "aclnn", "families": ["ascend95"], "reason": "r"}]), "basic", "deviations.0.families", "ascend95"),
    ("atk-deviation-unknown-backend", lambda d: d.update(atk_deviations=[{"backend": "npu", "reason": "r"}]),
     None, "atk_deviations.0.backend", "unknown backend 'npu'"),
    ("unknown-golden", lambda d: d.update(golden="no_such_golden"), None, "golden", "no_such_golden"),
    ("attr-not-in-signature", lambda d: _matrix(d)["attrs"][0].update(groups=2), "basic", "matrix.attrs.0.groups", "unknown attribute"),
    ("missing-attr", lambda d: _matrix(d)["attrs"][0].pop("ceilMode"), "basic", "matrix.attrs.0.ceilMode", "missing attribute"),
    ("attr-wrong-type", lambda d: _matrix(d)["attrs"][0].update(kernelSize=3), "basic", "matrix.attrs.0.kernelSize", "list of integers"),
    ("bool-attr-wrong-type", lambda d: _matrix(d)["attrs"][0].update(ceilMode="yes"), "basic", "matrix.attrs.0.ceilMode", "must be bool"),
    ("unknown-standard", lambda d: d.update(standard="close_enough"), None, "standard", "close_enough"),
    ("unknown-format", lambda d: _matrix(d).update(format=["NCWH"]), "basic", "matrix.format.0", "unknown format 'NCWH'"),
    ("unknown-layout", lambda d: _matrix(d).update(layout=["zigzag"]), "basic", "matrix.layout.0", "zigzag"),
    ("layout-for-unknown-tensor", lambda d: _matrix(d).update(layout=[{"default": "strided", "weights": "contiguous"}]), "basic", "matrix.layout.0", "layout given for unknown tensor"),
    ("unknown-distribution", lambda d: _matrix(d).update(values=["gaussian"]), "basic", "matrix.values", "unknown distribution 'gaussian'"),
    ("negative-dim", lambda d: _matrix(d).update(shape=[[1, -2, 4, 4]]), "basic", "matrix.shape.0", "negative dimension"),
    ("duplicate-case", lambda d: _matrix(d).update(dtype=["float32", "fp32"]), "basic", None, "duplicate case id"),
    ("duplicate-group", lambda d: d["groups"].append(copy.deepcopy(d["groups"][0])), "basic", "name", "duplicate group"),
    ("matrix-and-invalid", lambda d: d["groups"][0].update(invalid=d["groups"][1]["invalid"]), "basic", None, "exactly one of 'matrix' or 'invalid'"),
    ("typo-top-level-key", lambda d: d.update(grups=[]), None, None, "grups"),
    ("missing-top-level-key", lambda d: d.pop("signature"), None, None, "'signature' is a required property"),
    ("null-on-scalar", lambda d: _scenario(d).update(null="ceilMode"), "bad_args", "invalid.scenarios.0.null", "not a tensor or int_array"),
    ("status-missing-family", lambda d: _scenario(d).update(status={"ascend910b": 161001}), "bad_args", "invalid.scenarios.0.status", "ascend950"),
    ("status-not-int", lambda d: _scenario(d).update(status="161001"), "bad_args", "invalid.scenarios.0.status", "161001"),
    ("undeclared-check", lambda d: _scenario(d).update(check="B99"), "bad_args", "invalid.scenarios.0.check", "B99"),
    # a dtype torch cannot compute with prepares no valid base: found at load, not as a FAIL at run time
    ("torchless-base-dtype", lambda d: _scenario(d).update(base={"dtype": "float8_e5m2"}), "bad_args",
     "invalid.scenarios.0.base.dtype", "pass it as a tensor change"),
    ("unknown-tensor-in-scenario", lambda d: _scenario(d).update(tensors={"weights": {"dtype": "float16"}}), "bad_args", "invalid.scenarios.0.tensors", "weights"),
    ("bad-distribution-def", lambda d: d.update(distributions={"wide": {"kind": "uniform", "low": 5, "high": -5}}), None, "distributions.wide", "low 5 > high -5"),
    ("int8-attr-out-of-range", None, None, None, None),  # placeholder replaced below for the AvgPool signature
    # issue 8: unknown keys everywhere, statuses, absurd numbers, scenario/check disagreement
    ("unknown-key-in-scenario-base", lambda d: _scenario(d).update(base={"dtyp": "bfloat16"}), "bad_args",
     "invalid.scenarios.0.base", "'dtyp' was unexpected"),
    ("unknown-key-in-distribution", lambda d: d.update(distributions={"w": {"kind": "uniform", "low": 0, "high": 1, "hihg": 2}}),
     None, "distributions.w", "'hihg' was unexpected"),
    ("param-of-another-kind", lambda d: d.update(distributions={"w": {"kind": "uniform", "low": 0, "high": 1, "std": 2}}),
     None, "distributions.w", "uniform takes low, high, not 'std'"),
    ("distribution-not-finite", lambda d: d.update(distributions={"w": {"kind": "normal", "mean": float("nan"), "std": 1}}),
     None, "distributions.w", "finite number"),
    ("distribution-unknown-tensor", lambda d: d.update(distributions={"w": {"kind": "normal", "mean": 0, "std": 1, "tensors": {"weights": "uniform"}}}),
     None, "distributions.w.tensors", "unknown tensor 'weights'"),
    ("status-minus-one", lambda d: _scenario(d).update(status=-1), "bad_args", "invalid.scenarios.0.status", "not an aclnn status"),
    ("status-2-40", lambda d: _scenario(d).update(status={"ascend950": 1 << 40, "others": 161001}), "bad_args",
     "invalid.scenarios.0.status.ascend950", "1099511627776 is not an aclnn status"),
    ("group-status-unknown", lambda d: d["groups"][0].update(status=161), "basic", "status", "not an aclnn status"),
    ("check-status-unknown", lambda d: d["checks"][0].update(status=261001), None, "checks.0.status", "not an aclnn status"),
    ("scenario-disagrees-with-check", lambda d: _scenario(d).update(status={"ascend950": 161002, "others": 161001}), "bad_args",
     "invalid.scenarios.0.status", "status 161002 on ascend950 disagrees with check B1, which returns 161001"),
    ("huge-dim", lambda d: _matrix(d).update(shape=[[1, 2, 1 << 40, 4]]), "basic", "matrix.shape.0", "more than 134217728 elements"),
    ("too-many-elements", lambda d: _matrix(d).update(shape=[[1024, 1024, 1024, 1]]), "basic", "matrix.shape.0", "elements"),
    ("base-negative-dim", lambda d: d["groups"][1]["invalid"]["base"].update(shape=[1, -1, 4, 4]), "bad_args",
     "invalid.base.shape", "negative dimension"),
    ("scenario-base-negative-dim", lambda d: _scenario(d).update(base={"shape": [1, -1, 4, 4]}), "bad_args",
     "invalid.scenarios.0.base.shape", "negative dimension"),
    ("described-dim-beyond-int64", lambda d: _scenario(d).update(tensors={"self": {"shape": [1, 10 ** 30]}}), "bad_args",
     "invalid.scenarios.0.tensors.self.shape", "does not fit int64"),
    ("attr-beyond-int64", lambda d: _matrix(d)["attrs"][0].update(kernelSize=[2, 10 ** 30]), "basic",
     "matrix.attrs.0.kernelSize", "must fit int64"),
    ("int-array-too-long", lambda d: _matrix(d)["attrs"][0].update(padding=[0] * 65), "basic",
     "matrix.attrs.0.padding", "65 entries"),
    ("matrix-too-big", lambda d: _matrix(d).update(shape=[[1, 1, 1, i + 1] for i in range(101)], dtype=["float32"] * 1000),
     "basic", "matrix", "expands to 101000 cases"),
    # integers written as floats: before, a shape of 4.0 ran as 4 under an id reading 4.0, and a float
    # status was a collection traceback (AttributeError: 'float' object has no attribute 'items')
    ("shape-float", lambda d: _matrix(d).update(shape=[[1, 2, 4.0, 4]]), "basic", "matrix.shape.0.2",
     "expected an integer, got a float: 4.0 (write 4)"),
    ("base-shape-float", lambda d: _base(d).update(shape=[1.0, 1, 4, 4]), "bad_args", "invalid.base.shape.0",
     "got a float: 1.0 (write 1)"),
    ("described-shape-float", lambda d: _scenario(d).update(tensors={"self": {"shape": [1, 1, 4, 4.0]}}), "bad_args",
     "invalid.scenarios.0.tensors.self.shape.3", "got a float: 4.0 (write 4)"),
    ("int-array-float", lambda d: _matrix(d)["attrs"][0].update(kernelSize=[2.0, 2]), "basic",
     "matrix.attrs.0.kernelSize", "got [2.0, 2] (write 2)"),
    ("check-limit-float", lambda d: d["checks"][0].update(limit={"tensor": "self", "dims": 2.0, "max": 100}), None,
     "checks.0.limit.dims", "got a float: 2.0 (write 2)"),
    ("status-float", lambda d: _scenario(d).update(status=161001.0), "bad_args", "invalid.scenarios.0.status",
     "expected an integer or a mapping, got a float: 161001.0 (write 161001)"),
    ("group-status-float", lambda d: d["groups"][0].update(status=0.0), "basic", "status", "got a float: 0.0 (write 0)"),
    ("status-map-float", lambda d: _scenario(d).update(status={"ascend950": 161001.0, "others": 161001}), "bad_args",
     "invalid.scenarios.0.status.ascend950", "expected an integer, got a float: 161001.0 (write 161001)"),
    ("check-status-float", lambda d: d["checks"][0].update(status=161001.0), None, "checks.0.status",
     "got a float: 161001.0 (write 161001)"),
    ("status-text", lambda d: _scenario(d).update(status="161001"), "bad_args", "invalid.scenarios.0.status",
     'expected an integer or a mapping, got text: "161001"'),
    ("status-list", lambda d: _scenario(d).update(status=[161001]), "bad_args", "invalid.scenarios.0.status",
     "expected an integer or a mapping, got a list: [161001]"),
    ("status-bool", lambda d: _scenario(d).update(status=True), "bad_args", "invalid.scenarios.0.status",
     "expected an integer or a mapping, got a boolean: true"),
    ("status-null", lambda d: _scenario(d).update(status=None), "bad_args", "invalid.scenarios.0.status",
     "expected an integer or a mapping, got null"),
    ("status-map-text", lambda d: _scenario(d).update(status={"others": "161001"}), "bad_args",
     "invalid.scenarios.0.status.others", 'expected an integer, got text: "161001"'),
    # a family listed twice (before: accepted, the list kept both)
    ("family-twice-top", lambda d: d.update(families=["ascend910b", "ascend950", "ascend910b"]), None, "families",
     "family 'ascend910b' is listed twice"),
    ("family-twice-group", lambda d: d["groups"][0].update(families=["ascend950", "ascend950"]), "basic", "families",
     "family 'ascend950' is listed twice"),
    ("family-twice-scenario", lambda d: _scenario(d).update(families=["ascend910b", "ascend910b"]), "bad_args",
     "invalid.scenarios.0.families", "family 'ascend910b' is listed twice"),
    ("family-twice-deviation", lambda d: d["groups"][0].update(deviations=[
        {"backend": "aclnn", "families": ["ascend950", "ascend950"], "reason": "r"}]), "basic", "deviations.0.families",
     "family 'ascend950' is listed twice"),
    ("family-twice-check", lambda d: d["checks"][0].update(families=["ascend910b", "ascend910b"]), None,
     "checks.0.families", "family 'ascend910b' is listed twice"),
    # rank limits from the signature (before: none; a rank-9 shape failed only at run time, as a case error)
    ("rank-9-matrix", lambda d: _matrix(_ranked(d)).update(shape=[[1] * 9]), "basic", "matrix.shape.0",
     "shape [1, 1, 1, 1, 1, 1, 1, 1, 1] has rank 9, but self takes rank 3 or 4"),
    ("rank-2-base", lambda d: _base(_ranked(d)).update(shape=[4, 4]), "bad_args", "invalid.base.shape",
     "shape [4, 4] has rank 2, but self takes rank 3 or 4"),
    ("rank-5-scenario-base", lambda d: _scenario(_ranked(d)).update(base={"shape": [1, 1, 1, 4, 4]}), "bad_args",
     "invalid.scenarios.0.base.shape", "has rank 5, but self takes rank 3 or 4"),
    ("rank-per-family", lambda d: _matrix(_ranked(d, {"ascend950": [4], "others": [3, 4]})).update(shape=[[2, 4, 4]]),
     "basic", "matrix.shape.0", "has rank 3, but self takes rank 4 on ascend950"),
    ("rank-family-missing", lambda d: _ranked(d, {"ascend950": [3, 4]}), "basic", "matrix.shape.0",
     "gives self's ranks per family, but none for 'ascend910b'"),
    ("rank-unknown-family", lambda d: _ranked(d, {"ascend95": [3, 4], "others": [4]}), None, "signature.0.ranks",
     "unknown SoC family 'ascend95' in ranks"),
    ("rank-float", lambda d: _ranked(d, (3, 4.0)), None, "signature.0.ranks.1", "got a float: 4.0 (write 4)"),
    ("rank-twice", lambda d: _ranked(d, (3, 3)), None, "signature.0.ranks", "has non-unique elements"),
    ("rank-beyond-max", lambda d: _ranked(d, (3, 33)), None, "signature.0.ranks", "rank 33 is more than 32"),
    ("ranks-of-an-attribute", lambda d: d["signature"][3].update(ranks=[1]), None, "signature.3.ranks",
     "ranks given for 'kernelSize', which is not a tensor"),
    ("wrong-rank-expected-to-pass", lambda d: (_ranked(d), _scenario(d).pop("check"), _scenario(d).update(
        status=0, tensors={"indices": {"shape": [1, 1, 1, 4, 4]}})), "bad_args",
     "invalid.scenarios.0.tensors.indices.shape",
     "indices of rank 5 is expected to pass on ascend910b (status 0), but indices takes rank 3 or 4"),
    # a boolean written as text YAML 1.1 would read as one (y/n: PyYAML and YAML 1.2 read text)
    ("bool-attr-y", lambda d: _matrix(d)["attrs"][0].update(ceilMode="n"), "basic", "matrix.attrs.0.ceilMode",
     "(YAML 1.1 reads 'n' as false, PyYAML and YAML 1.2 as text: write true or false)"),
    ("bool-field-y", lambda d: d["groups"][0].update(deterministic="Y"), "basic", "deterministic",
     "expected true or false, got text: \"Y\" (YAML 1.1 reads 'Y' as true"),
]
MISTAKES = [m for m in MISTAKES if m[1] is not None]


@pytest.mark.parametrize("mutate,group,field,words", [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_mistake_is_one_line_naming_file_group_field(tmp_path, mutate, group, field, words):
    doc = copy.deepcopy(BASE)
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(CaseFileError) as info:
        load(path)
    err = info.value
    text = str(err)
    assert "\n" not in text
    assert str(path) in text
    assert words in text, text
    assert err.group == group, text
    assert err.field == field, text


def test_yaml_syntax_error_names_line(tmp_path):
    path = _write(tmp_path, None, "op: X\ngroups: [\n  - {name: a\n")
    with pytest.raises(CaseFileError) as info:
        load(path)
    text = str(info.value)
    assert "\n" not in text and str(path) in text and "not valid YAML at line" in text


def test_top_level_not_a_mapping(tmp_path):
    with pytest.raises(CaseFileError, match="top level must be a mapping"):
        load(_write(tmp_path, None, "- 1\n- 2\n"))


def test_bad_file_does_not_stop_the_others(tmp_path):
    """A broken case file is one failed item; cases of the other files still run and are recorded."""
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (cases / "broken.yaml").write_text("op: [unclosed\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "-q",
                           "--rootdir", str(tmp_path), "-c", "/dev/null", "--report-dir", str(tmp_path / "rep")],
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed, 1 skipped" in out, out     # the invalid case has no torch equivalent
    assert "broken.yaml: field 'op': not valid YAML at line 2" in out, out
    results = (tmp_path / "rep" / "results.jsonl").read_text().splitlines()
    assert len(results) == 3, results


def test_a_case_id_two_files_produce_is_refused_in_the_second(tmp_path):
    """Two files producing the same case id (a copied file, or one op's cases split in two) would
    keep one result in place of the other's: the second file is a case-file error naming the first."""
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "a_first.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (cases / "b_copy.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "-q",
                           "--rootdir", str(tmp_path), "-c", "/dev/null", "--report-dir", str(tmp_path / "rep")],
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert "1 failed, 1 passed, 1 skipped" in out, out
    assert f"b_copy.yaml: group 'basic': field 'name': case id" in out and \
        f"is already produced by {cases / 'a_first.yaml'}" in out, out
    records = [json.loads(x) for x in (tmp_path / "rep" / "results.jsonl").read_text().splitlines()]
    assert "b_copy.yaml::case-file-error" in {r["case_id"] for r in records}, records
    assert len({r["case_id"] for r in records}) == len(records) == 3


def test_huge_but_described_shapes_stay_expressible_in_invalid_scenarios(tmp_path):
    """An invalid scenario may describe negative or huge dimensions (nothing is allocated for them)."""
    doc = copy.deepcopy(BASE)
    _scenario(doc).update(tensors={"self": {"shape": [-1, (1 << 63) - 1, 1 << 40]}})
    _, cases = load(_write(tmp_path, doc))
    assert cases[1].mutation.tensors["self"]["shape"] == [-1, (1 << 63) - 1, 1 << 40]


def test_every_aclnn_status_of_the_binding_is_a_status():
    """The model's status ranges cover the binding's table (spec acl_abi.md 4.1) and nothing else."""
    from harness.acl.abi import ACLNN_STATUS
    from harness.model.fields import is_status
    assert all(is_status(v) for v in ACLNN_STATUS.values())
    assert not any(is_status(v) for v in (-1, 1, 100000, 160999, 162000, 261001, 507015, 1 << 40, True))


# (id, text of the file, expected group, words) for mistakes only the YAML text can make
_GROUP = """op: MaxPool2dWithIndicesBackward
groups:
  - name: basic
    matrix:
"""
TEXT_MISTAKES = [
    ("non-utf8", b"op: X\ngroups: []\ndescription: caf\xe9\n", None, ["not UTF-8: byte 0xe9 at line 3, column 17"]),
    ("duplicate-key", _GROUP + "      shape: [[1, 2, 4, 4]]\n      shape: [[1, 2, 4, 4]]\n", "basic",
     ["field 'matrix.shape'", "duplicate key 'shape' (first at line 5) (line 6)"]),
    ("syntax-in-group", _GROUP + "      shape: [[1, 2]\n      dtype: [float32]\n", "basic",
     ["field 'matrix.shape'", "not valid YAML at line 6, column 7"]),
    ("deep-nesting", _GROUP + "      shape: " + "[" * 2000 + "]" * 2000 + "\n", "basic", ["nested more than 32 levels deep"]),
    ("alias-bomb", _GROUP + "      shape: [&a [1,1,1,1,1,1,1,1,1,1]" + "".join(
        f", &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]" for i in range(8)) + "]\n",
     "basic", ["expands to more than 30000 nodes"]),
    ("recursive-alias", _GROUP + "      shape: &s [[1], *s]\n", "basic", ["alias *s refers to a collection that contains it"]),
    ("date-value", "op: X\ndescription: 2026-11-23\n", None, ["type 'timestamp' is not allowed"]),
    ("python-tag", "op: !!python/object/apply:os.system [ls]\n", None, ["not allowed"]),
    ("too-large", "op: X\n#" + "x" * (1 << 20) + "\n", None, ["larger than 1048576 bytes"]),
    ("int-too-long", "op: X\nfamilies: " + "9" * 5000 + "\n", None, ["cannot be converted"]),
]




def _flow(doc=BASE) -> str:
    """BASE as YAML text with its innermost lists and mappings in flow style ([1, 2, 4, 4])."""
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=1000)


def _replaced(old: str, new: str, doc=BASE) -> str:
    text = _flow(doc)
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


_TIMED = copy.deepcopy(BASE)
_TIMED["groups"][0]["timeout_s"] = 90
_DETERMINISTIC = copy.deepcopy(BASE)
_DETERMINISTIC["groups"][0]["deterministic"] = True
_STATUS_MAP = copy.deepcopy(BASE)
_STATUS_MAP["groups"][1]["invalid"]["scenarios"][0]["status"] = {"ascend910b": 161001, "ascend950": 161001}

# YAML that YAML 1.1 (PyYAML) and YAML 1.2 read differently: (id, text, group, field, words). Before,
# each was accepted as YAML 1.1 reads it (or refused without saying why, where 1.1 reads text).
YAML11_MISTAKES = [
    ("octal-dim", _replaced("[1, 2, 4, 4]", "[1, 011, 4, 4]"), "basic", "matrix.shape.0.1",
     "'011' is the integer 9 under YAML 1.1 (PyYAML) but the integer 11 under YAML 1.2: write 9 or 11"),
    ("leading-zero-dim", _replaced("[1, 2, 4, 4]", "[1, 02, 4, 4]"), "basic", "matrix.shape.0.1",
     "'02' is the integer 2: write integers in plain decimal (2)"),
    ("hex-dim", _replaced("[1, 2, 4, 4]", "[1, 0x2, 4, 4]"), "basic", "matrix.shape.0.1",
     "'0x2' is the integer 2: write integers in plain decimal (2)"),
    ("0o-dim", _replaced("[1, 2, 4, 4]", "[1, 0o2, 4, 4]"), "basic", "matrix.shape.0.1",
     "'0o2' is the text '0o2' under YAML 1.1 (PyYAML) but the integer 2 under YAML 1.2"),
    ("underscore-status", _replaced("gradOutput, status: 161001", "gradOutput, status: 161_001"), "bad_args", "invalid.scenarios.0.status",
     "'161_001' is the integer 161001 under YAML 1.1 (PyYAML) but the text '161_001' under YAML 1.2"),
    ("sexagesimal-timeout", _replaced("timeout_s: 90", "timeout_s: 1:30", _TIMED), "basic", "timeout_s",
     "'1:30' is the integer 90 under YAML 1.1 (PyYAML) but the text '1:30' under YAML 1.2: write 90"),
    ("exponent-timeout", _replaced("timeout_s: 90", "timeout_s: 1e3", _TIMED), "basic", "timeout_s",
     "'1e3' is the text '1e3' under YAML 1.1 (PyYAML) but the number 1000.0 under YAML 1.2: write 1000.0"),
    ("yes-attr", _replaced("ceilMode: false", "ceilMode: yes"), "basic", "matrix.attrs.0.ceilMode",
     "'yes' is true under YAML 1.1 (PyYAML) but the text 'yes' under YAML 1.2: write true or false"),
    ("off-field", _replaced("deterministic: true", "deterministic: Off", _DETERMINISTIC), "basic", "deterministic",
     "'Off' is false under YAML 1.1"),
    ("on-key", _replaced("  matrix:", "  on: 1\n  matrix:"), "basic", None, "'on' is true under YAML 1.1"),
    ("explicit-float-status", _replaced("gradOutput, status: 161001", "gradOutput, status: !!float 161001"), "bad_args",
     "invalid.scenarios.0.status", "got a float: 161001.0 (write 161001)"),
    ("explicit-int-octal", _replaced("gradOutput, status: 161001", "gradOutput, status: !!int 0161001"), "bad_args",
     "invalid.scenarios.0.status", "!!int '0161001' is the integer 57857 under YAML 1.1 (PyYAML) but the integer 161001 under YAML 1.2"),
    ("explicit-bool-yes", _replaced("ceilMode: false", "ceilMode: !!bool yes"), "basic", "matrix.attrs.0.ceilMode",
     "!!bool 'yes' is true under YAML 1.1 (PyYAML) but no value (it is not of that type) under YAML 1.2"),
    ("status-map-family-twice", _replaced("ascend950: 161001", "ascend950: 161001, ascend910b: 161001", _STATUS_MAP),
     "bad_args", "invalid.scenarios.0.status.ascend910b", "duplicate key 'ascend910b'"),
]


@pytest.mark.parametrize("text,group,field,words", [m[1:] for m in YAML11_MISTAKES], ids=[m[0] for m in YAML11_MISTAKES])
def test_yaml_read_two_ways_is_refused_with_both_readings(tmp_path, text, group, field, words):
    path = tmp_path / "case.yaml"
    path.write_text(text)
    with pytest.raises(CaseFileError) as info:
        load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path)), msg
    assert words in msg, msg
    assert info.value.group == group and info.value.field == field, msg


@pytest.mark.parametrize("quoted", ["'011'", '"1:30"', "'yes'", '"off"', "'0x10'", "'1e3'", "'y'", '"~"'])
def test_quoted_forms_stay_text(tmp_path, quoted):
    """Text that only looks like a YAML 1.1 number or boolean is kept as written when quoted."""
    path = tmp_path / "case.yaml"
    doc = copy.deepcopy(BASE)
    doc["groups"][0]["note"] = "SENTINEL"
    path.write_text(_flow(doc).replace("SENTINEL", quoted))
    _, cases = load(path)
    assert cases[0].note == quoted[1:-1]


def test_integers_and_yaml_forms_that_mean_one_thing_are_kept(tmp_path):
    """The refusals stop at what is ambiguous: +1, -0, 3. (a float where a number is meant), a merge
    key (merged by the YAML 1.2 libraries in use too) and y as text all load as both versions read them."""
    doc = copy.deepcopy(BASE)
    doc["distributions"] = {"w": {"kind": "uniform", "low": -1.5, "high": 2.5}}
    doc["groups"][0]["note"] = "SENTINEL"
    text = (_flow(doc).replace("low: -1.5", "low: -0").replace("high: 2.5", "high: 3.").replace("SENTINEL", "y")
            .replace("[1, 2, 4, 4]", "[+1, 2, 4, 4]")
            .replace("{check: B1, 'null': gradOutput, status: 161001}", "{<<: {check: B1, 'null': gradOutput}, status: 161001}"))
    path = tmp_path / "case.yaml"
    path.write_text(text)
    _, cases = load(path)
    assert cases[0].shape == (1, 2, 4, 4) and cases[0].note == "y"
    assert cases[1].check == "B1" and cases[1].mutation.null == "gradOutput"


def test_every_tensor_of_every_case_file_has_its_ranks():
    """The rank limits come from the spec (sections A/B); a tensor without them would let any
    rank through to run time."""
    from pathlib import Path
    files = sorted((Path(__file__).resolve().parents[1] / "cases").glob("*.yaml"))
    assert files
    for f in files:
        op, cases = load(f)
        for t in op.tensor_params:
            assert t.ranks, f"{f.name}: {t.name} has no ranks"
        for c in cases:
            assert len(c.shape) in op.shaped.ranks_on(c.families[0]), c.id


def test_a_wrong_rank_described_in_a_scenario_is_kept(tmp_path):
    """A scenario may describe a tensor of any rank (that is how a rank check is aimed at)."""
    doc = _ranked(copy.deepcopy(BASE))
    _scenario(doc).update(tensors={"gradInput": {"shape": [1, 1, 1, 1, 4, 4]}}, status=161002, check="B1")
    doc["checks"][0]["status"] = 161002
    _, cases = load(_write(tmp_path, doc))
    assert cases[1].mutation.tensors["gradInput"]["shape"] == [1, 1, 1, 1, 4, 4]


@pytest.mark.parametrize("text,group,words", [m[1:] for m in TEXT_MISTAKES], ids=[m[0] for m in TEXT_MISTAKES])
def test_text_mistake_is_one_line_in_bounded_time(tmp_path, text, group, words):
    path = tmp_path / "case.yaml"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    with pytest.raises(CaseFileError) as info:
        load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path)) and len(msg) < 1100, msg[:2000]
    assert info.value.group == group, msg
    for w in words:
        assert w in msg, msg


def test_error_line_is_bounded_whatever_the_file_holds(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["groups"][0]["name"] = "n" * 100_000 + "!"            # breaks the name pattern; quoted in the error
    with pytest.raises(CaseFileError) as info:
        load(_write(tmp_path, doc))
    assert len(str(info.value)) < 1100 and "\n" not in str(info.value)


def test_collect_only_fails_on_a_broken_case_file(tmp_path):
    """--collect-only runs nothing, so a broken file must make it exit non-zero (and name the file)."""
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (cases / "broken.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False).replace("groups:", "grups:"))
    args = [sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "-q", "--rootdir", str(tmp_path),
            "-c", "/dev/null"]
    proc = subprocess.run(args + ["--collect-only"], capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "broken.yaml: Additional properties are not allowed ('grups' was unexpected)" in out, out
    assert "good.yaml::basic" in out, out
    (cases / "broken.yaml").unlink()
    proc = subprocess.run(args + ["--collect-only"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_schema_is_a_valid_json_schema():
    import jsonschema
    from harness.model.load import _SCHEMA_PATH
    jsonschema.Draft202012Validator.check_schema(yaml.safe_load(_SCHEMA_PATH.read_text()))


def test_special_file_is_refused_without_blocking(tmp_path):
    """A FIFO named like a case file would block a plain open() forever."""
    import os
    fifo = tmp_path / "case.yaml"
    os.mkfifo(fifo)
    with pytest.raises(CaseFileError, match="not a regular file"):
        load(fifo)


def test_a_case_the_golden_cannot_prepare_is_blamed_on_the_case_file(tmp_path):
    """A shape or attribute the schema accepts but no valid call has (a 2-D MaxPool2d input) fails
    before any library call, with a reason that names the group and file, never one that reads as
    the library's fault."""
    from types import SimpleNamespace
    from harness.backends.torch_backend import TorchBackend
    from harness.judge.runner import run_case
    doc = copy.deepcopy(BASE)
    _matrix(doc)["shape"] = [[4, 4]]
    _, cases = load(_write(tmp_path, doc))
    backend = TorchBackend(SimpleNamespace(device="cpu", family=None, deterministic=False, worker=None))
    out = run_case(next(c for c in cases if c.kind == "valid"), backend, None)
    assert out.raw.value == "FAIL", out
    assert out.reason == ("case error, no library call made: the golden cannot prepare group 'basic' of case.yaml "
                          "(self must be 3-D or 4-D, got shape (4, 4))"), out.reason
