"""The perf gate against the noise between runs, on the software CANN's CPU time (the noisy default).

    .venv/bin/python benchmarks/bench_perf_noise.py [--soc ascend950] [--base-runs 3] [--clean 6]
                                                    [--hog-from 4] [--hogs 2] [--tolerance 0.10]
                                                    [--judge 0.10,0.15,0.20] [--work DIR]

1. The selection: benchmarks/bench_perf_gate.py's representative subset (one case per op x dtype x
   layout on --soc, all five ops) plus MaxUnpool3d's 7x7x3x7x13 fp32/fp16 cases, the ones the
   planting is sized for (tests/perf_planting.py: 49 planes).
2. A perf baseline from --base-runs runs (`baseline --perf RUN1 RUN2 ...`) on a copy of the software
   CANN planted with 0 planes (the same code as the planted ones below), SWCANN_DEVICE_TIME=0.
3. --clean gated runs of that same copy, the ones from --hog-from on beside --hogs CPU hogs
   (`python3 -c 'while True: pass'`, started before the run, killed after): every REGRESSION is
   a false one. The copy is at hand, so a flagged case is re-measured A/B interleaved.
4. Two planted copies gated the same way: MaxUnpool3d's kernel doing 15 of 49 planes again (about
   1.30x) and 1 plane again (about 1.04x: the smallest step the planting has).
5. Every run judged again offline (`python -m harness.reporting gate RUN FILE`) at each --judge
   tolerance, against the multi-run baseline and against a one-run baseline (the first run only),
   from the samples the live run recorded: false REGRESSIONs, planted cases found / missed.
   The live gate ran at --tolerance; the offline verdict at that tolerance must be the live one.

Prints every number; exits 0. A benchmark of a shared machine: the load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from tests import perf_planting  # noqa: E402
import bench_perf_gate as bpg  # noqa: E402

CPU = {"SWCANN_DEVICE_TIME": "0"}


def planted_ids(soc: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "--soc", soc,
                          "--collect-only", "-q", "-p", "no:cacheprovider", "-k", perf_planting.SELECT],
                         cwd=REPO, capture_output=True, text=True, env=bpg.swenv.bare_env())
    return [x for x in out.stdout.splitlines() if x.startswith("cases/")]


def gate_offline(run: Path, perf_file: Path) -> tuple[int, dict[str, dict]]:
    out = subprocess.run([sys.executable, "-m", "harness.reporting", "gate", str(run), str(perf_file)], cwd=REPO,
                         capture_output=True, text=True)
    # the verdicts: rerun the gate in-process on the same inputs for the per-case data
    from harness.reporting import baseline as bl
    from harness.reporting.perf import gate as perf_gate
    recs = bpg.records(run)
    gated, _ = perf_gate.gate(recs, bl.load_file(perf_file))
    return out.returncode, {r["case_id"]: r["perf_gate"][0] for r in gated if r.get("perf_gate")}


def with_tolerance(src: Path, out: Path, tolerance: float) -> Path:
    doc = json.loads(src.read_text())
    doc["tolerance"] = tolerance
    out.write_text(json.dumps(doc))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soc", default="ascend950")
    ap.add_argument("--base-runs", type=int, default=3)
    ap.add_argument("--clean", type=int, default=6)
    ap.add_argument("--hog-from", type=int, default=4)
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=0.10, help="the live gate's (the baseline file's) tolerance")
    ap.add_argument("--judge", default="0.10,0.15,0.20", help="tolerances the runs are judged at offline")
    ap.add_argument("--work", type=Path, default=REPO / "reports" / "bench_perf_noise")
    ap.add_argument("--judge-only", action="store_true", help="step 5 only, on the runs already in --work")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores); SWCANN_DEVICE_TIME=0 (CPU time)")
    planted = planted_ids(a.soc)
    targets = sorted(set(bpg.select(a.soc)) | set(planted))
    tails = [t.split("::", 1)[1].split("[", 1)[1] for t in planted]     # the case id's parameters
    print(f"1. selection on {a.soc}: {len(targets)} cases ({len(planted)} of them the planting's: "
          f"{perf_planting.OP} 7x7x3x7x13)")
    if a.judge_only:
        return judge(a, tails, [(f"clean-{i}" + (f" ({a.hogs} hogs)" if i >= a.hog_from else ""), a.work / f"clean-{i}",
                                 None, None) for i in range(1, a.clean + 1)]
                     + [(f"planted {p}/49 planes", a.work / f"planted-{p}", None, p)
                        for p in (perf_planting.SLOW, perf_planting.SLIGHT)])
    libs = {p: perf_planting.planted_root(a.work / f"lib{p}", p) for p in (0, perf_planting.SLOW, perf_planting.SLIGHT)}
    base_dirs = []
    for i in range(1, a.base_runs + 1):
        d = a.work / f"base-{i}"
        proc, wall = bpg.run(d, targets, "--perf", root=libs[0], soc=a.soc, env_extra=CPU)
        base_dirs.append(d)
        print(f"2. baseline run {i}: {wall:.1f} s, exit {proc.returncode}, {len(bpg.records(d))} records")
    multi, one = a.work / "perf-multi.json", a.work / "perf-one.json"
    for out, dirs in ((multi, base_dirs), (one, base_dirs[:1])):
        done = subprocess.run([sys.executable, "-m", "harness.reporting", "baseline", "--perf", *map(str, dirs),
                               "-o", str(out), "--tolerance", str(a.tolerance)], cwd=REPO, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        print(f"   {done.stdout.strip()}")
    spreads = sorted((max(e["run_medians_ms"]) / min(e["run_medians_ms"]), cid)
                     for cid, e in json.loads(multi.read_text())["cases"].items() if len(e.get("run_medians_ms", [])) > 1)
    print(f"   between-run spread (slowest / fastest run median) per case: median {spreads[len(spreads) // 2][0]:.3f}, "
          f"max {spreads[-1][0]:.3f} ({spreads[-1][1]})")
    runs = []
    for i in range(1, a.clean + 1):
        hogs = [subprocess.Popen(["python3", "-c", "while True: pass"]) for _ in range(a.hogs if i >= a.hog_from else 0)]
        try:
            proc, wall = bpg.run(a.work / f"clean-{i}", targets, "--perf", "--gate", str(multi), root=libs[0],
                                 soc=a.soc, env_extra=CPU)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        runs.append((f"clean-{i}" + (f" ({len(hogs)} hogs)" if hogs else ""), a.work / f"clean-{i}", proc.returncode, None))
        print(f"3. clean run {i}{' with %d hogs' % len(hogs) if hogs else ''}: {wall:.1f} s, live exit {proc.returncode}")
    for p, label in ((perf_planting.SLOW, "1.30x"), (perf_planting.SLIGHT, "1.04x")):
        d = a.work / f"planted-{p}"
        proc, wall = bpg.run(d, targets, "--perf", "--gate", str(multi), root=libs[p], soc=a.soc, env_extra=CPU)
        runs.append((f"planted {p}/49 planes ({label})", d, proc.returncode, p))
        print(f"4. planted {p} planes: {wall:.1f} s, live exit {proc.returncode}")
    return judge(a, tails, runs)


def judge(a, tails, runs) -> int:
    multi, one = a.work / "perf-multi.json", a.work / "perf-one.json"
    print("5. verdicts (REGRESSION counts; planted: found/of the planting's cases; other: any other case)")
    for tol in [float(x) for x in a.judge.split(",")]:
        for name, perf_file in (("3-run", multi), ("1-run", one)):
            f = with_tolerance(perf_file, a.work / f"judge-{name}-{tol}.json", tol)
            false, lines = 0, []
            for label, d, live_exit, planes in runs:
                code, verdicts = gate_offline(d, f)
                regs = {c for c, v in verdicts.items() if v["verdict"] == "REGRESSION"}
                flagged1 = sum(1 for v in verdicts.values() if v["verdict"] != "SAME")
                if planes is None:
                    false += len(regs)
                    lines.append(f"     {label:<28} exit {code}: {len(regs)} false REGRESSION(s), {flagged1} flagged in all")
                else:
                    planted_case = {c for c in verdicts if c.startswith(perf_planting.OP) and any(c.endswith(t) for t in tails)}
                    found = regs & planted_case
                    ratios = [verdicts[c]["ratio"] for c in planted_case if c in verdicts]
                    same_op = {c for c in regs - planted_case if c.startswith(perf_planting.OP)}
                    lines.append(f"     {label:<28} exit {code}: found {len(found)}/{len(planted_case)} (ratios "
                                 f"{min(ratios):.3f}-{max(ratios):.3f}x), other {perf_planting.OP} cases flagged "
                                 f"{len(same_op)} (the planted kernel is theirs too), other operators' cases flagged "
                                 f"{len(regs - planted_case - same_op)}")
                if tol == a.tolerance and name == "3-run" and live_exit is not None:
                    assert code == live_exit, f"{label}: offline exit {code}, live {live_exit}"
            ab = sum(1 for _, d, _, p in runs if p is None for r in bpg.records(d)
                     if ((r.get("perf") or {}).get("remeasured_ab")))
            print(f"   tolerance {tol:.2f}, {name} baseline: {false} false REGRESSION(s) in {a.clean} clean runs "
                  f"({ab} cases re-measured A/B in them)")
            print("\n".join(lines))
    for label, d, _, _ in runs:
        for r in bpg.records(d):
            v = (r.get("perf_gate") or [{}])[0]
            if v.get("verdict") not in (None, "SAME"):
                again = v.get("remeasured") or {}
                print(f"   {label}: {v['verdict']:<10} {v['ratio']:.3f}x (to slowest {v['between_runs'].get('ratio_to_slowest', 0):.3f}x)"
                      f", A/B {again.get('ratio', float('nan')):.3f}x ({again.get('against')}) {r['case_id']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
