"""A record's one way to results.jsonl: the journal of the process that ran its case. The
controller writes results.jsonl once, at the end, from the journals. A case item that fails for
another reason than its verdict (the harness raised around it) is journalled in the process that
ran it, with or without xdist; nothing travels on pytest's reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.robust_cases import write_cases

REPO = Path(__file__).resolve().parent.parent

# A plugin that raises around two cases: after f289 ran and was recorded (its call phase), and
# before f437 ran (its set-up), so that no record of it was ever made.
PLANTED = '''
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    if "f289" in item.nodeid:
        raise RuntimeError("planted after the case")
    return result

def pytest_runtest_setup(item):
    if "f437" in item.nodeid:
        raise RuntimeError("planted before the case")
'''


@pytest.mark.parametrize("jobs", ["0", "2"])
def test_a_harness_error_around_a_case_reaches_results_once(tmp_path, jobs):
    write_cases(tmp_path, channels=[1], sides=(4,))
    (tmp_path / "planted_harness_error.py").write_text(PLANTED)
    rep = tmp_path / "rep"
    cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "planted_harness_error", str(tmp_path / "cases"),
           "--rootdir", str(tmp_path), "-c", "/dev/null", "--backend", "aclnn", "-p", "no:cacheprovider",
           "-q", "-n", jobs, "--report-dir", str(rep)]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    env.pop("SWCANN_FAULTS", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    records = [json.loads(x) for x in (rep / "results.jsonl").read_text().splitlines()]
    ids = Counter(r["case_id"] for r in records)
    assert len(ids) == 13 and set(ids.values()) == {1}, ids
    bad = {r["case_id"].split(".", 1)[1].split("[", 1)[0]: r for r in records if r["status"] != "PASS"}
    assert set(bad) == {"f289", "f437"}, {g: r["status"] for g, r in bad.items()}
    after, before = bad["f289"], bad["f437"]
    assert after["status"] == before["status"] == "FAIL"
    assert after["reason"].startswith("harness error: ") and "planted after the case" in after["reason"], after
    assert after["dtype"] == "float32" and after["shape"] and after["attrs"], after   # the judged case's facts kept
    assert before["reason"].startswith("FAIL: harness error: ") and "planted before the case" in before["reason"]
    assert before["op"] == "MaxPool2dWithIndicesBackward", before          # from the run's manifest
    # each record came through a journal: the last record of each case there is the one in results.jsonl
    journalled = {}
    for path in sorted((rep / "journal").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry["event"] == "end":
                journalled[entry["record"]["case_id"]] = entry["record"]
    assert {c: r["status"] for c, r in journalled.items()} == {r["case_id"]: r["status"] for r in records}
    assert journalled[after["case_id"]]["reason"] == after["reason"]
