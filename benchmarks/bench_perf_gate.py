"""The perf mode's acceptance numbers, on the software CANN (kernels timed as their CPU time).

    .venv/bin/python benchmarks/bench_perf_gate.py [--soc ascend950] [--runs 5] [--hog-run 3] [--work DIR]

1. A representative subset: one default-tier case per operator x dtype x memory layout
   (contiguous, strided, channel-last / NHWC), the largest of at most 100,000 elements, from the
   case files' valid groups (not the dev_*, op_plugin*, per-axis, pinning or empty groups);
   every dtype each of the five ops takes on --soc. Timed with --perf; prints its wall time and
   the stopping rule's statistics (launches per case, why sampling stopped, the median's relative
   95 % half-width).
2. No false alarms: a perf baseline written from that run, then --runs more runs of the same
   subset on the same library gated against it; run --hog-run has `python -c 'while True: pass'`
   competing for the cores (started before it, killed after it). Prints each run's perf
   verdicts; every run must have 0 regressions.
3. A slower kernel planted by hand (tests/perf_planting.py): MaxUnpool3d's kernel doing its work
   on 30 % and on 5 % of its planes once more (1.31x and 1.04x its per-plane work), in two copies
   of the software CANN, gated against a baseline of the fault-free library on that op's
   7x7x3x7x13 cases: prints each case's ratio, interval and verdict (the 30 % one must be
   flagged on every case, the 5 % one on none).

Exits 1 when an acceptance number is missed. A benchmark of a shared machine: the load average is
printed before and after, and numbers taken under other load differ from run to run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import perf_planting  # noqa: E402
from tests import swenv  # noqa: E402

SKIP_GROUPS = re.compile(r"^(bad_|dev_|cann_|check_|order_|per_axis|op_plugin|empty|routing|unsupported|ceil_rescues)")
MAX_ELEMENTS = 100_000


def _layout(case_id: str) -> str | None:
    """The case's memory-layout class: contiguous, strided or channel_last (NHWC, channels_last)."""
    tail = case_id.rsplit("]", 1)[0]
    if "-NHWC-" in tail or "-NDHWC-" in tail or "channels_last" in tail:
        return "channel_last"
    if "strided" in tail:
        return "strided"
    if re.search(r"-(contiguous)-[a-z_]+$", tail):
        return "contiguous"
    return None


def _elements(case_id: str) -> int:
    m = re.search(r"-(\d+(?:x\d+)+)-", case_id)
    return math.prod(int(x) for x in m.group(1).split("x")) if m else 0


