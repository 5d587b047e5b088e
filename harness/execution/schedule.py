"""Which case worker runs a case, and waiting for the one pytest asks for while every worker's
deadline is kept (the executors are supervisor.CaseExecutor; pool.py holds several)."""
from __future__ import annotations

from .channel import wait_any

LOOKAHEAD = 4      # cases sent ahead of the one pytest is running (see CaseExecutor.run): a few,
                   # so a run of short cases (invalid ones take ~0.2 ms) does not leave the worker idle
AHEAD_BYTES = 32 * 1024   # ... and never more unanswered bytes than half a pipe holds (64 KB on Linux):
                          # a send ahead then cannot block, so a hung worker's deadline is always kept


def least_busy(executors: list):
    """Where a case goes: the usable executor with the shortest queue (the first when all are lost:
    its submit() then says why the case was not run)."""
    usable = [ex for ex in executors if ex.usable]
    return min(usable, key=lambda ex: ex.queued) if usable else executors[0]


def run_on(executors: list, case, deadline_s: float, ahead=()):
    """Run `case` on one of `executors` and return its Outcome, meanwhile sending the `ahead` cases
    to whichever has room and collecting every answer that comes in (kept until asked for).

    While it waits for `case`, every worker's running case keeps its own deadline: the wait
    ends at the earliest one, so a hang in one worker is a TIMEOUT on time while another
    worker's case is awaited."""
    for ex in executors:
        outcome = ex.take(case.id)
        if outcome is not None:
            return outcome
    owner = next((ex for ex in executors if ex.holds(case)), None)
    while owner is None:
        owner = least_busy(executors)
        missing = owner.submit(case, deadline_s)
        if missing is not None:
            if not any(ex.usable for ex in executors):
                return missing
            owner = None            # that worker's device is lost now: another one takes the case
    known = set().union(*(ex.case_ids() for ex in executors))
    for nxt, nxt_deadline in ahead:
        if nxt.id in known:
            continue
        target = least_busy([ex for ex in executors if ex.has_room] or executors)
        if not target.offer(nxt, nxt_deadline):
            break
        known.add(nxt.id)
    while True:
        busy = [ex for ex in executors if ex.queued]
        if owner not in busy:
            # the worker holding `case` died with a case before it (a CRASH, a TIMEOUT): it never ran
            return run_on(executors, case, deadline_s)
        channels = {ex.channel: ex for ex in busy}
        ready = [channels[c] for c in wait_any(list(channels), min(ex.time_left() for ex in busy))]
        for ex in ready or [ex for ex in busy if ex.time_left() <= 0]:
            ex.collect()
        outcome = owner.take(case.id)
        if outcome is not None:
            return outcome
