"""The pytest plugin end to end, in a subprocess: ids, selection, reports, JUnit provenance."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.test_casefile_errors import BASE


@pytest.fixture()
def suite(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "mp.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))

    def run(*args):
        cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "--rootdir", str(tmp_path),
               "-c", "/dev/null", "--report-dir", str(tmp_path / "rep"), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        return proc.returncode, proc.stdout + proc.stderr
    run.tmp = tmp_path
    return run


def test_report_provenance_and_summary(suite):
    code, out = suite("-q", "--junitxml", str(suite.tmp / "j.xml"))
    assert code == 0, out
    assert "aclnn conformance summary" in out and "SIMULATED (not hardware)" in out
    assert "MaxPool2dWithIndicesBackward" in out                    # the per-operator table
    props = {p.get("name"): p.get("value") for p in ET.parse(suite.tmp / "j.xml").iter("property")}
    assert props["backend"] == "torch" and props["simulated"] == "true" and "torch" in props["library"]
    records = [json.loads(x) for x in (suite.tmp / "rep" / "results.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} == {"PASS", "SKIP"}
    assert all(r["backend"]["simulated"] == "true" for r in records)
    summary = json.loads((suite.tmp / "rep" / "summary.json").read_text())
    assert summary["per_operator"]["MaxPool2dWithIndicesBackward"] == {"PASS": 1, "SKIP": 1}


def test_a_run_that_selects_nothing_reports_nothing_of_the_run_before(suite):
    """The manifest of the run before once stayed in the report directory, and a run whose -k
    matched nothing reported all of that run's cases as MISSING (and exited 1)."""
    code, out = suite("-q")
    assert code == 0, out
    code, out = suite("-q", "-k", "no_such_case")
    assert code == 5 and "MISSING" not in out, out
    assert "NO CASE SELECTED: all 2 collected case(s) were deselected" in out, out
    assert (suite.tmp / "rep" / "results.jsonl").read_text() == ""
    archived = list((suite.tmp / "rep" / "previous").iterdir())
    assert len(archived) == 1 and (archived[0] / "manifest.json").is_file() and (archived[0] / "report.html").is_file()


def test_ids_are_readable_node_ids_usable_with_k(suite):
    code, out = suite("--collect-only", "-q")
    assert "mp.yaml::basic[float32-int32-1x2x4x4-ks2x2_s2x2_p0x0_d1x1_cm0-NCHW-contiguous-uniform]" in out, out
    assert "mp.yaml::bad_args[B1]" in out
    code, out = suite("-q", "-k", "basic and 1x2x4x4")
    assert code == 0 and "1 passed" in out and "1 deselected" in out, out


def test_markers_select_op_kind_and_family(suite):
    code, out = suite("-q", "-m", "invalid")
    assert "1 skipped" in out and "1 deselected" in out, out
    code, out = suite("-q", "-m", "max_pool2d_with_indices_backward and ascend950 and valid")
    assert "1 passed" in out, out


def test_unknown_soc_is_a_one_line_usage_error(suite):
    code, out = suite("-q", "--soc", "ascend9999")
    assert code == 4 and "unknown SoC family 'ascend9999'" in out, out


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan"])
def test_case_timeout_must_be_a_finite_positive_number(suite, value):
    """inf once reached select() as an overflowing timestamp (every case MISSING), nan made every
    case a TIMEOUT."""
    code, out = suite("-q", "--case-timeout", value)
    assert code == 4 and f"--case-timeout: must be a finite number of seconds > 0, got {value}" in out, out


def test_family_filter_deselects_cases_of_other_families(suite):
    code, out = suite("-q", "--soc", "ascend310p")
    assert "2 deselected" in out, out


