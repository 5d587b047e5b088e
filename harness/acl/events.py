"""Device time of the work a callable queues on a stream, measured with ACL events.

The documented call order (spec acl_abi.md 2.1b): create two events, record the start event
and the end event on the same stream around the work, synchronize (here: the end event), then
aclrtEventElapsedTime. The interval holds what the stream executed between the two records
(kernels, and copies queued there), never host-side work such as phase 1. Both events are
destroyed on every path, also when the work or a call fails.

Only CANN's own event API is called, so this works on a real install as on the software CANN;
`timing_source` reads the software CANN's optional label of what its timings mean.
"""
from __future__ import annotations

import ctypes
from typing import Callable, TypeVar

from . import abi
from .loader import Libraries
from .runtime import AclCallError, check, recent_error

T = TypeVar("T")

_REQUIRED = ("aclrtCreateEvent", "aclrtRecordEvent", "aclrtSynchronizeEvent", "aclrtEventElapsedTime",
             "aclrtDestroyEvent")

# what swcannGetTimingSource() returns -> the label a timing carries
_SWCANN_SOURCES = {0: "software CANN: kernels' CPU time", 1: "software CANN: modelled device time"}


def timing_source(libs: Libraries) -> str:
    """What an elapsed time from these libraries measures. A real CANN's events time the device;
    the software CANN says which of its two clocks runs (swcann/README.md "Device time")."""
    query = getattr(libs.runtime, "swcannGetTimingSource", None)
    if query is None:
        return "device events"
    return _SWCANN_SOURCES.get(query(), f"software CANN: unknown timing source {query()}")


def _create(libs: Libraries) -> ctypes.c_void_p:
    """An event that records a timestamp: ACL_EVENT_TIME_LINE where aclrtCreateEventWithFlag exists,
    else aclrtCreateEvent, whose default flags include it (the runtime's RT_EVENT_DEFAULT)."""
    rt, event = libs.runtime, ctypes.c_void_p()
    with_flag = getattr(rt, "aclrtCreateEventWithFlag", None)
    if with_flag is not None:
        check(libs, "aclrtCreateEventWithFlag", with_flag(ctypes.byref(event), abi.ACL_EVENT_TIME_LINE))
    else:
        check(libs, "aclrtCreateEvent", rt.aclrtCreateEvent(ctypes.byref(event)))
    return event


def time_on_stream(libs: Libraries, stream, work: Callable[[], T]) -> tuple[float, T]:
    """(milliseconds the stream spent on what `work` queued on it, what `work` returned).

    Raises AclCallError when an event call fails (a device error the work caused surfaces at the
    end event's synchronize); the stream's own synchronize still reports it afterwards."""
    missing = [name for name in _REQUIRED if not hasattr(libs.runtime, name)]
    if missing:
        raise AclCallError("event timing", None, f"{libs.runtime_path.name} does not export {', '.join(missing)}")
    rt, events = libs.runtime, []
    try:
        events.append(_create(libs))
        events.append(_create(libs))
        start, end = events
        check(libs, "aclrtRecordEvent(start)", rt.aclrtRecordEvent(start, stream))
        result = work()
        check(libs, "aclrtRecordEvent(end)", rt.aclrtRecordEvent(end, stream))
        check(libs, "aclrtSynchronizeEvent(end)", rt.aclrtSynchronizeEvent(end))
        ms = ctypes.c_float()
        check(libs, "aclrtEventElapsedTime", rt.aclrtEventElapsedTime(ctypes.byref(ms), start, end))
    except BaseException:
        _destroy(libs, events)      # the failure in flight is the one to report
        raise
    problems = _destroy(libs, events)
    if problems:
        raise AclCallError("aclrtDestroyEvent", None, "; ".join(problems))
    return ms.value, result


def _destroy(libs: Libraries, events: list[ctypes.c_void_p]) -> list[str]:
    problems = []
    for event in events:
        ret = libs.runtime.aclrtDestroyEvent(event)
        if ret != abi.ACL_SUCCESS:
            problems.append(f"returned {ret}: {recent_error(libs)}")
    return problems
