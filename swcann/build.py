"""Build the software CANN ("swcann") into a CANN-like install tree.

``build(asan=False)`` compiles ``swcann/src`` with ``$CC`` (default ``cc``) into
``<repo>/build/swcann/<content-hash>/`` and returns that root::

    lib64/libascendcl.so  lib64/libnnopbase.so  lib64/libopapi.so
    include/acl/acl.h  include/aclnn/acl_meta.h  include/aclnnop/*.h
    <arch>-linux/ascend_toolkit_install.info   swcann.info

The hash covers every source/header, this file, the compiler command and the
flags, so a tree is rebuilt only when something changed.  Concurrent callers
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


def _inputs() -> list[pathlib.Path]:
    files = [p for d in (SRC, INC) for p in d.rglob("*") if p.suffix in (".c", ".h")]
    return sorted(files) + [pathlib.Path(__file__).resolve()]


def _content_hash(cc: list[str], cflags: list[str]) -> str:
    h = hashlib.sha256()
    for p in _inputs():
        h.update(str(p.relative_to(PKG)).encode() + b"\0" + p.read_bytes() + b"\0")
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


def _build_into(root: pathlib.Path, cc: list[str], cflags: list[str], digest: str, asan: bool) -> None:
    lib64, obj = root / "lib64", root / "obj"
    lib64.mkdir()
    obj.mkdir()
    jobs = []  # (lib, source, object)
    for lib, dirs, _ in LIBS:
        for d in dirs:
            for src in sorted((SRC / d).glob("*.c")):
                jobs.append((lib, src, obj / f"{d}_{src.stem}.o"))
    compile_cmds = [cc + cflags + ["-I", str(INC), "-c", str(s), "-o", str(o)] for _, s, o in jobs]
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
        "soc_env": "SWCANN_SOC (default ascend910b)",
    }
    # written last: its presence marks a complete tree
    (root / "swcann.info").write_text("".join(f"{k}={v}\n" for k, v in info.items()))


def build(asan: bool = False) -> pathlib.Path:
    """Build (or reuse) the swcann install tree and return its root."""
    cc, cflags = _cc(), _cflags(asan)
    digest = _content_hash(cc, cflags) + ("-asan" if asan else "")
    parent = REPO / "build" / "swcann"
    root = parent / digest
    if (root / "swcann.info").is_file():
        return root
    parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".tmp-{digest}-", dir=parent))
    try:
        _build_into(tmp, cc, cflags, digest, asan)
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
