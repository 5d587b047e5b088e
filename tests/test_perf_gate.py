"""Perf baselines, the perf gate and perf/digest drift, on hand-built runs with seeded launch times."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness.reporting import __main__ as cli, baseline as bl, changes, gate, sweep
from harness.reporting.perf import baseline as perf_baseline, gate as perf_gate, summary as perf_summary
from harness.reporting.runs import load_run
from tests.reporting_fixtures import OPAPI_SHA, launch_times, perf_rec, rec, write_run

A, B, C, D, E, F, G = (f"AvgPool2dBackward.g[float32-{k}]" for k in "abcdefg")


def times(seed: int, median: float = 1.0, n: int = 60) -> list[float]:
    """Quiet launch times (3 % noise, a few outliers): what a device gives between other jobs."""
    return list(launch_times(np.random.default_rng(seed), n, median, sigma=0.03, outliers=0.05))


def _baseline_run(tmp_path, ids=(A, B, C, D, E, F), **extra):
    return write_run(tmp_path / "base", [perf_rec(c, times(k), **extra) for k, c in enumerate(ids)])


def _perf_file(tmp_path, *args) -> str:
    out = tmp_path / "perf-aclnn-ascend910b.json"
    assert cli.main(["baseline", "--perf", str(_baseline_run(tmp_path)), "-o", str(out), *args]) == 0
    return str(out)


def _tonight(tmp_path) -> list[dict]:
    """Against the baseline: A 1.3x slower twice, B 1.3x then back to normal, C unchanged, D 0.7x
    twice, E 1.3x with no re-measurement (a regression all the same), F timed by another clock, G new."""
    return [perf_rec(A, times(10, 1.3), times(11, 1.3)), perf_rec(B, times(12, 1.3), times(13)),
            perf_rec(C, times(14)), perf_rec(D, times(15, 0.7), times(16, 0.7)), perf_rec(E, times(17, 1.3)),
            perf_rec(F, times(18), timing="perf_counter"), perf_rec(G, times(19))]


# ------------------------------------------------------------------ perf baselines

def test_a_perf_baseline_keeps_every_sample_keyed_by_what_measured_them(tmp_path):
    path = _perf_file(tmp_path)
    base = bl.load_for(path, "aclnn", "ascend910b")
    own, bench = perf_baseline.pick(base)
    assert bench is None and base.entries == [] and base.searched == path      # no correctness entries in it
    assert gate.evaluate([rec(A)], base).no_baseline.startswith("no correctness baseline (only perf ones) for")
    assert own.target == bl.Target("aclnn", "ascend910b") and own.measured["library_sha256"] == OPAPI_SHA
    assert own.measured["timings"] == ["events"] and own.measured["backend"] == "aclnn"
    assert set(own.entries) == {A, B, C, D, E, F}
    assert own.entry(A).samples_ms == pytest.approx(times(0), rel=1e-5)   # 6 significant digits and own.entry(A).timing == "events"
    doc = json.loads(open(path).read())
    assert doc["kind"] == "perf" and doc["cases"][A]["n"] == 60


def test_a_gate_directory_holds_both_kinds_whatever_their_names(tmp_path):
    gates = tmp_path / "gates"
    gates.mkdir()
    perf = _perf_file(tmp_path)
    (gates / "perf.yaml").write_text(open(perf).read())            # recognised by its content, not its name
    (gates / "fails.yaml").write_text(f"target: {{backend: aclnn, family: ascend910b}}\nfails:\n"
                                      f"  - {{case: '{A}', reason: r, link: l}}\n")
    base = bl.load_for(gates, "aclnn", "ascend910b")
    assert [e.case for e in base.entries] == [A] and len(base.perf) == 1
    assert perf_baseline.pick(bl.load_for(gates, "aclnn", "ascend950")) == (None, None)
    sweep.check(["ascend910b"], 1, 1, gate=perf)                  # a sweep takes a perf file as --gate too
    (gates / "again.json").write_text(open(perf).read())
    with pytest.raises(bl.BaselineError, match="several perf baselines for aclnn-ascend910b"):
        perf_baseline.pick(bl.load_for(gates, "aclnn", "ascend910b"))
    pinned = json.loads(open(perf).read())
    pinned["target"]["cann_version"] = "8.1"
    (gates / "again.json").write_text(json.dumps(pinned))       # a file pinned to the run's CANN wins
    own, _ = perf_baseline.pick(bl.load_for(gates, "aclnn", "ascend910b", "8.1"))
    assert own.path.endswith("again.json")


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["cases"][A].__setitem__("samples_ms", [1.0, -1.0]), f"field 'cases.{A}.samples_ms': launch times must be"),
    (lambda d: d["cases"][A].pop("timing"), f"field 'cases.{A}': 'timing' is a required property"),
    (lambda d: d.__setitem__("tolerance", -0.1), "field 'tolerance'"),
    (lambda d: d["target"].__setitem__("family", "ascend999"), "unknown family 'ascend999'"),
])
def test_a_bad_perf_baseline_is_one_line_naming_the_field(tmp_path, edit, message):
    doc = json.loads(open(_perf_file(tmp_path)).read())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(bl.BaselineError) as e:
        perf_baseline.pick(bl.load_for(bad, "aclnn", "ascend910b"))
    assert message in str(e.value) and str(bad) in str(e.value) and "\n" not in str(e.value)


def test_a_run_without_launch_times_makes_no_perf_baseline(tmp_path, capsys):
    write_run(tmp_path / "plain", [rec(A)])
    assert cli.main(["baseline", "--perf", str(tmp_path / "plain"), "-o", str(tmp_path / "p.json")]) == 4
    assert "ERROR: " in capsys.readouterr().err
    assert cli.main(["baseline", "--tolerance", "0.2", str(tmp_path / "plain"), "-o", str(tmp_path / "p.yaml")]) == 4
    assert "give --perf" in capsys.readouterr().err and not (tmp_path / "p.yaml").exists()


# ------------------------------------------------------------------ the gate

def test_only_a_repeated_significant_slowdown_is_a_regression(tmp_path, capsys):
    path = _perf_file(tmp_path)
    run = write_run(tmp_path / "tonight", _tonight(tmp_path))
    assert cli.main(["gate", str(run), path]) == 1
    out = capsys.readouterr().out
    assert "PERF GATE FAILED: 2 regression(s), 1 of them not re-measured, so machine noise is not ruled out" in out
    own, _ = perf_baseline.pick(bl.load_for(path, "aclnn", "ascend910b"))
    verdicts = {r["case_id"]: [v["verdict"] for v in r.get("perf_gate", [])]
                for r in perf_gate.apply(_tonight(tmp_path), own)}
    assert verdicts == {A: ["REGRESSION"], B: ["NOISE"], C: ["SAME"], D: ["IMPROVEMENT"], E: ["REGRESSION"],
                        F: ["INCOMPARABLE"], G: []}
    line = next(x for x in out.splitlines() if A in x)
    assert "regression" in line and "1.3" in line and "re-measured 1.3" in line and "allowed 1.100x (default)" in line
    assert any("noise (not repeated)" in x and B in x for x in out.splitlines())
    assert any("not comparable" in x and "timed by perf_counter, the baseline by events" in x for x in out.splitlines())
    assert "1 measured case(s) have no baseline entry" in out
    assert any(E in x and "not re-measured: this gate has only the run's records and the baseline file at hand, "
               "so machine noise is not ruled out" in x for x in out.splitlines())
    # without the slowdowns the same run passes, its improvement and noise still reported
    write_run(run, [r for r in _tonight(tmp_path) if r["case_id"] not in (A, E)])
    assert cli.main(["gate", str(run), path]) == 0
    assert "PERF GATE PASSED" in capsys.readouterr().out


def test_the_tolerance_is_the_entrys_then_the_groups_then_the_files(tmp_path):
    doc = json.loads(open(_perf_file(tmp_path)).read())
    slow = perf_rec(A, times(10, 1.3), times(11, 1.3), group="g")
    own = perf_baseline.from_document("p.json", doc)
    decide = lambda r, o: perf_gate.apply([r], o)[0]["perf_gate"][0]
    assert (decide(slow, own)["verdict"], decide(slow, own)["tolerance_from"]) == ("REGRESSION", "default")
    doc["tolerance"] = 0.5
    v = decide(slow, perf_baseline.from_document("p.json", doc))
    assert (v["verdict"], v["tolerance"], v["tolerance_from"]) == ("SAME", 0.5, "baseline p.json")
    v = decide(dict(slow, perf_tolerance=0.05), perf_baseline.from_document("p.json", doc))
    assert (v["verdict"], v["tolerance_from"]) == ("REGRESSION", "case file group g")
    doc["cases"][A]["tolerance"] = 0.4
    v = decide(dict(slow, perf_tolerance=0.05), perf_baseline.from_document("p.json", doc))
    assert (v["verdict"], v["tolerance_from"]) == ("SAME", f"baseline entry p.json:cases[{A}]")


def test_the_runner_remeasures_exactly_the_flagged_cases(tmp_path):
    own, _ = perf_baseline.pick(bl.load_for(_perf_file(tmp_path), "aclnn", "ascend910b"))
    first = {r["case_id"]: perf_gate.needs_remeasurement(r, own) for r in _tonight(tmp_path)}
    assert first == {A: True, B: True, C: False, D: True, E: True, F: False, G: False}
    broken = dict(perf_rec(A, times(10, 1.3)), perf={"timing": "events", "samples_ms": [1.3, 0.0, 1.3]})
    assert not perf_gate.needs_remeasurement(broken, own)          # unusable: the gate says why
    assert perf_gate.apply([broken], own)[0]["perf_gate"][0]["why"] == "launch times must be finite and positive"


def test_atk_perf_ratios_gate_against_the_benchmark_device(tmp_path):
    assert [perf_gate.atk_ratio(v) for v in ("not_key", None, 0.9, [0.95, 0.95], [0.9, 0.8], [0.9, "x"], -1)] == \
           [None, None, 0.9, 0.95, 0.9, None, None]
    gpu = {"backend": "torch", "family": "ascend910b", "device": "cuda:0"}
    bench_run = write_run(tmp_path / "gpu", [perf_rec(c, times(k), timing="cuda_events", backend=gpu)
                                             for k, c in enumerate((A, B, C))], backend="torch")
    path = tmp_path / "bench.json"
    assert cli.main(["baseline", "--perf", "--benchmark", "--backend", "aclnn", str(bench_run), "-o", str(path)]) == 0
    own, bench = perf_baseline.pick(bl.load_for(path, "aclnn", "ascend910b"))
    assert own is None and bench.benchmark and bench.measured["backend"] == "torch"
    npu = [perf_rec(A, times(20, 1.15), times(21, 1.15), atk_perf=[0.95, 0.95]),   # allowed 1/0.95 = 1.053x
           perf_rec(B, times(22, 1.15), times(23, 1.15), atk_perf=[0.8]),          # allowed 1.25x
           perf_rec(C, times(24, 1.15), times(25, 1.15), atk_perf="not_key")]      # ATK sets no ratio
    gated = {r["case_id"]: r["perf_gate"] for r in perf_gate.apply(npu, None, bench)}
    assert gated[A][0]["verdict"] == "REGRESSION" and gated[A][0]["limit"] == pytest.approx(1 / 0.95)
    assert gated[A][0]["ratio"] == pytest.approx(1.15, abs=0.03) and gated[A][0]["against"] == "benchmark"
    assert gated[B][0]["verdict"] == "SAME" and gated[C] == []
    # a ratio above 1: the device must beat the benchmark (1.15x its time, allowed 1/1.2 = 0.833x)
    faster = perf_gate.apply([perf_rec(A, times(26, 1.15), times(27, 1.15), atk_perf=1.2)], None, bench)
    v = faster[0]["perf_gate"][0]
    assert v["verdict"] == "REGRESSION" and v["limit"] == pytest.approx(1 / 1.2) and v["ratio"] == pytest.approx(1.15, abs=0.03)
    # events on the device against cuda_events on the benchmark: both device time, comparable;
    # a host clock is not
    host = perf_gate.apply([perf_rec(A, times(20), timing="perf_counter", atk_perf=0.95)], None, bench)
    assert host[0]["perf_gate"][0]["verdict"] == "INCOMPARABLE"


# ------------------------------------------------------------------ summary.json and summary.md

def test_merge_writes_the_performance_section_and_counts_regressions(tmp_path, capsys):
    path = _perf_file(tmp_path)
    run = write_run(tmp_path / "tonight", _tonight(tmp_path))
    out = tmp_path / "merged"
    assert cli.main(["merge", "-o", str(out), str(run), "--gate", path, "--no-html"]) == 1
    perf = json.loads((out / "summary.json").read_text())["performance"]
    assert perf["verdicts"] == {"IMPROVEMENT": 1, "INCOMPARABLE": 1, "NOISE": 1, "REGRESSION": 2, "SAME": 1}
    assert [r["verdict"] for r in perf["rows"][:3]] == ["REGRESSION", "REGRESSION", "IMPROVEMENT"]
    first, unconfirmed = (next(r for r in perf["rows"] if r["case_id"] == c) for c in (A, E))
    assert first["verdict"] == "REGRESSION" and first["ci"][0] > 1.075
    assert first["remeasured_verdict"] == "REGRESSION" and not first["unconfirmed"]
    assert unconfirmed["verdict"] == "REGRESSION" and "machine noise is not ruled out" in unconfirmed["unconfirmed"]
    stats = perf["stopping"]
    assert stats["measured"] == 7 and stats["launches"]["median"] == 60 and stats["remeasured"] == 3
    assert stats["stop"] == {"ci": 7} and 0 < stats["rel_ci_halfwidth"]["median"] < 0.05
    md = (out / "summary.md").read_text()
    assert "## Performance" in md and "launches per case: median 60" in md
    row = next(x for x in md.splitlines() if x.startswith(f"| regression | `{A}` | ascend910b | baseline | 1.2"))
    assert row.endswith("| 1.100x | 1.307x (REGRESSION) |") and "| <1e-12 |" in row
    assert "noise (not repeated)" in md
    merged = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert next(r for r in merged if r["case_id"] == A)["perf_gate"][0]["verdict"] == "REGRESSION"


def test_a_run_without_perf_shows_no_performance_section(tmp_path):
    run = load_run(write_run(tmp_path / "plain", [rec(A)]))
    assert perf_summary.summary(run.records) is None and perf_summary.markdown(run.records) == []
    _, result = perf_gate.gate(run.records, bl.load_for(_perf_file(tmp_path), "aclnn", "ascend910b"))
    assert result.passed and "no case of this run was measured" in result.lines()[0]


# ------------------------------------------------------------------ drift night over night

def test_compare_reports_perf_drift_and_changed_digests_of_passing_cases(tmp_path, capsys):
    before = [perf_rec(A, times(1)), perf_rec(B, times(2)), perf_rec(C, times(3), timing="perf_counter"),
              rec(D, digests={"gradInput": "sha256:" + "1" * 64}), rec(E, digests={"gradInput": "sha256:" + "2" * 64})]
    now = [perf_rec(A, times(4, 1.3)), perf_rec(B, times(5)), perf_rec(C, times(6, 1.3)),
           rec(D, digests={"gradInput": "sha256:" + "3" * 64}), rec(E, digests={"gradInput": "sha256:" + "2" * 64})]
    ch = changes.compare(now, before)
    assert [(i["case_id"], i["verdict"]) for i in ch["perf_drifts"]] == [(A, "REGRESSION")]   # C: another clock
    assert ch["perf_drifts"][0]["ratio"] == pytest.approx(1.3, abs=0.05)
    assert [(i["case_id"], i["output"]) for i in ch["digest_changes"]] == [(D, "gradInput")]
    assert "PASS -> PASS" in ch["digest_changes"][0]["text"]
    write_run(tmp_path / "now", now), write_run(tmp_path / "before", before)
    assert cli.main(["compare", str(tmp_path / "now"), str(tmp_path / "before")]) == 0
    out = capsys.readouterr().out
    assert "1 perf drifts, 1 digest changes" in out and f"perf drifts: {A}" in out


def test_merge_lists_outputs_that_differ_between_families(tmp_path, capsys):
    same, other = {"gradInput": "sha256:" + "a" * 64}, {"gradInput": "sha256:" + "b" * 64}
    runs = [write_run(tmp_path / "910b", [rec(A, digests=same), rec(B, digests=same)]),
            write_run(tmp_path / "950", [rec(A, "PASS", family="ascend950", digests=same),
                                         rec(B, "PASS", family="ascend950", digests=other)], family="ascend950")]
    out = tmp_path / "merged"
    assert cli.main(["merge", "-o", str(out), *map(str, runs), "--no-html", "--previous", str(runs[0])]) == 0
    splits = json.loads((out / "summary.json").read_text())["digest_splits"]
    assert [(s["case_id"], s["digests"]) for s in splits] == [(B, {"ascend910b": same["gradInput"],
                                                                   "ascend950": other["gradInput"]})]
    md = (out / "summary.md").read_text()
    assert "## Outputs that differ between families" in md and f"{B}: output gradInput differs between families" in md
    assert "1 output(s) differ between families" in capsys.readouterr().out
    assert "- perf drifts: 0" in md and "- output digests changed: 0" in md


# ------------------------------------------------------------------ issue 32: the offline gate can fail, inputs validated

def _scaled_baseline(tmp_path, run: str, factor: float) -> str:
    """A perf baseline of `run` whose launch times are `factor` times the run's."""
    path = tmp_path / f"scaled-{factor:g}.json"
    assert cli.main(["baseline", "--perf", run, "-o", str(path)]) == 0
    doc = json.loads(path.read_text())
    for e in doc["cases"].values():
        e["samples_ms"] = [x * factor for x in e["samples_ms"]]
        e["median_ms"] *= factor
    path.write_text(json.dumps(doc))
    return str(path)


