"""Build the software CANN ("swcann") into a tree laid out like a real CANN install.

``build(asan=False, op_dirs=None)`` compiles ``swcann/src`` with ``$CC`` (default ``cc``)
into ``<repo>/build/swcann/<content-hash>/`` and returns that root::

    set_env.sh                       what CANN's set_env.sh exports, for this tree
    lib64/libacl_rt.so               the runtime (aclInit, aclrt*); NEEDs libascend_hal.so
    lib64/libascendcl.so             compatibility name: NEEDs libacl_rt.so, implements nothing
    lib64/libnnopbase.so             aclnn meta objects; NEEDs libacl_rt.so
    lib64/libopapi_nn.so             the five pooling ops; NEEDs libnnopbase/libacl_rt and takes
                                     one symbol lazily from libopapi_math.so (no DT_NEEDED)
    lib64/libopapi_math.so
    driver/lib64/driver/libascend_hal.so   stand-in of the driver's HAL (a separate tree on a machine)
    include/acl/acl.h  include/aclnn/acl_meta.h  include/aclnnop/*.h
    opp/  <arch>-linux/ascend_toolkit_install.info   swcann.info

Like a real install (acl_abi.md 1.8) the libraries carry no RUNPATH and bind
lazily: their dependencies resolve only through LD_LIBRARY_PATH, which
``set_env.sh`` sets, so loading the tree without it fails as a real one does.

Extra operators: every ``*.c`` in each directory of ``op_dirs`` (default: the
``os.pathsep``-separated ``$SWCANN_OP_DIRS``) is compiled into libopapi_nn.so like the
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

import platforms
from platforms import PLATFORM_FILE, cheader

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
SMOKE = PKG / "tests" / "smoke.c"  # the C driver that exercises the ABI, lifetimes and leaks

BASE_CFLAGS = ["-O2", "-g", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror"]
ASAN_FLAGS = ["-fsanitize=address", "-fno-omit-frame-pointer"]
EXTRA_CFLAGS = ["-fvisibility=hidden", "-pthread"]  # export only ACL_FUNC_VISIBILITY symbols
# Where a library goes in the tree; the driver directory stands in for
# /usr/local/Ascend/driver/lib64/driver, which set_env.sh puts on LD_LIBRARY_PATH.
LIB64 = "lib64"
DRIVER_DIR = "driver"
DRIVER_LIB_DIRS = ("driver/lib64", "driver/lib64/common", "driver/lib64/driver")  # set_env.sh's three
_NEEDED = "-Wl,--no-as-needed"   # keep DT_NEEDED even where no symbol is taken from the library
# (directory in the tree, library, source sub-directories, link arguments, may leave symbols undefined)
LIBS = [
    ("driver/lib64/driver", "libascend_hal.so", ["driver"], [], False),
    (LIB64, "libacl_rt.so", ["core"], [_NEEDED, "-lascend_hal"], False),
    # compatibility library: DT_NEEDED on libacl_rt so dlsym(libascendcl, "aclInit") works (acl_abi.md 1.1)
    (LIB64, "libascendcl.so", ["compat"], [_NEEDED, "-lacl_rt"], False),
    (LIB64, "libnnopbase.so", ["meta"], [_NEEDED, "-lacl_rt"], False),
    (LIB64, "libopapi_math.so", ["opapi_math"], [], False),
    # DT_NEEDED on libnnopbase kept so dlsym(libopapi_nn, "aclCreateTensor") works (acl_abi.md 1.2);
    # swcannMathVersion stays undefined: bound lazily from libopapi_math.so
    (LIB64, "libopapi_nn.so", ["ops", "nn_link"], [_NEEDED, "-lnnopbase", "-lacl_rt", "-Wl,--as-needed", "-lm"],
     True),
]
# No -rpath: production CANN builds skip RPATH (acl_abi.md 1.8). -z lazy: functions bind at first call.
LDFLAGS = ["-shared", "-Wl,-z,lazy"]


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
    platform_files = [PLATFORM_FILE, pathlib.Path(platforms.__file__).resolve(), pathlib.Path(cheader.__file__).resolve()]
    return sorted(files) + platform_files + [pathlib.Path(__file__).resolve()]


def _render_headers(root: pathlib.Path) -> pathlib.Path:
    """The tree's include/ (acl.h's aclDataType enumerators written from platforms/platform.yaml) and a
    private gen/ directory holding swc_platform.h; returns gen/."""
    include = root / "include"
    shutil.copytree(INC, include)
    acl_h = include / "acl" / "acl.h"
    acl_h.write_text(cheader.render_acl_h(acl_h.read_text()))
    gen = root / "gen"
    gen.mkdir()
    (gen / "swc_platform.h").write_text(cheader.header())
    return gen


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
    obj = root / "obj"
    obj.mkdir()
    gen = _render_headers(root)
    jobs = []  # (lib, source, object)
    for _, lib, dirs, _, _ in LIBS:
        for d in dirs:
            for i, src in enumerate(_sources(d, op_dirs)):
                jobs.append((lib, src, obj / f"{d}_{i:03d}_{src.stem}.o"))
    op_inc = ["-I", str(SRC / OPS)]  # op files outside src/ops include "common.h" too
    compile_cmds = [cc + cflags + ["-I", str(root / "include"), "-I", str(gen)] + op_inc + ["-c", str(s), "-o", str(o)]
                    for _, s, o in jobs]
    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        for f in [pool.submit(_run, c) for c in compile_cmds]:
            f.result()
    lib_dirs = sorted({root / d for d, *_ in LIBS})
    for d in lib_dirs:
        d.mkdir(parents=True, exist_ok=True)
    # -L finds the direct dependencies, -rpath-link their own DT_NEEDED; neither is stored in the library
    search = [a for d in lib_dirs for a in ("-L", str(d), f"-Wl,-rpath-link,{d}")]
    for d, lib, _, deps, lazy_undefined in LIBS:  # in dependency order
        objs = [str(o) for l, _, o in jobs if l == lib]
        ldflags = LDFLAGS + ([] if lazy_undefined else ["-Wl,--no-undefined"])
        _run(cc + cflags + ldflags + [f"-Wl,-soname,{lib}", "-o", str(root / d / lib)] + objs + search + deps)
    shutil.rmtree(obj)
    shutil.rmtree(gen)
    (root / "opp").mkdir()          # ASCEND_OPP_PATH points here, as set_env.sh exports it
    for h in (h for d in op_dirs for h in sorted(d.glob("*.h"))):
        shutil.copy2(h, root / "include" / "aclnnop" / h.name)
    arch_dir = root / f"{platform.machine()}-linux"
    arch_dir.mkdir()
    (arch_dir / "ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={TOOLKIT_VERSION}\n"
        f"arch={platform.machine()}\nos=linux\nsoftware_cann=1\n")
    (root / "set_env.sh").write_text(_SET_ENV)
    info = {
        "software_cann": "1",
        "version": VERSION,
        "toolkit_version": TOOLKIT_VERSION,
        "content_hash": digest,
        "cc": " ".join(cc),
        "cflags": " ".join(cflags),
        "ldflags": " ".join(LDFLAGS),
        "asan": "1" if asan else "0",
        "op_dirs": os.pathsep.join(map(str, op_dirs)),
        "soc_env": f"SWCANN_SOC (default {platforms.SOFTWARE_CANN_DEFAULT})",
    }
    # written last: its presence marks a complete tree
    (root / "swcann.info").write_text("".join(f"{k}={v}\n" for k, v in info.items()))


# The variables CANN's runtime set_env.sh exports (acl_abi.md 1.5, 1.8), relative to the
# directory holding this file (the tree is built elsewhere and renamed into place).
# Idempotent: sourcing it twice does not grow LD_LIBRARY_PATH.
_SET_ENV = """# Software CANN (swcann) environment, written by swcann/build.py.
# Source it like CANN's own:  source <root>/set_env.sh   (bash)
_swcann_ver="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]:-$0}")")" && pwd)"
_swcann_prepend() {
    case ":${LD_LIBRARY_PATH:-}:" in
        *":$1:"*) ;;
        *) LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
}
for _swcann_d in driver/lib64/driver driver/lib64/common driver/lib64 lib64; do
    _swcann_prepend "$_swcann_ver/$_swcann_d"
