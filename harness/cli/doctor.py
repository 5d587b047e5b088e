"""`./run doctor` / `python -m harness doctor`: the facts of this machine's CANN set-up, without running a case.

For bug reports: which roots were searched, which set_env.sh belongs to the
chosen root and whether this process has it applied, every library the loader
would open (path, soname, RUNPATH, what ld.so would not find, now and with
set_env.sh applied), the CANN version, and what the runtime itself reports (SoC
name and family, device count), asked from a child process that has the
environment a case run would have. Runs report the same facts in their
properties (setenv.facts).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..target import discovery as environment
from ..core import families
from ..acl import elf, loader, runtime, setenv
from ..core.errors import HarnessConfigError
from ..core.paths import REPO_ROOT




def _roots_searched(found: loader.Discovery) -> str:
    parts = [f"{k}={v if v is not None else '<unset>'}" for k, v in found.env.items()]
    for d in loader.DEFAULT_ROOTS:
        parts.append(f"{d} ({'present' if Path(d).is_dir() else 'absent'})")
    return ", ".join(parts)


def _library_lines(path: Path, ld_now: list[str], ld_applied: list[str] | None) -> list[str]:
    try:
        info = elf.read_dynamic(path)
    except (OSError, elf.NotElfError) as e:
        return [f"  {path}: unreadable ({e})"]
    now = elf.missing_dependencies(path, ld_now)
    lines = [f"  {path}",
             f"    soname={info.soname or '(none)'} runpath={':'.join(info.runpath) or '(none)'} "
             f"rpath={':'.join(info.rpath) or '(none)'} bind_now={'yes' if info.bind_now else 'no'}",
             f"    needs: {', '.join(info.needed) or '(nothing)'}",
             f"    not found with this process's LD_LIBRARY_PATH: {', '.join(now) or 'none'}"]
    if ld_applied is not None:
        later = elf.missing_dependencies(path, ld_applied)
        lines.append(f"    not found with set_env.sh applied: {', '.join(later) or 'none'}")
    return lines


def _probe(env: dict[str, str]) -> dict:
    """SoC name, family, device count as the runtime reports them, from a child with `env`."""
    code = "from harness.cli.doctor import probe_main; probe_main()"
    env = {**env, "PYTHONPATH": str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")}
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": f"probe did not run: {e}"}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = " ".join((r.stderr or r.stdout).split())[-400:]
        return {"error": f"probe exited with {r.returncode}: {tail}"}
    return json.loads(lines[-1])


def probe_main() -> None:
    """In the child: load as a case run would, aclInit, read device count and SoC name, aclFinalize."""
    import ctypes
    out: dict = {}
    try:
        found = loader.discover()
        libs = loader.load(found)
        rt = libs.runtime
        ret = rt.aclInit(None)
        out["aclInit"] = ret
        count = ctypes.c_uint32(0)
        out["aclrtGetDeviceCount"] = rt.aclrtGetDeviceCount(ctypes.byref(count))
        out["device_count"] = count.value
        raw = rt.aclrtGetSocName()
        out["soc_name"] = raw.decode("utf-8", errors="replace") if raw else None
        if not raw:
            out["message"] = runtime.recent_error(libs)
        out["software_cann"] = libs.is_software_cann
        out["op_libraries"] = [str(p) for p in libs.opapi_paths]
        if ret == 0:
            rt.aclFinalize()
    except HarnessConfigError as e:
        out["error"] = str(e)
    print(json.dumps(out))


def report(build: bool = True) -> list[str]:
    lines = ["aclnn conformance harness: environment report (no case is run)"]
    found = loader.discover()
    lines.append(f"roots searched: {_roots_searched(found)}")
    software_built_now = False
    if found.root is not None:
        root = found.root
        lines.append(f"CANN root: {root} (from {found.source})")
    else:
        try:
            root = environment.software_cann_root(build=build)
        except HarnessConfigError as e:
            lines += ["CANN root: none found", f"software CANN: {e}"]
            return lines
        if root is None:
            lines += ["CANN root: none found",
                      "software CANN: not built yet (`./run doctor` without --no-build builds it)",
                      "a case run would: build the software CANN, re-exec with its set_env.sh applied, "
                      "and run on it (SIMULATED)"]
            return lines
        software_built_now = True
        lines.append(f"CANN root: none found; software CANN: {root}")
    software = environment.is_software_tree(root)
    script = setenv.set_env_script(root)
    missing = setenv.missing_dirs(root)
    lines.append(f"set_env.sh: {script or '(none found)'}")
    lines.append(f"set_env.sh applied in this process: {setenv.how_applied(root)}"
                 + (f"; missing from LD_LIBRARY_PATH: {', '.join(map(str, missing))}" if missing else ""))
    ld_now = setenv.startup_ld_library_path()
    lines.append(f"LD_LIBRARY_PATH at start-up: {':'.join(ld_now) or '<unset>'}")
    applied_env = None
    if missing and script is not None:
        try:
            applied_env = setenv.sourced_environment(script)
        except HarnessConfigError as e:
            lines.append(f"sourcing set_env.sh: {e}")
    ld_applied = [p for p in applied_env.get("LD_LIBRARY_PATH", "").split(":") if p] if applied_env else None
    lines.append("libraries (search order: the first runtime name found, nnopbase, every libopapi_*.so; "
                 "the older op libraries only while an entry point is missing):")
    libs = loader.library_paths(root)
    for path in libs:
        lines += _library_lines(path, ld_now, ld_applied)
    if not libs:
        lines.append("  (none)")
    lines.append(f"CANN version: {loader.cann_version(root)}")
    probe_env = dict(applied_env if applied_env is not None else os.environ)
    probe_env["ASCEND_HOME_PATH"] = str(root) if software_built_now else probe_env.get("ASCEND_HOME_PATH", str(root))
    if software:
        probe_env.setdefault(environment.SOC_VARIABLE, environment.DEFAULT_SOFTWARE_FAMILY)
    probed = _probe(probe_env)
    where = "with set_env.sh applied" if applied_env is not None else "in this environment"
    if "error" in probed:
        lines.append(f"runtime ({where}): {probed['error']}")
    else:
        soc = probed.get("soc_name")
        try:
            fam = families.family_of_soc_name(soc) if soc else f"unknown ({probed.get('message', '')})"
        except families.UnknownSocError as e:
            fam = str(e)
        lines.append(f"SoC ({where}): {soc} -> family {fam}"
                     + (f" (software CANN: SWCANN_SOC={probe_env['SWCANN_SOC']}; --soc picks another)"
                        if software else ""))
        lines.append(f"devices: {probed.get('device_count')} (aclrtGetDeviceCount returned "
                     f"{probed.get('aclrtGetDeviceCount')})")
    lines.append(f"visible devices: ASCEND_RT_VISIBLE_DEVICES={os.environ.get('ASCEND_RT_VISIBLE_DEVICES', '<unset>')}")
    label = "the SOFTWARE CANN (SIMULATED, not hardware)" if software else "the HARDWARE CANN"
    if not missing:
        todo = f"load {root} directly and run on {label}"
    elif script is not None:
        todo = f"re-exec with {script} applied (announced on stderr), then run on {label}"
    else:
        todo = f"stop: {setenv.not_applied_message(root)}"
    if software_built_now:
        todo = "use the software CANN (no CANN found): " + todo
    lines.append(f"a case run (./run suite) would: {todo}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    unknown = [a for a in args if a not in ("--no-build",)]
    if unknown:
        print(f"usage: python -m harness doctor [--no-build] (unknown: {' '.join(unknown)})", file=sys.stderr)
        return 2
    for line in report(build="--no-build" not in args):
        print(line)
    return 0
