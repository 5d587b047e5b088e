"""The case worker: a long-lived process that opens the backend once and runs the cases its
supervisor (harness/execution/supervisor.py) sends, one at a time.

Workers are forked from a zygote: a process started once per supervisor that imports the
harness, torch and the goldens but opens nothing (no ACL state is ever forked), so replacing
a crashed or hung worker costs a fork, not an interpreter start.

It exists so that the library under test can segfault, abort or hang without taking the
pytest process (and the results) with it. The C-level faulthandler writes every thread's
Python stack to a log file the supervisor reads on a fatal signal, and on SIGUSR1, which the
supervisor sends when a case passes its deadline: that works while the main thread is blocked
inside a C call, where no Python code can run.

A worker has two logs (logs.py): its fd 1 and 2 are the library log, which it measures through a
descriptor of its own (a library may close or replace fd 2); its Python-level output and the
stacks go to the harness log, through another. It leads a process group of its own and is a child
subreaper, and after each case it kills every process the library left behind (procfs.py).

Protocol (pickled tuples): supervisor -> worker ("open", settings) then ("run", case, dump)* and
("close",); worker -> supervisor ("ready", properties) | ("config_error", line), then one
("done", Outcome, recovery, golden-cache use, log size, peak RSS in KiB) per case, and ("closed",)
once the backend is closed. An outcome without "backend" ran on the backend the worker announced
with "ready". The log size is where the next case's output starts: the supervisor may already
have sent that case, so only the worker knows.
"""
from __future__ import annotations

import ctypes
import faulthandler
import fcntl
import os
import resource
import select
import signal
import socket
import sys
import traceback
from pathlib import Path

from .. import backends
from ..core.errors import HarnessConfigError
from ..core.status import Status
from ..judge.outcome import Outcome
from ..target.settings import BackendSettings
from . import procfs, stopping
from .channel import Channel, ChannelClosed

_PRIVATE_FD = 100      # the worker's own descriptors go at or above this, out of a library's way
_log_fd: int | None = None   # this worker's own handle on its library log


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


def run_one(backend, case, cache=None, dump: tuple[str, bool] | None = None) -> tuple[Outcome, dict | None]:
    """Judge one case; then, if it left the device in doubt, reset the device. With `dump`
    (directory, everything): --dump-failures writes a failing case's arrays there, since they live
    only here; --dump-all (everything) also a passing case's whose kernel wrote its outputs."""
    from ..judge.runner import run_case
    capture = {} if dump else None
    try:
        outcome = run_case(case, backend, backend.info.family, cache, capture=capture)
    except Exception as e:
        outcome = _outcome_of_exception(case, e)
    if capture and "traceback" not in outcome.diagnostics:
        failed = outcome.raw is Status.FAIL
        if failed or (dump[1] and outcome.digests):
            _dump(outcome, Path(dump[0]), case, capture, backend, failed)
    return outcome, _recover(backend, outcome)


def _dump(outcome: Outcome, directory: Path, case, capture: dict, backend, failed: bool = True) -> None:
    """--dump-failures: the case's arrays (and a failing case's C reproducer). A dump that cannot be
    written is said beside the failure; it never replaces the failure's own reason."""
    from ..judge import arrays                 # imported by the zygote (_preload), unless it is a probe's
    try:
        outcome.dump = arrays.write_arrays(directory, case.id, capture)
    except Exception as e:
        outcome.diagnostics["harness_error"] = f"--dump-failures: cannot write the arrays: {type(e).__name__}: {e}"[:1000]
        return
    if failed and backend.reports_status and capture.get("args") is not None:
        outcome.dump.update(_c_repro(case, capture, backend.info.family, Path(outcome.dump["path"])))


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


def _left_behind(outcome: Outcome) -> None:
    """Kill what the library started during the case and left running (its children, and what
    they started: this process is their subreaper); the record says so."""
    if procfs.has_children():
        killed = procfs.kill_children()
        if killed:
            outcome.diagnostics["left_processes"] = (f"the library left {killed} process(es) running after the "
                                                     "case; killed")


def serve(channel: Channel) -> int:
    kind, settings = channel.recv()
    assert kind == "open", kind
    try:
        settings = BackendSettings.from_wire(settings)
        backend = backends.create(settings.backend, settings)
    except HarnessConfigError as e:
        channel.send(("config_error", str(e)))
        return 3
    if settings.golden_cache:
        from ..judge.cache import GoldenCache
        cache = GoldenCache(settings.golden_cache)
    else:
        cache = None
    announced = backend.info.target()
    channel.send(("ready", announced))
    while True:
        try:
            message = channel.recv()
        except ChannelClosed:
            break
        if message[0] == "close":
            break
        outcome, recovery = run_one(backend, message[1], cache, message[2])
        _left_behind(outcome)
        if outcome.backend == announced:
            outcome.backend = None   # the supervisor has it from "ready": 30 details less to send per case
        # the golden cache's use in this worker so far; plain data (this module runs as __main__)
        stats = {"hits": cache.hits, "misses": cache.misses, "rejected": list(cache.rejected)} if cache else None
        sys.stdout.flush()
        sys.stderr.flush()
        channel.send(("done", outcome, recovery, stats, _log_size(), _peak_rss_kb()))
        if recovery and not recovery["ok"]:
            return 2                 # a device this process cannot reset: let a fresh process try
    backend.close()
    procfs.kill_children()           # what aclFinalize started must not hold the pipe open
    channel.send(("closed",))        # the supervisor need not wait for the end of the pipe
    return 0