def test_slow_tier_is_opt_in(suite, tmp_path):
    doc = yaml.safe_load((tmp_path / "cases" / "mp.yaml").read_text())
    doc["groups"][0]["tier"] = "slow"
    (tmp_path / "cases" / "mp.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out = suite("-q", "--collect-only")
    assert "basic[" not in out.split("deselected")[0] or "1 deselected" in out, out
    code, out = suite("-q", "--tier", "slow")
    assert "1 passed" in out and "1 deselected" in out, out


def test_xdist_records_each_case_once(suite):
    code, out = suite("-q", "-n", "2")
    assert code == 0, out
    records = (suite.tmp / "rep" / "results.jsonl").read_text().splitlines()
    assert len(records) == 2, records      # workers forward reports; only the controller writes


def test_worker_crash_is_recorded_and_the_run_goes_on(suite, tmp_path):
    """A library that kills its process (segfault, abort) costs one case, not the run."""
    (tmp_path / "crasher.py").write_text(
        "import os\n"
        "def pytest_runtest_call(item):\n"
        "    if 'bad_args' in item.name:\n"
        "        os.abort()\n")
    import os
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{tmp_path}:{env_path}"
    try:
        code, out = suite("-q", "-n", "2", "-p", "crasher", "--backend", "torch")
    finally:
        os.environ["PYTHONPATH"] = env_path
    assert code == 1, out
    assert "crashed" in out, out
    records = [json.loads(x) for x in (tmp_path / "rep" / "results.jsonl").read_text().splitlines()]
    outcomes = sorted((r["case_id"].split("[")[0], r["status"]) for r in records)
    assert outcomes == [("MaxPool2dWithIndicesBackward.bad_args", "CRASH"),
                        ("MaxPool2dWithIndicesBackward.basic", "PASS")], outcomes


def test_the_pytest_side_of_a_run_never_imports_torch(suite, tmp_path, monkeypatch):
    """Cases are prepared, computed and judged in the case worker; the pytest process (and under
    xdist each of its workers) only collects, schedules and reports. Importing torch there cost
    about a second of CPU per process, paid again by every xdist worker."""
    (tmp_path / "torch_probe.py").write_text("import sys\n"
                                             "def pytest_sessionfinish(session):\n"
                                             "    print('TORCH-IN-PYTEST-PROCESS', 'torch' in sys.modules)\n")
    monkeypatch.setenv("PYTHONPATH", ":".join([str(tmp_path), *sys.path]))
    code, out = suite("--backend", "aclnn", "-p", "torch_probe", "-s", "-n", "0")
    assert code == 0, out
    assert "TORCH-IN-PYTEST-PROCESS False" in out, out[-3000:]


def test_an_xdist_worker_sends_ahead_what_it_was_dealt(suite, tmp_path, monkeypatch):
    """Under xdist a worker knows more than `nextitem`: the controller deals it several items at
    once. They go to its case worker ahead (plugin/private_api.dealt), as in a run without xdist; with
    `nextitem` alone the case worker idled while its pytest process reported."""
    doc = yaml.safe_load((tmp_path / "cases" / "mp.yaml").read_text())
    doc["groups"][0]["matrix"]["shape"] = [[1, 2, 4, 4 + i] for i in range(12)]
    (tmp_path / "cases" / "mp.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    seen = tmp_path / "upcoming.txt"
    (tmp_path / "ahead_probe.py").write_text(
        "def pytest_runtest_call(item):\n"
        "    lookahead = item.config.pluginmanager.get_plugin('aclnn-lookahead')\n"
        f"    open({str(seen)!r}, 'a').write(f'{{len(lookahead())}}\\n')\n")
    monkeypatch.setenv("PYTHONPATH", ":".join([str(tmp_path), *sys.path]))
    code, out = suite("-q", "-n", "1", "-p", "ahead_probe", "--backend", "aclnn")
    assert code == 0, out
    counts = [int(x) for x in seen.read_text().split()]
    assert len(counts) == 13, counts
    assert max(counts) > 1, counts       # more than nextitem
    assert counts[-1] == 0, counts        # nothing after the last item
