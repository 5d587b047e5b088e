"""The layering is enforced by a maintained tool (import-linter, contracts in pyproject.toml),
and breaking it on purpose is caught."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter not installed (./run tests installs it)")


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("platforms", "harness", "golden", "swcann"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root)
    return root


def test_contracts_hold():
    proc = _lint(REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize("module,line,contract", [
    # the case model reaching up into the comparators (what casefile.py used to do)
    ("harness/model/expand.py", "from ..judge import compare", "harness layers only look down"),
    # the inputs layer importing a backend
    ("harness/inputs/preparation.py", "from ..backends import base", "harness layers only look down"),
    # a golden importing the harness
    ("golden/_common.py", "import harness.core.dtypes", "reference math knows nothing of the harness"),
    # the independent loop reference borrowing the golden's helpers
    ("golden/_reference.py", "from . import _common", "the loop references stay independent"),
    # a phase-1 model computing with torch (models are plain Python over descriptors)
    ("golden/_models/_checks.py", "import torch", "the phase-1 models are pure Python"),
])
def test_an_upward_import_is_caught(tmp_path, module, line, contract):
    root = _copy(tmp_path)
    path = root / module
    path.write_text(path.read_text() + f"\n{line}  # noqa: planted by the test\n")
    proc = _lint(root)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert f"{contract}" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout[-2000:]


def _module_cycles(root: Path) -> list[list[str]]:
    """Every import cycle between modules of platforms, harness, golden and swcann (strongly connected
    components of more than one module), imports inside functions included."""
    import grimp
    graph = grimp.build_graph("platforms", "harness", "golden", "swcann", cache_dir=None)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & set(modules)) for m in modules}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):                            # Tarjan's algorithm, iteratively deep enough for this graph
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for m in modules:
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_anywhere(monkeypatch):
    """Not only between siblings (the acyclic_siblings contract): no module of the harness, the
    goldens or the software CANN's tools reaches itself through any chain of imports."""
    monkeypatch.syspath_prepend(str(REPO))
    cycles = _module_cycles(REPO)
    assert not cycles, cycles


def test_a_planted_cycle_is_caught(tmp_path, monkeypatch):
    root = _copy(tmp_path)
    path = root / "harness" / "core" / "status.py"      # records imports status: now each reaches the other
    path.write_text(path.read_text() + "\n\ndef _late():\n    from harness.reporting import records  # noqa: planted\n")
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m.split(".")[0] in ("platforms", "harness", "golden", "swcann")]:
        monkeypatch.delitem(sys.modules, name)
    cycles = _module_cycles(root)
    assert any("harness.core.status" in c and "harness.reporting.records" in c for c in cycles), cycles


# Where a run's Target turns into its wire form of plain strings or back: each a process or file
# boundary. Everything between reads the typed fields; a module that starts passing the properties
# around as a dict again shows up here (it used to be 47 dict reads in the reporting layer alone).
TARGET_WIRE_BOUNDARIES = {
    "harness/backends/base.py": "a backend says what it is (BackendInfo.target)",
    "harness/plugin/runinfo.py": "the controller hands the run to its xdist workers",
    "harness/plugin/output.py": "pytest's --junitxml global properties",
    "harness/reporting/records.py": "a record's backend identity in results.jsonl",
    "harness/reporting/identity.py": "summary.json's identity (backend_properties)",
    "harness/reporting/recorder.py": "summary.json's properties",
    "harness/reporting/__main__.py": "the offline gate reads a finished run's identity",
    "harness/audit/faultscore.py": "the fault score reads finished records",
    "harness/target/__init__.py": "the type itself (UNKNOWN)",
}


def test_the_target_changes_form_only_at_its_boundaries():
    import re
    wire = re.compile(r"Target\.from_wire\(|\btarget\.to_wire\(")
    found = {str(p.relative_to(REPO)) for p in (REPO / "harness").rglob("*.py") if wire.search(p.read_text())}
    assert found == set(TARGET_WIRE_BOUNDARIES), (
        f"new: {sorted(found - set(TARGET_WIRE_BOUNDARIES))}, gone: {sorted(set(TARGET_WIRE_BOUNDARIES) - found)}")


def test_no_module_is_over_400_lines():
    """A module that grows past this holds more than one thing (issue 31's bar): split it by what it holds."""
    roots = [REPO / d for d in ("harness", "golden", "platforms", "swcann")] + [REPO / "conftest.py"]
    files = [f for r in roots for f in ([r] if r.is_file() else r.rglob("*.py")) if "__pycache__" not in f.parts]
    long = {str(f.relative_to(REPO)): n for f in files if (n := len(f.read_text().splitlines())) > 400}
    assert files and not long, long
