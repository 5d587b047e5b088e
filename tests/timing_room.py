"""Tests that time kernels run alone: no other test of the session runs beside them.

A timing test compares kernel times measured in different processes (a baseline run, then a
gated one). On CI's two cores the other xdist worker's test shares the CPU caches and, on SMT
machines, the core: a run measured beside a busy test and one measured beside an idle one differ
by more than either run's confidence interval (on CI a planted 1.3x kernel was not flagged on all
of its 4 cases while another test ran beside it). So tests marked `timing`
take the room alone and the others share it, through two flock files in the directory all
workers of the session share. The turnstile makes it fair: a timing test waiting for the room
holds the turnstile, so no other test enters meanwhile and it waits for at most the test each
other worker is running.
"""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def _flock(path: Path, mode: int):
    with open(path, "a") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def enter(directory: Path, alone: bool):
    """Run the body in the room: alone, or sharing it with every other test that is not alone."""
    turnstile, room = directory / "timing-turnstile.lock", directory / "timing-room.lock"
    if alone:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
    else:
        with _flock(turnstile, fcntl.LOCK_EX):
            pass                                # waits while a timing test holds it
        with _flock(room, fcntl.LOCK_SH):
            yield
