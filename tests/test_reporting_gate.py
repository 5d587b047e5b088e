"""Statuses, baselines and gating on records built by hand."""
from __future__ import annotations

import pytest

from harness.reporting import baseline as bl, gate
from harness.core.status import Status, parse
from tests.reporting_fixtures import rec

CASE = "AvgPool2dBackward.dev_global[float32-2x3x10x10-ks10x10-NCHW-contiguous-uniform]"
OTHER = "AvgPool2dBackward.basic[float16-1x1x4x4-ks2x2-NCHW-contiguous-uniform]"


def _baseline(tmp_path, text: str) -> bl.Baseline:
    path = tmp_path / "aclnn-ascend910b.yaml"
    path.write_text(text)
    return bl.load_for(path, "aclnn", "ascend910b")


FAILS = """
target: {backend: aclnn, family: ascend910b}
fails:
  - case: "AvgPool2dBackward.dev_global[*]"
    reason: global pool ignores padding
    link: https://issues.example/1
"""


def test_one_status_model_and_no_outcome_words():
    assert parse("PASS") is Status.PASS and parse(Status.FLAKE) is Status.FLAKE
    for word in ("passed", "xfailed", "error", "weird"):      # pytest's words are not statuses
        with pytest.raises(ValueError, match=f"unknown status '{word}'"):
            parse(word)


def test_new_failure_fails_the_gate_and_is_listed_first_with_its_repro():
    records = [rec(OTHER), rec(CASE, "FAIL", reason="MERE too big", repro="./run suite x")]
    result = gate.evaluate(gate.apply(records, bl.Baseline(bl.Target("aclnn", "ascend910b"))))
    assert result.exit_code == 1
    lines = result.lines()
    assert lines[0].startswith("GATE FAILED: 1 new problem")
    assert CASE in lines[1] and "MERE too big" in lines[1] and "repro: ./run suite x" in lines[2]


def test_baselined_failure_is_expected_fail_and_passes_the_gate(tmp_path):
    base = _baseline(tmp_path, FAILS)
    gated = gate.apply([rec(OTHER), rec(CASE, "FAIL")], base)
    assert [g["status"] for g in gated] == ["PASS", "EXPECTED_FAIL"]
    assert gated[1]["waiver"]["link"] == "https://issues.example/1"
    assert gate.evaluate(gated, base).exit_code == 0


def test_stale_baseline_entry_is_unexpected_pass_and_fails_the_gate(tmp_path):
    base = _baseline(tmp_path, FAILS)
    gated = gate.apply([rec(CASE, "PASS")], base)
    assert gated[0]["status"] == "UNEXPECTED_PASS"
    result = gate.evaluate(gated, base)
    assert result.exit_code == 1 and "remove the entry" in result.lines()[1]


def test_a_case_file_deviation_that_passes_is_visible_but_not_gating():
    r = rec(CASE, "UNEXPECTED_PASS", waiver={"kind": "deviation", "reason": "torch may round twice"})
    result = gate.evaluate([r])
    assert result.exit_code == 0 and result.deviation_passes == [r]
    assert any("UNEXPECTED_PASS" in line for line in result.lines())


def test_flake_from_a_rerun_passes_the_gate_and_is_reported():
    r = rec(CASE, "FLAKE", attempts=["FAIL", "PASS"])
    result = gate.evaluate([r])
    assert result.exit_code == 0 and result.flakes == [r]
    assert "attempts FAIL PASS" in "\n".join(result.lines())


def test_listed_flake_may_fail(tmp_path):
    base = _baseline(tmp_path, FAILS.replace("fails:", "flakes:"))
    assert gate.apply([rec(CASE, "FAIL")], base)[0]["status"] == "FLAKE"


def test_entry_expecting_a_crash_does_not_hide_a_numeric_failure(tmp_path):
    base = _baseline(tmp_path, FAILS + "    status: CRASH\n")
    assert gate.apply([rec(CASE, "CRASH")], base)[0]["status"] == "EXPECTED_FAIL"
    gated = gate.apply([rec(CASE, "FAIL", reason="MERE")], base)
    assert gated[0]["status"] == "FAIL" and "expects CRASH, got FAIL" in gated[0]["reason"]


