"""Perf trends per operator and family, and the slow drifts each night's gate misses.

Per run (a night, or a shard of one) an operator's value is the median over its measured cases of
each case's median launch time relative to that case's own first measurement in the window (so
cases of every size weigh alike and a case that joins later does not move the level), with the
medians of the cases' 95 % intervals taken the same way. Times of different kinds (device events,
modelled, CPU time: `perf.timing`) are never mixed: each kind is a series of its own.

A drift is a series that rises steadily (Mann-Kendall, one-sided, rank.py says why) by at least
`min_change` over the window. It is reported with Sen's slope per run, where it began (the hinge
fit's onset), the change since then, and its largest run-over-run step: a step below the gate's
tolerance is one no night's gate against the night before would flag.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from . import rank, runs as runs_mod
from .schema import cases, results

ALPHA = 0.01
MIN_CHANGE = 0.05          # 5 % over the window: smaller steady changes are listed as trends, not drifts
GATE_TOLERANCE = 0.10      # the perf gate's default tolerance (README "Performance mode")
MIN_RUNS = 8               # fewer points say nothing about a trend


@dataclass
class Night:
    run: runs_mod.RunRow
    cases: int
    ratio: float              # median over the cases of median / the case's first median in the window
    low: float | None
    high: float | None
    median_ms: float          # median over the cases of their median launch time (for reading, not comparing)

    def to_dict(self) -> dict:
        return {**self.run.brief(), "cases": self.cases, "ratio": self.ratio, "low": self.low, "high": self.high,
                "median_ms": self.median_ms}


@dataclass
class PerfTrend:
    op: str
    family: str
    timing: str
    nights: list[Night]
    trend: rank.Trend | None
    onset: int | None = None          # index into nights where the rise began
    slope_pct: float = 0.0            # per run, from Sen's slope of the log ratios after the onset
    change_pct: float = 0.0           # last run over the run before the onset
    max_step_pct: float = 0.0         # largest run-over-run rise
    drift: bool = False
    tolerance: float = GATE_TOLERANCE

    @property
    def missed_by_gate(self) -> bool:
        return self.drift and self.max_step_pct < 100 * self.tolerance

    def to_dict(self) -> dict:
        t = self.trend
        return {"op": self.op, "family": self.family, "timing": self.timing, "drift": self.drift,
                "missed_by_nightly_gate": self.missed_by_gate,
                "runs": len(self.nights), "p": t.p_up if t else None, "s": t.s if t else None,
                "exact": t.exact if t else None, "slope_pct_per_run": round(self.slope_pct, 4),
                "change_pct": round(self.change_pct, 4), "max_step_pct": round(self.max_step_pct, 4),
                "onset": self.nights[self.onset].run.brief() if self.onset is not None else None,
                "before_onset": self.nights[self.onset - 1].run.brief() if self.onset else None,
                "nights": [n.to_dict() for n in self.nights]}

    def line(self) -> str:
        t = self.trend
        head = f"{self.op} on {self.family} ({self.timing}, {len(self.nights)} run(s))"
        if t is None:
            return f"{head}: too few runs for a trend (at least {MIN_RUNS})"
        stat = f"Mann-Kendall S={t.s}, p={t.p_up:.2g}{' exact' if t.exact else ''}"
        if not self.drift:
            return f"{head}: no drift ({stat}; {self.change_pct:+.1f} % over the window)"
        onset = self.nights[self.onset].run if self.onset is not None else None
        gate = (f"largest run-over-run step {self.max_step_pct:+.1f} %: below the gate's {100 * self.tolerance:.0f} % "
                "tolerance, so no night's gate against the night before flags it") if self.missed_by_gate else \
            f"largest run-over-run step {self.max_step_pct:+.1f} %"
        return (f"SLOW DRIFT {head}: {self.slope_pct:+.2f} % per run since {onset.text() if onset else '?'}, "
                f"{self.change_pct:+.1f} % in all ({stat}); {gate}")


def _measured(conn, run_ids: list[int], op: str | None, stride: int = 1):
    from sqlalchemy import select
    c = results.c
    q = (select(cases.c.op, c.case, c.run, c.perf_timing, c.perf_median_ms, c.perf_ci_low_ms, c.perf_ci_high_ms)
         .join(cases, cases.c.id == c.case)
         .where(c.run.in_(run_ids), c.perf_median_ms.is_not(None), c.perf_median_ms > 0))
    if op:
        q = q.where(cases.c.op == op)
    if stride > 1:
        q = q.where(c.case % stride == 0)
    return conn.execute(q).all()        # fetchall: a tenth of the cost of iterating row by row


def _stride(conn, run_ids: list[int], max_cases: int | None) -> int:
    """Every k-th case (by store id) so that about max_cases are read per family: the median of
    that many cases' ratios moves less than their own intervals, and a report of a 4,000-case sweep
    reads a thousand cases' 30 nights instead of 120,000 rows per family."""
    if not max_cases:
        return 1
    from sqlalchemy import func, select
    c = results.c
    measured = conn.execute(select(func.count()).where(c.run == run_ids[-1], c.perf_median_ms.is_not(None))).scalar()
    return max(1, -(-(measured or 0) // max_cases))


def trends(conn, family: str | None = None, op: str | None = None, window: int = 30, alpha: float = ALPHA,
           min_change: float = MIN_CHANGE, tolerance: float = GATE_TOLERANCE,
           max_cases: int | None = None) -> list[PerfTrend]:
    """max_cases: read about this many cases per family (every k-th), for a report's section; the
    command reads every case."""
    out: list[PerfTrend] = []
    for fam in ([family] if family else runs_mod.families(conn)):
        fam_runs = runs_mod.window(runs_mod.of_family(conn, fam), window)
        if not fam_runs:
            continue
        order = {r.id: i for i, r in enumerate(fam_runs)}
        series: dict[tuple, dict[int, dict]] = {}        # (op, timing) -> case -> run index -> (median, lo, hi)
        ids = [r.id for r in fam_runs]
        for name, case, run, timing, median, lo, hi in _measured(conn, ids, op, _stride(conn, ids, max_cases)):
            series.setdefault((name, timing or "unknown"), {}).setdefault(case, {})[order[run]] = (median, lo, hi)
        for (name, timing), per_case in sorted(series.items()):
            out.append(_trend(name, fam, timing, fam_runs, per_case, alpha, min_change, tolerance))
    return sorted(out, key=lambda t: (not t.drift, t.family, t.op))


def _trend(op, fam, timing, fam_runs, per_case, alpha, min_change, tolerance) -> PerfTrend:
    nights_raw: dict[int, list] = {}
    for values in per_case.values():
        first = min(values)
        ref = values[first][0]
        for i, (median, lo, hi) in values.items():
            nights_raw.setdefault(i, []).append((median / ref, lo / ref if lo else None, hi / ref if hi else None,
                                                 median))
    nights = []
    for i in sorted(nights_raw):
        xs = nights_raw[i]
        lows, highs = [x[1] for x in xs if x[1]], [x[2] for x in xs if x[2]]
        nights.append(Night(fam_runs[i], len(xs), statistics.median(x[0] for x in xs),
                            statistics.median(lows) if lows else None, statistics.median(highs) if highs else None,
                            statistics.median(x[3] for x in xs)))
    trend = PerfTrend(op, fam, timing, nights, None, tolerance=tolerance)
    if len(nights) < MIN_RUNS:
        return trend
    logs = [math.log(n.ratio) for n in nights]
    trend.trend = rank.mann_kendall(logs)
    steps = [b - a for a, b in zip(logs, logs[1:])]
    trend.max_step_pct = 100 * (math.exp(max(steps)) - 1) if steps else 0.0
    onset = rank.hinge_onset(logs)
    rising = logs[max(onset - 1, 0):]
    trend.onset = onset
    trend.slope_pct = 100 * (math.exp(rank.sen_slope(rising)) - 1) if len(rising) > 1 else 0.0
    trend.change_pct = 100 * (math.exp(logs[-1] - logs[max(onset - 1, 0)]) - 1)
    trend.drift = trend.trend.p_up < alpha and trend.change_pct >= 100 * min_change
    return trend
