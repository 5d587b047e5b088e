"""Healthy workers take over from one whose device is lost.

With case workers in one pytest process the pool drops a case worker that lost its device and the
others go on (harness/execution/schedule.py). Under xdist each pytest worker has one case worker: one
whose device cannot be opened again would otherwise take case after case and mark each MISSING while
the other workers were healthy. So that xdist worker leaves: it notes why in its journal and exits
(leave()); xdist's controller finds it gone, hands its pending cases to the others and reports the
case it was on as crashed, and this plugin (in the controller) puts that case back in the queue
instead (pytest-xdist's pytest_handlecrashitem hook) and says once, loudly, what happened. xdist
then starts a replacement worker (up to --max-worker-restart), which opens a device of its own.
Cases are MISSING only when no worker is left to run them.
"""
from __future__ import annotations

import os
import sys

import pytest

from ..execution import journal as journal_mod
from .output import past_capture

EXIT_DEVICE_LOST = 75         # the xdist worker's exit status when it leaves (EX_TEMPFAIL: others may go on)


def leave(journal, case, nodeid: str, reason: str, executor) -> None:
    """End this xdist worker: `case` (not run) and everything dealt to it go to the other workers."""
    journal.lost(case.id, nodeid, case.op.name, reason)
    journal.close()
    executor.close(abandon=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_DEVICE_LOST)      # pytest.exit would end the session normally: xdist then expects no pending case


class Takeover:
    """Controller side: put back the case of an xdist worker that left, and say it once."""

    def __init__(self, config, lifecycle):
        self.config, self.lifecycle = config, lifecycle
        self.lost: dict[str, str] = {}          # worker id -> why it stopped taking cases

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        run = self.lifecycle.run
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        if run is None or worker is None:
            return
        reason = journal_mod.lost_reason(run.report_dir, run.run_id, worker)
        if reason is None:
            return                              # a real crash of the pytest worker: recorded as one
        try:
            sched.mark_test_pending(crashitem)
        except NotImplementedError:             # --dist loadscope/loadfile: the case stays MISSING, said why
            report.longrepr = f"not run: xdist worker {worker} stopped taking cases: {reason}"
            return
        report.outcome = "rerun"               # no failure of the case: it runs again on another worker
        report.aclnn_rescheduled = worker
        self.announce(f"xdist worker {worker}", reason, "its cases go to the other xdist workers")

    def announce(self, who: str, reason: str, then: str) -> None:
        if who in self.lost:
            return
        self.lost[who] = reason
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        # said while a case runs (a pool's worker), where pytest captures the output: past the capture
        with past_capture(self.config):
            tr.write_line("")
            tr.write_line(f"DEVICE LOST: {who} stops taking cases ({reason}); {then}"[:1000], red=True, bold=True)

    def pytest_report_teststatus(self, report, config):
        if getattr(report, "aclnn_rescheduled", None):
            return "rescheduled", "R", ("RESCHEDULED", {"yellow": True})
        return None
