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
from typing import Callable

from ..acl.runtime import worker_slot
from ..judge.outcome import Outcome
from ..target import Target
from ..target.settings import BackendSettings
from . import schedule, scratch
from .supervisor import CacheUse, CaseExecutor
from .zygote import Zygote, malloc_check_env


def slots(worker: str | None, size: int) -> list[int]:
    """The device slots of a pool of `size` case workers in xdist worker `worker` (None: no
    xdist): consecutive, after those of the xdist workers before it (runtime.pick_device)."""
    first = worker_slot(worker) * size
    return list(range(first, first + size))


class CasePool:
    def __init__(self, settings: "BackendSettings | dict", label: str, size: int = 1):
        if size < 1:
            raise ValueError(f"a pool needs at least one case worker, got {size}")
        settings = BackendSettings.from_wire(settings)
        self.size = size
        self._malloc_check = settings.malloc_check
        self._log_dir: Path | None = scratch.make(f"pool-{label}") if size > 1 else None
        self._zygote: Zygote | None = None
        # one worker keeps the label and zygote of a plain CaseExecutor: records say "main" or "gw0"
        labels = [label] if size == 1 else [f"{label}.{k}" for k in range(size)]
        self.executors = [CaseExecutor(settings.with_(slot=slot), name)
                          for slot, name in zip(slots(settings.worker, size), labels)]

    def set_dump(self, directory: str | None) -> None:
        """Where every worker dumps a failing case (the run's, once it has its report dir)."""
        for ex in self.executors:
            ex.dump = directory

    def warm_up(self) -> None:
        """Start the zygote now (it imports torch while the caller goes on)."""
        if self.size == 1:
            self.executors[0].warm_up()
        elif self._zygote is None:
            self._zygote = Zygote(self._log_dir / "zygote.log", env=malloc_check_env() if self._malloc_check else None)
            for ex in self.executors:
                ex.share_zygote(self._zygote)

    def start(self, waiting: Callable[[str], None] | None = None) -> Target:
        """Open the backend in every worker; the first worker's target (the run's).
        A worker that cannot open its backend is a HarnessConfigError, as with one worker;
        `waiting` hears of a start-up that keeps it waiting (CaseExecutor.start)."""
        self.warm_up()
        target = self.executors[0].start(waiting=waiting)
        for ex in self.executors[1:]:
            ex.start(waiting=waiting)
        return target

    def run(self, case, deadline_s: float, ahead=()) -> Outcome:
        return schedule.deal(self.executors, case, deadline_s, ahead)

    @property
    def usable(self) -> bool:
        """Some case worker can still take a case (one whose device is lost cannot)."""
        return any(ex.usable for ex in self.executors)

    @property
    def usable_count(self) -> int:
        return sum(ex.usable for ex in self.executors)

    def lost(self) -> dict[str, str]:
        """{case worker: why its device is lost} of those that stopped taking cases."""
        return {ex.label: ex.lost for ex in self.executors if ex.lost}

    def take_amendments(self) -> list:
        """(case, Outcome) of earlier cases whose record must change (supervisor.take_amendments)."""
        return [a for ex in self.executors for a in ex.take_amendments()]

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
