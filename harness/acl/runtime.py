"""The ACL state of this process: aclInit, the device, one stream.

ACL is process-wide: aclInit once per process (a repeat answers 100002, which
is harmless), aclrtSetDevice per thread, and the libraries can be loaded from
one CANN root only. So there is at most one Session per process, opened by the
backend and closed at exit (atexit) or by Backend.close().
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import threading

from ..core.errors import HarnessConfigError
from . import abi
from .loader import Libraries


class AclCallError(RuntimeError):
    """A runtime or meta-API call failed outside the operator's own phases (malloc, memcpy, create)."""

    def __init__(self, call: str, code: int | None, message: str):
        self.call, self.code, self.message = call, code, message
        what = f"{call} failed" + (f" with {code}" if code is not None else "")
        super().__init__(what + (f": {message}" if message else ""))


def recent_error(libs: Libraries) -> str:
    """aclGetRecentErrMsg() as text. The C buffer is thread-local and overwritten by the next
    call, so the bytes are copied here (c_char_p restype copies them); NULL means 'no message'."""
    get = getattr(libs.runtime, "aclGetRecentErrMsg", None)     # optional: an older CANN may lack it
    raw = get() if get is not None else None
    return raw.decode("utf-8", errors="replace") if raw else ""


def check(libs: Libraries, call: str, ret: int) -> None:
    if ret != abi.ACL_SUCCESS:
        raise AclCallError(call, ret, recent_error(libs))


class Session:
    def __init__(self, libs: Libraries, device_id: int, device_count: int, deterministic: bool,
                 owns_init: bool):
        self.libs = libs
        self.device_id = device_id
        self.device_count = device_count
        self.deterministic = deterministic
        self.owns_init = owns_init          # False: someone else (e.g. torch_npu) called aclInit first
        self.stream = ctypes.c_void_p()
        self.soc_name: str | None = None
        self.deterministic_options: dict[str, str] = {}     # scope -> value read back (--deterministic)
        self.closed = False
        self._threads = {threading.get_ident()}

    def ensure_thread(self) -> None:
        """aclrtSetDevice binds the *calling thread*; a run from a new thread must bind it too."""
        tid = threading.get_ident()
        if tid not in self._threads:
            check(self.libs, "aclrtSetDevice", self.libs.runtime.aclrtSetDevice(self.device_id))
            self._threads.add(tid)

    def reset(self) -> None:
        """A clean device after a runtime error (507xxx): drop the stream, aclrtResetDevice (forced:
        every thread's reference goes), aclrtSetDevice, configure again (deterministic mode and the
        stream do not survive a reset), and check the new stream with a sync.
        Raises AclCallError or HarnessConfigError when the device cannot be brought back."""
        rt = self.libs.runtime
        if self.stream.value:
            rt.aclrtSynchronizeStream(self.stream)      # the error it reports is the one we recover from
            rt.aclrtDestroyStream(self.stream)          # may already be gone with a broken context
            self.stream = ctypes.c_void_p()
        reset = getattr(rt, "aclrtResetDeviceForce", None) or rt.aclrtResetDevice
        check(self.libs, "aclrtResetDevice", reset(self.device_id))
        check(self.libs, "aclrtSetDevice", rt.aclrtSetDevice(self.device_id))
        self._threads = {threading.get_ident()}
        _configure(self)
        check(self.libs, "aclrtSynchronizeStream (after reset)", rt.aclrtSynchronizeStream(self.stream))

    def close(self) -> list[str]:
        """Destroy the stream, reset the device, aclFinalize. Returns the problems met (never raises)."""
        if self.closed:
            return []
        self.closed = True
        rt, problems = self.libs.runtime, []

        def call(name, ret):
            if ret != abi.ACL_SUCCESS:
                problems.append(f"{name} returned {ret}: {recent_error(self.libs)}")

        if self.stream.value:
            call("aclrtSynchronizeStream", rt.aclrtSynchronizeStream(self.stream))  # required before destroy
            call("aclrtDestroyStream", rt.aclrtDestroyStream(self.stream))
            self.stream = ctypes.c_void_p()
        call("aclrtResetDevice", rt.aclrtResetDevice(self.device_id))
        if self.owns_init:
            ret = rt.aclFinalize()
            if ret not in (abi.ACL_SUCCESS, abi.ACL_ERROR_REPEAT_FINALIZE):
                call("aclFinalize", ret)
        return problems


