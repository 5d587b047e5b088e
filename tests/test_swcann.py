"""Tests of the software CANN (swcann/): build, exported ABI, the C smoke driver
(plain, under valgrind, and ASan-instrumented), build caching/race safety, the
clear error for a broken compiler, its dtype/format table against the harness's,
contiguity as opbase judges it, and an operator added from a directory outside swcann/src/ops/."""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.core import dtypes, formats
from platforms import cheader
from swcann import build as swbuild
from tests import swenv

REPO = Path(__file__).resolve().parents[1]
TOY_OP_DIR = Path(__file__).resolve().parent / "swcann_toy_op"
API_PREFIXES = ("acl", "swcann")


def _clean_env(root: Path | None = None) -> dict[str, str]:
    """A fresh shell's environment with `root`'s set_env.sh applied (the libraries need it: no RUNPATH)."""
    env = swenv.env_for(root or swbuild.build())
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")    # the probes use harness.acl.dl
    return env


def _compile_smoke(root: Path, out: Path, extra: tuple[str, ...] = ()) -> Path:
    try:
        return swbuild.compile_smoke(root, out, extra)
    except swbuild.BuildError as e:
        pytest.fail(f"smoke driver did not compile: {e}")


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: int = 120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else _clean_env())


@pytest.fixture(scope="module")
def root() -> Path:
    return swbuild.build()


def test_build_tree_and_flags(root):
    info = swbuild.read_info(root)
    assert info["software_cann"] == "1"
    assert "-Wall -Wextra -Werror" in info["cflags"], info["cflags"]
    assert "-std=c11" in info["cflags"] and "-fvisibility=hidden" in info["cflags"]
    for lib in ("libacl_rt.so", "libascendcl.so", "libnnopbase.so", "libopapi_nn.so", "libopapi_math.so"):
        assert (root / "lib64" / lib).is_file()
    assert (root / "driver" / "lib64" / "driver" / "libascend_hal.so").is_file()
    assert not (root / "lib64" / "libascend_hal.so").exists()      # the driver's, not CANN's
    assert (root / "include" / "acl" / "acl.h").is_file()
    assert (root / "include" / "aclnn" / "acl_meta.h").is_file()
    toolkit = next(root.glob("*-linux/ascend_toolkit_install.info")).read_text()
    assert any(l.startswith("version=") and l.endswith("-swcann") for l in toolkit.splitlines())
    assert root.parent == REPO / "build" / "swcann"


def test_build_is_cached(root):
    before = (root / "lib64" / "libopapi_nn.so").stat().st_mtime_ns
    assert swbuild.build() == root
    assert (root / "lib64" / "libopapi_nn.so").stat().st_mtime_ns == before


def _declared_ops(root: Path) -> set[str]:
    """The aclnn entry points the installed op headers declare."""
    decl = re.compile(r"ACL_FUNC_VISIBILITY\s+aclnnStatus\s+(aclnn\w+)\s*\(")
    return {m for h in (root / "include" / "aclnnop").glob("*.h") for m in decl.findall(h.read_text())}


def _dynamic_symbols(path: Path) -> set[str]:
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm (binutils) not installed")
    out = _run([nm, "-D", "--defined-only", str(path)]).stdout
    return {l.split()[-1] for l in out.splitlines() if l.strip()}


def _registered_ops() -> set[str]:
    """The two entry points of every operator the checkout registers (a case file in cases/)."""
    from harness.audit import traceability
    return {f"aclnn{op.name}{suffix}" for op, _ in traceability.load_all() for suffix in ("", "GetWorkspaceSize")}


