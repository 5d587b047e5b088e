"""Policy 4: every documented implementation deviation has cases that expose it.

The deviations are data: `INFO.deviations` of each op's golden (spec sections C and G). An entry
either names the `dev_*` groups of the op's case file, which assert the documented semantics, or
says why nothing can expose it (undefined behaviour, policy 2; below every tolerance). The software
CANN reproduces the deviations under SWCANN_DEVIATIONS=1, on the families they occur on: every
`dev_*` case must pass without it and fail with it, since a deviation case that passes either way
guards nothing. No op is named here: a sixth operator's deviations are checked by its own data.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import golden
from harness.audit import traceability

pytestmark = pytest.mark.loops_over_ops

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class OpDeviations:
    op: str
    path: str                       # the op's case file
    deviations: tuple               # golden INFO.deviations
    groups: dict                    # group name -> the cases it expands to


@functools.lru_cache(maxsize=1)      # read at collection for every parametrized pair
def _ops() -> list[OpDeviations]:
    out = []
    for op, cases in traceability.load_all():
        groups: dict[str, list] = {}
        for c in cases:
            groups.setdefault(c.group, []).append(c)
        out.append(OpDeviations(op.name, op.path, golden.load(op.golden).INFO.deviations, groups))
    return out


def audit(ops: list[OpDeviations]) -> list[str]:
    """Why the deviation list and the case files do not hold together (empty: they do)."""
    problems = []
    for o in ops:
        names = [d.name for d in o.deviations]
        problems += [f"{o.op}: deviation {n!r} listed twice" for n in sorted({n for n in names if names.count(n) > 1})]
        claimed = set()
        for d in o.deviations:
            where = f"{o.op} {d.name} (spec {d.spec})"
            if bool(d.groups) == bool(d.no_case):
                problems.append(f"{where}: names neither dev_* groups nor why it has no case (or both)")
            covered = set()
            for g in d.groups:
                claimed.add(g)
                if not g.startswith("dev_"):
                    problems.append(f"{where}: group {g!r} is not a dev_* group")
                if g not in o.groups:
                    problems.append(f"{where}: group {g!r} is not in {Path(o.path).name}")
                    continue
                fams = set().union(*(c.families for c in o.groups[g]))
                if not fams <= set(d.families):
                    problems.append(f"{where}: group {g!r} runs on {sorted(fams - set(d.families))}, "
                                    "where the deviation does not occur (the deviating library would pass it)")
                covered |= fams
            if d.groups and set(d.families) - covered:
                problems.append(f"{where}: no case on {sorted(set(d.families) - covered)}, where it occurs")
        problems += [f"{o.op}: group {g!r} is tied to no listed deviation (golden INFO.deviations)"
                     for g in sorted(g for g in o.groups if g.startswith("dev_") and g not in claimed)]
    return problems


def test_every_listed_deviation_has_cases_and_every_dev_group_a_deviation():
    ops = _ops()
    assert sum(len(o.deviations) for o in ops) >= 10
    problems = audit(ops)
    assert not problems, "\n".join(problems)


def test_the_audit_catches_a_deviation_without_cases_and_a_stray_dev_group():
    ops = _ops()
    o = next(o for o in ops if any(d.groups for d in o.deviations))
    d = next(d for d in o.deviations if d.groups)
    # every case of the deviation's groups removed from the case file
    gone = dataclasses.replace(o, groups={g: c for g, c in o.groups.items() if g not in d.groups})
    problems = audit([gone])
    assert any(d.name in p and "is not in" in p for p in problems), problems
    # the deviation dropped from the list: its groups are tied to nothing
    unlisted = dataclasses.replace(o, deviations=tuple(x for x in o.deviations if x is not d))
    problems = audit([unlisted])
    assert any(f"group {d.groups[0]!r} is tied to no listed deviation" in p for p in problems), problems
    # a deviation named on a family none of its cases runs on
    wider = dataclasses.replace(d, families=d.families + ("ascend310b",))
    problems = audit([dataclasses.replace(o, deviations=(wider,) + tuple(x for x in o.deviations if x is not d))])
    assert any("no case on ['ascend310b']" in p for p in problems), problems


def _selection(family: str, op: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The case files and {case id: group} of the dev cases that run on `family` (of the op whose
    case file is cases/`op`.yaml, or of every op)."""
    files, cases = set(), {}
    for o in _ops():
        if op is not None and Path(o.path).stem != op:
            continue
        for d in o.deviations:
            for g in d.groups:
                for c in o.groups.get(g, []):
                    if family in c.families:
                        files.add(o.path)
                        cases[c.id] = g
    return sorted(files), cases