done
export LD_LIBRARY_PATH
export ASCEND_HOME_PATH="$_swcann_ver"
export ASCEND_TOOLKIT_HOME="$_swcann_ver"
export ASCEND_OPP_PATH="$_swcann_ver/opp"
export ASCEND_AICPU_PATH="$_swcann_ver"
export TOOLCHAIN_HOME="$_swcann_ver/toolkit"
unset -f _swcann_prepend
unset _swcann_ver _swcann_d
"""


def expected_root(asan: bool = False, op_dirs=None) -> pathlib.Path:
    """Where build() puts (or finds) the tree for the current sources, built or not."""
    cc, cflags, dirs = _cc(), _cflags(asan), _op_dirs(op_dirs)
    return REPO / "build" / "swcann" / (_content_hash(cc, cflags, dirs) + ("-asan" if asan else ""))


def build(asan: bool = False, op_dirs=None) -> pathlib.Path:
    """Build (or reuse) the swcann install tree and return its root.

    op_dirs: directories of extra op sources; None reads $SWCANN_OP_DIRS."""
    dirs = _op_dirs(op_dirs)
    cc, cflags = _cc(), _cflags(asan)
    root = expected_root(asan, dirs)
    parent, digest = root.parent, root.name
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


def compile_smoke(root: pathlib.Path, out: pathlib.Path, extra: tuple[str, ...] = ()) -> pathlib.Path:
    """Compile the C smoke driver (tests/smoke.c) against a built tree; it runs with set_env.sh applied.

    Linked the way ops-nn's examples link (acl_abi.md 1.3), no RPATH.  Used by the project's
    tests and by ``harness.audit.mutate``, which runs it on a mutant that the case files let through.
    """
    lib = pathlib.Path(root) / "lib64"
    _run(_cc() + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", *extra, "-I", str(pathlib.Path(root) / "include"),
                  str(SMOKE), "-o", str(out), "-L", str(lib), "-lopapi_nn", "-lopapi_math", "-lnnopbase",
                  "-lacl_rt", f"-Wl,-rpath-link,{pathlib.Path(root) / LIBS[0][0]}", "-lm"])
    return pathlib.Path(out)


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
