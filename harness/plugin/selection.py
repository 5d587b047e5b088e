"""Selection: which of the collected cases a run runs, and the manifest of that choice.

After -k/-m (trylast), a case runs when it is of the tier asked for, applies to the run's family
(target.selected_family: the library's on aclnn) and is not already done (--resume); the shard then
splits what is left, and the manifest records every case selected and the ones this shard runs.
"""
from __future__ import annotations

import gc

import pytest

from ..core.errors import HarnessConfigError
from .collection import runs_cases
from .runinfo import RUN


class Selection:
    def __init__(self, settings, reporting):
        self.settings, self.reporting = settings, reporting

    @pytest.hookimpl(trylast=True)     # after -k/-m: the shard splits what is left
    def pytest_collection_modifyitems(self, config, items):
        run = config.stash.get(RUN, None)
        family = run.target.selected_family(self.settings.family) if run else self.settings.family
        done = set(run.done) if run else set()
        keep, drop = [], []
        for item in items:
            case = getattr(item, "case", None)
            if case is None or (self.settings.tier in ("all", case.tier)
                                and (family is None or family in case.families) and case.id not in done):
                keep.append(item)
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        self._shard(config, items, run)

    def _shard(self, config, items, run):
        """The shard, and the manifest of what this run was asked to run."""
        cases = [i for i in items if hasattr(i, "case")]
        if not cases or config.getoption("collectonly") and not self.settings.report.shard:
            return
        # no run while only collecting or only preparing: shard, but write no manifest
        try:
            keep = self.reporting.select([(i.case, i.nodeid) for i in cases], run.target if run else None)
        except HarnessConfigError as e:
            raise pytest.UsageError(str(e)) from None
        drop = {id(i) for i, k in zip(cases, keep) if not k}
        if drop:
            config.hook.pytest_deselected(items=[i for i in items if id(i) in drop])
            items[:] = [i for i in items if id(i) not in drop]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        """The items and their cases live until the end of the run: moved out of the cyclic garbage
        collector's sight, its periodic full passes and pytest's collections at exit stop walking them."""
        if runs_cases(session.config):
            gc.collect()
            gc.freeze()
