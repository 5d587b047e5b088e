"""python -m harness.reporting merge|compare|baseline|gate|render ...

  merge -o OUT RUN...   combine report directories (shards, machines, families) into OUT
  compare NOW BEFORE    night over night: new failures, fixed, new flakes, metric and perf drifts, digests
  baseline RUN -o FILE  write a fresh baseline from a run's results (--perf: its launch times)
  gate RUN BASELINE     gate a finished run against a baseline (exit 1 on new problems)
  render RUN            rewrite summary.md, junit.xml and report.html of a run
  triage RUN            the failures' causes: each a short predicate over the cases' facts
  sweep -o OUT ...      run the family x shard job matrix here (separate processes), then merge
  ingest RUN... --db URL   put finished runs into the results store (the same run twice adds nothing)
  history WHAT --db URL    ask the results store: runs, timeline, first-bad, flakes, perf, pass-rate
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import baseline as bl, changes, gate, merge as merge_mod, records as rec_mod, writers
from . import history_cli
from .perf import baseline as perf_baseline, gate as perf_gate, summary as perf_summary
from .identity import opapi_hash
from .runs import CONFIRM_JSON, Problem, Report, load_run
from ..triage import triage as report_causes
from ..core.argv import Parser, fail, number, plain_int, run as run_cli
from ..core.errors import HarnessConfigError
from ..core.paths import REPO_ROOT
from ..core.text import say as _say
from ..target import Target


def _gate_report(report: Report, baseline_path: str) -> int:
    """Apply the baseline of each run's target to that run's records; the gate's lines go into the report."""
    if not report.runs:        # every directory was unreadable: nothing was gated, so nothing passed
        report.gate_lines = ["GATE FAILED: no readable run to gate (see the problems)"]
        return 1
    gated, all_lines, failed = [], [], False
    by_run: dict = {}
    for r in report.records:
        by_run.setdefault(r.get("_run"), []).append(r)
    for run in report.runs:
        recs = by_run.get(run.directory, []) if len(report.runs) > 1 else report.records
        ident = run.identity
        base = bl.load_for(Path(baseline_path), ident.get("backend", ""), ident.get("family", ""),
                           ident.get("cann_version") or None)
        recs = gate.apply(recs, base)
        result = gate.evaluate(recs, base, rec_mod.selected_ids(run.manifest))
        recs, perf = perf_gate.gate(recs, base, opapi_hash(ident))
        failed |= not result.passed or not perf.passed
        all_lines += [f"[{run.label}] baseline: {', '.join(base.files) or 'none'}"] + result.lines() + perf.lines()
        gated += recs
    missing = [r for r in report.records if r.get("_run") is None and len(report.runs) > 1]
    gated += missing
    failed |= any(gate.is_gate_failure(r) for r in missing)
    report.records, report.gate_lines = gated, all_lines
    return 1 if failed else 0


def cmd_merge(a) -> int:
    sweep = merge_mod.load_sweep_manifest(Path(a.manifest)) if a.manifest else None
    report = merge_mod.merge([Path(d) for d in a.runs], sweep)
    code = _gate_report(report, a.gate) if a.gate else 0
    if a.previous:
        previous = _previous_records(Path(a.previous), report)
        if previous is not None:
            report.changes = changes.compare(report.records, previous, a.drift, previous_label=a.previous)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / rec_mod.RESULTS).open("w", encoding="utf-8") as f:
        for r in report.records:
            f.write(rec_mod.dumps(r) + "\n")
    summary = {"identity": None, "runs": [{"directory": r.directory, "identity": r.identity, "shard": (r.manifest or {}).get("shard")}
                                          for r in report.runs],
               "problems": [p.__dict__ for p in report.problems],
               "totals": {s.value: n for s, n in report.ordered_totals()}, "gate": report.gate_lines,
               "changes": report.changes, "performance": perf_summary.summary(report.records),
               "digest_splits": changes.digest_splits(report.records)}
    summary["causes"] = report.causes().to_dict() if report.causes().failures else None
    (out / "summary.json").write_text(json.dumps(rec_mod.jsonable(summary), indent=1) + "\n", encoding="utf-8")
    history_lines = _merge_history(a, report) if a.db else []
    paths = writers.write_all(report, out, html=not a.no_html)
    _say(report.gate_lines)
    _say(f"{'PROBLEM' if p.blocking else 'NOTE'} {p.kind}: {p.message}" for p in report.problems)
    if report.changes:
        _say(changes.lines(report.changes))
    if summary["digest_splits"]:
        print(f"{len(summary['digest_splits'])} output(s) differ between families (summary.md)")
    print("totals: " + ", ".join(f"{s.value} {n}" for s, n in report.ordered_totals()))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    _say(history_lines)
    blocking = any(p.blocking for p in report.problems)
    return 1 if (blocking and not a.allow_problems) or code else 0


