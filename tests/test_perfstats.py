"""The statistics of perf gating (harness/core/perfstats.py) on seeded synthetic launch times that
model the shared 2-core machine (tests/reporting_fixtures.py: launch_times, noisy_machine):
lognormal noise of 2-20 %, 0-20 % of launches 2-10x slower, medians drifting by up to 3 % within a
measurement and 1 % between measurements. Each rate is printed (pytest -s shows it)."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from harness.core import perfstats as ps
from tests.reporting_fixtures import launch_times, noisy_machine

PAIRS = 500


# ------------------------------------------------------------------ the median and its interval

def test_the_median_interval_is_the_binomial_order_statistics():
    assert ps.median_ci_ranks(10) == (2, 9, pytest.approx(1 - 2 * 11 / 1024))     # P(B <= 1) = 11/1024
    assert ps.median_ci_ranks(100)[:2] == (40, 61)                                # the textbook pair
    assert ps.median_ci_ranks(5) == (1, 5, pytest.approx(1 - 2 / 32))             # no pair reaches 95 %
    assert ps.min_n_for() == 6
    s = ps.summarize([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])
    assert (s["median_ms"], s["min_ms"], s["n"], s["ci_ms"]) == (5.5, 1.0, 10, [2.0, 9.0])
    assert s["p10_ms"] == pytest.approx(1.9) and s["p90_ms"] == pytest.approx(9.1) and s["ci_level"] > 0.95


def test_the_median_interval_covers_the_true_median_at_its_level():
    """Lognormal(0, 0.3) has median 1. The interval of 25 launches covers it in ~95.7 % of draws
    (its exact level); one rank narrower on each side (planted below) covers visibly less."""
    rng = np.random.default_rng(11)
    draws = np.sort(rng.lognormal(0, 0.3, (4000, 25)), axis=1)
    l, u, level = ps.median_ci_ranks(25)
    covered = np.mean((draws[:, l - 1] <= 1) & (draws[:, u - 1] >= 1))
    narrower = np.mean((draws[:, l] <= 1) & (draws[:, u - 2] >= 1))
    print(f"\ncoverage {covered:.4f} (exact level {level:.4f}); one rank narrower {narrower:.4f}")
    assert abs(covered - level) < 0.01 and covered >= 0.945
    assert narrower < 0.94


def test_bad_samples_are_refused():
    for bad in ([], [1.0, 0.0], [1.0, float("nan")], [1.0, -2.0], [float("inf")]):
        with pytest.raises(ValueError):
            ps.summarize(bad)
        with pytest.raises(ValueError):
            ps.compare([1.0, 1.1, 1.2], bad or [])


# ------------------------------------------------------------------ the rank test and the ratio

def test_mann_whitney_by_hand_and_with_ties():
    # U = 9 (every new launch slower), mean 4.5, variance 9 * 7 / 12: z = (9 - 4.5 - 0.5) / sqrt(5.25)
    phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))
    slower, faster = ps.mann_whitney([1, 2, 3], [4, 5, 6])
    assert slower == pytest.approx(1 - phi(4 / math.sqrt(5.25)), rel=1e-9)
    assert faster == pytest.approx(phi(5 / math.sqrt(5.25)), rel=1e-9)
    assert ps.mann_whitney([4, 5, 6], [1, 2, 3]) == pytest.approx((faster, slower))
    assert ps.mann_whitney([2.0] * 5, [2.0] * 7) == (1.0, 1.0)                  # all tied: no evidence
    # mid-ranks 2 (three 1s), 5 (three 2s), 8.5 (four 3s): U = 5 + 4 * 8.5 - 15 = 24; the ties
    # (3, 3, 4) shrink the variance from 25 * 11 / 12 to 25 / 12 * (11 - 108 / 90)
    tied = ps.mann_whitney([1, 1, 1, 2, 2], [2, 3, 3, 3, 3])[0]
    assert tied == pytest.approx(1 - phi(11 / math.sqrt(25 / 12 * (11 - 108 / 90))), rel=1e-9)


def test_the_ratio_interval_brackets_a_pure_scale_change():
    rng = np.random.default_rng(5)
    base = launch_times(rng, 60, sigma=0.05)
    c = ps.compare(base, launch_times(rng, 60, 1.3, sigma=0.05))
    assert c.verdict == ps.REGRESSION and c.ci[0] < 1.3 < c.ci[1] and abs(c.estimate - 1.3) < 0.03
    assert c.ci_level == pytest.approx(0.98) and c.p_slower < 1e-10
    back = ps.compare(launch_times(rng, 60, 1.3, sigma=0.05), base)
    assert back.verdict == ps.IMPROVEMENT and back.ci[1] < 1


def test_too_few_launches_can_decide_nothing():
    far = ps.compare([1.0, 1.01, 1.02, 1.03], [5.0, 5.1, 5.2, 5.3])
    assert far.verdict == ps.SAME and far.ci == (0.0, math.inf) and far.p_slower > 0.01
    assert ps.compare([1.0, 1.01, 1.02, 1.03, 1.04], [5.0, 5.1, 5.2, 5.3, 5.4]).verdict == ps.REGRESSION


# ------------------------------------------------------------------ rates on the machine model

# How the runner samples: launch by launch until the stopping rule says so. A launch takes about
# 1 ms plus 0.5 ms of host overhead, so the budget allows ~130 launches: quiet cases stop early
# with a 2 % interval, noisy ones at the budget with a wider one (10-30: a tight budget).
RULE = ps.StoppingRule(min_n=20, max_n=200, rel_halfwidth=0.02, budget_s=0.2)
TIGHT = ps.StoppingRule(min_n=10, max_n=30, rel_halfwidth=0.02, budget_s=0.02)


def _measure(rule: ps.StoppingRule, rng, median: float, noise: dict, overhead_ms: float = 0.5) -> np.ndarray:
    """One measurement as the runner takes it: (launch times, why it stopped)."""
    pool = launch_times(rng, rule.max_n, median, **noise)       # the machine's noise for this measurement
    elapsed = 0.0
    for n in range(1, rule.max_n + 1):
        elapsed += (pool[n - 1] + overhead_ms) / 1000
        if rule.done(pool[:n], elapsed):
            return pool[:n]
    raise AssertionError("the stopping rule never stopped")


@functools.lru_cache(maxsize=None)
def _cases(shift: float, tag: int, outliers: bool = True, rule: ps.StoppingRule = RULE) -> tuple:
    """PAIRS cases, each with its own noise: (baseline, first, re-measured) launch times of a
    kernel `shift` times slower than the baseline's."""
    out = []
    for i in range(PAIRS):
        rng = np.random.default_rng([tag, i])
        noise = noisy_machine(rng) | ({} if outliers else {"outliers": 0.0})
        out.append(tuple(_measure(rule, rng, m, noise) for m in (1.0, shift, shift)))
    return tuple(out)


