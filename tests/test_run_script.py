"""./run: arguments that name tests or cases select exactly those, as its usage line promises."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _collect(*args: str) -> list[str]:
    """Node ids `./run tests ARGS --collect-only` would run (the venv this pytest runs in)."""
    env = dict(os.environ, VENV=str(Path(sys.executable).parent.parent), JOBS="0")
    proc = subprocess.run([str(REPO / "run"), "tests", *args, "--collect-only", "-q"], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [ln for ln in proc.stdout.splitlines() if "::" in ln]


def test_run_tests_with_a_test_file_runs_only_that_file():
    # before: tests/ was always added, so naming one file ran the whole directory (minutes)
    ids = _collect("tests/test_constraints.py")
    assert ids and {i.split("::")[0] for i in ids} == {"tests/test_constraints.py"}


def test_run_tests_with_only_options_runs_every_test_file():
    files = {i.split("::")[0] for i in _collect("-k", "every_dependency_is_pinned or only_that_file")}
    assert files == {"tests/test_constraints.py", "tests/test_run_script.py"}


def test_run_tests_for_one_op_runs_its_gates_only():
    """`./run tests --op NAME`: the tests that loop over operators, their items for that op (and a
    name that is no case file is one ERROR line, exit 4)."""
    ids = _collect("--op", "max_unpool3d_backward")
    others = {p.stem for p in (REPO / "cases").glob("*.yaml")} - {"max_unpool3d_backward"}
    assert ids and not [i for i in ids if any(o in i for o in others)], ids[:5]
    files = {i.split("::")[0] for i in ids}
    assert {"tests/test_golden.py", "tests/test_coverage.py", "tests/test_traceability.py"} <= files, files
    proc = subprocess.run([str(REPO / "run"), "tests", "--op", "no_such_op"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 4 and proc.stderr.strip().splitlines()[-1].startswith("ERROR:")
