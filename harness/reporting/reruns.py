"""Running one case: automatic reruns, then the record and the failure dump.

The case runs in its case worker (harness/execution/); what comes back is its Outcome. A case that
failed, crashed or timed out is run again (a fresh attempt in the worker) up to `reruns` times; if an
attempt passes it is a FLAKE (classify.py, from the attempts), otherwise the first failure is what
the record shows. A skip, a known deviation of the backend, or a case not run (device lost) says the
same the next time, so it is not rerun.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from . import dump_meta as dump, perf_gate, records
from ..core.status import Status
from ..judge.outcome import Outcome

_RERUN = (Status.FAIL, Status.CRASH, Status.TIMEOUT)


def run_with_reruns(run, reruns: int, deviates: bool = False) -> tuple[Outcome, list[str]]:
    """run() -> the case's Outcome, repeated while it fails (up to `reruns` more times; never when
    the case file names a deviation of this backend: it would only deviate again).
    Returns (the Outcome to build the record from, every attempt's raw status)."""
    attempts: list[str] = []
    first = None
    while True:
        outcome = run()
        attempts.append(outcome.raw.value)
        first = first or outcome
        if outcome.raw not in _RERUN or deviates or len(attempts) > reruns:
            break
    if outcome.raw in _RERUN or len(attempts) == 1:
        return first, attempts
    # passed on a rerun: record the pass, but keep the first failure's reason
    return dataclasses.replace(outcome, reason=f"passed on attempt {len(attempts)} of {reruns + 1}; attempt 1: "
                                               f"{first.reason}"), attempts


def finish_dump(record: dict, written: dict | None) -> str | None:
    """Complete the .npz the case worker wrote for a failing case with the record's meta; its path."""
    if not written or not records.parse(record["attempts"][0]).is_failure:
        return None
    return str(dump.add_meta(Path(written["path"]), record, written["dtypes"]))


def remeasure(record: dict, outcome: Outcome, run, own, bench=None) -> bool:
    """The perf gate's second look (perf_gate.py): when the case's launch times are flagged against
    its perf baselines (own, benchmark), run() once more and keep that attempt's launch times in
    `outcome.perf["remeasured_ms"]`, for the record to be built again. An attempt that brings none
    back (it failed, this time) says why in `remeasured_why`: the gate then calls the case
    flagged once, not re-measured. Returns whether the outcome changed."""
    if not outcome.perf or not (own or bench) or not perf_gate.needs_remeasurement(record, own, bench):
        return False
    again = run()
    samples = (again.perf or {}).get("samples_ms")
    if samples:
        outcome.perf = {**outcome.perf, "remeasured_ms": samples, "remeasured_stop": again.perf.get("stop")}
    else:
        outcome.perf = {**outcome.perf, "remeasured_why": again.reason or f"not measured ({again.raw.value})"}
    return True
