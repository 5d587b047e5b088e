"""constraints.txt pins every package the project installs, each exactly once."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")     # Python 3.11+

REPO = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_dependency_is_pinned_exactly():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    declared |= {_name(r) for extra in project.get("optional-dependencies", {}).values() for r in extra}
    lines = [ln.strip() for ln in (REPO / "constraints.txt").read_text().splitlines()]
    pins = [ln for ln in lines if ln and not ln.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+]*", p) for p in pins), pins
    names = [_name(p) for p in pins]
    assert len(names) == len(set(names)), "a package pinned twice"
    assert declared <= set(names), sorted(declared - set(names))
