"""Scheduling: how many processes a case run uses, and which cases come next.

`-n auto` means what harness/execution/sizing.py says for a case run (one xdist worker per device on
hardware, none on the software CANN, whose pytest process keeps several case workers busy). The case
worker is sent the next few cases ahead of the one pytest runs, so it never waits for pytest's
per-test machinery: in one process, the next items of the session; under xdist, `nextitem` and what
the controller has already dealt this worker (private_api.py reads xdist's queue, as a hint only).
"""
from __future__ import annotations

import pytest

from ..execution import sizing
from ..execution.supervisor import LOOKAHEAD
from . import private_api
from .collection import CaseItem, runs_cases


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """tryfirst: loaded with -p (as ./run suite does), this plugin registers before xdist, whose own
    answer would then win. The harness's own tests (not a case run) keep xdist's default."""
    if not runs_cases(config):
        return None
    return sizing.auto_xdist_workers(config.getoption("backend"), config.getoption("prepare_only"))


class Lookahead:
    """The cases pytest runs after the current one (pytest_runtest_protocol notes them)."""

    def __init__(self, config, worker: str | None, case_workers: int):
        self.config, self.worker, self.case_workers = config, worker, case_workers
        self.cases: list = []
        self._position: dict[str, int] | None = None
        self._queue = False          # xdist's queue, looked up at the first case (its worker loop starts late)

    def __call__(self) -> list:
        return self.cases

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """Notes the cases that come after this one, then lets pytest's own protocol run the item."""
        if isinstance(item, CaseItem):
            self.cases = [it.case for it in self._following(item, nextitem) if isinstance(it, CaseItem)]

    def _following(self, item, nextitem) -> list:
        if nextitem is None:
            return []
        items = item.session.items
        if self.worker is not None:
            if self._queue is False:
                self._queue = private_api.xdist_queue(self.config)
            dealt = private_api.dealt(self._queue, 2 * LOOKAHEAD) if self._queue is not None else []
            return [nextitem, *(items[i] for i in dealt if i < len(items))]
        if self._position is None:
            self._position = {it.nodeid: i for i, it in enumerate(items)}
        i = self._position.get(item.nodeid, -1)
        ahead = 2 * LOOKAHEAD * self.case_workers      # enough to keep every case worker fed
        return items[i + 1:i + 1 + ahead] if i >= 0 and items[i + 1:i + 2] == [nextitem] else [nextitem]
