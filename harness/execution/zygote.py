"""The supervisor's handles on the processes behind a case worker: the zygote it is forked from
(child.zygote) and the forked worker itself.

A worker leads a process group of its own, so killing it takes whatever it started in that group
with it; what left the group (setsid) is found by the zygote, a child subreaper (procfs.py).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from .channel import ChannelClosed

# glibc's fatal messages ("free(): invalid next size") go to stderr, not to the terminal: they are
# the only word of a heap corruption (blame.py reads them)
WORKER_ENV = {"LIBC_FATAL_STDERR_": "1"}


def import_roots() -> list[str]:
    """Directories holding the harness and golden packages, for the worker's sys.path."""
    import golden
    import harness
    return list(dict.fromkeys(str(Path(m.__file__).resolve().parent.parent) for m in (harness, golden)))


def signal_name(returncode: int | None) -> str:
    if returncode is None or returncode >= 0:
        return f"exit code {returncode}"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def malloc_check_env() -> dict[str, str]:
    """--malloc-check: glibc checks every heap block at its free (MALLOC_CHECK_=3, in glibc 2.34+ through
    the tunable and libc_malloc_debug.so), and fills blocks as it hands them out and frees them
    (MALLOC_PERTURB_), so a write past a block is found at the culprit's own free."""
    env = {"MALLOC_CHECK_": "3", "MALLOC_PERTURB_": "165"}
    tunables = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":") if t]
    env["GLIBC_TUNABLES"] = ":".join([*tunables, "glibc.malloc.check=3"])
    version = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else ""
    major_minor = tuple(int(x) for x in version.split()[-1].split(".")[:2]) if version else (0, 0)
    if major_minor >= (2, 34):
        preload = [p for p in os.environ.get("LD_PRELOAD", "").split() if p]
        env["LD_PRELOAD"] = " ".join([*preload, "libc_malloc_debug.so.0"])
    return env


class Zygote:
    """The process the workers are forked from (child.zygote)."""

    def __init__(self, log: Path, preload: bool = True, env: dict[str, str] | None = None):
        self.log = log
        full = {k: v for k, v in {**os.environ, **WORKER_ENV, **(env or {})}.items() if v is not None}   # None: unset
        full["PYTHONPATH"] = os.pathsep.join(import_roots() + [p for p in full.get("PYTHONPATH", "").split(os.pathsep)
                                                               if p])
        ours, theirs = socket.socketpair()
        with open(log, "ab") as out:
            argv = [sys.executable, "-m", "harness.execution.child", str(theirs.fileno()), str(os.getpid())]
            self.proc = subprocess.Popen(argv + ([] if preload else ["--no-preload"]), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT, env=full, pass_fds=(theirs.fileno(),))
        theirs.close()
        self.sock = ours

    def _ask(self, message: bytes, fds=()) -> int:
        try:
            socket.send_fds(self.sock, [message], list(fds))
            answer = self.sock.recv(64)
        except OSError as e:
            raise ChannelClosed(f"the zygote is gone ({e})") from None
        if not answer:
            raise ChannelClosed(f"the zygote is gone ({signal_name(self.proc.poll())})")
        return int(answer)

    def fork(self, read_fd: int, write_fd: int, log_fd: int, harness_fd: int) -> int:
        return self._ask(b"fork", (read_fd, write_fd, log_fd, harness_fd))

    def wait(self, pid: int) -> int:
        """The exit code of worker `pid` (negative: the signal), once it ended; whatever it left
        behind is killed by then."""
        return self._ask(f"wait {pid}".encode())

    def close(self) -> None:
        self.sock.close()                    # the zygote kills what is left and exits at the end of its socket
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Worker:
    """A forked worker: not our child, so its exit code comes from the zygote."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def kill(self) -> None:
        """SIGKILL the worker and its process group (what the library started in it)."""
        if self.returncode is None:
            for kill in (os.killpg, os.kill):     # the group is the worker's own (child.zygote sets it)
                try:
                    kill(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def wait(self) -> int:
        if self.returncode is None:
            try:
                self.returncode = self.zygote.wait(self.pid)
            except (ChannelClosed, ValueError):
                self.returncode = -signal.SIGKILL
        return self.returncode
