"""Several case workers behind one pytest process (--case-workers).

A case costs its pytest process about half of what it costs its case worker (pytest's
per-test machinery and the record against input preparation, golden, device call and
comparison: about 0.7 ms against 1.5 ms per case on the software CANN). So one pytest
process can keep more than one case worker busy, which costs no second pytest start-up,
no second collection and none of xdist's per-item traffic. The workers are forked from
one zygote, so torch is imported once however many there are.

Each case worker is a CaseExecutor of its own: crash and hang isolation, deadlines,
device resets and the replacement of a dead worker are exactly as with one. deal() hands each
case to the least busy worker and, while it waits for the case pytest asks for, keeps every
worker's deadline and tops up every worker that finished one from the cases pytest runs next: a
long case in one worker never leaves the others idle while cases wait (with one worker per device,
an idle worker is an idle device). A worker whose device is lost stops taking cases; the others go on.
"""
from __future__ import annotations

from pathlib import Path

from ..acl.runtime import worker_slot
from ..judge.outcome import Outcome
from . import scratch
from .channel import wait_any
from .supervisor import CacheUse, CaseExecutor, _Zygote


def slots(worker: str | None, size: int) -> list[int]:
    """The device slots of a pool of `size` case workers in xdist worker `worker` (None: no
    xdist): consecutive, after those of the xdist workers before it (runtime.pick_device)."""
    first = worker_slot(worker) * size
    return list(range(first, first + size))


class CasePool:
    def __init__(self, settings: dict, label: str, size: int = 1):
        if size < 1:
            raise ValueError(f"a pool needs at least one case worker, got {size}")
        self.size = size
        self._log_dir: Path | None = scratch.make(f"pool-{label}") if size > 1 else None
        self._zygote: _Zygote | None = None
        # one worker keeps the label and zygote of a plain CaseExecutor: records say "main" or "gw0"
        labels = [label] if size == 1 else [f"{label}.{k}" for k in range(size)]
        self.executors = [CaseExecutor({**settings, "slot": slot}, name)
                          for slot, name in zip(slots(settings.get("worker"), size), labels)]

    def set(self, key: str, value) -> None:
        """A setting for every worker (the dump directory, once the run has its report dir)."""
        for ex in self.executors:
            ex.settings[key] = value

    def warm_up(self) -> None:
        """Start the zygote now (it imports torch while the caller goes on)."""
        if self.size == 1:
            self.executors[0].warm_up()
        elif self._zygote is None:
            self._zygote = _Zygote(self._log_dir / "zygote.log")
            for ex in self.executors:
                ex.share_zygote(self._zygote)

    def start(self) -> dict[str, str]:
        """Open the backend in every worker; the first worker's properties (those of the run).
        A worker that cannot open its backend is a HarnessConfigError, as with one worker."""
        self.warm_up()
        properties = self.executors[0].start()
        for ex in self.executors[1:]:
            ex.start()
        return properties

    def run(self, case, deadline_s: float, ahead=()) -> Outcome:
        return deal(self.executors, case, deadline_s, ahead)

    @property
    def cache_stats(self) -> CacheUse | None:
        return CacheUse.total([s for s in (ex.cache_stats for ex in self.executors) if s is not None])

    def close(self, abandon: bool = False) -> None:
        for ex in self.executors:
            ex.close(abandon)
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        if self._log_dir is not None:
            scratch.remove(self._log_dir)


def _least_busy(executors: list[CaseExecutor]) -> CaseExecutor | None:
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


def _top_up(executors: list[CaseExecutor], backlog: _Backlog) -> None:
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


def deal(executors: list[CaseExecutor], case, deadline_s: float, ahead=()) -> Outcome:
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
