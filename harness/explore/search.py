"""The search: Hypothesis drives the strategies, every example runs as a case, disagreements shrink.

Each (op, valid|invalid) is one Hypothesis test, run in chunks of examples until the op's share of
the budget is spent. A disagreement raises an exception whose class is its signature (the op, how
the record failed, its check or dtype), so that Hypothesis shrinks each distinct disagreement on
its own and never trades one for another; a signature found once is then counted but no longer
failed on, so the search goes on looking for others. Hypothesis replays its minimal example last,
so the last example seen with a signature is the minimal one. A greedy pass then tries every
single reduction (a defect removed, a dimension or attribute made smaller) and keeps any that still
fails the same way, until none does: the result is minimal by construction.

The failing examples are kept in a Hypothesis example database in the report directory; the first
chunk of each test replays them before it generates anything.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import HypothesisException

from ..audit import faultscore
from . import strategies
from .example import Config, Example
from .oracle import Oracle, Plan
from .reach import Reach
from .session import Session, disagrees

CHUNK = {"valid": 20, "invalid": 30}      # examples per Hypothesis run between budget checks
POLISH_TRIES = 300


@dataclass
class Finding:
    signature: str
    plan: Plan
    record: dict
    found_after_s: float            # since the op's exploration started
    found_at_example: int           # the op's examples run when it was first met
    minimal: bool = False
    shrunk_after_s: float | None = None
    reductions: list = field(default_factory=list)   # the last pass: every single reduction and what it did
    emitted: dict = field(default_factory=dict)


def signature(op: str, record: dict) -> str:
    """What kind of disagreement a failing record is: the same bug gives the same signature."""
    found = faultscore.classify(record)
    detail = found.detail
    if found.cls == "NUMERIC":                 # one numeric bug per dtype: fp32 and fp16 paths differ
        detail = record.get("dtype")
    return f"{op}:{record.get('kind')}:{found.cls}" + (f":{detail}" if detail else "")


_ERRORS: dict[str, type] = {}


class Disagreement(Exception):
    """The library did not do what the spec model or the golden says."""


def _only_disagreements(e: BaseException) -> bool:
    """The test failed on disagreements only (a bug of the harness itself must not be swallowed)."""
    if isinstance(e, BaseExceptionGroup):
        return all(_only_disagreements(x) for x in e.exceptions)
    return isinstance(e, Disagreement)


def _error(sig: str) -> type:
    """One exception class per signature: Hypothesis tells failures apart by their class."""
    if sig not in _ERRORS:
        _ERRORS[sig] = type(f"Disagreement[{sig}]", (Disagreement,), {})
    return _ERRORS[sig]


class OpSearch:
    """The exploration of one op on one family."""

    def __init__(self, session: Session, facts, family: str, seed: int, database: Path, reach: Reach, note: str,
                 log=print):
        self.session, self.facts, self.family, self.seed = session, facts, family, seed
        self.oracle = Oracle(facts)
        self.db = DirectoryBasedExampleDatabase(str(database))
        self.reach, self.note, self.log = reach, note, log
        self.known: set[str] = set()
        self.findings: list[Finding] = []
        self.seen: dict[str, Plan | None] = {}      # signature -> the last failing plan (Hypothesis' minimal)
        self.records: dict[str, dict] = {}
        self.spent_s = 0.0
        self.examples = 0
        self.chunks = {"valid": 0, "invalid": 0}
        self.stop_at = float("inf")
        self.first = False          # stop at the first disagreement (--first)

    # ------------------------------------------------------------ one example

    def run_plan(self, plan: Plan) -> dict | None:
        """Run a planned example (None when it is skipped); its record."""
        self.reach.add(plan)
        if plan.case is None:
            return None
        record = self.session.run(plan.case)
        self.examples += 1
        self.reach.ran(plan, record)
        return record

    def _body(self, ex: Example) -> None:
        if time.monotonic() > self.stop_at:
            return              # out of time: nothing fails any more, so shrinking ends here
        plan = self.oracle.plan(ex, self.note)
        record = self.run_plan(plan)
        if record is None or not disagrees(record):
            return
        sig = signature(self.facts.name, record)
        if sig in self.known or (self.first and self.findings and sig not in self.seen):
            return          # counted already, or --first and another one is being shrunk
        if sig not in self.seen:
            self.log(f"{self.session.label} {self.facts.name}: disagreement {sig} after {self.examples} examples: "
                     f"{record.get('reason', '')[:200]}")
            self.findings.append(Finding(sig, plan, record, self.spent_s + time.monotonic() - self._chunk_start,
                                         self.examples))
        self.seen[sig], self.records[sig] = plan, record
        raise _error(sig)(record.get("reason", ""))

    # ------------------------------------------------------------ one chunk of one Hypothesis test

    def chunk(self, kind: str, grace_s: float) -> None:
        invalid = kind == "invalid"
        first = self.chunks[kind] == 0
        self.chunks[kind] += 1
        phases = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink) if first else \
            (Phase.generate, Phase.target, Phase.shrink)
        chosen = settings(max_examples=CHUNK[kind], database=self.db, deadline=None, phases=phases,
                          suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, derandomize=False,
                          report_multiple_bugs=True, print_blob=False)
        strategy = strategies.examples(self.facts, self.family, self.oracle, invalid)

        def body(ex):
            self._body(ex)
        # the database key: one per op, family and kind (the body's source is the same for all)
        body._hypothesis_internal_add_digest = f"explore:{self.facts.name}:{self.family}:{kind}".encode()
        test = chosen(given(strategy)(body))
        # the seed, as @seed would set it: @seed (like derandomize) also turns the example database
        # off, and the database is what replays a failure first in the next exploration
        test._hypothesis_internal_use_seed = self.seed * 7919 + self.chunks[kind] * 2 + invalid
        self._chunk_start = time.monotonic()
        new_before = len(self.findings)
        try:
            test()
        except HypothesisException as e:        # e.g. no example satisfied the strategy's assumptions
            self.log(f"{self.session.label} {self.facts.name} ({kind}): {type(e).__name__}: {str(e)[:200]}")
        except BaseException as e:
            if not _only_disagreements(e):
                raise
        finally:
            self.spent_s += time.monotonic() - self._chunk_start
        for finding in self.findings[new_before:]:
            self.known.add(finding.signature)
            finding.plan, finding.record = self.seen[finding.signature], self.records[finding.signature]
            self._polish(finding, grace_s)

    # ------------------------------------------------------------ minimality

    def fails_same(self, ex: Example, sig: str, seen: list | None = None) -> tuple[Plan, dict] | None:
        plan = self.oracle.plan(ex, self.note)
        record = self.run_plan(plan)
        got = signature(self.facts.name, record) if record is not None and disagrees(record) else None
        if seen is not None:
            seen.append({"example": ex.canonical(), "skipped": plan.skip or None,
                         "status": record.get("status") if record else None, "signature": got})
        return (plan, record) if got == sig else None

    def _polish(self, finding: Finding, grace_s: float) -> None:
        """Greedy single reductions until none still fails the same way (or time or tries run out)."""
        start, tries = time.monotonic(), 0
        limit = start + grace_s
        improved = True
        while improved:
            improved = False
            finding.reductions = []
            for smaller in reductions(finding.plan.example):
                if time.monotonic() > limit or tries >= POLISH_TRIES:
                    self.spent_s += time.monotonic() - start
                    return
                tries += 1
                hit = self.fails_same(smaller, finding.signature, finding.reductions)
                if hit is not None:
                    finding.plan, finding.record = hit
                    improved = True
                    break
        finding.minimal = True
        self.spent_s += time.monotonic() - start
        finding.shrunk_after_s = self.spent_s


def _smaller_ints(v: int) -> list[int]:
    """Values closer to 0 (or 1 for a positive one), nearest last: half, then one step."""
    if v > 1:
        return list(dict.fromkeys([max(1, v // 2), v - 1]))
    if v < 0:
        return list(dict.fromkeys([v // 2 if v < -1 else 0, v + 1]))
    return [0] if v == 1 else []


def _smaller_attr(value):
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return _smaller_ints(value) + ([0] if value > 1 else [])
    if isinstance(value, tuple):
        out = [value[:-1]] if len(value) > 1 else []
        for i, v in enumerate(value):
            out += [value[:i] + (s,) + value[i + 1:] for s in _smaller_ints(v)]
        return out
    return []


def _smaller_dims(d: int) -> list[int]:
    """1 at once, then half, then one step: a dim that only matters being small gets there in one try."""
    return list(dict.fromkeys([1, d // 2, d - 1])) if d > 2 else [d - 1] if d >= 1 else []


def reductions(ex: Example) -> list[Example]:
    """Every example one reduction away, so that a minimal case is minimal in every part:
    a defect removed; a defect's own value made smaller (a shape defect's dimension, an attribute
    defect's value); a dimension made smaller; an attribute made smaller (an array shortened or one
    element nearer 1 or 0, a flag cleared); the values, labels and layouts made plainer (a valid
    group of the op on the same rank whose envelope is strictly simpler: contiguous before strided or
    channels_last, uniform values before special ones, one label for every tensor)."""
    out = [ex.without(i) for i in range(len(ex.defects))]
    for i, d in enumerate(ex.defects):
        smaller = []
        if d.kind == "shape" and isinstance(d.value, tuple):
            smaller = [d.value[:k] + (s,) + d.value[k + 1:] for k, v in enumerate(d.value) for s in _smaller_dims(v)]
        elif d.kind == "attr":
            smaller = [s for s in dict.fromkeys(_smaller_attr(d.value)) if s != d.value]
        out += [replace(ex, defects=ex.defects[:i] + (replace(d, value=s),) + ex.defects[i + 1:]) for s in smaller]
    cfg = ex.config
    for i, d in enumerate(cfg.shape):
        for s in _smaller_dims(d) if d > 1 else [0] if d == 1 else []:
            out.append(replace(ex, config=replace(cfg, shape=cfg.shape[:i] + (s,) + cfg.shape[i + 1:])))
    for name, value in cfg.attrs:
        for s in dict.fromkeys(_smaller_attr(value)):
            if s != value:
                out.append(replace(ex, config=Config.with_attr(cfg, name, s)))
    rank, plainness = len(cfg.shape), cfg.envelope.simplicity[:-1]
    plainer = {}
    for env in ex.facts.envelopes_on(ex.family):
        if rank in env.ranks and env.dtype == cfg.envelope.dtype and env.index_dtype == cfg.envelope.index_dtype \
                and env.simplicity[:-1] < plainness:
            plainer.setdefault(env.simplicity[:-1], env)       # the first (simplest) of each plainness
    out += [replace(ex, config=replace(cfg, envelope=env)) for env in plainer.values()]
    return out