def test_the_offline_gate_fails_a_run_10x_slower_than_its_baseline(tmp_path, capsys):
    """It said 'flagged once, not re-measured', PERF GATE PASSED, exit 0: it could not fail. Now
    it gives the live gate's verdict and exit status, and says it could not re-measure."""
    run = str(write_run(tmp_path / "run", [perf_rec(c, times(k)) for k, c in enumerate((A, B, C))]))
    fast = _scaled_baseline(tmp_path, run, 0.1)
    assert cli.main(["gate", run, fast]) == 1
    out = capsys.readouterr().out
    assert "PERF GATE FAILED: 3 regression(s), 3 of them not re-measured, so machine noise is not ruled out" in out
    line = next(x for x in out.splitlines() if A in x)
    assert line.lstrip().startswith("regression") and "10.000x the baseline" in line
    assert "not re-measured: this gate has only the run's records and the baseline file at hand" in line
    # the same run against its own times passes, and so does a run whose re-measurement cleared it
    assert cli.main(["gate", run, _scaled_baseline(tmp_path, run, 1.0)]) == 0
    cleared = write_run(tmp_path / "cleared", [perf_rec(A, times(1, 1.3), times(2))])
    assert cli.main(["gate", str(cleared), _scaled_baseline(tmp_path, run, 1.0)]) == 0
    # the live gate's record of a re-measurement that failed says so instead
    own, _ = perf_baseline.pick(bl.load_for(fast, "aclnn", "ascend910b"))
    failed = perf_rec(A, times(1))
    failed["perf"]["remeasured_why"] = "CRASH: signal 11"
    v = perf_gate.apply([failed], own)[0]["perf_gate"][0]
    assert v["verdict"] == "REGRESSION" and "its re-measurement failed (CRASH: signal 11)" in v["unconfirmed"]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.__setitem__("tolerance", float("nan")), "field 'tolerance': must be a finite number"),
    (lambda d: d.__setitem__("tolerance", float("inf")), "field 'tolerance': must be a finite number"),
    (lambda d: d["cases"][A].__setitem__("tolerance", float("nan")), f"field 'cases.{A}.tolerance': must be a finite"),
    (lambda d: d["cases"][A]["samples_ms"].__setitem__(0, float("nan")), f"field 'cases.{A}.samples_ms[0]': must be a fin"),
    (lambda d: d["measured"].__setitem__("library_sha256", "not a hash"), "field 'measured.library_sha256'"),
    (lambda d: d["measured"].__setitem__("library_sha256", "A" * 64), "field 'measured.library_sha256'"),
    (lambda d: d["measured"].__setitem__("timings", "events"), "field 'measured.timings'"),
    (lambda d: d["cases"][A].__setitem__("n", 0), f"field 'cases.{A}.n'"),
    (lambda d: d["cases"][A].__setitem__("n", 59), f"field 'cases.{A}.n': 59, but samples_ms holds 60"),
    (lambda d: d["cases"][A].__setitem__("median_ms", -1.0), f"field 'cases.{A}.median_ms'"),
    (lambda d: d.__setitem__("benchmark", "no"), "field 'benchmark'"),
])
def test_a_perf_baseline_is_validated_like_a_case_file(tmp_path, edit, message):
    """A NaN tolerance gated nothing, a sha of 'not a hash' was taken, a NaN launch time was found
    only when the gate picked the file, after the run had opened its report directory."""
    doc = json.loads(open(_perf_file(tmp_path)).read())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))            # json writes NaN and Infinity, and reads them back
    with pytest.raises(bl.BaselineError) as e:
        bl.load_file(bad)                      # at load time: --gate's first check refuses it
    assert message in str(e.value) and str(bad) in str(e.value) and "\n" not in str(e.value)


