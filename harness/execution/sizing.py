"""How many processes a case run uses: xdist workers (`-n auto`) and case workers per pytest
process (`--case-workers auto`, harness/execution/pool.py). Each answer comes with the reason the
run's header prints.

Where the work is device time, the rule is one case worker per device: on hardware, and on the
software CANN with SWCANN_DEVICE_TIME=1 (each kernel then sleeps its modelled device time, so its
simulated devices are busy while the cores are not). One pytest process runs them all, each worker
on its own device slot (pool.slots), rather than an xdist worker per device: the pool deals cases
to whichever worker has the least queued and tops every worker up while it waits, at no cost of a
second pytest start-up or of xdist's per-item traffic.

Elsewhere (the software CANN timing its kernels' CPU time, torch on the CPU) the work is CPU work,
and a case costs its pytest process about half of what it costs its case worker (about 0.7 against
1.5 ms per case on the software CANN, benchmarks/bench_suite.py). So there one pytest process runs
one case worker per core.

Either way, at most what the available memory holds at a worker's peak (worker_memory()).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.argv import decimal

MAX_AUTO_CASE_WORKERS = 8
# an explicit --case-workers: the pool select()s on every worker's descriptors, whose
# limit (FD_SETSIZE 1024) a thousand workers passed; 64 is far beyond any useful count per process
MAX_CASE_WORKERS = 64
# Memory one case worker may need: the slow tier's largest case peaked at 2.4 GB RSS in its worker
# (/usr/bin/time -f %M ./run suite --tier slow --case-workers 1). Workers that run big cases side
# by side must not meet the OOM killer: its SIGKILL would read as a library CRASH.
WORKER_MEMORY_BYTES = 3 << 30
# The default tier (no case over 2^20 elements) peaked at 0.63 GB (VmHWM of the case worker over all
# 2,908 valid ascend910b cases of the default tier, --case-workers 1; 2026-11-30)
DEFAULT_TIER_WORKER_MEMORY_BYTES = 1 << 30


@dataclass(frozen=True)
class Plan:
    """How many case workers a pytest process runs, and why (the run's header says both)."""
    count: int
    why: str


def worker_memory(tier: str = "all") -> int:
    """The memory a case worker may peak at: the default tier's cases are at most 2^20 elements."""
    return DEFAULT_TIER_WORKER_MEMORY_BYTES if tier == "default" else WORKER_MEMORY_BYTES


_NPU_NODE = re.compile(r"davinci\d+")


def hardware_devices(backend: str) -> int | None:
    """The visible devices when an aclnn run would use a hardware CANN, else None: those
    ASCEND_RT_VISIBLE_DEVICES names, else the driver's device nodes (/dev/davinci<N>, one per NPU:
    what a container was given), else 1."""
    if backend != "aclnn":
        return None
    from ..acl import loader
    from ..target.discovery import is_software_tree
    found = loader.discover()
    if found.root is None or is_software_tree(found.root):
        return None
    visible = [d for d in os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return len(visible) or _device_nodes() or 1


def _device_nodes(dev: Path = Path("/dev")) -> int:
    try:
        return sum(1 for p in dev.iterdir() if _NPU_NODE.fullmatch(p.name))
    except OSError:
        return 0


def simulated_devices(environ=None) -> int:
    """The devices the software CANN shows (swcann/README.md): SWCANN_DEVICES (or its old name
    SWCANN_DEVICE_COUNT, default 1), filtered by ASCEND_RT_VISIBLE_DEVICES as its aclInit does (ids
    read up to the first one that is not below the count)."""
    env = os.environ if environ is None else environ
    text = env.get("SWCANN_DEVICES") or env.get("SWCANN_DEVICE_COUNT") or "1"
    physical = int(text) if text.strip().isdigit() else 1
    visible = env.get("ASCEND_RT_VISIBLE_DEVICES", "")
    if not visible.strip():
        return physical
    ids = []
    for part in visible.split(","):
        if not part.strip().isdigit() or int(part) >= physical:
            break
        ids.append(int(part))
    return len(set(ids))


def device_bound(backend: str, environ=None) -> tuple[int, str] | None:
    """(devices, what makes the work device time) where a case run's work is device time, else None."""
    env = os.environ if environ is None else environ
    devices = hardware_devices(backend)
    if devices is not None:
        return devices, "hardware: device time"
    if backend == "aclnn" and env.get("SWCANN_DEVICE_TIME") == "1":
        return simulated_devices(env), "software CANN with SWCANN_DEVICE_TIME=1: modelled device time"
    return None


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), in bytes; None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def auto_xdist_workers(backend: str, prepare_only: bool = False) -> int:
    """-n auto for a case run: none (one pytest process, its case workers one per device where the work
    is device time, else one per core). --prepare-only computes inputs and goldens in the pytest
    processes themselves (no case workers, no device): there the xdist workers are the parallelism,
    as many as case workers would be."""
    if prepare_only:
        workers = cpu_workers()
        return 0 if workers == 1 else workers
    return 0


def memory_fit(tier: str = "all", jobs: int = 1) -> int | None:
    """Case workers the available memory holds at worker_memory(tier) each, in each of `jobs` runs
    side by side; None where the available memory cannot be read."""
    memory = available_memory()
    return None if memory is None else memory // (worker_memory(tier) * jobs)


def cpu_workers(jobs: int = 1, tier: str = "all") -> int:
    """Processes for CPU work in each of `jobs` runs side by side (a nightly sweep's): a share of the
    cores, at most MAX_AUTO_CASE_WORKERS, each with worker_memory(tier) of the available memory."""
    fit = memory_fit(tier, jobs)
    return max(1, min((os.cpu_count() or 1) // jobs, MAX_AUTO_CASE_WORKERS,
                      MAX_AUTO_CASE_WORKERS if fit is None else fit))


def case_workers(value: str, *, backend: str, device: str | None, distributed: bool, single_case: bool,
                 tier: str = "all") -> int:
    """--case-workers as a number (plan() says how it was chosen)."""
    return plan(value, backend=backend, device=device, distributed=distributed, single_case=single_case,
                tier=tier).count


def plan(value: str, *, backend: str, device: str | None, distributed: bool, single_case: bool,
         tier: str = "all", environ=None) -> Plan:
    """--case-workers as a Plan (ValueError for anything but a number >= 1 or 'auto').

    `auto`: one per device where the work is device time (device_bound()), else one per core, at
    most MAX_AUTO_CASE_WORKERS, where cases are CPU work (the software CANN, torch on the CPU); either
    way no more than the available memory holds at worker_memory(tier) each. One on a torch
    accelerator, under xdist (a worker there knows only its next item, so a second case worker would
    have nothing to run) and for a command line that names single cases (a repro line)."""
    if value != "auto":
        try:
            number = decimal(value, integer=True)      # ASCII decimal: not `1_0` or `١` (core/argv.py)
        except ValueError:
            number = 0
        if number < 1:
            raise ValueError(f"--case-workers: a number >= 1 or 'auto', got {value!r}")
        if number > MAX_CASE_WORKERS:
            raise ValueError(f"--case-workers: at most {MAX_CASE_WORKERS} per pytest process, got {number} "
                             "(use xdist's -n for more processes)")
        return Plan(number, "--case-workers")
    if distributed:
        return Plan(1, "auto: one per xdist worker")
    if single_case:
        return Plan(1, "auto: the command line names single cases")
    if backend == "torch" and not str(device or "cpu").startswith("cpu"):
        return Plan(1, f"auto: one device, torch on {device}")
    bound = device_bound(backend, environ)
    if bound is not None:
        devices, why = bound
        fit = memory_fit(tier)
        count = max(1, min(devices, MAX_CASE_WORKERS, devices if fit is None else fit))
        held = f", memory holds {fit} at {worker_memory(tier) >> 20} MiB each" if fit is not None and fit < devices else ""
        return Plan(count, f"auto: one per device, {devices} device(s){held}; {why}")
    count = cpu_workers(tier=tier)
    return Plan(count, f"auto: one per core ({os.cpu_count() or 1}), at most {MAX_AUTO_CASE_WORKERS} and what "
                       f"memory holds at {worker_memory(tier) >> 20} MiB each; the work is CPU time")