def _count(cases, verdict: str, **kw) -> tuple[int, int]:
    """(flagged by the first measurement, flagged by both: what the perf gate asks for)."""
    once = gated = 0
    for base, first, again in cases:
        a = ps.compare(base, first, **kw).verdict
        once += a == verdict
        if a == verdict:
            gated += ps.compare(base, again, **kw).verdict == verdict
    return once, gated


@pytest.mark.parametrize("rule", [RULE, TIGHT], ids=["20-200 launches", "10-30 launches"])
def test_no_false_regression_on_one_distribution(rule):
    cases = _cases(1.0, 1, rule=rule)
    reg, imp = _count(cases, ps.REGRESSION), _count(cases, ps.IMPROVEMENT)
    significant = sum(ps.compare(b, f).p_slower < 0.01 for b, f, _ in cases)
    naive = sum(np.median(f) / np.median(b) > 1.10 for b, f, _ in cases)
    launches = np.median([len(b) for b, _, _ in cases])
    print(f"\n{PAIRS} same-distribution pairs, median {launches:g} launches: REGRESSION once {reg[0]}, gated {reg[1]}; "
          f"IMPROVEMENT once {imp[0]}, gated {imp[1]}; the rank test alone at 1 %: {significant}; "
          f"ratio of medians > 1.10 alone: {naive}")
    assert reg[1] == 0 and imp[1] == 0                      # what the gate reports: never
    assert reg[0] <= PAIRS * 0.01 and imp[0] <= PAIRS * 0.01  # one measurement: within alpha
    # the noise is real: the machine's drift makes two measurements of one kernel differ more often
    # than alpha says, so the rank test alone would flap on these very pairs
    assert significant >= 5


