"""Keeping up to 8 devices busy: per-device utilisation and wall time of a device-bound run.

    python benchmarks/bench_devices.py [--soc ascend910b] [--devices 8] [--gbps 0.0005] [--repeat 1]

The device-bound tier: the default tier's numeric cases of one family whose output has at least
--min-elements (8192) and fewer than --max-elements (32768) elements (1,394 cases of all five
operators on ascend910b), on the software CANN with SWCANN_DEVICES=N, SWCANN_DEVICE_TIME=1 and
SWCANN_DEVICE_GBPS=G: each kernel sleeps its bytes / G, 0.4 s a case on average at 0.0005 GB/s
(median 0.2 s, a few up to 10 s), while the harness's CPU work per case (inputs, golden, comparison
in the case worker, the record in pytest) is a few ms. About 2 minutes on 2 cores.

Two runs of that selection, each with N case workers (auto sizing must give N for the first):
  1. device time on: summary.json's utilisation (busy / wall per device; busy = phase 2
     + sync of every launch of each case, here the modelled device time plus the kernel's emulation,
     about a ms),
     and its wall: the span in which the cases ran (harness/reporting/utilisation.py);
  2. device time off (the kernels' CPU time only), same workers: its span is the CPU-bound part, the
     time the harness's own work takes on this machine's cores with that many workers.
Targets: every device >= 85 % busy, and wall(1) <= 1.15 x (total device time / N + span(2)).
Prints both, the process wall times (start-up included) and the load average (a shared machine's
numbers are comparable only at a similar load). Exit status 1 when a target is missed.

It is also the pytest plugin (-p bench_devices, this directory on PYTHONPATH) that selects the tier
(BENCH_DEVICE_TIER=min:max elements).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIER_VAR = "BENCH_DEVICE_TIER"
UTILISATION_TARGET = 0.85
WALL_FACTOR = 1.15


# ------------------------------------------------------------------ the plugin: the device-bound tier

def pytest_collection_modifyitems(config, items):
    """Runs before the harness's own selection (its hook is trylast), so the manifest has only these."""
    window = os.environ.get(TIER_VAR)
    if not window:
        return
    lo, hi = (int(x) for x in window.split(":"))
    family = config.getoption("soc")
    keep, drop = [], []
    for item in items:
        case = getattr(item, "case", None)
        fits = case is not None and case.tier == "default" and family in case.families \
            and case.runs_numerics(family) and lo <= math.prod(case.shape) < hi
        (keep if fits else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# ------------------------------------------------------------------ the benchmark

def _run(report: Path, soc: str, devices: int, window: str, env_extra: dict, workers: str) -> tuple[dict, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWCANN_") and k != "ASCEND_HOME_PATH"}
    env.update({"SWCANN_DEVICES": str(devices), TIER_VAR: window,
                "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT), env.get("PYTHONPATH", "")]),
                **env_extra})
    cmd = [sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "--soc", soc, "-n", "0", "-q",
           "-p", "no:cacheprovider", "-p", "bench_devices", "--case-workers", workers, "--report-dir", str(report)]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - start
    path = report / "summary.json"
    if proc.returncode != 0 or not path.exists():
        sys.exit(f"run failed (exit {proc.returncode}): {(proc.stdout + proc.stderr)[-3000:]}")
    return json.loads(path.read_text()), took


def measure(soc: str, devices: int, gbps: float, window: str, work: Path, k: int) -> dict:
    on, on_wall = _run(work / f"on-{k}", soc, devices, window,
                       {"SWCANN_DEVICE_TIME": "1", "SWCANN_DEVICE_GBPS": str(gbps)}, "auto")
    workers = on["identity"]["case_workers"]
    off, off_wall = _run(work / f"off-{k}", soc, devices, window, {}, str(workers))
    util, cpu = on["utilisation"], off["utilisation"]
    bound = WALL_FACTOR * (util["busy_s"] / devices + cpu["wall_s"])
    return {"cases": sum(on["totals"].values()), "workers": workers, "devices": util["devices"],
            "wall_s": util["wall_s"], "device_s": util["busy_s"], "cpu_part_s": cpu["wall_s"], "bound_s": bound,
            "min_utilisation": min(r["utilisation"] for r in util["devices"]), "process_s": (on_wall, off_wall),
            "ops": sorted(on["per_operator"])}


def report(m: dict, devices: int) -> bool:
    print(f"{m['cases']} cases of {len(m['ops'])} operators, {m['workers']} case workers (auto), "
          f"{len(m['devices'])} devices used")
    for r in m["devices"]:
        print(f"  {r['device']}: {r['utilisation'] * 100:5.1f} % busy ({r['busy_s']:.2f} s of {m['wall_s']:.2f} s), "
              f"{r['cases']} cases")
    ok_util = m["min_utilisation"] >= UTILISATION_TARGET and len(m["devices"]) == devices
    ok_wall = m["wall_s"] <= m["bound_s"]
    print(f"utilisation: min {m['min_utilisation'] * 100:.1f} % (target >= {UTILISATION_TARGET * 100:.0f} % on "
          f"every device): {'met' if ok_util else 'MISSED'}")
    print(f"wall {m['wall_s']:.2f} s <= {WALL_FACTOR} x (device time {m['device_s']:.2f} s / {devices} + CPU-bound "
          f"part {m['cpu_part_s']:.2f} s) = {m['bound_s']:.2f} s: {'met' if ok_wall else 'MISSED'} "
          f"(ratio {m['wall_s'] / (m['device_s'] / devices + m['cpu_part_s']):.3f})")
    print(f"  against the larger of the two alone, the least any schedule could take: "
          f"{m['wall_s'] / max(m['device_s'] / devices, m['cpu_part_s']):.3f}")
    print(f"process wall times, start-up included: {m['process_s'][0]:.1f} s (device time on), "
          f"{m['process_s'][1]:.1f} s (off)")
    return ok_util and ok_wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soc", default="ascend910b")
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--gbps", type=float, default=0.0005, help="SWCANN_DEVICE_GBPS (default 0.0005)")
    ap.add_argument("--min-elements", type=int, default=8192)
    ap.add_argument("--max-elements", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--work-dir", type=Path, help="keep the runs' report directories here (default: a temporary one)")
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; SWCANN_DEVICES={a.devices} "
          f"SWCANN_DEVICE_GBPS={a.gbps}, tier: outputs of [{a.min_elements}, {a.max_elements}) elements on {a.soc}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-devices-") as tmp:
        work = a.work_dir or Path(tmp)
        for k in range(a.repeat):
            ok = report(measure(a.soc, a.devices, a.gbps, f"{a.min_elements}:{a.max_elements}", work, k),
                        a.devices) and ok
    print(f"load average {os.getloadavg()[0]:.2f} after")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
