"""The statistics of performance measurement: summaries, when to stop sampling, and when two
timing distributions differ enough to call it a regression.

Times are device milliseconds per launch. Nothing here assumes a distribution: launch times on a
shared machine are skewed (a long right tail), have outliers (a competing process makes 5-20 % of
the launches several times slower) and drift. So every statistic is a rank statistic:

* the median and its confidence interval from order statistics (the number of samples below the
  true median is Binomial(n, 1/2), whatever the distribution);
* the Mann-Whitney U test for "one run tends to be slower than the other";
* the Hodges-Lehmann interval of the ratio of the two runs, on log times: the shift between
  log(new) and log(base) whose interval comes from inverting the same U test.

Why compare() cannot flap on noise alone: a verdict needs all of (1) the ratio of the medians past
the tolerance (default 10 %), (2) the one-sided U test significant at alpha (default 1 %) and (3)
the Hodges-Lehmann interval of the ratio wholly past 1 + margin * tolerance (default 1.075). Two
samples of one distribution pass (2) with probability at most alpha, however heavy the tail or
frequent the outliers (the test only assumes exchangeable launches), and (1) and (3) ask for
more. The perf gate then asks for the same verdict again on a re-measurement
(harness/reporting/perf/gate.py).

Why (3) asks for more than "above 1" (margin=0): the interval knows only the spread within each
measurement, but between two measurements the machine's level moves too (about 1 % here), so a
real slowdown within the tolerance is called significant more often than alpha says; with a noisy
median the ratio of medians then passes 1.10 as well. On the machine model of
tests/test_perfstats.py (500 cases each, sampled by the stopping rule, flagged twice):

    margin            0      0.5    0.75   1.0
    1.05x flagged     5      1-2    0      0
    1.30x flagged     498    496    493    486
    1.15x flagged     435    388    306    192

What it can miss or mistake, by design:
* a slowdown smaller than the tolerance, however significant (1.05x at the default 10 %);
* a slowdown of the tail only (every tenth launch twice as slow, the median unchanged);
* a slowdown of the first launch (`cold_ms` is not compared);
* any slowdown when either side has too few launches: with m = n = 4 at alpha = 0.01 neither the test
  nor the ratio's interval can exclude 1, however far apart the samples;
* an unlucky baseline: the re-measurement repeats the new side only, so a baseline whose few
  launches happened to miss the outliers the machine usually has is shared by both comparisons
  (measure baselines with more launches than the runs they gate);
* a machine that is slower during the whole of one measurement (another job ran throughout) is a
  real difference between the two samples: the test rightly finds it, and only the repetition
  on a re-measurement (at another time) tells it from a slower kernel.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

CI_LEVEL = 0.95                 # the median's interval: at least this coverage from n = 6 on
REGRESSION, IMPROVEMENT, SAME = "REGRESSION", "IMPROVEMENT", "SAME"
STOP_REASONS = ("ci", "budget", "max_n")
# pairwise differences the Hodges-Lehmann interval holds in memory at once (8 bytes each);
# larger samples are thinned to evenly spaced order statistics for the interval only
MAX_PAIRS = 4_000_000


def _as_samples(samples) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("no samples")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("launch times must be finite and positive")
    return x


# ------------------------------------------------------------------ the median and its interval

@functools.lru_cache(maxsize=4096)
def median_ci_ranks(n: int, level: float = CI_LEVEL) -> tuple[int, int, float]:
    """(l, u, coverage): the 1-based ranks of the order statistics [x(l), x(u)] that bound the
    median with probability `coverage` >= level for continuous data, the narrowest symmetric pair.
    The interval misses the median when fewer than l samples lie below it, or fewer than l above:
    2 * P(B <= l - 1) with B ~ Binomial(n, 1/2). Below n = 6 no pair reaches 95 %: then the
    whole range, with its lower coverage."""
    if n < 1:
        raise ValueError("no samples")
    k = np.arange(n + 1)
    log_pmf = (math.lgamma(n + 1) - np.array([math.lgamma(i + 1) + math.lgamma(n - i + 1) for i in k])
               - n * math.log(2.0))
    cdf = np.cumsum(np.exp(log_pmf))
    l = max(int(np.searchsorted(cdf, (1 - level) / 2, side="right")), 1)
    return l, n - l + 1, float(max(0.0, 1 - 2 * cdf[l - 1]))


def min_n_for(level: float = CI_LEVEL) -> int:
    """The fewest samples whose median interval reaches `level` (6 at 95 %)."""
    n = 1
    while median_ci_ranks(n, level)[2] < level:
        n += 1
    return n


def _median_ci(x: np.ndarray) -> tuple[float, float, float, float]:
    """(median, lo, hi, coverage) of x, sorted or not: one selection of the four order statistics."""
    n = len(x)
    l, u, coverage = median_ci_ranks(n)
    part = np.partition(x, sorted({l - 1, (n - 1) // 2, n // 2, u - 1}))
    return float(part[(n - 1) // 2] + part[n // 2]) / 2, float(part[l - 1]), float(part[u - 1]), coverage


def summarize(samples) -> dict:
    """median_ms, min_ms, p10_ms, p90_ms, n, ci_ms [lo, hi] (the median's distribution-free
    interval) and ci_level (its exact coverage for continuous data: >= 0.95 from n = 6 on)."""
    x = _as_samples(samples)
    median, lo, hi, coverage = _median_ci(x)
    p10, p90 = np.percentile(x, [10, 90])
    return {"median_ms": median, "min_ms": float(x.min()), "p10_ms": float(p10), "p90_ms": float(p90),
            "n": int(x.size), "ci_ms": [lo, hi], "ci_level": round(coverage, 6)}


def rel_halfwidth(samples) -> float:
    """Half the width of the median's interval, as a share of the median. O(n): the stopping rule
    asks after every launch."""
    median, lo, hi, _ = _median_ci(_as_samples(samples))
    return (hi - lo) / 2 / median


# ------------------------------------------------------------------ when to stop sampling

@dataclass(frozen=True)
class StoppingRule:
    """When a case has been timed enough (NVBench's noise criterion, benchdnn's per-problem
    budget): never before min_n launches, then as soon as the median's 95 % interval is within
    rel_halfwidth of the median ("ci"), the elapsed time reaches budget_s ("budget"), or max_n
    launches are done ("max_n"). min_n is a floor even past the budget: fewer launches give no
    interval that reaches its level, so nothing could be gated on them."""
    min_n: int = 20
    max_n: int = 200
    rel_halfwidth: float = 0.02
    budget_s: float = 2.0

    def __post_init__(self):
        floor = min_n_for(CI_LEVEL)
        if self.min_n < floor:
            raise ValueError(f"min_n={self.min_n}: the median's {CI_LEVEL:.0%} interval needs at least {floor} samples")
        if self.max_n < self.min_n:
            raise ValueError(f"max_n={self.max_n} is below min_n={self.min_n}")
        if not self.rel_halfwidth > 0 or not self.budget_s > 0:
            raise ValueError("rel_halfwidth and budget_s must be positive")

    def done(self, samples, elapsed_s: float) -> str | None:
        """Called after every timed launch: why to stop now ("ci", "budget", "max_n"), or None."""
        n = len(samples)
        if n < self.min_n:
            return None
        if rel_halfwidth(samples) <= self.rel_halfwidth:
            return "ci"
        if n >= self.max_n:
            return "max_n"
        if elapsed_s >= self.budget_s:
            return "budget"
        return None


# ------------------------------------------------------------------ two distributions

def _ranks(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Mid-ranks (1-based; tied values share their average rank) and sum(t^3 - t) over tie groups."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    mid = np.cumsum(counts) - (counts - 1) / 2.0
    return mid[inverse], float(np.sum(counts.astype(float) ** 3 - counts))


def mann_whitney(base, new) -> tuple[float, float]:
    """One-sided p-values (new tends to be slower, new tends to be faster) of the Mann-Whitney U
    test: normal approximation with tie correction and continuity correction."""
    b, a = _as_samples(base), _as_samples(new)
    m, n = b.size, a.size
    ranks, ties = _ranks(np.concatenate([b, a]))
    u = float(ranks[m:].sum()) - n * (n + 1) / 2.0        # pairs (new > base), ties counted half
    big = m + n
    var = m * n / 12.0 * ((big + 1) - ties / (big * (big - 1)))
    if var <= 0:                                          # every launch took the same time: no evidence
        return 1.0, 1.0
    sd, mean = math.sqrt(var), m * n / 2.0
    upper = 1 - NormalDist().cdf((u - mean - 0.5) / sd)
    lower = NormalDist().cdf((u - mean + 0.5) / sd)
    return min(1.0, upper), min(1.0, lower)


def _thin(x: np.ndarray, limit: int) -> np.ndarray:
    """At most `limit` evenly spaced order statistics of x (all of x when it is small enough)."""
    if x.size <= limit:
        return x
    return np.quantile(x, np.linspace(0, 1, limit))


def ratio_interval(base, new, level: float) -> tuple[float, float, float]:
    """(estimate, lo, hi) of the ratio new/base: Hodges-Lehmann on log times (the median of every
    pairwise difference log(new_j) - log(base_i)) with the distribution-free interval from the
    U distribution (normal approximation): the k-th smallest and k-th largest difference.
    Too few samples for the level give (0, inf): such an interval can decide nothing."""
    b, a = np.log(_as_samples(base)), np.log(_as_samples(new))
    side = max(2, int(math.sqrt(MAX_PAIRS)))
    b, a = _thin(np.sort(b), side), _thin(np.sort(a), side)
    m, n = b.size, a.size
    diffs = (a[None, :] - b[:, None]).ravel()
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    k = math.floor(m * n / 2.0 - z * math.sqrt(m * n * (m + n + 1) / 12.0))
    mid = (m * n - 1) // 2, m * n // 2
    picks = sorted({*mid, *((k - 1, m * n - k) if k >= 1 else ())})
    part = np.partition(diffs, picks)
    estimate = math.exp((part[mid[0]] + part[mid[1]]) / 2.0)
    if k < 1:
        return estimate, 0.0, math.inf
    return estimate, math.exp(part[k - 1]), math.exp(part[m * n - k])


@dataclass(frozen=True)
class Comparison:
    verdict: str                 # REGRESSION | IMPROVEMENT | SAME
    ratio: float                 # median(new) / median(base)
    estimate: float              # the Hodges-Lehmann ratio (the typical pairwise ratio)
    ci: tuple[float, float]      # its interval, at ci_level
    ci_level: float              # 1 - 2 alpha: lower bound > 1 exactly when the one-sided test at alpha says slower
    p_slower: float              # one-sided U test: new tends to be slower
    p_faster: float
    tolerance: float
    alpha: float
    margin: float
    n_base: int
    n_new: int

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ci"] = list(self.ci)
        return d

    def text(self) -> str:
        lo, hi = self.ci
        return (f"{self.ratio:.3f}x (HL {self.estimate:.3f}x, {self.ci_level:.0%} CI [{lo:.3f}, {hi:.3f}], "
                f"p {min(self.p_slower, self.p_faster):.2g}, n {self.n_base}/{self.n_new})")


def compare(base_samples, new_samples, tolerance: float = 0.10, alpha: float = 0.01, margin: float = 0.75
            ) -> Comparison:
    """Is `new` slower (REGRESSION) or faster (IMPROVEMENT) than `base`, beyond `tolerance`?
    REGRESSION needs median(new)/median(base) > 1 + tolerance, the one-sided U test at alpha and
    the ratio's interval wholly above 1 + margin * tolerance; IMPROVEMENT the mirror image on the
    log scale (ratio below 1 / (1 + tolerance), interval below 1 / (1 + margin * tolerance)).
    Anything else is SAME."""
    if not tolerance >= 0 or not 0 < alpha < 0.5 or not 0 <= margin <= 1:
        raise ValueError(f"tolerance {tolerance!r} must be >= 0, alpha {alpha!r} in (0, 0.5), margin {margin!r} in [0, 1]")
    b, a = _as_samples(base_samples), _as_samples(new_samples)
    ratio = float(np.median(a) / np.median(b))
    level = 1 - 2 * alpha
    estimate, lo, hi = ratio_interval(b, a, level)
    p_slower, p_faster = mann_whitney(b, a)
    verdict = SAME
    floor = 1 + margin * tolerance
    if ratio > 1 + tolerance and p_slower < alpha and lo > floor:
        verdict = REGRESSION
    elif ratio < 1 / (1 + tolerance) and p_faster < alpha and hi < 1 / floor:
        verdict = IMPROVEMENT
    return Comparison(verdict, ratio, estimate, (lo, hi), level, p_slower, p_faster, tolerance, alpha, margin,
                      int(b.size), int(a.size))
