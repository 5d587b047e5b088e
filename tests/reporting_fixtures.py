"""Records and report directories built by hand, for the reporting tests."""
from __future__ import annotations

import json
from pathlib import Path

OPAPI_SHA = "a" * 64


def rec(case_id: str, status: str = "PASS", family: str = "ascend910b", dtype: str = "float32", mere: float | None = None,
        reason: str = "", device: str | None = None, **extra) -> dict:
    op = case_id.split(".")[0]
    backend = {"backend": "aclnn", "family": family, **({"device": device} if device is not None else {})}
    r = {"case_id": case_id, "nodeid": f"cases/x.yaml::{case_id.split('.', 1)[1]}", "op": op, "dtype": dtype,
         "family": family, "backend": backend, "status": status,
         "raw_status": "FAIL" if status == "EXPECTED_FAIL" else ("PASS" if status in ("UNEXPECTED_PASS", "FLAKE") else status),
         "reason": reason, "timings": {"total": 0.01}}
    if mere is not None:
        r["metrics"] = [{"name": "mere", "value": mere, "threshold": 0.000122, "rule": "<"},
                        {"name": "mare", "value": mere * 3, "threshold": 0.00122, "rule": "<"}]
        r["worst"] = {"index": [0, 1, 2, 3], "golden_str": "1.0", "actual_str": "1.5", "metric": "RE", "error": 0.5}
    r.update(extra)
    return r


def write_run(directory: Path, records: list[dict], family: str = "ascend910b", shard=None, selected=None,
              opapi_sha: str = OPAPI_SHA, backend: str = "aclnn", requested_family: str | None = None) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    identity = {"backend": backend, "family": family, "soc_name": "Ascend910B2", "simulated": True,
                "libraries": {"opapi": "/lib/libopapi.so"}, "library_sha256": {"/lib/libopapi.so": opapi_sha},
                "started": "2026-11-23T01:00:00+00:00", "ended": "2026-11-23T01:10:00+00:00",
                "command": "pytest cases/", "suite_commit": "deadbeef", "switches": {"SWCANN_DEVIATIONS": "1"}}
    (directory / "summary.json").write_text(json.dumps({"identity": identity}))
    if selected is not None:
        sel = [{"case_id": c, "nodeid": f"cases/x.yaml::{c}", "op": c.split(".")[0]} for c in selected]
        (directory / "manifest.json").write_text(json.dumps(
            {"shard": list(shard) if shard else None, "requested": {"backend": backend, "family": requested_family or family},
             "selected": sel, "assigned": [s for s in sel if any(r["case_id"] == s["case_id"] for r in records)]}))
    return directory


def sweep_dirs(tmp_path: Path, ids: list[str], families=("ascend910b", "ascend950"), *, drop=None, dup=None,
               other_hash=None) -> list[Path]:
    """A clean sweep over `ids`: each family in two shards, <family>-<shard> under tmp_path.
    Optionally lose one case (drop=(family, id)), record one twice in shard 2 (dup=(family, id)),
    or give ascend950's shard 2 another library hash."""
    from harness.reporting import shard
    dirs = []
    for fam in families:
        for i in (1, 2):
            mine = [c for c, keep in zip(ids, shard.select(ids, (i, 2))) if keep]
            recs = [rec(c, family=fam) for c in mine if (fam, c) != drop]
            if dup and dup[0] == fam and i == 2:
                recs.append(rec(dup[1], family=fam))
            sha = other_hash if (other_hash and fam == "ascend950" and i == 2) else OPAPI_SHA
            dirs.append(write_run(tmp_path / f"{fam}-{i}", recs, family=fam, shard=(i, 2), selected=ids, opapi_sha=sha))
    return dirs


# ------------------------------------------------------------------ perf runs

def launch_times(rng, n: int, median: float = 1.0, sigma: float = 0.05, outliers: float = 0.0,
                 trend: float = 0.0, level: float = 0.0):
    """n launch times (ms) as the shared 2-core machine gives them: lognormal noise around
    `median`, a share `outliers` of launches 2-10x slower (a competing process), a median that
    drifts linearly by `trend` over the measurement, and the machine's level that measurement
    (exp(N(0, level)): what changes between one measurement and the next)."""
    import numpy as np
    t = median * np.exp(rng.normal(0, sigma, n)) * (1 + trend * np.linspace(0, 1, n))
    t *= np.exp(rng.normal(0, level)) if level else 1.0
    hit = rng.random(n) < outliers
    t[hit] *= rng.uniform(2, 10, int(hit.sum()))
    return t


def noisy_machine(rng) -> dict:
    """The noise of one case on the shared machine: launch_times() parameters, outlier-heavy at times."""
    return {"sigma": float(rng.uniform(0.02, 0.2)), "outliers": float(rng.choice([0.0, 0.05, 0.1, 0.2])),
            "trend": float(rng.uniform(-0.03, 0.03)), "level": 0.01}


def perf_rec(case_id: str, samples, remeasured=None, timing: str = "events", moved: tuple[int, int] | None = None,
             limit_gbps: float | None = None, limit_source: str = "peak table", **extra) -> dict:
    """A measured record: rec() with `perf` as the runner writes it (summarize() of the samples);
    with `moved` (bytes read, written) also its bytes, achieved GB/s and limit {gbps, source, percent}."""
    from harness.core import perfstats
    samples = [float(x) for x in samples]
    perf = {"timing": timing, "samples_ms": samples, **perfstats.summarize(samples), "cold_ms": samples[0] * 3,
            "phase1_ms": 0.05, "stop": "ci"}
    if remeasured is not None:
        perf["remeasured_ms"] = [float(x) for x in remeasured]
    if moved is not None:
        gbps = sum(moved) / (perf["median_ms"] / 1000) / 1e9
        perf |= {"bytes": {"read": moved[0], "written": moved[1]}, "gbps": gbps,
                 "limit": {"gbps": limit_gbps, "source": limit_source,
                           "percent": 100 * gbps / limit_gbps if limit_gbps else None}}
    return rec(case_id, perf=perf, **extra)


OPS = ("MaxPool2dWithIndicesBackward", "MaxPool3dWithArgmaxBackward", "AdaptiveMaxPool2dBackward",
       "AvgPool2dBackward", "MaxUnpool3dBackward")


def many_records(n: int, seed: int = 0, families=("ascend910b", "ascend950"), devices: int = 8) -> list[dict]:
    """n records of a big perf run, as a nightly sweep of every op gives them: judged metrics
    (a few failing), launch times over five decades of bytes moved, digests, devices, launch_s."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        op, fam, dtype = OPS[k % 5], families[(k // 5) % len(families)], ("float32", "float16", "bfloat16")[k % 3]
        moved = int(10 ** rng.uniform(3, 8))
        median = moved / 1.2e12 * 1000 * float(np.exp(rng.normal(0.3, 0.4)))       # ms, near a 1.2 TB/s limit
        samples = launch_times(rng, 20, median, sigma=0.03)
        r = perf_rec(f"{op}.g{k % 40}[{dtype}-{k}]", samples, moved=(moved * 2 // 3, moved // 3), limit_gbps=1600.0,
                     family=fam, dtype=dtype, mere=float(10 ** rng.normal(-5.5, 0.8)), device=str(k % devices),
                     launch_s=median / 1000 * 1.5, digests={"gradInput": f"sha256:{k:064x}"})
        if r["metrics"][0]["value"] > r["metrics"][0]["threshold"]:
            r |= {"status": "FAIL", "raw_status": "FAIL", "reason": "MERE over its threshold"}
        out.append(r)
    return out
