"""Bad input to the reporting layer: broken shards in a merge, bad sweep arguments and jobs that
selected nothing, a baseline that does not fit the run, and a baseline that is not what its
author thinks. Each is one line naming the file (and line or field), and loses no result."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.reporting import __main__ as cli, baseline as bl, gate, merge, sweep
from harness.reporting.run import ReportSettings, RunReporting
from harness.target import Target
from tests.reporting_fixtures import rec, sweep_dirs

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"Op{k % 3}.g[float32-{k}]" for k in range(12)]
# a baseline for another target than the runs here (aclnn-ascend910b)
OTHER = "target: {backend: aclnn, family: ascend950}\nfails: []\n"


def _shards(tmp_path, families=("ascend910b", "ascend950")) -> list[Path]:
    """A clean sweep over IDS: each family in two shards."""
    return sweep_dirs(tmp_path, IDS, families)


def _merge(tmp_path, dirs, *extra) -> tuple[int, Path, dict]:
    out = tmp_path / "merged"
    code = cli.main(["merge", "-o", str(out), *map(str, dirs), "--no-html", *extra])
    return code, out, json.loads((out / "summary.json").read_text())


# ------------------------------------------------------------------ merge: broken shards

def test_merge_keeps_every_readable_shard_and_lists_each_broken_one(tmp_path, capsys):
    a1, a2, b1, b2 = _shards(tmp_path)
    lines = (a2 / "results.jsonl").read_text().splitlines()
    torn = json.loads(lines[1])["case_id"]
    lines[1] = lines[1][:20]                                            # a torn line in the middle
    (a2 / "results.jsonl").write_text("\n".join(lines) + "\n")
    (b1 / "results.jsonl").unlink()                                     # a shard that wrote no results
    gone = tmp_path / "ascend950-3"                                     # a shard that never reported at all
    code, out, summary = _merge(tmp_path, [a1, a2, b1, b2, gone])
    text = capsys.readouterr().out
    assert code == 1, text
    kept = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    status = {(r["family"], r["case_id"]): r["status"] for r in kept}
    assert len(kept) == len(status) == 2 * len(IDS)          # every case once: its result, or MISSING
    assert [k for k, s in status.items() if s == "MISSING" and k[0] == "ascend910b"] == [("ascend910b", torn)]
    assert sum(s == "PASS" for (f, _), s in status.items() if f == "ascend950") == len(IDS) // 2   # b2's
    problems = "\n".join(f"{p['kind']}: {p['message']}" for p in summary["problems"])
    assert f"unreadable: {a2 / 'results.jsonl'}:2: not a JSON record" in problems
    assert f"unreadable: {b1 / 'results.jsonl'}: no results file" in problems
    assert f"unreadable: {gone}: no such report directory" in problems
    assert f"PROBLEM unreadable: {a2 / 'results.jsonl'}:2:" in text and "\nerror:" not in text


@pytest.mark.parametrize("line, why", [
    (b'{"case_id": "Op0.g[x]", "status": "GREAT"}', "field 'status': unknown status 'GREAT'"),
    (b'["a list"]', "a record needs a 'case_id'"),
    (b'{"case_id": "Op0.g[\xff]"}', "not UTF-8 text"),
])
def test_a_bad_record_is_named_by_file_and_line_and_the_rest_is_kept(tmp_path, line, why):
    a1, a2 = _shards(tmp_path, ("ascend910b",))
    path = a1 / "results.jsonl"
    path.write_bytes(line + b"\n" + path.read_bytes())
    code, out, summary = _merge(tmp_path, [a1, a2])
    assert code == 1
    assert [p["message"].split("; ")[0] for p in summary["problems"]] == [f"{path}:1: {why}"]
    assert len((out / "results.jsonl").read_text().splitlines()) == len(IDS)


def test_broken_summary_or_manifest_is_listed_and_the_records_kept(tmp_path):
    a1, a2 = _shards(tmp_path, ("ascend910b",))
    (a1 / "summary.json").write_text("{not json")
    (a2 / "manifest.json").write_text("[1, 2]")
    code, out, summary = _merge(tmp_path, [a1, a2])
    msgs = [p["message"] for p in summary["problems"]]
    assert code == 1 and len((out / "results.jsonl").read_text().splitlines()) == len(IDS)
    assert any(m.startswith(f"{a1 / 'summary.json'}: not valid JSON") for m in msgs), msgs
    assert any(m.startswith(f"{a2 / 'manifest.json'}: expected an object") for m in msgs), msgs


def test_an_unreadable_previous_night_is_noted_and_the_merge_still_written(tmp_path, capsys):
    code, out, summary = _merge(tmp_path, _shards(tmp_path), "--previous", str(tmp_path / "no-such-night"))
    assert code == 0 and (out / "results.jsonl").exists()
    assert "NOTE previous:" in capsys.readouterr().out and summary["changes"] is None


# ------------------------------------------------------------------ sweep: arguments and jobs

@pytest.mark.parametrize("args, message", [
    (["--families", "ascend910b,ascend999"], "--families: unknown SoC family 'ascend999'; known families: ascend910b, "),
    (["--families", "ascend910b", "--shards", "0"], "--shards: must be >= 1, got 0"),
    (["--families", "ascend910b", "--shards", "-2"], "--shards: must be >= 1, got -2"),
    (["--families", ","], "--families: no family given"),
    (["--families", "ascend950,ascend950"], "--families: ascend950 given twice"),
])
def test_bad_sweep_arguments_are_one_line_before_any_job(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.setattr(sweep.subprocess, "Popen", lambda *a, **k: pytest.fail("a job started"))
    assert cli.main(["sweep", "-o", str(tmp_path / "out"), *args, "--", "-k", "x"]) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"ERROR: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_a_sweep_baseline_the_merge_would_refuse_stops_it_before_any_job(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sweep.subprocess, "Popen", lambda *a, **k: pytest.fail("a job started"))
    path = tmp_path / "aclnn-ascend950.yaml"
    path.write_text(OTHER)
    assert cli.main(["sweep", "-o", str(tmp_path / "out"), "--families", "ascend950,ascend910b", "--gate", str(path)]) == 4
    assert capsys.readouterr().err == f"ERROR: {path}: field 'target': baseline is for aclnn-ascend950, " \
                                      "but the run is aclnn-ascend910b\n"


# A job of the fake matrix: writes its shard's report directory (tests/reporting_fixtures.py) and
# exits with the code the test gave its family; exit 5 (pytest: nothing selected) writes no manifest.
# A family with an empty shard selected only the cases of its first shard (fewer cases than shards).
_JOB = """
import sys
from pathlib import Path
from harness.reporting import shard
from tests.reporting_fixtures import rec, write_run
family, i, n, out, code = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
ids = %r
mine = [c for c, keep in zip(ids, shard.select(ids, (i, n))) if keep]
if sys.argv[6] == "short":
    ids = [c for c, keep in zip(ids, shard.select(ids, (1, n))) if keep]
