"""The software CANN's environment for tests: its set_env.sh applied, as on a real install.

Its libraries have no RUNPATH, so a process loads them only when their
directories were on LD_LIBRARY_PATH at its start: subprocesses get the
environment from `env_for(root)`; the pytest process itself gets it from
`./run tests`, and `require_in_process` says so in one line when it is missing.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.acl import setenv

REPO = Path(__file__).resolve().parents[1]
# In-process tests share one ACL session (ACL is initialised once per process and the software
# CANN reads its SoC at aclInit): the `backend` fixture of tests/conftest.py, on this family
IN_PROCESS_FAMILY = "ascend950"
CANN_VARS = ("LD_LIBRARY_PATH", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
             setenv.APPLIED_MARK)


def bare_env(base: dict | None = None) -> dict[str, str]:
    """os.environ without any CANN environment and without swcann settings (a fresh shell)."""
    env = dict(os.environ if base is None else base)
    for k in list(env):
        if k in CANN_VARS or k.startswith("SWCANN_") or k.startswith("ACLNN_") or k == "ASCEND_RT_VISIBLE_DEVICES":
            del env[k]
    return env


def env_for(root, base: dict | None = None) -> dict[str, str]:
    """A fresh shell's environment after `source <root>/set_env.sh`."""
    return setenv.sourced_environment(Path(root) / "set_env.sh", bare_env(base))


def require_in_process(root) -> None:
    """Fail in one line when this pytest process cannot load the software CANN at `root`."""
    if setenv.missing_dirs(Path(root)):
        pytest.fail(f"this test loads the software CANN in the pytest process, which was started without "
                    f"{root}/set_env.sh applied: run it through `./run tests`, or `source {root}/set_env.sh` "
                    f"before pytest", pytrace=False)
