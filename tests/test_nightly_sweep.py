"""The nightly-sweep rehearsal: 4 SoC families x 2 shards on the software CANN, each job a
separate process, merged into one report.html that a real headless Chromium renders.

The selection is small on purpose (one operator, float32, three groups) so CI stays fast; the
injected failures are real (SWCANN_DEVIATIONS=1: the dev_* cases expose their deviation).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ["ascend910b", "ascend910_93", "ascend950", "ascend910"]
SELECT = ["cases/avg_pool2d_backward.yaml", "-k", "(dev_global_padding or global_4d or windows) and float32"]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def chromium_or_skip() -> str:
    """Chromium is required in CI (CI=true); elsewhere its absence skips, saying how to install it."""
    if CHROMIUM:
        return CHROMIUM
    if os.environ.get("CI") == "true":
        pytest.fail("chromium not found, and CI must run the browser test (.ci/run installs the Debian package)")
    pytest.skip("chromium not installed (apt-get install chromium); the browser check of report.html needs it")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("nightly")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWCANN_", "ASCEND_"))}
    env["SWCANN_DEVIATIONS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "harness.reporting", "sweep", "-o", str(out), "--families",
                           ",".join(FAMILIES), "--shards", "2", "--parallel", "2", "--", *SELECT, "-n", "0", "-q",
                           "--no-html"],                     # per-job pages are not needed: the merged one is
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return out, proc


def test_sweep_runs_every_job_and_merges_without_problems(sweep):
    out, proc = sweep
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("== job ") == 8
    assert "sweep: 8 job(s): 8 ran cases" in proc.stdout                 # none selected nothing or stopped early
    summary = json.loads((out / "merged" / "summary.json").read_text())
    assert summary["problems"] == []
    assert sorted({(r["identity"]["family"], tuple(r["shard"])) for r in summary["runs"]}) == \
           sorted((f, (i, 2)) for f in FAMILIES for i in (1, 2))
    records = [json.loads(x) for x in (out / "merged" / "results.jsonl").read_text().splitlines()]
    per_family = {f: [r for r in records if r["family"] == f] for f in FAMILIES}
    for fam, recs in per_family.items():
        shards = {r["_run"] for r in recs}
        assert len(shards) == 2, fam                                   # both shards ran cases of each family
        assert {r["status"] for r in recs} == {"PASS", "FAIL"}, fam
        assert len({r["case_id"] for r in recs}) == len(recs)
    assert summary["totals"]["FAIL"] == 12                             # 3 dev_global_padding cases x 4 families


class _Dom(HTMLParser):
    """The bits of the rendered DOM the test looks at: the matrix cells and the failure details."""

    def __init__(self):
        super().__init__()
        self.stack, self.cells, self.failures, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.stack.append((tag, a))
        if tag == "td" and a.get("data-family"):
            self.cells.append({"family": a["data-family"], "class": a.get("class", ""), "text": ""})
        if tag == "details" and "failure" in a.get("class", ""):
            self.failures.append({"status": a.get("data-status"), "open": "open" in a, "text": ""})

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        tags = [t for t, _ in self.stack]
        if "td" in tags and self.cells and any(a.get("data-family") for t, a in self.stack if t == "td"):
            self.cells[-1]["text"] += data
        if "details" in tags and self.failures:
            self.failures[-1]["text"] += data


def test_chromium_renders_the_matrix_and_a_failure(sweep, tmp_path):
    browser = chromium_or_skip()
    out, _ = sweep
    page = out / "merged" / "report.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and "<table" in dom.stdout, dom.stderr[-2000:]
    parsed = _Dom()
    parsed.feed(dom.stdout)
    assert {c["family"] for c in parsed.cells} == set(FAMILIES)
    fail_cells = [c for c in parsed.cells if "cell-fail" in c["class"]]
    assert len(fail_cells) == 4 and all("FAIL 3" in c["text"] and "PASS" in c["text"] for c in fail_cells), fail_cells
    first = parsed.failures[0]
    assert first["status"] == "FAIL" and first["open"]
    for needle in ("dev_global_padding", "worst element", "golden", "actual", "max_abs_err_small", "repro",
                   "SWCANN_DEVIATIONS=1"):
        assert needle in first["text"], needle
    shot = tmp_path / "report.png"
    subprocess.run([browser, *flags, "--window-size=1400,2000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, text=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000   # a page, not a blank


def test_parallel_jobs_share_the_cores_as_case_workers(monkeypatch, tmp_path):
    """Jobs run side by side split the cores between them instead of each taking one case worker
    per core; a --case-workers of the user's own is left alone."""
    from harness.execution import sizing
    from harness.reporting import sweep
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(sizing, "available_memory", lambda: 64 << 30)

    def workers(cmd):
        return [cmd[i + 1] for i, x in enumerate(cmd) if x == "--case-workers"]

    assert workers(sweep.job_command("ascend910b", 1, 2, tmp_path, "aclnn", [], parallel=1)) == []
    assert workers(sweep.job_command("ascend910b", 1, 2, tmp_path, "aclnn", [], parallel=2)) == ["4"]
    assert workers(sweep.job_command("ascend910b", 1, 2, tmp_path, "aclnn", [], parallel=16)) == ["1"]
    assert workers(sweep.job_command("ascend910b", 1, 2, tmp_path, "aclnn", ["--case-workers", "3"],
                                     parallel=2)) == ["3"]


