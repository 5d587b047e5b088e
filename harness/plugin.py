"""pytest glue: collects cases/*.yaml as test items and runs them on a backend.

The pattern is pytest's own "YAML test files" example: a File collector per
case file and one Item per expanded case. The command line is read once into
RunSettings (in the stash); a CaseSession object holds the per-process state
(backend, recorder) and implements the hooks that need it.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from . import backends, families, preflight, provenance
from .backends.base import banner
from .errors import CaseFileError, HarnessConfigError
from .judge import load_atk_file, load_case_file
from .judge.cache import GoldenCache
from .judge.runner import run_case
from .model import Case, atk
from .report import Recorder

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
    g.addoption("--atk", action="append", default=[], metavar="PATH",
                help="run ATK case lists (JSON files, or directories of them) as well; alone, instead of tests/. "
                     "A .json file in a directory named 'atk' is read as one without this option")


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
    _add_atk_args(config)
    _one_torch_thread()
    session = CaseSession(config, RunSettings.from_config(config))
    config.stash[_SESSION] = session
    config.pluginmanager.register(session, "aclnn-case-session")
    if not session.settings.prepare_only:
        preflight.check_environment(config, _runs_cases(config))   # may re-exec with set_env.sh applied


def _one_torch_thread() -> None:
    """Goldens and forward passes run on small tensors, one case after another (xdist gives the
    parallelism): torch's intra-op thread pool costs more than it saves there (a 2x3x9x9
    max_pool2d took 33 ms with 2 threads, 4 us with 1). OMP_NUM_THREADS, when set, wins."""
    if "OMP_NUM_THREADS" not in os.environ:
        import torch
        torch.set_num_threads(1)


def pytest_collect_file(parent, file_path):
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "cases":
        return CaseFile.from_parent(parent, path=file_path)
    if file_path.suffix == ".json" and _is_atk(parent.config, file_path):
        return AtkFile.from_parent(parent, path=file_path)
    return None


# ---------------------------------------------------------------- ATK case lists (harness/model/atk.py)

CASES_DIR = Path(__file__).resolve().parents[1] / "cases"      # the operators' own case files


def _add_atk_args(config) -> None:
    """--atk paths are collected like command-line paths; given alone, they replace testpaths.
    xdist workers rebuild their config from the original command line, so they do the same."""
    paths = [str(Path(p).resolve()) for p in config.getoption("atk")]
    if not paths:
        return
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise pytest.UsageError(f"--atk: no such file or directory: {', '.join(missing)}")
    from_testpaths = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    config.args[:] = paths if from_testpaths else [*config.args, *paths]


def _is_atk(config, file_path) -> bool:
    if file_path.parent.name == "atk":
        return True
    given = [Path(p).resolve() for p in config.getoption("atk")]
    return any(file_path == g or g in file_path.parents for g in given)


class AtkFile(pytest.File):
    def collect(self):
        try:
            cases = load_atk_file(self.path, CASES_DIR)
        except CaseFileError as e:
            yield CaseFileErrorItem.from_parent(self, name="case-file-error", error=e)
            return
        for marker in {c.op.marker for c in cases}:
            self.config.addinivalue_line("markers", f"{marker}: cases of the operator")
        for case in cases:
            yield CaseItem.from_parent(self, name=case.name, case=case)


class CaseSession:
    """Per-process state: the backend (opened on first use, never in the xdist controller)
    and the recorder (only in the controller, or the one process without xdist)."""

    def __init__(self, config, settings: RunSettings):
        self.config, self.settings = config, settings
        self._backend = None
        self.recorder: Recorder | None = None
        self.cache = GoldenCache(settings.golden_cache) if settings.golden_cache else None
        self.is_controller = not hasattr(config, "workerinput")

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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if hasattr(item, "case") and not self.settings.prepare_only:
            provenance.attach(report, self.backend)     # also when the case errored before judging

    def pytest_runtest_logreport(self, report):
        """Record each case once: its judged outcome, or the error that stopped it."""
        props = dict(report.user_properties)
        if "case_id" not in props and report.failed and (".yaml::" in report.nodeid or ".json::" in report.nodeid):
            # a worker that crashed (segfault, abort in the library) sends a bare report: keep it
            props = self._crashed_case(report.nodeid)
        if "case_id" not in props or not (report.when == "call" or report.failed):
            return
        if not self.is_controller or self.settings.prepare_only:   # workers forward; nothing judged
            return
        recorder = self._recorder(props)
        if "outcome" in props:
            record = json.loads(props["outcome"])
            if report.failed and record.get("outcome") == "passed":   # raised after judging
                record["outcome"], record["reason"] = "error", _one_line(report)
        else:                                                        # raised before judging
            record = {"case_id": props["case_id"], "op": props["op"], "outcome": "error",
                      "reason": _one_line(report), "backend": recorder.properties}
        recorder.add(record)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if self.cache is not None and self.cache.hits + self.cache.misses:
            c = self.cache       # this process's use (under xdist each worker has its own)
            terminalreporter.write_line(f"golden cache {c.dir}: {c.hits} hits, {c.misses} computed, "
                                        f"{len(c.rejected)} damaged entries recomputed")
            for line in c.rejected[:20]:
                terminalreporter.write_line(f"  {line}")
        if self.recorder is None:
            return
        directory = self.recorder.finish()
        tr = terminalreporter
        tr.section("aclnn conformance summary")
        tr.write_line(self.recorder.banner)
        for line in self.recorder.table():
            tr.write_line(line)
        if self.recorder.notes:
            tr.write_line(f"{len(self.recorder.notes)} case(s) carry a note: a documented claim the code does "
                          "not follow, or a deviation they target (summary.json)")
        tr.write_line(f"reports: {directory}")

    # ------------------------------------------------------------ helpers

    def _recorder(self, props: dict) -> Recorder:
        """Created on the first case result, from the backend facts that came with it
        (under xdist the controller has no backend of its own)."""
        properties = provenance.properties_of(props)
        if self.recorder is None:
            directory = self.settings.report_dir or Path(str(self.config.rootpath)) / "reports" / \
                f"{properties.get('backend') or 'unknown'}-{properties.get('family') or 'any'}"
            self.recorder = Recorder(Path(directory), banner(properties), properties)
            _add_junit_properties(self.config, properties)
        elif provenance.lacks_backend(self.recorder.properties) and not provenance.lacks_backend(properties):
            # the first report was a crashed worker's bare one: take the facts from the first that has them
            self.recorder.properties.update(properties)
            self.recorder.banner = banner(self.recorder.properties)
            _add_junit_properties(self.config, properties)
        return self.recorder

    def _crashed_case(self, nodeid: str) -> dict:
        file_part, _, name = nodeid.partition("::")
        try:
            path = Path(str(self.config.rootpath)) / file_part
            op = atk.op_name(path, atk.read(path)) if path.suffix == ".json" else yaml.safe_load(path.read_text())["op"]
        except Exception:          # the record matters more than its op name
            op = Path(file_part).stem
        return {"case_id": f"{op}.{name}", "op": op}


def _runs_cases(config) -> bool:
    """True when the command line points at case files (not at the harness's own tests)."""
    root = Path(str(config.rootpath)).resolve()
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        if path.suffix in (".yaml", ".yml", ".json") or path.name in ("cases", "atk") or \
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
        outcome = run_case(self.case, backend, backend.info.family, session.cache)
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
