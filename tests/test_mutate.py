"""harness.audit.mutate picks only code a default run executes (its mutants could be killed)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.audit import mutate

REPO = Path(__file__).resolve().parents[1]


def test_sites_are_op_code_a_default_run_executes():
    found = mutate.sites(REPO)
    assert len(found) > 300
    for path, i, start, end, replacement in found:
        line = (REPO / path).read_text().splitlines()[i]
        assert not any(word in line for word in mutate.SKIPPED), line      # fault injection, deviations, messages
        assert line[start:end] != replacement                                # a real change
    assert {Path(p).name for p, *_ in found} >= {"pool_kernels.c", "common.c", "max_unpool3d_backward.c"}


def test_a_check_written_with_the_wrong_comparison_is_a_site():
    """The B28 size check of MaxPool3d (D*H*W <= INT32_MAX): `>` to `>=` is one of its mutants."""
    hits = [(p, i, r) for p, i, s, e, r in mutate.sites(REPO) if p.endswith("max_pool3d_with_argmax_backward.c")
            and "dhw > INT32_MAX" in (REPO / p).read_text().splitlines()[i] and r == ">="]
    assert hits


def test_every_known_equivalent_is_a_current_mutant():
    """An entry of mutants_equivalent.yaml whose line was edited no longer names a mutant: it must
    be read again and removed or rewritten, not kept as a silent exemption."""
    current = set()
    for path, i, start, end, replacement in mutate.sites(REPO):
        line = (REPO / path).read_text().splitlines()[i]
        current.add((path, line.strip(), (line[:start] + replacement + line[end:]).strip()))
    known = mutate.known_equivalents()
    assert known
    stale = [k for k in known if k not in current]
    assert not stale, stale
    assert all(len(why) > 20 for why in known.values())


def test_an_entry_without_a_reason_or_with_an_unknown_class_is_refused(tmp_path):
    bad = tmp_path / "eq.yaml"
    bad.write_text("- {file: a.c, before: x, after: y}\n")
    with pytest.raises(SystemExit, match="entry 1 lacks why"):
        mutate.known_equivalents(bad)
    bad.write_text("- {file: a.c, before: x, after: y, why: 'looks fine: nothing seen in a short run'}\n")
    with pytest.raises(SystemExit, match="entry 1: why must start with one of fault-only"):
        mutate.known_equivalents(bad)


def _copy(tmp_path: Path) -> Path:
    """What judge() needs of a scratch copy: the software CANN's sources and harness.acl.setenv."""
    copy = tmp_path / "repo"
    for part in ("swcann", "platforms", "harness"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_a_mutant_the_cases_cannot_see_but_the_smoke_driver_can_is_killed_by_it(tmp_path):
    """A consumed executor dropped from the registry but never freed: every case still passes (no
    family is run here), only the C smoke driver's ASan leak check sees it."""
    copy = _copy(tmp_path)
    sites = [s for s in mutate.sites(copy) if s[0].endswith("common.c") and s[4] == "!="
             and "obj_del(e, SWC_K_EXECUTOR) == 0) e->destroy(e)" in (copy / s[0]).read_text().splitlines()[s[1]]]
    assert len(sites) == 1
    record = mutate.judge(copy, sites[0], families=[])
    assert record["result"] == "killed" and record["by"] == "smoke", record
    assert "obj_del(e, SWC_K_EXECUTOR) == 0)" in (copy / sites[0][0]).read_text()      # the mutation was undone
    assert mutate._smoke_passes(copy)                                                   # the unmutated tree passes it
