"""Scheduling: how many processes a case run uses, and which cases come next.

`-n auto` means what harness/execution/sizing.py says for a case run (no xdist: one pytest process keeps
its case workers busy, one per device where the work is device time, else one per core). The case
workers are sent cases ahead of the one pytest runs, so they never wait for pytest's per-test
machinery: in one process, the rest of the session, read lazily as far as the workers have room
(harness/execution/pool.py: a long case pytest waits for must not leave the other workers idle);
under xdist, `nextitem` and what the controller has already dealt this worker (private_api.py reads
xdist's queue, as a hint only).
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
    """The cases pytest runs after the current one (pytest_runtest_protocol notes them): an iterable
    read once, lazily."""

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
            following = self._following(item, nextitem)
            cases = (it.case for it in following if isinstance(it, CaseItem))
            self.cases = list(cases) if isinstance(following, list) else cases    # the session's rest: lazily

    def _following(self, item, nextitem):
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
        if i >= 0 and items[i + 1:i + 2] == [nextitem]:
            return (items[j] for j in range(i + 1, len(items)))      # as far as the workers take them
        return [nextitem]