_current: Session | None = None
_lock = threading.Lock()


def current() -> Session | None:
    return _current if _current is not None and not _current.closed else None


def worker_slot(worker: str | None) -> int:
    """The index of an xdist worker id ("gw3" -> 3); 0 for anything else (no xdist)."""
    return int(worker[2:]) if worker and worker.startswith("gw") and worker[2:].isdigit() else 0


def pick_device(requested, slot: int | None, count: int) -> int:
    """--device if given, else the case worker's slot (its xdist worker's index, times the case
    workers per pytest process, plus its own index: harness/execution/pool.py) modulo the visible
    device count (aclrtGetDeviceCount already honours ASCEND_RT_VISIBLE_DEVICES, which renumbers from 0)."""
    if requested is not None and str(requested) != "":
        text = str(requested).split(":")[-1]          # accept "3" and "npu:3"
        try:
            device = int(text)
        except ValueError:
            raise HarnessConfigError(f"--device: the aclnn backend wants a device id (0..{count - 1}), "
                                     f"got {requested!r}") from None
        if not 0 <= device < count:
            raise HarnessConfigError(f"--device {device}: only {count} device(s) visible "
                                     f"(ids 0..{count - 1}; ASCEND_RT_VISIBLE_DEVICES renumbers from 0)")
        return device
    return (slot or 0) % count


def open_session(libs: Libraries, device=None, slot: int | None = None,
                 deterministic: int = 0) -> Session:
    """aclInit, pick and set the device, optional deterministic mode (its level: ACL_OPT_DETERMINISTIC's
    value, 0 off), create the stream, read the SoC."""
    global _current
    with _lock:
        if current() is not None:
            _check_compatible(_current, libs, device, deterministic)
            return _current
        rt = libs.runtime
        ret = rt.aclInit(None)
        if ret not in (abi.ACL_SUCCESS, abi.ACL_ERROR_REPEAT_INITIALIZE):
            raise HarnessConfigError(f"aclInit failed with {ret}: {recent_error(libs)}")
        owns_init = ret == abi.ACL_SUCCESS
        try:
            device_id, count = _set_device(libs, device, slot)
        except BaseException:
            if owns_init:
                rt.aclFinalize()
            raise
        session = Session(libs, device_id, count, deterministic, owns_init)
        try:
            _configure(session)
        except BaseException:
            session.close()          # resets the device and finalizes what we initialised
            raise
        _current = session
        return session


def _check_compatible(session: Session, libs: Libraries, device, deterministic: bool) -> None:
    """A second backend in the same process shares the session, so it must want the same one."""
    if session.libs.root != libs.root:
        raise HarnessConfigError(f"ACL is already initialised from {session.libs.root} in this process; "
                                 f"cannot also use {libs.root}")
    if deterministic != session.deterministic:
        raise HarnessConfigError(f"this process already runs ACL with deterministic={session.deterministic}")
    if device is not None and pick_device(device, None, session.device_count) != session.device_id:
        raise HarnessConfigError(f"this process already uses device {session.device_id}; cannot switch to {device}")


def _set_device(libs: Libraries, device, slot: int | None) -> tuple[int, int]:
    rt = libs.runtime
    count = ctypes.c_uint32(0)
    ret = rt.aclrtGetDeviceCount(ctypes.byref(count))
    if ret != abi.ACL_SUCCESS or count.value == 0:
        raise HarnessConfigError(f"aclrtGetDeviceCount returned {ret} with {count.value} device(s): "
                                 f"{recent_error(libs) or 'no device visible (driver loaded? ASCEND_RT_VISIBLE_DEVICES?)'}")
    device_id = pick_device(device, slot, count.value)
    ret = rt.aclrtSetDevice(device_id)
    if ret != abi.ACL_SUCCESS:
        raise HarnessConfigError(f"aclrtSetDevice({device_id}) failed with {ret}: {recent_error(libs)}")
    return device_id, count.value


