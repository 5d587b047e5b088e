"""How long a run takes to stop after SIGTERM: the time from the signal to the exit of the pytest
process, with its reports written (a CI runner, `timeout -k 10`, `docker stop` and Slurm's KillWait
give it 10 s before SIGKILL).

    .venv/bin/python benchmarks/bench_stop.py [--soc ascend910b] [--after 15] [--repeat 3] [--hogs 2]

Each round starts `./run suite --soc SOC -q` into a fresh report directory, sends SIGTERM to its
pytest process AFTER seconds in, and times until that process is gone; --hogs starts that many
busy-looping processes for the whole benchmark (a loaded CI machine). Prints each round, the
records written and the median. A benchmark, not a test: it prints numbers and judges nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _pytest_pid(report_dir: Path, deadline: float) -> int | None:
    """The pid of the run's pytest process (./run re-executes itself once with set_env.sh applied)."""
    while time.monotonic() < deadline:
        out = subprocess.run(["pgrep", "-f", f"pytest -p harness.plugin.*{report_dir}"], capture_output=True, text=True)
        pids = [int(p) for p in out.stdout.split()]
        if pids:
            return pids[0]
        time.sleep(0.1)
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def round_once(soc: str, after: float, work: Path, i: int) -> tuple[float | None, int]:
    report = work / f"run{i}"
    with open(work / f"run{i}.log", "w") as log:
        proc = subprocess.Popen([str(REPO / "run"), "suite", "--soc", soc, "-q", "--report-dir", str(report)],
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    pid = _pytest_pid(report, time.monotonic() + 120)
    time.sleep(after)
    if pid is None or proc.poll() is not None:
        proc.wait()
        return None, 0
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while proc.poll() is None if pid == proc.pid else _alive(pid):     # our own child: reaped by poll()
        time.sleep(0.02)
    took = time.monotonic() - t0
    proc.wait()
    results = report / "results.jsonl"
    return took, sum(1 for _ in results.open()) if results.exists() else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soc", default="ascend910b")
    ap.add_argument("--after", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hogs", type=int, default=0)
    args = ap.parse_args(argv)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    took = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.repeat):
                t, n = round_once(args.soc, args.after, Path(tmp), i)
                load = os.getloadavg()[0]
                if t is None:
                    print(f"round {i}: the run ended before the signal (use a smaller --after)")
                    continue
                took.append(t)
                print(f"round {i}: stopped in {t:.2f} s, {n} records written, load {load:.1f}")
    finally:
        for h in hogs:
            h.kill()
    if took:
        print(f"median {statistics.median(took):.2f} s, max {max(took):.2f} s over {len(took)} rounds "
              f"({args.hogs} CPU hog(s))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
