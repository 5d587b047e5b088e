"""A CANN root's set_env.sh, and whether this process was started with it applied.

CANN's libraries carry no RUNPATH: libacl_rt.so finds libascend_hal.so (driver
tree) and the rest of its dependencies only through LD_LIBRARY_PATH, which
set_env.sh sets (acl_abi.md 1.5, 1.8). The dynamic loader reads LD_LIBRARY_PATH
once, when the process starts, so what counts is the process's *initial*
environment (/proc/self/environ), not os.environ, which Python may have changed since.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..core.errors import HarnessConfigError

# Set by the harness when it re-executes a process with set_env.sh applied: the script's path.
# Guards against a re-exec loop and tells the run's properties where the environment came from.
APPLIED_MARK = "ACLNN_HARNESS_SET_ENV"
# Variables set_env.sh exports that a run records.
RECORDED_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
                 "LD_LIBRARY_PATH", "ASCEND_RT_VISIBLE_DEVICES")
DRIVER_SUBDIRS = ("lib64", "lib64/common", "lib64/driver")
DEFAULT_DRIVER = Path("/usr/local/Ascend/driver")


def set_env_script(root: Path) -> Path | None:
    """<root>/set_env.sh (CANN 8.5+ layout, software CANN), else the parent's (…/ascend-toolkit/set_env.sh
    for a root …/ascend-toolkit/latest), else None."""
    for path in (Path(root) / "set_env.sh", Path(root).parent / "set_env.sh"):
        if path.is_file():
            return path
    return None


def driver_root(root: Path) -> Path | None:
    """The driver tree next to a CANN root (…/Ascend/driver), inside it (software CANN), or the default."""
    root = Path(root)
    for path in (root / "driver", root.parent / "driver", root.parent.parent / "driver", DEFAULT_DRIVER):
        if (path / "lib64").is_dir():
            return path
    return None


def required_dirs(root: Path) -> list[Path]:
    """Directories that must be on LD_LIBRARY_PATH before the root's libraries can load:
    its lib64 and the driver's library directories that exist."""
    dirs = [Path(root) / "lib64"]
    driver = driver_root(root)
    if driver is not None:
        dirs += [driver / sub for sub in DRIVER_SUBDIRS if (driver / sub).is_dir()]
    return [d for d in dirs if d.is_dir()]


def startup_environment() -> dict[str, str]:
    """The environment this process started with (what the dynamic loader saw)."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:                     # not Linux /proc: os.environ is the best there is
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}


def startup_ld_library_path() -> list[str]:
    return [p for p in startup_environment().get("LD_LIBRARY_PATH", "").split(":") if p]


def missing_dirs(root: Path, ld_library_path: list[str] | None = None) -> list[Path]:
    """required_dirs(root) that are not on LD_LIBRARY_PATH (the start-up one by default)."""
    on_path = {os.path.realpath(p) for p in (startup_ld_library_path() if ld_library_path is None else ld_library_path)}
    return [d for d in required_dirs(root) if os.path.realpath(d) not in on_path]


def sourced_environment(script: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment after `source script` in bash, starting from `base` (os.environ by default)."""
    base = dict(os.environ if base is None else base)
    cmd = ["bash", "-c", 'source "$1" >/dev/null 2>&1 || exit 97; env -0', "bash", str(script)]
    try:
        r = subprocess.run(cmd, env=base, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise HarnessConfigError(f"could not source {script} with bash: {e}") from None
    if r.returncode != 0:
        raise HarnessConfigError(f"sourcing {script} with bash failed (exit status {r.returncode})")
    pairs = (item.split(b"=", 1) for item in r.stdout.split(b"\0") if b"=" in item)
    env = {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}
    for k in ("_", "SHLVL", "PWD", "OLDPWD"):       # bash's own bookkeeping, not set_env.sh's
        env.pop(k, None)
        if k in base:
            env[k] = base[k]
    return env


def how_applied(root: Path) -> str:
    """One phrase: how this process got the root's environment."""
    script = set_env_script(root)
    if missing_dirs(root):
        return "not applied"
    mark = startup_environment().get(APPLIED_MARK)
    if mark:
        return f"applied by the harness (re-exec with {mark})"
    return "applied by the caller (LD_LIBRARY_PATH already held the directories" + \
        (f"; e.g. `source {script}`)" if script else ")")


def not_applied_message(root: Path) -> str:
    """The one line that says which file to source."""
    missing = ", ".join(map(str, missing_dirs(root)))
    script = set_env_script(root)
    fix = f"run `source {script}` first (or use ./run, which applies it)" if script else \
        "this install has no set_env.sh: add its lib64 and driver directories to LD_LIBRARY_PATH"
    return (f"CANN at {root}: {missing} not on LD_LIBRARY_PATH at process start (the libraries have no "
            f"RUNPATH and the dynamic loader reads LD_LIBRARY_PATH only at start-up); {fix}")


def require_applied(root: Path) -> None:
    """HarnessConfigError (one line naming the set_env.sh to source) unless the root's library
    directories were on LD_LIBRARY_PATH when this process started."""
    if missing_dirs(root):
        raise HarnessConfigError(not_applied_message(root))


def facts(root: Path) -> dict[str, str]:
    """What a run records about its environment (also printed by the doctor)."""
    script = set_env_script(root)
    out = {"set_env_sh": str(script) if script else "(none)", "set_env_applied": how_applied(root)}
    out.update({k: os.environ.get(k, "<unset>") for k in RECORDED_VARS})
    out["LD_LIBRARY_PATH"] = ":".join(startup_ld_library_path()) or "<unset>"   # the one the loader used
    return out
