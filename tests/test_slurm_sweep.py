"""The nightly sweep on a real Slurm: .ci/slurm/submit's array tasks and dependent merge job,
on a single-node Slurm started here on localhost (munged, slurmctld and slurmd from a generated
slurm.conf in a temporary directory, every address 127.0.0.1), stopped at the end.

Authentication is MUNGE with a key made for the test and a socket of its own, not auth/none: Slurm
22.05 still has auth/none, but slurmctld listens on every interface, and with auth/none anyone who
reached its port could run commands as root while the test runs.

The sweep of a small -k selection over 2 families x 2 shards must merge into one report with no
case missing and none twice, each family's cases exactly those a local run of the same selection
gives. A family whose tasks cannot start must make the merge job fail and say so.
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SELECTION = "max_pool3d and bad_params and B1"
FAMILIES = ("ascend910b", "ascend950")
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol")

pytestmark = [
    pytest.mark.skipif(any(shutil.which(d) is None for d in DAEMONS),
                       reason="Slurm is not installed (Debian: apt-get install slurm-wlm; .ci/run installs it)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="slurmd starts the sweep's tasks as root here (CI runs as root)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ready, timeout: float, step: float = 0.3):
    """ready() until it returns something true, at most `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = ready()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"no {what} within {timeout} s")


class Cluster:
    """munged, slurmctld and slurmd of one node, from a slurm.conf written into `home`."""

    def __init__(self, home: Path):
        self.home = home
        for d in ("state", "spool", "log", "munge"):
            (home / d).mkdir(parents=True)
        munge = home / "munge"
        munge.chmod(0o700)                    # munged refuses a key or socket others could reach
        (munge / "munge.key").write_bytes(os.urandom(1024))
        (munge / "munge.key").chmod(0o400)
        self.conf = home / "slurm.conf"
        host = socket.gethostname().split(".")[0]
        self.conf.write_text(f"""\
ClusterName=aclnnsweep
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge}/munge.sock
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={home}/state
SlurmdSpoolDir={home}/spool
SlurmctldPidFile={home}/slurmctld.pid
SlurmdPidFile={home}/slurmd.pid
SlurmctldLogFile={home}/log/slurmctld.log
SlurmdLogFile={home}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
CommunicationParameters=NoInAddrAny
NodeName=sweepnode NodeAddr=127.0.0.1 NodeHostname={host} CPUs={os.cpu_count()} RealMemory=1000 State=UNKNOWN
PartitionName=sweep Nodes=sweepnode Default=YES MaxTime=INFINITE State=UP
""")
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.daemons = []
        try:
            # -f: munged runs as root here, which it otherwise refuses
            self._start(["munged", "-F", "-f", f"--socket={munge}/munge.sock", f"--key-file={munge}/munge.key",
                         f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/munged.seed",
                         f"--log-file={home}/log/munged.log"])
            _wait("MUNGE socket", (munge / "munge.sock").exists, 30, step=0.1)
            self._start(["slurmctld", "-D", "-c"])
            self._start(["slurmd", "-D", "-N", "sweepnode"])
            _wait("idle Slurm node", lambda: self.run("sinfo", "-h", "-o", "%T").strip() == "idle", 60)
        except BaseException:
            self.stop()
            raise

    def _start(self, cmd: list[str]) -> None:
        log = (self.home / "log" / f"{cmd[0]}.out").open("w")
        self.daemons.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT))

    def run(self, *cmd: str, check: bool = False) -> str:
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 or not check, proc.stdout + proc.stderr
        return proc.stdout

    def queue(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").split()

    def exit_code(self, job: str) -> int:
        """A finished job's exit status (the controller keeps finished jobs for MinJobAge, 300 s)."""
        fields = dict(f.split("=", 1) for f in self.run("scontrol", "-o", "show", "job", job, check=True).split()
                      if "=" in f)
        return int(fields["ExitCode"].split(":")[0])

    def stop(self) -> None:
        """Cancel what is left, wait for the queue to drain, stop the daemons; then any process
        this cluster started that is still alive (its slurmstepd, a task's suite: their environment
        names this slurm.conf) is killed by its id."""
        if len(self.daemons) == 3 and all(p.poll() is None for p in self.daemons):
            for job in self.queue():
                self.run("scancel", job)
            try:
                _wait("empty queue", lambda: not self.queue(), 30)
            except AssertionError:
                pass
        for p in reversed(self.daemons):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.daemons:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for pid in self._started_here():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _started_here(self) -> list[int]:
        mark = f"SLURM_CONF={self.conf}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if mark in (entry / "environ").read_bytes().split(b"\0"):
                        pids.append(int(entry.name))
                except OSError:
                    pass
        return pids


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("slurm"))
    yield c
    c.stop()
    assert not c._started_here(), "processes of the test's Slurm outlived it"


def _submit(cluster: Cluster, out: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".ci" / "slurm" / "submit"), "-o", str(out), *args], cwd=REPO,
                          env=cluster.env, capture_output=True, text=True, timeout=timeout)


def _records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "results.jsonl").read_text().splitlines() if line.strip()]


def _local(tmp_path: Path, family: str) -> set[str]:
    """The case ids a local run of the selection gives on `family` (the reference)."""
    out = tmp_path / f"local-{family}"
    proc = subprocess.run([str(REPO / "run"), "suite", "--soc", family, "-k", SELECTION, "-q", "-n", "0",
                           f"--report-dir={out}"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {r["case_id"] for r in _records(out)}


def test_slurm_sweep_merges_every_case_once(cluster, tmp_path):
    t0 = time.monotonic()
    out = tmp_path / "sweep"
    # ascend950 with sbatch arguments of its own: a second array job, the merge waits for both
    proc = _submit(cluster, out, "--families", ",".join(FAMILIES), "--shards", "2",
                   "--family-sbatch", "ascend950=--comment=family-950", "--", "-k", SELECTION, "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    arrays = [line.split()[3].rstrip(":") for line in proc.stdout.splitlines() if line.startswith("suite array job")]
    merge_job = next(line.split()[2] for line in proc.stdout.splitlines() if line.startswith("merge job"))
    assert len(arrays) == 2, proc.stdout
    _wait("end of the merge job", lambda: merge_job not in cluster.queue(), 240, step=0.5)
    slurm_s = time.monotonic() - t0
    log = "\n".join(p.read_text() for p in sorted((out / "slurm" / "log").glob("*.out")))
    assert cluster.exit_code(merge_job) == 0, log[-5000:]

    merged = _records(out / "merged")
    keys = [(r["family"], r["case_id"]) for r in merged]
    assert len(keys) == len(set(keys)), [k for k, n in collections.Counter(keys).items() if n > 1]
    assert not [r["case_id"] for r in merged if r["status"] == "MISSING"]
    assert json.loads((out / "merged" / "summary.json").read_text())["problems"] == []
    sweep = yaml.safe_load((out / "sweep.yaml").read_text())
    assert sorted((j["family"], j["shard"], j["exit"]) for j in sweep["jobs"]) == \
        [(f, i, 0) for f in FAMILIES for i in (1, 2)]
    for family in FAMILIES:
        shards = [{r["case_id"] for r in _records(out / f"{family}-{i}")} for i in (1, 2)]
        assert shards[0] and shards[1] and not shards[0] & shards[1], family      # both shards ran, disjoint
        local = _local(tmp_path, family)
        assert {c for f, c in keys if f == family} == local, family
    print(f"\nSlurm sweep: {len(merged)} cases in {slurm_s:.1f} s (submit to merged), "
          f"{dict(collections.Counter(f for f, _ in keys))}")


def test_a_family_whose_tasks_cannot_start_fails_the_merge_job(cluster, tmp_path):
    """ascend950's tasks get an environment the suite refuses at start-up (exit 4, no results):
    the merge job still runs (afterany), and its report and exit status say what is missing."""
    out = tmp_path / "sweep"
    proc = _submit(cluster, out, "--families", ",".join(FAMILIES), "--shards", "1", "--wait",
                   "--family-sbatch", "ascend950=--export=ALL,SWCANN_FAULTS=no_such_fault", "--", "-k", SELECTION, "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr         # --wait: the merge job's exit status
    sweep = yaml.safe_load((out / "sweep.yaml").read_text())
    assert {(j["family"], j["exit"]) for j in sweep["jobs"]} == {("ascend910b", 0), ("ascend950", 4)}
    problems = json.loads((out / "merged" / "summary.json").read_text())["problems"]
    said = " | ".join(p["message"] for p in problems)
    assert "job ascend950 shard 1/1: pytest exit 4" in said, said
    assert {r["family"] for r in _records(out / "merged")} == {"ascend910b"}
