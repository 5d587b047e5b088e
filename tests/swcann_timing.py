"""A ctypes driver that times pooling-backward launches on the software CANN with events.

Used by tests/test_swcann_events.py and benchmarks/bench_perf_faults.py, always in a process of
its own (aclInit reads SWCANN_* once per init; the pytest process keeps its own ACL session):

    python -m tests.swcann_timing '<json job>'      prints one JSON object

A job names cases (`case()` below) and either times them ("time") or compares fault settings
round by round ("faults": each round re-initialises ACL once per SWCANN_FAULTS value, so the
settings take turns and share the machine's drift). Launches are timed with
harness.acl.events.time_on_stream, the binding the harness uses, on the session's stream.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
import time

import numpy as np

from harness.acl import abi, events, loader

NP = {"float32": (np.float32, abi.ACL_FLOAT), "float16": (np.float16, abi.ACL_FLOAT16),
      "int32": (np.int32, abi.ACL_INT32), "int64": (np.int64, abi.ACL_INT64)}


def case(op: str, shape, dtype: str = "float32", k: int = 2, s: int = 2, layout: str = "NCHW",
         cip: bool = True, seed: int = 0) -> dict:
    """One launch: op mp2 (MaxPool2dWithIndicesBackward), avg (AvgPool2dBackward) or unpool
    (MaxUnpool3dBackward, 5-D), over `shape` (N, C, H, W; unpool: N, C, D, H, W) in `layout`."""
    return {"op": op, "shape": list(shape), "dtype": dtype, "k": k, "s": s, "layout": layout, "cip": cip,
            "seed": seed}


# Each perf fault of the software CANN: (family, a case its condition hits, one it leaves alone).
PERF_FAULTS = {
    "perf_channel_last_recompute": ("ascend950", case("mp2", [2, 32, 48, 48], k=3, s=2, layout="NHWC"),
                                    case("mp2", [2, 32, 48, 48], k=3, s=2)),
    "perf_tail_scalar": ("ascend950", case("mp2", [4, 16, 64, 9], k=1, s=1), case("mp2", [4, 16, 64, 16], k=1, s=1)),
    "perf_fp16_double": ("ascend950", case("mp2", [2, 16, 64, 64], "float16", k=3, s=2),
                         case("mp2", [2, 16, 64, 64], k=3, s=2)),
    # the fp32 accumulator sits in the workspace for A2/A3 fp16 with overlapping windows
    "perf_workspace_rezero": ("ascend910b", case("avg", [2, 16, 64, 64], "float16", k=3, s=2, cip=False),
                              case("avg", [2, 16, 64, 64], k=3, s=2, cip=False)),
    "perf_grad_input_extra_pass": ("ascend950", case("mp2", [2, 16, 64, 64]), case("unpool", [2, 8, 8, 16, 16])),
    "perf_unaligned_width": ("ascend950", case("mp2", [4, 16, 64, 24], k=1, s=1),
                             case("mp2", [4, 16, 64, 32], k=1, s=1)),
}


class Session:
    """aclInit, device 0 and a stream, with the harness's prototypes on every library."""

    def __init__(self, deterministic: bool = True):
        self.libs = loader.load(loader.discover())
        self.rt, self.nn = self.libs.runtime, self.libs.nnopbase
        assert self.rt.aclInit(None) == 0, self.error()
        assert self.rt.aclrtSetDevice(0) == 0, self.error()
        # atomic adds over overlapping windows take a launch-dependent order otherwise, and the
        # fault comparisons compare bits
        assert self.rt.aclrtSetSysParamOpt(abi.ACL_OPT_DETERMINISTIC, int(deterministic)) == 0, self.error()
        self.stream = ctypes.c_void_p()
        assert self.rt.aclrtCreateStream(ctypes.byref(self.stream)) == 0, self.error()
        self._free: list = []

    def error(self) -> str:
        raw = self.rt.aclGetRecentErrMsg()
        return raw.decode() if raw else ""

    def close(self) -> None:
        self.release()
        self.rt.aclrtSynchronizeStream(self.stream)
        self.rt.aclrtDestroyStream(self.stream)
        self.rt.aclrtResetDevice(0)
        self.rt.aclFinalize()

    def release(self) -> None:
        for fn, handle in reversed(self._free):
            fn(handle)
        self._free.clear()

    def buffer(self, array: np.ndarray) -> ctypes.c_void_p:
        ptr = ctypes.c_void_p()
        assert self.rt.aclrtMalloc(ctypes.byref(ptr), max(32, array.nbytes), 0) == 0, self.error()
        self._free.append((self.rt.aclrtFree, ptr))
        raw = np.ascontiguousarray(array)
        assert self.rt.aclrtMemcpy(ptr, raw.nbytes, raw.ctypes.data, raw.nbytes, 1) == 0, self.error()
        return ptr

    def tensor(self, array: np.ndarray, acl_dtype: int, fmt: int, strides=None) -> tuple:
        dims = (ctypes.c_int64 * array.ndim)(*array.shape)
        st = strides or [x // array.itemsize for x in array.strides]
        ptr = self.buffer(array)
        t = self.nn.aclCreateTensor(dims, array.ndim, acl_dtype, (ctypes.c_int64 * array.ndim)(*st), 0, fmt, dims,
                                    array.ndim, ptr)
        assert t, self.error()
        self._free.append((self.nn.aclDestroyTensor, t))
        return ctypes.c_void_p(t), ptr, array.nbytes

    def ints(self, values) -> ctypes.c_void_p:
        a = self.nn.aclCreateIntArray((ctypes.c_int64 * len(values))(*values), len(values))
        self._free.append((self.nn.aclDestroyIntArray, a))
        return ctypes.c_void_p(a)

    def read(self, ptr, nbytes: int) -> bytes:
        out = ctypes.create_string_buffer(nbytes)
        assert self.rt.aclrtMemcpy(out, nbytes, ptr, nbytes, 2) == 0, self.error()
        return out.raw


def _maxpool_inputs(spec: dict, rng) -> tuple:
    n, c, h, w = spec["shape"]
    k, s = spec["k"], spec["s"]
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    rows = np.minimum(np.arange(ho)[:, None] * s + rng.integers(0, k, (n, c, ho, wo)), h - 1)
    cols = np.minimum(np.arange(wo)[None, :] * s + rng.integers(0, k, (n, c, ho, wo)), w - 1)
    return (n, c, h, w), (n, c, ho, wo), (rows * w + cols).astype(np.int32)


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def build(sess: Session, spec: dict):
    """(phase-1 function, its arguments, phase-2 function, the output (ptr, nbytes))."""
    rng = np.random.default_rng(spec["seed"])
    dt, acl = NP[spec["dtype"]]
    op = spec["op"]
    if op == "mp2":
        xs, gs, idx = _maxpool_inputs(spec, rng)
        nhwc = spec["layout"] == "NHWC"
        conv, fmt = (_nhwc, abi.ACL_FORMAT_NHWC) if nhwc else (lambda a: a, abi.ACL_FORMAT_NCHW)
        grad = sess.tensor(conv(rng.standard_normal(gs).astype(dt)), acl, fmt)
        x = sess.tensor(conv(np.zeros(xs, dt)), acl, fmt)
        ind = sess.tensor(conv(idx), abi.ACL_INT32, fmt)
        out = sess.tensor(conv(np.zeros(xs, dt)), acl, fmt)
        k, s = [spec["k"]] * 2, [spec["s"]] * 2
        args = [grad[0], x[0], ind[0], sess.ints(k), sess.ints(s), sess.ints([0, 0]), sess.ints([1, 1]),
                ctypes.c_bool(False), out[0]]
        name = "aclnnMaxPool2dWithIndicesBackward"
    elif op == "avg":
        n, c, h, w = spec["shape"]
        k, s = spec["k"], spec["s"]
        gs = (n, c, (h - k) // s + 1, (w - k) // s + 1)
        grad = sess.tensor(rng.standard_normal(gs).astype(dt), acl, abi.ACL_FORMAT_NCHW)
        x = sess.tensor(np.zeros((n, c, h, w), dt), acl, abi.ACL_FORMAT_NCHW)
        out = sess.tensor(np.zeros((n, c, h, w), dt), acl, abi.ACL_FORMAT_NCHW)
        args = [grad[0], x[0], sess.ints([k, k]), sess.ints([s, s]), sess.ints([0, 0]), ctypes.c_bool(False),
                ctypes.c_bool(spec["cip"]), ctypes.c_int64(0), ctypes.c_int8(0), out[0]]
        name = "aclnnAvgPool2dBackward"
    else:               # unpool: gradOutput (N, C, 2D, 2H, 2W), out and indices (N, C, D, H, W)
        n, c, d, h, w = spec["shape"]
        big = (n, c, 2 * d, 2 * h, 2 * w)
        grad = sess.tensor(rng.standard_normal(big).astype(dt), acl, abi.ACL_FORMAT_ND)
        x = sess.tensor(np.zeros((n, c, d, h, w), dt), acl, abi.ACL_FORMAT_ND)
        idx = rng.integers(0, 8 * d * h * w, (n, c, d, h, w)).astype(np.int64)
        ind = sess.tensor(idx, abi.ACL_INT64, abi.ACL_FORMAT_ND)
        out = sess.tensor(np.zeros((n, c, d, h, w), dt), acl, abi.ACL_FORMAT_ND)
        args = [grad[0], x[0], ind[0], sess.ints(list(big[2:])), sess.ints([2, 2, 2]), sess.ints([0, 0, 0]), out[0]]
        name = "aclnnMaxUnpool3dBackward"
    phase1, phase2 = sess.libs.op_function(name + "GetWorkspaceSize"), sess.libs.op_function(name)
    phase2.argtypes = abi.PHASE2_ARGTYPES
    return phase1, args, phase2, out[1:]


def launch(sess: Session, spec: dict) -> dict:
    """Phase 1 (host), then phase 2 timed with events; the output's digest and what the launch
    cost the process: wall time and process CPU time around phase 2 and the end event's sync."""
    phase1, args, phase2, (out_ptr, nbytes) = build(sess, spec)
    ws_size, executor = ctypes.c_uint64(), ctypes.c_void_p()
    st = phase1(*args, ctypes.byref(ws_size), ctypes.byref(executor))
    assert st == 0, (st, sess.error())
    ws = ctypes.c_void_p()
    if ws_size.value:
        assert sess.rt.aclrtMalloc(ctypes.byref(ws), ws_size.value, 0) == 0
        sess._free.append((sess.rt.aclrtFree, ws))
    wall, cpu = time.perf_counter(), time.process_time()
    ms, status = events.time_on_stream(sess.libs, sess.stream,
                                       lambda: phase2(ws, ws_size.value, executor, sess.stream))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert status == 0 and sess.rt.aclrtSynchronizeStream(sess.stream) == 0, (status, sess.error())
    digest = hashlib.sha256(sess.read(out_ptr, nbytes)).hexdigest()
    sess.release()
    return {"ms": ms, "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "digest": digest}


def _with_env(values: dict):
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def run_time(job: dict) -> dict:
    """Every case `reps` times in one session: {"source": label, "runs": [[launch, ...] per case]}."""
    sess = Session()
    try:
        runs = [[launch(sess, spec) for _ in range(job.get("reps", 1))] for spec in job["cases"]]
        return {"source": events.timing_source(sess.libs), "runs": runs}
    finally:
        sess.close()


def run_faults(job: dict) -> dict:
    """For `rounds` rounds, each SWCANN_FAULTS setting in turn times every case once:
    {setting: [[launch per round] per case]}."""
    out = {setting: [[] for _ in job["cases"]] for setting in job["settings"]}
    for _ in range(job["rounds"]):
        for setting in job["settings"]:
            _with_env({"SWCANN_FAULTS": setting or None})
            sess = Session()
            try:
                for i, spec in enumerate(job["cases"]):
                    out[setting][i].append(launch(sess, spec))
            finally:
                sess.close()
    return out


def main(argv: list[str]) -> int:
    job = json.loads(argv[0])
    result = {"time": run_time, "faults": run_faults}[job["job"]](job)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
