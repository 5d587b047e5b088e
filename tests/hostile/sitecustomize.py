"""A hostile library for the robustness tests: process-level misbehaviour that the software CANN's
own SWCANN_FAULTS do not have (a library that closes its stderr, floods it, forks children that
outlive it, hangs or fails silently in aclInit, ignores or blocks the stack-dump signal, is killed
like the OOM killer kills).

It sits at the library's ABI boundary of a case worker: `aclInit` (the runtime library's entry
point, through the loaded Libraries) and the operator launch (AclnnBackend.run, i.e. the calls into
libopapi). Python imports this file at start-up when its directory is on PYTHONPATH; it acts only
in case workers (processes whose __main__ is harness.execution.child) and only when HOSTILE is set:

    HOSTILE = item[,item...]      item = action[@cond[&cond...]]
    cond    = numel=N             the launch's first tensor (gradOutput) has N elements
            | worker=ID           the xdist worker (PYTEST_XDIST_WORKER; "main" without xdist)
            | case=K              the K-th launch of this case worker process (1-based)
            | start=K             init actions: the K-th or a later aclInit of that xdist worker's
                                  case workers (counted in $HOSTILE_DIR)

Launch actions: close_fd2 (silently; the launch goes on), flood (HOSTILE_FLOOD_BYTES to fd 2, no newline, then SIGSEGV), segv,
fork (a child that leaves the process group and sleeps HOSTILE_CHILD_S holding every inherited
descriptor; its pid goes to $HOSTILE_DIR/children), ignore_dump / block_dump (SIGUSR1 ignored or
blocked, then a hang in C), stale_write (the next launch stores past its workspace), sigkill, oom (bumps the counter file $HOSTILE_OOM_FILE, then SIGKILL).
Init actions: init_hang (aclInit never returns), init_fail_silent (aclInit returns 100000 and
aclGetRecentErrMsg NULL).
"""
from __future__ import annotations

import ctypes
import importlib.abc
import importlib.util
import os
import signal
import sys

SPEC = os.environ.get("HOSTILE", "")
INIT_ACTIONS = ("init_hang", "init_fail_silent")
_launches = 0
_arming = False         # stale_write: armed by one launch (set once it ended), fired by the next
_stale = False


def _items():
    for text in filter(None, SPEC.split(",")):
        action, _, conds = text.partition("@")
        yield action, dict(c.split("=", 1) for c in conds.split("&") if c)


def _in_case_worker() -> bool:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec is not None and spec.name == "harness.execution.child"


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _state(name: str) -> str:
    return os.path.join(os.environ.get("HOSTILE_DIR", "/tmp"), name)


def _count_start() -> int:
    path = _state(f"{_worker()}.starts")
    try:
        with open(path) as f:
            n = int(f.read() or 0) + 1
    except (OSError, ValueError):
        n = 1
    with open(path, "w") as f:
        f.write(str(n))
    return n


def _hits(conds: dict, numel: int | None = None, start: int | None = None) -> bool:
    if "worker" in conds and conds["worker"] != _worker():
        return False
    if "numel" in conds and (numel is None or int(conds["numel"]) != numel):
        return False
    if "case" in conds and int(conds["case"]) != _launches:
        return False
    return "start" not in conds or (start is not None and start >= int(conds["start"]))


def _say(text: str, fd: int = 2) -> None:
    try:
        os.write(fd, f"[hostile] {text}\n".encode())
    except OSError:
        pass


def _hang_in_c() -> None:
    libc = ctypes.CDLL(None)
    while True:
        libc.pause()


def _die(sig: int) -> None:
    os.kill(os.getpid(), sig)
    _hang_in_c()


