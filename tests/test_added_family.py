"""A SoC family is one platform entry plus the per-op rules the op files state.

Each directory of tests/added_families/ holds one made-up family: `platform.yaml` (its entry for
platforms/platform.yaml's `families:` list) and `rules.yaml` (the per-op rule its op files state:
`like: <family>`, the family runs wherever that one runs and expects what it expects). In a copy
of the repository the entry is appended and the rule written into every cases/<op>.yaml, and then:
its cases run on the software CANN built from the copy (which now simulates it) and all pass, as
many as its twin's; every test of the project that reads the platform's set of families (found by
reading the tests, not by a marker someone must remember) passes on the copy; and no other file of
the copy changed.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import repo_copy, set_readers

REPO = Path(__file__).resolve().parent.parent
ADDED = Path(__file__).resolve().parent / "added_families"
FAMILIES = sorted(p.name for p in ADDED.iterdir() if (p / "platform.yaml").is_file()) if ADDED.is_dir() else []


# ------------------------------------------------------------------ which tests read the set of families

def family_dependent_tests(path: Path) -> list[str]:
    """The test functions of a test module that read the platform's set of families: directly, through
    a module-level name or helper computed from it, or through a fixture defined in the module."""
    return set_readers.FAMILIES.readers(path, REPO)


def _all_family_dependent_tests() -> list[str]:
    return [t for p in sorted((REPO / "tests").glob("test_*.py")) if p.name != Path(__file__).name
            for t in family_dependent_tests(p)]


def test_the_finder_finds_the_family_dependent_tests():
    found = _all_family_dependent_tests()
    assert "tests/test_traceability.py::test_every_testable_check_is_covered_on_every_family" in found
    assert "tests/test_platform.py::test_the_generated_header_carries_every_family_and_dtype" in found
    # through a module-level list built on families.FAMILIES and the helpers that draw from it
    assert any(t.startswith("tests/test_phase1_models.py::") for t in found), found
    # a sweep's own choice of families is not the platform's set
    assert not any(t.startswith(("tests/test_nightly_sweep.py", "tests/test_slurm_sweep.py")) for t in found)


def test_the_finder_finds_a_planted_one(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    path = tmp_path / "test_x.py"
    path.write_text("from harness.core import families\nALL = sorted(families.FAMILIES)\n\n"
                    "def _pick():\n    return ALL[0]\n\ndef test_uses_it():\n    assert _pick()\n\n"
                    "def test_does_not():\n    assert True\n")
    assert family_dependent_tests(path) == ["test_x.py::test_uses_it"]


# ------------------------------------------------------------------ the copy

def add_entry(platform_text: str, entry_text: str) -> str:
    """platform.yaml with the entry appended to its `families:` list, as a contributor types it: after
    the last family, before the comments that open the next key."""
    lines = platform_text.splitlines()
    end = lines.index("other_families:")
    while end and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    entry = [line for line in entry_text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    block = [("  - " if i == 0 else "    ") + line for i, line in enumerate(entry)]
    text = "\n".join(lines[:end] + block + lines[end:]) + "\n"
    assert yaml.safe_load(entry_text)["name"] in {f["name"] for f in yaml.safe_load(text)["families"]}
    return text


def state_rule(case_text: str, family: str, like: str) -> str:
    """A case file stating `family` wherever it states `like`: in family lists and status maps."""
    text = re.sub(rf"\b{re.escape(like)}: ([^,}}\n]+)", rf"{like}: \1, {family}: \1", case_text)
    return re.sub(rf"(?<![.\w]){re.escape(like)}(?=\s*[,\]])", f"{like}, {family}", text)


@pytest.fixture(scope="module", params=FAMILIES)
def copy(request, tmp_path_factory) -> repo_copy.Copy:
    family = request.param
    root = repo_copy.fresh(tmp_path_factory.mktemp(f"repo-{family}"))
    platform = root / "platforms" / "platform.yaml"
    platform.write_text(add_entry(platform.read_text(), (ADDED / family / "platform.yaml").read_text()))
    like = yaml.safe_load((ADDED / family / "rules.yaml").read_text())["like"]
    for case_file in sorted((root / "cases").glob("*.yaml")):
        case_file.write_text(state_rule(case_file.read_text(), family, like))
    root.family, root.like = family, like
    return root


def _pytest(root: Path, *args, jobs: str = "0", timeout: float = 1200) -> subprocess.CompletedProcess:
    return repo_copy.pytest_in(root, *args, jobs=jobs, timeout=timeout)


def test_state_rule_names_the_family_beside_its_twin():
    text = ("families: [ascend910b, ascend950]\nstatus: {ascend950: 0, others: 161002}\n"
            "- name: atk_case_bf16.ascend950\nfamilies: &all [ascend950, ascend910]\n")
    assert state_rule(text, "ascend960", "ascend950") == (
        "families: [ascend910b, ascend950, ascend960]\nstatus: {ascend950: 0, ascend960: 0, others: 161002}\n"
        "- name: atk_case_bf16.ascend950\nfamilies: &all [ascend950, ascend960, ascend910]\n")


def test_its_cases_run_and_pass_like_its_twins(copy):
    listed = _pytest(copy, "cases/", "--backend", "aclnn", "--soc", copy.like, "--collect-only", "-q")
    twins = [line for line in listed.stdout.splitlines() if "::" in line]
    report = copy / "reports" / f"sw-{copy.family}"
    proc = _pytest(copy, "cases/", "--backend", "aclnn", "--soc", copy.family, f"--report-dir={report}", "-q",
                   jobs="auto")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (report / "results.jsonl").read_text().splitlines()]
    assert len(records) == len(twins) > 1000, (len(records), len(twins))
    assert {r["status"] for r in records} == {"PASS"}
    entry = yaml.safe_load((ADDED / copy.family / "platform.yaml").read_text())
    assert {(r["family"], r["soc_name"]) for r in records} == {(copy.family, entry["default_soc"])}


def test_every_test_that_reads_the_families_passes_with_it(copy):
    tests = _all_family_dependent_tests()
    assert len(tests) >= 10, tests
    proc = _pytest(copy, *tests, "-q", jobs="2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"\b\d+ passed", proc.stdout) and " failed" not in proc.stdout, proc.stdout[-2000:]


def test_nothing_else_was_touched(copy):
    changed = repo_copy.changed(copy, copy.before)
    assert changed == {"platforms/platform.yaml"} | {f"cases/{p.name}" for p in (copy / "cases").glob("*.yaml")}, \
        changed
