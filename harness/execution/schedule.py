"""Which case worker runs a case, and waiting for the one pytest asks for while every worker's
deadline is kept (the executors are supervisor.CaseExecutor: one, or pool.py's several)."""
from __future__ import annotations

from ..judge.outcome import Outcome
from .channel import wait_any

LOOKAHEAD = 4      # cases sent ahead of the one pytest is running (see CaseExecutor.run): a few,
                   # so a run of short cases (invalid ones take ~0.2 ms) does not leave the worker idle
AHEAD_BYTES = 32 * 1024   # ... and never more unanswered bytes than half a pipe holds (64 KB on Linux):
                          # a send ahead then cannot block, so a hung worker's deadline is always kept


def _least_busy(executors: list):
    """The usable executor with the fewest cases queued (the first of equals), or None."""
    usable = [ex for ex in executors if ex.usable]
    return min(usable, key=lambda ex: ex.queued) if usable else None


class _Backlog:
    """The cases pytest runs next, [(case, deadline)], read lazily (pytest's order; the run's whole rest
    where the caller gives that) and without the ones a worker already has."""

    def __init__(self, ahead, known: set[str]):
        self._it, self._known, self._head = iter(ahead), known, None

    def peek(self):
        while self._head is None:
            item = next(self._it, None)
            if item is None:
                return None
            if item[0].id not in self._known:
                self._head = item
        return self._head

    def pop(self) -> None:
        self._head = None

    def rest(self):
        if self._head is not None:
            yield self._head
        yield from self._it


def _top_up(executors: list, backlog: _Backlog) -> None:
    """Send the backlog's cases, in order, each to the least busy worker with room, until none has room
    (LOOKAHEAD cases ahead, AHEAD_BYTES unanswered bytes) or the backlog is empty."""
    open_ = [ex for ex in executors if ex.usable and ex.has_room]
    while open_ and backlog.peek() is not None:
        target = _least_busy(open_)
        if target.offer(*backlog.peek()):
            backlog.pop()
            if not target.has_room:
                open_.remove(target)
        else:       # its unanswered bytes are at the limit, or its device is lost: the others may take it
            open_.remove(target)


def deal(executors: list, case, deadline_s: float, ahead=()) -> Outcome:
    """Run `case` on one of `executors` and return its Outcome; meanwhile deal the `ahead` cases
    (what pytest runs next, read only as far as the workers have room) to whichever worker is least
    busy, again each time a worker answers, and keep every answer until it is asked for.

    While it waits for `case`, every worker's running case keeps its own deadline: the wait ends
    at the earliest one, so a hang in one worker is a TIMEOUT on time while another is awaited."""
    for ex in executors:
        outcome = ex.take(case.id)
        if outcome is not None:
            return outcome
    owner = next((ex for ex in executors if ex.holds(case)), None)
    while owner is None:
        owner = _least_busy(executors) or executors[0]      # all lost: its submit() says why
        missing = owner.submit(case, deadline_s)
        if missing is not None:
            if not any(ex.usable for ex in executors):
                return missing
            owner = None            # that worker's device is lost now: another one takes the case
    backlog = _Backlog(ahead, set().union(*(ex.case_ids() for ex in executors)))
    _top_up(executors, backlog)
    while True:
        busy = [ex for ex in executors if ex.queued]
        if owner not in busy:
            # the worker holding `case` died with a case before it (a CRASH, a TIMEOUT): it never ran
            return deal(executors, case, deadline_s, backlog.rest())
        channels = {ex.channel: ex for ex in busy}
        ready = [channels[c] for c in wait_any(list(channels), min(ex.time_left() for ex in busy))]
        for ex in ready or [ex for ex in busy if ex.time_left() <= 0]:
            ex.collect()
        outcome = owner.take(case.id)
        if outcome is not None:
            return outcome
        _top_up(executors, backlog)
