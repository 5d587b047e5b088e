"""What a measured case's bandwidth is held against: the `limit` of its perf record.

On hardware it is the family's peak memory bandwidth, from the table below with the source of
each figure; a family whose figure could not be sourced says so and has none (null), since a
made-up peak would make every percentage of it wrong. On the software CANN the kernels run on
this host's CPU, so the limit is this host's memory-copy bandwidth, measured once per case
worker; under SWCANN_DEVICE_TIME=1 the events report bytes over the model's bandwidth instead,
and the limit is that modelled bandwidth. Torch on the CPU is held against the host's copy
bandwidth too; torch on an accelerator against nothing (no table of its peaks here).

The percentage compares the bytes the case's views hold (harness/judge/perf.py: inputs read
once, outputs written once) with the limit: a kernel that reads an element twice, or walks
padding, moves more than that, so it is a lower bound of the share of the peak it used.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Peak:
    family: str
    soc_prefix: str            # "" for every SoC of the family; a longer prefix wins
    gbps: float | None         # 1e9 bytes/s; None: not known
    source: str


PEAKS: tuple[Peak, ...] = (
    Peak("ascend950", "Ascend950DT", 4000.0, "Ascend 950DT, HiZQ 2.0 HBM: Huawei Connect 2025 roadmap, as the press "
                                            "reported it"),
    Peak("ascend950", "", 1600.0, "Ascend 950PR, HiBL 1.0 HBM: Huawei Connect 2025 roadmap, as the press reported it"),
    Peak("ascend910b", "", 1600.0, "HBM2e figure widely reported for the Ascend 910B; no Huawei datasheet found"),
    Peak("ascend910_93", "", None, "unknown: no published per-device (one die) figure found; about 3.2 TB/s per "
                                   "two-die package is reported"),
    Peak("ascend910", "", 1200.0, "Ascend 910 (4 x HBM2) as Huawei presented it at Hot Chips 31 (2019)"),
    Peak("ascend310p", "", 204.8, "Atlas 300I Pro product page (LPDDR4X); the two-chip 300I Duo's reported "
                                  "408 GB/s agrees"),
    Peak("ascend310b", "", None, "unknown: no published figure found for the Ascend 310B"),
)

COPY_BYTES = 64 << 20          # twice the largest L3 cache this runs on: a copy of DRAM, not of cache
COPY_REPEATS = 5


def peak_of(family: str, soc_name: str = "") -> Peak | None:
    """The table's row for a SoC: its family's, the longest matching SoC-name prefix first."""
    rows = [p for p in PEAKS if p.family == family and soc_name.startswith(p.soc_prefix)]
    return max(rows, key=lambda p: len(p.soc_prefix)) if rows else None


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


def limit(timing: str, family: str, soc_name: str = "", environ=None) -> dict:
    """{gbps, source} of the bandwidth a case timed by `timing` is held against (gbps None: unknown)."""
    env = os.environ if environ is None else environ
    if timing in ("cpu_time", "perf_counter"):
        return {"gbps": host_copy_gbps(),
                "source": f"this host's memory-copy bandwidth (best of {COPY_REPEATS} copies of "
                          f"{COPY_BYTES >> 20} MiB, read + written), measured by this case worker: the kernels "
                          "ran on the host's CPU"}
    if timing == "modelled":
        if env.get("SWCANN_DEVICE_GBPS"):
            return {"gbps": float(env["SWCANN_DEVICE_GBPS"]),
                    "source": "the software CANN's modelled bandwidth, set by SWCANN_DEVICE_GBPS"}
        peak = peak_of(family, soc_name)
        return {"gbps": peak.gbps if peak else None,
                "source": "the software CANN's modelled device time: the family's figure "
                          + (f"({peak.source})" if peak else "(none in the table)")}
    if timing == "events":
        peak = peak_of(family, soc_name)
        if peak is None:
            return {"gbps": None, "source": f"unknown: no peak bandwidth for family {family or '?'} in the table"}
        return {"gbps": peak.gbps, "source": peak.source}
    return {"gbps": None, "source": f"unknown: no peak bandwidth for timing {timing!r} (device not in the table)"}
