"""The History section of a report (report.html, when the run or merge was given --db): for the
report's families and operators, the pass rate over time, the perf trends with the slow drifts, the
cases with a first bad run, and the flaky cases. Plain data: harness/reporting draws and prints it.
"""
from __future__ import annotations

from . import flakes as flakes_mod, pass_rate, perf, timeline
from .store import Store

PASS_RATE_RUNS = 90          # the pass-rate plot's runs per family (a quarter of nights)
TREND_WINDOW = 30
FLAKE_WINDOW = 60
LISTED = 50                  # first bad runs and flaky cases listed (the CLI lists all)
# a case that failed once in 60 runs is listed by `history flakes`; the report lists those failing twice or more
TREND_CASES = 500            # cases read per family for the trend plots (perf.trends: every k-th case)


def section(store: Store, families: list[str], ops: list[str]) -> dict:
    """The section's data for these families (all the store has when none is given) and operators."""
    with store.reading() as conn:
        from . import runs as runs_mod
        fams = [f for f in families if f] or runs_mod.families(conn)
        rates, trends, bad, flaky, sizes = {}, [], [], [], {}
        for fam in fams:
            rates.update(pass_rate.pass_rates(conn, fam, PASS_RATE_RUNS))
            trends += [t for t in perf.trends(conn, fam, window=TREND_WINDOW, max_cases=TREND_CASES) if not ops or t.op in ops]
            bad += timeline.first_bad_runs(conn, fam, window=TREND_WINDOW)
            f = flakes_mod.flakes(conn, fam, FLAKE_WINDOW, min_failures=2, most=4 * LISTED)
            flaky += f.flaky
            sizes.update(f.families)
    flakes = flakes_mod.Flakes(FLAKE_WINDOW, sizes, sorted(flaky, key=lambda x: (-x.rate, x.family, x.case_id)), [])
    return {"store": store.description, "families": fams,
            "pass_rates": {fam: [p.to_dict() for p in points] for fam, points in rates.items()},
            "trends": [t.to_dict() for t in trends],
            "drifts": [t.line() for t in trends if t.drift],
            "first_bad": [{**f.to_dict(), "lines": f.lines()} for f in bad[:LISTED]], "first_bad_total": len(bad),
            "flakes": flakes.to_dict(), "flake_lines": flakes.lines()[:LISTED + 1],
            "trend_window": TREND_WINDOW, "flake_window": FLAKE_WINDOW}
