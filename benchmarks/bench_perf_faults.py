"""How much slower each perf fault of the software CANN makes the cases it hits, and the ones it spares.

    .venv/bin/python benchmarks/bench_perf_faults.py [--rounds 9] [--fault NAME ...]

For every fault of tests/swcann_timing.PERF_FAULTS (a case its condition hits, one it leaves
alone) the fault-free and the faulty library take turns for --rounds rounds, each round
re-initialising ACL (SWCANN_FAULTS is read at aclInit); every launch is timed with ACL events
through harness/acl/events.py, which on the software CANN measure the kernel's thread CPU time.
Prints, per fault and case, the median fault-free time, the median of the per-round slowdowns
(faulty / fault-free of the same round) with their spread (min .. max), and the event timing
noise of the fault-free launches (median absolute deviation / median). A benchmark, not a test:
it prints numbers and judges nothing; run it on an otherwise idle machine to compare runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.acl import setenv  # noqa: E402
from swcann import build as swbuild  # noqa: E402
from tests.swcann_timing import PERF_FAULTS  # noqa: E402


def _env(family: str) -> dict[str, str]:
    """A fresh environment with the software CANN's set_env.sh applied, on `family`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SWCANN_")}
    env = setenv.sourced_environment(swbuild.build() / "set_env.sh", base)
    env.update(PYTHONPATH=str(REPO), SWCANN_SOC=family)
    return env


def _measure(fault: str, rounds: int) -> dict:
    family, hit, spared = PERF_FAULTS[fault]
    job = {"job": "faults", "rounds": rounds, "settings": ["", fault], "cases": [hit, spared]}
    r = subprocess.run([sys.executable, "-m", "tests.swcann_timing", json.dumps(job)], cwd=REPO, env=_env(family),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{fault}: the probe failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _row(label: str, clean: list[dict], faulty: list[dict]) -> str:
    base = [x["ms"] for x in clean]
    ratios = [f["ms"] / c["ms"] for c, f in zip(clean, faulty)]
    med = statistics.median(base)
    noise = statistics.median(abs(x - med) for x in base) / med
    same = len({x["digest"] for x in clean + faulty}) == 1
    return (f"  {label:8s} fault-free {med:8.3f} ms   slowdown {statistics.median(ratios):6.2f}x "
            f"(min {min(ratios):5.2f}, max {max(ratios):6.2f})   noise {noise:5.1%}   "
            f"output {'bit-identical' if same else 'DIFFERS'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--fault", action="append", choices=sorted(PERF_FAULTS), help="only these (repeatable)")
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for fault in args.fault or sorted(PERF_FAULTS):
        family, hit, spared = PERF_FAULTS[fault]
        got = _measure(fault, args.rounds)
        print(f"{fault} ({family}; {args.rounds} rounds)")
        for i, (label, spec) in enumerate((("hit", hit), ("spared", spared))):
            print(_row(label, got[""][i], got[fault][i]) + f"   {spec['op']} {spec['dtype']} {spec['layout']} "
                  f"{'x'.join(map(str, spec['shape']))} k{spec['k']} s{spec['s']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
