"""Checks of golden/ against the independent loop references, torch autograd,
the spec's documented examples, and mutants that a correct check must catch."""
import math
import random
import sys
import types
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

_HERE = Path(__file__).resolve().parent
for _p in (str(_HERE.parent), str(_HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import golden  # noqa: E402
import reference_loops  # noqa: E402
from golden import _common  # noqa: E402

OPS = [
    "max_pool2d_with_indices_backward",
    "max_pool3d_with_argmax_backward",
    "adaptive_max_pool2d_backward",
    "avg_pool2d_backward",
    "max_unpool3d_backward",
]
N_REF = 300        # configs per op compared with the loop reference
N_AUTOGRAD = 50    # configs per op compared with torch autograd
FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


# ----------------------------------------------------------------- fakes ----

def make_draw(seed, mode="normal"):
    """Deterministic stand-in for the harness's draw(name, shape, dtype).
    mode "ties" rounds values to halves (many equal maxima); "special"
    sprinkles +-inf and NaN."""
    def draw(name, shape, dtype):
        g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
        shape = tuple(shape)
        if not dtype.is_floating_point:
            info = torch.iinfo(dtype)
            return torch.randint(max(info.min, -100), min(info.max, 100) + 1, shape,
                                 generator=g, dtype=torch.int64).to(dtype)
        v = torch.randn(shape, generator=g, dtype=torch.float64)
        if mode == "ties":
            v = torch.round(v * 2) / 2
        elif mode == "special" and v.numel():
            pick = torch.rand(shape, generator=g) < 0.1
            which = torch.randint(0, 3, shape, generator=g)
            v[pick & (which == 0)] = math.inf
            v[pick & (which == 1)] = -math.inf
            v[pick & (which == 2)] = math.nan
        return v.to(dtype)
    return draw


def P(shape, dtype, attrs, index_dtype=None):
    return types.SimpleNamespace(shape=tuple(shape), dtype=dtype, index_dtype=index_dtype, attrs=attrs)


def _form(rng, vals, kernel=None):
    """An ABI list for per-axis values: sometimes length 1 (all equal), and
    for stride sometimes empty (== kernel)."""
    vals = list(vals)
    if kernel is not None and vals == list(kernel) and rng.random() < 0.35:
        return []
    if len(set(vals)) == 1 and rng.random() < 0.5:
        return [vals[0]]
    return vals


# ------------------------------------------------------- config generators --
# Each returns (p, tags): tags name the features the config exercises, so the
# coverage test can prove the set hits every feature the brief lists.

def _lead(rng, batched, cmax=3):
    return (rng.randint(1, 2), rng.randint(1, cmax)) if batched else (rng.randint(1, cmax),)


def gen_max_pool(rng, nsp):
    kmax, extra = (4, 5) if nsp == 2 else (3, 2)
    while True:
        k = [rng.randint(1, kmax) for _ in range(nsp)]
        s = [rng.randint(1, kmax) for _ in range(nsp)]
        d = [rng.choice([1, 1, 2, 3] if nsp == 2 else [1, 1, 2]) for _ in range(nsp)]
        p = [rng.randint(0, kk // 2) for kk in k]
        ceil = rng.random() < 0.5
        sp = []
        for a in range(nsp):
            lo = max(1, d[a] * (k[a] - 1) + 1 - 2 * p[a])
            sp.append(rng.randint(lo, lo + extra))
        out = [_common.pool_out_size(*a, ceil) for a in zip(sp, k, s, p, d)]
        # windows made only of padding (dilation) have no defined index: skip
        if not _common.empty_windows(sp, k, s, p, d, out):
            break
    batched = rng.random() < 0.5
    shape = _lead(rng, batched, 3 if nsp == 2 else 2) + tuple(sp)
    attrs = {"kernelSize": _form(rng, k), "stride": _form(rng, s, k), "padding": _form(rng, p),
             "dilation": _form(rng, d), "ceilMode": ceil}
    tags = {f"rank{len(shape)}", f"ceil={ceil}"}
    eff = [dd * (kk - 1) + 1 for dd, kk in zip(d, k)]
    tags |= {"overlap"} if any(e > ss for e, ss in zip(eff, s)) else set()
    tags |= {"gaps"} if any(ss > e for e, ss in zip(eff, s)) else set()
    tags |= {"padding"} if any(p) else set()
    tags |= {"dilation>1"} if max(d) > 1 else set()
    for a in range(nsp):
        fl = _common.pool_out_size(sp[a], k[a], s[a], p[a], d[a], False)
        raw = (sp[a] + 2 * p[a] - eff[a] + s[a] - 1) // s[a] + 1
        if ceil and _common.pool_out_size(sp[a], k[a], s[a], p[a], d[a], True) != fl:
            tags.add("ceil changes shape")
        if ceil and (raw - 1) * s[a] >= sp[a] + p[a]:
            tags.add("drop last window")
    return P(shape, rng.choice(FLOATS), attrs, rng.choice([None, torch.int32, torch.int64])), tags


def gen_adaptive(rng):
    hw = [rng.randint(1, 8) for _ in range(2)]
    out = []
    for n in hw:
        kind = rng.choice(["divides", "any", "larger"])
        if kind == "divides":
            out.append(rng.choice([q for q in range(1, n + 1) if n % q == 0]))
        elif kind == "any":
            out.append(rng.randint(1, n))
        else:
            out.append(rng.randint(n + 1, n + 3))
    batched = rng.random() < 0.5
    shape = _lead(rng, batched) + tuple(hw)
    tags = {f"rank{len(shape)}"}
    tags.add("divisible" if all(a % b == 0 for a, b in zip(hw, out)) else "non-divisible")
    if any(b > a for a, b in zip(hw, out)):
        tags.add("output>input")
    return P(shape, rng.choice(FLOATS), {"outputSize": out}, rng.choice([None, torch.int32, torch.int64])), tags


def gen_avg(rng):
    k = [rng.randint(1, 4) for _ in range(2)]
    s = [rng.randint(1, 4) for _ in range(2)]
    p = [rng.randint(0, kk // 2) for kk in k]
    ceil, cip = rng.random() < 0.5, rng.random() < 0.5
    div = rng.choice([0, 0, 0, rng.randint(1, 6), -rng.randint(1, 6)])
    hw = []
    for a in range(2):
        lo = max(1, k[a] - 2 * p[a])
        hw.append(rng.randint(lo, lo + 6))
    batched = rng.random() < 0.5
    shape = _lead(rng, batched) + tuple(hw)
    stride = rng.choice([None, _form(rng, s, k)])      # None / [] both mean "= kernel"
    attrs = {"kernelSize": _form(rng, k), "stride": stride,
             "padding": _form(rng, p), "ceilMode": ceil, "countIncludePad": cip,
             "divisorOverride": div, "cubeMathType": rng.randint(0, 3)}
    if stride is None:
        s = k
    tags = {f"rank{len(shape)}", f"ceil={ceil}", f"cip={cip}",
            "div=0" if div == 0 else ("div>0" if div > 0 else "div<0")}
    tags |= {"overlap"} if any(kk > ss for kk, ss in zip(k, s)) else set()
    tags |= {"gaps"} if any(ss > kk for kk, ss in zip(k, s)) else set()
    tags |= {"padding"} if any(p) else set()
    for a in range(2):
        if ceil and _common.pool_out_size(hw[a], k[a], s[a], p[a], 1, True) != \
                _common.pool_out_size(hw[a], k[a], s[a], p[a], 1, False):
            tags.add("ceil changes shape")
    return P(shape, rng.choice(FLOATS), attrs), tags


def gen_unpool(rng):
    stride = [rng.randint(1, 3) for _ in range(3)]
    sp = [rng.randint(1, 3) for _ in range(3)]
    out = [n * s + rng.randint(0, s - 1) for n, s in zip(sp, stride)]
    rank = rng.choice([4, 5])
    lead = (rng.randint(1, 2),) if rank == 4 else (rng.randint(1, 2), rng.randint(1, 3))
    attrs = {"outputSize": out, "stride": stride, "padding": [rng.randint(-2, 2) for _ in range(3)]}
    dtype = rng.choice(FLOATS[:2] + [torch.float64] + INTS)
    tags = {f"rank{rank}", "int" if not dtype.is_floating_point else "float"}
    if math.prod(out) > math.prod(sp):
        tags.add("outputSize>self")
    return P(lead + tuple(sp), dtype, attrs), tags


GENERATORS = {
    "max_pool2d_with_indices_backward": lambda rng: gen_max_pool(rng, 2),
    "max_pool3d_with_argmax_backward": lambda rng: gen_max_pool(rng, 3),
    "adaptive_max_pool2d_backward": gen_adaptive,
    "avg_pool2d_backward": gen_avg,
    "max_unpool3d_backward": gen_unpool,
}
REQUIRED_TAGS = {
    "max_pool2d_with_indices_backward": {"rank3", "rank4", "ceil=True", "ceil=False", "overlap", "gaps",
                                         "padding", "dilation>1", "ceil changes shape", "drop last window"},
    "max_pool3d_with_argmax_backward": {"rank4", "rank5", "ceil=True", "ceil=False", "overlap", "gaps",
                                        "padding", "dilation>1", "ceil changes shape", "drop last window"},
    "adaptive_max_pool2d_backward": {"rank3", "rank4", "divisible", "non-divisible", "output>input"},
    "avg_pool2d_backward": {"rank3", "rank4", "ceil=True", "ceil=False", "cip=True", "cip=False",
                            "div=0", "div>0", "div<0", "overlap", "gaps", "padding", "ceil changes shape"},
    "max_unpool3d_backward": {"rank4", "rank5", "int", "float", "outputSize>self"},
}


def configs(op, n, seed, finite=False):
    """n deterministic configs: (description, p, draw, tags)."""
    rng = random.Random(f"{op}/{seed}")
    res = []
    for i in range(n):
        p, tags = GENERATORS[op](rng)
        mode = rng.choice(["normal", "normal", "ties"] + ([] if finite else ["special"]))
        desc = f"#{i} shape={p.shape} dtype={p.dtype} index_dtype={p.index_dtype} attrs={p.attrs} mode={mode}"
        res.append((desc, p, make_draw(seed * 100_000 + i, mode), tags))
    return res


# --------------------------------------------------- the shared checking ----

def _np(t):
    """Tensor -> NumPy in the form the references take (floats as float64)."""
    return t.double().numpy() if t.is_floating_point() else t.numpy()


def compare(op, got, want):
    """None if `got` (golden output tensor) matches the reference array,
    else a short reason. Exact for max pools and unpool (NaN == NaN);
    1e-12 relative for avg pool (the summation order differs)."""
    got = got.detach().cpu()
    if tuple(got.shape) != want.shape:
        return f"shape {tuple(got.shape)} != {want.shape}"
    g = got.numpy()
    if op == "max_unpool3d_backward" and not got.is_floating_point():
        if g.dtype != want.dtype:
            return f"dtype {g.dtype} != {want.dtype}"
        return None if np.array_equal(g, want) else "integer values differ"
    if g.dtype != np.float64:
        return f"dtype {g.dtype} is not float64"
    if op == "avg_pool2d_backward":
        finite = np.abs(want[np.isfinite(want)])
        atol = 1e-12 * (finite.max() if finite.size else 1.0)
        ok = np.allclose(g, want, rtol=1e-12, atol=atol, equal_nan=True)
        ok = ok and all(np.array_equal(f(g), f(want)) for f in (np.isnan, np.isposinf, np.isneginf))
    else:
        ok = np.array_equal(g, want, equal_nan=True)
    if ok:
        return None
    with np.errstate(invalid="ignore"):
        diff = np.nanmax(np.abs(np.nan_to_num(g - want, nan=0.0, posinf=0.0, neginf=0.0)))
    return f"values differ (max finite |diff| {diff:.3g})"


@lru_cache(maxsize=None)
def reference_cases(op):
    """The N_REF configs of `op` with their prepared inputs and the loop
    reference's answer (computed once; the mutation tests reuse them)."""
    mod, ref = golden.load(op), getattr(reference_loops, op)
    cases = []
    for desc, p, draw, tags in configs(op, N_REF, seed=1):
        inputs = mod.prepare(draw, p)
        with np.errstate(invalid="ignore"):     # inf - inf in "special" draws
            want = ref({k: _np(v) for k, v in inputs.items()}, p.attrs)
        cases.append((desc, inputs, p.attrs, want, tags))
    return cases


def check(op, golden_fn):
    """Run `golden_fn` on every reference case; return the failures."""
    out = golden.load(op).OUTPUT
    failures = []
    for desc, inputs, attrs, want, _ in reference_cases(op):
        try:
            why = compare(op, golden_fn(inputs, attrs)[out], want)
        except Exception as e:  # a crashing golden is a failure too
            why = f"raised {type(e).__name__}: {e}"
        if why:
            failures.append(f"{desc}: {why}")
    return failures


# ----------------------------------------------------------- 1. reference ---

@pytest.mark.parametrize("op", OPS)
def test_golden_matches_loop_reference(op):
    failures = check(op, golden.load(op).golden)
    assert not failures, f"{len(failures)}/{N_REF} configs differ, first ones:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("op", OPS)
def test_reference_configs_cover_features(op):
    seen = set().union(*(c[4] for c in reference_cases(op)))
    assert REQUIRED_TAGS[op] <= seen, f"not covered: {REQUIRED_TAGS[op] - seen}"


# ------------------------------------------------------------ 2. autograd ---

def _autograd(op, inputs, attrs):
    x = inputs["self"].double().requires_grad_(True)
    go = inputs["gradOutput"].double()
    if op in ("max_pool2d_with_indices_backward", "max_pool3d_with_argmax_backward"):
        n = 2 if op.startswith("max_pool2d") else 3
        k, s, p, d, ceil = _common.pool_attrs(attrs, n)
        fwd = F.max_pool2d if n == 2 else F.max_pool3d
        y, _ = fwd(x, k, s, p, d, ceil_mode=ceil, return_indices=True)
    elif op == "adaptive_max_pool2d_backward":
        y, _ = F.adaptive_max_pool2d(x, tuple(go.shape[-2:]), return_indices=True)
    elif op == "avg_pool2d_backward":
        k, s, p, _, ceil = _common.pool_attrs(attrs, 2, dilation=False)
        y = F.avg_pool2d(x, k, s, p, ceil, bool(attrs["countIncludePad"]),
                         attrs["divisorOverride"] or None)
    else:
        st = _common.expand(attrs["stride"], 3, "stride")
        y = F.max_unpool3d(x, inputs["indices"].long(), st, st, 0, output_size=tuple(go.shape[-3:]))
    y.backward(go)
    return x.grad


@pytest.mark.parametrize("op", OPS)
def test_golden_matches_torch_autograd(op):
    mod = golden.load(op)
    bad = []
    for desc, p, draw, _ in configs(op, N_AUTOGRAD, seed=2, finite=True):
        inputs = mod.prepare(draw, p)
        got = mod.golden(inputs, p.attrs)[mod.OUTPUT].double()
        want = _autograd(op, inputs, p.attrs)
        if not torch.allclose(got, want, rtol=1e-12, atol=1e-12):
            bad.append(desc)
    assert not bad, f"{len(bad)} configs differ from autograd:\n" + "\n".join(bad[:5])


# ------------------------------------------------------------ 3. mutants ----

def _swap_first_two(t):
    flat = t.reshape(-1).clone()
    if flat.numel() >= 2:
        flat[[0, 1]] = flat[[1, 0]].clone()
    return flat.reshape(t.shape)


def _with_swapped_indices(fn):
    return lambda inputs, attrs: fn({**inputs, "indices": _swap_first_two(inputs["indices"])}, attrs)


def _scatter_overwrite(grad_out, indices, self_shape, n):
    """Mutant of _common.scatter_backward: last writer wins instead of a sum."""
    lead = self_shape[:-n]
    go = grad_out.double().reshape(math.prod(lead), -1)
    out = torch.zeros(go.shape[0], math.prod(self_shape[-n:]), dtype=torch.float64)
    out.scatter_(1, indices.long().reshape(go.shape), go)
    return out.reshape(self_shape)


def _avg_mutants():
    mod = golden.load("avg_pool2d_backward")
    div, win = mod._divisors, mod._axis_windows

    def uncapped_windows(size, k, s, p, n_out):
        # pool size k*k even where a ceil-mode window runs past the padding
        cs, ce, _ = win(size, k, s, p, n_out)
        return cs, ce, [k] * n_out
    return {
        "countIncludePad ignored": ("_divisors", lambda h, w, cip, d: div(h, w, False, d)),
        "divisor off by one": ("_divisors", lambda h, w, cip, d: div(h, w, cip, d) + 1),
        "divisorOverride ignored": ("_divisors", lambda h, w, cip, d: div(h, w, cip, 0)),
        "sign of divisorOverride dropped": ("_divisors", lambda h, w, cip, d: div(h, w, cip, abs(d))),
        "ceil-mode pool size k*k": ("_axis_windows", uncapped_windows),
    }


MUTANTS = [
    (op, name) for op in OPS if op != "avg_pool2d_backward"
    for name in (["swapped indices", "overwrite instead of sum"]
                 if op != "max_unpool3d_backward" else ["swapped indices", "index off by one"])
] + [("avg_pool2d_backward", name) for name in _avg_mutants()]


@pytest.mark.parametrize("op,name", MUTANTS)
def test_mutant_golden_is_caught(op, name, monkeypatch):
    mod = golden.load(op)
    fn = mod.golden
    if name == "swapped indices":
        fn = _with_swapped_indices(mod.golden)
    elif name == "overwrite instead of sum":
        monkeypatch.setattr(_common, "scatter_backward", _scatter_overwrite)
    elif name == "index off by one":
        def fn(inputs, attrs):
            vol = math.prod(inputs["gradOutput"].shape[-3:])
            return mod.golden({**inputs, "indices": (inputs["indices"] + 1) % vol}, attrs)
    else:
        target, repl = _avg_mutants()[name]
        monkeypatch.setattr(mod, target, repl)
    failures = check(op, fn)
    assert failures, f"mutant '{name}' of {op} was not detected by the reference comparison"


# ------------------------------------------------------- 4. doc examples ----

def test_doc_example_max_pool2d():
    mod = golden.load("max_pool2d_with_indices_backward")
    inputs = {"gradOutput": torch.tensor([0.4757, 0.1726]).reshape(1, 1, 2, 1),
              "self": torch.zeros(1, 1, 4, 3), "indices": torch.tensor([0, 6], dtype=torch.int32).reshape(1, 1, 2, 1)}
    attrs = {"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}
    want = torch.zeros(12, dtype=torch.float64)
    want[0], want[6] = float(torch.tensor(0.4757)), float(torch.tensor(0.1726))
    assert torch.equal(mod.golden(inputs, attrs)["gradInput"].reshape(-1), want)
    assert torch.equal(mod.torch_op(inputs, attrs)["gradInput"].reshape(-1), want.float())


def test_doc_example_max_pool3d():
    mod = golden.load("max_pool3d_with_argmax_backward")
    x = torch.tensor([0.0850, -0.5147, -0.0212, -0.5654, -0.3222, 0.5847, 1.7510, 0.9954]).reshape(1, 1, 2, 2, 2)
    attrs = {"kernelSize": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0], "dilation": [1, 1, 1],
             "ceilMode": False}
    inputs = mod.prepare(lambda name, shape, dt: x if name == "self" else torch.full(shape, 0.4757),
                         P((1, 1, 2, 2, 2), torch.float32, attrs))
    assert inputs["indices"].dtype == torch.int32 and inputs["indices"].reshape(-1).tolist() == [6]
    got = mod.golden(inputs, attrs)["gradInput"].reshape(-1)
    assert got[6] == float(torch.tensor(0.4757)) and torch.count_nonzero(got) == 1


def test_repo_example_adaptive():
    # spec G.10: self 3x2, gradOut 2x1, indices {1, 4} (the doc's index 6 is out of range)
    mod = golden.load("adaptive_max_pool2d_backward")
    inputs = {"gradOutput": torch.tensor([0.25, -1.5]).reshape(1, 1, 2, 1), "self": torch.zeros(1, 1, 3, 2),
              "indices": torch.tensor([1, 4]).reshape(1, 1, 2, 1)}
    got = mod.golden(inputs, {})["gradInput"].reshape(-1).tolist()
    assert got == [0, 0.25, 0, 0, -1.5, 0]
    ref = reference_loops.adaptive_max_pool2d_backward({k: _np(v) for k, v in inputs.items()}, {})
    assert ref.reshape(-1).tolist() == got


def _avg(inputs_shape, go, **attrs):
    mod = golden.load("avg_pool2d_backward")
    a = {"padding": [0], "ceilMode": False, "countIncludePad": True, "divisorOverride": 0, "cubeMathType": 0}
    a.update(attrs)
    inputs = {"gradOutput": go, "self": torch.zeros(inputs_shape)}
    return mod.golden(inputs, a)["gradInput"], mod.torch_op(inputs, a)["gradInput"]


def test_avg_negative_divisor_gives_minus_half():
    got, t = _avg((1, 1, 2, 2), torch.ones(1, 1, 1, 1), kernelSize=[2], stride=[2], divisorOverride=-2)
    assert torch.equal(got, torch.full((1, 1, 2, 2), -0.5, dtype=torch.float64))
    assert torch.equal(t, got.float())


@pytest.mark.parametrize("cip,value", [(True, 0.01), (False, 0.015625)])
def test_avg_global_pool_with_padding_matches_spec(cip, value):
    # spec C.4: H=W=10, k=s=10, p=2 -> torch has 8 non-zero rows, 0.01 / 0.015625
    got, _ = _avg((1, 1, 10, 10), torch.ones(1, 1, 1, 1), kernelSize=[10, 10], stride=[10, 10], padding=[2, 2],
                  countIncludePad=cip)
    assert torch.all(got[0, 0, :8, :8] == value) and torch.count_nonzero(got) == 64


def test_avg_ceil_mode_pool_size_matches_spec():
    # spec C.3: H=W=5, k=2, s=2, p=0, ceil, countIncludePad -> last row/col 0.5 (corner 1.0), rest 0.25
    got, t = _avg((1, 1, 5, 5), torch.ones(1, 1, 3, 3), kernelSize=[2], stride=[2], ceilMode=True)
    assert got[0, 0, 0, 0] == 0.25 and got[0, 0, 4, 0] == 0.5 and got[0, 0, 0, 4] == 0.5 and got[0, 0, 4, 4] == 1.0
    assert torch.equal(t, got.float())


def test_output_size_formula_examples():
    # spec max_pool2d B notes: I=1,k=2,s=2,p=1,ceil -> 1 (dropped); I=5,k=2,s=2: floor 2, ceil 3
    assert _common.pool_out_size(1, 2, 2, 1, 1, True) == 1
    assert _common.pool_out_size(5, 2, 2, 0, 1, False) == 2
    assert _common.pool_out_size(5, 2, 2, 0, 1, True) == 3


# ------------------------------------------------------------- 5. prepare ---

@pytest.mark.parametrize("op", OPS)
def test_prepare_matches_torch_forward(op):
    mod = golden.load(op)
    for desc, p, draw, _ in configs(op, 20, seed=3):
        inputs = mod.prepare(draw, p)
        x = inputs["self"]
        assert tuple(x.shape) == p.shape and x.dtype == p.dtype, desc
        assert all(t.is_contiguous() for t in inputs.values()), desc
        assert inputs["gradOutput"].dtype == p.dtype, desc
        if op.startswith("max_pool"):
            n = 2 if op.startswith("max_pool2d") else 3
            k, s, pd, d, ceil = _common.pool_attrs(p.attrs, n)
            y, idx = (F.max_pool2d if n == 2 else F.max_pool3d)(x.double(), k, s, pd, d, ceil, return_indices=True)
            default_idx = torch.int32
        elif op == "adaptive_max_pool2d_backward":
            y, idx = F.adaptive_max_pool2d(x.double(), p.attrs["outputSize"], return_indices=True)
            default_idx = torch.int64
        elif op == "avg_pool2d_backward":
            k, s, pd, _, ceil = _common.pool_attrs(p.attrs, 2, dilation=False)
            y = F.avg_pool2d(x.double(), k, s, pd, ceil, p.attrs["countIncludePad"])
            assert set(inputs) == {"gradOutput", "self"}
            assert inputs["gradOutput"].shape == y.shape, desc
            continue
        else:
            st = p.attrs["stride"]
            y, idx = F.max_pool3d(draw("unpooled", p.shape[:-3] + tuple(p.attrs["outputSize"]), p.dtype).double(),
                                  st, st, 0, return_indices=True)
            assert inputs["gradOutput"].shape == p.shape[:-3] + tuple(p.attrs["outputSize"]), desc
            default_idx = torch.int64
            y = x   # indices have self's shape
        assert inputs["indices"].dtype == (p.index_dtype or default_idx), desc
        assert torch.equal(inputs["indices"].long(), idx), desc
        if op != "max_unpool3d_backward":
            assert inputs["gradOutput"].shape == y.shape, desc


@pytest.mark.parametrize("attrs,shape", [
    ({"outputSize": [4, 4, 4], "stride": [1, 1, 1], "padding": [0, 0, 0]}, (1, 1, 2, 2, 2)),
    ({"outputSize": [5, 4, 4], "stride": [2, 2, 2], "padding": [0, 0, 0]}, (1, 3, 2, 2)),
    ({"outputSize": [1, 4, 4], "stride": [2, 2, 2], "padding": [0, 0, 0]}, (1, 1, 1, 2, 2)),
])
def test_prepare_unpool_rejects_inconsistent_config(attrs, shape):
    mod = golden.load("max_unpool3d_backward")
    with pytest.raises(ValueError, match="inconsistent unpool"):
        mod.prepare(make_draw(0), P(shape, torch.float32, attrs))


# ------------------------------------------- golden validation, torch_op ----

def test_load_unknown_golden_names_available():
    with pytest.raises(LookupError) as e:
        golden.load("max_pool1d_backward")
    assert "max_pool1d_backward" in str(e.value) and all(op in str(e.value) for op in OPS)
    assert golden.available() == sorted(OPS)


@pytest.mark.parametrize("op", OPS)
def test_golden_rejects_wrong_grad_shape_and_bad_index(op):
    mod = golden.load(op)
    desc, p, draw, _ = configs(op, 1, seed=4)[0]
    inputs = mod.prepare(draw, p)
    bad = {**inputs, "gradOutput": torch.cat([inputs["gradOutput"]] * 2, dim=-1)}
    with pytest.raises(ValueError):
        mod.golden(bad, p.attrs)
    if "indices" in inputs:
        idx = inputs["indices"].clone()
        idx.reshape(-1)[0] = -1
        with pytest.raises(ValueError):
            mod.golden({**inputs, "indices": idx}, p.attrs)


def test_window_entirely_in_padding_is_rejected():
    # dilation 3, kernel 2, pad 1 on H=2: the only window's taps are rows -1
    # and 2, both outside the input; torch's forward returns -inf and index
    # 12 == H*W (outside the plane), so neither prepare nor golden may use it
    attrs = {"kernelSize": [2, 1], "stride": [2, 3], "padding": [1, 0], "dilation": [3, 2], "ceilMode": True}
    p = P((1, 1, 2, 6), torch.float32, attrs)
    y, idx = F.max_pool2d(torch.randn(p.shape, dtype=torch.float64), (2, 1), (2, 3), (1, 0), (3, 2), True,
                          return_indices=True)
    assert int(idx.max()) >= 12 and torch.isneginf(y).all()
    mod = golden.load("max_pool2d_with_indices_backward")
    with pytest.raises(ValueError, match="entirely in the padding"):
        mod.prepare(make_draw(0), p)
    inputs = {"gradOutput": torch.ones(1, 1, 1, 2), "self": torch.zeros(p.shape), "indices": idx}
    with pytest.raises(ValueError, match="entirely in the padding"):
        mod.golden(inputs, attrs)


def test_attr_normalisation():
    assert _common.pool_attrs({"kernelSize": [3], "stride": [], "padding": [1], "dilation": [2]}, 2) == \
        ((3, 3), (3, 3), (1, 1), (2, 2), False)
    assert _common.pool_attrs({"kernelSize": [3, 1, 2], "stride": [1], "padding": [0], "dilation": [1],
                               "ceilMode": True}, 3) == ((3, 1, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), True)
    assert _common.pool_attrs({"kernelSize": [2, 4], "stride": None, "padding": [1, 2]}, 2, dilation=False)[1] == (2, 4)
    with pytest.raises(ValueError):
        _common.pool_attrs({"kernelSize": [2, 2], "stride": [1, 1], "padding": [2]}, 2)
    with pytest.raises(ValueError):
        _common.pool_attrs({"kernelSize": [2, 2, 2], "stride": [1]}, 2)


@pytest.mark.parametrize("op", OPS)
def test_torch_op_matches_golden_on_strided_inputs(op):
    """torch_op (the torch backend's device under test) agrees with the golden,
    also for non-contiguous and channels_last inputs."""
    mod = golden.load(op)
    for desc, p, draw, _ in configs(op, 20, seed=5):
        p.dtype = torch.float64 if p.dtype.is_floating_point else p.dtype
        inputs = mod.prepare(draw, p)
        want = mod.golden(inputs, p.attrs)[mod.OUTPUT]
        views = [inputs]
        nd = inputs["self"].dim()
        if nd in (4, 5):
            fmt = torch.channels_last if nd == 4 else torch.channels_last_3d
            views.append({k: v.contiguous(memory_format=fmt) for k, v in inputs.items()})
        # a transposed-storage view with the same logical values
        views.append({k: v.transpose(0, 1).contiguous().transpose(0, 1) for k, v in inputs.items()})
        for v in views:
            got = mod.torch_op(v, p.attrs)[mod.OUTPUT]
            assert got.dtype == inputs["gradOutput"].dtype and got.shape == inputs["self"].shape, desc
            assert torch.allclose(got.double(), want.double(), rtol=1e-12, atol=1e-12, equal_nan=True), desc
