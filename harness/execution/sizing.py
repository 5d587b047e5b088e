"""How many processes a case run uses: xdist workers (`-n auto`) and case workers per pytest
process (`--case-workers auto`, harness/execution/pool.py).

On hardware the rule is one device per worker: one xdist worker per visible device, one case
worker each. On the software CANN and on torch on the CPU the work is CPU work, and a case costs
its pytest process about half of what it costs its case worker (about 0.7 against 1.5 ms per
case on the software CANN, benchmarks/bench_suite.py). So there one pytest process runs several
case workers, one per core: a second pytest process would add its own start-up (collection, a
zygote importing torch) and xdist's per-item traffic (about 1 ms of controller time per case).
"""
from __future__ import annotations

import os

MAX_AUTO_CASE_WORKERS = 8
# an explicit --case-workers: the pool select()s on every worker's descriptors, whose
# limit (FD_SETSIZE 1024) a thousand workers passed; 64 is far beyond any useful count per process
MAX_CASE_WORKERS = 64
# Memory one case worker may need: the slow tier's largest case peaked at 2.4 GB RSS in its worker
# (/usr/bin/time -f %M ./run suite --tier slow --case-workers 1). Workers that run big cases side
# by side must not meet the OOM killer: its SIGKILL would read as a library CRASH.
WORKER_MEMORY_BYTES = 3 << 30


def hardware_devices(backend: str) -> int | None:
    """The visible devices when an aclnn run would use a hardware CANN, else None."""
    if backend != "aclnn":
        return None
    from ..acl import loader
    from ..target.discovery import is_software_tree
    found = loader.discover()
    if found.root is None or is_software_tree(found.root):
        return None
    visible = [d for d in os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return len(visible) or 1


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
    """-n auto for a case run: one per visible device on hardware (none for one device), else none.
    --prepare-only computes inputs and goldens in the pytest processes themselves (no case
    workers, no device): there the xdist workers are the parallelism, as many as case workers
    would be."""
    if prepare_only:
        workers = cpu_workers()
        return 0 if workers == 1 else workers
    devices = hardware_devices(backend)
    return 0 if devices is None or devices == 1 else devices


def cpu_workers(jobs: int = 1) -> int:
    """Processes for CPU work in each of `jobs` runs side by side (a nightly sweep's): a share of the
    cores, at most MAX_AUTO_CASE_WORKERS, each with WORKER_MEMORY_BYTES of the available memory."""
    memory = available_memory()
    fit = MAX_AUTO_CASE_WORKERS if memory is None else memory // (WORKER_MEMORY_BYTES * jobs)
    return max(1, min((os.cpu_count() or 1) // jobs, MAX_AUTO_CASE_WORKERS, fit))


def case_workers(value: str, *, backend: str, device: str | None, distributed: bool, single_case: bool) -> int:
    """--case-workers as a number (ValueError for anything but a number >= 1 or 'auto').

    `auto`: one per core, at most MAX_AUTO_CASE_WORKERS and no more than the available memory
    holds at WORKER_MEMORY_BYTES each, where cases are CPU work (the software CANN, torch on the
    CPU). One on hardware and on a torch accelerator (one device per worker: more is asked for
    explicitly and takes the following device slots), under xdist (a worker there knows only its
    next item, so a second case worker would have nothing to run) and for a command line that
    names single cases (a repro line)."""
    if value != "auto":
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            raise ValueError(f"--case-workers: a number >= 1 or 'auto', got {value!r}")
        if number > MAX_CASE_WORKERS:
            raise ValueError(f"--case-workers: at most {MAX_CASE_WORKERS} per pytest process, got {number} "
                             "(use xdist's -n for more processes)")
        return number
    accelerator = backend == "torch" and not str(device or "cpu").startswith("cpu")
    if distributed or single_case or accelerator or hardware_devices(backend) is not None:
        return 1
    return cpu_workers()
