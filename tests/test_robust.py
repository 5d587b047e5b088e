"""Runs on a misbehaving library: crashes, hangs, a device error state, a killed run, two runs
into one report directory. The software CANN misbehaves on purpose through SWCANN_FAULTS
(swcann/README.md); each fault is tied to one case by its gradOutput size."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.execution import deadline, journal
from harness.reporting import records as rec_mod
from tests.robust_cases import EXECUTOR_SETTINGS, faulty_numel, flat, stop_and_wait, write_cases

REPO = Path(__file__).resolve().parent.parent
DEADLINE_S = 2.0


def _faults(**groups: str) -> str:
    """SWCANN_FAULTS naming the faulty groups: _faults(f289="phase2_segv") -> phase2_segv@numel=289."""
    return ",".join(f"{fault}@numel={faulty_numel(group)}" for group, fault in groups.items())


CRASHES = {"f289": "phase2_segv", "f323": "phase2_abort", "f361": "phase2_segv"}
HANGS = {"f437": "phase2_hang", "f529": "sync_hang"}


def _pytest(tmp: Path, *args, env=None, report="rep", background=False, preexec_fn=None):
    cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", str(tmp / "cases"), "--rootdir", str(tmp),
           "-c", "/dev/null", "--backend", "aclnn", "-p", "no:cacheprovider", *args]
    if report:
        cmd += ["--report-dir", str(tmp / report)]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env.pop("SWCANN_FAULTS", None) if "SWCANN_FAULTS" not in (env or {}) else None
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env,
                                cwd=tmp, start_new_session=True, preexec_fn=preexec_fn)
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=tmp, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def _records(directory: Path) -> list[dict]:
    return [json.loads(x) for x in (directory / "results.jsonl").read_text().splitlines()]


def _group(record: dict) -> str:
    return record["case_id"].split(".", 1)[1].split("[", 1)[0]


def _journal_entries(directory: Path) -> list[dict]:
    entries = [json.loads(x) for f in sorted((directory / "journal").glob("*.jsonl")) for x in f.read_text().splitlines()]
    return sorted(entries, key=lambda e: e["t"])


@pytest.mark.parametrize("jobs", ["0", "2"])
def test_crashes_and_hangs_cost_only_their_own_cases(tmp_path, jobs):
    write_cases(tmp_path, hang_timeout_s=DEADLINE_S)
    code, out, wall = _pytest(tmp_path, "-q", "-n", jobs, env={"SWCANN_FAULTS": _faults(**CRASHES, **HANGS)})
    assert code == 1, out
    records = _records(tmp_path / "rep")
    ids = Counter(r["case_id"] for r in records)
    assert len(ids) == 1005 and set(ids.values()) == {1}, "one record per case"
    bad = {_group(r): r for r in records if r["status"] != "PASS"}
    assert sorted(bad) == sorted([*CRASHES, *HANGS]), {g: r["reason"] for g, r in bad.items()}
    for group in CRASHES:
        r = bad[group]
        assert r["status"] == "CRASH" and r["signal"] == ("SIGABRT" if CRASHES[group] == "phase2_abort" else "SIGSEGV")
        assert "injected by SWCANN_FAULTS" in r["last_error"] and r["case_id"] in out      # said, with its id
        assert "aclnn.py" in r["stack"]                                                 # where the worker died
    for group in HANGS:
        r = bad[group]
        assert r["status"] == "TIMEOUT" and r["deadline_s"] == DEADLINE_S
        assert "in _run" in r["stack"] and "Current thread" in r["stack"]               # stack dumped to the record
    # a hang holds its worker for its own deadline (the case file's), not for the default one a case of
    # its size would have (deadline.BASE_S, 60 s) nor longer: bounds a busy machine cannot cross (the
    # seconds it adds to a stack dump and a fresh worker are not the point; test_pool.py's hang test
    # says in order of events that a deadline is kept on time); the next case there ran on a new worker
    entries = _journal_entries(tmp_path / "rep")
    started = {e["case_id"]: e["t"] for e in entries if e["event"] == "start"}
    ended = {e["case_id"]: e["t"] for e in entries if e["event"] == "end"}
    for group in HANGS:
        r = bad[group]
        assert DEADLINE_S <= r["timings"]["total"] < deadline.BASE_S, r["timings"]
        assert ended[r["case_id"]] - started[r["case_id"]] < deadline.BASE_S
    passed = [r for r in records if r["status"] == "PASS"]
    assert len(passed) == 1000 and all(r["worker"] for r in passed)
    after_fault = [r for r in passed if r.get("recovered_from")]
    assert after_fault and all(r["recovered_from"]["action"] == "new worker process" for r in after_fault)
    assert wall < 300, wall


@pytest.mark.parametrize("case_workers", ["1", "2"])
def test_device_error_state_is_reset_before_the_next_case(tmp_path, case_workers):
    """After a 507015 the software CANN keeps its device in error state (like a real AI Core
    exception): the cases after it pass only because the harness resets the device. With two
    case workers, only the one that hit the fault resets; the other's cases never needed it."""
    write_cases(tmp_path, channels=[1, 2], sides=(4, 6))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", case_workers,
                           env={"SWCANN_FAULTS": _faults(f361="sync_507015")})
    records = _records(tmp_path / "rep")
    failed = [r for r in records if r["status"] != "PASS"]
    assert [_group(r) for r in failed] == ["f361"], out
    bad = failed[0]
    assert bad["status"] == "FAIL" and bad["sync_status"] == 507015 and "ret=507015" in bad["phase1"]["message"]
    assert bad["recovery"]["ok"] and bad["recovery"]["action"].startswith("aclrtResetDevice(0)")
    by_id = {r["case_id"]: r for r in records}
    assert len({r["worker"] for r in records}) == int(case_workers)
    order = [e["case_id"] for e in _journal_entries(tmp_path / "rep") if e["event"] == "end"]
    later = [c for c in order[order.index(bad["case_id"]) + 1:] if by_id[c]["worker"] == bad["worker"]]
    assert len(later) >= 5
    assert all(by_id[c]["status"] == "PASS" and by_id[c]["device_resets"] == 1 for c in later)
    assert by_id[later[0]]["recovered_from"]["case_id"] == bad["case_id"]
    others = [r for r in records if r["worker"] != bad["worker"]]
    assert all(r["status"] == "PASS" and r["device_resets"] == 0 for r in others)


