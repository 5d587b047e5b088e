"""pytest plugin: collects cases/*.yaml as test items and runs them on a backend.

The pattern is pytest's own "YAML test files" example: a File collector per
case file and one Item per expanded case. Options select the backend, the
device, the SoC family under test, the tier and where reports go.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from . import backends, families, preflight
from .casefile import Case, load
from .errors import CaseFileError, HarnessConfigError
from .backends.base import banner
from .report import Recorder
from .runner import run_case

_BACKEND = pytest.StashKey()
_RECORDER = pytest.StashKey()


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
                help="aclnn: enable deterministic mode (ACL_OPT_DETERMINISTIC=1 at process and context level: "
                     "aclrtSetSysParamOpt and aclrtCtxSetSysParamOpt)")
    g.addoption("--no-reexec", action="store_true",
                help="aclnn: when the CANN's set_env.sh is not applied, stop with the file to source "
                     "instead of re-executing with it applied")


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
    _STATE["config"] = config
    try:
        _Config(config)
    except families.UnknownSocError as e:
        raise pytest.UsageError(str(e)) from None
    preflight.check_environment(config, _runs_cases(config))   # may re-exec with set_env.sh applied


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
        outcome = run_case(self.case, backend, backend.info.family)
        self.user_properties.append(("outcome", json.dumps(outcome.to_dict(), default=str)))
        for k, v in backend.info.as_properties().items():
            self.user_properties.append((k, v))
        if outcome.outcome == "skipped":
            pytest.skip(outcome.reason)
        if outcome.outcome == "xfailed":
            pytest.xfail(outcome.reason)
        if outcome.outcome == "failed":
            raise CaseFailure(outcome.reason)

    def repr_failure(self, excinfo, style=None):
        # the reason is the whole story; a traceback of the harness would only hide it
        if excinfo.errisinstance((CaseFailure, pytest.xfail.Exception)):
            return f"{self.case.id}: {excinfo.value}"
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


# ------------------------------------------------------------------ reporting

def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def _recorder(config, props: dict) -> Recorder:
    """Created on the first case result, from the backend facts that came with it
    (under xdist the controller has no backend of its own)."""
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None:
        # provenance comes from the backend of this run (loaded here if the controller has none yet; same
        # options, same backend as the workers'), never from what a case happened to record: a case that
        # errored before judging records nothing
        properties = get_backend(config).info.as_properties()
        directory = config.getoption("report_dir") or Path(str(config.rootpath)) / "reports" / \
            f"{properties.get('backend') or 'unknown'}-{properties.get('family') or 'any'}"
        recorder = config.stash[_RECORDER] = Recorder(Path(directory), banner(properties), properties)
        _add_junit_properties(config, properties)
    return recorder


def _add_junit_properties(config, properties: dict) -> None:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - junitxml internals moved
        return
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        for k, v in properties.items():
            xml.add_global_property(k, v)


def pytest_runtest_logreport(report):
    """Record each case once: its judged outcome, or the error that stopped it."""
    props = dict(report.user_properties)
    if "case_id" not in props and report.failed and ".yaml::" in report.nodeid:
        # a worker that crashed (segfault, abort in the library) sends a bare report: keep it
        props = _crashed_case(report.nodeid)
    if "case_id" not in props or not (report.when == "call" or report.failed):
        return
    if not _is_controller(_STATE["config"]):   # xdist workers forward reports; the controller records
        return
    recorder = _recorder(_STATE["config"], props)
    if "outcome" in props:
        record = json.loads(props["outcome"])
        if report.failed and record.get("outcome") == "passed":   # raised after judging
            record["outcome"], record["reason"] = "error", _one_line(report)
    else:                                                        # raised before judging
        record = {"case_id": props["case_id"], "op": props["op"], "outcome": "error", "reason": _one_line(report),
                  "backend": recorder.properties}
    recorder.add(record)


def _crashed_case(nodeid: str) -> dict:
    file_part, _, name = nodeid.partition("::")
    try:
        op = yaml.safe_load((Path(str(_STATE["config"].rootpath)) / file_part).read_text())["op"]
    except Exception:          # the record matters more than its op name
        op = Path(file_part).stem
    return {"case_id": f"{op}.{name}", "op": op}


def _one_line(report) -> str:
    text = str(report.longrepr or "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "error"


_STATE: dict = {}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None:
        return
    directory = recorder.finish()
    tr = terminalreporter
    tr.section("aclnn conformance summary")
    tr.write_line(recorder.banner)
    for line in recorder.table():
        tr.write_line(line)
    if recorder.notes:
        tr.write_line(f"{len(recorder.notes)} case(s) carry a note: a documented claim the code does not follow, or a deviation they target (summary.json)")
    tr.write_line(f"reports: {directory}")