if code == 5:
    write_run(out / f"{family}-{i}", [], family=family)
elif code != 4:
    write_run(out / f"{family}-{i}", [rec(c, family=family) for c in mine], family=family, shard=(i, n), selected=ids)
sys.exit(code)
""" % IDS


def _fake_sweep(tmp_path, monkeypatch, families: dict, shards: int = 2, empty_shards=()) -> tuple[int, Path, dict]:
    """families: {family: exit code of its jobs}; empty_shards: (family, shard) jobs that exit 5."""
    def job(family, i, n, out, backend, extra, parallel=1):
        code = 5 if (family, i) in empty_shards else families[family]
        short = any(f == family for f, _ in empty_shards)
        return [sys.executable, "-c", _JOB, family, str(i), str(n), str(out), str(code), "short" if short else "all"]
    monkeypatch.setattr(sweep, "job_command", job)
    out = tmp_path / "nightly"
    code = sweep.run(out, list(families), shards, "aclnn", [], ROOT, ["--no-html"],
                     lambda argv: cli.main(["merge", *argv]), parallel=2)
    return code, out, json.loads((out / "merged" / "summary.json").read_text())


def test_a_job_that_selected_no_cases_is_listed_and_does_not_fail_the_sweep(tmp_path, monkeypatch, capsys):
    code, out, summary = _fake_sweep(tmp_path, monkeypatch, {"ascend910b": 1, "ascend310b": 5},
                                     empty_shards={("ascend910b", 2)})
    text = capsys.readouterr().out
    assert "   ascend310b 1/2: exit 5: selected no cases" in text
    assert "sweep: 4 job(s): 1 ran cases, 3 selected no cases (ascend910b 2/2, ascend310b 1/2, ascend310b 2/2)" in text
    notes = [p for p in summary["problems"] if p["kind"] == "no cases"]
    assert [p["message"] for p in notes] == [f"job {f} shard {i}/2: selected no cases (pytest exit 5)"
                                             for f, i in (("ascend910b", 2), ("ascend310b", 1), ("ascend310b", 2))]
    assert not any(p["blocking"] for p in summary["problems"]), summary["problems"]    # no "shard 2/2 never reported"
    assert code == 0, text


def test_a_sweep_where_every_job_selected_nothing_fails(tmp_path, monkeypatch, capsys):
    code, _, summary = _fake_sweep(tmp_path, monkeypatch, {"ascend310b": 5, "ascend310p": 5}, shards=1)
    assert code == 1
    assert "all 2 job(s) selected no cases: the sweep tested nothing" in [p["message"] for p in summary["problems"]]


def test_a_job_that_stopped_early_fails_the_sweep(tmp_path, monkeypatch, capsys):
    code, _, summary = _fake_sweep(tmp_path, monkeypatch, {"ascend910b": 0, "ascend950": 4}, shards=1)
    msgs = [p["message"] for p in summary["problems"]]
    assert code == 1 and "job ascend950 shard 1/1: pytest exit 4 (usage error or failed start-up); " \
                          "its results are incomplete or absent" in msgs, msgs


def test_sweep_manifest_jobs_are_checked_field_by_field(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("backend: aclnn\nfamilies: [ascend910b]\nshards: 1\njobs:\n  - {family: ascend910b, shard: 1, exit: x}\n")
    with pytest.raises(merge.ManifestError, match=r"sweep.yaml: field 'jobs\[0\].exit': expected int, got 'x'"):
        merge.load_sweep_manifest(path)


# ------------------------------------------------------------------ gate: a baseline for another target

PROPS = Target.from_wire({"backend": "aclnn", "family": "ascend910b", "soc_name": "Ascend910B2",
                          "backend_version": "9.0", "simulated": "true", "library": "/nonexistent/libopapi.so"})


def _settings(gate_path, soc=None, backend="aclnn") -> ReportSettings:
    options = {"gate": str(gate_path), "soc": soc, "backend": backend, "shard": None, "shard_durations": None,
               "reruns": 0, "dump_failures": False, "dump_all": False, "no_html": True, "report_dir": None, "db": None}
    return ReportSettings.from_options(options.__getitem__)


def _reporting(tmp_path, gate_path, worker=None) -> RunReporting:
    return RunReporting(_settings(gate_path), root=tmp_path, argv=["pytest"], requested={"backend": "aclnn"},
                        worker=worker)


def test_a_baseline_for_another_soc_is_refused_at_start_up(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(OTHER)
    with pytest.raises(bl.BaselineError, match="field 'target': baseline is for aclnn-ascend950, but the run is aclnn-ascend910b$"):
        _settings(path, soc="ascend910b")
    with pytest.raises(bl.BaselineError, match="baseline is for aclnn-ascend950, but the run is torch"):
        _settings(path, backend="torch")
    _settings(path, soc="ascend950")                 # the same file fits its own target


def test_a_refused_gate_is_never_reported_as_passed(tmp_path):
    """The run's family is known only once the library is open (no --soc): the refusal comes
    then, before any case, and every report says GATE REFUSED, none GATE PASSED."""
    path = tmp_path / "b.yaml"
    path.write_text(OTHER)
    reporting = _reporting(tmp_path, path)
    reporting.open_recorder(tmp_path / "rep", PROPS)
    with pytest.raises(bl.BaselineError, match="field 'target'"):
        reporting.select([], PROPS)
    assert reporting.finish(4, []) == 4
    lines = reporting.summary_lines()
    assert lines[0].startswith("GATE REFUSED: ") and "baseline is for aclnn-ascend950" in lines[0]
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert summary["gate"] == [lines[0]]
    for name in ("summary.json", "summary.md", "junit.xml"):
        assert "GATE PASSED" not in (tmp_path / "rep" / name).read_text(), name
    assert not any("PASSED" in line for line in lines)


def test_a_refused_gate_under_xdist_runs_nothing_and_exits_non_zero(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(OTHER)
    worker = _reporting(tmp_path, path, worker="gw0")
    assert worker.select([("case", "node")], PROPS) == [False]      # the controller says why
    controller = _reporting(tmp_path, path)
    controller.open_recorder(tmp_path / "rep", PROPS)
    assert controller.finish(5, []) == 4 and controller.summary_lines()[0].startswith("GATE REFUSED")


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SWCANN_", "ASCEND_"))}


def test_refusal_comes_before_any_verdict_in_a_real_run(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(OTHER)
    proc = subprocess.run([sys.executable, "-m", "pytest", "cases/avg_pool2d_backward.yaml", "-k", "global_4d and float32",
                           "--backend", "aclnn", "-n", "0", "-q", "-p", "no:cacheprovider", "--no-html",
                           "--gate", str(path), "--report-dir", str(tmp_path / "r")],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "GATE PASSED" not in out and "Traceback" not in out
    # refused once the library has told the family, before the report directory is taken: one
    # line, no empty run written (issue 32: it wrote one, said GATE REFUSED and 'all N deselected')
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("*** software CANN at ")]
    assert len(lines) == 1 and lines[0].startswith("ERROR: ") and "baseline is for aclnn-ascend950" in lines[0], out
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------ gate: what is wrong with a baseline

CASE = "Op.g[float32-1]"


def test_a_directory_without_this_targets_baseline_says_so(tmp_path):
    (tmp_path / "other.yaml").write_text(OTHER)
    base = bl.load_for(tmp_path, "aclnn", "ascend910b")
    result = gate.evaluate(gate.apply([rec(CASE)], base), base)
    assert result.passed
    assert f"  warning: no baseline for aclnn-ascend910b found in {tmp_path}: no failure is expected, " \
           "so any failure fails the gate" in result.lines()
    failing = gate.evaluate(gate.apply([rec(CASE, "FAIL")], base), base)
    assert not failing.passed                      # no expected failures: a failure fails it


def test_a_run_gated_against_an_empty_directory_records_the_warning(tmp_path):
    reporting = _reporting(tmp_path, _empty(tmp_path))
    reporting.open_recorder(tmp_path / "rep", PROPS)
    assert reporting.finish(0, [rec(CASE)]) == 0
    gate_lines = json.loads((tmp_path / "rep" / "summary.json").read_text())["gate"]
    assert gate_lines[0].startswith("GATE PASSED") and "no baseline for aclnn-ascend910b-9.0 found in" in gate_lines[1]


def _empty(tmp_path) -> Path:
    d = tmp_path / "baselines"
    d.mkdir()
    return d


BASE = """target: {backend: aclnn, family: ascend910b}
fails:
  - {case: "Op.g[*]", reason: r, link: l}
  - {case: "Op.gone[*]", reason: r, link: l}
  - {case: "Op.g[*]", reason: again, link: l}
  - {case: "Op.h[x]", reason: r, link: l}