STICKY = """
import os, sys
from types import SimpleNamespace
from harness.backends.aclnn import AclnnBackend
from harness.operators import load_case_file
_, cases = load_case_file(sys.argv[1])
by_group = {}
for c in cases:
    by_group.setdefault(c.group, c)
from harness.judge.runner import run_case
b = AclnnBackend(SimpleNamespace(device=None, family=None, no_sw_fallback=False, deterministic=False, worker=None))
first = run_case(by_group["f361"], b, b.info.family)
no_reset = run_case(by_group["before"], b, b.info.family)
b.recover()
after_reset = run_case(by_group["before"], b, b.info.family)
print(first.sync_status, no_reset.raw.value, no_reset.sync_status, after_reset.raw.value)
"""


def test_without_a_reset_the_device_error_state_fails_the_next_case(tmp_path):
    """The other half of the test above: the simulator really keeps the error state."""
    path = write_cases(tmp_path, channels=[1], sides=(4,))
    proc = subprocess.run([sys.executable, "-c", STICKY, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "SWCANN_FAULTS": _faults(f361="sync_507015")})
    assert proc.stdout.split() == ["507015", "FAIL", "507015", "PASS"], proc.stdout + proc.stderr


def _wait_for(predicate, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_killed_run_is_finished_by_resume(tmp_path):
    write_cases(tmp_path, channels=[1, 2], sides=(4, 6, 8))
    rep = tmp_path / "rep"
    proc = _pytest(tmp_path, "-q", "-n", "2", background=True, env={"SWCANN_FAULTS": _faults(f437="phase2_hang")})
    try:
        hung = lambda: any(e["event"] == "start" and "f437" in e["case_id"] for e in _journal_entries(rep)) \
            if (rep / "journal").is_dir() else False
        assert _wait_for(hung), proc.communicate()[0] if proc.poll() is not None else "no start of f437"
        time.sleep(1.0)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)              # the whole run, workers included
        proc.wait()
    before = journal.scan(rep)
    missing = before.unfinished_ids()
    assert any("f437" in c for c in missing), missing
    # results.jsonl is written once, at a run's end; a killed run's records are read from its journals,
    # as its end would have written them (what merge, compare and the history read)
    assert not (rep / "results.jsonl").exists()
    read = rec_mod.load_results(rep)
    assert Counter(r["case_id"] for r in read) == Counter(set(r["case_id"] for r in read))
    assert len(read) == 8 * 9 * 2 + 5, len(read)
    assert {r["case_id"] for r in read if r["status"] != "MISSING"} == before.done_ids()
    assert missing <= {r["case_id"] for r in read if r["status"] == "MISSING"}
    listed = subprocess.run([sys.executable, "-m", "harness.execution.journal", str(rep)], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert all(f"MISSING {c}" in listed.stdout for c in missing), listed.stdout
    total = 8 * 9 * 2 + 5
    assert len(before.done_ids()) < total
    code, out, _ = _pytest(tmp_path, "-q", "-n", "2", "--resume", str(rep), report=None)
    assert code == 0, out
    assert all(f"MISSING {c}" in out for c in missing), out           # listed before the resume ...
    records = _records(rep)
    ids = Counter(r["case_id"] for r in records)
    assert len(ids) == total and set(ids.values()) == {1}
    assert {r["status"] for r in records} == {"PASS"}                         # ... and gone after it
    assert f"{total - len(before.done_ids())} passed" in out, out                 # only what had no final record


def test_two_runs_never_share_a_report_directory(tmp_path):
    write_cases(tmp_path, channels=[1], sides=(4,))
    rep = tmp_path / "rep"
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0")
    assert code == 0, out
    first = _records(rep)
    first_run = json.loads((rep / "run.json").read_text())["run_id"]
    runner = _pytest(tmp_path, "-q", "-n", "0", background=True, env={"SWCANN_FAULTS": _faults(f437="phase2_hang")})
    try:
        assert _wait_for(lambda: (rep / "journal").is_dir() and any(
            "f437" in e["case_id"] and e["run_id"] != first_run for e in _journal_entries(rep)))
        code, out, _ = _pytest(tmp_path, "-q", "-n", "2")
        assert code == 4 and "is in use by another run" in out, out
        assert len([ln for ln in out.splitlines() if ln.strip()]) == 1, out
    finally:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()
    kept = rep / "previous" / first_run / "results.jsonl"                   # moved aside, never overwritten
    assert [json.loads(x) for x in kept.read_text().splitlines()] == first


def test_a_device_that_cannot_be_brought_back_stops_its_worker(tmp_path, monkeypatch):
    """After a crash the fresh worker cannot open its device (here: the device id went away):
    the remaining cases of that worker are not run and say why, instead of each failing."""
    from harness.execution.supervisor import CaseExecutor
    from harness.operators import load_case_file

    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4,)))
    regular = [c for c in cases if c.group in ("before", "after")]
    crashing = next(c for c in cases if c.group == "f289")
    monkeypatch.setenv("SWCANN_FAULTS", _faults(f289="phase2_segv"))
    executor = CaseExecutor(EXECUTOR_SETTINGS)
    try:
        executor.start()
        assert flat(executor.run(regular[0], 60))["status"] == "PASS"
        assert flat(executor.run(crashing, 60))["status"] == "CRASH"
        executor.settings = executor.settings.with_(device="7")   # what the replacement worker will find
        lost = [flat(executor.run(c, 60)) for c in regular[1:4]]
    finally:
        executor.close()
    assert [r["status"] for r in lost] == ["MISSING"] * 3
    assert all(r["reason"].startswith("not run: device not usable after CRASH: --device 7") for r in lost), lost


