"""Device memory as the runtime reports it (aclrtGetMemInfo, acl_abi.md 2.1 and 3.3): a leak check
that needs only the public runtime API, so it works on a real CANN, which has none of the software
CANN's own counters (swcannGetStats).

The free memory is read after each case and compared with the reading before it (the previous
case's). A real runtime may give memory back lazily (a free that completes with the stream's work,
a pool trimmed later), so a drop is read once more after a stream sync and a short pause before it
counts, and a drop within the tolerance never does: the driver counts whole pages, and a runtime
grows its own pools (tiling data, kernel arguments) in chunks. A runtime also loads a kernel's
binary into device memory at its first launch and keeps it there, so a drop at a kernel's first
launch in this process moves the baseline without being called a leak.

The reading is the whole device's: another process allocating on the same device at the same
time would read as a leak here. The harness runs one case worker per device on hardware.
"""
from __future__ import annotations

import ctypes
import time
from typing import Callable

from . import abi
from .loader import Libraries
from .runtime import recent_error

NOT_RETURNED = "device memory not returned"     # a leak's problem text starts with this (faultscore reads it)
TOLERANCE = 1 << 20         # bytes: a few pages, or one chunk of a runtime's pool
SETTLE_S = 0.01             # the pause after the sync, before the second reading
ATTRS = ("ACL_HBM_MEM", "ACL_DDR_MEM")      # HBM on the 910 families; the 310 families have DDR only


class MemoryWatch:
    """Free device memory before and after each case; `sync` waits for the case's stream."""

    def __init__(self, libs: Libraries, sync: Callable[[], object], tolerance: int = TOLERANCE):
        self.libs, self.sync, self.tolerance = libs, sync, tolerance
        self.attr = next((a for a in ATTRS if self._read(a) is not None), None)
        self.before = self._read(self.attr) if self.attr else None

    def describe(self) -> str:
        """What the check reads, for the run's properties."""
        if self.attr is None:
            return "off: aclrtGetMemInfo is not exported or answers no memory type"
        return f"aclrtGetMemInfo({self.attr}) after every case, tolerance {self.tolerance} bytes"

    def _read(self, attr: str) -> int | None:
        get = getattr(self.libs.runtime, "aclrtGetMemInfo", None)      # optional in abi.PROTOTYPES
        if get is None:
            return None
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        if get(abi.MEM_ATTRS[attr], ctypes.byref(free), ctypes.byref(total)) != abi.ACL_SUCCESS:
            recent_error(self.libs)     # drained: it must not be read as the next case's message
            return None
        return free.value

    def rebase(self) -> None:
        """Take the current reading as the baseline (after a device reset, which frees everything)."""
        if self.attr is not None:
            self.before = self._read(self.attr)

    def after_case(self, first_launch: bool = False) -> str | None:
        """The leak of the case that just ended, in words, or None. `first_launch`: the case launched
        a kernel for the first time in this process (its binary may stay loaded)."""
        if self.attr is None or self.before is None:
            self.rebase()
            return None
        now = self._read(self.attr)
        if now is None:
            return None
        first = self.before - now
        drop = first
        if drop > self.tolerance:
            self.sync()
            time.sleep(SETTLE_S)
            now = self._read(self.attr)
            drop = first if now is None else self.before - now
        if now is not None:
            self.before = now           # a leak is reported once, at the case that caused it
        if drop <= self.tolerance or first_launch:
            return None
        return (f"{NOT_RETURNED}: {drop} bytes less free after the case than before it "
                f"(aclrtGetMemInfo({self.attr}); {first} bytes at the first reading, {drop} after a stream "
                f"sync; tolerance {self.tolerance} bytes)")
