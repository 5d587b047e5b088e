"""Which CANN a run uses, and the process environment it needs, decided before any library loads.

A real CANN's libraries resolve their dependencies only through LD_LIBRARY_PATH
as it was when the process started (acl_abi.md 1.8). So the process that
will load them (the pytest controller; xdist workers inherit its environment)
checks the chosen root first and, when set_env.sh was not applied, either
re-executes itself with the variables of that set_env.sh (announced on stderr)
or stops with one line naming the file to source. The software CANN is built
like a real install and goes through exactly the same path.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from platforms import SOFTWARE_CANN_DEFAULT

from ..acl import loader, setenv
from ..core import families
from ..core.errors import HarnessConfigError

# Why the software CANN was built, carried across the re-exec into the run's properties.
FALLBACK_MARK = "ACLNN_HARNESS_SW_FALLBACK"
# Set to 1 to make a missing environment an error instead of a re-exec.
NO_REEXEC_VAR = "ACLNN_NO_REEXEC"


def is_software_tree(root: Path | None) -> bool:
    """A tree built by swcann/build.py (its marker file; the loaded library says so again: swcann* exports)."""
    return root is not None and (Path(root) / "swcann.info").is_file()


def software_cann_root(build: bool = True) -> Path | None:
    """The software CANN tree for the current sources: built if needed (build=True), else the
    existing tree or None. A failed build is a one-line HarnessConfigError."""
    try:
        from swcann import build as swbuild
    except ImportError as e:
        raise HarnessConfigError(f"no CANN found and the software CANN is not available ({e})") from None
    if not build:
        root = swbuild.expected_root()
        return root if is_software_tree(root) else None
    try:
        return swbuild.build()
    except Exception as e:   # a compiler error is a setup problem: one line, not a traceback
        text = " ".join(str(e).split()) or type(e).__name__      # one line, however long the compiler talked
        raise HarnessConfigError(f"no CANN found and building the software CANN failed: {text[:1500]}") from None


_SEARCH = "; env: "     # a fallback reason is its headline, then loader's describe_search() ("env: ...")


def fallback_headline(reason: str) -> str:
    """A fallback reason without the paths tried: one short line for a run's header."""
    return reason.split(_SEARCH, 1)[0]


def choose_root(no_sw_fallback: bool) -> tuple[loader.Discovery, str | None]:
    """Discover a CANN; with none, build the software CANN and discover *that* the same way (as if
    ASCEND_HOME_PATH pointed at it; the variable is exported so child processes find the same root).
    Returns (discovery, why the software CANN was built or None)."""
    found = loader.discover()
    if found.root is not None:
        carried = os.environ.get(FALLBACK_MARK) if is_software_tree(found.root) else None
        return found, carried
    if no_sw_fallback:
        raise HarnessConfigError(f"--no-sw-fallback: no CANN found; {found.describe_search()}")
    named = [f"{k}={v}" for k, v in found.env.items() if v]
    ignored = f"{', '.join(named)} holds no CANN runtime library, so it was ignored; " if named else ""
    fallback = f"{ignored}no CANN found, built the software CANN; {found.describe_search()}"
    built = software_cann_root()
    os.environ["ASCEND_HOME_PATH"] = str(built)
    os.environ[FALLBACK_MARK] = fallback      # child processes find the built root, and must still say why
    found = loader.discover()
    if found.root is None:
        raise HarnessConfigError(f"the software CANN built at {built} has no runtime library; "
                                 f"{found.describe_search()}")
    return found, fallback


def prepare_process(no_sw_fallback: bool, allow_reexec: bool = True, before_exec=None) -> None:
    """Make sure this process can load the chosen CANN: return when its library directories were on
    LD_LIBRARY_PATH at start-up; otherwise re-exec with its set_env.sh applied (never twice), or raise
    HarnessConfigError with the one line that says which file to source."""
    found, fallback = choose_root(no_sw_fallback)
    root = found.root
    if not setenv.missing_dirs(root):
        return
    script = setenv.set_env_script(root)
    applied = os.environ.get(setenv.APPLIED_MARK)
    if applied and applied == str(script):   # we are the re-exec'd process and it still does not hold: no loop
        raise HarnessConfigError(f"{setenv.not_applied_message(root)} [this process was already re-executed "
                                 f"with {applied} applied]")
    if script is None or not allow_reexec or os.environ.get(NO_REEXEC_VAR) == "1":
        raise HarnessConfigError(setenv.not_applied_message(root))
    env = setenv.sourced_environment(script)
    lib_path = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    still = setenv.missing_dirs(root, lib_path)
    if still:
        raise HarnessConfigError(f"{script} does not put {', '.join(map(str, still))} on LD_LIBRARY_PATH; "
                                 f"add them yourself before starting the run")
    env[setenv.APPLIED_MARK] = str(script)
    if fallback:
        env[FALLBACK_MARK] = fallback
    kind = "software CANN" if is_software_tree(root) else "CANN"
    print(f"*** {kind} at {root}: its libraries need set_env.sh (no RUNPATH, LD_LIBRARY_PATH is read at "
          f"start-up); re-executing with {script} applied ***", file=sys.stderr, flush=True)
    if before_exec is not None:
        before_exec()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


SOC_VARIABLE = "SWCANN_SOC"      # the software CANN's SoC, read at every aclInit (swcann/README.md)
DEFAULT_SOFTWARE_FAMILY = SOFTWARE_CANN_DEFAULT      # what the software CANN simulates when SWCANN_SOC is unset


def hand_over_soc(requested: str | None) -> str:
    """Tell the software CANN which SoC to be, before its aclInit: the one handshake, SWCANN_SOC (a real
    CANN's SoC is its hardware's; nothing is handed over there). --soc sets it. A value inherited from
    the environment is kept only where it names the same family as --soc, or where no --soc was given
    (then it is how a user picks a full SoC name, e.g. Ascend910B3); one that disagrees with --soc is
    refused in one line, never silently overridden or obeyed. Returns the value in effect."""
    inherited = os.environ.get(SOC_VARIABLE)
    if inherited and requested:
        try:
            named = inherited if inherited in families.FAMILIES else families.family_of_soc_name(inherited)
        except families.UnknownSocError:
            named = None
        if named != requested:
            raise HarnessConfigError(
                f"{SOC_VARIABLE}={inherited} (inherited from the environment) asks the software CANN for "
                f"{named or 'an unknown SoC'}, but --soc {requested} was requested: unset {SOC_VARIABLE} "
                f"or drop --soc")
        return inherited
    if not inherited:
        os.environ[SOC_VARIABLE] = requested or DEFAULT_SOFTWARE_FAMILY
    return os.environ[SOC_VARIABLE]