def test_a_case_sent_ahead_keeps_its_own_verdict_and_deadline(tmp_path, monkeypatch):
    """While pytest reports one case the worker already runs the next (CaseExecutor.run's `ahead`).
    A case sent ahead that crashes or hangs is that case's CRASH/TIMEOUT, not its predecessor's; its
    deadline counts from when the worker began it; a rerun of the current case waits its turn
    behind the case sent ahead; the case after a lost worker is sent again and passes."""
    from harness.execution.supervisor import CaseExecutor
    from harness.operators import load_case_file

    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4, 6), hang_timeout_s=DEADLINE_S))
    regular = [c for c in cases if c.group in ("before", "after")]
    crashing = next(c for c in cases if c.group == "f289")
    hanging = next(c for c in cases if c.group == "f437")
    monkeypatch.setenv("SWCANN_FAULTS", _faults(f289="phase2_segv", f437="phase2_hang"))
    executor = CaseExecutor(EXECUTOR_SETTINGS)
    a, b, c, d = regular[:4]
    try:
        executor.start()
        seq = [flat(executor.run(a, 60, ahead=[(crashing, 60)])),        # the crash happens after a's answer
               flat(executor.run(crashing, 60, ahead=[(b, 60)])),        # b was never sent: the worker is gone
               flat(executor.run(b, 60, ahead=[(hanging, DEADLINE_S)])),
               flat(executor.run(b, 60, ahead=[(hanging, DEADLINE_S)]))]  # a rerun of b: behind the hang
        # the hang's answer, before it is asked for: (taken already, still in the worker's queue)
        hang_answered = (hanging.id in executor.case_ids(), executor.holds(hanging))
        seq += [flat(executor.run(hanging, DEADLINE_S, ahead=[(c, 60)])), flat(executor.run(c, 60, ahead=[(d, 60)])),
                flat(executor.run(d, 60))]
    finally:
        executor.close()
    assert [r["case_id"] for r in seq] == [x.id for x in (a, crashing, b, b, hanging, c, d)]
    assert [r["status"] for r in seq] == ["PASS", "CRASH", "PASS", "PASS", "TIMEOUT", "PASS", "PASS"]
    assert seq[1]["signal"] == "SIGSEGV" and seq[4]["deadline_s"] == DEADLINE_S <= seq[4]["duration_s"]
    # the rerun of b waited for the hang's deadline (it was queued behind it); the hang's record then
    # came from the queue, so asking for it cost no second deadline: it was taken before it was asked
    # for (said in order, not in seconds: a busy machine stretches the start-up of the fresh worker)
    assert hang_answered == (True, False), hang_answered
    # the rerun of b ran on the fresh worker after the hang: its record says so, in the worker's order
    assert seq[3]["recovered_from"]["cause"] == "TIMEOUT" and seq[3]["recovered_from"]["case_id"] == hanging.id


