"""Every testable phase-1 check has a case on every SoC family it applies to, and the checker
notices when one goes missing."""
from __future__ import annotations

import subprocess
import sys

import pytest

import golden
from harness.audit import traceability
from harness.audit.traceability import REQUIRED_FAMILIES, gaps

pytestmark = pytest.mark.loops_over_ops


def test_every_golden_has_a_case_file_and_declares_checks(loaded):
    assert sorted(op.golden for op, _ in loaded) == golden.available()
    for op, _ in loaded:
        assert op.checks, f"{op.name} declares no section-B checks"


def test_every_testable_check_is_covered_on_every_family(loaded):
    missing = gaps(loaded, families=REQUIRED_FAMILIES)
    assert not missing, "checks without a case:\n" + "\n".join(map(str, missing))


def test_untestable_checks_say_why(loaded):
    for op, _ in loaded:
        for chk in op.checks:
            if chk.untestable is not None:
                assert len(chk.untestable.strip()) > 20, f"{op.name} {chk.id}: give a real reason"


def _without(loaded, op, keep):
    """A copy of `loaded` in which `op` keeps only the cases `keep` accepts."""
    pruned = [c for c in dict(loaded)[op] if keep(c)]
    return [(o, pruned if o is op else cs) for o, cs in loaded], pruned


def test_checker_reports_a_removed_scenario(loaded):
    """Per op: drop every scenario of its first covered check; the gap is reported on
    exactly the required families that check was covered on."""
    for op, cases in loaded:
        chk = next(c for c in op.checks if any(traceability.covering(c, cases, f) for f in REQUIRED_FAMILIES))
        was = {f for f in REQUIRED_FAMILIES if traceability.covering(chk, cases, f)}
        copy, pruned = _without(loaded, op, lambda c: not (c.kind == "invalid" and c.check == chk.id))
        found = {(g.op, g.check, g.family) for g in gaps(copy)}
        assert found == {(op.name, chk.id, f) for f in was}, (op.name, chk.id)
        assert "**NO CASE**" in traceability.render(copy)
        assert dict(loaded)[op] is not pruned          # the original is untouched


def test_checker_requires_the_checks_status(loaded):
    """A scenario naming the check but expecting another status (e.g. 0 where the dtype is
    supported) does not cover it."""
    tried = 0
    for op, cases in loaded:
        for chk in op.checks:
            for fam in REQUIRED_FAMILIES:
                covering = set(map(id, traceability.covering(chk, cases, fam)))
                naming = traceability.cases_for(chk, cases, fam)
                if not covering or all(id(c) in covering for c in naming):
                    continue
                copy, pruned = _without(loaded, op, lambda c: id(c) not in covering)
                assert traceability.cases_for(chk, pruned, fam)        # still named there ...
                assert (op.name, chk.id, fam) in {(g.op, g.check, g.family) for g in gaps(copy)}  # ... not covered
                tried += 1
    assert tried, "no scenario names a check while expecting another status: nothing was tested"


def test_family_specific_checks_are_not_required_elsewhere(loaded):
    """A check that applies to some required families only is a gap there, never elsewhere."""
    tried = 0
    for op, cases in loaded:
        for chk in op.checks:
            applies = [f for f in REQUIRED_FAMILIES if f in chk.families]
            if not applies or len(applies) == len(REQUIRED_FAMILIES) or chk.untestable:
                continue
            copy, _ = _without(loaded, op, lambda c: c.check != chk.id)
            assert {(g.check, g.family) for g in gaps(copy)} == {(chk.id, f) for f in applies}, (op.name, chk.id)
            tried += 1
    assert tried, "no family-specific check found: nothing was tested"


def test_cli_writes_markdown(tmp_path):
    out = tmp_path / "trace.md"
    proc = subprocess.run([sys.executable, "-m", "harness.audit.traceability", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("# Phase-1 check traceability")
    for name in [f"aclnn{op.name}" for op, _ in traceability.load_all()] + ["## Untestable checks"]:
        assert name in text
    assert "## Checks without a covering case\n\n- none" in text
