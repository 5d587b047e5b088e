"""A sixth operator is three files: a case file, a golden module and a software-CANN op source.

In a temporary copy of the repository, the toy operator of tests/toy_op/ is added as exactly
those three files; it then runs on both backends (the software CANN on two families) and
through the harness's own tests that loop over registered operators, and no other file of
the copy changed."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import swenv

REPO = Path(__file__).resolve().parent.parent
TOY = Path(__file__).resolve().parent / "toy_op"
ADDED = {"cases/toy_sign_backward.yaml": TOY / "toy_sign_backward.yaml",
         "golden/toy_sign_backward.py": TOY / "toy_sign_backward.py",
         "swcann/src/ops/toy_sign_backward.c": TOY / "toy_sign_backward.c"}
OUTPUTS = ("build/", "reports/", ".pytest_cache/")      # what running anything writes


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and (REPO / p).is_file()]


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and not str(p.relative_to(root)).startswith(OUTPUTS)}


def _pytest(root: Path, *args) -> subprocess.CompletedProcess:
    # a fresh shell: the copy builds and applies its own software CANN, not the one of this test session
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args],
                          cwd=root, capture_output=True, text=True, timeout=600, env=swenv.bare_env())


class Copy(type(Path())):
    before: dict[str, str]        # what the copy held before the three files arrived


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    if not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to know which files the repository holds")
    root = Copy(tmp_path_factory.mktemp("repo"))
    for rel in _tracked():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    before = _digests(root)
    for rel, src in ADDED.items():
        shutil.copy2(src, root / rel)
    root.before = before
    return root


def test_toy_operator_runs_on_the_software_cann(copy):
    for soc in ("ascend910b", "ascend950"):
        proc = _pytest(copy, "cases/toy_sign_backward.yaml", "--backend", "aclnn", "--soc", soc)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "21 passed" in proc.stdout, proc.stdout[-1500:]     # 16 valid + 5 invalid cases


def test_toy_operator_runs_on_the_torch_backend(copy):
    proc = _pytest(copy, "cases/toy_sign_backward.yaml", "--backend", "torch")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "16 passed, 5 skipped" in proc.stdout, proc.stdout[-1500:]


def test_toy_operator_goes_through_the_harness_own_tests(copy):
    proc = _pytest(copy, "tests/test_golden.py", "tests/test_traceability.py", "-k", "toy or traceability")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "toy_sign_backward" in _pytest(copy, "tests/test_golden.py", "--collect-only", "-q").stdout


def test_nothing_else_was_touched(copy):
    after = _digests(copy)
    changed = {p for p in copy.before if after.get(p) != copy.before[p]}
    added = set(after) - set(copy.before)
    assert not changed, changed
    assert added == set(ADDED), added