def test_a_crash_sent_ahead_is_told_with_its_own_output_while_pytest_lags(tmp_path, monkeypatch):
    """The worker may finish a case, start the one sent ahead and crash in it before the
    supervisor reads the first answer (pytest was busy reporting). The crash's output must
    still be that case's: the worker says where each case's output starts."""
    from harness.execution import channel as channel_mod
    from harness.execution.supervisor import CaseExecutor
    from harness.operators import load_case_file

    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4,)))
    a = next(c for c in cases if c.group == "before")
    crashing = next(c for c in cases if c.group == "f289")
    monkeypatch.setenv("SWCANN_FAULTS", _faults(f289="phase2_segv"))
    real_ready = channel_mod.Channel.ready

    def lagging_ready(self, timeout):
        time.sleep(1.0)                      # the worker runs ahead meanwhile
        return real_ready(self, timeout)

    executor = CaseExecutor(EXECUTOR_SETTINGS)
    try:
        executor.start()
        monkeypatch.setattr(channel_mod.Channel, "ready", lagging_ready)
        first = flat(executor.run(a, 60, ahead=[(crashing, 60)]))
        crashed = flat(executor.run(crashing, 60))
    finally:
        executor.close()
    assert first["status"] == "PASS" and crashed["status"] == "CRASH"
    assert "injected by SWCANN_FAULTS" in crashed["last_error"], crashed["last_error"]
    assert "Fatal Python error" in crashed["stack"]


