"""The identity of a run: what produced its results, and how to tell two runs apart.

It heads summary.json, report.html and every merged report: which library (paths and sha256),
which SoC, simulated or hardware, every simulator switch, the suite's git commit, the hashes of
the case files, start and end time and the command line.
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import os
import platform
import shlex
import subprocess
from pathlib import Path

from ..target import Target

# Environment variables that change what the software CANN (or a real CANN) does: part of the
# identity, and of every repro command, because a rerun without them would not reproduce.
SWITCH_PREFIXES = ("SWCANN_",)
SWITCH_NAMES = ("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH")
LIBRARY_KEYS = ("runtime", "nnopbase", "opapi")


@functools.lru_cache(maxsize=64)
def _sha256_cached(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_file(path) -> str | None:
    """Hex digest, or None when the path is not a readable file (a library that moved, a torch name)."""
    try:
        st = os.stat(path)
        return _sha256_cached(str(path), st.st_mtime_ns, st.st_size) if os.path.isfile(path) else None
    except OSError:
        return None


def library_paths(target: Target) -> dict[str, str]:
    """role -> path of each library a backend loaded (aclnn: runtime, nnopbase, opapi; several
    op libraries, listed with ', ', become opapi, opapi_2, ...)."""
    out = {}
    for key in LIBRARY_KEYS:
        for n, path in enumerate(p.strip() for p in target.detail(key).split(", ") if p.strip()):
            out[key if n == 0 else f"{key}_{n + 1}"] = path
    if not out and target.library and os.path.isfile(target.library):
        out["library"] = target.library
    return out


def library_hashes(target: Target) -> dict[str, str | None]:
    """path -> sha256 of every library the target names."""
    return {path: sha256_file(path) for path in library_paths(target).values()}


def switches(environ=None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env) if k.startswith(SWITCH_PREFIXES) or k in SWITCH_NAMES}


def git_commit(root: Path) -> str:
    """HEAD of the suite's checkout, '+dirty' when tracked files differ; 'unknown' outside git."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def case_file_hashes(paths, root: Path | None = None) -> dict[str, str | None]:
    """{path: sha256} of the case files and ATK lists a run read, each path relative to the
    checkout when it lies inside it (cases/x.yaml), else absolute (a list beside it)."""
    def key(p: Path) -> str:
        try:
            return str(Path(p).resolve().relative_to(Path(root).resolve())) if root is not None else Path(p).name
        except ValueError:
            return str(p)
    return {key(p): sha256_file(p) for p in sorted(paths, key=str)}


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def collect(target: Target, *, root: Path, case_files, argv: list[str], started: str, ended: str | None = None,
            environ=None, extra: dict | None = None) -> dict:
    """The identity dict of one run on `target`."""
    env_switches = switches(environ)
    return {
        "backend": target.backend,
        "simulated": target.simulated,
        "soc_name": target.soc_name,
        "family": target.family or "",
        "cann_version": target.version,
        "device": target.device,
        "libraries": library_paths(target),
        "library_sha256": library_hashes(target),
        "software_cann": target.software_cann,
        "switches": env_switches,
        "suite_commit": git_commit(root),
        "case_files": case_file_hashes(case_files, root),
        "started": started,
        "ended": ended,
        "command": shlex.join(argv),
        "cwd": str(Path.cwd()),
        "host": platform.node(),
        "python": platform.python_version(),
        "backend_properties": target.to_wire(),
        **(extra or {}),
    }


def opapi_hash(identity: dict) -> str | None:
    """The hash that names 'which operator libraries': of the libopapi* files where there are some
    (one: its own sha256), else of every library."""
    libs, hashes = identity.get("libraries") or {}, identity.get("library_sha256") or {}
    paths = [p for role, p in sorted(libs.items()) if role.startswith("opapi")] or [p for _, p in sorted(libs.items())]
    shas = [hashes.get(p) for p in paths]
    if not shas or None in shas:
        return None
    return shas[0] if len(shas) == 1 else hashlib.sha256("".join(shas).encode()).hexdigest()
