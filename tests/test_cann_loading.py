"""Loading a CANN the way it really is (acl_abi.md 1.8, 5.1): the software CANN is built like a
real install (no RUNPATH, lazy binding, a driver tree, set_env.sh), and the harness copes:
it checks LD_LIBRARY_PATH before loading, re-execs with set_env.sh or stops with one line,
opens libraries with RTLD_LAZY | RTLD_GLOBAL in op-plugin's order, maps every SoC name of
the platform configs, and labels every run with the backend it really loaded.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from harness.core import families
from harness.acl import elf, loader, setenv
from swcann import build as swbuild
from tests import swenv
from tests.test_casefile_errors import BASE

REPO = Path(__file__).resolve().parents[1]
LIB64 = ("libacl_rt.so", "libascendcl.so", "libnnopbase.so", "libopapi_nn.so", "libopapi_math.so")
HAL = Path("driver/lib64/driver/libascend_hal.so")


# tests that start from a machine without CANN (the software CANN is then built and used)
no_installed_cann = pytest.mark.skipif(any(Path(d).exists() for d in loader.DEFAULT_ROOTS),
                                       reason="a CANN is installed in a default location on this machine")


@pytest.fixture(scope="module")
def root() -> Path:
    return swbuild.build()


def _libraries(root: Path) -> list[Path]:
    return [root / "lib64" / n for n in LIB64] + [root / HAL]


def _python(code: str, env: dict, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**env, "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------ SoC names (acl_abi.md 5.1, 1.8)

PLATFORM_CONFIG_SOCS = {
    "ascend910": ["Ascend910A", "Ascend910ProA", "Ascend910PremiumA", "Ascend910B", "Ascend910ProB"],
    "ascend910b": ["Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4", "Ascend910B4-1"],
    "ascend910_93": ["Ascend910_9381", "Ascend910_9382", "Ascend910_9391", "Ascend910_9392", "Ascend910_9362",
                     "Ascend910_9363", "Ascend910_9372"],
    "ascend310p": ["Ascend310P1", "Ascend310P3", "Ascend310P5", "Ascend310P7"],
    "ascend310b": ["Ascend310B1", "Ascend310B2", "Ascend310B3", "Ascend310B4"],
    "ascend031": ["Ascend031"],
    "ascend035": ["Ascend035", "Ascend035A", "Ascend035B"],
    # cann-dev/*.ini, every name the spec lists
    "ascend950": [f"Ascend950PR_{s}" for s in ("9579", "957b", "957c", "957d", "9589", "958b", "9599", "950z")]
    + [f"Ascend950DT_{s}" for s in [f"957{i}" for i in range(1, 9)] + [f"958{i}" for i in range(1, 9)]
       + ["9591", "9592", "9595", "9596", "95A1", "95A2", "950x", "950y"]]
    # the family's earlier name, still a prefix in opbase's kernel-directory map
    + ["Ascend910_95", "Ascend910_9589", "Ascend910_9599"],
    "ascend350": ["Ascend350_354f", "Ascend350_355e"],
}


@pytest.mark.parametrize("name, family", [(n, f) for f, names in PLATFORM_CONFIG_SOCS.items() for n in names])
def test_every_platform_config_soc_maps_to_its_family(name, family):
    assert families.family_of_soc_name(name) == family


def test_unknown_soc_name_is_one_line_naming_it_and_the_patterns():
    with pytest.raises(families.UnknownSocError) as e:
        families.family_of_soc_name("Ascend999X")
    text = str(e.value)
    assert "\n" not in text and "'Ascend999X'" in text
    for prefix in ("Ascend910B[1-4]*", "Ascend910_93", "Ascend910_95", "Ascend950", "Ascend310P"):
        assert prefix in text, text


# ------------------------------------------------------------------ the tree is built like a real install

def test_no_runpath_no_rpath_no_bind_now(root):
    readelf = shutil.which("readelf")
    for lib in _libraries(root):
        info = elf.read_dynamic(lib)
        assert not info.rpath and not info.runpath and not info.bind_now, (lib, info)
        if readelf:
            out = subprocess.run([readelf, "-d", str(lib)], capture_output=True, text=True).stdout
            assert "(NEEDED)" in out or lib.name == "libopapi_math.so", out
            for tag in ("RPATH", "RUNPATH", "BIND_NOW", "(FLAGS_1)"):
                assert tag not in out, f"{lib}: {tag}\n{out}"


def test_runtime_split_and_driver_tree(root):
    needed = {lib.name: elf.read_dynamic(lib).needed for lib in _libraries(root)}
    assert "libascend_hal.so" in needed["libacl_rt.so"]            # from the driver tree, through LD_LIBRARY_PATH
    assert "libacl_rt.so" in needed["libascendcl.so"]              # the compatibility name
    assert "libacl_rt.so" in needed["libnnopbase.so"]
    assert {"libnnopbase.so", "libacl_rt.so"} <= set(needed["libopapi_nn.so"])
    assert "libopapi_math.so" not in needed["libopapi_nn.so"]     # its math symbol binds lazily
    assert elf.read_dynamic(root / "lib64" / "libacl_rt.so").soname == "libacl_rt.so"


def test_set_env_exports_what_cann_set_env_exports(root):
    env = swenv.env_for(root)
    assert env["ASCEND_HOME_PATH"] == env["ASCEND_TOOLKIT_HOME"] == env["ASCEND_AICPU_PATH"] == str(root)
    assert env["ASCEND_OPP_PATH"] == str(root / "opp")
    ld = env["LD_LIBRARY_PATH"].split(":")
    assert ld[0] == str(root / "lib64")
    assert {str(root / d) for d in ("driver/lib64", "driver/lib64/common", "driver/lib64/driver")} <= set(ld)
    twice = setenv.sourced_environment(root / "set_env.sh", env)
    assert twice["LD_LIBRARY_PATH"] == env["LD_LIBRARY_PATH"]      # idempotent
    assert setenv.missing_dirs(root, ld) == []
    assert setenv.missing_dirs(root, []) == [root / "lib64", root / "driver/lib64", root / "driver/lib64/driver"]


def test_loading_without_set_env_fails_as_a_real_install_does(root):
    code = f"""
        import ctypes
        try:
            ctypes.CDLL({str(root / 'lib64' / 'libacl_rt.so')!r})
            print("loaded")
        except OSError as e:
            print("failed:", e)
    """
    bare = _python(code, swenv.bare_env())
    assert bare.stdout.strip() == "failed: libascend_hal.so: cannot open shared object file: No such file or directory", bare
    applied = _python(code, swenv.env_for(root))
    assert applied.stdout.strip() == "loaded", applied


def test_rtld_now_fails_where_rtld_lazy_global_loads(root):
    """ctypes.CDLL (always RTLD_NOW) cannot load libopapi_nn.so alone; dlopen(RTLD_LAZY|RTLD_GLOBAL) can,
    and the lazily bound symbol resolves once the math library is in the global scope."""
    lib = root / "lib64"
    code = f"""
        import ctypes
        from harness.acl import dl
        try:
            ctypes.CDLL({str(lib / 'libopapi_nn.so')!r})
        except OSError as e:
            print("now:", e)
        nn = dl.open_library({str(lib / 'libopapi_nn.so')!r})
        print("lazy: loaded")
        dl.open_library({str(lib / 'libopapi_math.so')!r})
        nn.swcannNnMathVersion.restype = ctypes.c_char_p
        print("call:", nn.swcannNnMathVersion().decode())
    """
    r = _python(code, swenv.env_for(root))
    lines = r.stdout.splitlines()
    assert lines[0].startswith("now:") and "undefined symbol: swcannMathVersion" in lines[0], r
    assert lines[1:] == ["lazy: loaded", "call: swcannMathVersion".replace("swcannMathVersion", "swcann opapi_math "
                         "(software CANN \u2014 simulated, NOT hardware)")], r
    # without RTLD_GLOBAL for the math library the symbol is never found: the process dies at the call
    local = f"""
        import ctypes, os
        from harness.acl import dl
        nn = dl.open_library({str(lib / 'libopapi_nn.so')!r})
        dl.open_library({str(lib / 'libopapi_math.so')!r}, os.RTLD_LAZY | os.RTLD_LOCAL)
        nn.swcannNnMathVersion()
    """
    r = _python(local, swenv.env_for(root))
    assert r.returncode != 0 and "symbol lookup error" in r.stderr and "swcannMathVersion" in r.stderr, r


def test_backend_without_set_env_stops_with_one_line(root):
    code = """
        from types import SimpleNamespace
        from harness.backends.aclnn import AclnnBackend
        from harness.core.errors import HarnessConfigError
        try:
            AclnnBackend(SimpleNamespace(family=None, device=None, no_sw_fallback=False, deterministic=False, worker=None))
        except HarnessConfigError as e:
            print(repr(str(e)))
    """
    r = _python(code, {**swenv.bare_env(), "ASCEND_HOME_PATH": str(root)})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r
    text = eval(r.stdout.strip())
    assert "\n" not in text and f"run `source {root / 'set_env.sh'}` first" in text, text
    assert str(root / "driver/lib64/driver") in text and "not on LD_LIBRARY_PATH" in text


# ------------------------------------------------------------------ op library search order (acl_abi.md 1.4)

def test_op_library_candidates_follow_op_plugin(tmp_path):
    lib64 = tmp_path / "lib64"
    lib64.mkdir()
    for name in ("libopapi_nn.so", "libopapi_cv.so", "libopapi.so", "libaclnn_math.so", "libaclnn_ops_train.so",
                 "libaclnn_ops_infer.so", "libascendcl.so"):
        (lib64 / name).write_bytes(b"")
    split, fallbacks = loader.op_library_candidates(tmp_path, [])
    assert [p.name for p in split] == ["libopapi_cv.so", "libopapi_nn.so"]
    assert [p.name for p in fallbacks] == ["libopapi.so", "libaclnn_ops_infer.so", "libaclnn_ops_train.so",
                                           "libaclnn_math.so"]


def test_op_libraries_behind_a_linked_lib64_are_listed_once(tmp_path):
    """A real install's lib64 is a link to <arch>-linux/lib64: both are searched, each library counts once."""
    arch = tmp_path / f"{loader.platform.machine()}-linux" / "lib64"
    arch.mkdir(parents=True)
    (tmp_path / "lib64").symlink_to(arch, target_is_directory=True)
    for name in ("libopapi_nn.so", "libopapi_math.so"):
        (arch / name).write_bytes(b"")
    split, _ = loader.op_library_candidates(tmp_path, [])
    assert sorted(p.name for p in split) == ["libopapi_math.so", "libopapi_nn.so"]