def _log_size() -> int:
    """The size of this worker's library log, through its own descriptor (fd 2 may be closed)."""
    try:
        return os.fstat(_log_fd).st_size if _log_fd is not None else 0
    except OSError:
        return 0


def _peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _private(fd: int) -> int:
    """A duplicate of `fd` at or above _PRIVATE_FD, closed on exec; `fd` itself is closed."""
    dup = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _PRIVATE_FD)
    os.close(fd)
    return dup


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when its supervisor dies, so a killed run leaves no hung worker."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def worker(read_fd: int, write_fd: int, log_fd: int, harness_fd: int) -> int:
    """log_fd: the library log, already fd 1 and 2; harness_fd: the harness log."""
    global _log_fd
    _die_with_parent()
    procfs.become_subreaper()
    _log_fd = _private(log_fd)
    harness = os.fdopen(_private(harness_fd), "w", buffering=1, encoding="utf-8", errors="replace")
    sys.stdout = sys.stderr = harness       # the harness's own words never land in the library's log
    faulthandler.enable(file=harness, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=harness, all_threads=True)
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
    """Fork a worker per request. Requests on the socket: b"fork" with the worker's two pipe ends,
    its library log and its harness log as SCM_RIGHTS descriptors (answer: its pid); b"wait PID"
    (answer: its exit code, negative for a signal, as subprocess reports it).

    The zygote is a child subreaper: what a dead worker left behind (a process the library forked,
    even one that left the worker's process group) becomes its child, and is killed the moment the
    worker dies (SIGCHLD). Such a process holds the worker's pipe: alive, it would hide the worker's
    death from the supervisor until the case's deadline."""
    _die_with_parent()
    if os.getppid() != supervisor:
        return 0                     # the supervisor died before the line above took effect
    # Ctrl-C, SIGTERM and SIGHUP are for the supervisor: it stops the run (the case in flight stays
    # MISSING, for --resume); a worker killed by one would be reported as a CRASH of its case
    stopping.ignore_in_case_workers()
    procfs.become_subreaper()
    if preload:          # a probe only opens the backend: torch and the goldens would cost it a second
        _preload()
    sock = socket.socket(fileno=sock_fd)
    workers: set[int] = set()         # forked and not yet waited for (dead ones stay until then)
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)    # a handler, so the wakeup fd is written
    signal.set_wakeup_fd(wake_w)
    try:
        return _serve_forks(sock, workers, (wake_r, wake_w))
    finally:
        procfs.kill_children(spare=workers)


def _serve_forks(sock: socket.socket, workers: set[int], wake: tuple[int, int]) -> int:
    wake_r = wake[0]
    while True:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:                      # a child ended: a worker, or one of its leftovers
            while _drain(wake_r):
                pass
            procfs.kill_children(spare=workers)
        if sock not in readable:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, 256, 4)
        except OSError:
            return 0
        if not message:
            return 0                 # the supervisor closed its end
        if message == b"fork":
            pid = os.fork()
            if pid == 0:
                sock.close()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in wake:
                    os.close(fd)
                _become_worker(fds)
            try:
                os.setpgid(pid, pid)             # also done by the child: whichever runs first
            except OSError:
                pass
            workers.add(pid)
            for fd in fds:
                os.close(fd)
            sock.sendall(str(pid).encode())
        elif message.startswith(b"wait "):
            pid = int(message[5:])
            _, status = os.waitpid(pid, 0)
            workers.discard(pid)
            procfs.kill_children(spare=workers)     # orphans re-parented here: the dead worker's leftovers
            sock.sendall(str(os.waitstatus_to_exitcode(status)).encode())


def _become_worker(fds: list[int]) -> None:
    code = 1
    try:
        os.setpgid(0, 0)
        os.dup2(fds[2], 1)
        os.dup2(fds[2], 2)
        code = worker(fds[0], fds[1], fds[2], fds[3])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _drain(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


if __name__ == "__main__":
    code = zygote(int(sys.argv[1]), int(sys.argv[2]), preload=sys.argv[3:] != ["--no-preload"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)          # nothing to clean up: skip tearing down torch (the supervisor waits for this)