@pytest.mark.loops_over_ops
def test_exports_only_api(root):
    """Each library exports the API and nothing internal; libopapi_nn exactly the entry points of the
    registered operators (a header of ours is optional: a header a real CANN ships, when there is one,
    must declare what is exported)."""
    ops = _registered_ops()
    assert len(ops) >= 10 and _declared_ops(root) <= ops
    expected = {
        "libacl_rt.so": {"aclInit", "aclFinalize", "aclGetRecentErrMsg", "aclrtSetDevice",
                           "aclrtMalloc", "aclrtMemcpy", "aclrtSynchronizeStream", "aclrtGetSocName",
                           "swcannGetStats", "swcannInjectFault", "swcannVersion", "swcannGetKernelLaunches"},
        "libnnopbase.so": {"aclCreateTensor", "aclDestroyTensor", "aclCreateIntArray", "aclGetViewShape",
                           "aclSetAclOpExecutorRepeatable", "aclDestroyAclOpExecutor", "aclnnInit"},
        "libopapi_nn.so": ops,
    }
    for lib, names in expected.items():
        syms = _dynamic_symbols(root / "lib64" / lib)
        assert names <= syms, f"{lib} lacks {sorted(names - syms)}"
        stray = sorted(s for s in syms if not s.startswith(API_PREFIXES) and not s.startswith("_"))
        assert not stray, f"{lib} exports internal symbols {stray}"
    opapi = {s for s in _dynamic_symbols(root / "lib64" / "libopapi_nn.so") if s.startswith("aclnn")}
    assert opapi == ops, (f"exported but of no registered operator: {sorted(opapi - ops)}; "
                          f"registered but not exported: {sorted(ops - opapi)}")


@pytest.mark.loops_over_ops
def test_each_op_source_includes_its_own_header():
    """An op source that has a header (the in-tree ops mirror the headers a CANN ships) includes it,
    so the compiler checks every definition against its declaration. A header is optional: an op
    without one is declared by its definition alone."""
    define = re.compile(r"ACL_FUNC_VISIBILITY\s+aclnnStatus\s+(aclnn\w+)\s*\(")
    headers = {h.name: set(define.findall(h.read_text()))
               for h in (REPO / "swcann" / "include" / "aclnnop").glob("*.h")}
    sources = sorted((REPO / "swcann" / "src" / "ops").glob("*.c")) + sorted(TOY_OP_DIR.glob("*.c"))
    ops = [src for src in sources if define.search(src.read_text())]
    assert len(ops) >= 6
    for src in ops:
        text = src.read_text()
        defined = set(define.findall(text))
        beside = {h.name: set(define.findall(h.read_text())) for h in src.parent.glob("*.h")}
        own = [h for h, names in {**headers, **beside}.items() if defined <= names]
        if not own:
            continue  # no header: nothing to include

        assert any(f'#include "aclnnop/{h}"' in text or f'#include "{h}"' in text for h in own), \
            f"{src.name} does not include its own header ({', '.join(own)})"


# prints the C side's one dtype/format table, compiled from the header the libraries use
_TABLE_DUMP = r"""
#include <stdio.h>
#include "swc_types.h"
int main(void)
{
    int n;
    const swc_dtype_row *d = swc_dtype_table(&n);
    for (int i = 0; i < n; i++) printf("dtype %d %s %zu\n", d[i].value, d[i].name, d[i].size);
    const swc_format_row *f = swc_format_table(&n);
    for (int i = 0; i < n; i++) printf("format %d %s %d\n", f[i].value, f[i].name, f[i].is_private);
    return 0;
}
"""


