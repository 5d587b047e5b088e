"""How long triage takes on a qualification run's size: about 9,000, 28,000 and 92,000 records, and
the issue's 10,000 records with 2,000 failures (--many is always run last).

    .venv/bin/python benchmarks/bench_triage.py [--copies 1,3,10] [--repeat 3]

The records are tests/test_triage.py's planted run (41 failures of one slice among passing cases of
every op and family, about 9,200 records), whole copies of it. Prints, per size, the best and median of --repeat runs
as wall and CPU seconds, split into reading the features and the search, and whether the planted
cause came out. On a shared machine the CPU time is the steadier figure. A benchmark, not a test:
it prints numbers and judges nothing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.triage import triage  # noqa: E402
from tests.test_triage import OP, OTHER_OP, PLANTED, _fail_numeric, _planted_run  # noqa: E402


# many(): the size, 10,000 records of which 2,000 fail, in four slices of 320-512 (each a
# different signature, so four searches) and 40 scattered crashes that no predicate explains
MANY_SLICES = (
    ("FAIL", lambda r: r["op"] == OTHER_OP and r["dtype"] == "float16" and r["attrs"]["stride"][1] == 1),
    ("CRASH", lambda r: r["family"] == "ascend910b" and r["shape"][3] % 16 == 5),
    ("TIMEOUT", lambda r: r["op"] == OP and r["dtype"] == "bfloat16" and r["shape"][2] == 12
     and r["attrs"]["stride"][0] == 2),
    ("NAN", lambda r: r["family"] == "ascend950" and r["op"] == OTHER_OP and r["attrs"]["stride"] == [2, 3]),
)


def many(size: int = 10_000, failures: int = 2_000) -> list[dict]:
    """`size` records, `failures` of them failing: MANY_SLICES, then scattered crashes."""
    base = (_planted_run(0) * (size // 9_000 + 1))[:size]
    out, n = [], 0
    for i, r in enumerate(base):
        kind = next((k for k, hit in MANY_SLICES if hit(r)), None)
        if kind and n < failures - 40:
            r = _fail_numeric(r) if kind == "FAIL" else dict(r, status=kind, raw_status=kind) if kind != "NAN" else \
                dict(_fail_numeric(r), metrics=[{"name": "nan_inf_mismatch", "value": 3, "threshold": 0, "rule": "<="}])
            n += 1
        out.append(dict(r, case_id=f"{r['case_id']}~{i}"))
    passing = [i for i, r in enumerate(out) if r["status"] == "PASS"]
    need = max(0, failures - n)
    for i in passing[::max(1, len(passing) // need)][:need] if need else []:
        out[i] = dict(out[i], status="CRASH", raw_status="CRASH", signal="SIGBUS")
    return out


def _timed(records: list[dict], repeat: int):
    walls, cpus, t = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        t = triage(records)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return t, (f"wall best {min(walls):.2f} s median {statistics.median(walls):.2f} s; "
               f"CPU best {min(cpus):.2f} s median {statistics.median(cpus):.2f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", default="1,3,10")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    base = _planted_run()
    for copies in (int(c) for c in args.copies.split(",")):
        records = base * copies
        t, said = _timed(records, args.repeat)
        found = bool(t.causes) and t.causes[0].predicate == PLANTED
        print(f"{len(records):>6} records: {said}; planted cause found: {found}")
    records = many()
    failing = sum(r["status"] != "PASS" for r in records)
    t, said = _timed(records, args.repeat)
    print(f"{len(records):>6} records, {failing:,} failing in {len(MANY_SLICES)} slices and scattered crashes: {said}; "
          f"{len(t.causes)} cause(s): " + "; ".join(f"{c.text} ({c.explained}, {c.signature})" for c in t.causes)
          + f"; unexplained: {sum(u.failures for u in t.unexplained)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
