"""Read a shared library's dynamic section and resolve its dependencies as ld.so would.

Enough of ELF for the doctor and the tests: SONAME, NEEDED, RPATH, RUNPATH and
the BIND_NOW flags, and a transitive lookup of every NEEDED name through
LD_LIBRARY_PATH, RUNPATH, the ld.so cache and the default directories, which
lists the same missing libraries ldd would ("libascend_hal.so => not found").
"""
from __future__ import annotations

import functools
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS, DT_FLAGS_1 = 1, 14, 15, 29, 30, 0x6FFFFFFB
DF_BIND_NOW, DF_1_NOW = 0x8, 0x1
SHT_DYNAMIC = 6
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")


class NotElfError(ValueError):
    pass


@dataclass
class DynamicInfo:
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    bind_now: bool = False


def read_dynamic(path) -> DynamicInfo:
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or len(data) < 64:
        raise NotElfError(f"{path} is not an ELF file")
    is64, endian = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(endian + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(endian + "HH", data, 0x3A)
        sh_fmt, dyn_fmt = endian + "IIQQQQIIQQ", endian + "qQ"
    else:
        shoff, = struct.unpack_from(endian + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(endian + "HH", data, 0x2E)
        sh_fmt, dyn_fmt = endian + "IIIIIIIIII", endian + "iI"
    sections = [struct.unpack_from(sh_fmt, data, shoff + i * shentsize) for i in range(shnum)]
    info = DynamicInfo()
    for sec in sections:
        if sec[1] != SHT_DYNAMIC:
            continue
        offset, size, link = sec[4], sec[5], sec[6]
        strtab = sections[link][4]

        def string(at: int) -> str:
            end = data.index(b"\0", strtab + at)
            return data[strtab + at:end].decode("utf-8", errors="replace")

        step = struct.calcsize(dyn_fmt)
        for at in range(offset, offset + size, step):
            tag, val = struct.unpack_from(dyn_fmt, data, at)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                info.needed.append(string(val))
            elif tag == DT_SONAME:
                info.soname = string(val)
            elif tag in (DT_RPATH, DT_RUNPATH):
                (info.rpath if tag == DT_RPATH else info.runpath).extend(p for p in string(val).split(":") if p)
            elif tag == DT_FLAGS and val & DF_BIND_NOW or tag == DT_FLAGS_1 and val & DF_1_NOW:
                info.bind_now = True
    return info


@functools.lru_cache(maxsize=1)
def _ld_cache() -> dict[str, str]:
    """soname -> path from `ldconfig -p` (empty when ldconfig is not available)."""
    exe = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if Path(p).exists()), None)
    if not exe:
        return {}
    try:
        out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    cache: dict[str, str] = {}
    for line in out.splitlines():
        name, sep, path = line.strip().partition(" => ")
        if sep:
            cache.setdefault(name.split(" (")[0], path.strip())
    return cache


def _expand(entry: str, origin: Path) -> str:
    return entry.replace("$ORIGIN", str(origin)).replace("${ORIGIN}", str(origin))


def find_library(name: str, ld_library_path: list[str], loader_info: DynamicInfo, origin: Path) -> str | None:
    """Where ld.so would find `name` NEEDed by an object with `loader_info` (in `origin`)."""
    if "/" in name:
        return name if Path(name).is_file() else None
    dirs = [] if loader_info.runpath else [_expand(p, origin) for p in loader_info.rpath]
    dirs += ld_library_path + [_expand(p, origin) for p in loader_info.runpath]
    for d in dirs:
        if d and (Path(d) / name).is_file():
            return str(Path(d) / name)
    cached = _ld_cache().get(name)
    if cached:
        return cached
    return next((str(Path(d) / name) for d in DEFAULT_DIRS if (Path(d) / name).is_file()), None)


def missing_dependencies(path, ld_library_path: list[str]) -> list[str]:
    """NEEDED names (transitively) that ld.so would not find, in the order ldd lists them."""
    seen, missing, queue = set(), [], [Path(path)]
    while queue:
        obj = queue.pop(0)
        try:
            info = read_dynamic(obj)
        except (OSError, NotElfError):
            continue
        for name in info.needed:
            if name in seen:
                continue
            seen.add(name)
            found = find_library(name, ld_library_path, info, obj.parent)
            if found is None:
                missing.append(name)
            else:
                queue.append(Path(found))
    return missing
