"""pytest glue: case files and ATK lists as test items, run on a backend, recorded and reported.

The plugin is split by job, as pytest's own plugins are: options.py (the command line, read once
into Settings), collection.py (case files -> items), selection.py (tier, family, resume, shard),
scheduling.py (xdist sizing, the cases sent ahead), lifecycle.py (open the run, run and record each
case, finish), output.py (terminal and --junitxml), preflight.py (the CANN's environment before any
library loads). Each is a small plugin object or module; what they share lives in the config's stash.

Cases never run in the pytest process: supervised case workers run them (harness/execution/), so a
crash or a hang in the library costs one case.
"""
from __future__ import annotations

from ..core import families
from . import arguments, preflight
from .collection import LIFECYCLE, add_atk_args, runs_cases
from .lifecycle import Lifecycle
from .options import SETTINGS, Settings, add_options
from .output import Output
from .scheduling import Lookahead
from .selection import Selection

pytest_plugins = ["harness.plugin.collection", "harness.plugin.scheduling", "harness.plugin.output"]

MARKERS = (("slow", "slow tier: opt in with --tier slow or --tier all"), ("valid", "numeric conformance case"),
           ("invalid", "invalid-parameter (status code) case"))


def pytest_addoption(parser):
    add_options(parser)


def pytest_configure(config):
    for name, text in MARKERS:
        config.addinivalue_line("markers", f"{name}: {text}")
    for fam in families.FAMILIES:
        config.addinivalue_line("markers", f"{fam}: case applies to SoC family {fam}")
    arguments.check_values(config)        # an empty value is a mistake, never "not given"
    add_atk_args(config)
    settings = config.stash[SETTINGS] = Settings.from_config(config)
    lookahead = Lookahead(config, settings.worker, settings.case_workers)
    lifecycle = config.stash[LIFECYCLE] = Lifecycle(config, settings, lookahead)
    for name, plugin in (("aclnn-lookahead", lookahead), ("aclnn-lifecycle", lifecycle),
                         ("aclnn-takeover", lifecycle.takeover),
                         ("aclnn-selection", Selection(settings, lifecycle.reporting)),
                         ("aclnn-output", Output(config, settings, lifecycle))):
        config.pluginmanager.register(plugin, name)
    if not settings.prepare_only:
        preflight.check_environment(config, runs_cases(config))   # may re-exec with set_env.sh applied
    lifecycle.configure()


def pytest_unconfigure(config):
    lifecycle = config.stash.get(LIFECYCLE, None)
    if lifecycle is not None:
        lifecycle.shutdown()
