"""The noise between runs: what a perf baseline built from several runs lets the gate allow for.

The interval of one run's median describes that run only. On a shared machine the level moves
between runs (another job, a frequency state, the cache's luck), and that is the noise that makes a
one-run baseline miss or invent slowdowns: a baseline taken in a fast phase makes every later run
look slower, one taken in a slow phase hides a real slowdown. A baseline of k runs of one library
keeps each run's median (m_1 .. m_k, `run_medians_ms`), and the gate judges a new run against the
slowest (and, for improvements, the fastest) run the baseline makes plausible:

    center  = median(m_i)
    s       = the standard deviation of log(m_i)              (k >= 2)
    w       = z * s * sqrt(1 + 1/k),  z = 2.326 (one-sided 99 %): the normal prediction bound of
              one more run's log median, from k runs
    slowest = max(max(m_i), center * exp(w))
    fastest = min(min(m_i), center / exp(w))

Against the baseline file alone, a case is a REGRESSION only when the new run's launches are
slower than the baseline's launches rescaled to `slowest` (pooled, so that their median is
`slowest`) by more than the tolerance, by all three of perfstats.compare()'s conditions (ratio of
medians, one-sided U test at alpha, the Hodges-Lehmann interval past 1 + margin * tolerance), and
again on the re-measurement; an IMPROVEMENT the mirror image against `fastest`. The ratio the gate
reports is the new median over `center`; `ratio_to_slowest` is the one the decision used. Never
below the slowest run actually seen: with k = 2 or 3 the standard deviation is itself noisy, and a
run that happened is plausible by definition.

Where the baseline's library is at hand (ab.py), the between-run allowance gives way to a
measurement without between-run noise: a case flagged against the runs' `center` is re-measured
A/B, this run's library and the baseline's in turn in one time window, and is a REGRESSION when
that comparison says so too. On a shared 2-core machine the runs of one library moved by up to
1.8x in CPU time (benchmarks/bench_perf_noise.py): no allowance that wide would let a 1.3x
slowdown through, while the A/B comparison sees it within the window.

A one-run baseline (k = 1, and every version-1 file) has no between-run spread: it is judged as
before, against its one run, and its verdict says that it cannot rule out noise between runs.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from statistics import NormalDist

from ...core import perfstats

Z = NormalDist().inv_cdf(0.99)
STATISTIC = ("slowest plausible baseline run = max(slowest run's median, median of the run medians x "
             "exp(2.326 x sd(log run medians) x sqrt(1 + 1/k)))")
ONE_RUN = "one baseline run: the noise between runs is not ruled out (build the baseline from several runs)"


@dataclass(frozen=True)
class Spread:
    """The between-run spread of one baseline entry."""
    runs: int
    center_ms: float
    slowest_ms: float
    fastest_ms: float
    sd_log: float

    def as_dict(self) -> dict:
        return {"runs": self.runs, "center_ms": self.center_ms, "slowest_ms": self.slowest_ms,
                "fastest_ms": self.fastest_ms, "sd_log": self.sd_log, "statistic": STATISTIC}


def spread(run_medians) -> Spread | None:
    """The spread of k >= 2 run medians (module docstring); None for fewer (one run: no spread)."""
    m = [float(x) for x in run_medians or ()]
    if len(m) < 2:
        return None
    if not all(math.isfinite(x) and x > 0 for x in m):
        raise ValueError("run medians must be finite and positive")
    k = len(m)
    center = statistics.median(m)
    sd = statistics.stdev(math.log(x) for x in m)
    w = Z * sd * math.sqrt(1 + 1 / k)
    return Spread(k, center, max(max(m), center * math.exp(w)), min(min(m), center * math.exp(-w)), sd)


def judge(base_samples, new_samples, tolerance: float, alpha: float, run_medians=()
          ) -> tuple[perfstats.Comparison, perfstats.Comparison, dict]:
    """(against the center, against the plausible extreme, the between-run facts). With k >= 2
    run medians: the first is the comparison with the baseline's launches rescaled to their
    `center` (its ratio is the one reported, and it is what flags a case for re-measurement); the
    second has the verdict against `slowest` (REGRESSION) or `fastest` (IMPROVEMENT), with the
    first's numbers (module docstring). With fewer: perfstats.compare() twice the same, and the
    facts say that the baseline is one run."""
    s = spread(run_medians)
    if s is None:
        c = perfstats.compare(base_samples, new_samples, tolerance, alpha)
        return c, c, {"runs": 1, "note": ONE_RUN}
    base = [float(x) for x in base_samples]
    pooled = statistics.median(base)

    def scaled(to: float) -> perfstats.Comparison:
        return perfstats.compare([x * to / pooled for x in base], new_samples, tolerance, alpha)

    shown, up, down = scaled(s.center_ms), scaled(s.slowest_ms), scaled(s.fastest_ms)
    verdict = (perfstats.REGRESSION if up.verdict == perfstats.REGRESSION else
               perfstats.IMPROVEMENT if down.verdict == perfstats.IMPROVEMENT else perfstats.SAME)
    facts = {**s.as_dict(), "ratio_to_slowest": up.ratio, "ci_to_slowest": list(up.ci), "p_to_slowest": up.p_slower,
             "ratio_to_fastest": down.ratio}
    return shown, replace(shown, verdict=verdict), facts


def describe(facts: dict | None) -> str:
    """The between-run part of a verdict's line."""
    if not facts:
        return ""
    if facts.get("runs", 1) < 2:
        return "; one baseline run: between-run noise not ruled out"
    return (f"; {facts['runs']} baseline runs, slowest plausible {facts['slowest_ms']:.4g} ms "
            f"(run medians' center {facts['center_ms']:.4g} ms, sd(log) {facts['sd_log']:.3f}): "
            f"{facts['ratio_to_slowest']:.3f}x it")