def _merge_history(a, report: Report) -> list[str]:
    """merge --db: each merged run into the results store (a shard job that ingested itself adds
    nothing again: this is also the retry of one whose store was unreachable), then the merged
    report's History section. Never the merge's files or its exit status."""
    from ..history.recording import record
    ops = sorted({r.get("op") for r in report.records if r.get("op")})
    done = record(a.db, report.runs, opapi_hash, families=report.families if report.runs else [], ops=ops,
                  section=not a.no_html)
    report.history = done.section
    return done.lines


def _previous_records(path: Path, report: Report) -> list[dict] | None:
    """Last night's records for the comparison. An unreadable one is noted, not fatal: tonight's
    merged report matters more than the comparison, and the comparison decides no exit code."""
    bad: list[str] = []
    try:
        records = rec_mod.load_results(path, bad)
    except rec_mod.ResultsError as e:
        report.problems.append(Problem("previous", f"{e}: no comparison with it", blocking=False))
        return None
    report.problems += [Problem("previous", why, blocking=False) for why in bad]
    return records


def _records_of(path: Path) -> list[dict]:
    return rec_mod.load_results(path)


def cmd_compare(a) -> int:
    result = changes.compare(_records_of(Path(a.now)), _records_of(Path(a.before)), a.drift, a.floor, previous_label=a.before)
    _say(changes.lines(result))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 1 if a.fail_on_new and (result["new_failures"] or result["new_flakes"]) else 0


def cmd_baseline(a) -> int:
    if len(a.run) > 1 and not a.perf:
        return fail("several runs make a perf baseline only (--perf): a correctness baseline is written from one run")
    runs = [load_run(Path(r)) for r in a.run]
    run, ident = runs[0], runs[0].identity
    target = bl.Target(a.backend or ident.get("backend", ""), a.family or ident.get("family", ""), a.cann_version)
    if not target.backend or not target.family:
        return fail(f"{a.run[0]}: the run names no backend/family; give --backend and --family")
    if (a.benchmark or a.tolerance is not None) and not a.perf:
        return fail("--benchmark and --tolerance belong to a perf baseline: give --perf")
    if a.perf:
        try:
            doc = perf_baseline.from_runs([(r.records, r.identity, p) for r, p in zip(runs, a.run)], target,
                                          benchmark=a.benchmark, tolerance=a.tolerance)
        except ValueError as e:
            return fail(str(e))
        if not doc["cases"]:
            return fail(f"{', '.join(a.run)}: no case of {doc['measured']['backend']}-{target.family} "
                        "was measured (not a perf run)")
        empty = [d["run"] for d in doc["measured"]["runs"] if not d["cases"]]
        if empty:
            return fail(f"{', '.join(empty)}: no case of {doc['measured']['backend']}-{target.family} was measured")
        path = perf_baseline.write(Path(a.output), doc)
        print(f"{path}: launch times of {len(doc['cases'])} case(s) for {target} from {len(runs)} run(s)"
              + (f" (benchmark: measured on {doc['measured']['backend']})" if a.benchmark else "")
              + ("" if len(runs) > 1 else "; one run: the gate cannot rule out the noise between runs "
                 "(give several runs)"))
        return 0
    a.run = a.run[0]
    entries = gate.baseline_entries_from(run.records, a.link)
    header = (f"Baseline written from {a.run} ({ident.get('started', '?')}, suite {ident.get('suite_commit', '?')}).\n"
              "Review every entry: give it a real reason and a link to the issue that tracks it.")
    path = bl.write(Path(a.output), target, entries, header)
    print(f"{path}: {sum(e.kind == 'fails' for e in entries)} fails, {sum(e.kind == 'flakes' for e in entries)} flakes for {target}")
    return 0


def cmd_gate(a) -> int:
    run = load_run(Path(a.run))
    target = Target.from_wire(run.identity.get("backend_properties") or {})
    report = Report(f"gate of {a.run}", [run], run.records + rec_mod.missing_records(run.manifest, run.records, target))
    code = _gate_report(report, a.baseline)
    _say(report.gate_lines)
    return code


