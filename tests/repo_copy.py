"""A copy of this checkout that a test may edit, as a contributor edits a fresh clone.

Used where a test adds something the README's way (a family, a dtype) and then runs the
project's own checks on the result: the copy holds exactly the files git knows of (tracked, and
untracked but not ignored), builds its own software CANN, and says which files the edit changed.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import swenv

REPO = Path(__file__).resolve().parent.parent
OUTPUTS = ("build/", "reports/", ".pytest_cache/")     # what a run writes into the copy


def files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and (REPO / p).is_file()]


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and not str(p.relative_to(root)).startswith(OUTPUTS)}


def make(root: Path, leave_out: tuple[str, ...] = ()) -> None:
    """Copy the checkout's files, but those under the `leave_out` folders, into `root`."""
    for rel in files():
        if rel.startswith(leave_out):
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)


class Copy(type(Path())):
    """A copy's root, with the digests of its files as copied (`before`)."""
    before: dict[str, str]


def fresh(root: Path, leave_out: tuple[str, ...] = ()) -> Copy:
    """The checkout copied into `root` (a pytest skip where there is no git checkout to list its files)."""
    if not git_available():
        pytest.skip("needs a git checkout to know which files the repository holds")
    copy = Copy(root)
    make(copy, leave_out)
    copy.before = digests(copy)         # what a test's edits are measured against
    return copy


def changed(root: Path, before: dict[str, str]) -> set[str]:
    """The files of the copy that differ from `before`; AssertionError if one was added or removed."""
    after = digests(root)
    assert set(after) == set(before), sorted(set(after) ^ set(before))
    return {p for p in before if after[p] != before[p]}


def pytest_in(root: Path, *args, jobs: str = "0", timeout: float = 1200, env: dict | None = None,
              ) -> subprocess.CompletedProcess:
    # a fresh shell: the copy builds and applies its own software CANN, from its own platform file
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", jobs, *args],
                          cwd=root, capture_output=True, text=True, timeout=timeout,
                          env=env or swenv.bare_env())


def git_available() -> bool:
    return (REPO / ".git").exists()
