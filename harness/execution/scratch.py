"""Scratch directories (the case workers' logs) that a killed process does not leave behind.

A supervisor removes its directory when it closes. A process killed outright (SIGKILL from a CI
runner at the end of its grace period, the OOM killer, xdist killing a worker that did not stop in
time) never gets there, and a machine that runs a sweep every night would collect them in its
temporary directory. So each directory holds an exclusive flock on its `.owner` file for as long
as its process lives (the kernel drops it however the process ends, and it means the same
across PID namespaces that share the directory, where a PID would not); making a new one, and
the end of a run, remove every `aclnn-*` directory whose lock nobody holds any more.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "aclnn-"
OWNER = ".owner"
_held: dict[Path, int] = {}       # directory -> the descriptor holding its lock, in this process


def make(kind: str) -> Path:
    """A new directory `aclnn-<kind>-XXXXXXXX` in the temporary directory, owned by this process."""
    sweep()
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-"))
    # locked before it gets its name, so no sweep ever sees it unlocked; not inherited (PEP 446)
    fd = os.open(path / (OWNER + ".new"), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(path / (OWNER + ".new"), path / OWNER)
    _held[path] = fd
    return path


def remove(path: Path) -> None:
    fd = _held.pop(path, None)
    if fd is not None:
        os.close(fd)
    shutil.rmtree(path, ignore_errors=True)


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the scratch directories in `root` (the temporary directory) whose owner is gone;
    the ones removed. A directory without an owner file (made by an older version, or caught
    between mkdtemp and its lock) is left alone, as is anything this user may not open."""
    removed = []
    try:
        entries = list(Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*"))
    except OSError:
        return removed
    for path in entries:
        if path in _held:
            continue
        try:
            fd = os.open(path / OWNER, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue                      # its process is alive
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
