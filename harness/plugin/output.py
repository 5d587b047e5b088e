"""What a case run says on the terminal and in pytest's own --junitxml: the banner that names the
target (SIMULATED or HARDWARE, library, SoC), what a resumed run will redo, and the closing summary
(failures with their repro lines, the per-operator table, the gate's verdict, where the reports are)."""
from __future__ import annotations

import contextlib

from .. import backends
from ..target import discovery
from . import private_api
from .collection import runs_cases


def past_capture(config):
    """A context in which what is written reaches the terminal while pytest captures output (a case
    running in a pool's worker, pytest_configure)."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    return capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()


class Output:
    def __init__(self, config, settings, lifecycle):
        self.config, self.settings, self.lifecycle = config, settings, lifecycle

    def pytest_sessionstart(self, session):
        life = self.lifecycle
        if life.recorder is None:
            return
        private_api.add_junit_properties(self.config, life.recorder.target.to_wire())   # junitxml is configured after us
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        run = life.run
        if self.settings.resume:          # said even with -q: what this run will (re)do
            again = run.extra.get("again", len(run.missing_before))
            tr.write_line(f"resuming run {run.run_id} in {run.report_dir}: {len(run.done)} case(s) already "
                          f"finished, {again} will run again ({len(run.missing_before)} MISSING, "
                          f"{max(0, again - len(run.missing_before))} never started)")
            unreadable = run.extra.get("unreadable") or []
            if unreadable:
                tr.write_line(f"  {len(unreadable)} journal line(s) unreadable (damaged, or cut short by a kill): "
                              f"{', '.join(unreadable[:10])}{' ...' if len(unreadable) > 10 else ''}; the cases "
                              "they name run again", yellow=True)
            for case_id in run.missing_before:
                tr.write_line(f"  MISSING {case_id}")
        elif run.previous is not None:
            tr.write_line(f"the previous run's results were moved to {run.previous}")

    def pytest_report_header(self, config):
        if config.getoption("collectonly") or not runs_cases(config):
            return None
        run = self.lifecycle.run
        if run is None:
            return backends.preview(self.settings.backend, self.settings)
        workers = self.settings.case_workers
        how = self.settings.case_workers_why or "--case-workers"
        why = run.target.detail("fallback_reason")
        if why:     # the paths tried stay in summary.json's properties and in `./run doctor`
            why = discovery.fallback_headline(why) + " (summary.json's fallback_reason and ./run doctor list the paths tried)"
        return [run.target.banner, *([f"why the software CANN: {why}"] if why else []),
                f"case workers: {workers} per pytest process ({how}; harness/execution/sizing.py)"]

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        life = self.lifecycle
        stats = life.cache if life.cache is not None else (life.executor.cache_stats if life.executor else None)
        tr = terminalreporter
        if stats is not None and stats.hits + stats.misses:
            # this process's use (under xdist each worker has its own)
            tr.write_line(f"golden cache {self.settings.golden_cache}: {stats.hits} hits, {stats.misses} computed, "
                          f"{len(stats.rejected)} damaged entries recomputed")
            for line in stats.rejected[:20]:
                tr.write_line(f"  {line}")
        recorder = life.recorder
        if recorder is None:
            return
        tr.section("aclnn conformance summary")
        not_run: dict[str, int] = {}
        for record in recorder.serious():
            reason = record.get("reason", "")
            if reason.startswith("not run:"):       # a lost device: one line, not one per case
                not_run[reason] = not_run.get(reason, 0) + 1
        for line in life.reporting.summary_lines():
            tr.write_line(line)
        for reason, count in not_run.items():
            tr.write_line(f"DEVICE LOST: {count} case(s) {reason}"[:600], red=True, bold=True)
        for who, reason in life.takeover.lost.items():
            tr.write_line(f"DEVICE LOST: {who} stopped taking cases ({reason}); its cases went to the other workers"[:600],
                          red=True, bold=True)
        deselected = len(tr.stats.get("deselected", []))
        if not recorder.records and deselected:
            # pytest's own "no tests ran" does not say why; the family filter is the usual reason
            family = life.target().family or self.settings.family or "any family"
            tr.write_line(f"NO CASE SELECTED: all {deselected} collected case(s) were deselected (for {family} "
                          f"and the -k/-m/--tier/--shard given); this report directory holds an empty run",
                          yellow=True, bold=True)


def pytest_configure(config):
    """A case runs in its case worker, never in this process, so pytest's log capture has nothing to
    capture here, and setting its handlers up and down around every phase of every item is a per-case
    cost with nothing in return (benchmarks/NOTES.md). Case runs go without it."""
    if runs_cases(config):
        config.pluginmanager.set_blocked("logging-plugin")   # unregisters it, or keeps it from registering
