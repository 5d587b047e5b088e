"""Acceptance of the triage on real runs: a bug planted in a copy of the software CANN (a slice of its
behaviour: one width remainder, one dtype on one family, one rank, one label, one value class, one
attribute combination, one batch size, one layout; tests/triage_bugs.py) is run through a small tier
that shows it, and `python -m harness.reporting triage RUN --confirm` must
  * put it first: the cause explaining the most failures has precision and recall >= 0.9;
  * state the slice: the planted atoms are in its predicate;
  * be true: every case the bug acts on (its own condition, read from the records) failed, nothing
    else did, and the predicate matches those cases;
  * be confirmed by experiment: new cases inside the predicate fail the same way, cases outside do not.
Three bugs planted at once are three causes. Broken on purpose: the tier on the fault-free library
has no cause, so it is the bug that the tier catches."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests import triage_bugs as tb

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not (REPO / ".git").exists(),
                                reason="needs a git checkout to know which files the repository holds")


def _run(bugs: tuple, tiers: tuple, tmp_path: Path, confirm: bool) -> tuple[list[dict], dict]:
    """The tiers run on a copy with `bugs` planted, then triaged there: (records, triage JSON)."""
    root = tb.make_copy(tmp_path / "repo", bugs)
    run = tb.run_tier(root, tiers, tmp_path / "reports")
    doc, _proc = tb.triage(root, run, confirm=confirm)
    return tb.records(run), doc


@pytest.mark.parametrize("planted", tb.PLANTED, ids=lambda p: p.name)
def test_a_planted_bug_is_the_top_cause_stated_true_and_confirmed(planted, tmp_path):
    recs, doc = _run((planted.bug,), (planted.tier,), tmp_path, confirm=True)
    assert doc["causes"], f"{planted.name}: no cause; unexplained: {doc['unexplained']}"
    number, top = tb.top_cause(doc)
    said = f"{planted.name}: top cause {top['text']!r} ({top['signature']})"
    assert top["precision"] >= 0.9 and top["recall"] >= 0.9, f"{said}: P {top['precision']}, R {top['recall']}"
    assert tb.states_slice(top["predicate"], planted), f"{said} does not state {[sorted(s) for s in planted.slice]}"
    truth = tb.Truth.of(recs, top, planted)
    assert truth.hit and truth.hit == truth.failed, f"{said}: {truth}"
    assert truth.precision >= 0.9 and truth.recall >= 0.9, f"{said}: {truth}"
    conf = next(c for c in doc["confirmations"] if c["cause"] == number)
    assert conf["verdict"] == "confirmed", f"{said}: {conf['verdict']}: {conf['why']}"
    # confirmed as the predicate or as an equivalent of it on the run: either must state the slice
    assert tb.states_slice((conf.get("confirmed_as") or top["text"]).split(" ∧ "), planted), conf.get("tried")
    assert conf["minimal"] and conf["minimal"]["reproduced"], f"{said}: {conf['minimal']}"


def test_three_bugs_planted_at_once_are_three_causes(tmp_path):
    """Different ops (MaxPool3d phase 1 on two families, AvgPool2d numbers, AdaptiveMaxPool2d's guard
    bytes) in one copy, the union of their tiers: one cause per bug, each the cases of its bug, and
    no failure left unexplained."""
    planted = tuple(tb.by_name(n) for n in ("b30_id_4d", "ceil_cip_undivided", "stride_gap_store"))
    recs, doc = _run(tuple(p.bug for p in planted), tuple(p.tier for p in planted), tmp_path, confirm=False)
    causes = [f"{c['text']} ({c['signature']})" for c in doc["causes"]]
    assert len(doc["causes"]) == 3 and not doc["unexplained"], (causes, doc["unexplained"])
    for p in planted:
        hit = {(r["case_id"], r["family"]) for r in recs if p.hits(r)}
        mine = [c for c in doc["causes"] if {(x["case_id"], x["family"]) for x in c["cases"]} == hit]
        assert len(mine) == 1 and tb.states_slice(mine[0]["predicate"], p), (p.name, causes)


def test_the_tier_on_the_fault_free_library_has_no_cause(tmp_path):
    """Broken on purpose: the tier of tail_w_mod16 and segv_batch_of_one with no bug planted passes,
    and the triage finds nothing: what those tests catch is the bug, not the tier."""
    recs, doc = _run((), (tb.WIDTHS_4D,), tmp_path, confirm=False)
    assert recs and doc["failures"] == 0 and not doc["causes"] and not doc["unexplained"], doc