def _configure(session: Session) -> None:
    libs, rt = session.libs, session.libs.runtime
    if session.deterministic:
        session.deterministic_options = _set_deterministic(libs, int(session.deterministic))
    ret = rt.aclrtCreateStream(ctypes.byref(session.stream))
    if ret != abi.ACL_SUCCESS:
        raise HarnessConfigError(f"aclrtCreateStream failed with {ret}: {recent_error(libs)}")
    raw = rt.aclrtGetSocName()
    if not raw:
        raise HarnessConfigError(f"aclrtGetSocName() returned NULL: {recent_error(libs)}")
    session.soc_name = raw.decode("utf-8", errors="replace")


# Deterministic mode as torch_npu applies it (acl_abi.md 3.3, 1.8): the process-level option, which
# current opbase reads, and the context-level one, which older CANN reads. Both are set and read back.
_DETERMINISTIC_SCOPES = (("process", "aclrtSetSysParamOpt", "aclrtGetSysParamOpt"),
                         ("context", "aclrtCtxSetSysParamOpt", "aclrtCtxGetSysParamOpt"))


def _set_deterministic(libs: Libraries, level: int = 1) -> dict[str, str]:
    """Set ACL_OPT_DETERMINISTIC=level (1 deterministic, 2 strong consistency, 3 batch consistency:
    acl_abi.md 3.3) at both levels; returns {scope: what was read back} for the report.
    A CANN that lacks one of the two functions gets the other; lacking both is an error."""
    rt, recorded = libs.runtime, {}
    for scope, setter, getter in _DETERMINISTIC_SCOPES:
        if not hasattr(rt, setter):
            recorded[scope] = f"not set ({setter} not exported by {libs.runtime_path.name})"
            continue
        ret = getattr(rt, setter)(abi.ACL_OPT_DETERMINISTIC, level)
        if ret != abi.ACL_SUCCESS:
            raise HarnessConfigError(f"--deterministic: {setter}(ACL_OPT_DETERMINISTIC, {level}) failed with {ret}: "
                                     f"{recent_error(libs)}")
        value = ctypes.c_int64(-1)
        read = getattr(rt, getter)(abi.ACL_OPT_DETERMINISTIC, ctypes.byref(value)) if hasattr(rt, getter) else None
        recorded[scope] = f"ACL_OPT_DETERMINISTIC={value.value} ({setter}" + \
            (f"; {getter} returned {read})" if read not in (None, abi.ACL_SUCCESS) else ")")
    if all(v.startswith("not set") for v in recorded.values()):
        raise HarnessConfigError(f"--deterministic: {libs.runtime_path} exports neither aclrtSetSysParamOpt "
                                 f"nor aclrtCtxSetSysParamOpt")
    return recorded


@contextlib.contextmanager
def deterministic_mode(libs: Libraries):
    """ACL_OPT_DETERMINISTIC=1 at both levels while a case of a `deterministic: true` group runs
    (the tilings read it at phase 1), then each level back to the value read before."""
    rt, before = libs.runtime, {}
    for _scope, setter, getter in _DETERMINISTIC_SCOPES:
        if not hasattr(rt, setter):
            continue
        value = ctypes.c_int64(0)
        if hasattr(rt, getter) and getattr(rt, getter)(abi.ACL_OPT_DETERMINISTIC, ctypes.byref(value)) != abi.ACL_SUCCESS:
            value.value = 0
        ret = getattr(rt, setter)(abi.ACL_OPT_DETERMINISTIC, 1)
        if ret != abi.ACL_SUCCESS:
            raise AclCallError(f"{setter}(ACL_OPT_DETERMINISTIC, 1)", ret, recent_error(libs))
        before[setter] = value.value
    if not before:
        raise AclCallError("deterministic mode", None, f"{libs.runtime_path.name} exports neither "
                           "aclrtSetSysParamOpt nor aclrtCtxSetSysParamOpt")
    try:
        yield
    finally:
        for setter, value in before.items():
            getattr(rt, setter)(abi.ACL_OPT_DETERMINISTIC, value)


def close_session() -> list[str]:
    global _current
    with _lock:
        session, _current = _current, None
    return session.close() if session is not None else []


atexit.register(close_session)
