"""How a run stops when it is told to from outside.

Ctrl-C (SIGINT) already stops a run cleanly: pytest unwinds, the case in flight and every case
not started are MISSING, the reports are written and the case workers' temporary directories go.
SIGTERM is what a CI runner's job timeout, `timeout(1)`, Slurm at the time limit, `docker stop`
and Kubernetes send, and SIGHUP what a dropped ssh session sends; Python's default for either is to
die on the spot, so a nightly sweep cut off by its time limit left no summary, no JUnit file and
its workers' temporary directories behind (the journals kept the results, but only `--resume` and
`python -m harness.execution.journal` read those). Here both stop the run the way Ctrl-C does.

A second signal of the same kind kills at once, as Python's default would: a runner's grace period
ends in SIGKILL anyway, and someone who sends it twice means it. SIGHUP that is already ignored
(`nohup`) stays ignored. Once the run is writing its reports (finishing()), a first signal is only
noted: interrupting the writers would lose the summary the signal is meant to save.
"""
from __future__ import annotations

import signal
import threading
import time

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class StopSignals:
    """SIGTERM and SIGHUP as Ctrl-C in this process, between install() and restore()."""

    def __init__(self) -> None:
        self.received: tuple[str, float] | None = None     # (signal name, time.time()) of the first
        self._previous: dict[int, object] = {}
        self._finishing = False

    def install(self) -> None:
        # signal.signal works only in the main thread (pytest run from a thread: leave it alone)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in STOP_SIGNALS:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            self._previous[sig] = previous
            signal.signal(sig, self._stop)

    def _stop(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.received is None:
            self.received = (name, time.time())
        signal.signal(signum, signal.SIG_DFL)
        if self._finishing:
            return
        raise KeyboardInterrupt(f"{name} received: stopping the run (a second {name} kills it at once)")

    def finishing(self) -> None:
        """From now on the run only writes what it has: a stop signal is noted, not raised."""
        self._finishing = True

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def describe(self) -> str | None:
        """'SIGTERM at 2026-11-25T03:00:44+00:00', or None when no stop signal arrived."""
        if self.received is None:
            return None
        name, when = self.received
        return f"{name} at {time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(when))}"


def ignore_in_case_workers() -> None:
    """A case worker leaves stopping to its supervisor (the pytest process): killed by a stop signal
    sent to the whole process group (Ctrl-C in a terminal, Slurm, `kill -TERM -PGID`) its case would
    read as a CRASH of the library. It still dies with its supervisor (PR_SET_PDEATHSIG)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