_LOAD_PROBE = """
    import json
    from harness.acl import loader
    libs = loader.load(loader.discover())
    before = [p.name for p in libs.opapi_paths]
    fn = libs.op_function("aclnnAvgPool2dBackwardGetWorkspaceSize")
    print(json.dumps([libs.runtime_path.name, before, [p.name for p in libs.opapi_paths],
                      fn is not None and libs.provider("aclnnAvgPool2dBackwardGetWorkspaceSize").name]))
"""


@pytest.mark.parametrize("layout, before, after", [
    # older aggregate library only
    ({"libascendcl.so": "libascendcl.so", "libopapi.so": "libopapi_nn.so"},
     ["libopapi.so"], ["libopapi.so"]),
    # a split library without the ops: the feature library is opened only when the op is looked up
    ({"libacl_rt.so": "libacl_rt.so", "libopapi_x.so": "libopapi_math.so", "libaclnn_ops_train.so": "libopapi_nn.so"},
     ["libopapi_x.so"], ["libopapi_x.so", "libaclnn_ops_train.so"]),
])
def test_older_layouts_are_found(root, tmp_path, layout, before, after):
    lib64 = tmp_path / "lib64"
    lib64.mkdir()
    for name, target in {**layout, "libnnopbase.so": "libnnopbase.so"}.items():
        (lib64 / name).symlink_to(root / "lib64" / target)
    env = swenv.env_for(root)
    env["ASCEND_HOME_PATH"] = str(tmp_path)
    r = _python(_LOAD_PROBE, env)
    assert r.returncode == 0, r.stderr
    runtime, got_before, got_after, provider = json.loads(r.stdout.strip().splitlines()[-1])
    assert runtime == next(n for n in ("libacl_rt.so", "libascendcl.so") if n in layout)
    assert (got_before, got_after, provider) == (before, after, after[-1])


