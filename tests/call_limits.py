"""The two limits the fuzzers put on one call: CPU time and wall time.

Slowness (a reader gone quadratic on a huge mutant) is judged on the CPU time this process used,
which other processes on a busy machine do not eat (ITIMER_PROF). The wall timer (ITIMER_REAL)
only catches a call that blocks, so its limit sits far above anything load does.
"""
from __future__ import annotations

import contextlib
import signal


class Stopped(Exception):
    """A call stopped by one of the limits; `limit` words which one, for the finding."""

    def __init__(self, limit: str):
        super().__init__(limit)
        self.limit = limit


@contextlib.contextmanager
def limited(cpu_s: float, hang_s: float):
    """Raise Stopped in the block once it has used `cpu_s` of CPU time or `hang_s` of wall time.
    The timers are disarmed and the previous handlers restored on the way out, however it ends."""
    def alarm(signum, frame):
        raise Stopped(f"the CPU-time limit of {cpu_s:g} s" if signum == signal.SIGPROF
                      else f"the hang limit of {hang_s:g} s of wall time")

    previous = signal.signal(signal.SIGALRM, alarm), signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    signal.setitimer(signal.ITIMER_REAL, hang_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous[0])
        signal.signal(signal.SIGPROF, previous[1])