def test_yaml_1_1_booleans_in_a_baseline_are_refused(tmp_path):
    """`benchmark: no` was False to PyYAML and the text 'no' to a YAML 1.2 reader (the case files
    already refuse `ceilMode: no`)."""
    doc = "kind: perf\ntarget: {{backend: aclnn, family: ascend910b}}\nmeasured: {{}}\nbenchmark: {}\ncases: {{}}\n"
    for word in ("no", "yes", "off", "On"):
        path = tmp_path / f"{word}.yaml"
        path.write_text(doc.format(word))
        with pytest.raises(bl.BaselineError, match=f"field 'benchmark': '{word}' is not of type 'boolean' "
                                                   r"\(YAML 1.1 reads"):
            bl.load_file(path)
    (tmp_path / "ok.yaml").write_text(doc.format("false"))
    assert bl.load_file(tmp_path / "ok.yaml").perf[0][1]["benchmark"] is False


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "-0.001", "x", ""])
def test_baseline_perf_refuses_a_tolerance_that_is_not_a_finite_share(tmp_path, capsys, value):
    """`--tolerance nan` wrote a baseline that gated nothing."""
    out = tmp_path / "p.json"
    with pytest.raises(SystemExit) as e:
        cli.main(["baseline", "--perf", str(_baseline_run(tmp_path)), "-o", str(out), f"--tolerance={value}"])
    err = capsys.readouterr().err
    assert e.value.code == 4 and err.startswith("ERROR: python -m harness.reporting baseline: argument --tolerance: ")
    assert err.count("\n") == 1 and not out.exists()


