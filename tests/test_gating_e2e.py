"""Gating, reruns, repro commands and failure dumps, end to end in subprocesses.

The failures are real: SWCANN_DEVIATIONS=1 makes the software CANN reproduce documented
deviations, so the dev_* cases fail with real metrics (tests/test_deviations.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.judge import compare
from harness.reporting import dump_meta as dump
from tests.test_casefile_errors import BASE

ROOT = Path(__file__).resolve().parents[1]
DEV = ["cases/avg_pool2d_backward.yaml", "-k", "dev_global_padding and float32"]    # 3 cases


def _env(deviations: bool, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWCANN_", "ASCEND_"))}
    if deviations:
        env["SWCANN_DEVIATIONS"] = "1"
    return {**env, **extra}


def _suite(tmp_path, *args, deviations=True, report="rep"):
    cmd = [sys.executable, "-m", "pytest", *DEV, "--backend", "aclnn", "--soc", "ascend910b", "-n", "0", "-q",
           "-p", "no:cacheprovider", "--no-html", "--report-dir", str(tmp_path / report), *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(deviations), capture_output=True, text=True, timeout=300)
    records = [json.loads(x) for x in (tmp_path / report / "results.jsonl").read_text().splitlines()]
    return proc.returncode, proc.stdout + proc.stderr, records


def _baseline(tmp_path, pattern="AvgPool2dBackward.dev_global_padding[float32-*") -> Path:
    path = tmp_path / "baselines" / "aclnn-ascend910b.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({"target": {"backend": "aclnn", "family": "ascend910b"},
                                    "fails": [{"case": pattern, "reason": "global pool ignores padding (spec G.8)",
                                               "link": "https://issues.example/42"}]}))
    return path.parent


def test_new_failure_fails_the_gate_and_is_printed_first(tmp_path):
    empty = tmp_path / "none"
    empty.mkdir()
    code, out, records = _suite(tmp_path, "--gate", str(empty))
    assert code == 1, out
    assert {r["status"] for r in records} == {"FAIL"} and len(records) == 3
    summary = out.split("aclnn conformance summary")[1]
    assert summary.splitlines()[1].startswith("GATE FAILED: 3 new problem(s)"), summary
    assert "repro: SWCANN_DEVIATIONS=1" in summary


def test_baselined_failure_passes_the_gate_as_expected_fail(tmp_path):
    code, out, records = _suite(tmp_path, "--gate", str(_baseline(tmp_path)))
    assert code == 0, out
    assert {r["status"] for r in records} == {"EXPECTED_FAIL"}
    assert all(r["raw_status"] == "FAIL" and r["waiver"]["link"] == "https://issues.example/42" for r in records)
    assert "GATE PASSED (3 expected failure(s)" in out and "3 xfailed" in out


def test_stale_baseline_entry_is_unexpected_pass_and_fails_the_gate(tmp_path):
    code, out, records = _suite(tmp_path, "--gate", str(_baseline(tmp_path)), deviations=False)
    assert code == 1, out
    assert {r["status"] for r in records} == {"UNEXPECTED_PASS"} and {r["raw_status"] for r in records} == {"PASS"}
    assert "remove the stale entry" in out and "GATE FAILED: 3 new problem(s)" in out


def test_fresh_baseline_from_a_run_makes_the_next_run_green(tmp_path):
    code, _, _ = _suite(tmp_path)
    assert code == 1
    written = tmp_path / "b" / "aclnn-ascend910b.yaml"
    proc = subprocess.run([sys.executable, "-m", "harness.reporting", "baseline", str(tmp_path / "rep"), "-o", str(written),
                           "--link", "https://issues.example/7"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "3 fails, 0 flakes for aclnn-ascend910b" in proc.stdout, proc.stdout + proc.stderr
    code, out, records = _suite(tmp_path, "--gate", str(written), report="rep2")
    assert code == 0 and {r["status"] for r in records} == {"EXPECTED_FAIL"}, out


def test_baseline_for_another_family_is_a_one_line_usage_error(tmp_path):
    path = _baseline(tmp_path) / "aclnn-ascend910b.yaml"
    proc = subprocess.run([sys.executable, "-m", "pytest", *DEV, "--backend", "aclnn", "--soc", "ascend950", "-n", "0",
                           "-q", "-p", "no:cacheprovider", "--gate", str(path), "--report-dir", str(tmp_path / "r")],
                          cwd=ROOT, env=_env(True), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "baseline is for aclnn-ascend910b, but the run is aclnn-ascend950" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_repro_command_reruns_that_case_alone_and_reproduces_it(tmp_path):
    code, out, records = _suite(tmp_path, "--dump-failures")
    assert code == 1
    failing = records[1]
    repro = failing["repro"]
    assert repro in out                                     # printed, not only recorded
    assert repro.startswith("SWCANN_DEVIATIONS=1 ") and "./run suite '" in repro
    # the printed command, as a user would paste it (its environment does not carry the switch)
    proc = subprocess.run(repro + f" -q -p no:cacheprovider --no-html --report-dir {tmp_path / 'again'}", shell=True,
                          cwd=ROOT, env=_env(False, VENV=sys.prefix), capture_output=True, text=True, timeout=300)
    rerun = [json.loads(x) for x in (tmp_path / "again" / "results.jsonl").read_text().splitlines()]
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    assert [(r["case_id"], r["status"], r["metrics"]) for r in rerun] == \
           [(failing["case_id"], "FAIL", failing["metrics"])]


def test_dump_reloads_with_inputs_golden_actual_and_the_same_metrics(tmp_path):
    code, _, records = _suite(tmp_path, "--dump-failures")
    rec = records[0]
    meta, arrays = dump.load(Path(rec["dump"]))
    assert meta["case_id"] == rec["case_id"] and meta["repro"] == rec["repro"] and meta["metrics"] == rec["metrics"]
    assert {"input.gradOutput", "input.self", "golden.gradInput", "actual.gradInput"} <= set(arrays)
    assert arrays["golden.gradInput"].dtype == np.float64 and arrays["actual.gradInput"].dtype == np.float32
    assert arrays["actual.gradInput"].shape == arrays["golden.gradInput"].shape == arrays["input.self"].shape
    verdict = compare.compare(rec["standard"], arrays["golden.gradInput"], arrays["actual.gradInput"], rec["dtype"])
    assert not verdict.passed
    assert {m["name"]: m["value"] for m in rec["metrics"]} == \
           {m: pytest.approx(verdict.metrics[m], rel=1e-12) for m in ("abs_eb", "max_abs_err_small", "max_rel_err_large")}
    assert tuple(verdict.worst["index"]) == tuple(rec["worst"]["index"])


def test_dump_has_a_c_reproducer_that_fails_the_same_way_without_the_harness(tmp_path, swcann_root):
    """--dump-failures on the aclnn backend writes each failing case's standalone C program beside
    its arrays; built with the documented command and run against the same library (the deviation
    switched on) it fails the case too, with the harness's output digest; on the correct library it passes."""
    from harness.repro import BUILD_COMMAND
    from tests import swenv
    code, _, records = _suite(tmp_path, "--dump-failures")
    rec = records[0]
    meta, _ = dump.load(Path(rec["dump"]))
    directory = Path(meta["c_repro"])
    assert directory == Path(rec["dump"]).with_suffix("") and (directory / "repro.c").is_file(), meta
    env = {**swenv.env_for(swcann_root), "SWCANN_SOC": "ascend910b"}
    built = subprocess.run(["bash", "-c", BUILD_COMMAND], cwd=directory, env=env, capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    faulty = subprocess.run(["./repro"], cwd=directory, env={**env, "SWCANN_DEVIATIONS": "1"}, capture_output=True,
                            text=True, timeout=120)
    assert faulty.returncode == 1 and "FAIL" in faulty.stdout, faulty.stdout + faulty.stderr
    assert all(d in faulty.stdout for d in rec["digests"].values()), (rec["digests"], faulty.stdout)
    correct = subprocess.run(["./repro"], cwd=directory, env=env, capture_output=True, text=True, timeout=120)
    assert correct.returncode == 0, correct.stdout + correct.stderr


# ------------------------------------------------------------------ reruns: an injected flaky case

# Cases run in the case worker (harness/execution/child.py), which imports the runner's run_case
# when it starts: the patch goes in through sitecustomize, which every Python process of the run
# (the pytest process, the zygote and its forked workers) imports first. Each worker keeps its
# own memory, and reruns go to the same worker, so its first attempt fails and its rerun passes.
FLAKY_SITECUSTOMIZE = '''
import harness.judge.runner as runner
_real, _seen = runner.run_case, set()

def _flaky(case, *args, **kwargs):
    out = _real(case, *args, **kwargs)
    if case.kind == "valid" and case.id not in _seen:      # the first attempt of each valid case fails
        _seen.add(case.id)
        out.fail("injected: fails on the first attempt only")
    return out

runner.run_case = _flaky
'''


def _torch_suite(tmp_path, *args):
    cases = tmp_path / "cases"
    cases.mkdir(exist_ok=True)
    (cases / "mp.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (tmp_path / "sitecustomize.py").write_text(FLAKY_SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases),
                           "--rootdir", str(tmp_path), "-c", "/dev/null", "--report-dir", str(tmp_path / "rep"),
                           "-q", "--no-html", *args], capture_output=True, text=True, timeout=300, env=env)
    records = [json.loads(x) for x in (tmp_path / "rep" / "results.jsonl").read_text().splitlines()]
    return proc.returncode, proc.stdout + proc.stderr, {r["case_id"].split("[")[0]: r for r in records}