skips:
  - {case: "Op.h[x]", reason: r, link: l}
  - {case: "Op.g[float32-*]", reason: r, link: l}
"""


def test_duplicate_conflicting_and_unused_entries_are_warnings_in_the_gate_lines(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(BASE)
    base = bl.load_for(path, "aclnn", "ascend910b")
    records = [rec(CASE, "SKIP"), rec("Op.h[x]", "SKIP")]
    lines = gate.evaluate(gate.apply(records, base), base).lines()
    warnings = [line.strip() for line in lines if line.strip().startswith("warning:")]
    assert "warning: duplicate baseline entry 'Op.g[*]' (b.yaml:fails[0], b.yaml:fails[2]): only the first is used" in warnings
    assert "warning: 'Op.h[x]' is listed under both fails and skips (b.yaml:fails[3], b.yaml:skips[0]): the case is " \
           "skipped, so the other entry is never checked" in warnings
    assert "warning: b.yaml:fails[0] (Op.g[*]) and b.yaml:skips[1] (Op.g[float32-*]) both match Op.g[float32-1]: " \
           "the case is skipped, so the fails entry is never checked" in warnings
    assert "warning: baseline entry b.yaml:fails[1] (Op.gone[*]) matched no case in this run" in warnings
    assert len(warnings) == 5, warnings               # fails[2] conflicts with skips[1] too


def test_an_entry_for_another_shards_case_is_not_unused(tmp_path, capsys):
    """A shard's manifest lists every shard's cases: an entry for a case of shard 2 is not stale
    when shard 1 is gated; one for a case no shard selected is."""
    path = tmp_path / "b.yaml"
    path.write_text("target: {backend: aclnn, family: ascend910b}\n"
                    f"fails: [{{case: '{IDS[1]}', reason: r, link: l}}, {{case: 'Op.gone[1]', reason: r, link: l}}]\n")
    run = _shards(tmp_path, ("ascend910b",))[0]                  # shard 1/2: IDS[0], IDS[2], ...
    assert cli.main(["gate", str(run), str(path)]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if "matched no case" in line]
    assert warnings == ["  warning: baseline entry b.yaml:fails[1] (Op.gone[1]) matched no case in this run"]


@pytest.mark.parametrize("target, message", [
    ("{backend: aclnn, family: ascend999}", "field 'target.family': unknown family 'ascend999'; known: ascend910b, "),
    ("{backend: acl, family: ascend910b}", "field 'target.backend': unknown backend 'acl'; known: torch, aclnn"),
])
def test_a_target_no_run_can_have_is_named_as_such(tmp_path, target, message):
    path = tmp_path / "b.yaml"
    path.write_text(f"target: {target}\nfails: []\n")
    for where in (path, tmp_path):                   # the file, or the directory that holds it
        with pytest.raises(bl.BaselineError) as e:
            bl.load_for(where, "aclnn", "ascend910b")
        assert f"{path}: {message}" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(bl.BaselineError, match="unknown"):       # a run with --gate DIR stops at start-up
        _settings(tmp_path)
