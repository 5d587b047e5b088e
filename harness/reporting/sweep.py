"""A nightly sweep on one machine: the CI job matrix (SoC family x shard), each job a separate
process, then the merge job. CI systems run the same commands as separate jobs (see
.ci/nightly-sweep.yml); this runs them here, for a rehearsal or a lab machine.

    python -m harness.reporting sweep -o reports/nightly --families ascend910b,ascend950 --shards 2 \
        [--previous reports/last-night] [--gate baselines/] -- [pytest args, e.g. -k dev_]
"""
from __future__ import annotations

import ctypes
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from . import baseline
from ..core import families as families_mod
from ..core.errors import HarnessConfigError
from ..execution import sizing
from ..execution.stopping import StopSignals


class SweepError(HarnessConfigError):
    """A bad sweep argument; str() is one line naming the option and the value."""


# A job (a pytest process) per family and shard, listed in memory and in the manifest before any
# starts: `--shards 20000000000` (a typo for 2) built that list until the machine ran out of memory.
MAX_SHARDS = 1000


def check(families: list[str], shards: int, parallel: int, gate: str | None = None, backend: str = "aclnn") -> None:
    """Every argument, before any job starts: a typo in the last family, or a baseline the merge
    would refuse, must not surface after the jobs have run for an hour (and --shards 0 would run
    no job at all)."""
    if not families:
        raise SweepError(f"--families: no family given; known families: {', '.join(families_mod.FAMILIES)}")
    for name in families:
        try:
            families_mod.check_family(name, "--families")
        except families_mod.UnknownSocError as e:
            raise SweepError(str(e).replace("; valid:", "; known families:")) from None
    twice = sorted({f for f in families if families.count(f) > 1})
    if twice:      # two jobs would share one report directory
        raise SweepError(f"--families: {', '.join(twice)} given twice")
    if shards < 1:
        raise SweepError(f"--shards: must be >= 1, got {shards}")
    if shards > MAX_SHARDS:
        raise SweepError(f"--shards: at most {MAX_SHARDS} (a job each, per family), got {shards}")
    if parallel < 1:
        raise SweepError(f"--parallel: must be >= 1, got {parallel}")
    if gate:
        _check_gate(Path(gate), families, backend)


def _check_gate(path: Path, families: list[str], backend: str) -> None:
    """The merge gates every family's runs: a baseline file fits one target only, and a broken
    file in a directory stops the merge (BaselineError, one line)."""
    if path.is_dir():
        baseline.load_dir(path)
    elif not path.is_file():
        raise SweepError(f"--gate {path}: baseline file or directory not found")
    else:
        base = baseline.load_file(path)
        for family in families:
            baseline.check_target(path, base, backend, family, partial=True)


def job_command(family: str, shard: int, shards: int, out: Path, backend: str, extra: list[str],
                parallel: int = 1) -> list[str]:
    """One job of the matrix: the suite on one family, one shard, its own report directory.
    The whole of cases/ unless the extra arguments name case files. With `parallel` jobs at once,
    each gets its share of the cores and memory as case workers (each would otherwise take them all)."""
    targets = [] if any(x.endswith((".yaml", ".yml")) or ".yaml::" in x for x in extra) else ["cases/"]
    share = [] if parallel <= 1 or any(x.startswith("--case-workers") for x in extra) else \
        ["--case-workers", str(sizing.cpu_workers(parallel))]
    # -p/-c/--rootdir, as ./run suite has them: a case file outside the checkout would otherwise make
    # pytest take its directory for the root, where neither the plugin nor the configuration is
    return [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-c", "pyproject.toml", "--rootdir=.",
            *targets, "--backend", backend, "--soc", family,
            "--shard", f"{shard}/{shards}", "--report-dir", str(out / f"{family}-{shard}"), "-p", "no:cacheprovider",
            *share, *extra]


def write_manifest(out: Path, backend: str, families: list[str], shards: int, jobs: list[dict] | None = None) -> Path:
    """What the sweep asks for; merge flags any run that is not that. Once the jobs have run,
    `jobs` adds what each exited with ({family, shard, exit}): merge lists a job that selected no
    cases or stopped early, which its report directory alone may not show."""
    path = out / "sweep.yaml"
    out.mkdir(parents=True, exist_ok=True)
    doc = {"backend": backend, "families": families, "shards": shards, **({"jobs": jobs} if jobs is not None else {})}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _finish(label: str, proc: subprocess.Popen) -> int:
    stdout, stderr = proc.communicate()
    if proc.returncode == 5:            # pytest's "no tests collected": a report with nothing in it
        print(f"   {label}: exit 5: selected no cases", flush=True)
        return 5
    tail = [ln for ln in stdout.splitlines() if ln.strip()][-1:] or ["(no output)"]
    print(f"   {label}: exit {proc.returncode}: {tail[0]}", flush=True)
    if proc.returncode not in (0, 1):     # 0 passed, 1 cases failed: both leave results
        print(stdout[-3000:] + stderr[-3000:], file=sys.stderr)
    return proc.returncode


