"""The case worker: a long-lived process that opens the backend once and runs the cases its
supervisor (harness/execution/supervisor.py) sends, one at a time.

Workers are forked from a zygote: a process started once per supervisor that imports the
harness, torch and the goldens but opens nothing (no ACL state is ever forked), so replacing
a crashed or hung worker costs a fork, not an interpreter start.

It exists so that the library under test can segfault, abort or hang without taking the
pytest process (and the results) with it. The C-level faulthandler writes every thread's
Python stack to stderr (a log file the supervisor reads) on a fatal signal, and on SIGUSR1,
which the supervisor sends when a case passes its deadline: that works while the main
thread is blocked inside a C call, where no Python code can run.

Protocol (pickled tuples): supervisor -> worker ("open", settings) then ("run", case, dump_dir)* and
("close",); worker -> supervisor ("ready", properties) | ("config_error", line), then one
("done", Outcome, recovery, golden-cache use, log size) per case; an outcome without "backend"
ran on the backend the worker announced with "ready". The log size is where the next
case's output starts: the supervisor may already have sent that case, so only the worker knows.
"""
from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import socket
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

from .. import backends
from ..core.errors import HarnessConfigError
from ..core.status import Status
from ..judge.outcome import Outcome
from . import stopping
from .channel import Channel, ChannelClosed


def _outcome_of_exception(case, e: BaseException) -> Outcome:
    """An exception inside a case keeps its message (and where it came from) in the record."""
    return Outcome.not_judged(case, Status.FAIL, f"{type(e).__name__}: {e}".strip()[:2000],
                              traceback=traceback.format_exc()[-4000:])


def _recover(backend, outcome: Outcome) -> dict | None:
    if not outcome.needs_recovery or not hasattr(backend, "recover"):
        return None
    cause = (f"phase 2 status {outcome.phase2_status}, stream sync {outcome.sync_status}"
             if "traceback" not in outcome.diagnostics else outcome.reason[:300])
    try:
        return {"action": backend.recover(), "cause": cause, "ok": True}
    except Exception as e:          # the supervisor replaces this process instead
        return {"action": "in-process device reset", "cause": cause, "ok": False,
                "error": f"{type(e).__name__}: {e}"[:1000]}


def run_one(backend, case, cache=None, dump_dir: str | None = None) -> tuple[Outcome, dict | None]:
    """Judge one case; then, if it left the device in doubt, reset the device. With `dump_dir`
    (--dump-failures) a failing case's arrays are written there, since they live only here."""
    from ..judge import arrays                 # imported by the zygote (_preload), unless it is a probe's
    from ..judge.runner import run_case
    capture = {} if dump_dir else None
    try:
        outcome = run_case(case, backend, backend.info.family, cache, capture=capture)
    except Exception as e:
        outcome = _outcome_of_exception(case, e)
    if capture and outcome.raw is Status.FAIL and "traceback" not in outcome.diagnostics:
        outcome.dump = arrays.write_arrays(Path(dump_dir), case.id, capture)
        if backend.reports_status and capture.get("args") is not None:
            outcome.dump.update(_c_repro(case, capture, backend.info.family, Path(outcome.dump["path"])))
    return outcome, _recover(backend, outcome)


def _c_repro(case, capture: dict, family: str | None, npz: Path) -> dict:
    """A failing aclnn case's standalone C reproducer beside its arrays (the .npz's name without
    the suffix): what a library vendor builds and runs without the harness. Writing it must never
    cost the case its result, so a reproducer that cannot be written says why instead."""
    from ..repro import write_c_repro
    try:
        return {"c_repro": str(write_c_repro(case, capture["args"], capture.get("golden"),
                                             npz.with_suffix(""), family or None))}
    except Exception as e:
        return {"c_repro_error": f"{type(e).__name__}: {e}"[:500]}


