"""Interleaved A/B re-measurement: this run's library and the perf baseline's, in the same window.

A flagged case is measured once more (reruns.remeasure). Repeating only this run's side repeats
the noise of the moment as well: a CPU hog that slowed the first measurement slows the second
too, and the baseline, measured days ago on a quiet machine, is not there to be slowed alike. So
where the baseline's own library is at hand, the re-measurement alternates the two libraries,
A (this run's) and B (the baseline's), each launch series in a case worker of its own library,
in up to ROUNDS pairs of short rounds (round_case) in ABBA order (A B, B A, A B ...: a trend
through the window favours neither side), and the gate compares each A round with the B round
beside it (harness/core/paired.py on `perf.remeasured_ab.medians_ms`); the rounds stop once the
verdict is settled (paired.settled). Two long rounds a side, pooled, were not enough: the
machine's state lasts about as long as one launch series, and a library compared with itself
read 0.66-1.74x. Two case workers, never two
CANNs in one process (a real CANN allows one per process): B's worker is forked from a zygote
started with the baseline library's set_env.sh applied (its LD_LIBRARY_PATH, ASCEND_HOME_PATH ...).

"At hand" means: the baseline names the root its library was loaded from (`measured.library_root`,
`measured.libraries`, written by `baseline --perf`), the files are still there, and their sha256
is still the one the baseline was measured with (`measured.library_sha256`). Otherwise the
re-measurement repeats this run's side only, and a case it confirms says that machine noise is not
ruled out (the `remeasured_alone` reason). B runs with the library switches the baseline's runs
had (`measured.switches`: SWCANN_FAULTS, SWCANN_DEVICE_TIME ...), not this run's. The offline gate has no library at all: it judges the
samples the live run recorded, so both give one verdict for one run.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ...core import affinity
from ...judge.perf import TIMING_ONLY
from ..identity import SWITCH_PREFIXES, opapi_hash, sha256_file

ROUNDS = 20             # pairs of rounds: the interval of their median ratio tolerates 4 rounds off
ROUND_LAUNCHES = 30     # timed launches a round (after the case's own warmups) ...
ROUND_MIN_LAUNCHES = 6  # ... or as few as this where they outlast ROUND_BUDGET_S (long kernels)
ROUND_BUDGET_S = 0.02
ORDER = "".join("AB" if i % 2 == 0 else "BA" for i in range(ROUNDS))
BASELINE_LABEL = "baseline-lib"


def round_case(case):
    """The case as one round times it: its own warmups, then ROUND_LAUNCHES launches, or fewer
    (ROUND_MIN_LAUNCHES at least) where they take longer than ROUND_BUDGET_S: a round is a short
    window. Every thread of either side's case worker on one and the same CPU
    (harness/core/affinity.py). Timing only (judge/runner.py): the case was judged already, in its
    own attempt; a round draws its inputs and times the kernel, nothing else."""
    perf = {**(case.perf or {}), "min_n": ROUND_MIN_LAUNCHES, "max_n": ROUND_LAUNCHES, "rel_halfwidth": 1e-9,
            "budget_s": ROUND_BUDGET_S, "cpu": affinity.last_cpu(), TIMING_ONLY: True}
    return dataclasses.replace(case, perf=perf)


def at_hand(measured: dict | None) -> tuple[Path | None, str]:
    """(the baseline library's root, "") when its files are there with the hash measured, else
    (None, why not)."""
    measured = measured or {}
    root, libs, sha = measured.get("library_root"), measured.get("libraries") or {}, measured.get("library_sha256")
    if not root or not libs or not sha:
        return None, "the perf baseline names no library root (written before version 2, or from a merged run)"
    if not Path(root).is_dir():
        return None, f"the baseline's library root {root} is gone"
    real = os.path.realpath(root)
    if any(os.path.commonpath([real, os.path.realpath(p)]) != real for p in libs.values()):
        return None, f"the baseline's libraries are not all under its library root {root}"
    now = opapi_hash({"libraries": libs, "library_sha256": {p: sha256_file(p) for p in libs.values()}})
    if now != sha:
        return None, f"the library at {root} is no longer the one the baseline measured (sha256 differs)"
    return Path(root), ""


def library_env(root: Path, switches: dict | None = None) -> dict[str, str | None]:
    """The variables a process needs to load the CANN at `root` as the baseline measured it: its
    set_env.sh sourced over this environment (or, without one, its lib64 first on LD_LIBRARY_PATH
    and ASCEND_HOME_PATH), with the library's switches (SWCANN_*: faults, the timing model) the
    baseline's runs had, where it recorded them (None: a variable of this run's to unset)."""
    from ...acl import setenv
    from ...target.discovery import FALLBACK_MARK
    base = {**os.environ, "ASCEND_HOME_PATH": str(root)}
    unset: dict[str, str | None] = {}
    if switches is not None:
        unset = {k: None for k in base if k.startswith(SWITCH_PREFIXES)}
        base = {k: v for k, v in base.items() if not k.startswith(SWITCH_PREFIXES)} | dict(switches)
    script = setenv.set_env_script(root)
    if script is not None:
        env = setenv.sourced_environment(script, base)
    else:
        path = [str(d) for d in setenv.required_dirs(root)] + [p for p in base.get("LD_LIBRARY_PATH", "").split(":") if p]
        env = {**base, "LD_LIBRARY_PATH": ":".join(path), "ASCEND_TOOLKIT_HOME": str(root)}
    # not a software CANN built as a fallback of this run, and marked as applied: no re-exec in the worker
    return {**unset, **env, FALLBACK_MARK: None, setenv.APPLIED_MARK: str(script or "")}


class BaselineLibrary:
    """A case worker on the perf baseline's library, started at the first case that needs it."""

    def __init__(self, settings, measured: dict | None, rounds: int = ROUNDS):
        self.settings, self.rounds = settings, rounds
        self.root, self.why = at_hand(measured)
        self.switches = (measured or {}).get("switches")
        self._executor = self._zygote = None

    @property
    def available(self) -> bool:
        return self.root is not None

    def _start(self):
        from ...core.errors import HarnessConfigError
        from ...execution import scratch
        from ...execution.supervisor import CaseExecutor
        from ...execution.zygote import Zygote
        if self._executor is None:
            ex = CaseExecutor(self.settings, BASELINE_LABEL)
            log = scratch.make(BASELINE_LABEL) / "zygote.log"
            try:
                self._zygote = Zygote(log, env=library_env(self.root, self.switches))
                ex.share_zygote(self._zygote)
                ex.start()
            except (HarnessConfigError, OSError) as e:
                self.close()
                self.root, self.why = None, f"the baseline library at {self.root} did not open: {' '.join(str(e).split())[:300]}"
                return None
            self._executor = ex
        return self._executor

    def runner(self, case, deadline_s: float):
        """A callable running `case` once on the baseline library (its Outcome), for reruns.remeasure;
        None when the library is not at hand or did not open (self.why says why)."""
        if not self.available:
            return None

        def run():
            ex = self._start()
            if ex is None:
                from ...core.status import Status
                from ...judge.outcome import Outcome
                return Outcome.not_judged(case, Status.MISSING, self.why)
            return ex.run(case, deadline_s)
        return run

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
        if self._zygote is not None:
            self._zygote.close()
        self._executor = self._zygote = None