def _c_type_tables(tmp_path: Path, root: Path) -> tuple[dict, dict]:
    """The tables as the libraries compile them: the built tree's acl.h, the platform header the build
    generates (written here again from the same file), swc_types.h from the sources."""
    src, exe = tmp_path / "dump.c", tmp_path / "dump"
    src.write_text(_TABLE_DUMP)
    (tmp_path / "swc_platform.h").write_text(cheader.header())
    cc = shlex.split(os.environ.get("CC") or "cc")
    r = subprocess.run(cc + ["-std=c11", "-Wall", "-Werror", "-I", str(root / "include"), "-I", str(tmp_path),
                             "-I", str(REPO / "swcann" / "src" / "shared"), str(src), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    c_dtypes, c_formats = {}, {}
    for line in _run([str(exe)]).stdout.splitlines():
        kind, value, name, extra = line.split()
        (c_dtypes if kind == "dtype" else c_formats)[int(value)] = (name, int(extra))
    return c_dtypes, c_formats


def test_c_type_table_matches_python(tmp_path, root):
    c_dtypes, c_formats = _c_type_tables(tmp_path, root)
    for name, d in dtypes.BY_NAME.items():
        assert c_dtypes.get(d.acl) == (d.ge_name, d.itemsize), (name, d.acl, c_dtypes.get(d.acl))
    assert {name: value for value, (name, _) in c_formats.items()} == formats.FORMATS
    # every platform dtype (test_acl_abi.py pins those to acl_abi.md 3.1), and DT_UNDEFINED
    assert len(c_dtypes) == len(dtypes.BY_NAME) and c_dtypes[-1][0] == "DT_UNDEFINED"


def test_c_type_table_check_fails_on_disagreement(tmp_path, root, monkeypatch):
    """Break the Python side on purpose: the comparison must catch it."""
    wrong = dict(formats.FORMATS, NCL=48)
    monkeypatch.setattr(formats, "FORMATS", wrong)
    with pytest.raises(AssertionError):
        test_c_type_table_matches_python(tmp_path, root)
    monkeypatch.undo()
    bf16 = dtypes.lookup("bfloat16")
    monkeypatch.setitem(dtypes.BY_NAME, "bfloat16", dataclasses.replace(bf16, acl=28))
    with pytest.raises(AssertionError):
        test_c_type_table_matches_python(tmp_path, root)


def test_smoke(root, tmp_path):
    exe = _compile_smoke(root, tmp_path / "smoke")
    r = _run([str(exe)])
    assert r.returncode == 0 and "smoke: OK" in r.stdout, r.stdout + r.stderr


def test_smoke_valgrind(root, tmp_path):
    vg = shutil.which("valgrind")
    if not vg:
        pytest.skip("valgrind is not installed")
    exe = _compile_smoke(root, tmp_path / "smoke")
    r = _run([vg, "-q", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
              str(exe)], timeout=300)
    assert r.returncode == 0 and "smoke: OK" in r.stdout, r.stdout + r.stderr


def test_smoke_asan(tmp_path):
    root = swbuild.build(asan=True)
    assert "-fsanitize=address" in swbuild.read_info(root)["cflags"]
    exe = _compile_smoke(root, tmp_path / "smoke_asan", ("-fsanitize=address", "-fno-omit-frame-pointer"))
    env = _clean_env(root)
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    r = _run([str(exe)], env=env, timeout=300)   # env: the asan tree's set_env.sh
    assert r.returncode == 0 and "smoke: OK" in r.stdout, r.stdout + r.stderr


def test_broken_compiler_gives_clear_error(monkeypatch):
    digests = []

    def failing_digest():   # the temp dirs of these builds, not of builds running beside this test
        digests.append(swbuild._content_hash(swbuild._cc(), swbuild._cflags(False)))

    monkeypatch.setenv("CC", "false")
    failing_digest()
    with pytest.raises(swbuild.BuildError) as ei:
        swbuild.build()
    msg = str(ei.value)
    assert "compiler command `false" in msg and "exited with status" in msg and "\n" not in msg
    # a compiler that explains itself: its stderr is quoted in the error
    monkeypatch.setenv("CC", "sh -c 'echo cc1: fatal error: boom >&2; exit 3' sh")
    failing_digest()
    with pytest.raises(swbuild.BuildError, match="status 3; its stderr was: cc1: fatal error: boom"):
        swbuild.build()
    monkeypatch.setenv("CC", "/nonexistent/cc")
    failing_digest()
    with pytest.raises(swbuild.BuildError, match="could not run the compiler command"):
        swbuild.build()
    left = [p for d in digests for p in (REPO / "build" / "swcann").glob(f".tmp-{d}-*")]
    assert not left, f"failed builds must not leave temp dirs: {left}"


def test_concurrent_builds_share_one_tree(root):
    # a unique (harmless) define gives a fresh hash, so the processes really race
    cc = (os.environ.get("CC") or "cc") + f" -DSWCANN_RACE_{uuid.uuid4().hex[:8]}=1"
    env = _clean_env()
    env["CC"] = cc
    code = "from swcann.build import build; print(build())"
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    try:
        assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
        roots = {o[0].strip() for o in outs}
        assert len(roots) == 1, roots
        built = Path(roots.pop())
        assert (built / "swcann.info").is_file() and (built / "lib64" / "libopapi_nn.so").is_file()
        assert not list(built.parent.glob(f".tmp-{built.name}-*"))
    finally:
        for o in outs:
            p = Path(o[0].strip()) if o[0].strip() else None
            if p and p != root and p.parent == REPO / "build" / "swcann":
                shutil.rmtree(p, ignore_errors=True)


# what every ctypes probe below starts with: the libraries opened as torch_npu opens them, and
# helpers that make tensors (row-major strides unless given) and int arrays
_PROBE_PRELUDE = r"""
import ctypes, os, sys
lib = sys.argv[1]
from harness.acl.dl import open_library     # RTLD_LAZY | RTLD_GLOBAL, as torch_npu / op-plugin
rt = open_library(os.path.join(lib, "libacl_rt.so"))
nn = open_library(os.path.join(lib, "libnnopbase.so"))
op = open_library(os.path.join(lib, "libopapi_nn.so"))
rt.aclrtGetSocName.restype = ctypes.c_char_p
rt.aclGetRecentErrMsg.restype = ctypes.c_char_p
nn.aclCreateTensor.restype = ctypes.c_void_p
nn.aclCreateIntArray.restype = ctypes.c_void_p
P64, U64, VP = ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, ctypes.c_void_p
nn.aclCreateTensor.argtypes = [P64, U64, ctypes.c_int, P64, ctypes.c_int64, ctypes.c_int, P64, U64, VP]
nn.aclCreateIntArray.argtypes = [P64, U64]
assert rt.aclInit(None) == 0
print("soc", rt.aclrtGetSocName().decode())
I64 = ctypes.c_int64
def tensor(dims, dt, fmt=0, strides=None):
    d = (I64 * len(dims))(*dims)
    st = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        st[i] = st[i + 1] * dims[i + 1]
    s = (I64 * len(dims))(*(strides or st))
    return ctypes.c_void_p(nn.aclCreateTensor(d, len(dims), dt, s, 0, fmt, d, len(dims), None))
def arr(v):
    return ctypes.c_void_p(nn.aclCreateIntArray((I64 * len(v))(*v), len(v)))
ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
fp32 = 0
"""

_CTYPES_PROBE = _PROBE_PRELUDE + r"""
st = op.aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(
    tensor([1, 1, 2, 2], fp32), tensor([1, 1, 4, 4], fp32), tensor([1, 1, 2, 2], 3),
    arr([2, 2]), arr([2, 2]), arr([0, 0]), arr([1, 1]), ctypes.c_bool(False),
    tensor([1, 1, 4, 4], fp32), ctypes.byref(ws), ctypes.byref(ex))
m = rt.aclGetRecentErrMsg()
print("mp2", st, (m or b"").decode())
st = op.aclnnAvgPool2dBackwardGetWorkspaceSize(
    tensor([1, 1, 2, 2], fp32), tensor([1, 1, 4, 4], fp32), arr([2, 2]), arr([2, 2]), arr([0, 0]),
    ctypes.c_bool(False), ctypes.c_bool(True), I64(300), ctypes.c_int8(0),
    tensor([1, 1, 4, 4], fp32), ctypes.byref(ws), ctypes.byref(ex))
m = rt.aclGetRecentErrMsg()
print("avg", st, (m or b"").decode())
"""


_CONTIGUITY_PROBE = _PROBE_PRELUDE + r"""
int64, ndc1hwc0 = 9, 32
for name, shape, strides, fmt in (
        ("row-major", [2, 1, 2, 3, 3], None, 2),
        ("strided", [2, 1, 2, 3, 3], [36, 36, 18, 6, 2], 2),
        ("strided-private-format", [2, 1, 2, 3, 3], [36, 36, 18, 6, 2], ndc1hwc0),
        ("strided-size-1-dims-only", [2, 1, 2, 3, 3], [18, 99, 9, 3, 1], 2),
        ("strided-empty", [0, 1, 2, 3, 3], [36, 36, 18, 6, 2], 2),
        ("strided-one-element", [1, 1, 1, 1, 1], [5, 5, 5, 5, 5], 2)):
    go = [shape[0], 1, 4, 6, 6]
    st = op.aclnnMaxUnpool3dBackwardGetWorkspaceSize(
        tensor(go, fp32), tensor(shape, fp32), tensor(shape, int64), arr(go[2:]), arr([2, 3, 2]),
        arr([0, 0, 0]), tensor(shape, fp32, fmt, strides), ctypes.byref(ws), ctypes.byref(ex))
    print(name, st, (rt.aclGetRecentErrMsg() or b"").decode() if st else "")
"""


def test_contiguity_follows_opbase_is_contiguous(root):
    """MaxUnpool3d's B3 asks opbase's IsContiguous(out): a private storage format or a view of 0 or
    1 elements is contiguous whatever its strides, and size-1 dims' strides never matter. Only a
    genuinely strided view of more than one element fails (the spec names the check, not these rules;
    hicann/opbase's tensor_view_utils states them)."""
    r = _run([sys.executable, "-c", _CONTIGUITY_PROBE, str(root / "lib64")])
    assert r.returncode == 0, r.stderr
    got = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in r.stdout.splitlines()[1:]}
    strided = got.pop("strided")
    assert strided.startswith("161002 ") and "check B3 failed" in strided, strided
    assert got == {"row-major": "0 ", "strided-private-format": "0 ", "strided-size-1-dims-only": "0 ",
                   "strided-empty": "0 ", "strided-one-element": "0 "}, got


@pytest.mark.parametrize("family,soc,mp2,avg", [
    ("ascend910b", "Ascend910B2", "0", "0"),            # AvgPool: divisor 300 -> AvgPool3DGrad path
    ("ascend950", "Ascend950PR_9579", "0", "0"),
    ("ascend910", "Ascend910A", "161002 B9", "161002 B3.2"),
    ("ascend310p", "Ascend310P3", "161002 B9", "161002 B3.2"),
    ("Ascend910_9392", "Ascend910_9392", "0", "0"),
])
def test_family_routing_through_ctypes(root, family, soc, mp2, avg):
    env = _clean_env()
    env["SWCANN_SOC"] = family
    r = _run([sys.executable, "-c", _CTYPES_PROBE, str(root / "lib64")], env=env)
    assert r.returncode == 0, r.stderr
    lines = dict(l.split(" ", 1) for l in r.stdout.splitlines())
    assert lines["soc"] == soc
    for key, want in (("mp2", mp2), ("avg", avg)):
        status, *check = want.split()
        got = lines[key].split(" ", 1)
        assert got[0] == status, (key, lines[key])
        if check:
            assert f"check {check[0]} failed" in got[1] and got[1].startswith("EZ1001: [PID: ")


def test_unknown_family_fails_init(root):
    env = _clean_env()
    env["SWCANN_SOC"] = "ascend999"
    code = ("import ctypes,sys; rt=ctypes.CDLL(sys.argv[1]); rt.aclGetRecentErrMsg.restype=ctypes.c_char_p;"
            "print(rt.aclInit(None)); print(rt.aclGetRecentErrMsg().decode())")
    r = _run([sys.executable, "-c", code, str(root / "lib64" / "libacl_rt.so")], env=env)
    status, msg = r.stdout.split("\n", 1)
    assert status == "100000" and "SWCANN_SOC" in msg and "ascend310b" in msg


_DEVIATION_PROBE = r"""
import ctypes, os, struct, sys
lib = sys.argv[1]
from harness.acl.dl import open_library     # RTLD_LAZY | RTLD_GLOBAL, as torch_npu / op-plugin
rt = open_library(os.path.join(lib, "libacl_rt.so"))
nn = open_library(os.path.join(lib, "libnnopbase.so"))
op = open_library(os.path.join(lib, "libopapi_nn.so"))
VP, P64, U64 = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64
nn.aclCreateTensor.restype = VP
nn.aclCreateTensor.argtypes = [P64, U64, ctypes.c_int, P64, ctypes.c_int64, ctypes.c_int, P64, U64, VP]
nn.aclCreateIntArray.restype = VP
nn.aclCreateIntArray.argtypes = [P64, U64]
rt.aclrtMalloc.argtypes = [ctypes.POINTER(VP), ctypes.c_size_t, ctypes.c_int]
rt.aclrtMemcpy.argtypes = [VP, ctypes.c_size_t, VP, ctypes.c_size_t, ctypes.c_int]
op.aclnnAvgPool2dBackward.argtypes = [VP, U64, VP, VP]
assert rt.aclInit(None) == 0 and rt.aclrtSetDevice(0) == 0
def tensor(dims, dt, raw=None):
    n = 1
    for d in dims: n *= d
    es = 4 if dt == 0 else 2
    p = VP()
    assert rt.aclrtMalloc(ctypes.byref(p), n * es, 0) == 0
    if raw is not None:
        buf = ctypes.create_string_buffer(raw, len(raw))
        assert rt.aclrtMemcpy(p, n * es, buf, len(raw), 1) == 0
    st = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1): st[i] = st[i + 1] * dims[i + 1]
    D, S = (ctypes.c_int64 * len(dims))(*dims), (ctypes.c_int64 * len(dims))(*st)
    return VP(nn.aclCreateTensor(D, len(dims), dt, S, 0, 0, D, len(dims), p)), p, n * es
def arr(v): return VP(nn.aclCreateIntArray((ctypes.c_int64 * len(v))(*v), len(v)))
def avg(H, dt, k, pad, g_raw):
    go, _, _ = tensor([1, 1, 1, 1], dt, g_raw)
    self_, _, _ = tensor([1, 1, H, H], dt)
    gi, gp, nb = tensor([1, 1, H, H], dt)
    ws, ex = ctypes.c_uint64(), VP()
    st = op.aclnnAvgPool2dBackwardGetWorkspaceSize(go, self_, arr([k, k]), arr([k, k]), arr([pad, pad]),
        ctypes.c_bool(False), ctypes.c_bool(True), ctypes.c_int64(0), ctypes.c_int8(0), gi,
        ctypes.byref(ws), ctypes.byref(ex))
    assert st == 0, st
    w = VP()
    if ws.value: assert rt.aclrtMalloc(ctypes.byref(w), ws.value, 0) == 0
    assert op.aclnnAvgPool2dBackward(w, ws.value, ex, None) == 0
    assert rt.aclrtSynchronizeStream(None) == 0
    out = ctypes.create_string_buffer(nb)
    assert rt.aclrtMemcpy(out, nb, gp, nb, 2) == 0
    return out.raw
# global-avg-pool path with padding: documented -> last 2 rows/cols are 0; deviation -> g/k^2 everywhere
o = avg(10, 0, 10, 2, struct.pack("f", 1.0))
print("pad", struct.unpack_from("f", o, 0)[0], struct.unpack_from("f", o, 4 * 99)[0])
# FP16 global path with H*W = 65536: divisor overflows to +inf under the deviation
o = avg(256, 1, 256, 0, struct.pack("e", 1000.0))
print("fp16", struct.unpack_from("e", o, 0)[0])
"""


@pytest.mark.parametrize("deviations", ["0", "1"])
def test_documented_deviations_switch(root, deviations):
    env = _clean_env()
    env["SWCANN_SOC"] = "ascend910b"
    env["SWCANN_DEVIATIONS"] = deviations
    r = _run([sys.executable, "-c", _DEVIATION_PROBE, str(root / "lib64")], env=env)
    assert r.returncode == 0, r.stderr
    vals = {l.split()[0]: [float(v) for v in l.split()[1:]] for l in r.stdout.splitlines()}
    if deviations == "0":  # documented (PyTorch) semantics
        assert vals["pad"] == [pytest.approx(0.01), 0.0]
        assert vals["fp16"][0] == pytest.approx(1000.0 / 65536, rel=1e-3)
    else:  # spec avg_pool2d_backward.md C.4 / G.8
        assert vals["pad"] == [pytest.approx(0.01), pytest.approx(0.01)]
        assert vals["fp16"][0] == 0.0


# Calls aclnnToyIdentity through ctypes, loading the tree the way the harness loads any CANN.
_TOY_PROBE = r"""
import ctypes, struct, sys
from pathlib import Path
from harness.acl import loader
libs = loader.load(loader.discover(env={"ASCEND_HOME_PATH": sys.argv[1]}, defaults=()))
rt, nn = libs.runtime, libs.nnopbase
VP, U64 = ctypes.c_void_p, ctypes.c_uint64
phase1, phase2 = libs.op_function("aclnnToyIdentityGetWorkspaceSize"), libs.op_function("aclnnToyIdentity")
phase1.argtypes = [VP, VP, ctypes.POINTER(U64), ctypes.POINTER(VP)]
phase2.argtypes = [VP, U64, VP, VP]
assert rt.aclInit(None) == 0 and rt.aclrtSetDevice(0) == 0
def tensor(values, dt, es):
    p = VP()
    assert rt.aclrtMalloc(ctypes.byref(p), len(values) * es, 0) == 0
    raw = struct.pack("%df" % len(values), *values) if dt == 0 else bytes(len(values) * es)
    assert rt.aclrtMemcpy(p, len(raw), raw, len(raw), 1) == 0
    dims = (ctypes.c_int64 * 1)(len(values))
    return nn.aclCreateTensor(dims, 1, dt, None, 0, 2, dims, 1, p), p
src, _ = tensor([1.5, -2.0, 3.25], 0, 4)
out, out_dev = tensor([0.0, 0.0, 0.0], 0, 4)
ws, ex = U64(), VP()
assert phase1(src, out, ctypes.byref(ws), ctypes.byref(ex)) == 0
w = VP()
assert rt.aclrtMalloc(ctypes.byref(w), ws.value, 0) == 0
assert phase2(w, ws.value, ex, None) == 0 and rt.aclrtSynchronizeStream(None) == 0, rt.aclGetRecentErrMsg()
got = ctypes.create_string_buffer(12)
assert rt.aclrtMemcpy(got, 12, out_dev, 12, 2) == 0
print("values", *struct.unpack("3f", got.raw))
half, _ = tensor([0.0, 0.0, 0.0], 1, 2)
print("mismatch", phase1(src, half, ctypes.byref(ws), ctypes.byref(ex)), rt.aclGetRecentErrMsg().decode())
"""


def test_op_directory_adds_an_operator(tmp_path, monkeypatch):
    op_dir = tmp_path / "ops"
    shutil.copytree(TOY_OP_DIR, op_dir)
    built = []
    try:
        root = swbuild.build(op_dirs=[op_dir])
        built.append(root)
        assert swbuild.read_info(root)["op_dirs"] == str(op_dir)
        assert (root / "include" / "aclnnop" / "aclnn_toy_identity.h").is_file()
        assert _declared_ops(root) == _declared_ops(swbuild.build()) | {
            "aclnnToyIdentityGetWorkspaceSize", "aclnnToyIdentity"}
        opapi = {s for s in _dynamic_symbols(root / "lib64" / "libopapi_nn.so") if s.startswith("aclnn")}
        headerless = {"aclnnToyAvgPool3dBackwardGetWorkspaceSize", "aclnnToyAvgPool3dBackward"}
        assert opapi == _declared_ops(root) | headerless
        env = _clean_env(root)          # this tree's set_env.sh, not the default tree's
        r = _run([sys.executable, "-c", _TOY_PROBE, str(root)], env=env)
        assert r.returncode == 0, r.stderr
        lines = dict(l.split(" ", 1) for l in r.stdout.splitlines())
        assert lines["values"] == "1.5 -2.0 3.25"
        want = "[aclnnToyIdentity] check T4 failed: out dtype DT_FLOAT16 != self dtype DT_FLOAT"
        assert lines["mismatch"].startswith("161002 EZ1001") and want in lines["mismatch"]
        # the automatic build reads $SWCANN_OP_DIRS; the hash covers the op's source
        monkeypatch.setenv(swbuild.OP_DIRS_ENV, os.pathsep.join(["", str(op_dir)]))
        assert swbuild.build() == root
        with (op_dir / "aclnn_toy_identity.c").open("a") as f:
            f.write("/* edited */\n")
        built.append(swbuild.build())
        assert built[1] != root and (built[1] / "lib64" / "libopapi_nn.so").is_file()
        monkeypatch.setenv(swbuild.OP_DIRS_ENV, str(tmp_path / "missing"))
        with pytest.raises(swbuild.BuildError, match="is not a directory"):
            swbuild.build()
    finally:
        for b in built:
            shutil.rmtree(b, ignore_errors=True)


# The shared average kernel on 3-D windows (toy_avg_pool3d_backward.c, no header), against
# PyTorch's avg_pool3d backward: prints the largest absolute error of each case.
_AVG3D_PROBE = r"""
import ctypes, sys, torch
from harness.core import formats
from harness.acl import loader
libs = loader.load(loader.discover(env={"ASCEND_HOME_PATH": sys.argv[1]}, defaults=()))
rt, nn = libs.runtime, libs.nnopbase
VP, U64, I64 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64
phase1 = libs.op_function("aclnnToyAvgPool3dBackwardGetWorkspaceSize")
phase2 = libs.op_function("aclnnToyAvgPool3dBackward")
phase1.argtypes = [VP] * 5 + [ctypes.c_bool, I64, VP, ctypes.POINTER(U64), ctypes.POINTER(VP)]
phase2.argtypes = [VP, U64, VP, VP]
assert rt.aclInit(None) == 0 and rt.aclrtSetDevice(0) == 0
def upload(t):
    raw = t.detach().contiguous().numpy().tobytes()
    p = VP()
    assert rt.aclrtMalloc(ctypes.byref(p), len(raw), 0) == 0
    assert rt.aclrtMemcpy(p, len(raw), raw, len(raw), 1) == 0
    dims = (I64 * t.dim())(*t.shape)
    return nn.aclCreateTensor(dims, t.dim(), 0, None, 0, formats.FORMATS["NCDHW"], dims, t.dim(), p), p
def ints(v):
    return nn.aclCreateIntArray((I64 * 3)(*v), 3)
torch.manual_seed(0)
for k, s, p, ceil, cip, div in [((2, 3, 2), (2, 2, 1), (1, 1, 0), False, True, 0),
                                ((2, 3, 2), (2, 2, 1), (1, 1, 0), False, False, 0),
                                ((3, 3, 3), (2, 2, 2), (1, 1, 1), True, True, 0),
                                ((3, 3, 3), (2, 2, 2), (1, 1, 1), True, False, 0),
                                ((2, 2, 3), (1, 2, 2), (0, 1, 1), False, True, 5)]:
    x = torch.randn(2, 3, 5, 6, 7, requires_grad=True)
    y = torch.nn.functional.avg_pool3d(x, k, s, p, ceil_mode=ceil, count_include_pad=cip,
                                       divisor_override=div or None)
    g = torch.randn_like(y)
    y.backward(g)
    go, _ = upload(g)
    self_, _ = upload(x)
    gi, gi_dev = upload(torch.zeros_like(x))
    ws, ex = U64(), VP()
    assert phase1(go, self_, ints(k), ints(s), ints(p), cip, div, gi, ctypes.byref(ws), ctypes.byref(ex)) == 0
    w = VP()
    assert rt.aclrtMalloc(ctypes.byref(w), ws.value, 0) == 0
    assert phase2(w, ws.value, ex, None) == 0 and rt.aclrtSynchronizeStream(None) == 0
    out = torch.zeros_like(x).detach().contiguous()
    assert rt.aclrtMemcpy(out.data_ptr(), out.nbytes, gi_dev, out.nbytes, 2) == 0
    print(float((out - x.grad).abs().max()))
"""


def test_shared_average_kernel_on_3d_windows():
    root = swbuild.build(op_dirs=[TOY_OP_DIR])
    env = _clean_env()
    env["PYTHONPATH"] = str(REPO)
    r = _run([sys.executable, "-c", _AVG3D_PROBE, str(root)], env=env)
    assert r.returncode == 0, r.stderr
    errors = [float(v) for v in r.stdout.split()]
    assert len(errors) == 5 and max(errors) < 1e-5, errors

_FAULTS_INIT = r"""
import ctypes, os, sys
rt = ctypes.CDLL(os.path.join(sys.argv[1], "libascendcl.so"))
rt.aclGetRecentErrMsg.restype = ctypes.c_char_p
ret = rt.aclInit(None)
print(ret, (rt.aclGetRecentErrMsg() or b"").decode())
"""


@pytest.mark.parametrize("value,ok,says", [
    ("phase2_segv@numel=4913,sync_hang@op=aclnnMaxUnpool3dBackward&numel=8", True, ""),
    ("sync_507015", True, ""),
    ("phase2_explode", False, "unknown fault 'phase2_explode' (known: phase2_segv, phase2_abort"),
    ("phase2_hang@numel=x", False, "numel wants a non-negative integer, got 'x'"),
    ("phase2_hang@when=3", False, "unknown trigger 'when=3' (numel=N or op=NAME)"),
])
def test_swcann_faults_grammar(root, value, ok, says):
    """SWCANN_FAULTS is read at aclInit; a mistake is aclInit 100000 with a message naming it."""
    r = _run([sys.executable, "-c", _FAULTS_INIT, str(root / "lib64")], env={**_clean_env(), "SWCANN_FAULTS": value})
    code, _, message = r.stdout.strip().partition(" ")
    assert (code == "0") == ok, r.stdout + r.stderr
    assert says in message and (ok or f"Value '{value}' for env SWCANN_FAULTS is invalid" in message), message
