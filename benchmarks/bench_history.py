"""The results store at a year's scale: ingestion rate, one case's timeline, the History section.

    python benchmarks/bench_history.py [--nights 365] [--cases 4000] [--families 6] [--postgres] [--keep DIR]

Synthetic history: every night, every family runs the same --cases cases (5 ops, records shaped as
the suite writes them: status, phase 1, three metrics with thresholds, a digest, perf statistics,
timings); 1 % of cases fail on a night, one case per family fails from night N/2 on, one op drifts
slower by 0.5 % a night over the last 30 nights, one case's bits change once. Each night of each
family is one run (one transaction), ingested through harness.history.ingest as `--db` does.

Prints (targets of issue 34 in brackets): results/s into SQLite [>= 50,000], one case's timeline
[<= 100 ms], the History section for all families [<= 5 s]; with --postgres the same on a private
PostgreSQL cluster (tests/pg_cluster.py; needs Debian's postgresql). Generating the records is not
timed; ingestion is timed from the records in memory (what a run hands the store when it ends) to
the commit. The load average is printed: figures taken beside other work are not comparable.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.core import families                                          # noqa: E402
from harness.history import open_store                                     # noqa: E402
from harness.history.ingest import RunSource, ingest_one                   # noqa: E402

OPS = ("AvgPool2dBackward", "MaxPool2dWithIndicesBackward", "MaxPool3dWithArgmaxBackward",
       "AdaptiveMaxPool2dBackward", "MaxUnpool3dBackward")
FAMILIES = families.FAMILIES       # the platform's six


def case_ids(n: int) -> list[str]:
    return [f"{OPS[i % len(OPS)]}.group{i % 37}[float32-int32-{i}x3x9x9-ks3x3_s2x2-NCHW-contiguous-uniform]"
            for i in range(n)]


def record(case_id: str, op: str, family: str, night: int, nights: int, rng: random.Random, i: int) -> dict:
    fails = rng.random() < 0.01 or (i == 7 and night >= nights // 2)
    status = "FAIL" if fails else "PASS"
    drift = 1.005 ** max(0, night - (nights - 30)) if op == OPS[0] else 1.0
    median = (0.05 + (i % 50) * 0.01) * drift * (1 + rng.gauss(0, 0.003))
    digest = "sha256:" + ("%064x" % (i * 2654435761 % (1 << 64) + (1 if i == 11 and night >= nights - 10 else 0)))
    return {"schema": 2, "case_id": case_id, "op": op, "group": "g", "kind": "valid", "dtype": "float32",
            "family": family, "status": status, "raw_status": status,
            "reason": "gradInput: FAIL single_bm[float32]: 3 NaN/Inf mismatches" if fails else "",
            "attempts": [status], "phase1": {"status": 0, "expected": 0, "check": None, "message": "", "workspace_size": 0},
            "metrics": [{"name": "abs_eb", "value": rng.random() * 1e-5, "threshold": 6.1e-05, "rule": "<="},
                        {"name": "max_abs_err_small", "value": rng.random() * 1e-4, "threshold": 4.9e-04, "rule": "<="},
                        {"name": "max_rel_err_large", "value": rng.random() * 1e-4, "threshold": 4.9e-04, "rule": "<="}],
            "digests": {"gradInput": digest},
            "timings": {"golden": 0.001, "inputs": 0.0003, "run": 0.006, "phase1": 2e-05, "phase2": 0.005,
                        "compare": 0.0005, "total": 0.01},
            "launch_s": 0.005,
            "perf": None if fails else {"timing": "events", "median_ms": median, "ci_ms": [median * 0.99, median * 1.01],
                                        "n": 40, "samples_ms": []}}


def make_run(family: str, night: int, nights: int, ids: list[str], seed: int) -> RunSource:
    rng = random.Random(seed)
    start = dt.datetime(2026, 1, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=night)
    records = [record(c, OPS[i % len(OPS)], family, night, nights, rng, i) for i, c in enumerate(ids)]
    ident = {"backend": "aclnn", "family": family, "soc_name": family, "cann_version": f"8.{night // 30}.0",
             "host": "bench", "started": start.isoformat(), "ended": (start + dt.timedelta(hours=1)).isoformat(),
             "library_sha256": {"/x/libopapi.so": "%064x" % (night // 7)}, "switches": {}, "suite_commit": "bench"}
    return RunSource(f"/bench/{family}/night-{night:03d}", ident, records, "%064x" % (night // 7),
                     run_id=f"{family}-{night}")


def measure(url: str, nights: int, n_cases: int, families: tuple[str, ...]) -> dict:
    ids = case_ids(n_cases)
    store = open_store(url)
    ingest_s = ingest_cpu = 0.0
    results = 0
    for night in range(nights):
        for k, fam in enumerate(families):
            src = make_run(fam, night, nights, ids, night * 101 + k)
            t0, c0 = time.perf_counter(), time.process_time()
            done = ingest_one(store, src)
            ingest_s += time.perf_counter() - t0
            ingest_cpu += time.process_time() - c0
            results += done.results
        if night % 30 == 29 or night == nights - 1:
            print(f"  night {night + 1}/{nights}: {results:,} results, {results / ingest_s:,.0f} results/s so far",
                  flush=True)
    store.optimize()                 # what ingest() does after its runs (ingest_one, used here, does not)
    from harness.history import section, timeline
    with store.reading() as conn:
        t0 = time.perf_counter()
        points = timeline.timeline(conn, ids[7])
        for fam, ps in points.items():
            timeline.analyse(ids[7], fam, ps)
        one_all = time.perf_counter() - t0
        t0 = time.perf_counter()
        points_one = timeline.timeline(conn, ids[7], families[0])
        one_family = time.perf_counter() - t0
    assert sum(len(p) for p in points.values()) == nights * len(families) and len(points_one[families[0]]) == nights
    t0 = time.perf_counter()
    data = section.section(store, list(families), list(OPS))
    section_data_s = time.perf_counter() - t0
    from harness.reporting import html
    from harness.reporting.runs import Report
    report = Report("bench", [], [], history=data)
    t0 = time.perf_counter()
    html.history(report)
    plots_s = time.perf_counter() - t0
    store.close()
    return {"results": results, "ingest_s": ingest_s, "ingest_cpu_s": ingest_cpu, "rate": results / ingest_s,
            "timeline_all_ms": 1000 * one_all, "timeline_family_ms": 1000 * one_family,
            "section_s": section_data_s + plots_s, "section_query_s": section_data_s, "section_plot_s": plots_s,
            "drifts": data["drifts"], "first_bad": data["first_bad_total"]}


def report(label: str, m: dict, target_fraction: float) -> None:
    print(f"{label}: {m['results']:,} results ingested in {m['ingest_s']:.1f} s ({m['ingest_cpu_s']:.1f} s CPU): "
          f"{m['rate']:,.0f} results/s [target >= 50,000]")
    if target_fraction < 1:
        print(f"  a {target_fraction:.1%} fraction of 8.76 M: at this rate the whole year takes "
              f"{8_760_000 / m['rate']:.0f} s")
    print(f"  one case's timeline: {m['timeline_family_ms']:.1f} ms on one family, {m['timeline_all_ms']:.1f} ms on "
          f"every family with its first-bad analysis [target <= 100 ms]")
    print(f"  History section for {len(FAMILIES)} families: {m['section_s']:.2f} s ({m['section_query_s']:.2f} s "
          f"queries, {m['section_plot_s']:.2f} s plots) [target <= 5 s]; {len(m['drifts'])} drift(s), "
          f"{m['first_bad']} first bad run(s)")
    for line in m["drifts"][:3]:
        print(f"    {line}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nights", type=int, default=365)
    p.add_argument("--cases", type=int, default=4000)
    p.add_argument("--families", type=int, default=6, choices=range(1, 7))
    p.add_argument("--postgres", action="store_true", help="also on a private PostgreSQL cluster")
    p.add_argument("--postgres-only", action="store_true")
    p.add_argument("--keep", help="write the SQLite store here (default: a temporary directory, removed)")
    a = p.parse_args(argv)
    fams = FAMILIES[:a.families]
    fraction = a.nights * a.cases * len(fams) / 8_760_000
    print(f"synthetic history: {a.nights} nights x {len(fams)} families x {a.cases} cases = "
          f"{a.nights * a.cases * len(fams):,} results; load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    if not a.postgres_only:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(a.keep) if a.keep else Path(tmp) / "history.db"
            m = measure(str(path), a.nights, a.cases, fams)
            report("SQLite", m, fraction)
            print(f"  store size: {path.stat().st_size / 1e9:.2f} GB")
    if a.postgres or a.postgres_only:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from tests.pg_cluster import Cluster, missing
        why = missing()
        if why:
            print(f"PostgreSQL: skipped: {why}")
            return 0
        cluster = Cluster("bench")
        try:
            m = measure(cluster.url, a.nights, a.cases, fams)
            report("PostgreSQL", m, fraction)
        finally:
            cluster.stop()
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
