"""One exploration: every chosen op on one family, within a time budget, then the reports.

The budget is shared equally by the ops; each op takes its turns in chunks (valid and invalid
alternating) until its share is spent, and a disagreement found near the end still gets its
shrinking time (a grace of half its share, at least 30 s). Progress goes to the terminal after
every chunk, each line headed by what produced it (SIMULATED or HARDWARE, backend, family).
"""
from __future__ import annotations

import math

import time
from pathlib import Path

from ..core.argv import decimal
from ..reporting import identity
from . import emit, facts as facts_mod, summary
from .reach import ModelCoverage, Reach
from .search import OpSearch
from .session import Session

KINDS = ("valid", "invalid")


def parse_budget(text: str) -> float:
    """'90', '90s', '10m', '1.5h' -> seconds."""
    text = str(text).strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], None)
    number = text[:-1] if scale else text
    try:
        value = decimal(number) * (scale or 1)      # ASCII decimal: float() also reads `1_0` and `١٠` (core/argv.py)
    except ValueError:
        raise ValueError(f"--budget {text!r}: give seconds (90, 90s), minutes (10m) or hours (1h)") from None
    if not 0 < value < math.inf:              # nan fails both comparisons
        raise ValueError(f"--budget {text!r}: must be a finite time of more than 0")
    return value


def explore(ops: list[str], family: str, budget_s: float, seed: int, *, kinds=KINDS, report_dir: Path, root: Path,
            cases_dir: Path, argv: list[str], log=print, measure_coverage: bool = True,
            timeout_s: float | None = None, first: bool = False) -> dict:
    """Explore `ops` (all when empty) on `family`; returns explore.json's content."""
    coverage = ModelCoverage() if measure_coverage else None
    if coverage is not None:
        coverage.start()
    chosen = facts_mod.find(cases_dir, ops)
    runnable = [f for f in chosen if f.model is not None and f.envelopes_on(family)]
    for f in chosen:
        if f.model is None:
            log(f"{f.name}: golden/{f.op.golden}.py's INFO has no phase-1 model (golden/_phase1.py) to tell "
                f"what a call must do; not explored")
        elif f not in runnable:
            log(f"{f.name}: no valid group of {f.path.name} runs on {family}; not explored")
    if not runnable:
        raise ValueError(f"none of the chosen operators runs on {family}")
    report_dir = Path(report_dir)
    session = Session(report_dir, family, root, argv, timeout_s)
    reach = Reach()
    date = identity.now()[:10]
    switches = " ".join(f"{k}={v}" for k, v in session.switches.items() if k.startswith("SWCANN_") and k != "SWCANN_SOC")
    note = (f"found by {switches + ' ' if switches else ''}./run explore --seed {seed} on {family} "
            f"({'SIMULATED' if session.simulated else 'HARDWARE'}), {date}")
    searches = [OpSearch(session, f, family, seed, report_dir / "hypothesis", reach, note, log) for f in runnable]
    for s in searches:
        s.first = first
    share = budget_s / len(searches)
    grace = min(300.0, max(30.0, share / 2))
    log(f"{session.label} {session.target.banner}")
    log(f"{session.label} exploring {', '.join(s.facts.name for s in searches)} for {budget_s:.0f} s "
        f"({share:.0f} s each), seed {seed}, kinds {'/'.join(kinds)}; reports: {report_dir}")
    started = time.monotonic()
    turn = 0
    try:
        while any(s.spent_s < share for s in searches) and not (first and any(s.findings for s in searches)):
            for s in searches:
                if s.spent_s >= share or (first and any(x.findings for x in searches)):
                    continue
                s.stop_at = time.monotonic() + (share - s.spent_s) + grace
                before = len(s.findings)
                s.chunk(kinds[turn % len(kinds)], grace)
                for finding in s.findings[before:]:
                    finding.emitted = emit.write(finding, s, report_dir / "findings", note)
                    log(f"{session.label} {s.facts.name}: {finding.signature}: minimal case ({'certified' if finding.minimal else 'NOT certified'} minimal), "
                        f"reproduced by its YAML: {finding.emitted.get('reproduced')}; {finding.emitted.get('yaml')}")
            turn += 1
            counts = ", ".join(f"{s.facts.name} {s.examples}" + (f" ({len(s.findings)} found)" if s.findings else "")
                               for s in searches)
            log(f"{session.label} {time.monotonic() - started:6.1f} s: {session.count} cases run: {counts}")
    finally:
        session.close()
        if coverage is not None:
            coverage.stop()
    run = {"run_id": session.rundir.run_id, "banner": session.target.banner, "family": family, "seed": seed,
           "budget_s": budget_s, "kinds": list(kinds), "command": " ".join(argv), "started": session.started,
           "ended": identity.now(), "examples": session.count, "simulated": session.simulated,
           "identity": session.identity()}
    doc = summary.build(run, searches, reach.summary({s.facts.name: s.facts for s in searches}),
                        coverage.report([s.facts.model for s in searches]) if coverage is not None else None,
                        session.records)
    summary.write(report_dir, doc, searches)
    return doc
