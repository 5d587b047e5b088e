"""What a hostile library prints, or stops printing, is read right and boundedly (harness/execution/
logs.py): a library that closes its stderr shifts no case's output and silences no stack; a
gigabyte line before a crash costs the pytest process a 64 KB tail, not the gigabyte; a hang that
gives no stack says why (the dump signal ignored or blocked). The library misbehaves through
tests/hostile/sitecustomize.py."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.operators import load_case_file
from tests.hostile_lib import hostile_env, use_hostile
from tests.robust_cases import faulty_numel, run_each, write_cases

REPO = Path(__file__).resolve().parent.parent


def _cases(tmp_path):
    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4,)))
    return [c for c in cases if c.group == "before"], {c.group: c for c in cases if c.group.startswith("f")}


def test_a_closed_stderr_shifts_no_output_and_silences_no_stack(tmp_path, monkeypatch):
    """The library closes fd 2 in one case; a later case crashes. Its record must not call the harness's
    own start-up banner (or any earlier case's text) the library's last message, and must have the
    stack of the crash: both once came from fd 2, which the library had closed."""
    regular, faulty = _cases(tmp_path)
    use_hostile(monkeypatch, f"close_fd2@numel={faulty_numel('f289')},segv@numel={faulty_numel('f323')}",
                tmp_path / "state")
    seq = run_each(*((c, 60) for c in (regular[0], faulty["f289"], regular[1], faulty["f323"])))
    assert [r["status"] for r in seq] == ["PASS", "PASS", "PASS", "CRASH"], seq
    crash = seq[-1]
    # its own words went to the closed fd 2: there is no last message, and certainly not the banner
    assert not crash.get("last_error") and "SOFTWARE CANN" not in crash.get("output", ""), crash["reason"]
    assert crash["reason"] == "CRASH: the case worker died (SIGSEGV)", crash["reason"]
    stack = crash.get("stack", "")
    assert "Fatal Python error: Segmentation fault" in stack and "_launch_action" in stack, stack


FLOOD = r"""
import resource, sys
from pathlib import Path
from harness.execution.supervisor import CaseExecutor
from harness.operators import load_case_file
from tests.robust_cases import EXECUTOR_SETTINGS, flat, write_cases
_, cases = load_case_file(write_cases(Path(sys.argv[1]), channels=[1], sides=(4,)))
executor = CaseExecutor(EXECUTOR_SETTINGS)
try:
    executor.start()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    record = flat(executor.run(next(c for c in cases if c.group == "f289"), 120))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
finally:
    executor.close()
print(record["status"], (after - before) // 1024, len(record.get("output", "")), len(record.get("last_error", "")),
      "Fatal Python error" in record.get("stack", ""))
"""


def test_a_huge_stderr_line_before_a_crash_is_read_as_a_bounded_tail(tmp_path):
    """256 MiB on stderr without a newline, then SIGSEGV. Reading the crashed case's output once took
    the supervising process to three times that (the whole file, decoded, split); now it reads a
    64 KB tail. Measured in a process of its own, whose peak RSS is the supervisor's."""
    env = {**os.environ, **hostile_env(f"flood@numel={faulty_numel('f289')}", tmp_path / "state",
                                       HOSTILE_FLOOD_BYTES=256 << 20)}
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(REPO)])
    proc = subprocess.run([sys.executable, "-c", FLOOD, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=REPO)
    status, grew_mib, output, last, stack = proc.stdout.split()
    assert status == "CRASH" and stack == "True", proc.stdout + proc.stderr
    assert int(grew_mib) < 64, f"the supervisor's peak RSS grew by {grew_mib} MiB"
    assert int(output) <= 4000 and 0 < int(last) <= 1000


@pytest.mark.parametrize("action, says", [
    ("ignore_dump", "it ignored SIGUSR1 (SigIgn"),
    ("block_dump", "it blocked SIGUSR1 in all 1 of its threads (SigBlk"),
])
def test_a_timeout_without_a_stack_says_why(tmp_path, monkeypatch, action, says):
    """A hung worker that ignores or blocks the stack-dump signal leaves an empty stack: the record
    says that it did not answer, and why, read from /proc/PID/status before the kill."""
    _, faulty = _cases(tmp_path)
    use_hostile(monkeypatch, f"{action}@numel={faulty_numel('f289')}", tmp_path / "state")
    record, = run_each((faulty["f289"], 2.0))
    assert record["status"] == "TIMEOUT" and not record.get("stack"), record
    assert "no stack: the worker did not answer SIGUSR1 (the stack-dump signal)" in record["reason"], record["reason"]
    assert says in record["reason"], record["reason"]
    state = record["blocked_signals"]
    assert state["signal"] == "SIGUSR1" and state["ignored"] == (action == "ignore_dump")
    assert state["blocked"] == (action == "block_dump")


def test_a_hang_that_answers_keeps_its_stack(tmp_path, monkeypatch):
    """The other side of the test above: a plain hang is dumped, and no excuse is made."""
    _, faulty = _cases(tmp_path)
    monkeypatch.setenv("SWCANN_FAULTS", f"phase2_hang@numel={faulty_numel('f289')}")
    record, = run_each((faulty["f289"], 2.0))
    assert record["status"] == "TIMEOUT" and "Current thread" in record["stack"], record
    assert "no stack" not in record["reason"] and "blocked_signals" not in record
