"""The life of a case run in one pytest process: open it, run each case, record it, finish it.

The controller (or the only process) opens the run before any case runs: a probe case worker opens
the backend (every set-up mistake fails there, in one line), which says the target; then the report
directory is locked and, for --resume, the journals say what is already done (or that nothing is
left to do). Every process that runs cases has a pool of case workers and a journal
(harness/execution/); an xdist worker whose device is lost leaves the run to the others
(takeover.py). A record has one way to results.jsonl: the journal of the process that ran the case
(a harness error around a case is journalled there too; a pytest worker that died, by the
controller). The controller writes results.jsonl and every other report once, at the end, from the
journals; while the run goes on, the journals are its live view.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ..core.errors import HarnessConfigError
from ..core.status import Status
from ..execution import journal as journal_mod, scratch
from ..execution.deadline import deadline_for
from ..execution.pool import CasePool
from ..execution.rundir import NothingToResume, RunDir
from ..execution.stopping import StopSignals
from ..reporting import records as rec_mod
from ..reporting.run import RunReporting
from ..target import UNKNOWN, Target
from . import arguments, takeover
from .collection import runs_cases
from .output import past_capture
from .options import Settings
from .runinfo import RUN, RunInfo


class Lifecycle:
    def __init__(self, config, settings: Settings, upcoming):
        self.config, self.settings = config, settings
        self.upcoming = upcoming               # () -> the cases pytest runs next (scheduling.py)
        self.is_controller = not hasattr(config, "workerinput")
        self.run: RunInfo | None = None
        self.rundir: RunDir | None = None
        self.executor: CasePool | None = None
        self.journal: journal_mod.Journal | None = None
        self.controller_journal: journal_mod.Journal | None = None
        self.stop = StopSignals()              # SIGTERM and SIGHUP stop the run as Ctrl-C does
        self.interrupted = False               # Ctrl-C or a stop signal: cases in flight are not waited for
        self._cases: dict[str, dict] | None = None   # nodeid -> manifest entry (a case that left no record)
        self._nodeids: dict[str, str] | None = None  # case id -> node id, for a record that replaces another
        self.takeover = takeover.Takeover(config, self)   # workers whose device is lost, said once
        # --prepare-only fills the cache in this process (no device, no case worker)
        self.cache = _prepare_only_cache(settings) if settings.prepare_only else None
        # statuses, gating, reruns, shards, dumps and every report: harness/reporting/
        self.reporting = RunReporting(
            settings.report, root=Path(str(config.rootpath)), argv=["pytest", *config.invocation_params.args],
            requested={"backend": settings.backend, "family": settings.family}, worker=settings.worker,
            extra={"shard": config.getoption("shard"), "reruns": settings.report.reruns,
                   "gate": settings.report.gate, "tier": settings.tier, "perf": settings.perf,
                   "case_workers": settings.case_workers, "xdist_workers": config.getoption("numprocesses", None),
                   "determinism_level": settings.determinism_level})

    @property
    def recorder(self):
        return self.reporting.recorder

    def target(self) -> Target:
        """What the run runs on; UNKNOWN before the run opens (a collection error's record says so)."""
        return self.run.target if self.run else UNKNOWN

    # ------------------------------------------------------------ opening and closing the run

    def configure(self) -> None:
        self.stop.install()
        if not self.is_controller:
            wire = self.config.workerinput.get("aclnn_run")
            if wire is not None:
                self._set_run(RunInfo.from_wire(wire))
                self.reporting.directory = Path(self.run.report_dir)
                self._case_executor().warm_up()     # its zygote imports torch while this worker collects
            return
        if self.config.getoption("collectonly") or self.settings.prepare_only or not runs_cases(self.config):
            return
        arguments.check_paths(self.config)       # before the run opens: a wrong path writes no report
        self._open_run()

    def _set_run(self, run: RunInfo) -> None:
        self.run = run
        self.config.stash[RUN] = run

    def _open_run(self) -> None:
        """Everything that can be wrong with the set-up fails here, in one line, before any case runs."""
        distributed = self.settings.distributed
        executor = CasePool(self.settings.backend_settings(), "probe" if distributed else "main",
                            1 if distributed else self.settings.case_workers)
        try:
            target = executor.start(waiting=self._say_waiting)
            # the backend's facts are known now: a --gate baseline that does not fit the run (another
            # family, a launch time that is NaN) is refused here, before the report directory is
            # taken, the previous run moved aside or an empty run written
            self.reporting.baseline(target)
            resume = self.settings.resume
            directory = Path(resume or self.reporting.report_dir(target))
            self.rundir = RunDir.acquire(directory, bool(resume), ["pytest", *self.config.invocation_params.args],
                                         self.config.getoption("keep_previous"), finished=_nothing_left)
        except HarnessConfigError as e:
            executor.close()
            raise pytest.UsageError(arguments.one_line(e)) from None
        except NothingToResume as e:
            executor.close()
            pytest.exit(str(e), returncode=0)
        state = journal_mod.scan(directory) if resume else journal_mod.State()
        again = _will_run_again(directory, state) if resume else ()
        self._set_run(RunInfo(self.rundir.run_id, str(directory), target, tuple(sorted(state.done_ids())),
                              tuple(sorted(state.unfinished_ids())),
                              str(self.rundir.archived) if self.rundir.archived else None,
                              extra={"again": len(again), "unreadable": list(state.unreadable)}))
        if distributed:
            executor.close()             # the workers open their own
        else:
            self.executor = executor
        self.reporting.open_recorder(directory, target)
        if self.executor is not None:
            self.executor.set_dump(self.reporting.dump(target))
        self.controller_journal = journal_mod.Journal(directory, self.run.run_id, "controller")

    def _say_waiting(self, line: str) -> None:
        """A start-up that keeps the run waiting is said on stderr, past pytest's capture (the run opens
        in pytest_configure, before the terminal reporter may exist), and flushed: a CI log is a pipe."""
        with past_capture(self.config):
            print(line, file=sys.stderr, flush=True)

    def pytest_configure_node(self, node):
        """xdist: every worker runs in the controller's run (same report dir, run id, backend facts)."""
        if self.run is not None:
            node.workerinput["aclnn_run"] = self.run.to_wire()

    def shutdown(self) -> None:
        self.stop.restore()
        if self.executor is not None:
            self.executor.close(abandon=self.interrupted)
        self.reporting.close_baseline_library()      # the perf gate's A/B case worker (reporting/perf/ab.py)
        for thing in (self.journal, self.controller_journal):
            if thing is not None:
                thing.close()
        self.executor = self.journal = self.controller_journal = None
        if self.rundir is not None:
            self.rundir.release()
            self.rundir = None
            scratch.sweep()      # the directories of xdist workers killed while stopping (execution/scratch.py)

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True

    # ------------------------------------------------------------ one case

    def _case_executor(self) -> CasePool:
        if self.executor is None:
            self.executor = CasePool(self.settings.backend_settings(), self.settings.worker or "main",
                                     self.settings.case_workers)
            self.executor.set_dump(self.reporting.dump(self.target()))
        return self.executor

    def _journal(self) -> journal_mod.Journal:
        if self.journal is None:
            self.journal = journal_mod.Journal(Path(self.run.report_dir), self.run.run_id,
                                               self.settings.worker or "main")
        return self.journal

    def run_item(self, item) -> dict | None:
        """Run one case item in this process's case workers, journalled before and after; its record
        (None under --prepare-only, which only fills the golden cache)."""
        case = item.case
        if self.settings.prepare_only:      # no device: inputs and golden into the cache only
            self.cache.get(case, case.runs_numerics(self.settings.family))
            # a skip, not a pass: nothing was judged, and a JUnit reader must not count it as conformant
            pytest.skip("prepared only: inputs and golden are in --golden-cache; nothing ran on a device")
        if self.run is None:
            raise pytest.UsageError("case items need a run: point pytest at case files (cases/*.yaml)")
        executor = self._case_executor()
        self._journal().started(case.id, item.nodeid, case.op.name)
        deadline = deadline_for(case, self.settings.case_timeout)
        ahead = ((c, deadline_for(c, self.settings.case_timeout)) for c in self.upcoming())   # read lazily
        try:   # reruns, the record (status, identity, repro, timings), the dump
            record = self.reporting.run_case(case, item.nodeid, self.target(),
                                             lambda c=case: executor.run(c, deadline, ahead),
                                             self.reporting.baseline_library(self.settings.backend_settings()), deadline)
        except HarnessConfigError as e:     # a baseline that does not fit this run's target
            raise pytest.UsageError(arguments.one_line(e)) from None
        if self.settings.worker and record["raw_status"] == Status.MISSING.value and not executor.usable:
            # not run: no case worker of this xdist worker can open a device; the others take its cases
            takeover.leave(self.journal, case, item.nodeid, "; ".join(executor.lost().values()), executor)
        self.journal.finished(record)      # the record's one way to results.jsonl (journal.py)
        self._after_case(item, executor)
        return record

    def _after_case(self, item, executor: CasePool) -> None:
        """What the case worker found out beyond the case itself: an earlier case's record to replace
        (a heap culprit), a case worker that stopped taking cases."""
        for case, outcome in executor.take_amendments():
            if self._nodeids is None:
                self._nodeids = {it.case.id: it.nodeid for it in item.session.items if hasattr(it, "case")}
            nodeid = self._nodeids.get(case.id, case.id)
            self.journal.finished(self.reporting.record_outcome(case, nodeid, self.target(), outcome))
        for label, reason in executor.lost().items():
            usable = executor.usable_count
            if usable:
                self.takeover.announce(f"case worker {label}", reason,
                                       f"the other {usable} case worker(s) of this process go on")

    def record_case_file_error(self, item) -> dict:
        facts = {"case_id": item.case_id, "nodeid": item.nodeid, "op": "(case file)"}
        record = rec_mod.not_run(facts, Status.FAIL, str(item.error), rec_mod.Context(self.target()))
        if self.run is not None:
            self._journal().finished(record)
        return record

    # ------------------------------------------------------------ recording (the controller)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """pytest's own tally shows a case-file deviation that did not deviate as XPASS, not as a
        plain pass. A case item that failed for another reason than its verdict (the harness raised
        around it) gets a record saying so, in this process's journal beside the case's own."""
        report = yield
        record = getattr(item, "record", None)
        if call.when == "call" and report.passed and record and record["status"] == Status.UNEXPECTED_PASS.value:
            report.wasxfail = record["reason"]
        if report.failed and self.run is not None and _is_case(item.nodeid):
            error = self.reporting.harness_error(record, item.nodeid, call.when, _one_line(report), self.target(),
                                                 self._case_of)
            if error is not None:
                self._journal().finished(error)
        return report

    def pytest_runtest_logreport(self, report):
        """An xdist worker that died running a case left no record of it: the controller, which alone
        sees that, writes one to its own journal. Every other record came through a journal."""
        if not self.is_controller or self.recorder is None or not report.failed or not _is_case(report.nodeid):
            return
        if "crashed while running" in str(report.longrepr or ""):
            self.controller_journal.finished(
                self.reporting.worker_died(report.nodeid, _one_line(report), self.target(), self._case_of))

    def _case_of(self, nodeid: str) -> dict:
        """What the run knows of a case that left no record: its manifest entry (the selection every
        process wrote down), else its node id's file and name."""
        if self._cases is None:
            manifest = _read_manifest(Path(self.run.report_dir)) if self.run else None
            self._cases = {a.get("nodeid"): a for a in (manifest or {}).get("assigned", []) if isinstance(a, dict)}
        entry = self._cases.get(nodeid)
        if entry is not None:
            return rec_mod.facts_of_entry(entry)
        file_part, _, name = nodeid.partition("::")
        return {"case_id": f"{Path(file_part).stem}.{name}", "op": Path(file_part).stem}

    def pytest_sessionfinish(self, session, exitstatus):
        if self.recorder is None:
            return
        self.stop.finishing()
        stopped = self.stop.describe()
        # every worker's journal: one record per case (this process's own from memory)
        state = journal_mod.scan(self.recorder.dir, own=(self.journal, self.controller_journal), stopped=stopped,
                                 run_id=self.run.run_id if self.run else None)
        records = state.records() + rec_mod.unfinished_records(state.unfinished, self.target())
        session.exitstatus = self.reporting.finish(session.exitstatus, records, stopped)
        if state.unfinished and session.exitstatus == 0:
            session.exitstatus = 1


def _nothing_left(directory: Path) -> str | None:
    """--resume DIR of a run that has a final record of every case its manifest assigned: the line
    that says so (the run then exits 0 and leaves DIR as it was), else None."""
    manifest = _read_manifest(directory)
    if not manifest or not manifest.get("assigned"):
        return None
    state = journal_mod.scan(directory)
    if _will_run_again(directory, state, manifest):
        return None
    # a damaged line (a kill cut the last one short) that leaves no assigned case without its final
    # record changes nothing: it is named, and the run has still nothing to do
    damaged = (f" ({len(state.unreadable)} damaged journal line(s) skipped: {', '.join(state.unreadable[:5])}"
               f"{' ...' if len(state.unreadable) > 5 else ''})") if state.unreadable else ""
    return (f"nothing to resume: every one of the {len(manifest['assigned'])} case(s) of the run in {directory} "
            f"has a final record{damaged}")


def _will_run_again(directory: Path, state, manifest: dict | None = None) -> set[str]:
    """The cases a resumed run runs again: what the manifest assigned without a final record (MISSING,
    started and never finished, never started), and the cases the journals name but never finished."""
    manifest = manifest if manifest is not None else _read_manifest(directory)
    assigned = {a.get("case_id") for a in (manifest or {}).get("assigned", []) if isinstance(a, dict)}
    return (assigned | state.unfinished_ids()) - state.done_ids()


def _read_manifest(directory: Path) -> dict | None:
    try:
        return rec_mod.load_manifest(directory)
    except rec_mod.ResultsError:
        return None


def _prepare_only_cache(settings: Settings):
    from ..judge.cache import GoldenCache     # torch: only this mode computes in the pytest process
    _one_torch_thread()
    return GoldenCache(settings.golden_cache)


def _one_torch_thread() -> None:
    """Goldens and forward passes run on small tensors, one case after another: torch's intra-op
    thread pool costs more than it saves there. OMP_NUM_THREADS, when set, wins."""
    import os
    if "OMP_NUM_THREADS" not in os.environ:
        import torch
        torch.set_num_threads(1)


def _is_case(nodeid: str) -> bool:
    """A case item's node id (a case file's or an ATK list's), not one of the project's own tests."""
    return ".yaml::" in nodeid or ".json::" in nodeid


def _one_line(report) -> str:
    """Where the failure was raised and what it said (the traceback's last line names only the type)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        return f"{Path(str(crash.path)).name}:{crash.lineno}: {crash.message.splitlines()[0]}"[:500]
    text = str(report.longrepr or "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "error"
