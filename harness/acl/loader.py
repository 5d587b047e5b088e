"""Find a CANN install and load its three libraries by absolute path.

Discovery follows what CANN users set up with set_env.sh (spec acl_abi.md 1.5,
1.7): the roots named by ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME, then the two
default install locations. A root counts as found when it holds a runtime
library; a found root that lacks nnopbase or an opapi library is a broken
install and is reported, never silently skipped.
"""
from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HarnessConfigError
from . import abi

ROOT_ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
DEFAULT_ROOTS = ("/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest")

RUNTIME_NAMES = ("libascendcl.so", "libacl_rt.so")     # libacl_rt: the newer split runtime
NNOPBASE_NAME = "libnnopbase.so"
OPAPI_SPLIT = ("libopapi_nn.so", "libopapi_math.so")  # nn holds the pooling ops; math if present
OPAPI_LEGACY = "libopapi.so"                          # aggregate library of older CANN


def arch_dir() -> str:
    """'<arch>-linux', the per-architecture directory of a CANN root (x86_64-linux, aarch64-linux)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine) + "-linux"


def lib_dirs(root: Path) -> list[Path]:
    return [root / "lib64", root / arch_dir() / "lib64"]


@dataclass
class Discovery:
    """Where discovery looked and what it found."""
    root: Path | None
    source: str | None                      # env var name or "default location"
    env: dict[str, str | None]              # the env vars read, with their values
    tried: list[str] = field(default_factory=list)   # every path looked at

    def describe_search(self) -> str:
        env = ", ".join(f"{k}={v if v is not None else '<unset>'}" for k, v in self.env.items())
        tried = list(dict.fromkeys(self.tried))    # load() may look at a path again
        return f"env: {env}; paths tried: {', '.join(tried) or 'none'}"


def _find_first(root: Path, names, tried: list[str]) -> Path | None:
    for name in names:
        for d in lib_dirs(root):
            path = d / name
            tried.append(str(path))
            if path.is_file():
                return path
    return None


def discover(env=None, defaults=None) -> Discovery:
    """First root (env vars in order, then defaults) that holds a runtime library."""
    env = os.environ if env is None else env
    defaults = DEFAULT_ROOTS if defaults is None else defaults
    read = {name: env.get(name) for name in ROOT_ENV_VARS}
    found = Discovery(None, None, read)
    candidates = [(v, k) for k, v in read.items() if v] + [(d, "default location") for d in defaults]
    for value, source in candidates:
        root = Path(value)
        if _find_first(root, RUNTIME_NAMES, found.tried):
            found.root, found.source = root.resolve(), source
            return found
    return found


@dataclass
class Libraries:
    root: Path
    runtime_path: Path
    nnopbase_path: Path
    opapi_paths: list[Path]
    runtime: ctypes.CDLL
    nnopbase: ctypes.CDLL
    opapi: list[ctypes.CDLL]

    @property
    def is_software_cann(self) -> bool:
        """The software CANN exports swcann* extensions; real CANN never does."""
        return hasattr(self.runtime, "swcannGetStats")

    def op_function(self, name: str):
        """An aclnn entry point from the opapi libraries (first that exports it), or None."""
        for lib in self.opapi:
            try:
                return getattr(lib, name)
            except AttributeError:
                continue
        return None

    def paths(self) -> dict[str, str]:
        return {"root": str(self.root), "runtime": str(self.runtime_path),
                "nnopbase": str(self.nnopbase_path), "opapi": ", ".join(map(str, self.opapi_paths))}


def _apply_prototypes(lib: ctypes.CDLL, path: Path, group: str) -> None:
    missing = []
    for name, proto in abi.PROTOTYPES[group].items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if not proto["optional"]:
                missing.append(name)
            continue
        fn.restype, fn.argtypes = proto["restype"], proto["argtypes"]
    if missing:
        raise HarnessConfigError(f"{path} does not export {', '.join(missing)} — not a usable CANN {group} library")


def _open(path: Path) -> ctypes.CDLL:
    try:
        # RTLD_GLOBAL: libnnopbase / libopapi resolve runtime symbols against what is already loaded
        return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise HarnessConfigError(f"cannot load {path}: {e} (its dependencies may need LD_LIBRARY_PATH "
                                 f"from set_env.sh)") from None


def load(found: Discovery) -> Libraries:
    """Load runtime -> nnopbase -> opapi from the discovered root, by absolute path."""
    if found.root is None:
        raise HarnessConfigError(f"no CANN found (no {' or '.join(RUNTIME_NAMES)}); {found.describe_search()}")
    root, tried = found.root, found.tried
    runtime_path = _find_first(root, RUNTIME_NAMES, tried)
    nnopbase_path = _find_first(root, (NNOPBASE_NAME,), tried)
    nn = _find_first(root, OPAPI_SPLIT[:1], tried)
    if nn is not None:
        math = _find_first(root, OPAPI_SPLIT[1:], tried)
        opapi_paths = [nn] + ([math] if math else [])
    else:
        legacy = _find_first(root, (OPAPI_LEGACY,), tried)
        opapi_paths = [legacy] if legacy else []
    missing = [n for n, p in ((NNOPBASE_NAME, nnopbase_path), (f"{OPAPI_SPLIT[0]} or {OPAPI_LEGACY}", opapi_paths))
               if not p]
    if runtime_path is None or missing:
        raise HarnessConfigError(f"CANN root {root} (from {found.source}) lacks {', '.join(missing)}; "
                                 f"{found.describe_search()}")
    runtime = _open(runtime_path)
    _apply_prototypes(runtime, runtime_path, "runtime")
    nnopbase = _open(nnopbase_path)
    _apply_prototypes(nnopbase, nnopbase_path, "nnopbase")
    opapi = [_open(p) for p in opapi_paths]
    return Libraries(root, runtime_path, nnopbase_path, opapi_paths, runtime, nnopbase, opapi)


def cann_version(root: Path) -> str:
    """Toolkit version: <arch>-linux/ascend_toolkit_install.info, else version.cfg, else 'unknown'."""
    for path in (root / arch_dir() / "ascend_toolkit_install.info", root / "version.cfg"):
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        pairs = [ln.split("=", 1) for ln in lines if "=" in ln]
        values = {k.strip(): v.strip() for k, v in pairs}
        if values.get("version"):
            return values["version"]
        # version.cfg of older toolkits: e.g. runtime_running_version=[7.0.0:...]
        for k, v in pairs:
            if k.strip().endswith("version") and v.strip():
                return v.strip().strip("[]").split(":")[0]
    return "unknown"
