"""The ctypes binding and the aclnn backend, exercised against the software CANN.

In-process tests share one ACL session on a simulated ascend950 (ACL is
initialised once per process and the software CANN reads its SoC at aclInit);
tests that need another SoC or environment run in a subprocess.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from harness.core import dtypes, families, formats
from harness import inputs
from harness.inputs import layout
from harness.judge import runner
from harness.operators import load_case_file
from harness.acl import abi, loader, runtime
from harness.acl.objects import CaseObjects, alloc_size, describe_tensor
from harness.core.errors import HarnessConfigError
from tests import swenv

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "cases" / "max_pool2d_with_indices_backward.yaml"
HAS_SWCANN = (REPO / "swcann" / "build.py").is_file()
needs_swcann = pytest.mark.skipif(not HAS_SWCANN, reason="swcann/build.py absent: the software CANN is not written yet")
FAMILY = swenv.IN_PROCESS_FAMILY     # the SoC of the shared in-process backend (tests/conftest.py)


def _config(**kw):
    base = dict(family=None, device=None, no_sw_fallback=False, deterministic=False, worker=None)
    return SimpleNamespace(**{**base, **kw})


@pytest.fixture(scope="module")
def mp2d_cases():
    _, cases = load_case_file(CASES)
    return cases


def _valid_base(cases):
    """A plain 4-D float32 case that is valid on the family under test (the file grows concurrently)."""
    return next(c for c in cases if c.kind == "valid" and c.status.get(FAMILY) == 0 and c.dtype == "float32"
                and len(c.shape) == 4 and set(c.layouts.values()) == {"contiguous"} and set(c.formats.values()) == {"NCHW"})


def _args(case):
    """The argument list exactly as harness.runner builds it."""
    prepared = inputs.prepare(case)
    return inputs.build_args(case, inputs.mutate(case, prepared), tuple(prepared[case.op.output_like].shape))


def _run_subprocess(script: str, env_changes: dict, drop=()) -> subprocess.CompletedProcess:
    """Runs `script` in a fresh shell's environment with the software CANN's set_env.sh applied."""
    from swcann.build import build
    env = {k: v for k, v in swenv.env_for(build()).items() if k not in drop}
    env.update(env_changes)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------ (6) SoC names, device choice, version

@pytest.mark.parametrize("name, family", [
    ("Ascend910B", "ascend910"),            # bare: the old Atlas training part, NOT A2
    ("Ascend910ProB", "ascend910"), ("Ascend910A", "ascend910"),
    ("Ascend910B1", "ascend910b"), ("Ascend910B4-1", "ascend910b"), ("Ascend910B2C", "ascend910b"),
    ("Ascend910_9391", "ascend910_93"), ("Ascend950PR_9579", "ascend950"), ("Ascend950DT_95A1", "ascend950"),
    ("Ascend310P3", "ascend310p"), ("Ascend310B1", "ascend310b"),
])
def test_soc_name_to_family(name, family):
    assert families.family_of_soc_name(name) == family


@pytest.mark.parametrize("requested, worker, count, device", [
    (None, None, 4, 0), (None, "gw3", 2, 1), (None, "gw5", 8, 5), ("2", "gw1", 4, 2), ("npu:1", None, 2, 1),
])
def test_device_choice(requested, worker, count, device):
    assert runtime.pick_device(requested, runtime.worker_slot(worker), count) == device


@pytest.mark.parametrize("worker, size, count, devices", [
    (None, 2, 4, [0, 1]), ("gw1", 2, 4, [2, 3]), ("gw1", 3, 4, [3, 0, 1]), (None, 4, 1, [0, 0, 0, 0]),
])
def test_case_workers_take_consecutive_devices(worker, size, count, devices):
    """A pool's case workers (harness/execution/pool.py) take the slots after their xdist worker's."""
    from harness.execution.pool import slots
    assert [runtime.pick_device(None, s, count) for s in slots(worker, size)] == devices


def test_device_out_of_range():
    with pytest.raises(HarnessConfigError, match="only 2 device"):
        runtime.pick_device("5", None, 2)


def test_alloc_size_rounds_to_32_bytes():
    assert [alloc_size(n) for n in (0, 1, 32, 33, 1000)] == [32, 32, 32, 64, 1024]


def test_cann_version(tmp_path):
    assert loader.cann_version(tmp_path) == "unknown"
    (tmp_path / "version.cfg").write_text("runtime_running_version=[8.0.RC3:8.0.RC3]\n")
    assert loader.cann_version(tmp_path) == "8.0.RC3"
    info = tmp_path / loader.arch_dir() / "ascend_toolkit_install.info"
    info.parent.mkdir()
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.2.RC1\n")
    assert loader.cann_version(tmp_path) == "8.2.RC1"


# ------------------------------------------------------------------ (3) missing library

def test_missing_cann_lists_paths_and_env(tmp_path, monkeypatch):
    from harness.backends.aclnn import AclnnBackend
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(loader, "DEFAULT_ROOTS", ("/nonexistent/Ascend/cann",))
    with pytest.raises(HarnessConfigError) as e:
        AclnnBackend(_config(no_sw_fallback=True))
    text = str(e.value)
    assert f"ASCEND_HOME_PATH={tmp_path}" in text and "ASCEND_TOOLKIT_HOME=<unset>" in text
    for path in (tmp_path / "lib64" / "libascendcl.so", tmp_path / loader.arch_dir() / "lib64" / "libacl_rt.so",
                 Path("/nonexistent/Ascend/cann/lib64/libascendcl.so")):
        assert str(path) in text


def test_broken_install_names_missing_library(tmp_path, monkeypatch):
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64" / "libascendcl.so").write_bytes(b"")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    found = loader.discover()
    assert found.root == tmp_path.resolve() and found.source == "ASCEND_HOME_PATH"
    with pytest.raises(HarnessConfigError, match=r"lacks libnnopbase\.so, libopapi_\*\.so, libopapi\.so or "
                                                 r"libaclnn_ops_infer\.so"):
        loader.load(found)


# ------------------------------------------------------------------ (1) layouts arrive as intended

@needs_swcann
@pytest.mark.parametrize("fmt, lay, channel_last, dtype", [
    ("NCHW", "strided", False, torch.float32),       # gaps in every dim + element offset 3
    ("NHWC", "contiguous", True, torch.float16),     # view dims (N,H,W,C)
    ("ND", "offset", False, torch.bfloat16),
])
def test_tensor_descriptor_read_back(backend, fmt, lay, channel_last, dtype):
    logical = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5).to(dtype)
    arg = layout.materialize("x", logical, fmt, lay, channel_last)
    with CaseObjects(backend.libs) as objs:
        handle, dev = objs.tensor(arg, dtypes.from_torch(dtype).acl)
        got = describe_tensor(backend.libs, handle)
        back = torch.full_like(arg.storage, 7)
        objs.download(dev, back)
    assert got == {"view_shape": list(arg.dims), "strides": list(arg.strides), "offset": arg.offset,
                   "format": formats.lookup(fmt), "dtype": dtypes.from_torch(dtype).acl,
                   "storage_shape": [arg.storage.numel()]}
    assert torch.equal(back.view(torch.int16) if dtype == torch.bfloat16 else back,
                       arg.storage.view(torch.int16) if dtype == torch.bfloat16 else arg.storage)
    if channel_last:
        assert arg.dims == (2, 4, 5, 3)
    if lay != "contiguous":
        assert arg.offset == 3
    assert backend.after_case() == []


@needs_swcann
def test_strided_offset_case_numerics(backend, mp2d_cases):
    base = _valid_base(mp2d_cases)
    case = dataclasses.replace(base, layouts={t: "strided" for t in base.layouts}, name=base.name + "~strided")
    out = runner.run_case(case, backend, FAMILY)
    assert out.raw.value == "PASS", out.reason


@needs_swcann
def test_nhwc_case_numerics(backend, mp2d_cases):
    base = _valid_base(mp2d_cases)
    nhwc = {t: "NHWC" for t in base.formats}
    case = dataclasses.replace(base, formats=nhwc, layouts={t: "contiguous" for t in base.layouts}, name=base.name + "~nhwc")
    assert _args(case)[1].value.dims == tuple(base.shape[i] for i in (0, 2, 3, 1))   # self as (N,H,W,C)
    out = runner.run_case(case, backend, FAMILY)
    assert out.raw.value == "PASS", out.reason


@needs_swcann
def test_phase1_failure_is_reported_and_cleaned_up(backend, mp2d_cases):
    case = next(c for c in mp2d_cases if c.kind == "invalid" and c.status.get(FAMILY) and c.check)
    result = backend.run(case.op.descriptor, _args(case))
    assert result.status == case.status[FAMILY]
    assert result.phase2_status is None and f"check {case.check} failed" in result.message
    assert backend.after_case() == []


# ------------------------------------------------------------------ (2) phase-2 and sync failures

def _inject(backend, site, code):
    assert backend.libs.runtime.swcannInjectFault(site.encode(), code) == 0


@needs_swcann
def test_phase2_failure(backend, mp2d_cases):
    case = _valid_base(mp2d_cases)
    _inject(backend, "phase2", abi.ACLNN_ERR_RUNTIME_ERROR)
    result = backend.run(case.op.descriptor, _args(case))
    assert result.status == 0
    assert result.phase2_status == abi.ACLNN_ERR_RUNTIME_ERROR and result.runtime_failed
    assert "injected fault" in result.message and "361001" in result.message   # aclGetRecentErrMsg text
    assert backend.after_case() == []


@needs_swcann
def test_sync_failure(backend, mp2d_cases):
    case = _valid_base(mp2d_cases)
    _inject(backend, "sync", abi.ACL_ERROR_RT_AICORE_EXCEPTION)
    out = runner.run_case(case, backend, FAMILY)
    assert (out.phase2_status, out.sync_status) == (0, abi.ACL_ERROR_RT_AICORE_EXCEPTION)
    assert out.raw.value == "FAIL" and "stream sync 507015" in out.reason
    assert "aclrtSynchronizeStream: injected fault" in out.message
    # the stream is usable again for the next case
    assert runner.run_case(case, backend, FAMILY).raw.value == "PASS"


@needs_swcann
def test_malloc_failure_raises_without_leaks(backend, mp2d_cases):
    case = _valid_base(mp2d_cases)
    _inject(backend, "malloc", abi.ACL_ERROR_RT_MEMORY_ALLOCATION)
    with pytest.raises(runtime.AclCallError, match="aclrtMalloc.*207001"):
        backend.run(case.op.descriptor, _args(case))
    assert backend.after_case() == []


@needs_swcann
def test_exception_mid_conversion_releases_everything(backend, mp2d_cases, monkeypatch):
    """Tensors and buffers already created are released when a later argument fails."""
    def broken(self, values, name=""):
        raise RuntimeError("int array conversion failed")
    monkeypatch.setattr(CaseObjects, "int_array", broken)
    case = _valid_base(mp2d_cases)
    with pytest.raises(RuntimeError, match="int array conversion failed"):
        backend.run(case.op.descriptor, _args(case))
    assert backend.after_case() == []


# ------------------------------------------------------------------ (4) leak detection

@needs_swcann
def test_leak_detection(backend):
    libs = backend.libs
    dev = ctypes.c_void_p()
    assert libs.runtime.aclrtMalloc(ctypes.byref(dev), 1024, abi.DEFAULT_MALLOC_POLICY) == 0
    dims = (ctypes.c_int64 * 1)(4)
    tensor = libs.nnopbase.aclCreateTensor(dims, 1, abi.ACL_FLOAT, (ctypes.c_int64 * 1)(1), 0, abi.ACL_FORMAT_ND,
                                           dims, 1, dev)
    array = libs.nnopbase.aclCreateIntArray(dims, 1)
    try:
        problems = backend.after_case()
        assert problems == ["software CANN reports 2 live objects and 1 live device allocation (1024 bytes) "
                            "after the case"]
        assert backend.after_case() == []          # reported once, at the case that leaked
    finally:
        libs.nnopbase.aclDestroyIntArray(array)
        libs.nnopbase.aclDestroyTensor(tensor)
        libs.runtime.aclrtFree(dev)
    assert backend.after_case() == []


@needs_swcann
def test_info_says_simulated(backend, swcann_root):
    info = backend.info
    assert info.simulated and info.backend == "aclnn" and info.family == FAMILY
    assert info.soc_name.startswith("Ascend950")
    assert info.details["software_cann"] and info.details["names_checks"]
    assert info.details["root_source"] == "ASCEND_HOME_PATH"
    assert info.library.startswith(str(Path(swcann_root).resolve())) and info.library.endswith(".so")
    assert "SIMULATED" in info.banner()


# ------------------------------------------------------------------ subprocesses: other SoC / env

_PRELUDE = """
    import json, sys
    from types import SimpleNamespace
    from harness.acl import loader
    from harness.core.errors import HarnessConfigError
    from harness.backends.aclnn import AclnnBackend
    def config(**kw):
        base = dict(family=None, device=None, no_sw_fallback=False, deterministic=False, worker=None)
        return SimpleNamespace(**{**base, **kw})
