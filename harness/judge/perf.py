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
(harness/reporting/perf/gate.py, perf/summary.py): timing (the label of what the times mean),
samples_ms, perfstats.summarize() (median_ms, min_ms, p10_ms, p90_ms, n, ci_ms, ci_level),
cold_ms, phase1_ms, bytes {read, written} (the input views' bytes, read once, and the output
views', written once: a lower bound of the traffic), gbps (those bytes over the median),
limit {gbps, source, bytes, least_ms, percent} (harness/judge/peak_bandwidth.py: the bandwidth,
where it comes from, which bytes it counts, the least time a launch moving them can take, and that
least time as a share of the median), outliers, stop, warmup, rule and elapsed_s.

Every launch time (warmups included) must be physical, else the case fails (LaunchFailed, the
reason says which bound): a finite number of milliseconds > 0; no longer than the host's clock
says the launch took (events are read after the end event's synchronize, so the stream cannot
have run longer than the call; twice that plus WALL_SLACK_MS allowed for the clocks' granularity);
this also keeps it under the case's deadline, past which the case would be a TIMEOUT. And not
more than FASTER_FACTOR times below the least time the limit allows for the bytes it counts:
no launch is 10x faster than the bandwidth bound of its own bytes. A sample far from the median
but physical (OUTLIER_FACTOR times above or below it: a competing process, a page fault) is kept
in samples_ms (the median and the gate's rank statistics do not average it) and listed in
`outliers`, so a report shows it.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields

from ..backends.base import LaunchFailed
from ..core import affinity, perfstats
from . import peak_bandwidth

WARMUP = 3
MIN_TIME_S = 0.05       # no "ci" stop before this much sampling (below)
FAILED = "perf mode: a timed launch failed"     # the reason's words, read back by harness.audit.faultscore
FASTER_FACTOR = 10.0    # a launch this many times faster than its limit's least time is not physical
WALL_SLACK_MS = 10.0    # a launch's event time may exceed 2x its host wall time by this much (clock granularity)
OUTLIER_FACTOR = 3.0    # a sample this many times above or below the median is listed as an outlier
MAX_OUTLIERS_LISTED = 20
TIMING_ONLY = "timing_only"     # a case's perf key (never a case file's): time it, judge nothing


@dataclass(frozen=True)
class PerfSettings:
    """How one case is sampled: the warmup and the stopping rule (a group's `perf:` may set each)."""
    warmup: int = WARMUP
    rule: perfstats.StoppingRule = perfstats.StoppingRule()
    min_time_s: float = MIN_TIME_S
    cpu: int | None = None      # every thread pinned to this CPU while timed (the gate's A/B rounds)
    timing_only: bool = False   # a round of the gate's A/B (reporting/perf/ab.py): no golden, no verdict

    @classmethod
    def of(cls, group: dict | None) -> "PerfSettings":
        """From a case's `perf` settings (None or {}: the defaults); `tolerance` is the gate's."""
        group = group or {}
        names = {f.name for f in fields(perfstats.StoppingRule)}
        rule = perfstats.StoppingRule(**{k: v for k, v in group.items() if k in names})
        cpu = group.get("cpu")
        return cls(int(group.get("warmup", WARMUP)), rule, cpu=int(cpu) if cpu is not None else None,
                   timing_only=group.get(TIMING_ONLY) is True)


@dataclass(frozen=True)
class Bounds:
    """What a launch time may be: at least least_ms / FASTER_FACTOR (None: no limit known)."""
    least_ms: float | None = None
    what: str = ""              # the least time's derivation, for the reason


def _checked(ms, i: int, wall_ms: float | None = None, bounds: Bounds = Bounds()) -> float:
    """A launch time the statistics can use, or LaunchFailed naming the physical bound it breaks:
    not a finite number, <= 0 (a launch that took no time ran no kernel), longer than the host's
    clock saw the launch take (so also past the case's deadline), or more than FASTER_FACTOR times
    below the least time the bandwidth limit allows."""
    n = i + 1
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms):
        raise LaunchFailed(f"timed launch {n} took {ms!r} ms: not a finite time, the event timing is broken")
    if ms <= 0:
        raise LaunchFailed(f"timed launch {n} took {ms!r} ms: no work reached the stream")
    if wall_ms is not None and ms > 2 * wall_ms + WALL_SLACK_MS:
        raise LaunchFailed(f"timed launch {n} took {ms:.4g} ms by its events, but the whole call took {wall_ms:.4g} ms "
                           "on the host's clock: impossible (it would also outlast the case's deadline)")
    if bounds.least_ms and ms * FASTER_FACTOR < bounds.least_ms:
        raise LaunchFailed(f"timed launch {n} took {ms:.4g} ms, {bounds.least_ms / ms:.3g}x less than the "
                           f"{bounds.least_ms:.4g} ms {bounds.what} (at most {FASTER_FACTOR:g}x less is "
                           "credible): faster than the bandwidth allows")
    return float(ms)


def sample(launch, settings: PerfSettings, clock=time.perf_counter, bounds: Bounds = Bounds()) -> dict:
    """Launch `settings.warmup` times, then time launches until the stopping rule says stop; every
    time checked against the physical bounds (_checked). Returns {samples_ms, cold_ms, warmup,
    stop, elapsed_s}."""
    def timed(i: int) -> float:
        t = clock()
        ms = launch()
        return _checked(ms, i, (clock() - t) * 1e3, bounds)

    cold = timed(0)
    for i in range(1, settings.warmup):
        timed(i)
    samples: list[float] = []
    t0 = clock()
    while True:
        samples.append(timed(settings.warmup + len(samples)))
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


def least_ms(limit: dict, moved: dict) -> float | None:
    """The least time a launch moving `moved` can take under `limit`: the bytes the limit counts
    (limit["bytes"]: "written", or "read+written") over its bandwidth, less the clock's rounding
    (limit["resolution_ms"], where the limit gives one); None without a bandwidth."""
    gbps = limit.get("gbps")
    if not gbps:
        return None
    counted = moved["written"] if limit.get("bytes") == "written" else moved["read"] + moved["written"]
    least = counted / (gbps * 1e9) * 1e3 - (limit.get("resolution_ms") or 0.0)     # a clock's rounding off
    return least if least > 0 else None


def outliers(samples: list[float], median: float, warmup: int) -> dict:
    """{factor, count, launches: [{launch, ms, x_median}]}: the samples OUTLIER_FACTOR times above
    or below the median (launch: 1-based, warmups counted), the first MAX_OUTLIERS_LISTED listed."""
    far = [(i, ms) for i, ms in enumerate(samples) if ms > median * OUTLIER_FACTOR or ms * OUTLIER_FACTOR < median]
    return {"factor": OUTLIER_FACTOR, "count": len(far),
            "launches": [{"launch": warmup + i + 1, "ms": ms, "x_median": ms / median}
                         for i, ms in far[:MAX_OUTLIERS_LISTED]]}


def measure(backend, op, args, settings: PerfSettings, family: str = "", soc_name: str = "") -> dict:
    """The perf record of one case (module docstring). Raises LaunchFailed when a launch fails or
    a launch time is not physical."""
    # first: the host's bandwidth is measured once per worker, and must not run while this
    # worker's own launches are being timed
    limit = peak_bandwidth.limit(getattr(backend, "timing", "unknown"), family, soc_name)
    moved = view_bytes(args)
    least = least_ms(limit, moved)
    bounds = Bounds(least, f"its {limit.get('bytes')} bytes need at the limit's {limit.get('gbps') or 0:.4g} GB/s")
    with affinity.pinned(settings.cpu):
        got = backend.measure(op, args, lambda launch: sample(launch, settings, bounds=bounds))
    samples = got.pop("samples_ms")
    stats = perfstats.summarize(samples)
    gbps = (moved["read"] + moved["written"]) / (stats["median_ms"] / 1e3) / 1e9
    limit["least_ms"] = least
    limit["percent"] = 100 * least / stats["median_ms"] if least else None
    return {"timing": got.pop("timing"), "samples_ms": samples, **stats, "cold_ms": got.pop("cold_ms"),
            "phase1_ms": got.pop("phase1_ms"), "bytes": moved, "gbps": gbps, "limit": limit,
            "outliers": outliers(samples, stats["median_ms"], got.get("warmup", settings.warmup)),
            "stop": got.pop("stop"), "rule": asdict(settings.rule), **got}