def test_injected_flaky_case_is_a_flake_with_reruns_and_a_failure_without(tmp_path):
    code, out, recs = _torch_suite(tmp_path, "--reruns", "2")
    flaky = recs["MaxPool2dWithIndicesBackward.basic"]
    assert code == 0, out
    assert flaky["status"] == "FLAKE" and flaky["attempts"] == ["FAIL", "PASS"], flaky
    assert "injected" in flaky["reason"]
    code, out, recs = _torch_suite(tmp_path, "--reruns", "0")
    assert code == 1 and recs["MaxPool2dWithIndicesBackward.basic"]["status"] == "FAIL", out


def test_flake_does_not_fail_the_gate_but_is_listed(tmp_path):
    empty = tmp_path / "none"
    empty.mkdir()
    code, out, recs = _torch_suite(tmp_path, "--reruns", "1", "--gate", str(empty))
    assert code == 0, out
    assert "GATE PASSED (0 expected failure(s), 1 flake(s))" in out and "FLAKE           MaxPool2dWithIndicesBackward.basic" in out


def test_records_and_summary_carry_the_full_identity(tmp_path):
    import xml.etree.ElementTree as ET
    code, _, records = _suite(tmp_path)
    rec = records[0]
    for key in ("case_id", "nodeid", "op", "dtype", "family", "soc_name", "cann_version", "status", "raw_status",
                "metrics", "worst", "phase1", "timings", "raw_reason", "repro", "library_sha256", "digests", "shape",
                "attrs", "layouts", "formats"):
        assert rec.get(key) not in (None, "", [], {}), key
    assert set(rec["timings"]) >= {"inputs", "golden", "phase1", "phase2", "compare", "total"}
    assert all(m["threshold"] > 0 and m["rule"] in ("<", "<=", ">=") for m in rec["metrics"])
    opapi = rec["backend"]["opapi"].split(", ")[0]          # the first op library (op-plugin order)
    assert len(rec["library_sha256"][opapi]) == 64
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    # each record: what produced it; the run's full backend properties (environment too): summary.json
    assert rec["backend"]["simulated"] == "true" and rec["backend"]["library"] and "LD_LIBRARY_PATH" not in rec["backend"]
    assert summary["properties"]["LD_LIBRARY_PATH"] and \
        all(summary["properties"][k] == v for k, v in rec["backend"].items())
    ident = summary["identity"]
    assert ident["simulated"] is True and ident["software_cann"] is True and ident["soc_name"] == "Ascend910B2"
    assert ident["switches"]["SWCANN_DEVIATIONS"] == "1" and ident["library_sha256"][opapi] == rec["library_sha256"][opapi]
    assert ident["started"] <= ident["ended"] and "--soc ascend910b" in ident["command"]
    assert len(ident["suite_commit"].split("+")[0]) == 40 or ident["suite_commit"] == "unknown"
    # what the run read, each file hashed: one case file here, not every file of cases/
    assert list(ident["case_files"]) == ["cases/avg_pool2d_backward.yaml"], ident["case_files"]
    assert ident["case_files"]["cases/avg_pool2d_backward.yaml"] == hashlib.sha256(
        (ROOT / "cases" / "avg_pool2d_backward.yaml").read_bytes()).hexdigest()
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "rep" / "junit.xml").iter("property")}
    assert props["switch:SWCANN_DEVIATIONS"] == "1" and props[f"sha256:{opapi}"] == rec["library_sha256"][opapi]
    assert "FAIL" in (tmp_path / "rep" / "summary.md").read_text()


def test_baseline_skips_are_not_run_and_recorded_as_skip(tmp_path):
    base = _baseline(tmp_path)
    doc = yaml.safe_load((base / "aclnn-ascend910b.yaml").read_text())
    doc["skips"] = [{"case": "AvgPool2dBackward.dev_global_padding[float32-2x3x10x10-ks10_s7*", "reason": "too slow here",
                     "link": "https://issues.example/5"}]
    (base / "aclnn-ascend910b.yaml").write_text(yaml.safe_dump(doc))
    code, out, records = _suite(tmp_path, "--gate", str(base))
    assert code == 0, out
    skipped = [r for r in records if r["status"] == "SKIP"]
    assert len(skipped) == 1 and "too slow here" in skipped[0]["reason"] and "ks10_s7" in skipped[0]["case_id"]
    assert sorted(r["status"] for r in records) == ["EXPECTED_FAIL", "EXPECTED_FAIL", "SKIP"]   # nothing MISSING
