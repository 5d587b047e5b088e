"""Which case corrupted the heap? A crash in the allocator blames the wrong case.

glibc finds a damaged heap block when the block (or its neighbour) is next freed or split, which is
often a later case in the same worker: a case that wrote past a host block passed, and the next one
died of `free(): invalid next size`. When a worker crashes with such a signature (logs.HEAP_CORRUPTION),
its supervisor (supervisor.py) runs the crashing case alone in a fresh worker; if it passes there, it
bisects over the cases the dead worker ran before it: the shortest prefix of them that, run in a
fresh worker before the victim, makes a worker crash ends with the culprit. Each step forks a fresh
worker from the same zygote, on the same device slot, so each starts from the same heap.

The same search runs for a case whose guard bytes (around its outputs and workspace) changed and
that passes alone: a library that keeps an address from an earlier case and writes through it.
A search is bounded: the last MAX_CASES cases before the victim, and BUDGET_S seconds.

A prefix that makes the victim crash is no proof by itself: a case that overruns into a block it
did not allocate crashes itself, but only where the cases before it laid the heap out so that the
damage lands in a live block (alone it passes). So a heap-corruption suspect is convicted only on
evidence: run alone with glibc's heap checking (`confirm`: MALLOC_CHECK_=3, MALLOC_PERTURB_), a
damaging case dies at its own free. Where the suspect does not and the victim does, the victim did
it; where neither does, no case is convicted and the reason names the suspect as unproven.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable

MAX_CASES = 2000
BUDGET_S = 300.0


@dataclass
class Blame:
    victim: str
    signature: str                # glibc's line, or the guard violation's reason
    culprit: str | None = None    # the case id; the victim itself when it fails alone
    searched: int = 0             # cases the bisection went over
    steps: int = 0                # fresh workers it took
    note: str = ""                # how the search ended
    kind: str = "heap corruption"  # or "guard violation": a later case's guard bytes changed

    def for_victim(self) -> str:
        """The clause of the failed case's reason."""
        if self.culprit == self.victim:
            how = self.note or "it fails alone in a fresh worker too"
            return f"{self.kind} ({self.signature}); {how}: the case itself"
        if self.culprit:
            return f"{self.kind}; culprit: {self.culprit} (bisected over {self.searched} cases{self._noted()})"
        return f"{self.kind} ({self.signature}); culprit not found: {self.note}"

    def for_culprit(self) -> str:
        """The reason of the case found to damage what a later case uses (it passed its own checks)."""
        damage = "the host heap" if self.kind == "heap corruption" else "memory a later case uses"
        return (f"{self.kind}: this case damages {damage}; a later case, {self.victim}, failed of it "
                f"({self.signature}); found by bisection over {self.searched} cases{self._noted()}")

    def _noted(self) -> str:
        return f"; {self.note}" if self.note else ""

    def as_dict(self, role: str) -> dict:
        return {"role": role, **asdict(self)}


def find(victim, history: list, signature: str, crashes: Callable[[list], bool],
         budget_s: float = BUDGET_S, ran: int | None = None, kind: str = "heap corruption",
         confirm: Callable[[list], bool] | None = None) -> Blame:
    """victim: (case, deadline) of the failed case; history: [(case, deadline)] its worker ran
    before it, oldest first (ran: how many that was, where history keeps only the last ones);
    crashes(sequence) runs a sequence in a fresh worker and says whether it failed that way again
    (a worker crashed; for a guard violation, the victim's guard bytes changed again); confirm(sequence)
    does the same in a fresh worker with glibc's heap checking (None: no evidence step)."""
    blame = Blame(victim[0].id, signature, kind=kind)
    started = time.monotonic()
    steps = [0]

    def run(sequence) -> bool:
        steps[0] += 1
        return crashes(sequence)

    try:
        if run([victim]):
            blame.culprit = victim[0].id
            return blame
        cut = history[-MAX_CASES:]
        blame.searched = len(cut)
        total = max(ran or 0, len(history))
        if len(cut) < total:
            blame.note = f"only the last {len(cut)} of the {total} cases before it were searched"
        if not cut or not run(cut + [victim]):
            blame.note = (f"it passes alone, and the crash did not recur when the {len(cut)} case(s) its worker "
                          "ran before it ran again in a fresh worker")
            return blame
        lo, hi = 1, len(cut)               # the prefix of length hi makes a worker crash
        while lo < hi:
            if time.monotonic() - started > budget_s:
                blame.note = (f"gave up after {budget_s:.0f} s: the culprit is one of {cut[lo - 1][0].id} .. "
                              f"{cut[hi - 1][0].id}")
                return blame
            mid = (lo + hi) // 2
            if run(cut[:mid] + [victim]):
                hi = mid
            else:
                lo = mid + 1
        suspect = cut[hi - 1]
        blame.culprit = suspect[0].id
        if hi > 1 and not run([suspect, victim]):
            blame.note = "it needs some of the cases before it too: the pair alone does not crash"
        if confirm is not None:
            _weigh_evidence(blame, suspect, victim, confirm, steps)
        return blame
    finally:
        blame.steps = steps[0]


def _weigh_evidence(blame: Blame, suspect, victim, confirm: Callable[[list], bool], steps: list) -> None:
    """Convict the bisection's suspect only if it damages the heap alone under glibc's checking."""
    steps[0] += 1
    if confirm([suspect]):
        blame.note = "; ".join(n for n in (blame.note, "confirmed: alone under glibc's heap checking it dies "
                                           "at its own free") if n)
        return
    steps[0] += 1
    if confirm([victim]):
        blame.culprit = victim[0].id
        blame.note = (f"not {suspect[0].id}, which only lays the heap out for it: alone under glibc's heap "
                      "checking the case itself dies at its own free")
        return
    blame.culprit = None
    blame.note = (f"suspect {suspect[0].id} (the crash needs it before the victim) not convicted: neither it nor "
                  "the victim shows heap damage alone under glibc's heap checking")