def _sweep_until_its_first_job_hangs(tmp_path):
    """A sweep over two families whose first job reaches a hanging case; (sweep, its out dir, the
    case file). The sweep leads a process group of its own."""
    import time

    from tests.robust_cases import faulty_numel, write_cases
    cases = write_cases(tmp_path / "c", channels=[1], sides=(4, 6))
    out = tmp_path / "nightly"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWCANN_", "ASCEND_"))}
    env["SWCANN_FAULTS"] = f"phase2_hang@numel={faulty_numel('f437')}"
    proc = subprocess.Popen([sys.executable, "-m", "harness.reporting", "sweep", "-o", str(out), "--families",
                             "ascend910b,ascend950", "--shards", "1", "--", str(cases), "-n", "0", "-q", "--no-html"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    journal = out / "ascend910b-1" / "journal"
    deadline = time.monotonic() + 120
    while not (journal.is_dir() and any("f437" in f.read_text() for f in journal.glob("*.jsonl"))):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the first job never reached f437: {proc.communicate()[0]}")
        time.sleep(0.2)
    time.sleep(0.5)
    return proc, out, cases


def _jobs_left(cases) -> str:
    return subprocess.run(["pgrep", "-f", str(cases)], capture_output=True, text=True).stdout


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stopped_sweep_stops_its_jobs_and_merges_what_they_wrote(tmp_path, sig):
    """SIGTERM to the sweep's process group (its time limit, `timeout`) or Ctrl-C in its terminal,
    while its first job is in a hanging case: that job stops and writes its reports, the second
    never starts, the merge says so, the sweep exits 2 at once and leaves no job running. Jobs have
    sessions of their own, so a stop reaches them once, from the sweep, never a second time from
    the terminal or the group (a job killed by it would lose its reports)."""
    import signal

    from tests.robust_cases import stop_and_wait
    proc, out, cases = _sweep_until_its_first_job_hangs(tmp_path)
    # as timeout(1), CI runners and a terminal do: to the whole group
    text, took = stop_and_wait(proc, lambda p: os.killpg(p.pid, getattr(signal, sig)))
    assert proc.returncode == 2, text
    assert took < 20, (took, text)                                       # the hang's deadline is 60 s
    assert f"sweep: stopped by {'SIGTERM at ' if sig == 'SIGTERM' else 'Ctrl-C'}" in text, text
    assert "1 job(s) never started" in text, text
    assert not (out / "ascend950-1").exists()
    job = json.loads((out / "ascend910b-1" / "summary.json").read_text())
    assert job["identity"]["stopped"].startswith("SIGTERM at "), job["identity"]
    merged = json.loads((out / "merged" / "summary.json").read_text())
    problems = "\n".join(f"{p['kind']}: {p['message']}" for p in merged["problems"])
    assert "stopped: " in problems and "exit 2 (interrupted)" in problems, problems
    assert "family ascend950: no run reported" in problems, problems
    assert _jobs_left(cases) == ""


def test_a_job_outlives_no_killed_sweep(tmp_path):
    """A sweep SIGKILLed (a CI runner's grace period over) cannot pass a stop on: its running job
    gets SIGTERM from the kernel instead (PR_SET_PDEATHSIG), stops and writes its reports, rather
    than running on, holding its devices, with nobody to merge it."""
    import signal
    import time

    proc, out, cases = _sweep_until_its_first_job_hangs(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    end = time.monotonic() + 20
    while _jobs_left(cases) and time.monotonic() < end:
        time.sleep(0.2)
    assert _jobs_left(cases) == ""
    job = json.loads((out / "ascend910b-1" / "summary.json").read_text())
    assert job["identity"]["stopped"].startswith("SIGTERM at "), job["identity"]
