"""Collection: case files (`cases/*.yaml`) and ATK lists (`*.json`) become test items.

The pattern is pytest's own "YAML test files" example: a File collector per case file and one Item
per expanded case. A case file that does not load is one failing item (`case-file-error`), so the
other files still run and record their results; under --collect-only it is a collection error.
An item runs its case through the run's lifecycle (lifecycle.py) and turns the record's status into
the pytest outcome pytest's own tally shows (status_to_pytest, the one mapping).
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from ..core.errors import CaseFileError
from ..core.paths import CASES_DIR
from ..core.status import Status
from ..core.text import printable
from ..model import Case
from ..operators import load_atk_file, load_case_file
from ..reporting.gate import is_gate_failure

_CASE_OWNERS = pytest.StashKey()     # case id -> the file that produced it first (this process's collection)
LIFECYCLE = pytest.StashKey()        # the run's Lifecycle (lifecycle.py), set at configure


def pytest_collect_file(parent, file_path):
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "cases":
        return CaseFile.from_parent(parent, path=file_path, **_outside_rootdir(parent.config, file_path))
    if file_path.suffix == ".json" and _is_atk(parent.config, file_path):
        return AtkFile.from_parent(parent, path=file_path, **_outside_rootdir(parent.config, file_path))
    return None


def runs_cases(config) -> bool:
    """True when the command line points at case files (not at the harness's own tests)."""
    root = Path(str(config.rootpath)).resolve()
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        if path.suffix in (".yaml", ".yml", ".json") or path.name in ("cases", "atk") or \
                (path / "cases").is_dir() and path.resolve() == root:
            return True
    return False


def add_atk_args(config) -> None:
    """--atk paths are collected like command-line paths; given alone, they replace testpaths.
    xdist workers rebuild their config from the original command line, so they do the same."""
    paths = [str(Path(p).resolve()) for p in config.getoption("atk")]
    if not paths:
        return
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise pytest.UsageError(f"--atk: no such file or directory: {', '.join(missing)}")
    from_testpaths = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    # a node id of a list (a repro line) selects its case: adding the whole list would run them all
    named = {str(Path(a.partition("::")[0]).resolve()) for a in config.args if "::" in a}
    paths = [p for p in paths if p not in named]
    config.args[:] = paths if from_testpaths else [*config.args, *paths]


def _outside_rootdir(config, file_path) -> dict:
    """A file outside the rootdir (an ATK list beside the checkout, a case file under /tmp) gets a
    node id that pytest leaves without its path ('::atk[3-...]'): records, journals and repro lines
    are keyed by node ids, so such a file's own is its absolute path."""
    try:
        file_path.relative_to(config.rootpath)
        return {}
    except ValueError:
        return {"nodeid": str(file_path)}


def _is_atk(config, file_path) -> bool:
    if file_path.parent.name == "atk":
        return True
    given = [Path(p).resolve() for p in config.getoption("atk")]
    return any(file_path == g or g in file_path.parents for g in given)


def _claim_case_ids(file: pytest.File, cases) -> None:
    """Case ids are the keys of every report, journal and baseline: two files producing the same
    id would leave one case's result in place of the other's. The second file is the broken one."""
    owners = file.config.stash.setdefault(_CASE_OWNERS, {})
    taken = [c for c in cases if owners.get(c.id, file.path) != file.path]
    if taken:
        first = taken[0]
        raise CaseFileError(file.path, f"case id {first.id!r} is already produced by {owners[first.id]}"
                            + (f" (and {len(taken) - 1} more of this file's ids)" if len(taken) > 1 else "")
                            + ": give the group another name", group=first.group, field="name")
    for c in cases:
        owners[c.id] = file.path


class CaseFile(pytest.File):
    def collect(self):
        try:
            op, cases = load_case_file(self.path)
            _claim_case_ids(self, cases)
        except CaseFileError as e:
            if self.config.getoption("collectonly"):
                raise self.CollectError(str(e)) from None
            yield CaseFileErrorItem.from_parent(self, name="case-file-error", error=e)
            return
        self.config.addinivalue_line("markers", f"{op.marker}: cases of aclnn{op.name}")
        for case in cases:
            yield CaseItem.from_parent(self, name=case.name, case=case)


class AtkFile(pytest.File):
    def collect(self):
        try:
            cases = load_atk_file(self.path, CASES_DIR)
            _claim_case_ids(self, cases)
        except CaseFileError as e:
            yield CaseFileErrorItem.from_parent(self, name="case-file-error", error=e)
            return
        for marker in {c.op.marker for c in cases}:
            self.config.addinivalue_line("markers", f"{marker}: cases of the operator")
        for case in cases:
            yield CaseItem.from_parent(self, name=case.name, case=case)


class CaseFailure(Exception):
    pass


def status_to_pytest(record: dict) -> None:
    """The pytest outcome of a case's record: skip, xfail, or a failure the gate counts. A pass,
    an UNEXPECTED_PASS of a case-file deviation (shown as XPASS: pytest_runtest_makereport) and a
    FLAKE return normally."""
    status = Status(record["status"])
    if status is Status.SKIP:
        pytest.skip(record["reason"])
    if status is Status.EXPECTED_FAIL:
        pytest.xfail(record["reason"])
    if is_gate_failure(record):
        raise CaseFailure(record["reason"] if status is not Status.UNEXPECTED_PASS else
                          f"UNEXPECTED_PASS: passes, but {record['waiver']['source']} lists it as failing "
                          f"({record['waiver']['reason']}): remove the stale entry")


class CaseFileErrorItem(pytest.Item):
    def __init__(self, *, error: CaseFileError, **kw):
        super().__init__(**kw)
        self.error = error

    @property
    def case_id(self) -> str:
        return f"{self.path.name}::case-file-error"

    def runtest(self):
        self.record = self.config.stash[LIFECYCLE].record_case_file_error(self)
        raise self.error

    def repr_failure(self, excinfo, style=None):
        return printable(str(self.error))

    def reportinfo(self):
        return self.path, None, f"case file {self.path.name}"


@functools.lru_cache(maxsize=None)
def _mark(name: str):
    """The marker, made once: looking a marker up by name (pytest.mark's __getattr__) for every item
    dominated collecting a large selection (benchmarks/NOTES.md)."""
    return getattr(pytest.mark, name)


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, **kw):
        super().__init__(**kw)
        self.case = case
        for name in (case.op.marker, case.kind, *case.families, *(("slow",) if case.tier == "slow" else ())):
            self.add_marker(_mark(str(name)))

    def runtest(self):
        self.record = self.config.stash[LIFECYCLE].run_item(self)
        if self.record is not None:
            status_to_pytest(self.record)

    def repr_failure(self, excinfo, style=None):
        # the reason is the whole story; a traceback of the harness would only hide it
        if excinfo.errisinstance((CaseFailure, pytest.xfail.Exception)):
            repro = (getattr(self, "record", None) or {}).get("repro")
            # the library's message may hold control characters: shown escaped, never interpreted
            return printable(f"{self.case.id}: {excinfo.value}") + (f"\nrepro: {printable(repro)}" if repro else "")
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self.case.id
