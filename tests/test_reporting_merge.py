"""Sharding, merging, night-over-night comparison and the report writers, on hand-built runs."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from harness.reporting import __main__ as cli, changes, merge, shard, writers
from harness.reporting.runs import Report, load_run
from tests.reporting_fixtures import rec, sweep_dirs, write_run

IDS = [f"Op{k % 3}.g[float32-{k}]" for k in range(23)]


# ------------------------------------------------------------------ sharding

def test_shards_partition_the_selection_deterministically_and_interleaved():
    picks = [shard.select(IDS, (i, 4)) for i in range(1, 5)]
    for k in range(len(IDS)):
        assert sum(p[k] for p in picks) == 1                         # each case in exactly one shard
    sizes = [sum(p) for p in picks]
    assert max(sizes) - min(sizes) <= 1
    reordered = list(reversed(IDS))                                   # collection order does not matter
    assert {c for c, keep in zip(reordered, shard.select(reordered, (2, 4))) if keep} == \
           {c for c, keep in zip(IDS, picks[1]) if keep}
    ordered = sorted(IDS)
    assert [c for c in ordered if shard.assign(IDS, 4)[c] == 1] == ordered[0::4]   # round-robin over sorted ids


def test_durations_balance_the_shards():
    durations = {c: (10.0 if k < 2 else 0.1) for k, c in enumerate(sorted(IDS))}
    owner = shard.assign(IDS, 2, durations)
    load = [sum(durations[c] for c in IDS if owner[c] == i) for i in (1, 2)]
    assert abs(load[0] - load[1]) < 1.0                  # the two long cases are on different shards
    plain = shard.assign(IDS, 2)
    assert plain[sorted(IDS)[0]] == 1 and plain[sorted(IDS)[1]] == 2


def test_durations_from_a_results_file(tmp_path):
    write_run(tmp_path / "r", [rec(IDS[0], timings={"total": 3.5}), rec(IDS[1], duration_s=1.0, timings=None)])
    assert shard.load_durations(tmp_path / "r") == {IDS[0]: 3.5, IDS[1]: 1.0}


@pytest.mark.parametrize("text", ["3/2", "0/2", "x", "1/0", "1-2"])
def test_bad_shard_is_one_line(text):
    with pytest.raises(shard.ShardError, match="--shard"):
        shard.parse(text)


# ------------------------------------------------------------------ merging

def _sweep(tmp_path, **kw):
    return sweep_dirs(tmp_path, IDS, **kw)


def test_clean_merge_has_every_case_once_and_no_problems(tmp_path):
    report = merge.merge(_sweep(tmp_path))
    assert not report.problems
    assert len(report.records) == 2 * len(IDS)
    assert report.families == ["ascend910b", "ascend950"]


def test_merge_reports_a_missing_and_a_duplicated_case(tmp_path):
    lost, twice = ("ascend950", IDS[4]), ("ascend910b", IDS[0])     # IDS[0] belongs to shard 1
    report = merge.merge(_sweep(tmp_path, drop=lost, dup=twice))
    kinds = {p.kind: p.message for p in report.problems}
    assert set(kinds) == {"missing", "duplicate"}, report.problems
    assert IDS[4] in kinds["missing"] and "aclnn-ascend950: 1 selected case" in kinds["missing"]
    assert IDS[0] in kinds["duplicate"] and "ascend910b-1" in kinds["duplicate"] and "ascend910b-2" in kinds["duplicate"]
    missing = [r for r in report.records if r["status"] == "MISSING"]
    assert [(r["case_id"], r["family"]) for r in missing] == [(IDS[4], "ascend950")]


def test_merge_flags_a_run_a_stop_signal_cut_short(tmp_path):
    dirs = _sweep(tmp_path)
    summary = dirs[1] / "summary.json"
    doc = json.loads(summary.read_text())
    doc["identity"]["stopped"] = "SIGTERM at 2026-11-23T01:05:00+00:00"   # harness/execution/stopping.py
    summary.write_text(json.dumps(doc))
    report = merge.merge(dirs)
    assert [p.kind for p in report.problems] == ["stopped"], report.problems
    assert str(dirs[1]) in report.problems[0].message and "SIGTERM at 2026-11-23T01:05" in report.problems[0].message
    assert report.problems[0].blocking


def test_merge_flags_a_run_with_another_library_hash(tmp_path):
    report = merge.merge(_sweep(tmp_path, other_hash="b" * 64))
    assert [p.kind for p in report.problems] == ["identity"]
    assert "ascend950-2" in report.problems[0].message and "b" * 64 in report.problems[0].message
    sweep = {"backend": "aclnn", "families": ["ascend910b", "ascend950", "ascend910"], "shards": 2,
             "library_sha256": "b" * 64}
    report = merge.merge(_sweep(tmp_path / "s"), sweep)
    msgs = [p.message for p in report.problems]
    assert sum("differs from the sweep manifest" in m for m in msgs) == 4       # every run has the wrong one
    assert "family ascend910: no run reported" in msgs


def test_merge_flags_a_run_that_is_not_what_its_manifest_asked_for_and_a_lost_shard(tmp_path):
    write_run(tmp_path / "a", [rec(IDS[0], family="ascend950")], family="ascend950", shard=(1, 2), selected=IDS[:1],
              requested_family="ascend910b")
    report = merge.merge([tmp_path / "a"])
    msgs = "\n".join(p.message for p in report.problems)
    assert "ran family 'ascend950', its manifest asked for 'ascend910b'" in msgs
    assert "shard(s) 2/2 never reported" in msgs


def test_merge_cli_writes_every_report_and_exits_nonzero_on_problems(tmp_path, capsys):
    dirs = _sweep(tmp_path, drop=("ascend910b", IDS[1]))
    out = tmp_path / "merged"
    code = cli.main(["merge", "-o", str(out), *map(str, dirs), "--no-html"])
    text = capsys.readouterr().out
    assert code == 1 and "PROBLEM missing" in text
    assert {p.name for p in out.iterdir()} >= {"results.jsonl", "summary.json", "summary.md", "junit.xml"}
    assert len(out.joinpath("results.jsonl").read_text().splitlines()) == 2 * len(IDS)
    assert cli.main(["merge", "-o", str(out), *map(str, dirs), "--no-html", "--allow-problems"]) == 0


# ------------------------------------------------------------------ night over night

def test_compare_lists_new_failures_fixed_new_flakes_and_drifts():
    before = [rec("Op.a[x]", mere=1e-5), rec("Op.b[x]", "FAIL"), rec("Op.c[x]"), rec("Op.d[x]", mere=1e-5),
              rec("Op.gone[x]")]
    now = [rec("Op.a[x]", "FAIL", mere=1e-3, reason="MERE"), rec("Op.b[x]"), rec("Op.c[x]", "FLAKE"),
           rec("Op.d[x]", mere=2.5e-5), rec("Op.new[x]")]
    ch = changes.compare(now, before, drift=2.0)
    assert [i["case_id"] for i in ch["new_failures"]] == ["Op.a[x]"]
    assert [i["case_id"] for i in ch["fixed"]] == ["Op.b[x]"]
    assert [i["case_id"] for i in ch["new_flakes"]] == ["Op.c[x]"]
    drifted = {(i["case_id"], i["metric"]) for i in ch["drifts"]}
    assert ("Op.d[x]", "mere") in drifted and ("Op.a[x]", "mere") in drifted     # MERE x2.5 while passing
    assert [i["case_id"] for i in ch["appeared"]] == ["Op.new[x]"]
    assert [i["case_id"] for i in ch["disappeared"]] == ["Op.gone[x]"]

def test_compare_threshold_is_the_drift_ratio():
    before, now = [rec("Op.d[x]", mere=1e-5)], [rec("Op.d[x]", mere=1.9e-5)]
    assert changes.compare(now, before, drift=2.0)["drifts"] == []
    assert len(changes.compare(now, before, drift=1.5)["drifts"]) == 2            # mere and mare both x1.9


# ------------------------------------------------------------------ writers

def _report(tmp_path) -> Report:
    run = load_run(write_run(tmp_path / "run", [
        rec("AvgPool2dBackward.g[float32-1]", mere=1e-6),
        rec("AvgPool2dBackward.dev[float32-2]", "FAIL", mere=0.5, reason="MERE=0.5 >= 0.000122", repro="./run suite 'x::dev[float32-2]'"),
        rec("MaxUnpool3dBackward.g[float16-1]", "SKIP", dtype="float16", reason="status-only case"),
        rec("MaxUnpool3dBackward.h[float16-1]", "CRASH", dtype="float16", reason="worker crashed"),
    ]))
    return Report("test report", [run], run.records)


def test_summary_md_has_identity_matrix_and_failures_with_repro(tmp_path):
    text = writers.summary_md(_report(tmp_path))
    assert "SIMULATED (not hardware)" in text and "`/lib/libopapi.so` sha256 `" + "a" * 64 in text
    assert "| AvgPool2dBackward | float32 | PASS 1, FAIL 1 |" in text.replace("FAIL 1, PASS 1", "PASS 1, FAIL 1") or \
           "| AvgPool2dBackward | float32 | FAIL 1, PASS 1 |" in text
    assert "**CRASH** `MaxUnpool3dBackward.h[float16-1]`" in text
    assert "repro: `./run suite 'x::dev[float32-2]'`" in text
    assert "`SWCANN_DEVIATIONS=1`" in text


def test_junit_carries_identity_and_statuses(tmp_path):
    root = ET.fromstring(writers.junit_xml(_report(tmp_path)))
    suite = root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["backend"] == "aclnn" and props["soc_name"] == "Ascend910B2" and props["switch:SWCANN_DEVIATIONS"] == "1"
    assert props["sha256:/lib/libopapi.so"] == "a" * 64
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "1")
    fail = next(c for c in suite.iter("testcase") if c.get("name") == "dev[float32-2]")
    assert "repro: ./run suite" in fail.find("failure").text


def test_html_is_self_contained_and_shows_matrix_failures_and_plots(tmp_path):
    from harness.reporting.html import render
    html = render(_report(tmp_path))
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html) and "<link" not in html    # nothing fetched
    assert 'class="matrix"' in html and 'data-op="AvgPool2dBackward" data-dtype="float32"' in html
    assert "MERE=0.5 &gt;= 0.000122" in html             # autoescaped, not pasted
    assert html.count("<svg") == 1 and "metric / threshold" in html      # one plot: the op with metrics
    assert "worker crashed" in html and "index [0, 1, 2, 3]" in html


def test_junit_escapes_what_a_library_message_can_hold(tmp_path):
    """Markup, quotes, newlines and control characters in a reason arrive intact (or, for the
    control characters XML cannot hold, as \\xNN) and never break the file."""
    report = _report(tmp_path)
    nasty = 'a <b> & "c"\nline 2\ttab\x01\x1b[0m'
    report.records[0] |= {"status": "FAIL", "reason": nasty, "repro": "./run suite 'x::y[a&b]'"}
    root = ET.fromstring(writers.junit_xml(report))          # parses: the file is well-formed
    case = next(c for c in root.iter("testcase") if c.find("failure") is not None
                and "line 2" in c.find("failure").get("message"))
    assert case.find("failure").get("message") == "FAIL: " + nasty.replace("\x01", "\\x01").replace("\x1b", "\\x1b")
    assert case.find("failure").text.endswith("repro: ./run suite 'x::y[a&b]'")
