"""Every record, whatever produced it, is what harness/reporting/record.schema.json documents, and is
built by the one constructor (reporting/records.build): a real run on the software CANN with passes,
invalid cases, a crash, a hang and a known deviation, a case file that does not load, cases a manifest
selected and no process ran, and cases a journal saw start and never finish."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import jsonschema
import pytest

from harness.core.status import Status
from harness.execution import journal
from harness.reporting import records as rec_mod
from harness.target import Target
from tests.robust_cases import write_cases
from tests.test_robust import _faults, _pytest, _records

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "harness" / "reporting" / "record.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _invalid(records: list[dict]) -> list[str]:
    return [f"{r.get('case_id')}: {e.json_path}: {e.message}" for r in records for e in VALIDATOR.iter_errors(r)]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> list[dict]:
    """A software-CANN run with a crash and a hang among passes, plus a broken case file beside it."""
    tmp = tmp_path_factory.mktemp("run")
    write_cases(tmp, channels=[1], sides=(4, 6), hang_timeout_s=4)
    (tmp / "cases" / "broken.yaml").write_text("op: [not, a, name\n")
    _pytest(tmp, "-q", "-n", "0", env={"SWCANN_FAULTS": _faults(f289="phase2_segv", f437="phase2_hang")})
    return _records(tmp / "rep")


def test_every_record_of_a_real_run_matches_the_schema(run):
    statuses = {r["status"] for r in run}
    assert {"PASS", "CRASH", "TIMEOUT", "FAIL"} <= statuses, statuses     # FAIL: the case file that does not load
    assert not _invalid(run), "\n".join(_invalid(run)[:20])


def test_phase1_status_is_the_integer_phase_1_returned(run):
    judged = [r for r in run if r["raw_status"] == "PASS"]
    assert judged and all(r["phase1"]["status"] == r["phase1"]["expected"] == 0 for r in judged), \
        [r["phase1"] for r in judged][:3]
    never = [r for r in run if r["status"] in ("CRASH", "TIMEOUT")]
    assert never and all(r["phase1"]["status"] is None for r in never)      # no answer came back


def test_records_built_without_a_case_match_the_schema(tmp_path):
    props = Target.from_wire({"backend": "aclnn", "family": "ascend910b", "soc_name": "Ascend910B2",
                              "simulated": "true"})
    manifest = {"requested": {"backend": "aclnn", "family": "ascend910b"},
                "assigned": [{"case_id": "Op.g[a]", "nodeid": "cases/op.yaml::g[a]", "op": "Op", "dtype": "float32"}]}
    missing = rec_mod.missing_records(manifest, [], props, stopped="SIGTERM at 12:00")
    j = journal.Journal(tmp_path, "run1", "main")
    j.started("Op.g[b]", "cases/op.yaml::g[b]", "Op")
    j.close()
    state = journal.scan(tmp_path)
    unfinished = rec_mod.unfinished_records(state.unfinished, props)
    crashed = rec_mod.not_run({"case_id": "Op.g[c]", "op": "Op"}, Status.CRASH, "the pytest worker died",
                              rec_mod.Context(props))
    built = missing + unfinished + [crashed]
    assert [r["status"] for r in built] == ["MISSING", "MISSING", "CRASH"]
    assert not _invalid(built), "\n".join(_invalid(built))


def test_a_field_the_schema_does_not_know_is_refused(run):
    """The schema documents every field: one the constructor adds without documenting it fails here."""
    assert _invalid([{**run[0], "undocumented": 1}])
    assert _invalid([{**run[0], "phase1": {**run[0]["phase1"], "status": "PASS"}}])     # the old word


def _record_literals(path: Path) -> list[int]:
    """Lines of dict literals that look like a record made by hand: a case id with its op and status,
    or a raw status (a summary's list of failures, a case id and its status alone, is no record)."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if {"case_id", "status", "op"} <= keys or {"case_id", "raw_status"} <= keys:
                found.append(node.lineno)
    return found


def test_one_constructor_builds_every_record():
    """No module of the harness but reporting/records.py writes a record literal."""
    builders = {str(p.relative_to(REPO)): _record_literals(p) for p in (REPO / "harness").rglob("*.py")}
    elsewhere = {p: lines for p, lines in builders.items() if lines and p != "harness/reporting/records.py"}
    assert not elsewhere, elsewhere
    assert not builders["harness/reporting/records.py"]      # build() itself spreads the facts in


def test_report_html_shows_the_integer_phase1_status():
    """A numeric failure whose phase 1 returned 0 reads 'status 0 (expected 0)' in report.html, never a
    status word (records once carried 'FAIL' there)."""
    from harness.judge.outcome import Outcome
    from harness.reporting import html
    from harness.reporting.runs import Report, Run
    outcome = Outcome("Op.g[x]", "Op", Status.FAIL, "gradInput: FAIL mere_mare[float32]: MERE=1 >= 0.000122",
                      family="ascend910b", phase1_status=0, expected_status=0, phase2_status=0, sync_status=0)
    rec = rec_mod.build(outcome, {"case_id": "Op.g[x]", "nodeid": "cases/op.yaml::g[x]", "op": "Op",
                                  "dtype": "float32", "kind": "valid"},
                        rec_mod.Context(Target.from_wire({"backend": "aclnn", "family": "ascend910b", "simulated": "true"})))
    assert not _invalid([rec]), _invalid([rec])
    page = html.render(Report("t", [Run("d", {"backend": "aclnn", "family": "ascend910b"}, [rec])], [rec]))
    assert "status 0 (expected 0)" in page and "status FAIL" not in page


def test_the_case_facts_are_declared_once_and_a_rebuilt_record_keeps_them_all():
    """FACT_KEYS is CaseFacts' keys and the schema documents each; a record rebuilt from another
    (facts_in, as a harness error around a judged case does) keeps every fact, the perf gate's
    tolerance of a case's group too (it used to be added outside facts_of, and dropped)."""
    from typing import get_type_hints
    assert rec_mod.FACT_KEYS == tuple(get_type_hints(rec_mod.CaseFacts))
    assert set(rec_mod.FACT_KEYS) <= set(SCHEMA["properties"]), set(rec_mod.FACT_KEYS) - set(SCHEMA["properties"])
    from harness import operators
    _op, cases = operators.load_case_file(REPO / "cases" / "avg_pool2d_backward.yaml")
    from dataclasses import replace
    timed = replace(cases[0], perf={"tolerance": 0.2})        # a group's `perf: {tolerance: 0.2}`
    facts = rec_mod.facts_of(timed, "cases/avg_pool2d_backward.yaml::x")
    assert facts["perf_tolerance"] == timed.perf["tolerance"]
    props = Target.from_wire({"backend": "aclnn", "family": "ascend910b", "soc_name": "Ascend910B2",
                              "simulated": "true"})
    first = rec_mod.not_run(facts, Status.SKIP, "skipped by a baseline", rec_mod.Context(props))
    again = rec_mod.not_run(rec_mod.facts_in(first), Status.FAIL, "harness error: x", rec_mod.Context(props))
    assert {k: again.get(k) for k in rec_mod.FACT_KEYS} == {k: first.get(k) for k in rec_mod.FACT_KEYS}
    assert not _invalid([first, again]), _invalid([first, again])



def test_the_record_type_and_the_schema_declare_the_same_keys():
    """records.Record is the record's one declaration: record.schema.json documents exactly its keys,
    and requires exactly its Required ones (what build writes for every case)."""
    from typing import get_type_hints
    declared = set(get_type_hints(rec_mod.Record))
    assert declared == set(SCHEMA["properties"]), (sorted(declared - set(SCHEMA["properties"])),
                                                  sorted(set(SCHEMA["properties"]) - declared))
    assert rec_mod.Record.__required_keys__ == set(SCHEMA["required"]), \
        sorted(rec_mod.Record.__required_keys__ ^ set(SCHEMA["required"]))


def test_a_dump_that_cannot_be_completed_is_built_into_the_record_beside_the_failure(tmp_path):
    """--dump-failures completes the worker's arrays file with the record's meta and the record gets the
    file's path: a record built again from the outcome (reruns.dumped), never edited after build. A file
    that is gone by then is a harness error beside the case's own failure and any error before it."""
    from harness.judge.outcome import Outcome
    from harness.reporting import reruns
    outcome = Outcome("Op.g[x]", "Op", Status.FAIL, "gradInput: FAIL", family="ascend910b",
                      diagnostics={"harness_error": "an earlier one"},
                      dump={"path": str(tmp_path / "gone" / "x.npz"), "dtypes": {}})
    facts = {"case_id": "Op.g[x]", "nodeid": "cases/op.yaml::g[x]", "op": "Op", "dtype": "float32", "kind": "valid"}
    ctx = rec_mod.Context(Target.from_wire({"backend": "aclnn", "family": "ascend910b", "simulated": "true"}))
    first = rec_mod.build(outcome, facts, ctx)
    rec = rec_mod.build(reruns.dumped(outcome, first), facts, ctx)
    assert rec["dump"] is None and rec["status"] == "FAIL", rec
    assert rec["harness_error"].startswith("an earlier one; --dump-failures: cannot complete "), rec["harness_error"]
    assert first["dump"] == outcome.dump and "cannot complete" not in first["harness_error"]   # built, not edited
    assert not _invalid([first, rec]), _invalid([first, rec])
