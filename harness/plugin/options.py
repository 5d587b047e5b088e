"""The command line of a case run: the options, and `Settings`, the one typed reading of them.

Settings are read once per pytest process (controller and xdist workers alike, each from its own
command line) and kept in the config's stash; every other part of the plugin reads them from there.
A bad value is a pytest.UsageError with one line naming the option, before anything runs.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pytest

from .. import backends
from ..core import families
from ..core.argv import MAX_LINE, decimal
from ..core.text import clipped
from ..core.errors import HarnessConfigError
from ..execution import sizing
from ..reporting.run import ReportSettings, add_options as add_report_options
from ..target.settings import BackendSettings

SETTINGS = pytest.StashKey()
DETERMINISM_LEVELS = (0, 1, 2, 3)    # ACL_OPT_DETERMINISTIC's values (acl_abi.md 3.3), TTK's --dl


def typed(option: str, what: str | None, integer: bool = False, choices: tuple = ()):
    """An option's argparse type: ASCII decimal (harness/core/argv.py: not `1_000`, `١٢` or ` 3`),
    one of `choices` where given. Its refusal is a UsageError of one line: argparse's own (from
    type=int or choices=) reaches pytest as its usage block, four lines, where every other
    configuration error is one `ERROR:` line. argparse lets it through (it catches only ValueError
    and TypeError) and pytest prints it as it prints every UsageError. Ranges are checked where the
    value is read (Settings), with their own messages."""
    def convert(text: str):
        try:
            value = text if what is None else decimal(text, integer)
        except ValueError:
            value = None
        if value is None or (choices and value not in choices):
            raise usage(f"{option}: must be {what or 'one of ' + ', '.join(choices)}, got {text!r}")
        return value
    convert.__name__ = "integer" if integer else "number"
    return convert


def usage(message: str) -> pytest.UsageError:
    """The UsageError of a message, at most MAX_LINE characters (a value is quoted whole, and can be
    5,000 digits)."""
    return pytest.UsageError(clipped(message, MAX_LINE))


def one_of(option: str, choices: tuple):
    """typed() for a word: one of `choices` (argparse's choices= says a wrong one in four lines)."""
    return typed(option, None, choices=choices)


def add_options(parser) -> None:
    g = parser.getgroup("aclnn conformance")
    g.addoption("--backend", default="torch", type=one_of("--backend", backends.NAMES),
                metavar="{" + ",".join(backends.NAMES) + "}",
                help="device under test: 'aclnn' (CANN through ctypes; software CANN when none is installed) "
                     "or 'torch' (PyTorch on --device). Default: torch")
    g.addoption("--device", default=None,
                help="torch backend: torch device (cpu, cuda:0, npu:0). aclnn backend: device id "
                     "(default: xdist worker index modulo the device count)")
    g.addoption("--soc", default=None,
                help=f"SoC family under test ({', '.join(families.FAMILIES)}). aclnn: must match the "
                     "detected SoC (default: detected). torch: selects that family's valid cases (default: any)")
    g.addoption("--report-dir", default=None, help="where results go (default: reports/<backend>-<family>)")
    g.addoption("--tier", default="default", type=one_of("--tier", ("default", "slow", "all")),
                metavar="{default,slow,all}",
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
    g.addoption("--determinism-level", default=None, metavar="N",
                type=typed("--determinism-level", "one of 0, 1, 2, 3", integer=True, choices=DETERMINISM_LEVELS),
                help="aclnn: ACL_OPT_DETERMINISTIC=N at process and context level, and hold the library to its "
                     "level (TTK's --dl numbering): 0 off; 1 = --deterministic (every numeric case twice, same "
                     "bits); 2 strong consistency (the same check: a single aclnn call has no graph compile); "
                     "3 batch consistency: also each batched case's batch slice run alone must give the bits of "
                     "the same slice of the full batch (harness/judge/batch_slice.py)")
    g.addoption("--relaunch", action="store_true",
                help="aclnn: make every executor repeatable (aclSetAclOpExecutorRepeatable) and launch it twice "
                     "on the same tensors, outputs set back to poison and a fresh workspace: both launches must "
                     "pass (what the `relaunch: true` groups do for their cases)")
    g.addoption("--perf", action="store_true",
                help="time every case that passes: warmup launches of a repeatable executor, then launches timed "
                     "with device events (torch: CUDA events, or the host's clock on the CPU) until the median's "
                     "95 %% interval is within 2 %%, 2 s per case or 200 launches; records carry `perf`, and "
                     "--gate with a perf baseline gates on it (what the `perf:` groups do for their cases)")
    g.addoption("--no-reexec", action="store_true",
                help="aclnn: when the CANN's set_env.sh is not applied, stop with the file to source "
                     "instead of re-executing with it applied")
    g.addoption("--case-timeout", type=typed("--case-timeout", "a finite number of seconds > 0"), default=None,
                metavar="SECONDS",
                help="deadline of every case (default: the case file's timeout_s, else sized from the case); "
                     "a case past it is TIMEOUT and its worker process is replaced")
    g.addoption("--case-workers", default="auto", metavar="N",
                help="case worker processes per pytest process, each running cases on its own device slot "
                     "(default auto: one per device where the work is device time (hardware; the software CANN "
                     "with SWCANN_DEVICE_TIME=1), else one per core up to 8 (the software CANN, torch on the CPU); "
                     "at most what the available memory holds (1 GiB a worker on the default tier, 3 GiB with slow "
                     "cases); one on a torch accelerator, under xdist and for a single named case; "
                     "harness/execution/sizing.py)")
    g.addoption("--resume", default=None, metavar="DIR",
                help="finish an interrupted run: run only the cases without a final record in DIR's journal "
                     "(DIR is the report directory of that run)")
    g.addoption("--keep-previous", type=typed("--keep-previous", "an integer >= 0", integer=True), default=5,
                metavar="N",
                help="a new run moves the last one's results to <report-dir>/previous/<run id>/; keep the "
                     "newest N of those (default 5; 0 keeps none)")
    g.addoption("--atk", action="append", default=[], metavar="PATH",
                help="run ATK case lists (JSON files, or directories of them) as well; alone, instead of tests/. "
                     "A .json file in a directory named 'atk' is read as one without this option")
    g.addoption("--malloc-check", action="store_true",
                help="run the case workers with glibc's heap checking (MALLOC_CHECK_=3, MALLOC_PERTURB_), so a "
                     "library that writes past a host block is caught at that block's own free, on the case "
                     "that did it (slower)")
    add_report_options(parser.getgroup("aclnn conformance: gating, reruns, shards, reports"))


@dataclass(frozen=True)
class Settings:
    """The command line, read once. Backends take their settings from here."""
    backend: str
    device: str | None
    family: str | None        # --soc
    no_sw_fallback: bool
    deterministic: bool
    tier: str
    report_dir: str | None    # absolute
    worker: str | None        # xdist worker id; None in the controller or without xdist
    golden_cache: str | None = None
    prepare_only: bool = False
    case_timeout: float | None = None
    resume: str | None = None
    case_workers: int = 1
    relaunch: bool = False
    distributed: bool = False            # the controller of an xdist run
    report: ReportSettings | None = None
    determinism_level: int = 0           # --determinism-level (--deterministic: 1)
    case_workers_why: str = ""           # how case_workers was chosen (sizing.Plan), for the run's header
    perf: bool = False                   # --perf: every passing case timed
    malloc_check: bool = False

    @classmethod
    def from_config(cls, config) -> "Settings":
        get = config.getoption
        if get("prepare_only") and not get("golden_cache"):
            raise pytest.UsageError("--prepare-only needs --golden-cache DIR (where the prepared data goes)")
        if get("golden_cache"):
            _check_golden_cache(get("golden_cache"))
        try:
            family = families.check_family(get("soc")) if get("soc") else None
        except families.UnknownSocError as e:
            raise usage(str(e)) from None
        timeout = get("case_timeout")
        if timeout is not None and not (0 < timeout < math.inf):      # nan fails both comparisons
            raise pytest.UsageError(f"--case-timeout: must be a finite number of seconds > 0, got {timeout:g}")
        if get("keep_previous") < 0:
            raise pytest.UsageError(f"--keep-previous: must be >= 0, got {get('keep_previous')}")
        try:
            report = ReportSettings.from_options(get)
        except HarnessConfigError as e:
            raise usage(str(e)) from None
        level = _determinism_level(get("deterministic"), get("determinism_level"))
        workers = _case_workers(config)
        return cls(get("backend"), get("device"), family, get("no_sw_fallback"), level >= 1, get("tier"),
                   _absolute(get("report_dir")), getattr(config, "workerinput", {}).get("workerid"),
                   _absolute(get("golden_cache")), get("prepare_only"), timeout, _absolute(get("resume")),
                   workers.count, get("relaunch"), get("dist", "no") != "no", report, level, workers.why,
                   perf=get("perf"), malloc_check=get("malloc_check"))

    def backend_settings(self) -> BackendSettings:
        """What the case worker needs to open the backend (it crosses the pipe as BackendSettings.to_wire)."""
        mine = asdict(self)
        return BackendSettings(**{f.name: mine[f.name] for f in fields(BackendSettings) if f.name in mine})


def _determinism_level(deterministic: bool, level: int | None) -> int:
    """--determinism-level, where --deterministic is level 1 (given together, they must agree)."""
    if level is None:
        return 1 if deterministic else 0
    if deterministic and level < 1:
        raise pytest.UsageError(f"--deterministic is --determinism-level 1; it contradicts --determinism-level {level}")
    return level


def _absolute(path: str | None) -> str | None:
    """Paths are made absolute once, here, before any library code runs: a library that changes the
    working directory must not move where results go."""
    return None if path is None else os.path.abspath(path)


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


def _case_workers(config) -> sizing.Plan:
    try:
        return sizing.plan(str(config.getoption("case_workers")), backend=config.getoption("backend"),
                           device=config.getoption("device"),
                           distributed=hasattr(config, "workerinput") or config.getoption("dist", "no") != "no",
                           single_case=any("::" in str(arg) for arg in config.args), tier=config.getoption("tier"))
    except ValueError as e:
        raise usage(str(e)) from None
