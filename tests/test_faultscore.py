"""The fault-detection score (harness/audit/faultscore.py): named library faults of the software CANN
are caught by the suite and classified as what they are; a wrong expectation fails the score."""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path

import pytest

from harness.audit import faultscore
from harness.audit.faultscore import FAULTS, Finding, classify

REPO = Path(__file__).resolve().parent.parent
BY_NAME = {f.name: f for f in FAULTS}


def _k_names() -> list[str]:
    """The names SWCANN_FAULTS accepts, read from the C table."""
    text = (REPO / "swcann/src/core/faults.c").read_text()
    table = text[text.index("k_names[] = {"):]
    return re.findall(r'^\s*"(\w+)",', table[:table.index("};")], re.M)


def test_every_fault_of_the_library_is_scored_once_per_op():
    assert {f.name for f in FAULTS} == set(_k_names())
    keys = [f.key for f in FAULTS]
    assert len(set(keys)) == len(keys)


def test_faults_are_spread_over_the_operators_and_kinds():
    assert len(FAULTS) >= 20
    assert len({f.op for f in FAULTS}) == 5
    kinds = Counter(f.kind for f in FAULTS)
    assert set(kinds) == {"numeric", "check", "resource", "run-level"} and min(kinds.values()) >= 3


def _record(status="FAIL", **kw):
    return {"case_id": "Op.g[x]", "status": status, **kw}


@pytest.mark.parametrize("record, cls, detail", [
    (_record("CRASH", signal="SIGSEGV", reason="CRASH: ..."), "CRASH", "SIGSEGV"),
    (_record("TIMEOUT", reason="TIMEOUT: ..."), "TIMEOUT", None),
    (_record(problems=["software CANN reports 1 live object after the case"], reason="software CANN ..."), "LEAK", None),
    (_record(reason="phase-1 status 0, expected 161002 [B9]", check="B9"), "STATUS", "B9"),
    (_record(reason="phase-1 status 161002, expected 0: EZ1001: [aclnnX] check B26b failed: d", check=None),
     "STATUS", "B26b"),
    (_record(reason="status 161002 as expected, but raised by B18 instead of B15: ...", check="B15"), "WRONG_CHECK", "B15"),
    (_record(reason="phase 2 status 0, stream sync 507015: EZ9999", phase2_status=0, sync_status=507015),
     "RUNTIME", "507015"),
    (_record(reason="gradInput: the library wrote outside the output view (strided gaps changed)"), "OUTSIDE_VIEW", None),
    (_record(reason="gradInput: FAIL x", verdict={"passed": False, "standard": "bit_exact", "summary": "FAIL"}),
     "NUMERIC", "bit_exact"),
    (_record(reason="empty self, gradOutput: phase 2 launched 1 kernel, expected none (empty inputs return early)",
             phase2_status=0, sync_status=0, launches=1), "LAUNCH", None),
    (_record(reason="the library wrote into input gradOutput: its device buffer changed during phase 2 "
                    "(aclnn inputs are const)", verdict={"passed": True}), "INPUT_WRITTEN", "gradOutput"),
    (_record(reason="nondeterministic: gradInput differs in 3 of 64 elements between two runs with the same "
                    "inputs (largest difference 1e-07); deterministic mode is on", verdict={"passed": True}),
     "NONDETERMINISTIC", None),
    (_record(reason="batch-slice inconsistent: gradInput[1:2] differs in 5 of 672 elements between the full "
                    "batch and the batch slice [1:2] of 2 run alone (largest difference 9.54e-07); "
                    "--determinism-level 3 asks for the same bits", verdict={"passed": True}), "BATCH_SLICE", None),
    (_record(reason="the library wrote past the end of its workspace: 64 of the guard bytes after the 33024 "
                    "bytes phase 1 asked for changed"), "WORKSPACE_OVERRUN", None),
    (_record(reason="second launch of the repeatable executor: gradInput: FAIL single_bm_high_precision[float32]: "
                    "576 NaN/Inf mismatches", verdict={"passed": True}), "RELAUNCH", None),
    (_record(reason="something new"), "FAIL", None),
    (_record("PASS", launch_s=0.001), "PASS", None),
])
def test_classify(record, cls, detail):
    got = classify(record, {"launch_s": 0.0009})
    assert (got.cls, got.detail) == (cls, detail)


def test_slow_only_above_ratio_and_floor():
    clean = {"launch_s": 0.01}
    assert classify(_record("PASS", launch_s=0.2), clean).cls == "SLOW"
    assert classify(_record("PASS", launch_s=0.03), clean).cls == "PASS"       # 3x: noise on a busy machine
    assert classify(_record("PASS", launch_s=0.004), {"launch_s": 0.0001}).cls == "PASS"  # below the floor
    assert classify(_record("PASS", launch_s=0.2), None).cls == "PASS"         # no clean run to compare with


def test_a_misclassification_is_reported_without_running():
    s = faultscore.Score(BY_NAME["leak_cast_tensor"], [Finding("a", "LEAK"), Finding("b", "NUMERIC", "x", "m")])
    assert s.detected and not s.correct and [f.case_id for f in s.wrong] == ["b"]
    ok, lines = faultscore.summary([s], [])
    assert not ok and any(line.startswith("MISCLASSIFIED leak_cast_tensor: b is NUMERIC(x)") for line in lines)
    undetected = faultscore.Score(BY_NAME["tail_unwritten"], [Finding("a", "PASS")])
    assert not undetected.detected and not faultscore.summary([undetected], [])[0]


def test_unknown_fault_name_is_one_line(capsys):
    assert faultscore.main(["--only", "tail_unwritten,no_such_fault"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no_such_fault" in err and err.startswith("ERROR: ")
    for jobs in ("0", "-1", "nan", "1.5"):
        with pytest.raises(SystemExit) as e:
            faultscore.main(["--jobs", jobs, "--list"])
        err = capsys.readouterr().err
        assert e.value.code == 4 and err.startswith("ERROR: python -m harness.audit.faultscore: argument --jobs: ")


def test_score_detects_and_classifies_and_fails_on_a_wrong_expectation(tmp_path):
    """Two faults of two kinds scored for real, plus one whose declared class is wrong on
    purpose: the score must call that one MISCLASSIFIED and fail as a whole."""
    wrong = dataclasses.replace(BY_NAME["dtype_check_skipped"], expect="LEAK", detail=None)
    faults = [BY_NAME["leak_cast_tensor"], BY_NAME["tail_unwritten"], wrong]
    scores, problems = faultscore.run_score(faults, tmp_path / "work", jobs=2)
    assert problems == []
    by = {s.fault.name: s for s in scores}
    for name in ("leak_cast_tensor", "tail_unwritten"):
        assert by[name].correct, (name, [f.__dict__ for f in by[name].flagged], by[name].error)
    bad = [s for s in scores if s.fault is wrong][0]
    assert bad.detected and not bad.correct
    assert {f.cls for f in bad.wrong} == {"STATUS"}                 # what it really is
    ok, lines = faultscore.summary(scores, problems)
    assert not ok and any(line.startswith("MISCLASSIFIED dtype_check_skipped") for line in lines)
    rows = [r for r in faultscore.table(scores) if r.startswith("| dtype_check_skipped")]
    assert len(rows) == 1 and "MISCLASSIFIED" in rows[0] and "STATUS(B9)" in rows[0]
