"""pytest glue for environment.prepare_process: runs in the controller before any CANN library loads.

Re-executing a pytest process needs care: pytest captures fd 1/2 into temp files
from start-up, and an exec'd process would inherit those descriptors, so capture
is stopped just before the exec (and only then). xdist workers are started later
by the controller and inherit the re-exec'd environment.
"""
from __future__ import annotations

import pytest

from .environment import prepare_process
from .errors import HarnessConfigError


def check_environment(config, runs_cases: bool) -> None:
    if (config.getoption("backend") != "aclnn" or not runs_cases or config.getoption("collectonly")
            or hasattr(config, "workerinput")):
        return

    def stop_capture():
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.stop_global_capturing()

    try:
        prepare_process(bool(config.getoption("no_sw_fallback")), allow_reexec=not config.getoption("no_reexec"),
                        before_exec=stop_capture)
    except HarnessConfigError as e:
        raise pytest.UsageError(str(e)) from None
