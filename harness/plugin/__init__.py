"""pytest glue: collects cases/*.yaml as test items and runs them on a backend.

The pattern is pytest's own "YAML test files" example: a File collector per
case file and one Item per expanded case. The command line is read once into
RunSettings (in the stash); a CaseSession object holds the per-process state
(case executor, journal, recorder) and implements the hooks that need it.

Cases never run in the pytest process: a supervised worker process runs them
(harness/execution/), so a crash or a hang in the library costs one case. The
controller (or the only process) checks the configuration at start-up by opening
the backend in such a worker, before any case runs, and owns the report directory.
"""
from __future__ import annotations

import functools
import gc
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
import yaml

from .. import backends
from ..target import discovery as environment
from ..core import families, jsonsafe
from . import preflight
from ..backends.base import banner
from ..core.errors import CaseFileError, HarnessConfigError
from ..execution import journal as journal_mod, scratch, sizing
from ..execution.stopping import StopSignals
from ..execution.deadline import deadline_for
from ..execution.rundir import RunDir
from ..execution.pool import CasePool
from ..execution.supervisor import LOOKAHEAD
from ..judge import load_atk_file, load_case_file
from ..model import Case, atk
from ..reporting import records as rec_mod
from ..reporting.gate import is_gate_failure
from ..reporting.run import ReportSettings, RunReporting, add_options as add_report_options
from ..reporting.recorder import Recorder
from ..core.status import Status
from ..core.paths import CASES_DIR

_SESSION = pytest.StashKey()
_CASE_OWNERS = pytest.StashKey()     # case id -> the file that produced it first (this process's collection)


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
                     "aclrtSetSysParamOpt and aclrtCtxSetSysParamOpt), and hold the library to it: every "
                     "numeric case runs twice and must give the same bits")
    g.addoption("--relaunch", action="store_true",
                help="aclnn: make every executor repeatable (aclSetAclOpExecutorRepeatable) and launch it twice "
                     "on the same tensors, outputs set back to poison and a fresh workspace: both launches must pass (what "
                     "the `relaunch: true` groups do for their cases)")
    g.addoption("--no-reexec", action="store_true",
                help="aclnn: when the CANN's set_env.sh is not applied, stop with the file to source "
                     "instead of re-executing with it applied")
    g.addoption("--case-timeout", type=float, default=None, metavar="SECONDS",
                help="deadline of every case (default: the case file's timeout_s, else sized from the case); "
                     "a case past it is TIMEOUT and its worker process is replaced")
    g.addoption("--case-workers", default="auto", metavar="N",
                help="case worker processes per pytest process, each running cases on its own device slot "
                     "(default auto: one per core up to 8, and one per 3 GiB of available memory, on the software "
                     "CANN and on torch on the CPU; one on hardware, on a torch accelerator, under xdist and for a "
                     "single named case)")
    g.addoption("--resume", default=None, metavar="DIR",
                help="finish an interrupted run: run only the cases without a final record in DIR's journal "
                     "(DIR is the report directory of that run)")
    g.addoption("--keep-previous", type=int, default=5, metavar="N",
                help="a new run moves the last one's results to <report-dir>/previous/<run id>/; keep the "
                     "newest N of those (default 5; 0 keeps none)")
    g.addoption("--atk", action="append", default=[], metavar="PATH",
                help="run ATK case lists (JSON files, or directories of them) as well; alone, instead of tests/. "
                     "A .json file in a directory named 'atk' is read as one without this option")
    add_report_options(parser.getgroup("aclnn conformance: gating, reruns, shards, reports"))


