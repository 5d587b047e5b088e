"""A case worker killed or leaving processes behind: a SIGKILL says whether the kernel's OOM killer
was the likely cause (execution/oom.py), and every process a library forked is gone when its case
ends, so a run neither waits for them nor leaves them running (execution/procfs.py). The library
misbehaves through tests/hostile/sitecustomize.py."""
from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest

from harness.execution import oom
from harness.execution.supervisor import CaseExecutor
from harness.operators import load_case_file
from tests.hostile_lib import alive, hostile_env, use_hostile
from tests.robust_cases import EXECUTOR_SETTINGS, faulty_numel, flat, run_each, write_cases
from tests.test_robust import _journal_entries, _pytest, _records

REPO = Path(__file__).resolve().parent.parent
F289 = faulty_numel("f289")


def _crashing(tmp_path):
    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4,)))
    return next(c for c in cases if c.group == "before"), next(c for c in cases if c.group == "f289")


@pytest.mark.parametrize("action, says", [
    ("oom", "likely the kernel's OOM killer: {file} oom_kill went from 0 to 1 while this worker ran; its peak RSS was"),
    ("sigkill", "not the OOM killer ({file} oom_kill stayed at 0; its peak RSS was"),
])
def test_a_sigkilled_worker_says_whether_the_oom_killer_took_it(tmp_path, monkeypatch, action, says):
    """The kernel's counter of OOM kills (here a file standing in for the cgroup's memory.events, which
    the hostile library bumps as the kernel would) is read when the worker starts and when it is found
    SIGKILLed; the record says what the difference means."""
    counter = tmp_path / "memory.events"
    counter.write_text("oom 0\noom_kill 0\n")
    monkeypatch.setattr(oom, "counter_files", lambda pid: [counter])
    regular, crashing = _crashing(tmp_path)
    use_hostile(monkeypatch, f"{action}@numel={F289}", tmp_path / "state", HOSTILE_OOM_FILE=counter)
    first, record = run_each((regular, 60), (crashing, 60))
    assert first["status"] == "PASS", first
    assert record["status"] == "CRASH" and record["signal"] == "SIGKILL", record
    assert says.format(file=counter) in record["reason"], record["reason"]
    assert record["oom"] in record["reason"]


def test_oom_counters_are_read_from_the_kernels_files(tmp_path, monkeypatch):
    """cgroup v2 memory.events, cgroup v1 memory.oom_control and /proc/vmstat all name the counter
    oom_kill; the first readable file wins, and this machine's own are readable."""
    v2, v1 = tmp_path / "memory.events", tmp_path / "memory.oom_control"
    v2.write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n")
    v1.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n")
    assert oom.read_counter([tmp_path / "absent", v2, v1]) == (str(v2), 2)
    assert oom.read_counter([v1]) == (str(v1), 5)
    assert oom.read_counter([tmp_path / "absent"]) is None
    import os
    found = oom.read_counter(oom.counter_files(os.getpid()))
    assert found is not None and found[1] >= 0, oom.counter_files(os.getpid())


def test_a_forked_child_neither_delays_the_run_nor_outlives_it(tmp_path):
    """The library forks a child that leaves the worker's process group and sleeps 60 s holding the
    worker's pipes and log. The run once waited 30 s for that pipe at its end and left the child
    running; now the worker kills it when the case ends, and the record says so."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    state = tmp_path / "state"
    code, out, wall = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1",
                              env=hostile_env(f"fork@numel={F289}", state, HOSTILE_CHILD_S=60))
    exited = time.time()
    assert code == 0, out
    children = [int(p) for p in (state / "children").read_text().split()]
    assert len(children) == 1 and not alive(children[0]), children
    # nothing held the run's end: from its last case's end (its journal) to its exit, less than the 30 s
    # the held pipe once cost there (CaseExecutor.close waits that long for a worker's goodbye), let alone
    # the child's 60 s; the start-up and cases before, which a busy machine stretches, do not count
    last_end = max(e["t"] for e in _journal_entries(tmp_path / "rep") if e["event"] == "end")
    assert exited - last_end < 30, (exited - last_end, wall)
    left = [r for r in _records(tmp_path / "rep") if r.get("left_processes")]
    assert [r["group"] for r in left] == ["f289"] and "left 1 process(es) running" in left[0]["left_processes"]
    schema = json.loads((REPO / "harness" / "reporting" / "record.schema.json").read_text())
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(left[0]))


def test_what_a_crashed_worker_left_behind_is_killed_with_it(tmp_path, monkeypatch):
    """The library forks (the child leaves the process group) and the worker dies in the same launch:
    the child is re-parented to the zygote, a child subreaper, which kills it the moment the worker
    dies, so the crash is seen at once (the child held the worker's pipe open)."""
    regular, crashing = _crashing(tmp_path)
    state = tmp_path / "state"
    use_hostile(monkeypatch, f"fork@numel={F289},segv@numel={F289}", state, HOSTILE_CHILD_S=120)
    executor = CaseExecutor(EXECUTOR_SETTINGS)
    try:
        executor.start()
        started = time.monotonic()
        record = flat(executor.run(crashing, 60))
        took = time.monotonic() - started
        children = [int(p) for p in (state / "children").read_text().split()]
        gone = not alive(children[0])
        assert flat(executor.run(regular, 60))["status"] == "PASS"      # a fresh worker goes on
    finally:
        executor.close()
    # the child held the worker's pipe: alive, it hid the crash until the case's deadline (a TIMEOUT)
    assert record["status"] == "CRASH" and record["signal"] == "SIGSEGV", record["reason"]
    assert took < 20, took
    assert len(children) == 1 and gone, children