def _launch_action(action: str) -> None:
    if action == "close_fd2":
        os.close(2)                     # silently, and the launch goes on
    elif action == "flood":
        chunk = b"x" * (1 << 20)
        for _ in range(int(os.environ.get("HOSTILE_FLOOD_BYTES", 1 << 28)) >> 20):
            os.write(2, chunk)
        _die(signal.SIGSEGV)
    elif action == "segv":
        _say("segfault in the launch")
        _die(signal.SIGSEGV)
    elif action == "sigkill":
        _die(signal.SIGKILL)
    elif action == "fork":
        _fork_child()
    elif action == "stale_write":
        global _arming
        _arming = True                  # the write goes through the next launch, not this one
    elif action == "ignore_dump":
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        _hang_in_c()
    elif action == "block_dump":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        _hang_in_c()
    elif action == "oom":
        path = os.environ["HOSTILE_OOM_FILE"]
        with open(path) as f:
            count = int(f.read().split()[-1])
        with open(path, "w") as f:
            f.write(f"oom 0\noom_kill {count + 1}\n")
        _die(signal.SIGKILL)


def _fork_child() -> None:
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()                     # out of the worker's process group, as a daemonising library does
        with open(_state("children"), "a") as f:
            f.write(f"{os.getpid()}\n")
        os.write(ready_w, b"x")
        import time
        time.sleep(float(os.environ.get("HOSTILE_CHILD_S", "60")))
        os._exit(0)
    os.close(ready_w)
    os.read(ready_r, 1)                 # the launch returns once the child has left the group
    os.close(ready_r)


def _wrap_run(real):
    def run(self, op, args, *rest, **kw):
        global _launches
        if _in_case_worker():
            _launches += 1
            first = next((a.value for a in args if a.kind == "tensor" and a.value is not None), None)
            numel = None
            if first is not None:
                numel = 1
                for d in first.dims:
                    numel *= d
            for action, conds in _items():
                if action not in INIT_ACTIONS and _hits(conds, numel=numel):
                    _launch_action(action)
        try:
            return real(self, op, args, *rest, **kw)
        finally:
            global _arming, _stale
            if _arming:
                _arming, _stale = False, True
    return run


class _Runtime:
    """The runtime library with a hostile aclInit; every other symbol is the real one."""

    def __init__(self, real, action: str):
        self._real, self._action, self._silent = real, action, False

    def __getattr__(self, name):
        if name == "aclInit":
            return self._init
        if name == "aclGetRecentErrMsg" and self._silent:
            return lambda: None
        return getattr(self._real, name)

    def _init(self, config):
        if self._action == "init_hang":
            _say("aclInit: waiting for a device that never answers")
            _hang_in_c()
        self._silent = True
        return 100000


def _wrap_load(real):
    def load(found):
        libs = real(found)
        if _in_case_worker():
            start = _count_start()
            for action, conds in _items():
                if action in INIT_ACTIONS and _hits(conds, start=start):
                    libs.runtime = _Runtime(libs.runtime, action)
                    break
        return libs
    return load


def _wrap_entry(real):
    """stale_write: the launch after the arming one stores 16 bytes just past its workspace (as a
    library that kept the arming launch's address and size would), then carries on."""
    def entry(self, op, kinds):
        phase1, phase2 = real(self, op, kinds)

        def launch(ws, size, executor, stream):
            global _stale
            status = phase2(ws, size, executor, stream)
            if _stale and ws and size and _in_case_worker():
                _stale = False
                past = (ctypes.c_ubyte * 16)(*([0x5A] * 16))
                end = (int(ws if isinstance(ws, int) else ws.value) + size + 31) // 32 * 32
                self.libs.runtime.aclrtMemcpy(ctypes.c_void_p(end), 16, past, 16, 1)   # host to device
            return status
        return phase1, launch
    return entry


_PATCHES = {"harness.acl.loader": ("load", [_wrap_load]),
            "harness.backends.aclnn": ("AclnnBackend", [("run", _wrap_run), ("_entry", _wrap_entry)])}


class _Finder(importlib.abc.MetaPathFinder):
    """Patches a module right after it executes, before anything imports names from it."""

    def find_spec(self, name, path, target=None):
        if name not in _PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            owner_name, wraps = _PATCHES[name]
            if owner_name == "load":
                module.load = wraps[0](module.load)
                return
            owner = getattr(module, owner_name)
            for fn, wrap in wraps:
                setattr(owner, fn, wrap(getattr(owner, fn)))
        spec.loader.exec_module = exec_module
        return spec


if SPEC:
    sys.meta_path.insert(0, _Finder())
