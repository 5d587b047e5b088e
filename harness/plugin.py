"""pytest plugin: collects cases/*.yaml as test items and runs them on a backend.

The pattern is pytest's own "YAML test files" example: a File collector per
case file and one Item per expanded case. Options select the backend, the
device, the SoC family under test, the tier and where reports go.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import backends, families
from .casefile import Case, load
from .errors import CaseFileError, HarnessConfigError
from .reporting import execute
from .runner import run_case

# gating, reruns, sharding, failure dumps and every report: harness/reporting/pytest_plugin.py
pytest_plugins = ["harness.reporting.pytest_plugin"]

_BACKEND = pytest.StashKey()


def pytest_addoption(parser):
    g = parser.getgroup("aclnn conformance")
    g.addoption("--backend", default="torch", choices=backends.NAMES,
                help="device under test: 'aclnn' (CANN through ctypes; software CANN when none is installed) "
                     "or 'torch' (PyTorch on --device). Default: torch")
    g.addoption("--device", default=None,
                help="torch backend: torch device (cpu, cuda:0, npu:0). aclnn backend: device id "
                     "(default: xdist worker index modulo the device count)")
    g.addoption("--soc", default=None,
                help=f"SoC family under test ({', '.join(families.FAMILIES)}). aclnn: must match the "
                     "detected SoC (default: detected). torch: selects that family's valid cases (default: any)")
    g.addoption("--report-dir", default=None, help="where results go (default: reports/<backend>-<family>)")
    g.addoption("--tier", default="default", choices=("default", "slow", "all"),
                help="which case tiers to run (default: default; slow tiers are opt-in)")
    g.addoption("--no-sw-fallback", action="store_true",
                help="aclnn: refuse to run on the software CANN (qualification runs on hardware)")
    g.addoption("--deterministic", action="store_true",
                help="aclnn: enable deterministic mode (aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1))")


class _Config:
    """Backend settings read from the command line."""

    def __init__(self, config):
        self.backend = config.getoption("backend")
        self.device = config.getoption("device")
        soc = config.getoption("soc")
        self.family = families.check_family(soc) if soc else None
        self.no_sw_fallback = config.getoption("no_sw_fallback")
        self.deterministic = config.getoption("deterministic")
        self.worker = getattr(config, "workerinput", {}).get("workerid")


def pytest_configure(config):
    for name, text in (("slow", "slow tier: opt in with --tier slow or --tier all"),
                       ("valid", "numeric conformance case"), ("invalid", "invalid-parameter (status code) case")):
        config.addinivalue_line("markers", f"{name}: {text}")
    for fam in families.FAMILIES:
        config.addinivalue_line("markers", f"{fam}: case applies to SoC family {fam}")
    try:
        _Config(config)
    except families.UnknownSocError as e:
        raise pytest.UsageError(str(e)) from None


def get_backend(config):
    """One backend per process (each xdist worker has its own), created on first use."""
    backend = config.stash.get(_BACKEND, None)
    if backend is None:
        try:
            backend = backends.create(config.getoption("backend"), _Config(config))
        except HarnessConfigError as e:
            raise pytest.UsageError(str(e)) from None
        config.stash[_BACKEND] = backend
    return backend


def _runs_cases(config) -> bool:
    """True when the command line points at case files (not at the harness's own tests)."""
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        if path.suffix in (".yaml", ".yml") or path.name == "cases" or (path / "cases").is_dir() and path.resolve() == Path(str(config.rootpath)).resolve():
            return True
    return False


def pytest_report_header(config):
    if config.getoption("collectonly") or not _runs_cases(config):
        return None
    return get_backend(config).info.banner()


def pytest_collect_file(parent, file_path):
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "cases":
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseFile(pytest.File):
    def collect(self):
        try:
            op, cases = load(self.path)
        except CaseFileError as e:
            # One failing item instead of a collection error: the other case
            # files still run, and the error is one line naming file/group/field.
            yield CaseFileErrorItem.from_parent(self, name="case-file-error", error=e)
            return
        self.config.addinivalue_line("markers", f"{op.marker}: cases of aclnn{op.name}")
        for case in cases:
            yield CaseItem.from_parent(self, name=case.name, case=case)


class CaseFileErrorItem(pytest.Item):
    def __init__(self, *, error: CaseFileError, **kw):
        super().__init__(**kw)
        self.error = error
        self.user_properties += [("case_id", f"{self.path.name}::case-file-error"), ("op", "(case file)")]

    def runtest(self):
        for k, v in get_backend(self.config).info.as_properties().items():
            self.user_properties.append((k, v))
        raise self.error

    def repr_failure(self, excinfo, style=None):
        return str(self.error)

    def reportinfo(self):
        return self.path, None, f"case file {self.path.name}"


class CaseFailure(Exception):
    pass


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, **kw):
        super().__init__(**kw)
        self.case = case
        self.user_properties += [("case_id", case.id), ("op", case.op.name)]
        self.add_marker(case.op.marker)
        self.add_marker(case.kind)
        for fam in case.families:
            self.add_marker(fam)
        if case.tier == "slow":
            self.add_marker("slow")

    def runtest(self):
        backend = get_backend(self.config)
        # ---- reporting: reruns, record, gate verdict, dump (logic in harness/reporting/execute.py)
        config, props = self.config, backend.info.as_properties()
        dumps = self.config.getoption("dump_failures")

        def attempt():
            capture = {} if dumps else None
            return run_case(self.case, backend, backend.info.family, capture=capture), capture

        outcome, attempts, capture = execute.run_with_reruns(attempt, config.getoption("reruns"))
        record = execute.record_for(self.case, outcome, nodeid=self.nodeid, props=props, attempts=attempts,
                                    root=Path(str(config.rootpath)), timings=outcome.timings)
        record = execute.gated_record(config, record)
        if dumps:
            record["dump"] = execute.dump_failure(record, capture, execute.report_dir(config, props) / "failures")
        self.record = record
        self.user_properties.append(("record", json.dumps(record, default=str)))
        # ---- end reporting
        for k, v in props.items():
            self.user_properties.append((k, v))
        status = record["status"]
        if status == "SKIP":
            pytest.skip(outcome.reason)
        if status == "EXPECTED_FAIL":
            pytest.xfail(record["reason"])
        if execute.is_gate_failure(record):
            raise CaseFailure(record["reason"] if status != "UNEXPECTED_PASS" else
                              f"UNEXPECTED_PASS: passes, but {record['waiver']['source']} lists it as failing "
                              f"({record['waiver']['reason']}): remove the stale entry")

    def repr_failure(self, excinfo, style=None):
        # the reason is the whole story; a traceback of the harness would only hide it
        if excinfo.errisinstance((CaseFailure, pytest.xfail.Exception)):
            repro = getattr(self, "record", {}).get("repro")
            return f"{self.case.id}: {excinfo.value}" + (f"\nrepro: {repro}" if repro else "")
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self.case.id


def pytest_collection_modifyitems(config, items):
    tier = config.getoption("tier")
    family = _Config(config).family
    if config.getoption("backend") == "aclnn" and not config.getoption("collectonly"):
        family = get_backend(config).info.family
    keep, drop = [], []
    for item in items:
        case = getattr(item, "case", None)
        if case is None:
            keep.append(item)
            continue
        tier_ok = tier == "all" or case.tier == tier
        family_ok = family is None or family in case.families
        (keep if tier_ok and family_ok else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

