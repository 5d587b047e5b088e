"""Guards that compare exact bytes (harness/inputs/guard.py), dump names that never collide
(harness/judge/arrays.py), and a leak check through aclrtGetMemInfo (harness/acl/meminfo.py).

A library that stores NaN, 0xFF garbage or zeros into memory it does not own must be caught
whatever the bytes: every byte outside an output's view (before it, in its stride gaps, after its
tail) and after the workspace holds a per-case pattern, compared byte for byte after each launch.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from harness import inputs
from harness.acl import abi, meminfo
from harness.acl.objects import alloc_size
from harness.audit import faultscore
from harness.backends.torch_backend import TorchBackend
from harness.core.status import Status
from harness.inputs import guard
from harness.judge import arrays, reasons, runner
from harness.operators import load_case_file
from tests import swenv
from tests.test_binding import FAMILY as IN_PROCESS, needs_swcann

REPO = Path(__file__).resolve().parents[1]
FAMILY = "ascend910b"
BYTES = (0xFF, 0x7F, 0x00)      # NaN in every float dtype, NaN in fp16 (0x7F7F), cleared memory
REGIONS = (guard.BEFORE_VIEW, guard.STRIDE_GAP, guard.AFTER_TAIL)


def _output(case):
    return next(p for p in case.op.params if p.output)


def _strided(file: str, dtype: str, group: str):
    """A default-tier case of `group` whose output has `dtype` and the strided layout (an offset,
    stride gaps and the tail guard: every region), valid with numerics on FAMILY: the group's own
    strided case, else its first case with the output laid out strided."""
    _, cases = load_case_file(REPO / "cases" / file)
    fit = [c for c in cases if c.group == group and c.kind == "valid" and c.tier == "default"
           and c.status.get(FAMILY) == 0 and c.runs_numerics(FAMILY) and c.dtype_of(_output(c)) == dtype]
    if not fit:
        raise LookupError(f"no {dtype} case of group {group} in {file}")
    strided = [c for c in fit if c.layouts[_output(c).name] == "strided"]
    if strided:
        return strided[0]
    out = _output(fit[0]).name
    return dataclasses.replace(fit[0], layouts={**fit[0].layouts, out: "strided"})


@pytest.fixture(scope="module")
def by_dtype():
    # MaxPool3d's non-overlapping windows and MaxUnpool3d's gather are exact on torch too, so the
    # clean run passes and every failure below is the planted write
    return {dtype: _strided("max_pool3d_with_argmax_backward.yaml", dtype, "windows_exact")
            for dtype in ("float32", "float16", "bfloat16")} | \
        {"int64": _strided("max_unpool3d_backward.yaml", "int64", "gather_all_dtypes")}


def _element_in(arg, region: str) -> int:
    """A storage element of `region`: the one just before the view, the first stride gap, the one
    just after the view's last element (what an off-by-one store touches)."""
    first, last = arg.extent()
    if region == guard.BEFORE_VIEW:
        return first - 1
    if region == guard.AFTER_TAIL:
        return last + 1
    return first + int(torch.nonzero(~arg.covered()[first:last + 1])[0])


class Scribbling(TorchBackend):
    """The torch backend's kernel (the real result in the view), then one element of `region` of
    the output overwritten with `byte`."""

    def __init__(self, region: str | None = None, byte: int = 0):
        super().__init__(SimpleNamespace(device="cpu", family=FAMILY))
        self.region, self.byte, self.element = region, byte, None

    def run(self, op, args):
        result = super().run(op, args)
        if self.region is not None:
            arg = next(iter(result.outputs.values()))
            self.element = _element_in(arg, self.region)
            item = arg.storage.element_size()
            arg.storage.view(torch.uint8)[self.element * item:(self.element + 1) * item] = self.byte
            self.scribbled = arg.storage[self.element].clone()
        return result


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_the_clean_kernel_passes(by_dtype, dtype):
    out = runner.run_case(by_dtype[dtype], Scribbling(), FAMILY)
    assert out.raw is Status.PASS, out.reason