def _stop_with_sweep() -> None:
    """In a job, before exec (Linux): SIGTERM it when the sweep dies, SIGKILL included, so no job
    keeps running (and holding its devices) after the sweep that started it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _start(cmd: list[str], root: Path, env: dict) -> subprocess.Popen:
    """A job in a session of its own: a stop meant for the sweep (Ctrl-C in its terminal, SIGTERM to
    its process group) reaches a job only as the sweep passes it on, once. A job given a second
    SIGTERM would die at once, without its reports (harness/execution/stopping.py)."""
    return subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_stop_with_sweep)


def _jobs_line(jobs: list[dict], shards: int) -> str:
    """The sweep's own summary: how many jobs ran cases, selected none, or stopped early."""
    label = lambda j: f"{j['family']} {j['shard']}/{shards}"
    empty = [label(j) for j in jobs if j["exit"] == 5]
    broken = [f"{label(j)} exit {j['exit']}" for j in jobs if j["exit"] not in (0, 1, 5)]
    return (f"sweep: {len(jobs)} job(s): {len(jobs) - len(empty) - len(broken)} ran cases"
            + (f", {len(empty)} selected no cases ({', '.join(empty)})" if empty else "")
            + (f", {len(broken)} stopped early ({', '.join(broken)})" if broken else ""))


def _option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args[:-1] else None


def run(out: Path, families: list[str], shards: int, backend: str, extra: list[str], root: Path,
        merge_args: list[str], merge, parallel: int = 1) -> int:
    """Run every (family, shard) job, then `merge(argv)` (the `merge` command of the reporting
    CLI, handed in: the CLI sits above this module) over what they wrote."""
    check(families, shards, parallel, _option(merge_args, "--gate"), backend)
    manifest = write_manifest(out, backend, families, shards)
    env = dict(os.environ)
    env.pop("SWCANN_SOC", None)        # each job's --soc picks the software CANN's SoC
    jobs = [(f, i) for f in families for i in range(1, shards + 1)]
    dirs = [out / f"{f}-{i}" for f, i in jobs]
    exits: dict = {}
    running: list = []
    stop = StopSignals()            # SIGTERM and SIGHUP as Ctrl-C: stop the jobs, merge what they wrote
    stop.install()
    try:
        for family, shard in jobs:                # at most `parallel` jobs at once, finished in start order
            if len(running) >= parallel:
                key, label, proc = running[0]       # popped once finished: a stop meanwhile still sees it
                exits[key] = _finish(label, proc)
                running.pop(0)
            cmd = job_command(family, shard, shards, out, backend, extra, parallel)
            print(f"== job {family} shard {shard}/{shards}: pytest {shlex.join(cmd[3:])}", flush=True)
            running.append(((family, shard), f"{family} {shard}/{shards}", _start(cmd, root, env)))
        while running:
            key, label, proc = running[0]
            exits[key] = _finish(label, proc)
            running.pop(0)
        stopped = None
    except KeyboardInterrupt:
        stopped = stop.describe() or "Ctrl-C"
        print(f"sweep: stopped by {stopped}: stopping {len(running)} running job(s), starting no more", flush=True)
        for _, _, proc in running:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # each stops as it would by itself, writing its reports
        stop.finishing()
        for key, label, proc in running:
            exits[key] = _finish(label, proc)
    finally:
        stop.restore()
    # a job never started has no directory: the merge lists its shard as never reported
    done = [{"family": f, "shard": i, "exit": exits[(f, i)]} for f, i in jobs if (f, i) in exits]
    write_manifest(out, backend, families, shards, done)
    code = merge(["-o", str(out / "merged"), "--manifest", str(manifest), *merge_args,
                  *(str(d) for d, job in zip(dirs, jobs) if job in exits)])
    print(_jobs_line(done, shards), flush=True)
    if stopped:
        print(f"sweep: stopped by {stopped}: {len(jobs) - len(done)} job(s) never started", flush=True)
        return 2
    return code