# ------------------------------------------------------------------ the pytest plugin: re-exec, one line, provenance

@pytest.fixture()
def suite(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "mp.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))

    def run(*args, env):
        cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "--rootdir", str(tmp_path),
               "-c", "/dev/null", "--report-dir", str(tmp_path / "rep"), "--backend", "aclnn", *args]
        env = {**env, "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", "")}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
        return proc.returncode, proc.stdout, proc.stderr
    run.tmp = tmp_path
    return run


def _summary(tmp: Path) -> dict:
    return json.loads((tmp / "rep" / "summary.json").read_text())


@no_installed_cann
@pytest.mark.parametrize("xdist", [(), ("-n", "2")])
def test_suite_without_set_env_reexecs_announced(suite, xdist):
    code, out, err = suite("-q", "--soc", "ascend950", *xdist, env=swenv.bare_env())
    assert code == 0, out + err
    assert err.count("re-executing with") == 1 and "set_env.sh applied" in err, err
    assert "2 passed" in out, out
    props = _summary(suite.tmp)["properties"]
    assert props["set_env_applied"].startswith("applied by the harness (re-exec with") and props["simulated"] == "true"
    assert props["software_cann_built"] == "true" and props["fallback_reason"].startswith("no CANN found")


@no_installed_cann
def test_no_reexec_stops_with_the_file_to_source(suite, root):
    code, out, err = suite("-q", "--no-reexec", env=swenv.bare_env())
    assert code == 4, out + err
    assert "Traceback" not in out + err and "re-executing" not in err
    line = next(ln for ln in (out + err).splitlines() if "set_env.sh" in ln)
    assert f"run `source {root / 'set_env.sh'}` first" in line, out + err