def cmd_render(a) -> int:
    run = load_run(Path(a.run))
    report = Report(f"aclnn conformance: {run.label}", [run], run.records)
    paths = writers.write_all(report, Path(a.run), html=not a.no_html)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def cmd_triage(a) -> int:
    identities = None
    if a.confirm:       # before anything is printed: finding the CANN may re-execute this process
        import os
        from ..explore import confirm as confirm_mod
        confirm_mod.prepare()
        run = load_run(Path(a.run))         # read once: its records and the identities they are checked by
        identities, records = _identities(run), run.records
        try:
            for ident in identities.values():
                confirm_mod.check_switches(ident, dict(os.environ))
        except confirm_mod.ConfirmError as e:
            raise HarnessConfigError(f"{a.run}: --confirm: {e}") from None
    else:
        records = _records_of(Path(a.run))
    result = report_causes(records)
    _say(result.lines(cases=a.cases) or [f"{a.run}: no failures, no causes"])
    doc = result.to_dict()
    if a.confirm and result.causes:
        doc["confirmations"] = _confirm(a, records, result, identities)
    if a.json:
        Path(a.json).write_text(json.dumps(rec_mod.jsonable(doc), indent=1) + "\n", encoding="utf-8")
    return 0


def _identities(run) -> dict[str, dict]:
    """family -> the identity of the run that tested it: a run's own, or each run of a merge's
    (summary.json `runs`)."""
    if run.identity.get("family"):
        return {run.identity["family"]: run.identity}
    try:
        doc = json.loads((Path(run.directory) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    runs = doc.get("runs") if isinstance(doc, dict) else None
    return {r["identity"]["family"]: r["identity"] for r in runs or []
            if isinstance(r, dict) and isinstance(r.get("identity"), dict) and r["identity"].get("family")}


def _confirm(a, records: list[dict], result, identities: dict[str, dict]) -> list[dict]:
    """--confirm: every cause tested by running new cases in and around it (harness/explore/confirm.py,
    on the library of this process, which must be the run's); written to RUN/confirm/confirm.json."""
    import sys
    from ..explore import confirm as confirm_mod
    run_dir = Path(a.run)
    out = run_dir / "confirm"
    try:
        done = confirm_mod.confirm(records, result, identities, cases_dir=REPO_ROOT / "cases", root=REPO_ROOT, out_dir=out,
                                   argv=[PROG, "triage", *sys.argv[2:]], per_side=a.confirm_cases, seed=a.seed,
                                   log=lambda line: _say([line]))
    except confirm_mod.ConfirmError as e:
        raise HarnessConfigError(f"{run_dir}: --confirm: {e}") from None
    _say(["", "Confirmation by experiment:", *confirm_mod.lines(done)])
    docs = [c.to_dict() for c in done]
    path = run_dir / CONFIRM_JSON
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec_mod.jsonable(docs), indent=1) + "\n", encoding="utf-8")
    if (run_dir / "summary.md").exists():     # the run's own report shows them under its causes
        cmd_render(argparse.Namespace(run=str(run_dir), no_html=not (run_dir / "report.html").exists()))
    return docs


def cmd_sweep(a) -> int:
    from . import sweep
    extra = [x for x in a.pytest_args if x != "--"]
    merge_args = (["--previous", a.previous] if a.previous else []) + (["--gate", a.gate] if a.gate else [])
    if a.db:      # every job ingests its run when it ends (at once: the store takes it), the merge any it missed
        extra += ["--db", a.db]
        merge_args += ["--db", a.db]
    return sweep.run(Path(a.out), [f for f in a.families.split(",") if f], a.shards, a.backend, extra,
                     REPO_ROOT, merge_args, lambda argv: main(["merge", *argv]), a.parallel)


PROG = "python -m harness.reporting"
# --drift: how many times a metric's share of its threshold must have grown (1 would list every
# unchanged metric as grown 1x, a negative value every metric); --floor: a share of a threshold;
# --tolerance: 0.1 is 10 %
_DRIFT = number(above=1)
_SHARE = number(minimum=0)
_TOLERANCE = number(minimum=0)


