"""The run-side recorder: every report, written once when the run ends.

Its records come from the journals (harness/execution/journal.py: one record per case, MISSING
for a case started and never finished, a resumed run's earlier records included), the one way a
record travels from the process that ran its case. MISSING records are added for cases the
manifest assigned but no process ever started, the gate adds its perf verdicts, and then
results.jsonl is written (once), summary.json (headed by the run's identity), summary.txt,
summary.md, junit.xml and report.html. While the run goes on, its journals are the live view
(`python -m harness.execution.journal DIR`), and the readers of a report directory fall back to
them for a run that never finished (records.load_results).
"""
from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from . import identity as ident_mod, records as rec_mod, utilisation, writers
from .perf import gate as perf_gate, summary as perf_summary
from .baseline import Baseline
from .gate import GateResult, evaluate
from .runs import Report, Run
from ..core.status import ORDER, Status
from ..target import Target


def _files_of(records: list[dict], root: Path) -> list[Path]:
    """The case files and ATK lists the records came from (their node ids' file parts), which
    is what the run read: not every file of cases/, and lists outside the checkout too."""
    names = {r["nodeid"].partition("::")[0] for r in records if r.get("nodeid")}
    paths = {(Path(n) if Path(n).is_absolute() else root / n) for n in names if n}
    return sorted(p for p in paths if p.is_file())