"""


@needs_swcann
def test_soc_mismatch(swcann_root):
    r = _run_subprocess(_PRELUDE + """
    try:
        AclnnBackend(config(family="ascend950"))
    except HarnessConfigError as e:
        print(json.dumps(str(e)))
    """, {"ASCEND_HOME_PATH": swcann_root, "SWCANN_SOC": "ascend910b"})
    assert r.returncode == 0, r.stderr
    text = json.loads(r.stdout.strip().splitlines()[-1])
    # refused before aclInit: an inherited SWCANN_SOC never silently decides the SoC against --soc
    assert text == ("SWCANN_SOC=ascend910b (inherited from the environment) asks the software CANN for ascend910b, "
                    "but --soc ascend950 was requested: unset SWCANN_SOC or drop --soc"), text


@needs_swcann
def test_fallback_builds_software_cann(swcann_root):
    """No CANN anywhere: the backend builds the software CANN, takes its SoC from --soc, says so loudly."""
    r = _run_subprocess(_PRELUDE + """
    import ctypes, os
    loader.DEFAULT_ROOTS = ()
    b = AclnnBackend(config(family="ascend910_93", deterministic=True, worker="gw3"))
    level, process = ctypes.c_int64(-1), ctypes.c_int64(-1)
    b.libs.runtime.aclrtCtxGetSysParamOpt(0, ctypes.byref(level))     # ACL_OPT_DETERMINISTIC, context level
    b.libs.runtime.aclrtGetSysParamOpt(0, ctypes.byref(process))      # and process level (current opbase reads it)
    print(json.dumps({"deterministic_level": level.value, "process_level": process.value, "simulated": b.info.simulated, "family": b.info.family, "device": b.info.device,
                      "details": b.info.details, "env_soc": os.environ.get("SWCANN_SOC"),
                      "env_home": os.environ.get("ASCEND_HOME_PATH")}))
    b.close()
    """, {"SWCANN_DEVICE_COUNT": "2"}, drop=("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "SWCANN_SOC"))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["simulated"] and got["family"] == "ascend910_93" and got["env_soc"] == "ascend910_93"
    assert got["device"] == "npu:1"                                  # gw3 % 2 devices
    assert got["deterministic_level"] == 1 and got["process_level"] == 1
    assert got["details"]["deterministic_process"] == "ACL_OPT_DETERMINISTIC=1 (aclrtSetSysParamOpt)"
    assert got["details"]["deterministic_context"] == "ACL_OPT_DETERMINISTIC=1 (aclrtCtxSetSysParamOpt)"
    d = got["details"]
    assert d["software_cann"] and d["names_checks"] and d["software_cann_built"] and d["deterministic"]
    assert Path(got["env_home"]).resolve() == Path(swcann_root).resolve()
    assert "SOFTWARE CANN: results are simulated, not hardware" in r.stderr
    assert r.stderr.count("SOFTWARE CANN") == 1


@needs_swcann
@pytest.mark.parametrize("soc_name, family", [
    ("Ascend910ProB", "ascend910"),
    ("Ascend910B", "ascend910"),   # bare name: the old training part, not A2
    ("Ascend910_9599", "ascend950"),   # the 950 family's older name: the run starts (acl_abi.md 1.8)
])
def test_full_soc_name_reaches_family(swcann_root, soc_name, family):
    """The SoC name the library reports decides the family (the bare Ascend910B is NOT A2)."""
    r = _run_subprocess(_PRELUDE + """
    b = AclnnBackend(config())
    print(json.dumps([b.info.soc_name, b.info.family]))
    """, {"ASCEND_HOME_PATH": swcann_root, "SWCANN_SOC": soc_name})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [soc_name, family]


# ------------------------------------------------------------------ kernel launches

@needs_swcann
def test_launches_are_counted_and_empty_inputs_launch_none(backend, mp2d_cases):
    """The software CANN's launch counter: one kernel per phase 2 of a real case, none for an
    empty input; without the counter (a real CANN) the count is None, never 0."""
    case = _valid_base(mp2d_cases)
    assert backend.run(case.op.descriptor, _args(case)).launches == 1
    empty = next(c for c in mp2d_cases if c.group == "empty_batch" and c.status.get(FAMILY) == 0)
    assert backend.run(empty.op.descriptor, _args(empty)).launches == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "_launch_counter", None)
        assert backend.run(empty.op.descriptor, _args(empty)).launches is None
        out = runner.run_case(empty, backend, FAMILY)
        assert out.raw.value == "PASS" and out.launches_note.startswith("launch count not observable")
    assert backend.after_case() == []


def test_a_cann_without_the_optional_error_message_call_still_reports_failures():
    """aclGetRecentErrMsg is optional (torch_npu looks it up with dlsym, spec acl_abi 1.1): a CANN
    without it loads, and a failed call is reported with its code and no message."""
    from types import SimpleNamespace
    from harness.acl import abi, runtime as runtime_mod
    assert abi.PROTOTYPES["runtime"]["aclGetRecentErrMsg"]["optional"]
    libs = SimpleNamespace(runtime=SimpleNamespace())           # no aclGetRecentErrMsg attribute
    assert runtime_mod.recent_error(libs) == ""
    with pytest.raises(runtime_mod.AclCallError) as e:
        runtime_mod.check(libs, "aclrtSetDevice", 107001)
    assert "107001" in str(e.value) and "aclrtSetDevice" in str(e.value)


@needs_swcann
def test_phase2_gets_a_workspace_filled_with_nan_bytes(backend, mp2d_cases, monkeypatch):
    """A kernel summing into workspace it never cleared must fail whatever the allocator returns,
    so the workspace reaches phase 2 filled with 0xFF (NaN in every float dtype)."""
    from harness.backends import aclnn as aclnn_mod
    case = _valid_base(mp2d_cases)
    seen = {}
    real_entry = backend._entry

    def entry(op, kinds):
        phase1, phase2 = real_entry(op, kinds)

        def spy(ws, size, executor, stream):
            buf = (ctypes.c_ubyte * size)()
            backend.libs.runtime.aclrtMemcpy(buf, size, ws, size, abi.ACL_MEMCPY_DEVICE_TO_HOST)
            seen["bytes"] = bytes(buf)
            return phase2(ws, size, executor, stream)
        return phase1, spy
    monkeypatch.setattr(backend, "_entry", entry)
    result = backend.run(case.op.descriptor, _args(case))
    assert result.status == 0 and result.sync_status == 0, result.message
    assert len(seen["bytes"]) == result.workspace_size >= 32 * 1024
    assert set(seen["bytes"]) == {aclnn_mod.WORKSPACE_FILL}
    assert result.workspace_overrun == 0


@needs_swcann
def test_a_store_past_the_workspace_is_caught_by_its_guard(backend, mp2d_cases, monkeypatch):
    """Guard bytes follow the workspace's 32-byte-rounded end: a kernel storing beyond the workspace
    phase 1 asked for changes them (on hardware that memory belongs to someone else)."""
    case = _valid_base(mp2d_cases)
    real_entry = backend._entry

    def entry(op, kinds):
        phase1, phase2 = real_entry(op, kinds)

        def overrunning(ws, size, executor, stream):
            ret = phase2(ws, size, executor, stream)
            past = alloc_size(size) + 40           # a store 40 bytes past the rounded end
            backend.libs.runtime.aclrtMemset(ws + past, 8, 0, 8)
            return ret
        return phase1, overrunning
    monkeypatch.setattr(backend, "_entry", entry)
    result = backend.run(case.op.descriptor, _args(case))
    assert result.status == 0 and result.sync_status == 0, result.message
    assert result.workspace_overrun == 8


@needs_swcann
def test_deterministic_mode_for_one_case_is_restored_after(backend):
    """A `deterministic: true` group sets ACL_OPT_DETERMINISTIC for its case only, at both levels
    (current opbase reads the process level), even when the case raises."""
    rt = backend.libs.runtime

    def levels():
        out = []
        for getter in ("aclrtGetSysParamOpt", "aclrtCtxGetSysParamOpt"):
            value = ctypes.c_int64(-1)
            ret = getattr(rt, getter)(abi.ACL_OPT_DETERMINISTIC, ctypes.byref(value))
            out.append(value.value if ret == abi.ACL_SUCCESS else f"not set ({ret})")
        return out
    assert not backend.deterministic
    before = levels()           # never set in this process (107021), or 0
    assert all(v == 0 or str(v).startswith("not set") for v in before), before
    with backend.deterministic_mode():
        assert levels() == [1, 1]
    assert levels() == [0, 0]
    with pytest.raises(RuntimeError), backend.deterministic_mode():
        assert levels() == [1, 1]
        raise RuntimeError("a case that fails half-way")
    assert levels() == [0, 0]
