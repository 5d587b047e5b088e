"""A nightly sweep on one machine: the CI job matrix (SoC family x shard), each job a separate
process, then the merge job. CI systems run the same commands as separate jobs (see
.ci/nightly-sweep.yml); this runs them here, for a rehearsal or a lab machine.

    python -m harness.reporting sweep -o reports/nightly --families ascend910b,ascend950 --shards 2 \
        [--previous reports/last-night] [--gate baselines/] -- [pytest args, e.g. -k dev_]
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from ..execution import sizing


def job_command(family: str, shard: int, shards: int, out: Path, backend: str, extra: list[str],
                parallel: int = 1) -> list[str]:
    """One job of the matrix: the suite on one family, one shard, its own report directory.
    The whole of cases/ unless the extra arguments name case files. With `parallel` jobs at once,
    each gets its share of the cores and memory as case workers (each would otherwise take them all)."""
    targets = [] if any(x.endswith((".yaml", ".yml")) or ".yaml::" in x for x in extra) else ["cases/"]
    share = [] if parallel <= 1 or any(x.startswith("--case-workers") for x in extra) else \
        ["--case-workers", str(sizing.cpu_workers(parallel))]
    return [sys.executable, "-m", "pytest", *targets, "--backend", backend, "--soc", family,
            "--shard", f"{shard}/{shards}", "--report-dir", str(out / f"{family}-{shard}"), "-p", "no:cacheprovider",
            *share, *extra]


def write_manifest(out: Path, backend: str, families: list[str], shards: int) -> Path:
    """What the sweep asks for; merge flags any run that is not that."""
    path = out / "sweep.yaml"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"backend": backend, "families": families, "shards": shards}, sort_keys=False))
    return path


def _finish(label: str, proc: subprocess.Popen) -> None:
    stdout, stderr = proc.communicate()
    tail = [ln for ln in stdout.splitlines() if ln.strip()][-1:] or ["(no output)"]
    print(f"   {label}: exit {proc.returncode}: {tail[0]}", flush=True)
    if proc.returncode not in (0, 1):     # 0 passed, 1 cases failed: both leave results
        print(stdout[-3000:] + stderr[-3000:], file=sys.stderr)


def run(out: Path, families: list[str], shards: int, backend: str, extra: list[str], root: Path,
        merge_args: list[str], parallel: int = 1) -> int:
    manifest = write_manifest(out, backend, families, shards)
    env = dict(os.environ)
    env.pop("SWCANN_SOC", None)        # each job's --soc picks the software CANN's SoC
    jobs = [(f, i) for f in families for i in range(1, shards + 1)]
    dirs = [out / f"{f}-{i}" for f, i in jobs]
    running: list = []
    for family, shard in jobs:                # at most `parallel` jobs at once, finished in start order
        if len(running) >= parallel:
            _finish(*running.pop(0))
        cmd = job_command(family, shard, shards, out, backend, extra, parallel)
        print(f"== job {family} shard {shard}/{shards}: pytest {shlex.join(cmd[3:])}", flush=True)
        running.append((f"{family} {shard}/{shards}", subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                                                                        stderr=subprocess.PIPE, text=True)))
    while running:
        _finish(*running.pop(0))
    from .__main__ import main as cli
    return cli(["merge", "-o", str(out / "merged"), "--manifest", str(manifest), *merge_args, *map(str, dirs)])
