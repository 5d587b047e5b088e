"""Running one case: automatic reruns, then the record and the failure dump.

The case runs in its case worker (harness/execution/); what comes back is its Outcome. A case that
failed, crashed or timed out is run again (a fresh attempt in the worker) up to `reruns` times; if an
attempt passes it is a FLAKE (classify.py, from the attempts), otherwise the first failure is what
the record shows. A skip, a known deviation of the backend, or a case not run (device lost) says the
same the next time, so it is not rerun.
"""
from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

from . import dump_meta as dump, records
from .perf import gate as perf_gate
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


def finish_dump(record: dict, written: dict | None, everything: bool = False) -> tuple[str | None, str | None]:
    """Complete the .npz the case worker wrote for a failing case (any case, `everything`: --dump-all)
    with the record's meta: (its path, None), or (None, the harness error) when it cannot be
    written; the case's own failure stands either way."""
    if not written or not (everything or records.parse(record["attempts"][0]).is_failure):
        return None, None
    try:
        return str(dump.add_meta(Path(written["path"]), record, written["dtypes"],
                                 {k: v for k, v in written.items() if k.startswith("c_repro")})), None
    except Exception as e:          # a full disk, a directory gone: the record keeps its reason
        return None, f"--dump-failures: cannot complete {written['path']}: {type(e).__name__}: {e}"[:1000]


def dumped(outcome: Outcome, record: dict, everything: bool = False) -> Outcome:
    """The outcome once its arrays file is complete (finish_dump): `dump` is the file's path (None when
    there is none), and a file that cannot be completed is a harness error beside the case's own
    failure, never instead of it. A record is built from an outcome, never edited after."""
    path, error = finish_dump(record, outcome.dump, everything)
    diagnostics = dict(outcome.diagnostics)
    if error:
        diagnostics["harness_error"] = "; ".join(filter(None, (diagnostics.get("harness_error"), error)))
    return dataclasses.replace(outcome, dump=path, diagnostics=diagnostics)


def remeasure(record: dict, outcome: Outcome, run, own, bench=None, ab=None, alone_why: str | None = None) -> bool:
    """The perf gate's second look (perf/gate.py): when the case's launch times are flagged against
    its perf baselines (own, benchmark), measure it again and keep those launch times in
    `outcome.perf["remeasured_ms"]`, for the record to be built again. With `ab` (ab() -> this
    run's side and the baseline library's, each a callable timing one round: perf/ab.py; made only
    for a case that is re-measured) the re-measurement is interleaved, the two sides in turn for up
    to perf_ab.ROUNDS pairs of rounds, and the baseline library's times go to
    `remeasured_base_ms`; without it run() once, and `remeasured_alone` says why (`alone_why`). An
    attempt that brings no times back (it failed, this time) says why in `remeasured_why`: the
    gate then calls the case flagged once, not re-measured. Returns whether the outcome changed."""
    if not outcome.perf or not (own or bench) or not perf_gate.needs_remeasurement(record, own, bench,
                                                                                   ab=ab is not None):
        return False
    if ab is not None:
        return _interleaved(outcome, *ab(), perf_gate.ab_tolerance(record, own))
    again = run()
    samples = (again.perf or {}).get("samples_ms")
    if samples:
        outcome.perf = {**outcome.perf, "remeasured_ms": samples, "remeasured_stop": again.perf.get("stop"),
                        "remeasured_alone": alone_why or "only the baseline file was at hand"}
    else:
        outcome.perf = {**outcome.perf, "remeasured_why": again.reason or f"not measured ({again.raw.value})"}
    return True


def _interleaved(outcome: Outcome, run, base_run, tolerance: float | None = None) -> bool:
    """Up to perf_ab.ROUNDS pairs of rounds, this run's library (A) and the baseline's (B) in
    perf_ab.ORDER (ABBA ...): each round's median kept beside its pair's (`remeasured_ab.medians_ms`,
    [A, B] a round), for the paired comparison (harness/core/paired.py); every launch pooled a side
    as well. With the `tolerance` it is judged at, the rounds stop once the verdict is settled
    (paired.settled: exact, no verdict changes)."""
    from ..core.paired import settled
    from .perf.ab import ORDER, ROUND_LAUNCHES, ROUNDS
    mine: list[float] = []
    theirs: list[float] = []
    medians, why_not = [], None
    for pair in range(ROUNDS):
        got = {}
        for side in ORDER[2 * pair:2 * pair + 2]:
            attempt = (run if side == "A" else base_run)()
            samples = (attempt.perf or {}).get("samples_ms")
            if not samples:
                who = "this run's library" if side == "A" else "the baseline library"
                why_not = why_not or f"{who}: {attempt.reason or f'not measured ({attempt.raw.value})'}"
                continue
            got[side] = samples
            (mine if side == "A" else theirs).extend(samples)
        if len(got) == 2:
            medians.append([statistics.median(got["A"]), statistics.median(got["B"])])
        if why_not:
            break                   # a side that fails once is not trusted for the rest of the window
        if tolerance is not None and settled([a / b for a, b in medians], ROUNDS, tolerance):
            break
    if not mine:
        outcome.perf = {**outcome.perf, "remeasured_why": why_not}
    elif why_not:           # a side failed: keep this run's times, as a re-measurement of its side only
        outcome.perf = {**outcome.perf, "remeasured_ms": mine, "remeasured_alone": f"interleaving failed ({why_not})"}
    else:
        outcome.perf = {**outcome.perf, "remeasured_ms": mine, "remeasured_base_ms": theirs,
                        "remeasured_ab": {"rounds": ROUNDS, "order": ORDER[:2 * len(medians)],
                                          "launches": ROUND_LAUNCHES, "medians_ms": medians}}
    return True