def _check_golden_cache(directory: str) -> None:
    """One line naming the option, before any case runs: the case workers would otherwise each
    die opening the cache, with an error that names neither the option nor the directory."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise pytest.UsageError(f"--golden-cache {directory}: cannot create the directory ({e.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise pytest.UsageError(f"--golden-cache {directory}: the directory is not writable")


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
    golden_cache: str | None = None
    prepare_only: bool = False
    case_timeout: float | None = None
    resume: str | None = None
    case_workers: int = 1
    relaunch: bool = False

    @classmethod
    def from_config(cls, config) -> "RunSettings":
        if config.getoption("prepare_only") and not config.getoption("golden_cache"):
            raise pytest.UsageError("--prepare-only needs --golden-cache DIR (where the prepared data goes)")
        if config.getoption("golden_cache"):
            _check_golden_cache(config.getoption("golden_cache"))
        soc = config.getoption("soc")
        try:
            family = families.check_family(soc) if soc else None
        except families.UnknownSocError as e:
            raise pytest.UsageError(str(e)) from None
        timeout = config.getoption("case_timeout")
        if timeout is not None and not (0 < timeout < math.inf):      # nan fails both comparisons
            raise pytest.UsageError(f"--case-timeout: must be a finite number of seconds > 0, got {timeout:g}")
        if config.getoption("keep_previous") < 0:
            raise pytest.UsageError(f"--keep-previous: must be >= 0, got {config.getoption('keep_previous')}")
        return cls(config.getoption("backend"), config.getoption("device"), family,
                   config.getoption("no_sw_fallback"), config.getoption("deterministic"),
                   config.getoption("tier"), config.getoption("report_dir"),
                   getattr(config, "workerinput", {}).get("workerid"), config.getoption("golden_cache"),
                   config.getoption("prepare_only"), timeout, config.getoption("resume"), _case_workers(config),
                   config.getoption("relaunch"))

    def backend_settings(self) -> dict:
        """What the case worker needs to open the backend (plain data: it crosses a pipe)."""
        keys = ("backend", "device", "family", "no_sw_fallback", "deterministic", "worker", "golden_cache", "relaunch")
        return {k: v for k, v in asdict(self).items() if k in keys}


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """What `-n auto` (./run suite's default) means for a case run: harness/execution/sizing.py.
    The harness's own tests (not a case run) keep xdist's default. tryfirst: loaded with -p (as
    ./run suite does), this plugin registers before xdist, whose own answer would then win."""
    if not _runs_cases(config):
        return None
    return sizing.auto_xdist_workers(config.getoption("backend"), config.getoption("prepare_only"))


def _case_workers(config) -> int:
    try:
        return sizing.case_workers(str(config.getoption("case_workers")), backend=config.getoption("backend"),
                                   device=config.getoption("device"),
                                   distributed=hasattr(config, "workerinput") or config.getoption("dist", "no") != "no",
                                   single_case=any("::" in str(arg) for arg in config.args))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Notes the cases that come after this one (they are sent to the case worker ahead), then
    lets pytest's own protocol run the item (returns None)."""
    if isinstance(item, CaseItem):
        item.config.stash[_SESSION].note_upcoming(item, nextitem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """pytest's own tally shows a known deviation that passed as XPASS, not as a plain pass.
    The case's record rides on its call report only: the teardown report would carry it (and
    under xdist send it across) a second time for nothing."""
    report = yield
    record = getattr(item, "record", None)
    if call.when == "call" and report.passed and record and record["status"] == "UNEXPECTED_PASS":
        report.wasxfail = record["reason"]
    if call.when == "call":
        item.user_properties[:] = [p for p in item.user_properties if p[0] != "record"]
    return report


def pytest_configure(config):
    for name, text in (("slow", "slow tier: opt in with --tier slow or --tier all"),
                       ("valid", "numeric conformance case"), ("invalid", "invalid-parameter (status code) case")):
        config.addinivalue_line("markers", f"{name}: {text}")
    for fam in families.FAMILIES:
        config.addinivalue_line("markers", f"{fam}: case applies to SoC family {fam}")
    _add_atk_args(config)
    session = CaseSession(config, RunSettings.from_config(config))
    config.stash[_SESSION] = session
    config.pluginmanager.register(session, "aclnn-case-session")
    if not session.settings.prepare_only:
        preflight.check_environment(config, _runs_cases(config))   # may re-exec with set_env.sh applied
    session.configure()


@pytest.hookimpl(specname="pytest_configure")
def pytest_configure_no_log_capture(config):   # named pytest_*: pytest only looks at those
    """A case runs in its case worker, never in this process, so pytest's log capture has nothing
    to capture here; setting its handlers up and down around every phase of every item was the
    largest per-case cost of a run (about 1 ms of a case's 3). Case runs go without it."""
    if _runs_cases(config):
        config.pluginmanager.set_blocked("logging-plugin")   # unregisters it, or keeps it from registering


def pytest_unconfigure(config):
    session = config.stash.get(_SESSION, None)
    if session is not None:
        session.shutdown()


def _prepare_only_cache(settings: RunSettings):
    from ..judge.cache import GoldenCache     # torch: only this mode computes in the pytest process
    _one_torch_thread()
    return GoldenCache(settings.golden_cache)


def _one_torch_thread() -> None:
    """Goldens and forward passes run on small tensors, one case after another (xdist gives the
    parallelism): torch's intra-op thread pool costs more than it saves there (a 2x3x9x9
    max_pool2d took 33 ms with 2 threads, 4 us with 1). OMP_NUM_THREADS, when set, wins."""
    if "OMP_NUM_THREADS" not in os.environ:
        import torch
        torch.set_num_threads(1)


def pytest_collect_file(parent, file_path):
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "cases":
        return CaseFile.from_parent(parent, path=file_path, **_outside_rootdir(parent.config, file_path))
    if file_path.suffix == ".json" and _is_atk(parent.config, file_path):
        return AtkFile.from_parent(parent, path=file_path, **_outside_rootdir(parent.config, file_path))
    return None


def _outside_rootdir(config, file_path) -> dict:
    """A file outside the rootdir (an ATK list beside the checkout, a case file under /tmp) gets a
    node id that pytest leaves without its path ('::atk[3-...]'): records, journals and repro lines
    are keyed by node ids, so such a file's own is its absolute path."""
    try:
        file_path.relative_to(config.rootpath)
        return {}
    except ValueError:
        return {"nodeid": str(file_path)}


# ---------------------------------------------------------------- ATK case lists (harness/model/atk.py)



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
    # a node id of a list (a repro line) selects its case: adding the whole list would run them all
    named = {str(Path(a.partition("::")[0]).resolve()) for a in config.args if "::" in a}
    paths = [p for p in paths if p not in named]
    config.args[:] = paths if from_testpaths else [*config.args, *paths]


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


def _xdist_queue(config):
    """xdist's queue of the item indices its controller has dealt this worker (the worker loop's
    `torun`, pytest-xdist 3.x), or None. Read only as a hint of what comes next (_dealt)."""
    interactor = next((p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None)
    queue = getattr(interactor, "torun", None)
    return queue if callable(getattr(queue, "lock", None)) else None


def _dealt(queue, n: int) -> list[int]:
    """Up to `n` indices waiting in xdist's queue after `nextitem`. Any other layout of that
    queue gives [] (ahead = `nextitem` alone, as before). A case sent ahead and then stolen
    back by the controller (--dist worksteal) runs twice, once for nothing."""
    try:
        with queue.lock() as pending:
            head = [pending[i] for i in range(min(n, len(pending)))]
    except Exception:
        return []
    return [i for i in head if isinstance(i, int)]


class CaseSession:
    """Per-process state. The controller (or the only process) opens the run: it checks the
    configuration in a case worker, locks the report directory and records results. Every
    process that runs cases has a case executor (its worker process) and a journal."""

    def __init__(self, config, settings: RunSettings):
        self.config, self.settings = config, settings
        self.is_controller = not hasattr(config, "workerinput")
        self.run: dict | None = None          # run id, report dir, backend properties, cases already done
        self.rundir: RunDir | None = None
        self.recorder: Recorder | None = None
        self.executor: CasePool | None = None
        self.journal: journal_mod.Journal | None = None
        self.controller_journal: journal_mod.Journal | None = None
        self.upcoming: list = []              # cases pytest runs next (pytest_runtest_protocol)
        self.stop = StopSignals()             # SIGTERM and SIGHUP stop the run as Ctrl-C does
        self.interrupted = False              # Ctrl-C or a stop signal: cases in flight are not waited for
        self._position: dict[str, int] | None = None
        self._xdist_queue = False             # xdist's queue of what this worker runs next (None: not readable)
        # --prepare-only fills the cache in this process (no device, no case worker); a run uses
        # it in its case workers, which report their hits and misses (executor.cache_stats)
        self.cache = _prepare_only_cache(settings) if settings.prepare_only else None
        try:
            report_settings = ReportSettings.from_options(config.getoption)
        except HarnessConfigError as e:
            raise pytest.UsageError(str(e)) from None
        # statuses, gating, reruns, shards, dumps and every report: harness/reporting/
        self.reporting = RunReporting(
            report_settings, root=Path(str(config.rootpath)), argv=["pytest", *config.invocation_params.args],
            requested={"backend": settings.backend, "family": settings.family}, worker=settings.worker,
            extra={"shard": config.getoption("shard"), "reruns": report_settings.reruns,
                   "gate": report_settings.gate, "tier": settings.tier,
                   "case_workers": settings.case_workers, "xdist_workers": config.getoption("numprocesses", None)})

    # ------------------------------------------------------------ the run

    def configure(self) -> None:
        self.stop.install()
        if not self.is_controller:
            self.run = self.config.workerinput.get("aclnn_run")
            if self.run is not None:
                self.reporting.directory = Path(self.run["report_dir"])
                self._case_executor().warm_up()     # its zygote imports torch while this worker collects
            return
        if self.config.getoption("collectonly") or self.settings.prepare_only or not _runs_cases(self.config):
            return
        self._open_run()

    def _open_run(self) -> None:
        """Everything that can be wrong with the set-up fails here, in one line, before any case runs."""
        distributed = self.config.getoption("dist", "no") != "no"
        executor = CasePool(self.settings.backend_settings(), "probe" if distributed else "main",
                            1 if distributed else self.settings.case_workers)
        try:
            properties = executor.start()
            resume = self.settings.resume
            directory = Path(resume or self.settings.report_dir or Path(str(self.config.rootpath)) / "reports" /
                             f"{properties.get('backend') or 'unknown'}-{properties.get('family') or 'any'}")
            self.rundir = RunDir.acquire(directory, bool(resume), ["pytest", *self.config.invocation_params.args],
                                         self.config.getoption("keep_previous"))
        except HarnessConfigError as e:
            executor.close()
            raise pytest.UsageError(str(e)) from None
        state = journal_mod.scan(directory) if resume else journal_mod.State()
        self.run = {"run_id": self.rundir.run_id, "report_dir": str(directory), "properties": properties,
                    "done": sorted(state.final), "missing_before": sorted(state.missing)}
        if distributed:
            executor.close()             # the workers open their own
        else:
            self.executor = executor
        self.recorder = self.reporting.open_recorder(directory, properties)
        if self.executor is not None:
            self.executor.set("dump_dir", self.reporting.dump_dir(properties))
        self.controller_journal = journal_mod.Journal(directory, self.rundir.run_id, "controller")

    def pytest_configure_node(self, node):
        """xdist: every worker runs in the controller's run (same report dir, run id, backend facts)."""
        if self.run is not None:
            node.workerinput["aclnn_run"] = self.run

    def shutdown(self) -> None:
        self.stop.restore()
        if self.executor is not None:
            self.executor.close(abandon=self.interrupted)
        for thing in (self.journal, self.controller_journal):
            if thing is not None:
                thing.close()
        self.executor = self.journal = self.controller_journal = None
        if self.rundir is not None:
            self.rundir.release()
            self.rundir = None
            scratch.sweep()      # the directories of xdist workers killed while stopping (execution/scratch.py)

    def properties(self) -> dict:
        return dict(self.run["properties"]) if self.run else {}

    def run_case(self, item) -> dict:
        """Run one case in this process's case worker, journalled before and after."""
        if self.run is None:
            raise pytest.UsageError("case items need a run: point pytest at case files (cases/*.yaml)")
        executor = self._case_executor()
        case = item.case
        self.process_journal().started(case.id, item.nodeid, case.op.name)
        deadline = deadline_for(case, self.settings.case_timeout)
        ahead = [(c, deadline_for(c, self.settings.case_timeout)) for c in self.upcoming]  # supervisor.run_on
        try:   # reruns, the record (status, identity, repro, timings), the gate's verdict, the dump
            record = self.reporting.run_case(case, item.nodeid, self.properties(),
                                             lambda: executor.run(case, deadline, ahead))
        except HarnessConfigError as e:     # a baseline that does not fit this run's target
            raise pytest.UsageError(str(e)) from None
        self.journal.finished(record)
        return record

    def note_upcoming(self, item, nextitem) -> None:
        """The cases pytest runs after `item`: in one process, the next few of the session's items;
        under xdist, `nextitem` and what the controller has already dealt this worker (_dealt)."""
        if nextitem is None:
            self.upcoming = []
            return
        items = item.session.items
        if self.settings.worker is not None:
            if self._xdist_queue is False:
                self._xdist_queue = _xdist_queue(item.config)
            dealt = _dealt(self._xdist_queue, 2 * LOOKAHEAD) if self._xdist_queue is not None else []
            following = [nextitem, *(items[i] for i in dealt if i < len(items))]
            self.upcoming = [it.case for it in following if isinstance(it, CaseItem)]
            return
        if self._position is None:
            self._position = {it.nodeid: i for i, it in enumerate(items)}
        i = self._position.get(item.nodeid, -1)
        ahead = 2 * LOOKAHEAD * self.settings.case_workers      # enough to keep every case worker fed
        following = items[i + 1:i + 1 + ahead] if i >= 0 and items[i + 1:i + 2] == [nextitem] else [nextitem]
        self.upcoming = [it.case for it in following if isinstance(it, CaseItem)]

    def _case_executor(self) -> CasePool:
        if self.executor is None:
            settings = {**self.settings.backend_settings(), "dump_dir": self.reporting.dump_dir(self.properties())}
            self.executor = CasePool(settings, self.settings.worker or "main", self.settings.case_workers)
        return self.executor

    def process_journal(self) -> journal_mod.Journal:
        if self.journal is None:
            self.journal = journal_mod.Journal(Path(self.run["report_dir"]), self.run["run_id"],
                                               self.settings.worker or "main")
        return self.journal

    # ------------------------------------------------------------ hooks

    def pytest_sessionstart(self, session):
        if self.recorder is None:
            return
        _add_junit_properties(self.config, self.recorder.properties)    # junitxml is configured after us
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        if self.settings.resume:          # said even with -q: what this run will (re)do
            tr.write_line(f"resuming run {self.run['run_id']} in {self.run['report_dir']}: {len(self.run['done'])} "
                          f"case(s) already finished, {len(self.run['missing_before'])} MISSING will run again")
            for case_id in self.run["missing_before"]:
                tr.write_line(f"  MISSING {case_id}")
        elif self.rundir.archived is not None:
            tr.write_line(f"the previous run's results were moved to {self.rundir.archived}")

    def pytest_report_header(self, config):
        if config.getoption("collectonly") or not _runs_cases(config):
            return None
        if self.run is None:
            return backends.preview(self.settings.backend, self.settings)
        workers = self.settings.case_workers
        how = "auto" if config.getoption("case_workers") == "auto" else "--case-workers"
        why = self.run["properties"].get("fallback_reason")
        if why:     # the paths tried stay in summary.json's properties and in `./run doctor`
            why = environment.fallback_headline(why) + " (summary.json's fallback_reason and ./run doctor list the paths tried)"
        return [banner(self.run["properties"]),
                *([f"why the software CANN: {why}"] if why else []),
                f"case workers: {workers} per pytest process ({how}; harness/execution/sizing.py)"]

    @pytest.hookimpl(trylast=True)     # after -k/-m: the shard splits what is left
    def pytest_collection_modifyitems(self, config, items):
        family = self.settings.family
        if self.settings.backend == "aclnn" and self.run is not None:
            family = self.run["properties"].get("family") or family   # the library's family decides
        done = set(self.run["done"]) if self.run else set()
        keep, drop = [], []
        for item in items:
            case = getattr(item, "case", None)
            if case is None or (self.settings.tier in ("all", case.tier)
                                and (family is None or family in case.families) and case.id not in done):
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
        # no run while only collecting or only preparing: shard, but write no manifest
        props = self.properties() or None
        try:
            keep = self.reporting.select([(i.case, i.nodeid) for i in cases], props)
        except HarnessConfigError as e:
            raise pytest.UsageError(str(e)) from None
        drop = {id(i) for i, k in zip(cases, keep) if not k}
        if drop:
            config.hook.pytest_deselected(items=[i for i in items if id(i) in drop])
            items[:] = [i for i in items if id(i) not in drop]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        """The items and their cases live until the end of the run: moved out of the cyclic
        garbage collector's sight, its periodic full passes and pytest's collections at exit
        stop walking them (they were about 0.3 s of a 3,000-case run)."""
        if _runs_cases(self.config):
            gc.collect()
            gc.freeze()

    def pytest_runtest_logreport(self, report):
        """Record each case once (in the controller): its record, or what stopped it."""
        if not self.is_controller or self.recorder is None:
            return      # xdist workers forward reports; the controller records
        props = dict(report.user_properties)
        text = props.get("record") if isinstance(props.get("record"), str) else None
        if text is not None:
            props["record"] = json.loads(text)
        record = self.reporting.record_report(
            props, report.nodeid, report.when, report.failed, _one_line(report),
            died="crashed while running" in str(report.longrepr or ""), case_of=self._case_of, text=text)
        if record is not None and record is not props.get("record"):
            self.controller_journal.finished(record)      # a record the case worker did not send

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True

    def pytest_sessionfinish(self, session, exitstatus):
        if self.recorder is None:
            return
        self.stop.finishing()
        # every worker's journal: one record per case (this process's own from memory)
        stopped = self.stop.describe()
        state = journal_mod.scan(self.recorder.dir, own=(self.journal, self.controller_journal), stopped=stopped,
                                 run_id=self.run["run_id"] if self.run else None)
        session.exitstatus = self.reporting.finish(session.exitstatus, state.records(), stopped)
        if state.missing and session.exitstatus == 0:
            session.exitstatus = 1

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        stats = self.cache if self.cache is not None else (self.executor.cache_stats if self.executor else None)
        if stats is not None and stats.hits + stats.misses:
            # this process's use (under xdist each worker has its own)
            terminalreporter.write_line(f"golden cache {self.settings.golden_cache}: {stats.hits} hits, "
                                        f"{stats.misses} computed, {len(stats.rejected)} damaged entries recomputed")
            for line in stats.rejected[:20]:
                terminalreporter.write_line(f"  {line}")
        if self.recorder is None:
            return
        tr = terminalreporter
        tr.section("aclnn conformance summary")
        not_run: dict[str, int] = {}
        for record in self.recorder.serious():
            reason = record.get("reason", "")
            if reason.startswith("not run:"):       # a lost device: one line, not one per case
                not_run[reason] = not_run.get(reason, 0) + 1
        for line in self.reporting.summary_lines():
            tr.write_line(line)
        for reason, count in not_run.items():
            tr.write_line(f"DEVICE LOST: {count} case(s) {reason}"[:600], red=True, bold=True)
        deselected = len(tr.stats.get("deselected", []))
        if not self.recorder.records and deselected:
            # pytest's own "no tests ran" does not say why; the family filter is the usual reason
            family = self.properties().get("family") or self.settings.family or "any family"
            tr.write_line(f"NO CASE SELECTED: all {deselected} collected case(s) were deselected (for {family} "
                          f"and the -k/-m/--tier/--shard given); this report directory holds an empty run",
                          yellow=True, bold=True)

    # ------------------------------------------------------------ helpers

    def _case_of(self, nodeid: str) -> dict:
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
            _claim_case_ids(self, cases)
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
        session = self.config.stash[_SESSION]
        record = {"case_id": f"{self.path.name}::case-file-error", "op": "(case file)", "status": Status.FAIL.value,
                  "reason": str(self.error), "nodeid": self.nodeid,
                  "backend": rec_mod.record_identity(session.properties())}
        if session.run is not None:
            session.process_journal().finished(record)
        self.user_properties.append(("record", jsonsafe.dumps(record)))   # as CaseItem's: written as it comes
        raise self.error

    def repr_failure(self, excinfo, style=None):
        return str(self.error)

    def reportinfo(self):
        return self.path, None, f"case file {self.path.name}"


class CaseFailure(Exception):
    pass


@functools.lru_cache(maxsize=None)
def _mark(name: str):
    """The marker, made once: looking a marker up by name (pytest.mark's __getattr__) was half of
    collecting a 4,000-case selection."""
    return getattr(pytest.mark, name)


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, **kw):
        super().__init__(**kw)
        self.case = case
        self.user_properties += [("case_id", case.id), ("op", case.op.name)]
        for name in (case.op.marker, case.kind, *case.families, *(("slow",) if case.tier == "slow" else ())):
            self.add_marker(_mark(name))

    def runtest(self):
        session = self.config.stash[_SESSION]
        if session.settings.prepare_only:      # no device: inputs and golden into the cache only
            session.cache.get(self.case, self.case.runs_numerics(session.settings.family))
            # a skip, not a pass: nothing was judged, and a JUnit reader must not count it as conformant
            pytest.skip("prepared only: inputs and golden are in --golden-cache; nothing ran on a device")
        record = session.run_case(self)
        # the record travels with the report; from an xdist worker it must cross a pipe as text
        # (strict JSON, as results.jsonl holds it: the controller writes that text as it came)
        self.user_properties.append(("record", jsonsafe.dumps(record) if session.settings.worker else record))
        status = Status(record["status"])
        self.record = record
        if status is Status.SKIP:
            pytest.skip(record["reason"])
        if status is Status.EXPECTED_FAIL:
            pytest.xfail(record["reason"])
        if is_gate_failure(record):
            raise CaseFailure(record["reason"] if status is not Status.UNEXPECTED_PASS else
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
