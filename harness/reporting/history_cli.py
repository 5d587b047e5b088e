"""The results store's command lines, as `python -m harness.reporting` runs them: `ingest` (finished
runs into the store) and `history WHAT` (its answers, printed one line each, and --json). The store
and its questions are harness/history's; this module only reads the options and renders the answers.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import baseline as bl, records as rec_mod
from .identity import opapi_hash
from .runs import load_run
from ..core.argv import number
from ..core.text import say as _say

# the command line's number types (as __main__'s)
_COUNT = number(minimum=1, integer=True)
_SHARE = number(minimum=0)
_TOLERANCE = number(minimum=0)


def _run_dirs(paths: list[str]) -> list[Path]:
    """The run directories to ingest: each given directory, or, for a merged report (summary.json
    lists its runs and it has no run of its own), the runs it merged. Every one checked before any
    is ingested: a typo in the last one must not leave half of the list in the store."""
    out = []
    for text in paths:
        path = Path(text)
        if not path.is_dir():
            raise rec_mod.ResultsError(f"{text}: not a directory")
        merged = _merged_runs(path)
        for d in merged if merged is not None else [path]:
            if not (Path(d) / rec_mod.RESULTS).is_file():
                raise rec_mod.ResultsError(
                    f"{d}: no {rec_mod.RESULTS} " + ("(a run that has not finished: finish it with --resume, "
                                                     "then ingest it)" if rec_mod.unfinished(d)
                                                     else "(not a report directory)"))
            out.append(Path(d))
    return out


def _merged_runs(path: Path) -> list[str] | None:
    if (path / "run.json").is_file() or not (path / "summary.json").is_file():
        return None
    try:
        doc = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and doc.get("identity") is None and isinstance(doc.get("runs"), list):
        return [str(r["directory"]) for r in doc["runs"] if isinstance(r, dict) and r.get("directory")]
    return None


def cmd_ingest(a) -> int:
    from ..history import open_store
    from ..history.ingest import RunSource, ingest
    runs = [load_run(d) for d in _run_dirs(a.runs)]
    store = open_store(a.db)
    try:
        if store.upgraded:
            print(f"history: {store.upgraded}")
        sources = [RunSource(r.directory, r.identity, r.records, opapi_hash(r.identity), r.manifest, r.duration_s)
                   for r in runs]
        for done in ingest(store, sources):
            _say([done.line()])
    finally:
        store.close()
    return 0


def cmd_history(a) -> int:
    from ..history import open_store
    store = open_store(a.db, create=False)
    try:
        with store.reading() as conn:
            lines, doc = a.answer(a, conn)
    finally:
        store.close()
    _say(lines)
    if a.json:
        text = json.dumps(rec_mod.jsonable(doc), indent=1) + "\n"
        if a.json == "-":
            sys.stdout.write(text)
        else:
            Path(a.json).write_text(text, encoding="utf-8")
    return 0


def _history_runs(a, conn):
    from ..history import runs as runs_mod
    rows = runs_mod.window(runs_mod.of_family(conn, a.family), a.last)
    return ([f"{r.family or 'any'}: {r.text()}: {r.passed}/{r.total} passed, {r.failed} failed" for r in rows]
            or ["no runs in the store" + (f" for {a.family}" if a.family else "")],
            [{**r.brief(), "total": r.total, "passed": r.passed, "failed": r.failed} for r in rows])


def _history_timeline(a, conn):
    from ..history import timeline
    found = timeline.timeline(conn, a.case, a.family, a.last)
    if not found:
        return [f"{a.case}: not in the store" + (f" on {a.family}" if a.family else "")], {}
    lines = [line for fam, points in found.items()
             for line in (f"{a.case} on {fam}: {len(points)} run(s)", *(p.line() for p in points),
                          *(x for f in timeline.analyse(a.case, fam, points) for x in f.lines()))]
    return lines, {fam: [p.to_dict() for p in points] for fam, points in found.items()}


def _history_first_bad(a, conn):
    from ..history import timeline
    found = timeline.first_bad_runs(conn, a.family, a.window, a.case)
    lines = [line for f in found for line in f.lines()]
    return lines or ["no case failing, regressed or changing its bits" + (f" on {a.family}" if a.family else "")], \
        [f.to_dict() for f in found]


def _history_flakes(a, conn):
    from ..history import flakes
    entries = []
    if a.baseline:
        path = Path(a.baseline)
        bases = bl.load_dir(path) if path.is_dir() else [bl.load_file(path)]
        entries = [(e.case, e.source, e.matches) for b in bases for e in b.entries if e.kind == "flakes"]
    found = flakes.flakes(conn, a.family, a.window, entries, a.min_rate)
    return found.lines(), found.to_dict()


def _history_perf(a, conn):
    from ..history import perf
    found = perf.trends(conn, a.family, a.op, a.window, a.alpha, a.min_change, a.tolerance)
    shown = found if a.all else [t for t in found if t.drift]
    lines = [t.line() for t in shown] or [f"no slow drift over the last {a.window} run(s) ({len(found)} series; "
                                          "--all lists every one)"]
    return lines, [t.to_dict() for t in shown]


def _history_pass_rate(a, conn):
    from ..history import pass_rate
    rates = pass_rate.pass_rates(conn, a.family, a.last, a.by)
    return pass_rate.lines(rates) or ["no runs in the store"], \
        {fam: [p.to_dict() for p in points] for fam, points in rates.items()}


def add_history(sub) -> None:
    h = sub.add_parser("history", help="ask the results store (--db): runs, timelines, first bad runs, flakes, "
                                       "perf drifts, pass rates")
    what = h.add_subparsers(dest="what", required=True)

    def common(p, answer):
        p.add_argument("--db", required=True, help="the results store (sqlite:///FILE, a path, or postgresql://...)")
        p.add_argument("--family", help="one SoC family (default: each in the store)")
        p.add_argument("--json", help="also write the answer as JSON to this file ('-': stdout)")
        p.set_defaults(fn=cmd_history, answer=answer)
        return p

    runs = common(what.add_parser("runs", help="the runs in the store, oldest first"), _history_runs)
    runs.add_argument("--last", type=_COUNT, help="only the last N runs")
    t = common(what.add_parser("timeline", help="one case's results per family, and its first bad runs"),
               _history_timeline)
    t.add_argument("case", help="a case id")
    t.add_argument("--last", type=_COUNT, help="only its last N runs per family")
    f = common(what.add_parser("first-bad", help="cases failing, regressed or whose bits changed: the last good and "
                                                 "first bad run (library, CANN version, what changed)"),
               _history_first_bad)
    f.add_argument("--window", type=_COUNT, default=30, help="runs per family looked at for candidates (default 30)")
    f.add_argument("--case", help="only this case (its whole timeline)")
    fl = common(what.add_parser("flakes", help="flake rates, proposed baseline flakes: entries, stale ones"),
                _history_flakes)
    fl.add_argument("--window", type=_COUNT, default=60, help="the last N runs per family (default 60)")
    fl.add_argument("--baseline", help="a baseline file or directory: its flakes: entries are marked and the stale "
                                       "ones listed")
    fl.add_argument("--min-rate", type=number(minimum=0, maximum=1), default=0.0,
                    help="list only cases flaking at least this often (0-1; default 0)")
    pf = common(what.add_parser("perf", help="perf trends per op and family; slow drifts each night's gate misses"),
                _history_perf)
    pf.add_argument("--op", help="one operator")
    pf.add_argument("--window", type=number(minimum=8, integer=True), default=30,
                    help="the last N runs per family (>= 8; default 30)")
    pf.add_argument("--alpha", type=number(above=0, maximum=0.5), default=0.01,
                    help="the rank test's level (default 0.01)")
    pf.add_argument("--min-change", type=_SHARE, default=0.05, help="the least rise in all that is a drift "
                                                                     "(0.05: 5 %%; default)")
    pf.add_argument("--tolerance", type=_TOLERANCE, default=0.10,
                    help="the nightly gate's tolerance a drift's steps are compared with (default 0.10)")
    pf.add_argument("--all", action="store_true", help="every series, not only the drifts")
    pr = common(what.add_parser("pass-rate", help="pass rate per family over time"), _history_pass_rate)
    pr.add_argument("--last", type=_COUNT, help="only the last N points per family")
    pr.add_argument("--by", choices=("run", "day"), default="run", help="a point per run (default) or per day")
