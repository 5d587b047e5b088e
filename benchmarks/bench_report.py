"""How long report.html takes to render for a big run: 4,000 and 40,000 records.

    .venv/bin/python benchmarks/bench_report.py [--sizes 4000,40000] [--repeat 3]

The records are tests/reporting_fixtures.many_records(): every operator, two families, judged
metrics, perf fields (launch times, bytes moved, limit), digests, eight devices. Prints, per size,
the first render in this process (it imports matplotlib and compiles the template; a run does
both in the background while its cases run: html.prepare()) and the best of --repeat later ones,
each as wall and CPU seconds, and the CPU seconds of its two plotting parts (the metric plots and
the perf plots, each with the views it draws from; the rest is the template and the tables). On a shared machine the CPU time is the steadier
figure. A benchmark, not a test: it prints numbers and judges nothing.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.reporting_fixtures import many_records, write_run  # noqa: E402


def _timed(fn, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4000,40000", help="record counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="renders after the first, per size (the best is shown)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    from harness.reporting import html
    from harness.reporting.runs import Report, load_run
    print(f"import harness.reporting.html: {time.perf_counter() - t0:.2f} s (matplotlib not yet)")
    _, wall, cpu = _timed(__import__, "harness.reporting.plots")
    print(f"import matplotlib (harness.reporting.plots): {wall:.2f} s wall, {cpu:.2f} s CPU")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in a.sizes.split(",")):
            run = load_run(write_run(Path(tmp) / f"run{n}", many_records(n)))
            report = Report(f"bench {n}", [run], run.records)
            page, wall, cpu = _timed(html.render, report)
            print(f"{n:>6} records: first render {wall:.2f} s wall, {cpu:.2f} s CPU, {len(page) / 1e6:.2f} MB, "
                  f"{page.count('<svg')} plots")
            best = min((_timed(html.render, report)[1:] for _ in range(a.repeat)), key=lambda t: t[1])
            parts = {name: min(_timed(fn, report)[2] for _ in range(a.repeat))
                     for name, fn in (("metric plots", html.metric_plots), ("perf plots", html.perf_plots))}
            print(f"{n:>6} records: best of {a.repeat} renders {best[0]:.2f} s wall, {best[1]:.2f} s CPU; of which "
                  + ", ".join(f"{k} {v:.2f} s CPU" for k, v in parts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
