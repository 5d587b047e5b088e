"""`python -m harness.audit.coverage --scaffold`: a new operator's case file started from what the gates
demand. For every registered operator, its case file cut down to the header and scaffolded (with the
shape and attributes of one of its own valid calls) must leave the coverage, traceability, per-axis and
size-limit gates nothing to ask; every scenario the scaffold could not derive carries a TODO. Loops over
the operators and never names one."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.audit import coverage, per_axis, size_limits, traceability
from harness.core.families import FAMILIES

pytestmark = pytest.mark.loops_over_ops

REPO = Path(__file__).resolve().parents[1]
OPS = sorted(p.stem for p in (REPO / "cases").glob("*.yaml"))


def _valid_call(loaded, name):
    op, cases = next((op, cases) for op, cases in loaded if op.golden == name)
    case = next(c for c in cases if c.kind == "valid" and c.tier == "default" and not c.skip
                and all(lay == "contiguous" for lay in c.layouts.values()))
    dtypes = sorted({c.dtype.name for c in cases if c.kind == "valid" and c.tier == "default"})
    index = sorted({c.index_dtype.name for c in cases if c.kind == "valid" and c.index_dtype})
    return op, case, dtypes, index


def _scaffold(tmp_path, loaded, name) -> tuple[Path, str]:
    op, case, dtypes, index = _valid_call(loaded, name)
    (tmp_path / "cases").mkdir()
    path = tmp_path / "cases" / f"{name}.yaml"
    path.write_text((REPO / "cases" / f"{name}.yaml").read_text().split("\ngroups:", 1)[0] + "\n")
    args = [sys.executable, "-m", "harness.audit.coverage", "--scaffold", str(path), "--dtypes", ",".join(dtypes),
            "--shape", ",".join(map(str, case.shape)), "--attrs", yaml.safe_dump(dict(case.attrs), default_flow_style=True)]
    if index:
        args += ["--index-dtypes", ",".join(index)]
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return path, proc.stdout


@pytest.mark.parametrize("name", OPS)
def test_a_scaffolded_case_file_leaves_the_gates_nothing_to_ask(tmp_path, loaded, name):
    path, said = _scaffold(tmp_path, loaded, name)
    scaffolded = traceability.load_all(path.parent)
    text = path.read_text()
    assert not coverage.gaps(scaffolded) and not size_limits.gaps(scaffolded)
    # what the gates still ask is what the scaffold left to a person, marked where it left it
    asked = traceability.gaps(scaffolded, families=FAMILIES) + per_axis.gaps(scaffolded)
    unmarked = [g for g in asked if f"# TODO {g.check}" not in text]
    assert not unmarked, "\n".join(map(str, unmarked[:20]))
    op, cases = scaffolded[0]
    testable = {c.id for c in op.checks if c.status is not None and not c.untestable}
    assert testable <= {c.check for c in cases if c.kind == "invalid"}
    # every scenario without a derived change is marked for a person, and says which check it is for
    blank = [c for c in cases if c.kind == "invalid" and not (c.mutation.null or c.mutation.tensors or c.mutation.attrs)]
    assert all(f"# TODO {c.check}" in text for c in blank), [c.check for c in blank if f"# TODO {c.check}" not in text]
    assert f"({text.count('# TODO')} TODO)" in said


def test_the_scaffold_needs_a_header(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("op: Nothing\n")
    proc = subprocess.run([sys.executable, "-m", "harness.audit.coverage", "--scaffold", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "the header needs golden, families, signature, output_like, spatial_rank" \
        in proc.stderr, proc.stderr


def test_without_a_valid_call_the_attributes_are_a_todo(tmp_path, loaded):
    """Scaffolded without --shape/--attrs, the defaults are marked as the person's to correct."""
    name = OPS[0]
    (tmp_path / "cases").mkdir()
    path = tmp_path / "cases" / f"{name}.yaml"
    path.write_text((REPO / "cases" / f"{name}.yaml").read_text().split("\ngroups:", 1)[0] + "\n")
    subprocess.run([sys.executable, "-m", "harness.audit.coverage", "--scaffold", str(path)], cwd=REPO, check=True,
                   capture_output=True, timeout=120)
    assert "# TODO attrs:" in path.read_text()
    traceability.load_all(path.parent)         # still a case file the loader accepts


_HEADER = {"op": "Toy", "golden": "toy", "families": ["ascend910b"], "output_like": "self", "spatial_rank": 3,
           "signature": [{"name": "gradOutput", "type": "tensor", "dtype": "data", "ranks": [5]},
                         {"name": "self", "type": "tensor", "dtype": "data", "ranks": [5]},
                         {"name": "kernelSize", "type": "int_array"},
                         {"name": "gradInput", "type": "tensor", "dtype": "data", "output": True, "ranks": [5]}],
           "checks": [{"id": "B0", "what": "workspaceSize / executor out-pointers != NULL", "status": 161001},
                      {"id": "B7", "what": "kernelSize[D,H,W] > 0", "axes": ["D", "H", "W"], "status": 161002},
                      {"id": "B9", "what": "gradInput shape == self shape", "axes": ["H"], "status": 161002}]}


def _scenarios(text: str) -> dict:
    doc = yaml.safe_load(text)
    return {s["name"]: s for g in doc["groups"] for s in (g.get("invalid") or {}).get("scenarios", [])}


def test_the_scaffold_nulls_an_out_pointer_and_breaks_attribute_axes_on_the_attribute():
    from harness.audit import scaffold
    shapes = {"gradOutput": [2, 3, 2, 4, 4], "self": [2, 3, 4, 9, 9], "gradInput": [2, 3, 4, 9, 9]}
    text = scaffold.groups_text(_HEADER, ["float32"], shapes=shapes)
    got = _scenarios(text)
    assert got["B0"]["null"] == "workspaceSize"
    for axis in "DHW":       # the attribute's elements, never "self D = 0"
        assert "tensors" not in got[f"B7-{axis}"], got[f"B7-{axis}"]
        assert f"TODO B7-{axis}: set the {axis} element of kernelSize" in text
    assert got["B9-H"]["tensors"] == {"gradInput": {"shape": [2, 3, 4, 10, 9]}}     # a tensor check stays one


def test_the_scaffold_takes_the_sum_safe_specials():
    from harness.audit import scaffold
    classes = scaffold._value_classes(["float16", "float32"])
    assert "g_specials_sum_safe" in classes and "g_specials" not in classes
    assert "specials" in scaffold._value_classes(["int32"]) or "large" in scaffold._value_classes(["int32"])