class Recorder:
    def __init__(self, directory: Path, target: Target, *, root: Path, argv: list[str],
                 case_files=(), extra: dict | None = None, html: bool = True, started: str | None = None):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.target, self.banner = target, target.banner
        self.root, self.argv, self.case_files, self.extra, self.html = Path(root), argv, list(case_files), extra or {}, html
        if html:
            from .html import prepare
            prepare()
        self.results_path = self.dir / rec_mod.RESULTS
        self.records: list[dict] = []         # the run's, once finished
        self.started, self._t0 = started or ident_mod.now(), time.time()
        self.identity: dict = {}
        self.gate: GateResult | None = None
        self.perf: perf_gate.PerfGate | None = None     # the perf verdicts of a gated run
        self.gate_lines: list[str] = []       # the gate's verdict, or why there is none (a refused baseline)
        self.perf_lines: list[str] = []       # what a perf run measured, when no gate judged it
        self.causes = None                    # the failures' causes (harness/triage), once finished
        self.utilisation: dict | None = None   # per device, busy / wall (utilisation.py), once finished

    # ---------------------------------------------------------------- views for the terminal

    def counts(self) -> dict[str, Counter]:
        out: dict = defaultdict(Counter)
        for r in self.records:
            out[r.get("op", "?")][rec_mod.status_of(r)] += 1
        return out

    def table(self) -> list[str]:
        counts = self.counts()
        cols = [s for s in ORDER if any(c[s] for c in counts.values())] or [Status.PASS]
        width = max([len(op) for op in counts] + [8])
        head = f"{'operator':<{width}}  " + "  ".join(f"{s.value:>{max(7, len(s.value))}}" for s in cols) + "    total"
        lines, total = [head], Counter()
        for op in sorted(counts):
            c = counts[op]
            total.update(c)
            lines.append(f"{op:<{width}}  " + "  ".join(f"{c[s]:>{max(7, len(s.value))}}" for s in cols) + f"  {sum(c.values()):>7}")
        lines.append(f"{'all':<{width}}  " + "  ".join(f"{total[s]:>{max(7, len(s.value))}}" for s in cols) + f"  {sum(total.values()):>7}")
        return lines

    @property
    def notes(self) -> list[tuple[str, str]]:
        return [(r["case_id"], r["note"]) for r in self.records if r.get("note")]

    # ---------------------------------------------------------------- the end of the run

    @property
    def gate_exit_code(self) -> int:
        """A gated run's exit status: 1 on a new problem or a perf regression."""
        return 1 if (self.gate and not self.gate.passed) or (self.perf and not self.perf.passed) else 0

    def _write_results(self) -> None:
        """results.jsonl, written once (replaced at once: a reader never sees half, and one of a
        resumed run sees the earlier file until then)."""
        tmp = self.results_path.with_suffix(".tmp")
        tmp.write_text("".join(rec_mod.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        tmp.replace(self.results_path)

    def _gate_perf(self, baseline: Baseline | None) -> None:
        """A gated run's measured cases judged against its perf baselines: each record gets its
        `perf_gate` verdicts, the gate's lines the perf verdicts. An ungated perf run gets one line
        saying that nothing was gated on time."""
        if baseline is None:
            self.perf_lines = perf_gate.PerfGate(None, None, self.records).lines()
            return
        self.records, self.perf = perf_gate.gate(self.records, baseline, ident_mod.opapi_hash(self.identity))
        self.gate_lines += self.perf.lines()

    def serious(self) -> list[dict]:
        """Cases that crashed, hung or never finished."""
        bad = (Status.CRASH.value, Status.TIMEOUT.value, Status.MISSING.value)
        return [r for r in self.records if r.get("status") in bad]

    def finish(self, records: list[dict], gated: bool = False, baseline: Baseline | None = None,
               refused: str | None = None, history=None) -> Path:
        """`records`: one per case, from the journals (harness/execution/journal.py); cases the
        manifest assigned that no journal knows are added as MISSING.
        gated: judge them against `baseline` (already applied to each record); refused: why the
        baseline does not fit this run, written instead of any verdict. history(run, report): --db's
        ingest, called once results.jsonl and summary.json are written (the run's files come first),
        returning the History section of report.html or None."""
        manifest = rec_mod.load_manifest(self.dir)
        self.records = list(records) + rec_mod.missing_records(manifest, records, self.target,
                                                               stopped=self.extra.get("stopped"))
        self.identity = ident_mod.collect(self.target, root=self.root, argv=self.argv,
                                          case_files=_files_of(self.records, self.root) or self.case_files,
                                          started=self.started, ended=ident_mod.now(), extra=self.extra)
        self.gate = evaluate(self.records, baseline, rec_mod.selected_ids(manifest)) if gated and not refused else None
        self.gate_lines = [f"GATE REFUSED: {refused}"] if refused else self.gate.lines() if self.gate else []
        self._gate_perf(baseline if self.gate else None)
        self._write_results()
        counts = self.counts()
        self.utilisation = utilisation.summary(self.records)
        summary = {"identity": self.identity, "banner": self.banner, "properties": self.target.to_wire(),
                   "duration_s": round(time.time() - self._t0, 3),
                   "totals": {s.value: n for s, n in Counter(rec_mod.status_of(r) for r in self.records).items()},
                   "per_operator": {op: {s.value: n for s, n in c.items()} for op, c in counts.items()},
                   "failures": [{"case_id": r["case_id"], "status": r["status"], "reason": r.get("reason", ""),
                                 "repro": r.get("repro", "")}
                                for r in self.records if rec_mod.status_of(r).is_failure],
                   "notes": [{"case_id": c, "note": n} for c, n in self.notes],
                   "gate": self.gate_lines or None, "performance": perf_summary.summary(self.records),
                   "utilisation": self.utilisation}
        text = [self.banner, *self.table()]
        if self.notes:
            text.append(f"{len(self.notes)} case(s) carry a note: a documented claim the code does not follow, "
                        "or a deviation they target (summary.json)")
        (self.dir / "summary.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
        run = Run(str(self.dir), self.identity, self.records, manifest, summary["duration_s"])
        report = Report(f"aclnn conformance: {run.label}", [run], self.records, gate_lines=self.gate_lines)
        if self.extra.get("stopped"):
            # the runner's grace period (10 s before SIGKILL) is for the records and the summaries
            report.brief = (f"stopped by {self.extra['stopped']}: the plots and the causes are left out so that the "
                            f"run stops within seconds; `python -m harness.reporting render {self.dir}` draws them")
        self.causes = report.causes()           # the terminal's summary ends with them (run.py)
        summary["causes"] = self.causes.to_dict() if self.causes.failures else None
        (self.dir / "summary.json").write_text(json.dumps(rec_mod.jsonable(summary), indent=2) + "\n", encoding="utf-8")
        if history is not None:
            report.history = history(run, report)
        writers.write_all(report, self.dir, html=self.html)
        return self.dir