def test_missing_and_timeout_fail_the_gate_unused_entries_are_noted(tmp_path):
    base = _baseline(tmp_path, FAILS)
    result = gate.evaluate(gate.apply([rec(OTHER, "MISSING"), rec(OTHER + "x", "TIMEOUT")], base), base)
    assert result.exit_code == 1 and len(result.failures) == 2
    assert result.failures[0]["status"] == "TIMEOUT"          # worst first
    assert any("matched no case" in line for line in result.lines())


def test_pattern_treats_brackets_literally():
    e = bl.Entry("fails", "Op.g[float32-*]", "r", "l", "s")
    assert e.matches("Op.g[float32-1x2]") and not e.matches("Op.g[float16-1x2]")
    exact = bl.Entry("fails", "Op.g[a]", "r", "l", "s")
    assert exact.matches("Op.g[a]") and not exact.matches("Op.ga")      # no character classes


@pytest.mark.parametrize("text, message", [
    ("target: {backend: aclnn, family: ascend910b}\nfails:\n  - {case: x, link: y}\n", "field 'fails.0': 'reason' is a required property"),
    ("target: {backend: aclnn}\n", "field 'target': 'family' is a required property"),
    ("target: {backend: aclnn, family: f}\nfails: [{case: x, reason: r, link: l, status: PASS}]\n", "field 'fails.0.status'"),
    ("target: [\n", "not valid YAML"),
])
def test_bad_baseline_is_one_line_naming_file_and_field(tmp_path, text, message):
    path = tmp_path / "b.yaml"
    path.write_text(text)
    with pytest.raises(bl.BaselineError) as e:
        bl.load_file(path)
    assert message in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_baseline_for_another_target_is_refused_and_a_directory_picks_by_target(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(FAILS)
    with pytest.raises(bl.BaselineError, match="baseline is for aclnn-ascend910b, but the run is aclnn-ascend950"):
        bl.load_for(path, "aclnn", "ascend950")
    (tmp_path / "c.yaml").write_text(FAILS.replace("ascend910b", "ascend950").replace("dev_global", "other"))
    assert [e.case for e in bl.load_for(tmp_path, "aclnn", "ascend950").entries] == ["AvgPool2dBackward.other[*]"]
    versioned = FAILS.replace("family: ascend910b", "family: ascend910b, cann_version: '8.1'")
    path.write_text(versioned)
    assert bl.load_for(tmp_path, "aclnn", "ascend910b", "8.1").entries and not bl.load_for(tmp_path, "aclnn", "ascend910b", "8.0").entries


def test_fresh_baseline_round_trips_and_makes_the_same_run_gate_green(tmp_path):
    records = [rec(OTHER), rec(CASE, "FAIL", reason="MERE=1 >= 0.0001"), rec("Op.c[x]", "CRASH", reason="SIGSEGV"),
               rec("Op.f[x]", "FLAKE", attempts=["FAIL", "PASS"]),
               rec("Op.d[x]", "EXPECTED_FAIL", waiver={"kind": "deviation"}, deviation="torch rounds twice")]
    assert gate.evaluate(records).exit_code == 1
    entries = gate.baseline_entries_from(records, "https://issues.example/9")
    assert {(e.kind, e.case) for e in entries} == {("fails", CASE), ("fails", "Op.c[x]"), ("flakes", "Op.f[x]")}
    path = bl.write(tmp_path / "fresh.yaml", bl.Target("aclnn", "ascend910b"), entries, "written by a test")
    base = bl.load_for(path, "aclnn", "ascend910b")
    assert [(e.kind, e.case, e.status) for e in base.entries] == [(e.kind, e.case, e.status) for e in entries]
    assert gate.evaluate(gate.apply(records, base), base).exit_code == 0
