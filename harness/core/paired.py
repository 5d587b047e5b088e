"""Paired comparison of two libraries measured in alternating rounds (the perf gate's A/B).

Two libraries timed one after the other are exposed to the same machine only when their launch
series are adjacent in time. On a shared 2-core machine the level moves between states (a
neighbour's burst, the sibling hyperthread busy or idle) that last about as long as one launch
series: with only two rounds per side, pooled, one side could sit in the slow state for both
of its rounds and the other in the fast one, and a library compared with itself read 0.66-1.74x
(benchmarks/bench_perf_noise.py). So the re-measurement alternates many short rounds in ABBA
order (perf/ab.py), and the comparison is paired: each round's ratio of medians
r_i = median(A_i) / median(B_i), and:

* the ratio: the median of the r_i;
* the one-sided sign test of "A slower" (how many r_i are above 1, against Binomial(n, 1/2));
* the interval of the median ratio from the same binomial: the order statistics of the r_i that
  bound it with each tail at most alpha (perfstats.median_ci_ranks at 1 - 2 alpha).

A round pair slowed on one side by a burst moves one r_i, not the verdict: with 20 pairs the
interval holds while 4 of them are off (a Wilcoxon interval, first tried, let one off pair drag
its lower end under the floor: each Walsh average with it is low). A machine state that lasts
across an adjacent pair slows both of its sides and cancels. The verdict follows
perfstats.compare()'s rule: REGRESSION needs the ratio past 1 + tolerance, the test at alpha and
the interval wholly past 1 + margin * tolerance; IMPROVEMENT the mirror image. Fewer than 7 pairs
cannot reach alpha = 0.01 (2^-n > 0.01): such a comparison is SAME, whatever its ratio.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .perfstats import IMPROVEMENT, REGRESSION, SAME, Comparison, median_ci_ranks


def _p_at_least(n: int, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2): the sign test's one-sided p-value of k rounds of n slower."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2.0 ** n


def compare_rounds(base_medians, new_medians, tolerance: float = 0.10, alpha: float = 0.01,
                   margin: float = 0.75) -> Comparison:
    """The paired verdict of rounds (new_medians[i] measured beside base_medians[i]); the
    Comparison's n_base and n_new are the number of rounds."""
    if not tolerance >= 0 or not 0 < alpha < 0.5 or not 0 <= margin <= 1:
        raise ValueError(f"tolerance {tolerance!r} must be >= 0, alpha {alpha!r} in (0, 0.5), margin {margin!r} in [0, 1]")
    b, a = np.asarray(base_medians, dtype=float).ravel(), np.asarray(new_medians, dtype=float).ravel()
    if a.size == 0 or a.size != b.size:
        raise ValueError(f"rounds must pair up: {a.size} against {b.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(a > 0) and np.all(b > 0)):
        raise ValueError("round medians must be finite and positive")
    r = np.sort(a / b)
    n = int(r.size)
    ratio = float(np.median(r))
    p_slower, p_faster = _p_at_least(n, int(np.sum(r > 1))), _p_at_least(n, int(np.sum(r < 1)))
    # too few pairs for the level: the whole range, with its lower coverage (the sign test cannot
    # reach alpha then either, so no verdict rests on it)
    lo_rank, hi_rank, coverage = median_ci_ranks(n, 1 - 2 * alpha)
    lo, hi = float(r[lo_rank - 1]), float(r[hi_rank - 1])
    floor = 1 + margin * tolerance
    verdict = SAME
    if ratio > 1 + tolerance and p_slower < alpha and lo > floor:
        verdict = REGRESSION
    elif ratio < 1 / (1 + tolerance) and p_faster < alpha and hi < 1 / floor:
        verdict = IMPROVEMENT
    return Comparison(verdict, ratio, ratio, (lo, hi), round(coverage, 6), p_slower, p_faster, tolerance, alpha,
                      margin, n, n)


def settled(ratios, rounds: int, tolerance: float, alpha: float = 0.01, margin: float = 0.75) -> bool:
    """Whether the verdict of `rounds` pairs is already decided by the first ratios (A over B),
    whatever the rest show: each condition of a REGRESSION only grows as a ratio grows, and of an
    IMPROVEMENT as one shrinks, so the verdicts with every pair still to come at either extreme
    bound all the others. Exact: stopping here changes no verdict (a library against itself
    stops after 5 equal pairs; a real change needs 16 of 20)."""
    known = [float(r) for r in ratios]
    left = rounds - len(known)
    if left <= 0:
        return True
    base = [1.0] * rounds
    high = compare_rounds(base, known + [1e12] * left, tolerance, alpha, margin).verdict
    low = compare_rounds(base, known + [1e-12] * left, tolerance, alpha, margin).verdict
    return high == low


def compare_design(base_medians, new_medians, rounds: int, tolerance: float = 0.10, alpha: float = 0.01,
                   margin: float = 0.75) -> Comparison:
    """The verdict of a design of `rounds` pairs that stopped early once settled (settled()): the
    numbers of the pairs measured, the verdict the whole design would give. A design stopped before
    its verdict was settled decides nothing: ValueError."""
    measured = compare_rounds(base_medians, new_medians, tolerance, alpha, margin)
    if measured.n_new >= rounds:
        return measured
    ratios = [n / b for n, b in zip(new_medians, base_medians)]
    if not settled(ratios, rounds, tolerance, alpha, margin):
        raise ValueError(f"the A/B stopped after {measured.n_new} of {rounds} round pairs, before its verdict was settled")
    whole = compare_rounds([1.0] * rounds, ratios + [1e12] * (rounds - len(ratios)), tolerance, alpha, margin)
    return replace(measured, verdict=whole.verdict)