def select(soc: str) -> list[str]:
    """The representative subset's node ids (module docstring, step 1)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "--soc", soc,
                          "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=REPO, capture_output=True,
                         text=True, env=swenv.bare_env())
    best: dict[tuple, tuple[int, str]] = {}
    for nodeid in out.stdout.splitlines():
        m = re.match(r"cases/(\w+)\.yaml::(\w+)\[([a-z0-9]+)-", nodeid)
        if not m or SKIP_GROUPS.match(m.group(2)):
            continue
        layout, n = _layout(nodeid), _elements(nodeid)
        if layout is None or not 0 < n <= MAX_ELEMENTS:
            continue
        key = (m.group(1), m.group(3), layout)
        if key not in best or n > best[key][0]:
            best[key] = (n, nodeid)
    return [nodeid for _, nodeid in sorted(best.values(), key=lambda x: x[1])]


def run(report_dir: Path, targets: list[str], *args, root: Path | None = None, soc: str = "ascend950",
        env_extra: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    env = swenv.bare_env()
    if root is not None:
        env["ASCEND_HOME_PATH"] = str(root)
    cmd = [sys.executable, "-m", "pytest", *targets, "--backend", "aclnn", "--soc", soc, "-q", "-n", "0",
           "-p", "no:cacheprovider", "--no-html", "--report-dir", str(report_dir), *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env={**env, **(env_extra or {})}, capture_output=True, text=True)
    return proc, time.perf_counter() - t0


def records(report_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (report_dir / "results.jsonl").read_text().splitlines() if x.strip()]


def baseline(run_dir: Path, out: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "harness.reporting", "baseline", "--perf", str(run_dir),
                           "-o", str(out)], cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"baseline --perf failed: {done.stderr}")
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def step1(work: Path, soc: str) -> tuple[list[str], Path, bool]:
    targets = select(soc)
    kinds = defaultdict(set)
    for t in targets:
        m = re.match(r"cases/(\w+)\.yaml::\w+\[([a-z0-9]+)-", t)
        kinds[m.group(1)].add((m.group(2), _layout(t)))
    print(f"1. representative subset on {soc}: {len(targets)} cases")
    for op, ks in sorted(kinds.items()):
        dts = sorted({d for d, _ in ks})
        print(f"   {op}: dtypes {', '.join(dts)}; layouts {', '.join(sorted({x for _, x in ks}))}")
    proc, wall = run(work / "subset", targets, "--perf", soc=soc)
    recs = records(work / "subset")
    stats = json.loads((work / "subset" / "summary.json").read_text())["performance"]["stopping"]
    ok = proc.returncode == 0 and wall < 300
    launches = [r["perf"]["n"] for r in recs if r.get("perf")]
    print(f"   --perf run: {wall:.1f} s wall for {len(recs)} cases (exit {proc.returncode}; limit 300 s): "
          f"{'ok' if ok else 'MISSED'}")
    print(f"   launches per case: median {statistics.median(launches):g}, mean {statistics.fmean(launches):.1f}, "
          f"min {min(launches)}, max {max(launches)} (+ {recs[0]['perf']['warmup']} warmup each); stopped by "
          + ", ".join(f"{k} {n}" for k, n in stats["stop"].items()))
    w = stats["rel_ci_halfwidth"]
    print(f"   median's 95 % CI half-width / median: median {_pct(w['median'])}, p90 {_pct(w['p90'])}, "
          f"max {_pct(w['max'])}; timing: {', '.join(stats['timings'])}")
    medians = sorted(r["perf"]["median_ms"] for r in recs if r.get("perf"))
    print(f"   kernel medians: {medians[0] * 1e3:.1f} us .. {medians[-1] * 1e3:.1f} us "
          f"(median {statistics.median(medians) * 1e3:.1f} us)")
    return targets, baseline(work / "subset", work / "subset-perf.json"), ok


def step2(work: Path, soc: str, targets: list[str], perf_file: Path, runs: int, hog_run: int) -> bool:
    print(f"2. the same library gated against its own baseline, {runs} runs (run {hog_run} with a CPU hog)")
    total = 0
    for i in range(1, runs + 1):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if i == hog_run else None
        try:
            proc, wall = run(work / f"gated-{i}", targets, "--perf", "--gate", str(perf_file), soc=soc)
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        verdicts = defaultdict(int)
        for r in records(work / f"gated-{i}"):
            for v in r.get("perf_gate") or []:
                verdicts[v["verdict"]] += 1
        total += verdicts["REGRESSION"]
        print(f"   run {i}{' (hog)' if hog else '      '}: {wall:5.1f} s, exit {proc.returncode}: "
              + ", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())))
    print(f"   regressions in {runs} runs: {total} ({'ok' if total == 0 else 'MISSED: false alarms'})")
    return total == 0


def step3(work: Path) -> bool:
    print(f"3. a slower kernel planted in {perf_planting.OP} (tests/perf_planting.py), ascend910b, "
          f"cases: -k '{perf_planting.SELECT}'")
    proc = perf_planting.suite(work / "planted-base", "--perf")
    if proc.returncode != 0:
        raise SystemExit(f"the fault-free run failed:\n{proc.stdout[-2000:]}")
    perf_file = baseline(work / "planted-base", work / "planted-perf.json")
    ok = True
    for percent, flagged in ((30, True), (5, False)):
        root = perf_planting.planted_root(work / f"lib{percent}", percent)
        proc = perf_planting.suite(work / f"planted-{percent}", "--perf", "--gate", str(perf_file), root=root)
        recs = records(work / f"planted-{percent}")
        hits = [r for r in recs if r["perf_gate"][0]["verdict"] == "REGRESSION"]
        good = (len(hits) == len(recs)) if flagged else not hits
        ok &= good and proc.returncode == (1 if flagged else 0)
        print(f"   {percent} % of the planes' work done again: exit {proc.returncode}, {len(hits)}/{len(recs)} "
              f"flagged ({'ok' if good else 'MISSED'})")
        for r in recs:
            v = r["perf_gate"][0]
            again = v.get("remeasured") or {}
            print(f"     {v['verdict']:<10} {v['ratio']:.3f}x [{v['ci'][0]:.3f}, {v['ci'][1]:.3f}]"
                  + (f", re-measured {again['ratio']:.3f}x" if again else "") + f"  {r['case_id']}")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soc", default="ascend950", help="family of the representative subset (default ascend950: "
                                                       "every op takes fp16 and bf16 there)")
    ap.add_argument("--runs", type=int, default=5, help="gated runs of step 2 (default 5)")
    ap.add_argument("--hog-run", type=int, default=3, help="which of them competes with a CPU hog (default 3)")
    ap.add_argument("--work", type=Path, default=REPO / "reports" / "bench_perf_gate")
    ap.add_argument("--skip-planted", action="store_true", help="steps 1 and 2 only")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    t0 = time.perf_counter()
    targets, perf_file, ok1 = step1(a.work, a.soc)
    ok2 = step2(a.work, a.soc, targets, perf_file, a.runs, a.hog_run)
    ok3 = True if a.skip_planted else step3(a.work)
    print(f"load average after: {os.getloadavg()[0]:.2f}; {time.perf_counter() - t0:.0f} s in all")
    return 0 if ok1 and ok2 and ok3 else 1


if __name__ == "__main__":
    sys.exit(main())
