"""What a measured case's bandwidth is held against: the `limit` of its perf record.

A limit is {gbps, source, bytes}: a bandwidth, where it comes from, and which of the case's view
bytes it counts ("read+written" or "written"); bytes / gbps is the least time a launch can take
(perf.least_ms), and perf.limit.percent is that least time over the median.

On hardware it is the family's peak memory bandwidth, from the platform file with the source of
each figure, over the bytes read + written; a family whose figure could not be sourced says so
and has none (null), since a made-up peak would make every percentage of it wrong.

On the software CANN the limit is one no correct launch beats, derived rather than borrowed:
* CPU time (the default): the kernels run on this host's CPU, and a case small enough to stay in
  its caches between launches beats the host's DRAM copy bandwidth (MaxUnpool3d did by 13-34 %),
  and a gather reads only part of the view it is given. So the limit counts only the bytes every
  correct kernel must move, its output written once, at the fastest rate this host stores bytes
  at all: the best of repeated fills and copies of a buffer small enough for the L1 cache
  (host_store_gbps), measured once per case worker.
* Modelled (SWCANN_DEVICE_TIME=1): each kernel's modelled time is its modelled bytes over the
  model's bandwidth, and those bytes always include the output written once but need not include
  every input view (MaxUnpool3d's gather reads only the gathered gradients; the max pools never
  read `self`: the harness's read + written gave 183 %). So the limit is the model's bandwidth
  (the software CANN's table, or SWCANN_DEVICE_GBPS) over the bytes written.
Torch on the CPU is held to the host's store rate as the CPU-time kernels are; torch on an
accelerator against nothing (no table of its peaks here).
"""
from __future__ import annotations

import functools
import os
import time

import numpy as np

from platforms import Bandwidth

from ..core import families


COPY_BYTES = 64 << 20          # twice the largest L3 cache this runs on: a copy of DRAM, not of cache
COPY_REPEATS = 5
STORE_BYTES = 16 << 10         # fits every L1 data cache: the fastest a core stores bytes anywhere
STORE_LOOPS = 256              # stores per timed round (one round ~ 0.1-1 ms: above the clock's granularity)
STORE_ROUNDS = 7

MODELLED_TICK_MS = 1e-6        # the software CANN rounds a kernel's modelled time to the nearest ns (devtime.c)

def peak_of(family: str, soc_name: str = "") -> Bandwidth | None:
    """The platform file's bandwidth row of a SoC (platforms/platform.yaml), the longest matching
    SoC-name prefix first; its peak_gbps is None where no figure is published."""
    record = families.BY_NAME.get(family)
    return record.bandwidth_of(soc_name) if record else None


@functools.cache
def host_copy_gbps() -> float:
    """This host's memory-copy bandwidth in GB/s (bytes read + bytes written per second): the best
    of a few copies of COPY_BYTES, measured once per process (each case worker)."""
    src = np.ones(COPY_BYTES, dtype=np.uint8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(COPY_REPEATS):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * COPY_BYTES / best / 1e9


@functools.cache
def host_store_gbps() -> float:
    """The fastest rate this host's CPU writes bytes, GB/s of bytes written: the best round of
    STORE_LOOPS fills and copies of a STORE_BYTES buffer (it stays in the L1 cache), measured once
    per process. No kernel on this CPU writes its output faster (perf: no launch beats it)."""
    src = np.ones(STORE_BYTES, dtype=np.uint8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(STORE_ROUNDS):
        for fill in (False, True):
            t0 = time.perf_counter()
            for _ in range(STORE_LOOPS):
                if fill:
                    dst.fill(0)
                else:
                    np.copyto(dst, src)
            best = min(best, (time.perf_counter() - t0) / STORE_LOOPS)
    return STORE_BYTES / best / 1e9


def modelled_gbps(family: str, soc_name: str = "") -> float | None:
    """The software CANN's modelled bandwidth of a SoC (the platform file's, as its build generates it)."""
    row = peak_of(family, soc_name)
    return row.modelled_gbps if row else None


def limit(timing: str, family: str, soc_name: str = "", environ=None) -> dict:
    """{gbps, source, bytes} of the bandwidth a case timed by `timing` is held against (gbps None:
    none known) and which bytes of the case it counts (module docstring)."""
    env = os.environ if environ is None else environ
    if timing in ("cpu_time", "perf_counter"):
        return {"gbps": host_store_gbps(), "bytes": "written",
                "source": f"derived: this host's fastest store rate (best of {STORE_ROUNDS} rounds of {STORE_LOOPS} "
                          f"fills and copies of {STORE_BYTES >> 10} KiB, which stay in the L1 cache; bytes written), "
                          "measured by this case worker, over the output's bytes written once: the kernels run on "
                          "the host's CPU, and no kernel there writes its output faster"}
    if timing == "modelled":
        how = ("derived: the software CANN's modelled time is its modelled bytes over this bandwidth, and those "
               "bytes always include the output written once; so the output's bytes written over it, less 1 ns "
               "(each kernel's time is rounded to the nearest ns)")
        if env.get("SWCANN_DEVICE_GBPS"):
            return {"gbps": float(env["SWCANN_DEVICE_GBPS"]), "bytes": "written", "resolution_ms": MODELLED_TICK_MS,
                    "source": f"{how} (bandwidth set by SWCANN_DEVICE_GBPS)"}
        gbps = modelled_gbps(family, soc_name)
        if gbps is None:
            return {"gbps": None, "bytes": "written",
                    "source": f"no limit: the software CANN models no bandwidth for family {family or '?'}"}
        return {"gbps": gbps, "bytes": "written", "resolution_ms": MODELLED_TICK_MS,
                "source": f"{how} (the family's modelled bandwidth, platforms/platform.yaml)"}
    if timing == "events":
        peak = peak_of(family, soc_name)
        if peak is None:
            return {"gbps": None, "bytes": "read+written",
                    "source": f"unknown: no peak bandwidth for family {family or '?'} in the table"}
        return {"gbps": peak.peak_gbps, "bytes": "read+written", "source": peak.source}
    return {"gbps": None, "bytes": "read+written",
            "source": f"unknown: no peak bandwidth for timing {timing!r} (device not in the table)"}
