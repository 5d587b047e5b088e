"""One run at a time per report directory, and no run overwrites another's results.

The controller (or the only process) takes an exclusive lock on <dir>/.lock for the whole
run; a second run into the same directory is refused at start-up with one line. A new run
(not --resume) first moves the previous run's files to <dir>/previous/<its run id>/, and
only the newest `keep_previous` of those are kept (--keep-previous, default 5): a nightly
job that reuses its report directory would otherwise grow it by a whole run every night
(a 3,000-case run is about 30 MB).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path

from ..core import atomic
from ..core.errors import HarnessConfigError

RUN_FILE = "run.json"
KEEP_PREVIOUS = 5
# Every file of a run moves: a manifest left behind made a run that selected nothing report the
# previous run's cases as MISSING, and a stale report.html or junit.xml would pass for the new run's.
KEPT = ("results.jsonl", "manifest.json", "summary.json", "summary.txt", "summary.md", "junit.xml",
        "report.html", RUN_FILE, "journal")


class NothingToResume(Exception):
    """--resume of a run every case of which has a final record; str() says so in one line."""


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


class RunDir:
    def __init__(self, directory: Path, run_id: str, lock_fd: int, archived: Path | None):
        self.path, self.run_id, self._lock_fd, self.archived = directory, run_id, lock_fd, archived

    @classmethod
    def acquire(cls, directory, resume: bool, argv: list[str], keep_previous: int = KEEP_PREVIOUS,
                finished=None) -> "RunDir":
        """finished(directory) -> a line when a resumed run has nothing left to do (NothingToResume,
        raised before anything in the directory changes), else None."""
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise HarnessConfigError(f"--report-dir {directory}: cannot write there ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise HarnessConfigError(f"--report-dir {directory} is in use by another run ({holder}); "
                                     "give each run its own --report-dir") from None
        previous = _read_run(directory)
        if resume and previous is None and not (directory / "journal").is_dir():
            os.close(fd)
            raise HarnessConfigError(f"--resume {directory}: no earlier run there (no journal/)")
        done = finished(directory) if resume and finished is not None else None
        if done:
            os.close(fd)
            raise NothingToResume(done)
        run_id = previous["run_id"] if resume and previous else new_run_id()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"run {run_id}, pid {os.getpid()}".encode(), 0)
        archived = None if resume else _archive(directory, previous)
        if archived is not None:
            archived = _prune(directory / "previous", keep_previous, archived)
        run = {"run_id": run_id, "argv": argv, "started": time.time(), "pid": os.getpid(),
               "resumed": (previous or {}).get("resumed", 0) + 1 if resume else 0}
        _write_json(directory / RUN_FILE, run)
        return cls(directory, run_id, fd, archived)

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)           # closing the descriptor drops the flock
            self._lock_fd = None


def _read_run(directory: Path) -> dict | None:
    try:
        return json.loads((directory / RUN_FILE).read_text())
    except (OSError, ValueError):
        return None


def _archive(directory: Path, previous: dict | None) -> Path | None:
    present = [directory / name for name in KEPT if (directory / name).exists()]
    if not present:
        return None
    old_id = (previous or {}).get("run_id") or time.strftime(
        "%Y%m%d-%H%M%S", time.localtime(min(p.stat().st_mtime for p in present))) + "-unknown"
    target = directory / "previous" / old_id
    n = 1
    while target.exists():
        n += 1
        target = directory / "previous" / f"{old_id}.{n}"
    target.mkdir(parents=True)
    for path in present:
        shutil.move(str(path), str(target / path.name))
    return target


def _prune(previous: Path, keep: int, newest: Path) -> Path | None:
    """Delete all but the `keep` most recently archived runs; `newest` (None when it went too)."""
    runs = sorted((p for p in previous.iterdir() if p.is_dir()), key=lambda p: (p.stat().st_mtime, p.name))
    for old in runs[:max(0, len(runs) - keep)]:
        shutil.rmtree(old, ignore_errors=True)
    return newest if newest.exists() else None


def _write_json(path: Path, data: dict) -> None:
    atomic.write_bytes(path, (json.dumps(data, indent=2) + "\n").encode())