def _run(tmp_path, family: str, deviations: bool, op: str | None = None) -> dict[str, str]:
    files, cases = _selection(family, op)
    env = dict(os.environ, SWCANN_SOC=family)
    for var in ("ASCEND_HOME_PATH", "SWCANN_FAULTS", "SWCANN_DEVIATIONS"):
        env.pop(var, None)
    if deviations:
        env["SWCANN_DEVIATIONS"] = "1"
    report = tmp_path / f"{family}-{int(deviations)}"
    select = " or ".join(sorted(set(cases.values())))
    proc = subprocess.run([sys.executable, "-m", "pytest", *files, "--backend", "aclnn", "--soc", family,
                           "--tier", "all", "-q", "-n", "0", "-k", select, "--report-dir", str(report),
                           "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    results = report / "results.jsonl"
    assert results.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(x) for x in results.read_text().splitlines()]
    got = {r["case_id"]: r["raw_status"] for r in records if r["case_id"] in cases}
    assert set(got) == set(cases), f"dev cases that did not run: {sorted(set(cases) - set(got))}"
    return got


def _families() -> list[str]:
    return sorted({f for o in _ops() for d in o.deviations if d.groups for f in d.families})


def _family_ops() -> list[tuple[str, str]]:
    """(family, case-file stem) of every op with dev cases on the family: an op's own items, so
    that tests/test_toy_operator.py runs an added op's alone."""
    return sorted({(f, Path(o.path).stem) for f in _families() for o in _ops()
                   if _selection(f, Path(o.path).stem)[1]})


@pytest.mark.parametrize("family,op", _family_ops())
def test_deviation_cases_pass_on_documented_semantics_and_fail_on_the_deviation(tmp_path, family, op):
    documented = _run(tmp_path, family, deviations=False, op=op)
    wrong = sorted(c for c, o in documented.items() if o != "PASS")
    assert not wrong, f"dev cases failing on the documented semantics: {wrong}"
    deviating = _run(tmp_path, family, deviations=True, op=op)
    missed = sorted(c for c, o in deviating.items() if o != "FAIL")
    assert not missed, f"dev cases that do not expose their deviation on {family}: {missed}"


@pytest.mark.parametrize("family", _families())
def test_a_library_with_every_deviation_fails_only_the_dev_cases(tmp_path, family):
    """The other half of policy 4: a deviation is exposed by its dev_* groups and by nothing else.
    A regular case that fails on the deviating library would fail on real hardware too, a FAIL that
    only repeats a known finding under another name (the FP16 cube path's 1/9 constant once failed
    23 ordinary cases on 910B). Default tier, every op on `family`."""
    claimed = {(o.op, g) for o in _ops() for d in o.deviations for g in d.groups}
    env = dict(os.environ, SWCANN_SOC=family, SWCANN_DEVIATIONS="1")
    for var in ("ASCEND_HOME_PATH", "SWCANN_FAULTS"):
        env.pop(var, None)
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "--soc", family,
                           "-q", "-n", "0", "--report-dir", str(report), "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    results = report / "results.jsonl"
    assert results.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(x) for x in results.read_text().splitlines()]
    assert len(records) > 50
    wrong = sorted(f"{r['case_id']}: {r['reason'][:160]}" for r in records
                   if r["status"] not in ("PASS", "SKIP") and (r["op"], r["group"]) not in claimed)
    assert not wrong, f"{len(wrong)} regular cases fail on a library with the documented deviations:\n" + "\n".join(wrong[:30])
