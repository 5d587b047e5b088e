"""Heap corruption is blamed on the case that did it, not on the case that next calls free()
(harness/execution/blame.py). The software CANN's heap_overrun fault writes one int64 past a host
block in one case's launch and carries on; glibc aborts in the next launch's free()."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from harness.execution import blame, logs
from tests.robust_cases import faulty_numel, write_cases
from tests.test_robust import _pytest, _records

REPO = Path(__file__).resolve().parent.parent
OVERRUN = f"heap_overrun@numel={faulty_numel('f289')}"


def _by_group(records) -> dict:
    return {r["case_id"].split(".", 1)[1].split("[", 1)[0]: r for r in records}


def test_the_victim_of_a_heap_overrun_names_its_culprit(tmp_path):
    """f289 overruns and passes; f323, the next launch in that worker, dies in free(). The victim's
    record names the culprit, found by bisection over the cases its worker ran, and the culprit's
    record fails, naming its victim."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1", env={"SWCANN_FAULTS": OVERRUN})
    records = _by_group(_records(tmp_path / "rep"))
    victim, culprit = records["f323"], records["f289"]
    assert {g for g, r in records.items() if r["status"] != "PASS"} == {"f289", "f323"}, out
    assert victim["status"] == "CRASH" and victim["signal"] == "SIGABRT", victim["reason"]
    assert logs.heap_corruption(victim["last_error"]), victim["last_error"]
    searched = victim["blame"]["searched"]
    assert (f"heap corruption; culprit: {culprit['case_id']} (bisected over {searched} cases; confirmed: alone "
            "under glibc's heap checking it dies at its own free)") in victim["reason"]
    assert searched == 9            # the 8 cases of 'before' and f289 ran in that worker before f323
    assert culprit["status"] == "FAIL" and culprit["raw_status"] == "FAIL"
    assert culprit["reason"].startswith("heap corruption: this case damages the host heap; a later case, "
                                        f"{victim['case_id']}, failed of it (free(): "), culprit["reason"]
    assert culprit["blame"]["role"] == "culprit" and victim["blame"]["role"] == "victim"
    assert culprit["blame"]["victim"] == victim["case_id"]
    assert code == 1
    schema = json.loads((REPO / "harness" / "reporting" / "record.schema.json").read_text())
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(victim))
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(culprit))


def test_malloc_check_finds_the_overrun_at_the_culprits_own_free(tmp_path):
    """With --malloc-check glibc checks each block at its free: f289 dies in its own launch, and
    running it alone in a fresh worker shows it needs no case before it."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1", "--malloc-check",
                           env={"SWCANN_FAULTS": OVERRUN})
    records = _by_group(_records(tmp_path / "rep"))
    assert {g for g, r in records.items() if r["status"] != "PASS"} == {"f289"}, out
    culprit = records["f289"]
    assert culprit["status"] == "CRASH" and "free(): invalid pointer" in culprit["last_error"], culprit["reason"]
    assert "it fails alone in a fresh worker too: the case itself" in culprit["reason"], culprit["reason"]


def test_a_guard_violation_caused_by_an_earlier_case_names_its_culprit(tmp_path):
    """The library keeps an address from f289's launch and stores past it in the next launch, f323:
    f323's workspace guard bytes change. Alone f323 passes, so the cases before it are bisected."""
    from tests.hostile_lib import hostile_env
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1",
                           env=hostile_env(f"stale_write@numel={faulty_numel('f289')}", tmp_path / "state"))
    records = _by_group(_records(tmp_path / "rep"))
    victim, culprit = records["f323"], records["f289"]
    assert {g for g, r in records.items() if r["status"] != "PASS"} == {"f289", "f323"}, out
    assert victim["status"] == "FAIL" and victim["reason"].startswith("the library wrote past the end of its workspace")
    assert f"; guard violation; culprit: {culprit['case_id']} (bisected over 9 cases)" in victim["reason"]
    assert culprit["status"] == "FAIL" and culprit["reason"].startswith(
        f"guard violation: this case damages memory a later case uses; a later case, {victim['case_id']}")
    assert victim["blame"]["kind"] == culprit["blame"]["kind"] == "guard violation"


def test_a_guard_violation_of_the_case_itself_is_left_as_it_is(tmp_path):
    """write_past_end stores past the output view in every launch it hits: the case fails alone too,
    so its reason is its own, with nothing about other cases."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1",
                           env={"SWCANN_FAULTS": f"write_past_end@numel={faulty_numel('f289')}"})
    records = _by_group(_records(tmp_path / "rep"))
    assert {g for g, r in records.items() if r["status"] != "PASS"} == {"f289"}, out
    reason = records["f289"]["reason"]
    assert "wrote outside the output view" in reason                   # a guard violation: it was searched
    assert "culprit" not in reason and "blame" not in records["f289"], reason


def test_without_the_fault_nothing_is_blamed(tmp_path):
    """The same cases with the fault named for a size no case has: the host-block dance runs in every
    launch, and nothing crashes."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1",
                           env={"SWCANN_FAULTS": "heap_overrun@numel=7"})
    assert code == 0 and {r["status"] for r in _records(tmp_path / "rep")} == {"PASS"}, out


