"""The slow-drift detector's statistics: a Mann-Kendall rank test for a monotone trend, Sen's slope
for its size, and a hinge fit for where it began.

Why a rank test: per-night device times are not normal (a right tail from a competing process, an
occasional far night), and a drift is a trend, not a step. Mann-Kendall's S counts, over every pair
of nights, whether the later one is slower; it is distribution-free, one far night moves it by at
most n - 1 of its n(n - 1)/2 pairs, and it sees 3 % a night for ten nights that a 10 % gate
comparing each night with the one before never flags. Without ties its null distribution is that
of inversions of a random permutation (Mahonian numbers), computed exactly here (no SciPy in the
environment); with ties (modelled device time repeats itself exactly) the normal approximation with
the tie-corrected variance and a continuity correction, as Kendall (1975) gives it.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

EXACT_MAX_N = 60          # exact null distribution up to here (1,770 pairs); normal beyond


@dataclass(frozen=True)
class Trend:
    n: int
    s: int                # Mann-Kendall S: concordant minus discordant pairs (later larger: +1)
    p_up: float           # one-sided p-value of "no trend" against "increasing"
    exact: bool
    slope: float          # Sen's slope: the median of the pairwise slopes (per step)


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def mk_s(values: list[float]) -> int:
    n = len(values)
    return sum(_sign(values[j] - values[i]) for i in range(n) for j in range(i + 1, n))


@functools.lru_cache(maxsize=None)
def _mahonian(n: int) -> tuple[int, ...]:
    """counts[k]: permutations of n elements with k inversions."""
    counts = [1]
    for m in range(2, n + 1):
        width = len(counts) + m - 1
        out, window = [0] * width, 0
        for k in range(width):
            window += counts[k] if k < len(counts) else 0
            if k - m >= 0:
                window -= counts[k - m]
            out[k] = window
        counts = out
    return tuple(counts)


def _p_up_exact(n: int, s: int) -> float:
    """P(S >= s) under no trend, no ties: S = pairs - 2 * inversions."""
    pairs = n * (n - 1) // 2
    counts = _mahonian(n)
    # S >= s  <=>  inversions <= (pairs - s) / 2
    limit = (pairs - s) // 2
    return sum(counts[:limit + 1]) / math.factorial(n)


def _p_up_normal(values: list[float], s: int) -> float:
    n = len(values)
    ties: dict = {}
    for v in values:
        ties[v] = ties.get(v, 0) + 1
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties.values())) / 18
    if var <= 0:
        return 1.0
    z = (s - 1) / math.sqrt(var) if s > 0 else (s + 1) / math.sqrt(var) if s < 0 else 0.0
    return 0.5 * math.erfc(z / math.sqrt(2))


def sen_slope(values: list[float]) -> float:
    slopes = [(values[j] - values[i]) / (j - i) for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(slopes) if slopes else 0.0


def mann_kendall(values: list[float]) -> Trend:
    n = len(values)
    s = mk_s(values)
    exact = n <= EXACT_MAX_N and len(set(values)) == n
    p = _p_up_exact(n, s) if exact else _p_up_normal(values, s)
    return Trend(n, s, min(1.0, max(0.0, p)), exact, sen_slope(values))


def hinge_onset(values: list[float]) -> int:
    """The index where a flat-then-rising series starts to rise: the k minimising the squared error
    of `flat up to k - 1, then a straight line from k - 1 on` (k = 0: a line from the start). The
    first night of a slowdown, not the middle of it (which a step test such as Pettitt's would give)."""
    n = len(values)
    best, best_k = math.inf, 0
    for k in range(0, n - 1):
        # flat level a = mean of values[:k] (k = 0: none), then a + b * (t - (k - 1)) for t >= k
        flat = values[:k]
        a = statistics.fmean(flat) if flat else None
        tail = list(range(k, n))
        if a is None:       # a straight line through all points
            mt, mv = statistics.fmean(tail), statistics.fmean(values)
            den = sum((t - mt) ** 2 for t in tail)
            b = sum((t - mt) * (values[t] - mv) for t in tail) / den if den else 0.0
            sse = sum((values[t] - (mv + b * (t - mt))) ** 2 for t in tail)
        else:
            xs = [t - (k - 1) for t in tail]
            den = sum(x * x for x in xs)
            b = max(0.0, sum(x * (values[t] - a) for x, t in zip(xs, tail)) / den) if den else 0.0
            sse = sum((v - a) ** 2 for v in flat) + sum((values[t] - a - b * x) ** 2 for x, t in zip(xs, tail))
        if sse < best - 1e-15:
            best, best_k = sse, k
    return best_k
