"""Healthy workers take over from one whose device is lost (harness/plugin/takeover.py), and a
replacement worker's start-up has a deadline of its own (harness/execution/supervisor.py).

The library misbehaves through tests/hostile/sitecustomize.py: in xdist worker gw0 (or in one case
worker of a pool) the case worker crashes, and every later aclInit there fails or hangs."""
from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

from harness.execution.supervisor import START_SAY_FIRST_S, CaseExecutor
from harness.operators import load_case_file
from tests.hostile_lib import hostile_env, use_hostile
from tests.robust_cases import EXECUTOR_SETTINGS, faulty_numel, flat, write_cases
from tests.test_robust import _pytest, _records


def _lines(out: str, text: str) -> list[str]:
    return [ln for ln in out.splitlines() if text in ln]


def test_an_xdist_worker_whose_device_is_lost_hands_its_cases_to_the_others(tmp_path):
    """gw0's case worker crashes at its 3rd case and gw0 can open no device again. gw0 once went on
    taking cases and marked every one MISSING while gw1 was healthy; now it leaves, xdist hands its
    cases to the others and the run says so once. No case is MISSING; the crash is the only failure."""
    write_cases(tmp_path, channels=[1, 2], sides=(4, 6, 8))
    spec = "segv@worker=gw0&case=3,init_fail_silent@worker=gw0&start=2"
    code, out, _ = _pytest(tmp_path, "-q", "-n", "2", env=hostile_env(spec, tmp_path / "state"))
    records = _records(tmp_path / "rep")
    by_status = Counter(r["status"] for r in records)
    assert len(records) == len({r["case_id"] for r in records}) == 8 * 9 * 2 + 5
    assert by_status == {"PASS": 148, "CRASH": 1}, (by_status, out[-3000:])
    assert code == 1, out
    lost = _lines(out, "stops taking cases")
    assert len(lost) == 1 and lost[0].startswith("DEVICE LOST: xdist worker gw0 stops taking cases"), out
    assert "aclInit failed with 100000: the library gave no error message" in lost[0], lost
    assert " 1 rescheduled" in out.splitlines()[-1], out.splitlines()[-1]
    assert {r["worker"] for r in records} - {"gw0"}, "the other workers ran the rest"


def test_a_case_worker_whose_device_is_lost_leaves_the_pool_to_the_others(tmp_path):
    """The same in one pytest process with two case workers: the one that lost its device stops taking
    cases (the pool drops it) and the run says so once; no case is MISSING. 32 cases follow the crash: a
    crashed worker is replaced when it is next dealt a case, and with only the 4 faulty groups after it
    the healthy worker could take them all ahead, so that no replacement was ever started (1 run in 12 here
    beside a CPU hog; 0 in 16 with the 32 after it)."""
    write_cases(tmp_path, channels=[1, 2], sides=(4, 6))
    # starts 1 and 2 are the two case workers; start 3 is the crashed one's replacement
    spec = f"segv@numel={faulty_numel('f289')},init_fail_silent@start=3"
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "2", env=hostile_env(spec, tmp_path / "state"))
    records = _records(tmp_path / "rep")
    by_status = Counter(r["status"] for r in records)
    assert by_status == {"PASS": 68, "CRASH": 1}, (by_status, out[-3000:])
    lost = _lines(out, "stops taking cases")
    assert len(lost) == 1 and lost[0].startswith("DEVICE LOST: case worker main."), out
    assert "the other 1 case worker(s) of this process go on" in lost[0], lost


def test_a_hung_start_up_is_a_timeout_within_the_deadline(tmp_path, monkeypatch):
    """After a crash the replacement worker hangs in aclInit. Its start-up has the deadline of the case
    waiting for it (here the 10 s floor), not START_TIMEOUT_S (300 s) of silence: the device is lost
    with a reason that says so, with the start-up's stack."""
    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4,)))
    regular = [c for c in cases if c.group == "before"]
    use_hostile(monkeypatch, "segv@case=2,init_hang@start=2", tmp_path / "state")
    executor = CaseExecutor(EXECUTOR_SETTINGS)
    try:
        executor.start()
        assert flat(executor.run(regular[0], 60))["status"] == "PASS"
        assert flat(executor.run(regular[1], 60))["status"] == "CRASH"
        started = time.monotonic()
        record = flat(executor.run(regular[2], 2.0))
        waited = time.monotonic() - started
    finally:
        executor.close()
    assert waited < 30, waited
    assert record["status"] == "MISSING", record
    assert record["reason"].startswith("not run: device not usable after CRASH: TIMEOUT of start-up: the case worker "
                                       "did not finish opening the aclnn backend within 10 s (the deadline of the "
                                       "case waiting for it, at least 10 s)"), record["reason"]
    assert "[hostile] aclInit: waiting for a device that never answers" in record["reason"]
    assert "Current thread" in record["stack"] and "_hang_in_c" in record["stack"], record


def test_a_start_up_that_keeps_the_run_waiting_says_so(tmp_path):
    """The run's first case worker hangs in aclInit. That start-up may take START_TIMEOUT_S (300 s: a
    real driver's first aclInit can be slow), but not in silence: after START_SAY_FIRST_S the terminal
    says who is waiting for what, and until when."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    proc = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1", env=hostile_env("init_hang@start=1", tmp_path / "state"),
                   background=True)
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    reader = threading.Thread(target=lambda: lines.extend((time.monotonic() - started, ln) for ln in proc.stdout),
                              daemon=True)
    reader.start()
    try:
        while time.monotonic() - started < START_SAY_FIRST_S + 50 and not _said(lines) and proc.poll() is None:
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    said = _said(lines)
    assert said, "".join(ln for _, ln in lines)[-3000:]
    at, line = said[0]
    assert line.strip() == ("case worker main still opening the aclnn backend after 10 s (aclInit, device set-up); "
                            "it gives up at 300 s"), line
    assert at >= START_SAY_FIRST_S * 0.95, at


def _said(lines: list[tuple[float, str]]) -> list[tuple[float, str]]:
    return [(at, ln) for at, ln in list(lines) if "still opening" in ln]
