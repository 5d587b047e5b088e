"""pytest glue for environment.prepare_process: runs in the controller before any CANN library loads.

Re-executing a pytest process needs care: pytest captures fd 1/2 into temp files
from start-up, and an exec'd process would inherit those descriptors, so capture
is stopped just before the exec (and only then). xdist workers are started later
by the controller and inherit the re-exec'd environment.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ..target.discovery import prepare_process
from ..core.errors import HarnessConfigError


def _started_as_pytest() -> bool:
    """Re-exec only a process that *is* a pytest run (python -m pytest, the pytest script): an exec
    from pytest.main() inside another program would replace that program."""
    argv = sys.orig_argv
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] in ("pytest", "py.test"):
        return True
    return any(Path(a).name in ("pytest", "py.test") for a in argv[:2])


def check_environment(config, runs_cases: bool) -> None:
    if (config.getoption("backend") != "aclnn" or not runs_cases or config.getoption("collectonly")
            or hasattr(config, "workerinput")):
        return

    def stop_capture():
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.stop_global_capturing()

    try:
        prepare_process(bool(config.getoption("no_sw_fallback")),
                        allow_reexec=not config.getoption("no_reexec") and _started_as_pytest(),
                        before_exec=stop_capture)
    except HarnessConfigError as e:
        raise pytest.UsageError(str(e)) from None