@no_installed_cann
def test_reexec_never_loops(suite, root):
    env = {**swenv.bare_env(), setenv.APPLIED_MARK: str(root / "set_env.sh")}
    code, out, err = suite("-q", env=env)
    assert code == 4 and "already re-executed" in out + err and "re-executing" not in err, out + err


@pytest.mark.parametrize("soc", ["ascend910b", "ascend950"])
def test_suite_with_set_env_applied_passes(suite, root, soc):
    code, out, err = suite("-q", "--soc", soc, "--deterministic", env=swenv.env_for(root))
    assert code == 0 and "2 passed" in out, out + err
    assert "re-executing" not in err
    props = _summary(suite.tmp)["properties"]
    assert props["family"] == soc and props["set_env_sh"] == str(root / "set_env.sh")
    assert props["set_env_applied"].startswith("applied by the caller")
    assert props["LD_LIBRARY_PATH"].startswith(str(root / "lib64"))
    assert props["deterministic_process"] == "ACL_OPT_DETERMINISTIC=1 (aclrtSetSysParamOpt)"
    assert props["deterministic_context"] == "ACL_OPT_DETERMINISTIC=1 (aclrtCtxSetSysParamOpt)"


_ERROR_FIRST = "def pytest_runtest_setup(item):\n    raise RuntimeError('broken before judging')\n"


