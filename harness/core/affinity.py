"""Pinning a process's threads to one CPU for a while (the perf gate's A/B rounds, perf/ab.py).

Two case workers timed in turn on a shared machine see the same machine only if they run on the
same CPU: left to the scheduler, one worker can sit beside a CPU hog's core (its hyperthread
sibling busy, its CPU time 1.3-1.5x) for a whole re-measurement window while the other does not,
and a library compared with itself read 0.75x or 1.32x, every round alike (bench_perf_noise.py).
The affinity of every thread of this process is set (the software CANN's stream runs on a thread
of its own, and sched_setaffinity(0) would pin only the calling one), and each thread's own mask
is given back afterwards.
"""
from __future__ import annotations

import contextlib
import os


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:             # no /proc: only this thread
        return [0]


@contextlib.contextmanager
def pinned(cpu: int | None):
    """Every thread of this process on `cpu` inside the block (None, or a CPU this process may not
    use: unchanged); each thread's mask restored after, threads gone meanwhile skipped."""
    if cpu is None or not hasattr(os, "sched_setaffinity") or cpu not in os.sched_getaffinity(0):
        yield
        return
    saved = {}
    for tid in _threads():
        try:
            saved[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, {cpu})
        except OSError:         # the thread ended between the listing and the call
            saved.pop(tid, None)
    try:
        yield
    finally:
        for tid, mask in saved.items():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, mask)


def last_cpu() -> int | None:
    """The highest CPU this process may run on (the CPU both sides of an A/B are pinned to), or
    None where affinity is not supported."""
    return max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
