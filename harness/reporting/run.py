"""One process's reporting for a pytest run: options, selection (baseline skips, shard,
manifest), running a case (reruns, record, gate verdict, dump), recording in the controller,
and the end of the run. harness/plugin/ calls these from its hooks; nothing here knows pytest.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import baseline as bl, identity, records as rec_mod, repro_line as repro, reruns
from .perf import ab as perf_ab, baseline as perf_baseline
from . import shard as shard_mod, utilisation
from .gate import is_gate_failure
from .recorder import Recorder
from ..target import Target
from ..core.argv import decimal
from ..core.status import Status
from ..core.text import printable

USAGE_ERROR = 4       # pytest's exit status for a bad command line, which a refused --gate is


def add_options(group) -> None:
    """The command-line options, on a pytest option group."""
    group.addoption("--gate", default=None, metavar="BASELINE",
                    help="baseline file or directory (files picked by target: backend + family [+ CANN version]); "
                         "exit non-zero only on new failures, crashes, timeouts, missing cases or stale baseline "
                         "entries (UNEXPECTED_PASS)")
    # no argparse type: its refusal of `--reruns x` is pytest's four-line usage block (from_options says it in one)
    group.addoption("--reruns", default=0, metavar="N",
                    help="rerun a failing case up to N times; a case that then passes is a FLAKE")
    group.addoption("--shard", default=None, metavar="i/n",
                    help="run shard i of n (1-based) of the selected cases: deterministic, interleaved")
    group.addoption("--shard-durations", default=None, metavar="FILE",
                    help="balance shards by recorded durations (a report directory, results.jsonl, or {id: s} JSON)")
    group.addoption("--dump-failures", action="store_true",
                    help="write each failing case's inputs, golden, actual output and metrics to "
                         "<report-dir>/failures/<case id prefix>-<hash of the id>.npz")
    group.addoption("--dump-all", action="store_true",
                    help="as --dump-failures, for every case that ran its kernel, passing ones too (kept for "
                         "bit drift: `python -m harness.reporting compare` then gives the largest ulp distance "
                         "of an output whose digest changed)")
    group.addoption("--no-html", action="store_true", help="skip report.html (the other reports are still written)")
    group.addoption("--db", default=None, metavar="URL",
                    help="ingest the run into this results store when it ends (sqlite:///FILE or a plain path: "
                         "SQLite; postgresql://USER@HOST/DB for a fleet), and give report.html a History section; "
                         "a store that cannot be reached costs one line, never the run's files or exit status")


@dataclass(frozen=True)
class ReportSettings:
    gate: str | None
    reruns: int
    shard: tuple[int, int] | None
    durations: dict | None
    dump_failures: bool
    html: bool
    report_dir: str | None
    dump_all: bool = False      # --dump-all: passing cases' arrays too (dump_failures is then set as well)
    db: str | None = None       # --db: the results store the run is ingested into when it ends

    @classmethod
    def from_options(cls, getoption) -> "ReportSettings":
        """Read and check the options; a bad one raises a HarnessConfigError with one line."""
        # `is not None`: an empty value (an unset CI variable) is a mistake, never "not given"
        shard = shard_mod.parse(getoption("shard")) if getoption("shard") is not None else None
        durations = (shard_mod.load_durations(getoption("shard_durations"))
                     if getoption("shard_durations") is not None else None)
        gate = getoption("gate")
        if gate is not None and not gate.strip():
            raise bl.BaselineError("--gate: an empty value (an unset variable in the calling script?)")
        if gate and Path(gate).is_file():
            # a malformed baseline, or one for another backend or --soc, stops the run at once:
            # before any case runs and before any report could carry a gate verdict
            bl.check_target(Path(gate), bl.load_file(Path(gate)), getoption("backend"), getoption("soc"), partial=True)
        elif gate and Path(gate).is_dir():
            bl.load_dir(Path(gate))                          # the same for each file of a directory
        elif gate:
            raise bl.BaselineError(f"--gate {gate}: baseline file or directory not found")
        rerun_count = getoption("reruns")
        try:
            rerun_count = decimal(rerun_count, integer=True) if isinstance(rerun_count, str) else rerun_count
        except ValueError:
            raise shard_mod.ShardError(f"--reruns: must be an integer >= 0, got {rerun_count!r}") from None
        if rerun_count < 0:
            raise shard_mod.ShardError("--reruns: must be >= 0")
        db = getoption("db")
        if db is not None:       # the URL's form only: whether the store answers is the end of the run's business
            from ..history import parse_url
            parse_url(db)
        return cls(gate, rerun_count, shard, durations, getoption("dump_failures") or getoption("dump_all"),
                   not getoption("no_html"), _absolute(getoption("report_dir")), getoption("dump_all"), db)


def _absolute(path: str | None) -> str | None:
    """Made absolute once, before any library code runs: a library that changes the working
    directory must not move where the reports (and --dump-failures' files) go."""
    return None if path is None else os.path.abspath(path)


class RunReporting:
    """Per-process state: the baseline (loaded once the target is known) and, in the xdist
    controller or the only process, the recorder."""

    def __init__(self, settings: ReportSettings, *, root: Path, argv: list[str], requested: dict, worker: str | None,
                 extra: dict | None = None):
        self.settings, self.root, self.argv, self.requested, self.worker = settings, Path(root), argv, requested, worker
        self.extra = extra or {}
        self.started = identity.now()
        self.switches = identity.switches()       # read once: every record's repro line names them
        self._baseline: bl.Baseline | None = None
        self._perf: tuple = (None, None)         # the run's perf baselines (own, benchmark), picked once
        self.gate_refused: str | None = None     # why the baseline does not fit this run, once known
        self.recorder: Recorder | None = None
        self.directory: Path | None = None      # the run's report directory, once the run has one
        self.history_lines: list[str] = []      # what --db's ingest said (or why it could not)
        self._library = None                    # the perf baseline's library, for A/B re-measurement (perf/ab.py)

    def report_dir(self, target: Target) -> Path:
        return self.directory or Path(self.settings.report_dir or target.report_dir(self.root))

    def baseline(self, target: Target) -> bl.Baseline | None:
        """The run's baseline; BaselineError when it does not fit the run (remembered: the end of
        the run reports a refused gate, never a verdict)."""
        if not self.settings.gate:
            return None
        if self.gate_refused:
            raise bl.BaselineError(self.gate_refused)
        if self._baseline is None:
            try:
                self._baseline = bl.load_for(Path(self.settings.gate), target.backend, target.family or "",
                                             target.version or None)
                self._perf = perf_baseline.pick(self._baseline)     # two that fit equally: refused here
            except bl.BaselineError as e:
                self.gate_refused = str(e)
                raise
        return self._baseline

    # ---------------------------------------------------------------- selection

    def select(self, cases: list[tuple], target: Target | None) -> list[bool]:
        """cases: [(case, nodeid)] left after every other selection. Returns which ones the shard
        keeps, and writes manifest.json. Loads the baseline, so a wrong target stops the run here."""
        if target:
            try:
                self.baseline(target)
            except bl.BaselineError:
                if self.worker is None:
                    raise
                # an xdist worker runs nothing: its error would be an INTERNALERROR of xdist's,
                # and the controller, which found the same refusal when it opened the run
                # (open_recorder), says it in one line and exits non-zero (finish)
                return [False] * len(cases)
        keep = [True] * len(cases)
        if self.settings.shard:
            keep = shard_mod.select([c.id for c, _ in cases], self.settings.shard, self.settings.durations)
        if target and self.worker in (None, "gw0"):     # every xdist worker selects the same; one writes it down
            entry = rec_mod.facts_of      # the case's facts: a MISSING record of it says as much as any other
            rec_mod.write_manifest(self.report_dir(target), [entry(c, n) for c, n in cases],
                                   [entry(c, n) for (c, n), k in zip(cases, keep) if k], self.settings.shard,
                                   {**self.requested, "family": self.requested.get("family") or target.family})
        return keep

    # ---------------------------------------------------------------- one case

    def baseline_skip(self, case, target: Target) -> str | None:
        """The reason a baseline's `skips` entry gives for not running this case, or None."""
        base = self.baseline(target)
        entry = base.find("skips", case.id) if base else None
        return f"baseline {entry.source}: {entry.reason} ({entry.link})" if entry else None

    def baseline_library(self, backend_settings):
        """The perf baseline's library (perf_ab.BaselineLibrary), made once the run has its perf
        baseline; None without one."""
        if self._library is None and self._perf[0] is not None:
            from .perf.ab import BaselineLibrary
            self._library = BaselineLibrary(backend_settings, self._perf[0].measured)
        return self._library

    def close_baseline_library(self) -> None:
        if self._library is not None:
            self._library.close()
            self._library = None

    def dump(self, target: Target) -> tuple[str, bool] | None:
        """(where the case worker writes a case's arrays, whether passing cases' too) with
        --dump-failures or --dump-all, else None."""
        if not self.settings.dump_failures:
            return None
        return str(self.report_dir(target) / "failures"), self.settings.dump_all

    def run_case(self, case, nodeid: str, target: Target, execute, baseline_library=None, deadline_s: float = 0.0) -> dict:
        """execute(case=case) -> the Outcome of one fresh attempt (of `case`, or of the variant
        given). Reruns, the record (and with it the final status), the dump (a case the baseline
        skips is not run at all). baseline_library: the perf
        baseline's library (perf_ab.BaselineLibrary), for an interleaved re-measurement of a flagged
        case within `deadline_s` per attempt."""
        deviation = case.deviation_on(target.backend, target.family)
        facts = rec_mod.facts_of(case, nodeid, deviation.reason if deviation else None)
        skip = self.baseline_skip(case, target)
        if skip:
            return rec_mod.not_run(facts, Status.SKIP, skip, rec_mod.Context(target))
        outcome, attempts = reruns.run_with_reruns(execute, self.settings.reruns, deviates=deviation is not None)
        context = self.context(target, nodeid, attempts)
        record = rec_mod.build(outcome, facts, context)
        ab = None
        if baseline_library is not None and baseline_library.available:
            def ab():       # short rounds of the case (perf_ab.round_case) on both sides, made when needed
                short = perf_ab.round_case(case)
                return (lambda: execute(short)), baseline_library.runner(short, deadline_s)
        alone = baseline_library.why if baseline_library is not None else "the run has no baseline library at hand"
        if reruns.remeasure(record, outcome, execute, *self._perf, ab=ab, alone_why=alone):
            record = rec_mod.build(outcome, facts, context)
        if self.settings.dump_failures:     # the arrays file gets the record's meta, the record the file's path
            record = rec_mod.build(reruns.dumped(outcome, record, self.settings.dump_all), facts, context)
        return record

    def record_outcome(self, case, nodeid: str, target: Target, outcome) -> dict:
        """The record of an Outcome that replaces a case's earlier one (a heap culprit found after it
        passed: harness/execution/blame.py)."""
        deviation = case.deviation_on(target.backend, target.family)
        facts = rec_mod.facts_of(case, nodeid, deviation.reason if deviation else None)
        return rec_mod.build(outcome, facts, self.context(target, nodeid))

    def context(self, target: Target, nodeid: str, attempts=()) -> rec_mod.Context:
        """What the records of this run share: the backend, its libraries' hashes, the baseline, and
        the command that reruns a case."""
        return rec_mod.Context(target, identity.library_hashes(target),
                               repro.command(nodeid, target, self.switches, self.root),
                               tuple(attempts), self.baseline(target))

    # ---------------------------------------------------------------- recording

    def open_recorder(self, directory: Path, target: Target) -> Recorder:
        """The controller's recorder, once the run has its report directory and backend facts."""
        self.directory = Path(directory)
        try:      # the target is known now: a baseline that does not fit is refused before any verdict
            self.baseline(target)
        except bl.BaselineError:
            pass      # remembered in gate_refused; selection raises it (one line) before any case runs
        case_files = sorted((self.root / "cases").glob("*.yaml"))
        self.recorder = Recorder(self.directory, target, root=self.root, argv=self.argv,
                                 case_files=case_files, extra=self.extra, html=self.settings.html,
                                 started=self.started)
        return self.recorder

    def harness_error(self, record: dict | None, nodeid: str, when: str, one_line: str, target: Target,
                      case_of) -> dict | None:
        """The record of a case whose pytest item failed for another reason than its verdict, made in
        the process that ran it (its journal carries it, as it carries every record): the harness
        raised around the case worker, before a record was made (case_of(nodeid) -> the case's
        facts) or after (the record's facts kept). None when the failure is the case's own verdict."""
        if record is not None and when == "call" and is_gate_failure(record):
            return None
        if record is not None:
            return rec_mod.not_run(rec_mod.facts_in(record), Status.FAIL, f"harness error: {one_line}",
                                   self.context(target, nodeid))
        return rec_mod.not_run({**case_of(nodeid), "nodeid": nodeid}, Status.FAIL,
                               f"{Status.FAIL.value}: harness error: {one_line}", self.context(target, nodeid))

    def worker_died(self, nodeid: str, one_line: str, target: Target, case_of) -> dict:
        """The record of a case whose pytest (xdist) worker died running it: the controller, which
        alone sees that, writes it to its own journal."""
        return rec_mod.not_run({**case_of(nodeid), "nodeid": nodeid}, Status.CRASH,
                               f"{Status.CRASH.value}: the pytest worker running it died: {one_line}",
                               self.context(target, nodeid))

    # ---------------------------------------------------------------- the end

    def finish(self, exitstatus: int, records: list[dict], stopped: str | None = None) -> int:
        """Write every report from `records` (one per case, from the journals); the exit status
        the run should end with. stopped: the signal that stopped the run and when
        (harness/execution/stopping.py), for the identity and the MISSING records' reasons."""
        if self.recorder is None:
            return exitstatus
        if stopped:
            self.recorder.extra["stopped"] = stopped
        history = self._history if self.settings.db else None
        if self.gate_refused:
            # the reports say so instead of a verdict; a run that got this far without the
            # refusal stopping it (an xdist controller selects nothing) still must not exit 0
            self.recorder.finish(records, refused=self.gate_refused, history=history)
            return exitstatus if exitstatus not in (0, 1, 5) else USAGE_ERROR    # 5: nothing ran
        gated = bool(self.settings.gate)
        self.recorder.finish(records, gated=gated, baseline=self._baseline, history=history)
        if gated and exitstatus in (0, 1):
            return self.recorder.gate_exit_code
        if exitstatus == 0 and any(r["status"] == Status.MISSING.value for r in self.recorder.records):
            return 1
        return exitstatus

    def _history(self, run, report) -> dict | None:
        """--db: the run into the results store, and report.html's History section. Its files are
        written already and its exit status is decided without it: a store that cannot be reached
        is one line saying how to ingest the run later."""
        from ..history.recording import record, retry_line
        if report.brief:      # stopped: the runner's grace period is for the files, not a database
            self.history_lines = [retry_line(self.settings.db, [run.directory], "a stopped run is ingested once "
                                             "resumed and finished, or by hand")]
            return None
        ops = sorted({r.get("op") for r in run.records if r.get("op")})
        done = record(self.settings.db, [run], identity.opapi_hash, families=[run.identity.get("family") or ""],
                      ops=ops, section=self.settings.html)
        self.history_lines = done.lines
        return done.section

    def summary_lines(self) -> list[str]:
        rec = self.recorder
        if rec is None:
            return []
        out = list(rec.gate_lines) + list(rec.perf_lines)
        stopped = rec.extra.get("stopped")
        if not rec.gate:
            bad = [r for r in rec.records if rec_mod.status_of(r).is_failure]
            if stopped:          # what the stop left undone is one line below, not one per case
                bad = [r for r in bad if r["status"] != Status.MISSING.value]
            for r in bad[:30]:
                out.append(f"{r['status']:<8} {r['case_id']}: {r.get('reason', '')}"[:400])
                if r.get("harness_error"):
                    out.append(f"         harness error: {r['harness_error']}"[:400])
                if r.get("repro"):
                    out.append(f"         repro: {r['repro']}")
            if len(bad) > 30:
                out.append(f"... and {len(bad) - 30} more (results.jsonl, summary.md)")
        out += [rec.banner, *rec.table(), *utilisation.lines(rec.utilisation)]
        unexpected = sum(r["status"] == Status.UNEXPECTED_PASS.value for r in rec.records)
        if unexpected:
            out.append(f"{unexpected} UNEXPECTED_PASS: a known deviation or baseline entry no longer fails "
                       "(summary.md lists them)")
        if rec.notes:
            out.append(f"{len(rec.notes)} case(s) carry a note: a documented claim the code does not follow, "
                       "or a deviation they target (summary.json)")
        if stopped:
            missing = sum(r["status"] == Status.MISSING.value for r in rec.records)
            out.append(f"STOPPED by {stopped}: {missing} case(s) MISSING; `./run suite --resume {rec.dir}` "
                       "runs only those")
        out.append(f"reports: {rec.dir} (results.jsonl, summary.md, junit.xml" + (", report.html)" if rec.html else ")"))
        out += self.history_lines
        if rec.causes is not None:      # last: what a reader of many failures reads first
            out += rec.causes.lines()
        return [printable(line) for line in out]     # a reason's ESC sequence must not reach the terminal
