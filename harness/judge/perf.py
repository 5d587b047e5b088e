"""Perf mode: the device time of a case's kernel, as a distribution the perf gate can judge.

A case is timed only after it was judged and passed (correctness first, unchanged by this): the
backend's `measure(op, args, loop)` runs phase 1 once (its host time apart), makes the executor
repeatable and hands `sample()` a `launch()` that runs and times one phase 2 (aclnn: ACL events
on the case's stream; torch: CUDA events or the host's clock). `sample()` decides how often:

* `warmup` launches first (default 3), whose times are not samples: the first is kept as
  `cold_ms` (caches, lazy binding and page faults are all in it);
* then timed launches under perfstats.StoppingRule: at least `min_n`, then until the median's
  95 % interval is within `rel_halfwidth` of the median, `budget_s` of wall time has passed
  (min_n is a floor even past it), or `max_n` launches are done; `stop` says which. The interval
  is not taken for an answer before `min_time_s` (0.05 s) of sampling, unless max_n is reached:
  20 launches of a 3 us kernel take 5 ms, a window in which one state of a shared machine (a
  neighbour's burst, a cold cache) shifts every sample alike, and the next run's window would
  not share it; spread over 0.05 s the median outlasts such states (on 2 shared cores the same
  library's cases then stopped coming out 12 % apart between runs).

The record's `perf` (Outcome.perf) then holds what the perf gate and the reports read
(harness/reporting/perf_gate.py, perf_summary.py): timing (the label of what the times mean),
samples_ms, perfstats.summarize() (median_ms, min_ms, p10_ms, p90_ms, n, ci_ms, ci_level),
cold_ms, phase1_ms, bytes {read, written} (the input views' bytes, read once, and the output
views', written once: a lower bound of the traffic), gbps (those bytes over the median),
limit {gbps, source, percent} (harness/judge/peak_bandwidth.py), stop, warmup, rule and
elapsed_s.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields

from ..backends.base import LaunchFailed
from ..core import perfstats
from . import peak_bandwidth

WARMUP = 3
MIN_TIME_S = 0.05       # no "ci" stop before this much sampling (below)
FAILED = "perf mode: a timed launch failed"     # the reason's words, read back by harness.audit.faultscore


@dataclass(frozen=True)
class PerfSettings:
    """How one case is sampled: the warmup and the stopping rule (a group's `perf:` may set each)."""
    warmup: int = WARMUP
    rule: perfstats.StoppingRule = perfstats.StoppingRule()
    min_time_s: float = MIN_TIME_S

    @classmethod
    def of(cls, group: dict | None) -> "PerfSettings":
        """From a case's `perf` settings (None or {}: the defaults); `tolerance` is the gate's."""
        group = group or {}
        names = {f.name for f in fields(perfstats.StoppingRule)}
        rule = perfstats.StoppingRule(**{k: v for k, v in group.items() if k in names})
        return cls(int(group.get("warmup", WARMUP)), rule)


def _checked(ms, i: int) -> float:
    """A launch time the statistics can use; a launch that took no time ran no kernel."""
    if not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms <= 0:
        raise LaunchFailed(f"timed launch {i + 1} took {ms!r} ms: no work reached the stream")
    return float(ms)


def sample(launch, settings: PerfSettings, clock=time.perf_counter) -> dict:
    """Launch `settings.warmup` times, then time launches until the stopping rule says stop.
    Returns {samples_ms, cold_ms, warmup, stop, elapsed_s}."""
    cold = _checked(launch(), 0)
    for i in range(1, settings.warmup):
        _checked(launch(), i)
    samples: list[float] = []
    t0 = clock()
    while True:
        samples.append(_checked(launch(), settings.warmup + len(samples)))
        elapsed = clock() - t0
        stop = settings.rule.done(samples, elapsed)
        if stop == "ci" and elapsed < settings.min_time_s and len(samples) < settings.rule.max_n:
            continue            # a short window shares one transient state of the machine: sample longer
        if stop:
            return {"samples_ms": samples, "cold_ms": cold, "warmup": settings.warmup, "stop": stop,
                    "elapsed_s": elapsed}


def view_bytes(args) -> dict:
    """{read, written}: the bytes of the input tensors' views and of the output tensors' views."""
    out = {"read": 0, "written": 0}
    for a in args:
        if a.kind != "tensor" or a.value is None:
            continue
        n = math.prod(a.value.dims) * a.value.storage.element_size()
        out["written" if a.is_output else "read"] += int(n)
    return out


def measure(backend, op, args, settings: PerfSettings, family: str = "", soc_name: str = "") -> dict:
    """The perf record of one case (module docstring). Raises LaunchFailed when a launch fails."""
    # first: the host's copy bandwidth is measured once per worker, and must not run while this
    # worker's own launches are being timed
    limit = peak_bandwidth.limit(getattr(backend, "timing", "unknown"), family, soc_name)
    got = backend.measure(op, args, lambda launch: sample(launch, settings))
    samples = got.pop("samples_ms")
    moved = view_bytes(args)
    stats = perfstats.summarize(samples)
    gbps = (moved["read"] + moved["written"]) / (stats["median_ms"] / 1e3) / 1e9
    limit["percent"] = 100 * gbps / limit["gbps"] if limit["gbps"] else None
    return {"timing": got.pop("timing"), "samples_ms": samples, **stats, "cold_ms": got.pop("cold_ms"),
            "phase1_ms": got.pop("phase1_ms"), "bytes": moved, "gbps": gbps, "limit": limit,
            "stop": got.pop("stop"), "rule": asdict(settings.rule), **got}
