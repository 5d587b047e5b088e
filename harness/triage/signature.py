"""What failed, per record: the key that groups failures before any explanation is sought.

Read from the record's typed fields wherever the record has them (README "Records and
summary.json"): `status`, `phase1` {status, expected, check, message}, `phase2_status`,
`sync_status`, `metrics` with their thresholds, `verdict`, `signal`, `problems`, `perf_gate`.
Where the only trace is the reason (a guard region, a relaunch, nondeterminism), the reason's
words are the constants the judge builds it from (harness/judge/reasons.py), never free text.
"""
from __future__ import annotations

import re

from ..core.perfstats import REGRESSION
from ..core.status import Status, parse
from ..core import regions
from ..judge import reasons

# the library's message names the check that refused a call (harness/judge/runner.py reads it alike)
_CHECK_IN_MESSAGE = re.compile(r"check ((?:B|L0\.)[\w.]+) failed")
_LAUNCHED_ON_EMPTY = re.compile(r"^empty .*: phase 2 launched \d+ kernel")
_REGIONS = regions.REGIONS
_PASSING = (Status.PASS, Status.UNEXPECTED_PASS)


def _dict(value) -> dict:
    """A field that should be an object, as one (a merge reads records it did not write)."""
    return value if isinstance(value, dict) else {}


def status(rec: dict) -> Status:
    try:
        return parse(rec.get("status") or "MISSING")
    except ValueError:
        return Status.MISSING


def regressions(rec: dict) -> list[dict]:
    """The perf gate's REGRESSION verdicts of a record (a case that passed, then ran slower)."""
    gate = rec.get("perf_gate")
    return [v for v in gate if isinstance(v, dict) and v.get("verdict") == REGRESSION] if isinstance(gate, list) else []


def is_failing(rec: dict) -> bool:
    """FAIL, CRASH, TIMEOUT, MISSING (the final status: a waived case is not one), or a perf regression."""
    return status(rec).is_failure or bool(regressions(rec))


def is_passing(rec: dict) -> bool:
    return status(rec) in _PASSING and not regressions(rec)


def _output_of(rec: dict) -> str | None:
    """The output a reason is about: its first word, where that names one of the case's tensors."""
    head = str(rec.get("reason") or "").split(":", 1)[0].strip()
    return head if head and head in (_dict(rec.get("layouts")) or _dict(rec.get("formats"))) else None


def metrics(rec: dict) -> list[str]:
    """The thresholded metrics past their threshold, else what the comparator's worst element names."""
    out = []
    for m in rec.get("metrics") if isinstance(rec.get("metrics"), list) else []:
        if not isinstance(m, dict):
            continue
        v, t, rule = m.get("value"), m.get("threshold"), m.get("rule")
        if not isinstance(v, (int, float)) or not isinstance(t, (int, float)):
            continue
        if (rule == "<" and not v < t) or (rule == "<=" and not v <= t) or (rule == ">=" and not v >= t):
            out.append(str(m.get("name")))
    if out:
        return out
    worst = rec.get("worst") or _dict(rec.get("verdict")).get("worst") or {}
    return [str(worst["metric"])] if isinstance(worst, dict) and worst.get("metric") else []


def _fired_check(rec: dict) -> str | None:
    named = _CHECK_IN_MESSAGE.search(str(_dict(rec.get("phase1")).get("message") or ""))
    return named.group(1) if named else None


def of(rec: dict) -> str:
    """One line saying what failed, the same for every failure of one kind (no case's numbers in it)."""
    st = status(rec)
    if st is Status.CRASH:
        return f"CRASH, {rec.get('signal') or 'no signal named'}"
    if st is Status.TIMEOUT:
        return "TIMEOUT"
    if st is Status.MISSING:
        return "MISSING"
    if not st.is_failure:
        regs = regressions(rec)
        return "perf REGRESSION against the " + "/".join(sorted({str(v.get("against") or "baseline") for v in regs}))
    reason = str(rec.get("reason") or "")
    if rec.get("problems"):
        return "FAIL, resources left after the case"
    p1 = _dict(rec.get("phase1"))
    check = rec.get("check") or p1.get("check")
    if p1.get("expected") is not None and p1.get("status") is not None and p1["status"] != p1["expected"]:
        return f"FAIL phase 1: status {p1['status']}, expected {p1['expected']}" + (f" [{check}]" if check else "")
    fired = _fired_check(rec)
    if check and p1.get("expected") and p1.get("status") == p1["expected"] and fired != check:
        return f"FAIL phase 1: status {p1['status']} by check {fired or 'unnamed'} instead of {check}"
    if _LAUNCHED_ON_EMPTY.search(reason):
        return "FAIL, an empty input launched a kernel"
    if reason.startswith(reasons.RELAUNCH):
        return "FAIL, the second launch of a repeatable executor"
    for code, where in ((rec.get("phase2_status"), "phase 2"), (rec.get("sync_status"), "stream sync")):
        if code:
            return f"FAIL {where}: status {code}"
    if reason.startswith(reasons.WORKSPACE_OVERRUN):
        return "FAIL guard: past the workspace"
    if reason.startswith(reasons.WROTE_INTO_INPUT):
        return "FAIL guard: an input written"
    if reasons.OUTSIDE_VIEW in reason:
        region = next((r for r in _REGIONS if f"{reasons.OUTSIDE_VIEW}: {r}" in reason), "outside the view")
        return f"FAIL guard: {region} of {_output_of(rec) or 'an output'}"
    if reason.startswith(reasons.BATCH_SLICE):
        return "FAIL, a batch slice inconsistent"
    if reasons.NONDETERMINISTIC in reason:
        return "FAIL, nondeterministic"
    verdict = _dict(rec.get("verdict"))
    failed = metrics(rec)
    if (verdict and not verdict.get("passed", True)) or failed:
        # which metrics fail depends on the data as much as on the bug (one wrong kernel fails
        # max_rel_err on some cases and only max_rel_err_large on others): a numeric failure is
        # grouped by its output, NaN/Inf where none is due apart (an element never written, or a
        # NaN lost), and the metrics are counted per cause instead (search.py)
        kind = NAN_INF if NAN_INF in failed else "out of tolerance"
        return f"FAIL, {kind} on {_output_of(rec) or 'an output'}"
    return "FAIL"


NAN_INF = "nan_inf_mismatch"

