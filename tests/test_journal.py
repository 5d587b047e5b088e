"""The per-process journals (harness/execution/journal.py): what they say, read from disk or,
for the process that wrote them, from memory, must be the same."""
from __future__ import annotations

from harness.execution import journal


def _write(j: journal.Journal, ids, finish=True):
    for case_id in ids:
        j.started(case_id, f"x.yaml::{case_id}", "Op")
        if finish:
            j.finished({"case_id": case_id, "op": "Op", "status": "PASS", "metric": float("nan")})


def test_own_journals_from_memory_say_what_the_files_say(tmp_path):
    main = journal.Journal(tmp_path, "run1", "main")
    ctrl = journal.Journal(tmp_path, "run1", "controller")
    other = journal.Journal(tmp_path, "run1", "gw0")          # another process's journal: read from disk
    _write(main, ["a", "b"])
    _write(other, ["c"])
    _write(main, ["d"], finish=False)                          # started, never finished: MISSING
    ctrl.finished({"case_id": "e", "op": "Op", "status": "CRASH"})
    for j in (main, ctrl, other):
        j._file.flush()
    from_disk = journal.scan(tmp_path)
    from_memory = journal.scan(tmp_path, own=(main, ctrl))
    assert list(from_memory.final) == list(from_disk.final) == ["a", "b", "c", "e"]
    assert list(from_memory.unfinished) == list(from_disk.unfinished) == ["d"]
    # the same records; the file holds NaN as null (strict JSON), memory the value itself
    assert from_disk.final["a"]["metric"] is None and from_memory.final["a"]["status"] == "PASS"


def test_a_resumed_journal_is_read_from_disk(tmp_path):
    """A file with earlier entries (--resume appends to it) is never taken from memory alone."""
    first = journal.Journal(tmp_path, "run1", "main")
    _write(first, ["a"])
    first.close()
    again = journal.Journal(tmp_path, "run1", "main")
    assert again.entries is None
    _write(again, ["b"])
    again._file.flush()
    assert list(journal.scan(tmp_path, own=(again,)).final) == ["a", "b"]


def test_damaged_lines_are_skipped_and_the_rest_still_read(tmp_path):
    """--resume and the end-of-run scan read journals that a kill or a disk may have damaged: a
    line that is JSON but no entry (a list, an end without its record, a text time) once stopped
    the whole scan with an AttributeError."""
    j = journal.Journal(tmp_path, "run1", "main")
    _write(j, ["a"])
    j.close()
    with open(j.path, "a", encoding="utf-8") as f:
        f.write('[1, 2]\n{"event": "end", "case_id": "x"}\n{"event": "start", "case_id": "y", "t": "noon"}\n'
                '"text"\n{"event": "en')
    _write(journal.Journal(tmp_path, "run1", "gw0"), ["b"])
    _manifest(tmp_path, ["a", "b", "x", "y"])
    state = journal.scan(tmp_path)
    assert list(state.final) == ["a", "b"]
    # every damaged line is counted; the cases they name have no final record, so they run again
    assert state.unreadable == [f"run1-main.jsonl:{n}" for n in range(3, 8)]
    assert sorted(state.unfinished) == ["x", "y"] == sorted(state.unfinished_ids())
    assert "its journal line run1-main.jsonl:4 is unreadable" in state.unfinished["x"][1]


def _manifest(directory, ids):
    import json
    (directory / "manifest.json").write_text(json.dumps({"shard": None, "requested": {}, "selected": [],
                                                         "assigned": [{"case_id": c} for c in ids]}))


def test_a_damaged_line_never_makes_up_a_case(tmp_path):
    """A line damaged inside its case id named a case that does not exist: --resume added a MISSING
    record for it and exited 5. The line is skipped and counted; only a case of the run runs again."""
    j = journal.Journal(tmp_path, "run1", "main")
    _write(j, ["a", "b"])
    j.close()
    with open(j.path, "a", encoding="utf-8") as f:
        f.write('{"event": "start", "case_id": "a#[fl0at32]", "t": 1, garbage\n')      # damage in and after the id
    _manifest(tmp_path, ["a", "b"])
    state = journal.scan(tmp_path)
    assert state.unreadable == ["run1-main.jsonl:5"] and state.unfinished == {} and state.unfinished_ids() == set()


def test_a_resumed_journal_starts_after_a_line_cut_inside_its_id(tmp_path):
    """A kill cut the last line inside its case id; the resumed run's first entry was glued to it,
    so that entry was lost as well and the pair read as a case 'a{'."""
    j = journal.Journal(tmp_path, "run1", "main")
    _write(j, ["a"])
    j.close()
    with open(j.path, "a", encoding="utf-8") as f:
        f.write('{"event": "start", "case_id": "b')
    again = journal.Journal(tmp_path, "run1", "main")
    _write(again, ["c"])
    again.close()
    _manifest(tmp_path, ["a", "c"])
    state = journal.scan(tmp_path)
    assert list(state.final) == ["a", "c"] and state.unfinished == {}
    assert state.unreadable == ["run1-main.jsonl:3"]


def test_a_run_without_results_is_read_from_its_journals(tmp_path):
    """results.jsonl is written once, at a run's end; until then (or for a run killed outright) the
    readers of a report directory get the records its end would have written, from the journals."""
    import json

    import pytest

    from harness.reporting import records as rec_mod
    j = journal.Journal(tmp_path, "run1", "gw0")
    _write(j, ["Op.a", "Op.b"])
    _write(j, ["Op.c"], finish=False)                             # started, never finished
    j._file.flush()
    assigned = [{"case_id": c, "nodeid": f"x.yaml::{c}", "op": "Op"} for c in ("Op.a", "Op.b", "Op.c", "Op.d")]
    (tmp_path / "manifest.json").write_text(json.dumps({"shard": None, "selected": assigned, "assigned": assigned,
                                                        "requested": {"backend": "aclnn", "family": "ascend910b"}}))
    assert rec_mod.unfinished(tmp_path)
    recs = {r["case_id"]: r for r in rec_mod.load_results(tmp_path)}
    assert {c: r["status"] for c, r in recs.items()} == {"Op.a": "PASS", "Op.b": "PASS", "Op.c": "MISSING",
                                                          "Op.d": "MISSING"}
    assert "started at" in recs["Op.c"]["reason"] and "no result was recorded" in recs["Op.d"]["reason"]
    assert recs["Op.d"]["backend"]["backend"] == "aclnn" and recs["Op.d"]["family"] == "ascend910b"
    # a record no reader can read is named, never passed on (a merge keeps the others)
    j.finished({"case_id": "Op.e", "op": "Op", "status": "NOT A STATUS"})
    j._file.flush()
    with pytest.raises(rec_mod.ResultsError, match="journal: a record of the journals: field 'status'"):
        rec_mod.load_results(tmp_path)
    bad: list[str] = []
    assert "Op.e" not in {r["case_id"] for r in rec_mod.load_results(tmp_path, bad)}
    assert len(bad) == 1 and "left out" in bad[0], bad
    # once the run's end wrote results.jsonl, that is what is read
    (tmp_path / rec_mod.RESULTS).write_text(rec_mod.dumps({"case_id": "Op.a", "op": "Op", "status": "PASS"}) + "\n")
    assert not rec_mod.unfinished(tmp_path) and [r["case_id"] for r in rec_mod.load_results(tmp_path)] == ["Op.a"]