def test_only_the_newest_previous_runs_are_kept(tmp_path):
    """A report directory reused night after night keeps --keep-previous earlier runs, not all."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    rep = tmp_path / "rep"
    run_ids = []
    for _ in range(4):
        code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--keep-previous", "2")
        assert code == 0, out
        run_ids.append(json.loads((rep / "run.json").read_text())["run_id"])
    kept = sorted(p.name for p in (rep / "previous").iterdir())
    assert kept == sorted(run_ids[1:3]), (kept, run_ids)        # the two runs before the last one
    assert all((rep / "previous" / r / "results.jsonl").is_file() for r in kept)
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--keep-previous", "-1")
    assert code == 4 and "--keep-previous: must be >= 0, got -1" in out, out


def _as_a_background_job():
    """What a shell script's `cmd &` does to cmd: SIGINT ignored. xdist stops a worker with a
    simulated SIGINT, so there a worker stuck in a case is SIGKILLed after 10 s instead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("jobs, whom", [("0", "group"), ("2", "controller"), ("2", "group")])
def test_sigterm_stops_the_run_as_ctrl_c_does(tmp_path, jobs, whom):
    """A CI job timeout, `timeout`, Slurm or `docker stop` sends SIGTERM, to the whole process group or
    to the first process only. The run stops without waiting out the hanging case's deadline,
    writes every report with what it has, says it was stopped, leaves no process and no temporary
    directory behind (not even an xdist worker's that xdist had to kill) and no case worker's death
    taken for a CRASH; --resume finishes it."""
    write_cases(tmp_path, channels=[1, 2], sides=(4, 6, 8))
    rep, tmp = tmp_path / "rep", tmp_path / "tmp"
    tmp.mkdir()
    proc = _pytest(tmp_path, "-q", "-n", jobs, background=True,
                   env={"SWCANN_FAULTS": _faults(f437="phase2_hang"), "TMPDIR": str(tmp)},
                   preexec_fn=_as_a_background_job if whom == "controller" else None)
    hung = lambda: any(e["event"] == "start" and "f437" in e["case_id"] for e in _journal_entries(rep)) \
        if (rep / "journal").is_dir() else False
    if not _wait_for(hung):
        stop_and_wait(proc, lambda p: os.killpg(p.pid, signal.SIGKILL))
        raise AssertionError("no start of f437")
    time.sleep(1.0)                  # into the hang: an xdist worker stuck there is killed by xdist
    out, took = stop_and_wait(proc, lambda p: os.killpg(p.pid, signal.SIGTERM) if whom == "group"
                              else p.send_signal(signal.SIGTERM))
    assert proc.returncode == 2, out                                   # pytest's "interrupted"
    assert took < 20, (took, out)                                       # the hang's deadline is 60 s

    def gone():
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        return False
    assert _wait_for(gone, 10), "processes of the stopped run are still alive"
    assert [p for p in os.listdir(tmp) if p.startswith("aclnn-")] == []  # the case workers' log directories
    records = _records(rep)
    total = 8 * 9 * 2 + 5
    assert len({r["case_id"] for r in records}) == len(records) == total, "one record per case"
    by_status = Counter(r["status"] for r in records)
    assert set(by_status) == {"PASS", "MISSING"} and by_status["PASS"] >= 72, by_status   # the 'before' group
    in_flight = next(r for r in records if _group(r) == "f437")
    assert in_flight["status"] == "MISSING" and "never finished (the run was stopped by SIGTERM at " in \
        in_flight["reason"], in_flight
    not_started = [r for r in records if r["status"] == "MISSING" and r is not in_flight]
    assert not_started and all("stopped by SIGTERM at " in r["reason"] for r in not_started), not_started[:2]
    summary = json.loads((rep / "summary.json").read_text())
    assert summary["identity"]["stopped"].startswith("SIGTERM at "), summary["identity"]
    assert '<property name="stopped" value="SIGTERM at ' in (rep / "junit.xml").read_text()
    # the grace period is for the records: report.html and summary.md say what was left out and how
    # to draw it (plots and causes cost seconds a runner's 10 s before SIGKILL does not give)
    assert "left out so that the run stops within seconds" in (rep / "report.html").read_text()
    assert "python -m harness.reporting render" in (rep / "summary.md").read_text()
    assert "STOPPED by SIGTERM at " in out and f"{by_status['MISSING']} case(s) MISSING" in out, out
    code, out, _ = _pytest(tmp_path, "-q", "-n", jobs, "--resume", str(rep), report=None)
    assert code == 0, out
    assert {r["status"] for r in _records(rep)} == {"PASS"}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_case_worker_leaves_stop_signals_to_its_supervisor(tmp_path, sig):
    """Ctrl-C or a SIGTERM sent to the whole process group reaches the case workers too: dying of it
    there would make the case in flight a CRASH of the library. They ignore it; the pytest process
    stops the run (test_sigterm_stops_the_run_as_ctrl_c_does)."""
    from harness.execution.supervisor import CaseExecutor
    from harness.operators import load_case_file

    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4,)))
    executor = CaseExecutor(EXECUTOR_SETTINGS)
    try:
        executor.start()
        worker = executor._proc.pid
        os.kill(worker, sig)
        record = flat(executor.run(cases[0], 60))
        assert record["status"] == "PASS", record
        assert executor._proc.pid == worker and executor.resets == 0      # the same worker ran it
    finally:
        executor.close()


