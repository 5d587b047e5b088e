"""pytest glue: collects cases/*.yaml as test items and runs them on a backend.

The pattern is pytest's own "YAML test files" example: a File collector per
case file and one Item per expanded case. The command line is read once into
RunSettings (in the stash); a CaseSession object holds the per-process state
(backend, recorder) and implements the hooks that need it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import backends, families, preflight, provenance
from .errors import CaseFileError, HarnessConfigError
from .judge import load_case_file
from .judge.cache import GoldenCache
from .judge.runner import run_case
from .model import Case
from .reporting.gate import is_gate_failure
from .reporting.run import ReportSettings, RunReporting, add_options as add_report_options

_SESSION = pytest.StashKey()


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
    g.addoption("--golden-cache", default=None, metavar="DIR",
                help="keep every case's inputs and golden in DIR (keyed by the case, the golden's source and the "
                     "torch/numpy versions; damaged entries are recomputed) and reuse them on later runs")
    g.addoption("--prepare-only", action="store_true",
                help="fill --golden-cache without running anything on a device (then run on the device host)")
    g.addoption("--deterministic", action="store_true",
                help="aclnn: enable deterministic mode (ACL_OPT_DETERMINISTIC=1 at process and context level: "
                     "aclrtSetSysParamOpt and aclrtCtxSetSysParamOpt)")
    g.addoption("--no-reexec", action="store_true",
                help="aclnn: when the CANN's set_env.sh is not applied, stop with the file to source "
                     "instead of re-executing with it applied")
    add_report_options(parser.getgroup("aclnn conformance: gating, reruns, shards, reports"))


@dataclass(frozen=True)
class RunSettings:
    """The command line, read once. Backends take their settings from here."""
    backend: str
    device: str | None
    family: str | None        # --soc
    no_sw_fallback: bool
    deterministic: bool
    tier: str
    report_dir: str | None
    worker: str | None        # xdist worker id; None in the controller or without xdist
    golden_cache: str | None
    prepare_only: bool

    @classmethod
    def from_config(cls, config) -> "RunSettings":
        if config.getoption("prepare_only") and not config.getoption("golden_cache"):
            raise pytest.UsageError("--prepare-only needs --golden-cache DIR (where the prepared data goes)")
        soc = config.getoption("soc")
        try:
            family = families.check_family(soc) if soc else None
        except families.UnknownSocError as e:
            raise pytest.UsageError(str(e)) from None
        return cls(config.getoption("backend"), config.getoption("device"), family,
                   config.getoption("no_sw_fallback"), config.getoption("deterministic"),
                   config.getoption("tier"), config.getoption("report_dir"),
                   getattr(config, "workerinput", {}).get("workerid"),
                   config.getoption("golden_cache"), config.getoption("prepare_only"))


def pytest_configure(config):
    for name, text in (("slow", "slow tier: opt in with --tier slow or --tier all"),
                       ("valid", "numeric conformance case"), ("invalid", "invalid-parameter (status code) case")):
        config.addinivalue_line("markers", f"{name}: {text}")
    for fam in families.FAMILIES:
        config.addinivalue_line("markers", f"{fam}: case applies to SoC family {fam}")
    session = CaseSession(config, RunSettings.from_config(config))
    config.stash[_SESSION] = session
    config.pluginmanager.register(session, "aclnn-case-session")
    if not session.settings.prepare_only:
        preflight.check_environment(config, _runs_cases(config))   # may re-exec with set_env.sh applied


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """pytest's own tally shows a known deviation that passed as XPASS, not as a plain pass."""
    report = yield
    record = getattr(item, "record", None)
    if call.when == "call" and report.passed and record and record["status"] == "UNEXPECTED_PASS":
        report.wasxfail = record["reason"]
    return report


