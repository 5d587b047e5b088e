"""The aclnn backend's perf mode: one case's kernel timed launch by launch through the public API.

Phase 1 runs once (its host time is taken apart: no interval holds it), the executor is made
repeatable right after it (aclSetAclOpExecutorRepeatable, acl_abi.md 2.2, as the relaunch groups
do), one workspace is allocated, and then the caller's loop launches phase 2 as often as it
decides, each launch timed with ACL events on the case's stream (harness/acl/events.py: start
record, the launch, end record, synchronize the end event, elapsed time). Nothing is read back
between launches, so an interval holds the kernel and nothing of the host. The case was judged
before, on buffers of its own; these launches are for time only.
"""
from __future__ import annotations

import ctypes
import time
from typing import TYPE_CHECKING, Callable

from ..acl import abi, events
from ..acl.objects import CaseObjects
from ..acl.runtime import AclCallError, recent_error
from .base import LaunchFailed

if TYPE_CHECKING:
    from ..inputs import Arg
    from ..model import OpDescriptor

# events.timing_source() -> the short label a timing carries in records and perf baselines: times
# of different labels are never compared (perf_baseline.PerfEntry.comparable)
TIMING_LABELS = {"device events": "events",
                 "software CANN: kernels' CPU time": "cpu_time",
                 "software CANN: modelled device time": "modelled"}


def timing_label(source: str) -> str:
    return TIMING_LABELS.get(source, "unknown")


def measure(backend, op: OpDescriptor, args: list[Arg], loop: Callable) -> dict:
    """`backend`: the AclnnBackend this serves. loop(launch) -> dict, where launch() -> milliseconds
    of one timed phase 2. Returns the loop's dict with timing, timing_source and phase1_ms added;
    raises LaunchFailed when a call fails (phase 1, a launch, a sync: with the status that says how)."""
    args = [a for a in args if a.kind != "out_pointer"]
    unbacked = [a.name for a in args if a.kind == "tensor" and a.value is not None and a.value.unbacked]
    if unbacked:
        raise LaunchFailed(f"{', '.join(unbacked)} unbacked (descriptors without memory): nothing to time")
    phase1, phase2 = backend._entry(op, [a.kind for a in args])
    backend.session.ensure_thread()
    recent_error(backend.libs)          # drain: a failure below reports only its own text
    objs = CaseObjects(backend.libs)
    try:
        with objs:                      # every object released on every path, in reverse order
            return _measure(backend, objs, phase1, phase2, args, loop)
    finally:
        backend._pending_problems += [f"release failed: {p}" for p in objs.problems]


def _c_args(backend, objs: CaseObjects, args: list[Arg]) -> list:
    """Phase 1's arguments: each tensor uploaded and described as the judged run described it."""
    out = []
    for a in args:
        if a.kind == "tensor":
            out.append(None if a.value is None else objs.tensor(a.value, backend._acl_dtype(a))[0])
        elif a.kind == "int_array":
            out.append(None if a.value is None else objs.int_array(a.value, a.name))
        elif a.kind in abi.PARAM_CTYPES:
            out.append(a.value)
        else:
            raise ValueError(f"unknown argument kind {a.kind!r} for {a.name}")
    return out


def _measure(backend, objs: CaseObjects, phase1, phase2, args: list[Arg], loop: Callable) -> dict:
    libs, stream = backend.libs, backend.session.stream
    c_args = _c_args(backend, objs, args)
    size, executor = ctypes.c_uint64(0), ctypes.c_void_p()
    t0 = time.perf_counter()
    status = phase1(*c_args, ctypes.byref(size), ctypes.byref(executor))
    phase1_ms = (time.perf_counter() - t0) * 1e3
    if status != 0:
        raise LaunchFailed(f"phase 1 returned {status} this time: {recent_error(libs)}")
    try:
        objs.repeatable(executor.value)
    except AclCallError as e:
        objs.unused_executor(executor.value)
        raise LaunchFailed(f"the timed launches need a repeatable executor: {e}") from None
    # the workspace as the judged launch got it (0xFF bytes); not refilled between launches:
    # a kernel must not depend on what it finds there
    workspace = objs.filled_buffer(size.value, 0xFF) if size.value else None

    def launch() -> float:
        try:
            ms, ret = events.time_on_stream(libs, stream, lambda: phase2(workspace, size.value, executor.value, stream))
        except AclCallError as e:       # a device error surfaces at the end event's synchronize
            sync = libs.runtime.aclrtSynchronizeStream(stream)
            raise LaunchFailed(f"timed launch: {e}", sync_status=sync or None) from None
        if ret != 0:
            message = recent_error(libs)
            sync = libs.runtime.aclrtSynchronizeStream(stream)
            raise LaunchFailed(f"phase 2 of the repeatable executor returned {ret}: {message}", ret, sync)
        return ms

    result = loop(launch)
    sync = libs.runtime.aclrtSynchronizeStream(stream)
    if sync != 0:
        raise LaunchFailed(f"stream sync after the timed launches returned {sync}: {recent_error(libs)}",
                           sync_status=sync)
    return {**result, "timing": backend.timing, "timing_source": backend.timing_source, "phase1_ms": phase1_ms}
