"""Find a CANN install and load its libraries the way torch_npu and op-plugin do.

Discovery follows what CANN users set up with set_env.sh (spec acl_abi.md 1.5,
1.7): the roots named by ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME, then the
default install locations in the order CANN's own resolver probes them (non-root
installs under ~/Ascend first). A root counts as found when it holds a runtime
library; a found root that lacks nnopbase or an op library is a broken
install and is reported, never silently skipped.

Loading (acl_abi.md 1.8): dlopen(RTLD_LAZY | RTLD_GLOBAL) by absolute path;
the libraries' own dependencies resolve through LD_LIBRARY_PATH, which the
caller must have had at process start (setenv.require_applied). Op libraries
in op-plugin's order: every libopapi_*.so, then libopapi.so, then the older
feature libraries, the later ones opened only when an entry point is not found.
"""
from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import HarnessConfigError
from . import abi, dl

ROOT_ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
# RT:example/common/resolve_cann_env.sh's order (acl_abi.md 1.5): a non-root install lives under ~/Ascend
DEFAULT_ROOTS = (os.path.expanduser("~/Ascend/cann"), os.path.expanduser("~/Ascend/ascend-toolkit/latest"),
                 "/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest", "/opt/Ascend/cann")

# CANN 9 recommends libacl_rt.so and keeps libascendcl.so as a compatibility library (acl_abi.md 1.8)
RUNTIME_NAMES = ("libacl_rt.so", "libascendcl.so")
NNOPBASE_NAME = "libnnopbase.so"
OPAPI_SPLIT_GLOB = "libopapi_*.so"                    # one per operator repo: libopapi_nn.so holds the pooling ops
OPAPI_NN = "libopapi_nn.so"                           # ops-nn: holds the five pooling ops
OPAPI_LEGACY = "libopapi.so"                          # aggregate library of older CANN
OPAPI_FEATURE = ("libaclnn_ops_infer.so", "libaclnn_ops_train.so", "libaclnn_math.so",
                 "libaclnn_sparse.so", "libaclnn_fft.so", "libaclnn_rand.so")   # oldest layout


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


def op_library_candidates(root: Path, tried: list[str]) -> tuple[list[Path], list[Path]]:
    """(split libraries, fallbacks) in op-plugin's search order (acl_abi.md 1.4). op-plugin takes
    the split libraries in directory order; they are sorted here so that runs are reproducible."""
    split: list[Path] = []
    seen: set[str] = set()
    for d in lib_dirs(root):
        tried.append(str(d / OPAPI_SPLIT_GLOB))
        for p in sorted(p for p in d.glob(OPAPI_SPLIT_GLOB) if p.is_file()):
            # a real install's lib64 is a link to <arch>-linux/lib64: one library, listed once
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                split.append(p)
    fallbacks = [p for p in (_find_first(root, (name,), tried) for name in (OPAPI_LEGACY, *OPAPI_FEATURE)) if p]
    return split, fallbacks


def library_paths(root: Path) -> list[Path]:
    """Every library load() could open from `root`, in its order: the runtime names, nnopbase,
    then the op libraries (for the doctor, which inspects them without loading)."""
    tried: list[str] = []
    runtime = [p for p in (_find_first(root, (n,), tried) for n in RUNTIME_NAMES) if p]
    nnopbase = [p for p in (_find_first(root, (NNOPBASE_NAME,), tried),) if p]
    split, fallbacks = op_library_candidates(root, tried)
    return runtime + nnopbase + split + fallbacks


@dataclass
class Libraries:
    root: Path
    runtime_path: Path
    nnopbase_path: Path
    opapi_paths: list[Path]                 # op libraries opened so far, in search order
    runtime: ctypes.CDLL
    nnopbase: ctypes.CDLL
    opapi: list[ctypes.CDLL]
    opapi_pending: list[Path] = field(default_factory=list)   # fallbacks, opened only when needed

    @property
    def is_software_cann(self) -> bool:
        """The software CANN exports swcann* extensions; real CANN never does."""
        return hasattr(self.runtime, "swcannGetStats")

    def op_function(self, name: str):
        """An aclnn entry point from the op libraries (first in search order that exports it), or None.
        Fallback libraries are opened one by one only while the name is still not found."""
        for lib in self.opapi:
            try:
                return getattr(lib, name)
            except AttributeError:
                continue
        while self.opapi_pending:
            path = self.opapi_pending.pop(0)
            lib = _open(path)
            self.opapi.append(lib)
            self.opapi_paths.append(path)
            if hasattr(lib, name):
                return getattr(lib, name)
        return None

    def provider(self, name: str) -> Path | None:
        """Path of the op library that exports `name` (after op_function found it)."""
        for path, lib in zip(self.opapi_paths, self.opapi):
            if hasattr(lib, name):
                return path
        return None

    @property
    def pooling_library(self) -> Path:
        """The library the run names: the five ops are ops-nn ops (acl_abi.md 1.3), so libopapi_nn.so
        when present, else the first op library opened."""
        return next((p for p in self.opapi_paths if p.name == OPAPI_NN), self.opapi_paths[0])

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
        return dl.open_library(path)
    except dl.DlopenError as e:
        raise HarnessConfigError(f"cannot load {path}: {e} (its dependencies resolve only through "
                                 f"LD_LIBRARY_PATH, which set_env.sh sets)") from None


def load(found: Discovery) -> Libraries:
    """Load runtime -> nnopbase -> op libraries from the discovered root, by absolute path."""
    if found.root is None:
        raise HarnessConfigError(f"no CANN found (no {' or '.join(RUNTIME_NAMES)}); {found.describe_search()}")
    root, tried = found.root, found.tried
    runtime_path = _find_first(root, RUNTIME_NAMES, tried)
    nnopbase_path = _find_first(root, (NNOPBASE_NAME,), tried)
    split, fallbacks = op_library_candidates(root, tried)
    missing = [n for n, p in ((NNOPBASE_NAME, nnopbase_path),
                              (f"{OPAPI_SPLIT_GLOB}, {OPAPI_LEGACY} or {OPAPI_FEATURE[0]}", split + fallbacks))
               if not p]
    if runtime_path is None or missing:
        raise HarnessConfigError(f"CANN root {root} (from {found.source}) lacks {', '.join(missing)}; "
                                 f"{found.describe_search()}")
    runtime = _open(runtime_path)
    _apply_prototypes(runtime, runtime_path, "runtime")
    nnopbase = _open(nnopbase_path)
    _apply_prototypes(nnopbase, nnopbase_path, "nnopbase")
    first = split or fallbacks[:1]       # every split library up front, as op-plugin does
    pending = fallbacks[len(first) if not split else 0:]
    return Libraries(root, runtime_path, nnopbase_path, list(first), runtime, nnopbase,
                     [_open(p) for p in first], pending)


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