def main(argv=None) -> int:
    p = Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge", help="combine report directories into one report")
    m.add_argument("-o", "--out", required=True, help="directory for the merged report")
    m.add_argument("runs", nargs="+", help="report directories (one per shard / family / machine)")
    m.add_argument("--manifest", help="sweep manifest (YAML: backend, families, shards, library_sha256, soc_names)")
    m.add_argument("--gate", help="baseline file or directory; each run is gated against its target's baseline")
    m.add_argument("--previous", help="a previous merged report directory: list what changed since")
    m.add_argument("--drift", type=_DRIFT, default=2.0, help="metric drift ratio worth reporting (> 1; default 2)")
    m.add_argument("--allow-problems", action="store_true", help="exit 0 despite missing/duplicate/identity problems")
    m.add_argument("--no-html", action="store_true")
    m.add_argument("--db", help="also ingest every merged run into this results store (and a History section)")
    m.set_defaults(fn=cmd_merge)
    c = sub.add_parser("compare", help="night over night: what changed between two report directories")
    c.add_argument("now"), c.add_argument("before")
    c.add_argument("--drift", type=_DRIFT, default=2.0, help="metric drift ratio worth reporting (> 1; default 2)")
    c.add_argument("--floor", type=_SHARE, default=0.0,
                   help="ignore drifts of metrics under this share of their threshold (>= 0)")
    c.add_argument("--json", help="also write the changes as JSON here")
    c.add_argument("--fail-on-new", action="store_true", help="exit 1 when there are new failures or flakes")
    c.set_defaults(fn=cmd_compare)
    b = sub.add_parser("baseline", help="write a fresh baseline from a run's results")
    b.add_argument("run", nargs="+", help="a run's report directory; with --perf, one or more runs of one library "
                   "(the gate then judges against the spread between them)")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("--link", default="TODO: link the issue that tracks this failure")
    b.add_argument("--backend"), b.add_argument("--family"), b.add_argument("--cann-version")
    b.add_argument("--perf", action="store_true", help="a perf baseline: each measured case's launch times")
    b.add_argument("--benchmark", action="store_true", help="with --perf: the run measured the benchmark device of "
                   "ATK's standard.perf ratios; --backend names the backend it gates")
    b.add_argument("--tolerance", type=_TOLERANCE, help="with --perf: the file's default tolerance "
                   "(a finite number >= 0; 0.1: 10 %%)")
    b.set_defaults(fn=cmd_baseline)
    g = sub.add_parser("gate", help="gate a finished run against a baseline")
    g.add_argument("run"), g.add_argument("baseline")
    g.set_defaults(fn=cmd_gate)
    r = sub.add_parser("render", help="rewrite a run's summary.md, junit.xml and report.html")
    r.add_argument("run"), r.add_argument("--no-html", action="store_true")
    r.set_defaults(fn=cmd_render)
    t = sub.add_parser("triage", help="the failures' causes: each a short predicate over the cases' facts")
    t.add_argument("run", help="a report directory (a run's or a merge's)")
    t.add_argument("--cases", type=number(minimum=0, integer=True), default=5,
                   help="case ids listed under each cause (default 5)")
    t.add_argument("--json", help="also write the causes as JSON here")
    t.add_argument("--confirm", action="store_true", help="test each cause by running new cases inside and outside "
                   "its predicate on this process's library (the run's), and shrink one failure per cause to a "
                   "minimal YAML group and C reproducer")
    t.add_argument("--confirm-cases", type=number(minimum=1, integer=True), default=8,
                   help="with --confirm: new cases run on each side of each predicate (default 8)")
    t.add_argument("--seed", type=number(minimum=0, integer=True), default=0,
                   help="with --confirm: which neighbours are drawn (default 0)")
    t.set_defaults(fn=cmd_triage)
    w = sub.add_parser("sweep", help="run the family x shard job matrix as separate processes, then merge")
    w.add_argument("-o", "--out", required=True)
    w.add_argument("--families", required=True, help="comma-separated SoC families")
    # plain_int, not int: int() also reads `1_0` and `١` (core/argv.py); sweep.check says their range
    w.add_argument("--shards", type=plain_int, default=2)
    w.add_argument("--backend", default="aclnn")
    w.add_argument("--parallel", type=plain_int, default=1, help="jobs at once (default 1)")
    w.add_argument("--previous", help="last night's merged report directory")
    w.add_argument("--gate", help="baseline file or directory")
    w.add_argument("--db", help="results store: each job ingests its run when it ends, the merge any it missed")
    w.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: extra pytest arguments for every job")
    w.set_defaults(fn=cmd_sweep)
    i = sub.add_parser("ingest", help="put finished runs into the results store (the same run twice adds nothing)")
    i.add_argument("runs", nargs="+", help="report directories (a merged one: the runs it merged)")
    i.add_argument("--db", required=True, help="the results store (sqlite:///FILE, a path, or postgresql://...)")
    i.set_defaults(fn=history_cli.cmd_ingest)
    history_cli.add_history(sub)
    a = p.parse_args(argv)
    try:
        if getattr(a, "db", None) is not None:     # the URL's form, before any run, job or merge starts
            from ..history import parse_url
            parse_url(a.db)
        return a.fn(a)
    except (HarnessConfigError, rec_mod.ResultsError, merge_mod.ManifestError) as e:    # baseline, shard, sweep, history
        return fail(str(e))


if __name__ == "__main__":
    run_cli(main)