@pytest.mark.parametrize("byte", BYTES, ids=lambda b: f"{b:02x}")
@pytest.mark.parametrize("region", REGIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_a_write_outside_the_view_is_caught_whatever_its_bytes(by_dtype, dtype, region, byte):
    case = by_dtype[dtype]
    backend = Scribbling(region, byte)
    out = runner.run_case(case, backend, FAMILY)
    item = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    written = bytes([byte] * item)
    name = _output(case).name
    assert out.raw is Status.FAIL, f"{dtype} {region} {byte:#04x}: not caught"
    assert out.reason.startswith(f"{name}: the library {reasons.OUTSIDE_VIEW}: {region} at byte "
                                 f"{backend.element * item}: found {written.hex(' ')}, expected "), out.reason
    assert f"({item} guard bytes changed)" in out.reason
    # what the fault score reads back from the record
    assert faultscore.classify({"case_id": case.id, "status": "FAIL", "reason": out.reason}).cls == "OUTSIDE_VIEW"
    if byte == 0xFF and dtype != "int64" or byte == 0x7F and dtype == "float16":
        # the writes a test for NaN passed: the element now holds NaN, as the view's poison does
        assert torch.isnan(backend.scribbled.float())


def _output_arg(case):
    """The output's TensorArg exactly as the runner builds it, before any launch."""
    prepared = inputs.prepare(case)
    args = inputs.build_args(case, inputs.mutate(case, prepared), tuple(prepared[case.op.output_like].shape))
    return next(a.value for a in args if a.is_output)


def test_the_report_quotes_a_few_bytes_of_one_run_of_guard_bytes(by_dtype):
    """A long overwrite is quoted by its first 8 bytes and '...'; a short one by its own bytes."""
    case = by_dtype["float32"]
    arg = _output_arg(case)
    arg.storage.view(torch.uint8)[:arg.offset * 4] = 0      # all 12 bytes before the view
    found = guard.damage(arg)
    assert (found.region, found.offset, found.changed, found.more) == (guard.BEFORE_VIEW, 0, 12, True)
    assert str(found).startswith("before the view at byte 0: found 00 00 00 00 00 00 00 00 ..., expected ")
    arg = _output_arg(case)
    gap = _element_in(arg, guard.STRIDE_GAP)
    arg.storage[gap] = 0.0
    found = guard.damage(arg)
    assert (found.region, found.offset, found.found, found.more) == (guard.STRIDE_GAP, gap * 4, bytes(4), False)
    assert found.expected == arg.guard.at(gap * 4, 4).tobytes()


def test_the_pattern_is_never_nan_zero_or_a_small_integer():
    block = guard.Pattern("any case#gradInput").at(0, guard.PERIOD + 7)
    assert not np.isin(block, [0x00, 0xFF, 0x7F, 0x80]).any()
    for shift in range(8):              # every alignment of an element in the buffer
        raw = torch.from_numpy(block[shift:shift + 4000].copy())
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            values = raw[:len(raw) // dtype.itemsize * dtype.itemsize].view(dtype).double()
            assert torch.isfinite(values).all() and (values.abs() >= torch.finfo(dtype).tiny).all(), dtype
        for dtype in (torch.int16, torch.int32, torch.int64):
            values = raw[:len(raw) // dtype.itemsize * dtype.itemsize].view(dtype)
            assert (values.abs() >= 12288).all(), dtype


def test_the_pattern_differs_between_cases_and_a_neighbours_fill_is_caught(by_dtype):
    """Two cases of the same shape, dtype and layout: their guard bytes differ, so a kernel that
    copies the other case's fill (a buffer it was given before) into this one's gaps is caught."""
    mine = by_dtype["float32"]
    other = dataclasses.replace(mine, name=mine.name + "-neighbour")
    a, b = _output_arg(mine), _output_arg(other)
    outside = ~a.covered()
    assert torch.equal(outside, ~b.covered())
    assert not torch.equal(a.storage[outside].view(torch.int32), b.storage[outside].view(torch.int32))
    assert guard.damage(a) is None
    a.storage[outside] = b.storage[outside]          # the neighbour's guard bytes, copied in
    found = guard.damage(a)
    assert found is not None and found.region == guard.BEFORE_VIEW
    assert found.changed > outside.sum() * 4 * 0.9      # nearly every byte differs


def test_an_output_without_a_laid_pattern_is_an_error_not_a_pass():
    arg = inputs.materialize("out", torch.zeros(2, 2), "ND", "strided", is_output=True, guard=4)
    with pytest.raises(ValueError, match="no guard pattern"):
        guard.damage(arg)


# ---------------------------------------------------------------- the workspace's tail guard

def _planted_tail_write(backend, monkeypatch, byte: int, at: int) -> None:
    """Phase 2 as the library does it, then 4 bytes of `byte` written `at` bytes past the workspace's
    rounded end (inside the guard)."""
    real_entry = backend._entry

    def entry(op, kinds):
        phase1, phase2 = real_entry(op, kinds)

        def overrunning(ws, size, executor, stream):
            ret = phase2(ws, size, executor, stream)
            backend.libs.runtime.aclrtMemset(ws + alloc_size(size) + at, 4, byte, 4)
            return ret
        return phase1, overrunning
    monkeypatch.setattr(backend, "_entry", entry)


def _workspace_case():
    _, cases = load_case_file(REPO / "cases" / "max_pool2d_with_indices_backward.yaml")
    return next(c for c in cases if c.kind == "valid" and c.status.get(IN_PROCESS) == 0 and c.runs_numerics(IN_PROCESS)
                and c.dtype == "float32" and set(c.layouts.values()) == {"contiguous"} and len(c.shape) == 4)


@needs_swcann
@pytest.mark.parametrize("byte", BYTES, ids=lambda b: f"{b:02x}")
def test_a_store_into_the_workspace_tail_is_caught_byte_exactly(backend, monkeypatch, byte):
    """0xFF is the workspace's own fill: a guard of the same bytes never saw a store of them."""
    case = _workspace_case()
    _planted_tail_write(backend, monkeypatch, byte, 40)
    out = runner.run_case(case, backend, IN_PROCESS)
    assert out.raw is Status.FAIL and out.workspace_size, out.reason
    at = alloc_size(out.workspace_size) + 40
    tail = inputs.preparation.guard_pattern(case, _output(case).name).sibling("workspace")
    expected = tail.at(40, 4).tobytes().hex(" ")
    assert out.reason.startswith(f"{reasons.WORKSPACE_OVERRUN}: 4 of the guard bytes after the {out.workspace_size} "
                                 f"bytes phase 1 asked for changed: {guard.WORKSPACE_TAIL} at byte {at}: found "
                                 f"{bytes([byte] * 4).hex(' ')}, expected {expected}"), out.reason
    assert faultscore.classify({"case_id": case.id, "status": "FAIL", "reason": out.reason}).cls == "WORKSPACE_OVERRUN"


FAULTY_RUN = r"""
import json, sys
from types import SimpleNamespace
from harness.backends.aclnn import AclnnBackend
from harness.operators import load_case_file
from harness.judge.runner import run_case
_, cases = load_case_file(sys.argv[1])
case = next(c for c in cases if c.id == sys.argv[2])
b = AclnnBackend(SimpleNamespace(device=None, family=None, no_sw_fallback=False, deterministic=False, worker=None))
out = run_case(case, b, b.info.family)
print(json.dumps({"status": out.raw.value, "reason": out.reason}))
"""


def _in_subprocess(script: str, swcann_root, faults: str, *argv) -> dict:
    env = {**swenv.env_for(swcann_root), "SWCANN_SOC": FAMILY, "PYTHONPATH": str(REPO)}
    if faults:
        env["SWCANN_FAULTS"] = faults
    proc = subprocess.run([sys.executable, "-c", script, *map(str, argv)], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_swcann
def test_the_libraries_workspace_overrun_is_located_byte_exactly(swcann_root):
    """The software CANN's workspace_undersized fault: phase 1 asks for 64 bytes less than the kernel
    stores. The fp32 accumulator's last stores land in the guard: where, and which bytes."""
    path = REPO / "cases" / "adaptive_max_pool2d_backward.yaml"
    _, cases = load_case_file(path)
    case = next(c for c in cases if c.group == "overlapping_half" and "os4x4" in c.id and c.index_dtype == "int32"
                and c.status.get(FAMILY) == 0)
    got = _in_subprocess(FAULTY_RUN, swcann_root, "workspace_undersized", path, case.id)
    assert got["status"] == "FAIL", got
    assert got["reason"].startswith(f"{reasons.WORKSPACE_OVERRUN}: "), got
    assert f": {guard.WORKSPACE_TAIL} at byte " in got["reason"] and ", expected " in got["reason"], got


# ---------------------------------------------------------------- names that never collide

def test_two_ids_sharing_their_first_300_characters_get_two_files(tmp_path):
    common = "AvgPool2dBackward.long[" + "x" * 300
    first, second = common + "-a]", common + "-b]"
    names = {arrays.file_name(first), arrays.file_name(second)}
    assert len(names) == 2 and all(len(n.encode()) <= 200 and n.startswith("AvgPool2dBackward.long_x") for n in names)
    for cid, value in ((first, 1.0), (second, 2.0)):
        arrays.write_arrays(tmp_path, cid, {"actual": {"out": torch.full((2,), value)}})
    files = sorted(tmp_path.glob("*.npz"))
    assert len(files) == 2
    assert sorted(float(np.load(f)["actual.out"][0]) for f in files) == [1.0, 2.0]


def test_ids_that_differ_only_in_replaced_characters_get_two_files():
    assert arrays.file_name("Op.g[a b]") != arrays.file_name("Op.g[a/b]")


# ---------------------------------------------------------------- the leak check a real CANN allows

class _Runtime:
    """aclrtGetMemInfo answering the free memory the test scripts, one reading per call."""

    def __init__(self, readings, refuse=()):
        self.readings, self.refuse, self.syncs = list(readings), refuse, 0

    def aclrtGetMemInfo(self, attr, free, total):
        if attr in self.refuse:
            return abi.ACL_ERROR_INVALID_PARAM
        free._obj.value, total._obj.value = self.readings.pop(0), 64 << 30
        return abi.ACL_SUCCESS


def _watch(readings, refuse=()):
    rt = _Runtime(readings, refuse)
    watch = meminfo.MemoryWatch(SimpleNamespace(runtime=rt), lambda: setattr(rt, "syncs", rt.syncs + 1))
    return watch, rt


GiB, MiB = 1 << 30, 1 << 20


def test_memory_given_back_after_the_sync_is_no_leak():
    # the probe of the memory type, the baseline, after the case, after the sync
    watch, rt = _watch([40 * GiB, 40 * GiB, 40 * GiB - 8 * MiB, 40 * GiB])
    assert watch.after_case() is None and rt.syncs == 1


def test_memory_still_missing_after_the_sync_is_a_leak_in_bytes():
    watch, rt = _watch([40 * GiB, 40 * GiB, 40 * GiB - 8 * MiB, 40 * GiB - 3 * MiB, 40 * GiB - 3 * MiB])
    said = watch.after_case()
    assert said.startswith(f"{meminfo.NOT_RETURNED}: {3 * MiB} bytes less free after the case") and rt.syncs == 1
    assert f"{8 * MiB} bytes at the first reading" in said and "ACL_HBM_MEM" in said
    assert watch.after_case() is None       # reported once, at the case that caused it


def test_a_drop_within_the_tolerance_is_not_read_twice():
    watch, rt = _watch([40 * GiB, 40 * GiB, 40 * GiB - meminfo.TOLERANCE])
    assert watch.after_case() is None and rt.syncs == 0


def test_a_kernels_first_launch_moves_the_baseline_only():
    watch, _ = _watch([40 * GiB, 40 * GiB, 40 * GiB - 8 * MiB, 40 * GiB - 8 * MiB, 40 * GiB - 8 * MiB])
    assert watch.after_case(first_launch=True) is None
    assert watch.after_case() is None


def test_a_device_without_hbm_is_read_through_ddr_and_one_without_the_call_is_said_to_be_off():
    watch, _ = _watch([8 * GiB, 8 * GiB], refuse=(abi.ACL_HBM_MEM,))
    assert watch.attr == "ACL_DDR_MEM" and "ACL_DDR_MEM" in watch.describe()
    off = meminfo.MemoryWatch(SimpleNamespace(runtime=SimpleNamespace()), lambda: None)
    assert off.describe().startswith("off:") and off.after_case() is None


def test_the_memory_types_are_the_specs():
    spec = REPO.parent / "shared" / "spec" / "acl_abi.md"
    if not spec.is_file():
        pytest.skip(f"spec not found at {spec}")
    from tests.test_acl_abi import _bullet, _prose_enum, _section
    doc = _prose_enum(_bullet(_section(spec.read_text(), "3.3 Other enums"), "aclrtMemAttr"), "ACL_")
    assert abi.MEM_ATTRS == doc


LEAKING_RUN = r"""
import dataclasses, json, sys
from types import SimpleNamespace
from harness.backends.aclnn import AclnnBackend
from harness.operators import load_case_file
from harness.judge.runner import run_case
_, cases = load_case_file(sys.argv[1])
base = next(c for c in cases if c.group == "divisible" and c.index_dtype == "int64" and c.dtype == "float32"
            and c.kind == "valid" and set(c.layouts.values()) == {"contiguous"})
# indices of 2x16x128x128 int64: the cast's INT32 buffer is 2 MiB, over the default tolerance
case = dataclasses.replace(base, name="leak_probe[float32-int64-2x16x256x256-os128x128]", shape=(2, 16, 256, 256),
                           attrs={"outputSize": [128, 128]})
b = AclnnBackend(SimpleNamespace(device=None, family=None, no_sw_fallback=False, deterministic=False, worker=None))
b._baseline = None          # the software CANN's own counters off: only aclrtGetMemInfo is read
runs = [run_case(case, b, b.info.family) for _ in range(3)]
print(json.dumps({"runs": [[o.raw.value, o.reason, o.problems] for o in runs],
                  "check": b.info.details["leak_check_meminfo"]}))
"""


@needs_swcann
@pytest.mark.parametrize("faults", ["leak_cast_buffer", ""])
def test_a_device_memory_leak_is_caught_through_aclrtGetMemInfo_alone(swcann_root, faults):
    """leak_cast_buffer: every call leaks the 2 MiB device buffer of the indices' INT32 cast. The first
    launch of the kernel only sets the baseline; each later case is caught, with its bytes."""
    got = _in_subprocess(LEAKING_RUN, swcann_root, faults, REPO / "cases" / "adaptive_max_pool2d_backward.yaml")
    assert got["check"].startswith("aclrtGetMemInfo(ACL_HBM_MEM)"), got["check"]
    statuses = [run[0] for run in got["runs"]]
    if not faults:
        assert statuses == ["PASS"] * 3, got
        return
    assert statuses == ["PASS", "FAIL", "FAIL"], got
    for status, reason, problems in got["runs"][1:]:
        assert problems == [reason] and reason.startswith(f"{meminfo.NOT_RETURNED}: {2 * MiB} bytes less free"), reason
        assert "software CANN reports" not in reason
        assert faultscore.classify({"case_id": "x", "status": "FAIL", "reason": reason, "problems": problems}).cls == "LEAK"
