"""Build the software CANN ("swcann") into a CANN-like install tree.

``build(asan=False, op_dirs=None)`` compiles ``swcann/src`` with ``$CC`` (default ``cc``)
into ``<repo>/build/swcann/<content-hash>/`` and returns that root::

    lib64/libascendcl.so  lib64/libnnopbase.so  lib64/libopapi.so
    include/acl/acl.h  include/aclnn/acl_meta.h  include/aclnnop/*.h
    <arch>-linux/ascend_toolkit_install.info   swcann.info

Extra operators: every ``*.c`` in each directory of ``op_dirs`` (default: the
``os.pathsep``-separated ``$SWCANN_OP_DIRS``) is compiled into libopapi.so like the
files of ``src/ops/`` (it includes ``"common.h"`` / ``"pool_kernels.h"``), and a ``*.h``
beside it is installed into ``include/aclnnop/``.  Nothing else needs editing to add an op.

The hash covers every source/header (op directories included), this file, the
compiler command and the flags, so a tree is rebuilt only when something changed.  Concurrent callers
(pytest-xdist workers) each build in a private temp dir and publish it with an
atomic ``os.rename``; the loser of the race discards its copy and uses the
winner's tree.  ``python -m swcann.build [--asan]`` prints the root.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

VERSION = "0.1.0"
# what a real install's ascend_toolkit_install.info would carry; swcann models
# the CANN master snapshot the spec was read from (CANN 9.x era, acl_abi.md)
TOOLKIT_VERSION = "9.0.0-swcann"

PKG = pathlib.Path(__file__).resolve().parent
REPO = PKG.parent
SRC = PKG / "src"
INC = PKG / "include"
OPS = "ops"  # the sub-directory of src/ whose library op directories add to
OP_DIRS_ENV = "SWCANN_OP_DIRS"

BASE_CFLAGS = ["-O2", "-g", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror"]
ASAN_FLAGS = ["-fsanitize=address", "-fno-omit-frame-pointer"]
EXTRA_CFLAGS = ["-fvisibility=hidden", "-pthread"]  # export only ACL_FUNC_VISIBILITY symbols
# (library, source sub-directories, libraries it links against)
LIBS = [
    ("libascendcl.so", ["core"], []),
    ("libnnopbase.so", ["meta"], ["-Wl,--no-as-needed", "-lascendcl", "-Wl,--as-needed"]),
    # DT_NEEDED on libnnopbase kept so dlsym(libopapi, "aclCreateTensor") works (acl_abi.md 1.2)
    ("libopapi.so", ["ops"], ["-Wl,--no-as-needed", "-lnnopbase", "-lascendcl", "-Wl,--as-needed",
                              "-lm"]),
]


class BuildError(RuntimeError):
    """Compilation of the software CANN failed."""


def _cc() -> list[str]:
    return shlex.split(os.environ.get("CC") or "cc")


def _cflags(asan: bool) -> list[str]:
    return BASE_CFLAGS + (ASAN_FLAGS if asan else []) + EXTRA_CFLAGS


def _op_dirs(op_dirs) -> list[pathlib.Path]:
    if op_dirs is None:
        op_dirs = [d for d in os.environ.get(OP_DIRS_ENV, "").split(os.pathsep) if d]
    dirs = [pathlib.Path(d).resolve() for d in op_dirs]
    for d in dirs:
        if not d.is_dir():
            raise BuildError(f"swcann build failed: op directory {d} (from build(op_dirs=...) or "
                             f"${OP_DIRS_ENV}) is not a directory")
    return dirs


def _sources(sub: str, op_dirs: list[pathlib.Path]) -> list[pathlib.Path]:
    srcs = sorted((SRC / sub).glob("*.c"))
    return srcs + [p for d in op_dirs for p in sorted(d.glob("*.c"))] if sub == OPS else srcs


def _inputs(op_dirs: list[pathlib.Path] = ()) -> list[pathlib.Path]:
    files = [p for d in (SRC, INC, *op_dirs) for p in d.rglob("*") if p.suffix in (".c", ".h")]
    return sorted(files) + [pathlib.Path(__file__).resolve()]


def _content_hash(cc: list[str], cflags: list[str], op_dirs: list[pathlib.Path] = ()) -> str:
    h = hashlib.sha256()
    for p in _inputs(op_dirs):
        name = str(p.relative_to(PKG)) if p.is_relative_to(PKG) else str(p)
        h.update(name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(("\0".join(cc) + "\n" + " ".join(cflags)).encode())
    return h.hexdigest()[:16]


def _run(cmd: list[str]) -> None:
    line = " ".join(shlex.quote(c) for c in cmd)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:  # compiler missing / not executable
        raise BuildError(f"swcann build failed: could not run the compiler command `{line}` ({e}); "
                         f"set $CC to a working C11 compiler (gcc 12 is the reference).") from None
    if r.returncode != 0:
        err = (r.stderr or r.stdout or "(no output)").strip()
        raise BuildError(f"swcann build failed: the compiler command `{line}` exited with status "
                         f"{r.returncode}; its stderr was: {err}")


def _build_into(root: pathlib.Path, cc: list[str], cflags: list[str], digest: str, asan: bool,
                op_dirs: list[pathlib.Path]) -> None:
    lib64, obj = root / "lib64", root / "obj"
    lib64.mkdir()
    obj.mkdir()
    jobs = []  # (lib, source, object)
    for lib, dirs, _ in LIBS:
        for d in dirs:
            for i, src in enumerate(_sources(d, op_dirs)):
                jobs.append((lib, src, obj / f"{d}_{i:03d}_{src.stem}.o"))
    op_inc = ["-I", str(SRC / OPS)]  # op files outside src/ops include "common.h" too
    compile_cmds = [cc + cflags + ["-I", str(INC)] + op_inc + ["-c", str(s), "-o", str(o)]
                    for _, s, o in jobs]
    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        for f in [pool.submit(_run, c) for c in compile_cmds]:
            f.result()
    ldflags = ["-shared", "-Wl,--no-undefined", "-Wl,-rpath,$ORIGIN"]
    for lib, _, deps in LIBS:  # in dependency order
        objs = [str(o) for l, _, o in jobs if l == lib]
        _run(cc + cflags + ldflags + [f"-Wl,-soname,{lib}", "-o", str(lib64 / lib)] + objs +
             ["-L", str(lib64)] + deps)
    shutil.rmtree(obj)
    shutil.copytree(INC, root / "include")
    for h in (h for d in op_dirs for h in sorted(d.glob("*.h"))):
        shutil.copy2(h, root / "include" / "aclnnop" / h.name)
    arch_dir = root / f"{platform.machine()}-linux"
    arch_dir.mkdir()
    (arch_dir / "ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={TOOLKIT_VERSION}\n"
        f"arch={platform.machine()}\nos=linux\nsoftware_cann=1\n")
    info = {
        "software_cann": "1",
        "version": VERSION,
        "toolkit_version": TOOLKIT_VERSION,
        "content_hash": digest,
        "cc": " ".join(cc),
        "cflags": " ".join(cflags),
        "ldflags": " ".join(ldflags),
        "asan": "1" if asan else "0",
        "op_dirs": os.pathsep.join(map(str, op_dirs)),
        "soc_env": "SWCANN_SOC (default ascend910b)",
    }
    # written last: its presence marks a complete tree
    (root / "swcann.info").write_text("".join(f"{k}={v}\n" for k, v in info.items()))


def build(asan: bool = False, op_dirs=None) -> pathlib.Path:
    """Build (or reuse) the swcann install tree and return its root.

    op_dirs: directories of extra op sources; None reads $SWCANN_OP_DIRS."""
    cc, cflags, dirs = _cc(), _cflags(asan), _op_dirs(op_dirs)
    digest = _content_hash(cc, cflags, dirs) + ("-asan" if asan else "")
    parent = REPO / "build" / "swcann"
    root = parent / digest
    if (root / "swcann.info").is_file():
        return root
    parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".tmp-{digest}-", dir=parent))
    try:
        _build_into(tmp, cc, cflags, digest, asan, dirs)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        os.rename(tmp, root)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (root / "swcann.info").is_file():  # not a lost race: a real failure
            raise
    return root


def read_info(root: pathlib.Path) -> dict[str, str]:
    """Parse ``swcann.info`` of a built tree."""
    out = {}
    for line in (pathlib.Path(root) / "swcann.info").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        print(build(asan="--asan" in args))
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