def test_a_garbled_journal_line_is_counted_when_a_run_is_resumed(tmp_path):
    """A kill mid-write leaves a line cut short; a disk can damage one. --resume once dropped such a
    line without a word, and its message undercounted what would run again: a case whose only line
    (its start) was damaged ran again without being counted. Now the damaged lines are counted and
    named, and so are the cases they name."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    rep = tmp_path / "rep"
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0")
    assert code == 0, out
    path = next((rep / "journal").glob("*-main.jsonl"))
    lines = path.read_text().splitlines()
    only_start = next(ln for ln in lines if '"start"' in ln and "f361" in ln)
    cut_end = next(ln for ln in lines if '"end"' in ln and "f437" in ln)
    kept = [ln for ln in lines if not ('"end"' in ln and "f361" in ln)]           # f361 never finished ...
    kept = [only_start[:len(only_start) // 2] if ln == only_start else ln for ln in kept]   # ... and its start is cut
    kept = [cut_end[:len(cut_end) // 2] if ln == cut_end else ln for ln in kept]            # f437's end is cut
    path.write_text("\n".join(kept) + "\n")
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--resume", str(rep), report=None)
    assert code == 0, out
    assert "11 case(s) already finished, 2 will run again (2 MISSING, 0 never started)" in out, out
    damaged = [n for n, ln in enumerate(kept, 1) if ln in (only_start[:len(only_start) // 2], cut_end[:len(cut_end) // 2])]
    assert f"2 journal line(s) unreadable (damaged, or cut short by a kill): " \
           f"{', '.join(f'{path.name}:{n}' for n in damaged)}; the cases they name run again" in out, out
    assert "2 passed" in out and {r["status"] for r in _records(rep)} == {"PASS"} and len(_records(rep)) == 13
