"""A replacement worker's start-up has a deadline of its own (harness/execution/supervisor.py).

The library misbehaves through tests/hostile/sitecustomize.py: the case worker crashes, and every
later aclInit there hangs."""
from __future__ import annotations

import time

from harness.execution.supervisor import CaseExecutor
from harness.operators import load_case_file
from tests.hostile_lib import use_hostile
from tests.robust_cases import EXECUTOR_SETTINGS, flat, write_cases


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