def pytest_collect_file(parent, file_path):
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "cases":
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseSession:
    """Per-process state: the backend (opened on first use, never in the xdist controller)
    and the recorder (only in the controller, or the one process without xdist)."""

    def __init__(self, config, settings: RunSettings):
        self.config, self.settings = config, settings
        self._backend = None
        self.cache = GoldenCache(settings.golden_cache) if settings.golden_cache else None
        self.is_controller = not hasattr(config, "workerinput")
        try:
            report_settings = ReportSettings.from_options(config.getoption)
        except HarnessConfigError as e:
            raise pytest.UsageError(str(e)) from None
        # statuses, gating, reruns, shards, dumps and every report: harness/reporting/
        self.reporting = RunReporting(
            report_settings, root=Path(str(config.rootpath)), argv=["pytest", *config.invocation_params.args],
            requested={"backend": settings.backend, "family": settings.family}, worker=settings.worker,
            extra={"shard": config.getoption("shard"), "reruns": report_settings.reruns,
                   "gate": report_settings.gate, "tier": settings.tier})

    def backend(self):
        if self._backend is None:
            try:
                self._backend = backends.create(self.settings.backend, self.settings)
            except HarnessConfigError as e:
                raise pytest.UsageError(str(e)) from None
        return self._backend

    # ------------------------------------------------------------ hooks

    def pytest_report_header(self, config):
        if config.getoption("collectonly") or not _runs_cases(config):
            return None
        return backends.preview(self.settings.backend, self.settings)

    @pytest.hookimpl(trylast=True)     # after -k/-m: the shard splits what is left
    def pytest_collection_modifyitems(self, config, items):
        family = self.settings.family
        if self.settings.backend == "aclnn" and not config.getoption("collectonly") \
                and not self.settings.prepare_only and any(hasattr(i, "case") for i in items):
            family = self.backend().info.family       # the library's family decides what applies
        keep, drop = [], []
        for item in items:
            case = getattr(item, "case", None)
            if case is None or (self.settings.tier in ("all", case.tier)
                                and (family is None or family in case.families)):
                keep.append(item)
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        self._select_for_reporting(config, items)

    def _select_for_reporting(self, config, items):
        """The shard, and the manifest of what this run was asked to run."""
        cases = [i for i in items if hasattr(i, "case")]
        if not cases or config.getoption("collectonly") and not self.reporting.settings.shard:
            return
        # no backend to ask while only collecting or only preparing: shard, but write no manifest
        props = None if config.getoption("collectonly") or self.settings.prepare_only else self._props()
        try:
            keep = self.reporting.select([(i.case, i.nodeid) for i in cases], props)
        except HarnessConfigError as e:
            raise pytest.UsageError(str(e)) from None
        drop = {id(i) for i, k in zip(cases, keep) if not k}
        if drop:
            config.hook.pytest_deselected(items=[i for i in items if id(i) in drop])
            items[:] = [i for i in items if id(i) not in drop]

    def _props(self) -> dict:
        return self.backend().info.as_properties()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if hasattr(item, "case") and not self.settings.prepare_only:
            provenance.attach(report, self.backend)     # also when the case errored before judging

    def pytest_runtest_logreport(self, report):
        """Record each case once (in the controller): its record, or what stopped it."""
        if not self.is_controller or self.settings.prepare_only:   # workers forward; nothing judged
            return
        first = self.reporting.recorder is None
        self.reporting.record_report(dict(report.user_properties), report.nodeid, report.when, report.failed,
                                     _one_line(report))
        if first and self.reporting.recorder is not None:
            _add_junit_properties(self.config, self.reporting.recorder.properties)

    def pytest_sessionfinish(self, session, exitstatus):
        if self.is_controller:
            session.exitstatus = self.reporting.finish(session.exitstatus)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if self.cache is not None and self.cache.hits + self.cache.misses:
            c = self.cache       # this process's use (under xdist each worker has its own)
            terminalreporter.write_line(f"golden cache {c.dir}: {c.hits} hits, {c.misses} computed, "
                                        f"{len(c.rejected)} damaged entries recomputed")
            for line in c.rejected[:20]:
                terminalreporter.write_line(f"  {line}")
        lines = self.reporting.summary_lines()
        if lines:
            terminalreporter.section("aclnn conformance summary")
            for line in lines:
                terminalreporter.write_line(line)


def _runs_cases(config) -> bool:
    """True when the command line points at case files (not at the harness's own tests)."""
    root = Path(str(config.rootpath)).resolve()
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        if path.suffix in (".yaml", ".yml") or path.name == "cases" or \
                (path / "cases").is_dir() and path.resolve() == root:
            return True
    return False


def _add_junit_properties(config, properties: dict) -> None:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - junitxml internals moved
        return
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        for k, v in properties.items():
            xml.add_global_property(k, v)


def _one_line(report) -> str:
    text = str(report.longrepr or "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "error"


class CaseFile(pytest.File):
    def collect(self):
        try:
            op, cases = load_case_file(self.path)
        except CaseFileError as e:
            # case-file errors (harness/model): --collect-only runs nothing, so there the
            # broken file is a collection error (non-zero exit); otherwise one failing item,
            # so that the other case files still run and record their results.
            if self.config.getoption("collectonly"):
                raise self.CollectError(str(e)) from None
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
        for k, v in self.config.stash[_SESSION].backend().info.as_properties().items():
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
        session = self.config.stash[_SESSION]
        if session.settings.prepare_only:      # no device: inputs and golden into the cache only
            session.cache.get(self.case, self.case.runs_numerics(session.settings.family))
            return
        backend = session.backend()
        props = backend.info.as_properties()
        try:   # reruns, the record (status, repro, timings), the gate's verdict, the dump
            record = session.reporting.run_case(self.case, self.nodeid, props,
                                                lambda capture: run_case(self.case, backend, backend.info.family,
                                                                         session.cache, capture=capture))
        except HarnessConfigError as e:     # a baseline that does not fit this run's target
            raise pytest.UsageError(str(e)) from None
        self.record = record
        self.user_properties.append(("record", json.dumps(record, default=str)))
        for k, v in props.items():
            self.user_properties.append((k, v))
        status = record["status"]
        if status == "SKIP":
            pytest.skip(record["reason"])
        if status == "EXPECTED_FAIL":
            pytest.xfail(record["reason"])
        if is_gate_failure(record):
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
