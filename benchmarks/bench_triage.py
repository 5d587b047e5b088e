"""How long triage takes on a qualification run's size: about 9,000, 28,000 and 92,000 records.

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
from tests.test_triage import PLANTED, _planted_run  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", default="1,3,10")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    base = _planted_run()
    for copies in (int(c) for c in args.copies.split(",")):
        records = base * copies
        size = len(records)
        walls, cpus, found = [], [], None
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            t = triage(records)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            found = bool(t.causes) and t.causes[0].predicate == PLANTED
        print(f"{size:>6} records: wall best {min(walls):.2f} s median {statistics.median(walls):.2f} s; "
              f"CPU best {min(cpus):.2f} s median {statistics.median(cpus):.2f} s; planted cause found: {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