@pytest.mark.parametrize("backend", ["aclnn", "torch"])
def test_run_where_every_case_errors_keeps_its_real_label(suite, root, backend):
    (suite.tmp / "error_first.py").write_text(_ERROR_FIRST)
    env = swenv.env_for(root)
    env["PYTHONPATH"] = str(suite.tmp)
    code, out, err = suite("-q", "-p", "error_first", "--backend", backend, "--junitxml", str(suite.tmp / "j.xml"),
                           env=env)
    assert code == 1 and "2 error" in out, out + err
    summary = _summary(suite.tmp)
    assert summary["banner"].startswith("SIMULATED (not hardware): backend=" + backend), summary["banner"]
    assert summary["properties"]["backend"] == backend and summary["properties"]["simulated"] == "true"
    records = [json.loads(x) for x in (suite.tmp / "rep" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {r["status"] for r in records} == {"FAIL"}
    assert all(r["backend"]["backend"] == backend and r["backend"]["simulated"] == "true" for r in records)
    props = {p.get("name"): p.get("value") for p in ET.parse(suite.tmp / "j.xml").iter("property")}
    assert props["backend"] == backend and props["simulated"] == "true"


# ------------------------------------------------------------------ the doctor

@no_installed_cann
def test_doctor_on_a_fresh_machine(root):
    r = subprocess.run([sys.executable, "-m", "harness", "doctor"], cwd=REPO, env=swenv.bare_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "roots searched: ASCEND_HOME_PATH=<unset>, ASCEND_TOOLKIT_HOME=<unset>" in out
    assert f"CANN root: none found; software CANN: {root}" in out
    assert f"set_env.sh: {root / 'set_env.sh'}" in out
    assert "set_env.sh applied in this process: not applied; missing from LD_LIBRARY_PATH" in out
    assert "    not found with this process's LD_LIBRARY_PATH: libascend_hal.so" in out   # ldd's view of libacl_rt
    assert "    not found with set_env.sh applied: none" in out
    assert "CANN version: 9.0.0-swcann" in out
    assert "SoC (with set_env.sh applied): Ascend910B2 -> family ascend910b" in out
    assert "devices: 1 " in out and "ASCEND_RT_VISIBLE_DEVICES=<unset>" in out
    assert "would: use the software CANN (no CANN found): re-exec with" in out and "SIMULATED" in out


def test_doctor_with_set_env_applied(root):
    env = {**swenv.env_for(root), "SWCANN_SOC": "Ascend910_9599", "SWCANN_DEVICE_COUNT": "4",
           "ASCEND_RT_VISIBLE_DEVICES": "1,3"}
    r = subprocess.run([sys.executable, "-m", "harness", "doctor"], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=300)
    out = r.stdout
    assert r.returncode == 0 and f"CANN root: {root} (from ASCEND_HOME_PATH)" in out, out + r.stderr
    assert "applied in this process: applied by the caller" in out
    assert "not found with this process's LD_LIBRARY_PATH: libascend_hal.so" not in out
    assert "SoC (in this environment): Ascend910_9599 -> family ascend950" in out     # the family's older name
    assert "devices: 2 " in out and "ASCEND_RT_VISIBLE_DEVICES=1,3" in out
    assert f"would: load {root} directly and run on the SOFTWARE CANN" in out


def test_banner_says_hardware_only_when_a_backend_said_so():
    from harness.target import Target
    def banner(wire):
        return Target.from_wire(wire).banner
    assert banner({}).startswith("UNKNOWN PROVENANCE")                 # no backend facts: never HARDWARE
    assert banner({"backend": "aclnn"}).startswith("UNKNOWN PROVENANCE")
    assert banner({"simulated": "true", "backend": "aclnn"}).startswith("SIMULATED (not hardware): backend=aclnn")
    assert banner({"simulated": "false", "backend": "aclnn"}).startswith("HARDWARE: backend=aclnn")


KERNEL_DIR = """
import sys
from types import SimpleNamespace
import harness.backends.aclnn as aclnn_mod
from harness.operators import load_case_file
from harness.judge.runner import run_case
if sys.argv[2] == "bare":
    aclnn_mod._export_cann_env = lambda root: None      # a caller that sets neither variable
_, cases = load_case_file(sys.argv[1])
case = next(c for c in cases if c.kind == "valid")
b = aclnn_mod.AclnnBackend(SimpleNamespace(device=None, family=None, no_sw_fallback=False, deterministic=False,
                                           worker=None))
out = run_case(case, b, b.info.family)
print(out.phase1_status, out.raw.value, out.message[:200])
"""


@pytest.mark.parametrize("how, expected", [("bare", ["561107", "FAIL"]), ("harness", ["0", "PASS"])])
def test_without_a_kernel_directory_phase_1_is_561107_and_the_harness_exports_one(tmp_path, how, expected):
    """nnopbase finds kernels through $ASCEND_HOME_PATH/opp_latest or $ASCEND_OPP_PATH, else phase 1
    returns 561107 (spec acl_abi 1.6); the software CANN does the same, so the harness's export of
    the install's opp/ is exercised here as it would be on a CANN whose set_env.sh was not sourced."""
    from tests.robust_cases import write_cases
    path = write_cases(tmp_path, channels=[1], sides=(4,))
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_OPP_PATH", "ASCEND_HOME_PATH", "SWCANN_FAULTS")}
    proc = subprocess.run([sys.executable, "-c", KERNEL_DIR, str(path), how], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env={**env, "PYTHONPATH": str(REPO)})
    assert proc.stdout.split()[:2] == expected, proc.stdout + proc.stderr[-2000:]
    if how == "bare":
        assert "opp_kernel package is installed" in proc.stdout, proc.stdout


def test_a_variable_naming_no_cann_is_said_to_be_ignored_in_the_header(tmp_path):
    """ASCEND_HOME_PATH pointing at no CANN falls back to the software CANN: the run's header says
    which variable was ignored and why, not only the SIMULATED banner."""
    from tests.robust_cases import write_cases
    path = write_cases(tmp_path, channels=[1], sides=(4,))
    empty = tmp_path / "not-a-cann"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_TOOLKIT_HOME", "SWCANN_FAULTS")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", str(path), "-c", "/dev/null",
                           "--rootdir", str(tmp_path), "--backend", "aclnn", "-k", "before",     # no -q: the header
                           "--report-dir", str(tmp_path / "rep"), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**env, "ASCEND_HOME_PATH": str(empty), "PYTHONPATH": str(REPO)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"why the software CANN: ASCEND_HOME_PATH={empty} holds no CANN runtime library, so it was ignored" \
        in out, out[-3000:]