class _Case:
    def __init__(self, i):
        self.id = f"Op.g[{i}]"


def _search(n: int, culprit: int | None, alone: bool = False, **kw):
    """blame.find over n cases, where running case `culprit` anywhere before the victim makes a
    worker crash; (the Blame, the sequences run)."""
    history = [(_Case(i), 60.0) for i in range(n)]
    victim = (_Case("v"), 60.0)
    ran = []

    def crashes(sequence):
        ran.append([c.id for c, _ in sequence])
        return alone or any(c.id == f"Op.g[{culprit}]" for c, _ in sequence[:-1])
    return blame.find(victim, history, "free(): invalid size", crashes, **kw), ran


@pytest.mark.parametrize("n, culprit", [(1, 0), (2, 0), (2, 1), (9, 4), (100, 0), (100, 99), (1000, 617)])
def test_bisection_finds_the_culprit_in_log_steps(n, culprit):
    found, ran = _search(n, culprit)
    assert found.culprit == f"Op.g[{culprit}]" and found.searched == n and not found.note
    assert ran[0] == ["Op.g[v]"]                          # first the victim alone
    assert all(seq[-1] == "Op.g[v]" for seq in ran)       # the victim last in every step
    assert found.steps == len(ran) <= 2 + (n - 1).bit_length() + 1


def test_a_search_says_how_it_ended():
    found, _ = _search(10, None)
    assert found.culprit is None and "did not recur" in found.note
    assert "culprit not found" in found.for_victim()
    found, ran = _search(10, 3, alone=True)
    assert found.culprit == "Op.g[v]" and len(ran) == 1 and "the case itself" in found.for_victim()
    found, _ = _search(blame.MAX_CASES + 5, blame.MAX_CASES)
    assert found.searched == blame.MAX_CASES and f"of the {blame.MAX_CASES + 5} cases" in found.note
    found, _ = _search(1000, 500, budget_s=0.0)
    assert found.culprit is None and found.note.startswith("gave up after 0 s")


@pytest.mark.parametrize("line", [
    "free(): invalid next size (normal)", "free(): invalid size", "munmap_chunk(): invalid pointer",
    "double free or corruption (!prev)", "corrupted size vs. prev_size", "malloc(): corrupted top size",
    "Fatal glibc error: malloc assertion failure in _int_malloc: (unsigned long) (size) >= (unsigned long) (nb)",
])
def test_glibcs_heap_messages_are_recognised(line):
    assert logs.heap_corruption(f"[INFO] something\n{line}\n") == line


@pytest.mark.parametrize("line", ["free() called twice in the docs", "[ERROR] kernel launch touched an invalid address",
                                  "malloc(): fine", ""])
def test_other_lines_are_not_heap_corruption(line):
    assert logs.heap_corruption(line) is None


def test_heap_overrun_is_documented_and_apart_from_the_scored_faults():
    """The fault's victim depends on what runs next in the process, so faultscore cannot score it:
    it is in its own table, and in swcann/README.md's."""
    faults_c = (REPO / "swcann" / "src" / "core" / "faults.c").read_text()
    scored = faults_c[faults_c.index("k_names[] = {"):]
    assert "heap_overrun" not in scored[:scored.index("};")]
    later = faults_c[faults_c.index("k_later_names[] = {"):]
    assert re.findall(r'^\s*"(\w+)",', later[:later.index("};")], re.M) == ["heap_overrun"]
    assert re.search(r"^\| `heap_overrun` \|", (REPO / "swcann" / "README.md").read_text(), re.M)


def _with_evidence(suspect_damages: bool, victim_damages: bool):
    """A search whose victim crashes only after Op.g[3]; `confirm` says who dies alone under heap checking."""
    history = [(_Case(i), 60.0) for i in range(8)]
    victim = (_Case("v"), 60.0)
    checked = []

    def crashes(sequence):
        return any(c.id == "Op.g[3]" for c, _ in sequence[:-1])

    def confirm(sequence):
        checked.append([c.id for c, _ in sequence])
        (case, _), = sequence
        return suspect_damages if case.id == "Op.g[3]" else victim_damages
    return blame.find(victim, history, "free(): invalid size", crashes, confirm=confirm), checked


def test_a_suspect_is_convicted_only_on_evidence():
    """The bisection's suspect is the culprit only if it dies alone under glibc's heap checking; a
    victim that does is its own culprit (an overrun into a block the earlier cases placed); neither:
    nobody is convicted, and the reason names the suspect as unproven (issue 32: an innocent earlier
    case was marked FAIL)."""
    found, checked = _with_evidence(True, False)
    assert found.culprit == "Op.g[3]" and "confirmed" in found.note and checked == [["Op.g[3]"]]
    found, checked = _with_evidence(False, True)
    assert found.culprit == "Op.g[v]" and checked == [["Op.g[3]"], ["Op.g[v]"]]
    assert "the case itself" in found.for_victim() and "Op.g[3]" in found.for_victim()
    found, _ = _with_evidence(False, False)
    assert found.culprit is None and "not convicted" in found.note and "Op.g[3]" in found.note
    assert "culprit not found" in found.for_victim()
    found, _ = _search(9, 4)                    # no evidence step given: the bisection's answer stands
    assert found.culprit == "Op.g[4]"
