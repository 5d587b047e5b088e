"""The default tier covers every layout, value class and tile/core shape for every dtype each
family accepts (harness/audit/coverage.py), and the checker notices when something goes missing."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


import pytest

from harness.audit import coverage, traceability
from harness.core.families import FAMILIES

pytestmark = pytest.mark.loops_over_ops


def test_no_coverage_gap(loaded):
    missing = coverage.gaps(loaded)
    assert not missing, "coverage gaps:\n" + "\n".join(map(str, missing))


def test_no_traceability_gap_on_any_family(loaded):
    missing = traceability.gaps(loaded, families=FAMILIES)
    assert not missing, "\n".join(map(str, missing))


def _without(loaded, drop):
    return [(op, [c for c in cases if not drop(c)]) for op, cases in loaded]


def test_a_missing_value_class_is_reported_per_op_family_dtype(loaded):
    zeros = ("zeros", "g_zeros")           # the class 'zeros' for floats and integers alike
    for op, cases in loaded:
        had = {(f, c.dtype) for f in op.families for c in coverage.runnable(cases, f) if c.values.name in zeros}
        pruned = _without(loaded, lambda c: c.op is op and c.values.name in zeros)
        found = {(g.family, g.dtype) for g in coverage.gaps(pruned) if g.op == op.name and "'zeros'" in g.what}
        exempt = {(e.family, e.dtype) for e in op.coverage_exemptions if e.requirement == "values"}
        assert found == had - exempt and found, op.name


def test_a_missing_layout_is_reported(loaded):
    strided = lambda c: "strided" in c.layouts.values()    # noqa: E731
    found = {g.op for g in coverage.gaps(_without(loaded, strided)) if "strided memory" in g.what}
    assert found == {op.name for op, _ in loaded}


def test_missing_tile_and_core_shapes_are_reported(loaded):
    def big(c):
        n, plane = coverage.planes(c)
        return n > coverage.AI_CORES and plane > coverage.TILE_ELEMENTS
    found = {(g.op, g.family, g.dtype) for g in coverage.gaps(_without(loaded, big)) if "planes" in g.what}
    want = {(op.name, f, c.dtype) for op, cases in loaded for f in op.families for c in coverage.runnable(cases, f)}
    assert found == want


def test_planes_follow_the_ops_spatial_rank(loaded):
    """A plane is the op's own spatial dims (its case file's spatial_rank), whatever the op is named."""
    from dataclasses import replace
    spatial = (5, 11, 13)
    for op, cases in loaded:
        shape = (7, 3) + spatial[-op.spatial_rank:]
        plane = 1
        for d in spatial[-op.spatial_rank:]:
            plane *= d
        assert coverage.planes(replace(cases[0], shape=shape)) == (21, plane), op.name
        wrong = replace(cases[0], op=replace(op, spatial_rank=op.spatial_rank % 3 + 1), shape=shape)
        assert coverage.planes(wrong) != (21, plane), op.name       # the declaration is what decides


def test_report_command(tmp_path):
    """One command prints counts and the traceability table of every family; it exits 1 on a gap."""
    out = tmp_path / "coverage.md"
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "harness.audit.coverage", "--out", str(out)], cwd=root,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "| MaxUnpool3dBackward | ascend910 | int8 |" in text and "## Coverage gaps\n\n- none" in text
    for fam in FAMILIES:
        assert f"| {fam} |" in text
    cases = tmp_path / "cases"
    shutil.copytree(root / "cases", cases)
    p = cases / "max_unpool3d_backward.yaml"
    p.write_text(p.read_text().replace("      values: [zeros, large, specials, small_int]", "      values: [small_int]"))
    r = subprocess.run([sys.executable, "-m", "harness.audit.coverage", "--cases", str(cases), "--out", str(out)],
                       cwd=root, capture_output=True, text=True)
    assert r.returncode == 1 and "coverage gap" in r.stderr
    assert "MaxUnpool3dBackward on ascend910, int8: no default-tier case in value class 'zeros'" in out.read_text()