def test_a_1_3x_slowdown_is_flagged_in_nearly_every_case():
    once, gated = _count(_cases(1.3, 2), ps.REGRESSION)
    print(f"\n1.3x: flagged once {once}/{PAIRS}, gated (repeated) {gated}/{PAIRS}")
    assert gated >= 0.97 * PAIRS


def test_a_1_05x_slowdown_is_not_flagged_at_the_default_tolerance():
    cases = _cases(1.05, 3, outliers=False)
    once, gated = _count(cases, ps.REGRESSION)
    literal = _count(cases, ps.REGRESSION, margin=0.0)
    strict = _count(cases, ps.REGRESSION, tolerance=0.02)
    print(f"\n1.05x: flagged once {once}, gated {gated}; with the interval only above 1 (margin 0): once "
          f"{literal[0]}, gated {literal[1]}; at a 2 % tolerance: gated {strict[1]} of {PAIRS}")
    assert (once, gated) == (0, 0)
    assert literal[1] > 0              # the interval only above 1 lets real 5 % slowdowns through, repeated
    assert strict[1] >= 0.3 * PAIRS    # the same shift is found once the tolerance is below it


def test_a_1_05x_slowdown_among_outliers():
    """With 5-20 % of launches 2-10x slower, a median moves with the share of outliers a
    measurement happened to catch; a baseline that caught few is shared by both comparisons,
    so the re-measurement cannot undo it (perfstats' docstring): the margin must cover it too."""
    once, gated = _count(_cases(1.05, 3), ps.REGRESSION)
    print(f"\n1.05x among outliers: flagged once {once}, gated {gated} of {PAIRS}")
    assert gated == 0 and once <= 0.004 * PAIRS


def test_too_few_launches_miss_a_1_3x_slowdown():
    """What the gate cannot do: a budget that allows 10-30 launches of this noise leaves the
    interval too wide to call half of the 1.3x slowdowns (the stopping statistics in summary.md
    show such a run)."""
    once, gated = _count(_cases(1.3, 2, rule=TIGHT), ps.REGRESSION)
    print(f"\n1.3x with 10-30 launches: flagged once {once}, gated {gated} of {PAIRS}")
    assert gated < 0.8 * PAIRS


# ------------------------------------------------------------------ when to stop sampling

def _sample(rule: ps.StoppingRule, rng, overhead_ms: float = 0.5, **noise) -> tuple[int, str]:
    """Launch by launch as the runner does it: (launches, why it stopped); a launch costs its
    time plus the host's overhead."""
    times, elapsed = [], 0.0
    while True:
        t = float(launch_times(rng, 1, **noise)[0])
        times.append(t)
        elapsed += (t + overhead_ms) / 1000
        reason = rule.done(times, elapsed)
        if reason:
            return len(times), reason


def test_the_stopping_rule_stops_early_on_quiet_data_and_at_the_budget_on_noisy_data():
    rule = ps.StoppingRule(min_n=20, max_n=10_000, rel_halfwidth=0.02, budget_s=0.5)
    rng = np.random.default_rng(3)
    quiet = [_sample(rule, rng, sigma=0.01) for _ in range(20)]
    noisy = [_sample(rule, rng, sigma=0.3, outliers=0.2) for _ in range(5)]
    print(f"\nquiet: {quiet[:5]}...; noisy: {noisy}")
    assert all(r == ("ci") and n == 20 for n, r in quiet)          # at 1 % noise, min_n is precise enough
    assert all(r == "budget" and n > 100 for n, r in noisy)
    capped = ps.StoppingRule(min_n=20, max_n=60, rel_halfwidth=0.02, budget_s=100.0)
    assert _sample(capped, rng, sigma=0.3) == (60, "max_n")


def test_the_stopping_rule_never_stops_before_its_floor():
    rule = ps.StoppingRule(min_n=20, max_n=100, rel_halfwidth=0.5, budget_s=0.001)
    assert rule.done([1.0] * 19, elapsed_s=10.0) is None              # past the budget, but below min_n
    assert rule.done([1.0] * 20, elapsed_s=10.0) == "ci"
    with pytest.raises(ValueError, match="at least 6"):
        ps.StoppingRule(min_n=5)
    with pytest.raises(ValueError, match="below min_n"):
        ps.StoppingRule(min_n=20, max_n=10)
