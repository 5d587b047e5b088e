"""Every testable phase-1 check has a case on ascend910b and ascend950, and the checker notices
when one goes missing."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness import traceability
from harness.traceability import REQUIRED_FAMILIES, gaps


@pytest.fixture(scope="module")
def loaded():
    return traceability.load_all()


def test_all_five_operators_have_case_files(loaded):
    assert {op.name for op, _ in loaded} == {
        "MaxPool2dWithIndicesBackward", "MaxPool3dWithArgmaxBackward", "AdaptiveMaxPool2dBackward",
        "AvgPool2dBackward", "MaxUnpool3dBackward"}
    for op, _ in loaded:
        assert op.checks, f"{op.name} declares no section-B checks"


def test_every_testable_check_is_covered_on_910b_and_950(loaded):
    missing = gaps(loaded, families=REQUIRED_FAMILIES)
    assert not missing, "checks without a case:\n" + "\n".join(map(str, missing))


def test_untestable_checks_say_why(loaded):
    for op, _ in loaded:
        for chk in op.checks:
            if chk.untestable is not None:
                assert len(chk.untestable.strip()) > 20, f"{op.name} {chk.id}: give a real reason"


def test_checker_reports_a_removed_scenario(loaded):
    op, cases = next((op, cases) for op, cases in loaded if op.name == "MaxPool2dWithIndicesBackward")
    b1 = next(c for c in op.checks if c.id == "B1")
    assert traceability.covering(b1, cases, "ascend910b")
    # drop every scenario for B1 from a copy of the loaded cases: the gap must be reported on
    # both required families, and only there
    pruned = [c for c in cases if not (c.kind == "invalid" and c.check == "B1")]
    copy = [(o, pruned if o is op else cs) for o, cs in loaded]
    found = gaps(copy)
    assert {(g.op, g.check, g.family) for g in found} == {
        ("MaxPool2dWithIndicesBackward", "B1", "ascend910b"),
        ("MaxPool2dWithIndicesBackward", "B1", "ascend950")}
    assert "B1" in traceability.render(copy) and "**NO CASE**" in traceability.render(copy)
    assert loaded[0][1] is not pruned              # the original is untouched


def test_checker_requires_the_checks_status(loaded):
    """A scenario naming the check but expecting another status (e.g. 0 on 950) does not cover it."""
    op, cases = next((op, cases) for op, cases in loaded if op.name == "MaxPool2dWithIndicesBackward")
    # keep only the B9 scenarios that succeed on 950 (fp16/bf16): 950 loses its coverage
    pruned = [c for c in cases if not (c.kind == "invalid" and c.check == "B9"
                                       and c.expected_status("ascend950") != 0)]
    copy = [(o, pruned if o is op else cs) for o, cs in loaded]
    found = {(g.check, g.family) for g in gaps(copy) if g.op == op.name}
    assert found == {("B9", "ascend950")}


def test_family_specific_checks_are_not_required_elsewhere(loaded):
    """B26b applies to A2/A3 only: removing its cases is a gap on 910B, never on 950."""
    op, cases = next((op, cases) for op, cases in loaded if op.name == "MaxPool2dWithIndicesBackward")
    pruned = [c for c in cases if c.check != "B26b"]
    copy = [(o, pruned if o is op else cs) for o, cs in loaded]
    assert {(g.check, g.family) for g in gaps(copy)} == {("B26b", "ascend910b")}


def test_cli_writes_markdown(tmp_path):
    out = tmp_path / "trace.md"
    proc = subprocess.run([sys.executable, "-m", "harness.traceability", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("# Phase-1 check traceability")
    for name in ("aclnnMaxPool2dWithIndicesBackward", "aclnnAvgPool2dBackward", "## Untestable checks"):
        assert name in text
    assert "## Checks without a covering case\n\n- none" in text