def test_baseline_perf_of_a_record_whose_perf_is_not_an_object_is_one_line(tmp_path, capsys):
    """It was an AttributeError traceback."""
    for bad in ("fast", [1.0], 3):
        run = write_run(tmp_path / "run", [perf_rec(A, times(1)), dict(perf_rec(B, times(2)), perf=bad)])
        assert cli.main(["baseline", "--perf", str(run), "-o", str(tmp_path / "p.json")]) == 4
        err = capsys.readouterr().err
        assert err.startswith(f"ERROR: {run / 'results.jsonl'}:2: field 'perf': must be an object or null")
        assert err.count("\n") == 1 and not (tmp_path / "p.json").exists()
    run = write_run(tmp_path / "run", [dict(perf_rec(A, times(1)), perf={"timing": "events", "samples_ms": 5})])
    assert cli.main(["gate", str(run), _perf_file(tmp_path)]) == 4
    assert "field 'perf.samples_ms': must be a list" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [
    (["compare", "{r}", "{r}", "--drift", "-1"], "argument --drift: must be a finite number > 1, got '-1'"),
    (["compare", "{r}", "{r}", "--drift", "nan"], "argument --drift: must be a finite number > 1, got 'nan'"),
    (["compare", "{r}", "{r}", "--drift", "1"], "argument --drift: must be a finite number > 1, got '1'"),
    (["compare", "{r}", "{r}", "--drift", "inf"], "argument --drift: must be a finite number > 1"),
    (["compare", "{r}", "{r}", "--floor", "-0.5"], "argument --floor: must be a finite number >= 0"),
    (["compare", "{r}", "{r}", "--floor", "nan"], "argument --floor: must be a finite number >= 0"),
    (["merge", "-o", "{o}", "{r}", "--drift", "0"], "argument --drift: must be a finite number > 1"),
    (["sweep", "-o", "{o}", "--families", "ascend910b", "--shards", "x"], "argument --shards: invalid int value"),
    (["gate", "{r}"], "the following arguments are required: baseline"),
    (["nosuch"], "argument cmd: invalid choice: 'nosuch'"),
])
def test_every_usage_error_of_the_reporting_command_line_is_one_error_line_and_exit_4(tmp_path, capsys, argv, says):
    """They exited 2 with argparse's usage block and a lower-case 'error:'; --drift -1 listed every
    metric as a drift and --drift nan switched the check off."""
    run = write_run(tmp_path / "run", [rec(A)])
    argv = [a.format(r=run, o=tmp_path / "out") for a in argv]
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 4 and err.startswith("ERROR: python -m harness.reporting") and says in err, err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--help"])
    assert e.value.code == 0
