"""An operator is three files: a case file, a golden module and a software-CANN op source.

Each directory of tests/added_ops/ holds one operator as exactly those three files (`<op>.yaml`,
`<op>.py`, `<op>.c`): a toy elementwise op, and a realistic one (an adaptive average pool with its own
kernel) that a newcomer added from the README alone. In one temporary copy of the repository each is
added as its three files; then each op's cases run on both backends (the software CANN on two
families), every test of the project that loops over operators (`loops_over_ops` marker) runs on the
copy and passes, and no other file of the copy changed."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import repo_copy

REPO = Path(__file__).resolve().parent.parent
ADDED = Path(__file__).resolve().parent / "added_ops"
OPS = sorted(p.name for p in ADDED.iterdir() if p.is_dir() and (p / f"{p.name}.yaml").is_file()) \
    if ADDED.is_dir() else []                  # a copy made by this test holds none
WHERE = {".yaml": "cases", ".py": "golden", ".c": "swcann/src/ops"}


def _pytest(root: Path, *args, jobs: str = "0") -> subprocess.CompletedProcess:
    return repo_copy.pytest_in(root, *args, jobs=jobs)


def _files(name: str) -> dict[str, Path]:
    """copy-relative path -> source of the op's three files (and nothing else of its directory)."""
    found = {f"{WHERE[p.suffix]}/{p.name}": p for p in sorted((ADDED / name).iterdir()) if p.suffix in WHERE}
    assert sorted(Path(k).suffix for k in found) == [".c", ".py", ".yaml"], f"{name}: {sorted(found)}"
    return found


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    # the ops under test arrive as their three files only; `before` is the copy without them
    root = repo_copy.fresh(tmp_path_factory.mktemp("repo"), leave_out=("tests/added_ops/",))
    for op in OPS:
        for rel, src in _files(op).items():
            shutil.copy2(src, root / rel)
    return root


def _statuses(report: Path) -> dict[str, int]:
    """status -> number of the run's records."""
    out: dict[str, int] = {}
    for line in (report / "results.jsonl").read_text().splitlines():
        status = json.loads(line)["status"]
        out[status] = out.get(status, 0) + 1
    return out


@pytest.mark.parametrize("op", OPS)
def test_its_cases_pass_on_the_software_cann(copy, op):
    doc = yaml.safe_load((copy / "cases" / f"{op}.yaml").read_text())
    for soc in [f for f in ("ascend910b", "ascend950") if f in doc["families"]] or doc["families"][:1]:
        report = copy / "reports" / f"{op}-sw-{soc}"
        proc = _pytest(copy, f"cases/{op}.yaml", "--backend", "aclnn", "--soc", soc, f"--report-dir={report}")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        statuses = _statuses(report)
        assert set(statuses) == {"PASS"} and statuses["PASS"] >= 10, statuses       # every case, valid and invalid


@pytest.mark.parametrize("op", OPS)
def test_its_cases_pass_on_the_torch_backend(copy, op):
    report = copy / "reports" / f"{op}-torch"
    proc = _pytest(copy, f"cases/{op}.yaml", "--backend", "torch", f"--report-dir={report}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    # invalid cases are skips there (torch has no phase-1 statuses); a group's `deviations:` of the
    # torch backend makes its cases EXPECTED_FAIL (or UNEXPECTED_PASS where torch does not deviate)
    statuses = _statuses(report)
    assert set(statuses) <= {"PASS", "SKIP", "EXPECTED_FAIL", "UNEXPECTED_PASS"} and statuses.get("PASS", 0) >= 10, \
        statuses


def test_every_test_that_loops_over_ops_passes_with_them(copy):
    """The project's own gates take the new ops in (their goldens against their loop references, the
    software CANN's exports, coverage, traceability, per-axis and size limits, deviations, their spec
    models if they have one, the scaffold): run on the copy, the original ops' own parametrized items
    left out by their exact node ids (they pass in this repository already; a substring filter would
    also drop an added op whose name contains an original's), every test across all ops kept."""
    others = {p.stem for p in (REPO / "cases").glob("*.yaml")}
    listed = _pytest(copy, "tests/", "-m", "loops_over_ops", "--collect-only", "-q")
    ids = [line.strip() for line in listed.stdout.splitlines() if "::" in line]
    assert all(any(op in _params(i) for i in ids) for op in OPS), ids[-20:]     # their own items are there
    theirs = [i for i in ids if _params(i) & others]
    deselect = [arg for i in theirs for arg in ("--deselect", i)]
    proc = _pytest(copy, "tests/", "-m", "loops_over_ops", *deselect, "-q", jobs="2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    counts = dict((word, int(n)) for n, word in re.findall(r"(\d+) (passed|skipped|failed)", proc.stdout))
    assert counts.get("passed", 0) + counts.get("skipped", 0) == len(ids) - len(theirs), (counts, len(ids),
                                                                                         len(theirs))


def _params(node_id: str) -> set[str]:
    """The parameters of a parametrized node id (its [a-b-c] part), as a set."""
    return set(node_id.partition("[")[2].rstrip("]").split("-")) if "[" in node_id else set()


def test_nothing_else_was_touched(copy):
    after = repo_copy.digests(copy)
    changed = {p for p in copy.before if after.get(p) != copy.before[p]}
    added = set(after) - set(copy.before)
    assert not changed, changed
    assert added == {rel for op in OPS for rel in _files(op)}, added