def serve(channel: Channel) -> int:
    kind, settings = channel.recv()
    assert kind == "open", kind
    try:
        backend = backends.create(settings["backend"], SimpleNamespace(**settings))
    except HarnessConfigError as e:
        channel.send(("config_error", str(e)))
        return 3
    if settings.get("golden_cache"):
        from ..judge.cache import GoldenCache
        cache = GoldenCache(settings["golden_cache"])
    else:
        cache = None
    announced = backend.info.as_properties()
    channel.send(("ready", announced))
    while True:
        try:
            message = channel.recv()
        except ChannelClosed:
            break
        if message[0] == "close":
            break
        outcome, recovery = run_one(backend, message[1], cache, message[2])
        if outcome.backend == announced:
            outcome.backend = None   # the supervisor has it from "ready": 30 strings less to send per case
        # the golden cache's use in this worker so far; plain data (this module runs as __main__)
        stats = {"hits": cache.hits, "misses": cache.misses, "rejected": list(cache.rejected)} if cache else None
        sys.stdout.flush()
        sys.stderr.flush()
        channel.send(("done", outcome, recovery, stats, _log_size()))
        if recovery and not recovery["ok"]:
            return 2                 # a device this process cannot reset: let a fresh process try
    backend.close()
    return 0


def _log_size() -> int:
    """The size of this worker's log (its stdout and stderr, fd 1 and 2, are that file)."""
    try:
        return os.fstat(2).st_size
    except OSError:
        return 0


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when its supervisor dies, so a killed run leaves no hung worker."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def worker(read_fd: int, write_fd: int) -> int:
    _die_with_parent()
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    channel = Channel(read_fd, write_fd)
    try:
        return serve(channel)
    except ChannelClosed:
        return 0                     # the supervisor went away: nothing left to report to


def _preload() -> None:
    """What every case needs, imported once in the zygote instead of in every worker."""
    import golden
    import torch
    from ..backends import aclnn, torch_backend  # noqa: F401  (imports only: nothing is opened)
    for name in golden.available():
        golden.load(name)
    # Goldens and forward passes run on small tensors, one case after another (xdist gives the
    # parallelism): torch's intra-op thread pool costs more than it saves there.
    # OMP_NUM_THREADS, when set, wins.
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)


def zygote(sock_fd: int, supervisor: int, preload: bool = True) -> int:
    """Fork a worker per request. Requests on the socket: b"fork" with the worker's two pipe ends
    and its log file as SCM_RIGHTS descriptors (answer: its pid); b"wait PID" (answer: its exit
    code, negative for a signal, as subprocess reports it)."""
    _die_with_parent()
    if os.getppid() != supervisor:
        return 0                     # the supervisor died before the line above took effect
    # Ctrl-C, SIGTERM and SIGHUP are for the supervisor: it stops the run (the case in flight stays
    # MISSING, for --resume); a worker killed by one would be reported as a CRASH of its case
    stopping.ignore_in_case_workers()
    if preload:          # a probe only opens the backend: torch and the goldens would cost it a second
        _preload()
    sock = socket.socket(fileno=sock_fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 256, 3)
        except OSError:
            return 0
        if not message:
            return 0                 # the supervisor closed its end
        if message == b"fork":
            pid = os.fork()
            if pid == 0:
                sock.close()
                os.dup2(fds[2], 1)
                os.dup2(fds[2], 2)
                code = 1
                try:
                    code = worker(fds[0], fds[1])
                except BaseException:
                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            for fd in fds:
                os.close(fd)
            sock.sendall(str(pid).encode())
        elif message.startswith(b"wait "):
            _, status = os.waitpid(int(message[5:]), 0)
            sock.sendall(str(os.waitstatus_to_exitcode(status)).encode())


if __name__ == "__main__":
    code = zygote(int(sys.argv[1]), int(sys.argv[2]), preload=sys.argv[3:] != ["--no-preload"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)          # nothing to clean up: skip tearing down torch (the supervisor waits for this)
