"""Checks of golden/ against each op's independent loop reference, torch autograd,
the spec's documented examples, and mutants that a correct check must catch.

Every test loops over the registered goldens (golden.available()) and reads what it
needs from the op's INFO (golden/_opinfo.py); none names an operator.
"""
import math
import random
import zlib
from functools import lru_cache

import numpy as np
import pytest
import torch

import golden
from golden import _common

pytestmark = pytest.mark.loops_over_ops

OPS = golden.available()
N_REF = 300        # configs per op compared with the loop reference
N_AUTOGRAD = 50    # configs per op compared with torch autograd


def info(op):
    return golden.load(op).INFO


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



def configs(op, n, seed, finite=False):
    """n deterministic configs: (description, p, draw, tags)."""
    rng = random.Random(f"{op}/{seed}")
    res = []
    for i in range(n):
        p, tags = info(op).gen_config(rng)
        mode = rng.choice(["normal", "normal", "ties"] + ([] if finite else ["special"]))
        desc = f"#{i} shape={p.shape} dtype={p.dtype} index_dtype={p.index_dtype} attrs={p.attrs} mode={mode}"
        res.append((desc, p, make_draw(seed * 100_000 + i, mode), tags))
    return res


# --------------------------------------------------- the shared checking ----

def _np(t):
    """Tensor -> NumPy in the form the references take (floats as float64)."""
    return t.double().numpy() if t.is_floating_point() else t.numpy()


def compare(op, got, want):
    """None if `got` (golden output tensor) matches the reference array, else a short
    reason. Exact (NaN == NaN) where the op's INFO says so, else 1e-12 relative (the
    summation order differs); integer outputs always exactly, dtype included."""
    got = got.detach().cpu()
    if tuple(got.shape) != want.shape:
        return f"shape {tuple(got.shape)} != {want.shape}"
    g = got.numpy()
    if not got.is_floating_point():
        if g.dtype != want.dtype:
            return f"dtype {g.dtype} != {want.dtype}"
        return None if np.array_equal(g, want) else "integer values differ"
    if g.dtype != np.float64:
        return f"dtype {g.dtype} is not float64"
    if not info(op).exact:
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
    mod, ref = golden.load(op), info(op).reference
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
    required = info(op).required_tags
    assert required <= seen, f"not covered: {required - seen}"


# ------------------------------------------------------------ 2. autograd ---

@pytest.mark.parametrize("op", [op for op in OPS if info(op).autograd is not None])
def test_golden_matches_torch_autograd(op):
    mod = golden.load(op)
    bad = []
    for desc, p, draw, _ in configs(op, N_AUTOGRAD, seed=2, finite=True):
        inputs = mod.prepare(draw, p)
        got = mod.golden(inputs, p.attrs)[mod.OUTPUT].double()
        want = info(op).autograd(inputs, p.attrs)
        if not torch.allclose(got, want, rtol=1e-12, atol=1e-12):
            bad.append(desc)
    assert not bad, f"{len(bad)} configs differ from autograd:\n" + "\n".join(bad[:5])


# ------------------------------------------------------------ 3. mutants ----

MUTANTS = [(op, name) for op in OPS for name in info(op).mutants]


@pytest.mark.parametrize("op,name", MUTANTS)
def test_mutant_golden_is_caught(op, name, monkeypatch):
    fn = info(op).mutants[name](monkeypatch.setattr)
    failures = check(op, fn)
    assert failures, f"mutant '{name}' of {op} was not detected by the reference comparison"


def test_every_op_has_a_mutant():
    """An op whose reference check no broken golden was ever shown to fail proves nothing."""
    assert all(info(op).mutants for op in OPS), [op for op in OPS if not info(op).mutants]


# ------------------------------------------------------- 4. doc examples ----

EXAMPLES = [(op, i) for op in OPS for i in range(len(info(op).examples))]


@pytest.mark.parametrize("op,i", EXAMPLES, ids=[f"{op}-{i}" for op, i in EXAMPLES])
def test_documented_example(op, i):
    info(op).examples[i]()


def test_output_size_formula_examples():
    # spec max_pool2d B notes: I=1,k=2,s=2,p=1,ceil -> 1 (dropped); I=5,k=2,s=2: floor 2, ceil 3
    assert _common.pool_out_size(1, 2, 2, 1, 1, True) == 1
    assert _common.pool_out_size(5, 2, 2, 0, 1, False) == 2
    assert _common.pool_out_size(5, 2, 2, 0, 1, True) == 3


# ------------------------------------------------------------- 5. prepare ---

@pytest.mark.parametrize("op", [op for op in OPS if info(op).forward is not None])
def test_prepare_matches_torch_forward(op):
    mod = golden.load(op)
    for desc, p, draw, _ in configs(op, 20, seed=3):
        inputs = mod.prepare(draw, p)
        x = inputs["self"]
        assert tuple(x.shape) == p.shape and x.dtype == p.dtype, desc
        assert all(t.is_contiguous() for t in inputs.values()), desc
        assert inputs["gradOutput"].dtype == p.dtype, desc
        fwd = info(op).forward(p, draw, inputs)
        assert tuple(inputs["gradOutput"].shape) == fwd.grad_shape, desc
        if fwd.indices is not None:
            assert inputs["indices"].dtype == (p.index_dtype or fwd.index_dtype), desc
            assert torch.equal(inputs["indices"].long(), fwd.indices), desc


# ------------------------------------------- golden validation, torch_op ----

def test_load_unknown_golden_names_available():
    with pytest.raises(LookupError) as e:
        golden.load("max_pool1d_backward")
    assert "max_pool1d_backward" in str(e.value) and all(op in str(e.value) for op in OPS)
    assert golden.available() == sorted(OPS) and OPS


@pytest.mark.parametrize("op", OPS)
def test_golden_rejects_wrong_grad_shape_and_bad_index(op):
    """A gradOutput of another shape is a mistake the golden refuses, unless the op declares that
    gradOutput's shape is its output size (INFO.grad_shape_free): then it is another valid call."""
    mod = golden.load(op)
    desc, p, draw, _ = configs(op, 1, seed=4)[0]
    inputs = mod.prepare(draw, p)
    other = {**inputs, "gradOutput": torch.cat([inputs["gradOutput"]] * 2, dim=-1)}
    if info(op).grad_shape_free:
        assert mod.golden(other, p.attrs)[mod.OUTPUT].shape == inputs["self"].shape
    else:
        with pytest.raises(ValueError):
            mod.golden(other, p.attrs)
    if "indices" in inputs:
        idx = inputs["indices"].clone()
        idx.reshape(-1)[0] = -1
        with pytest.raises(ValueError):
            mod.golden({**inputs, "indices": idx}, p.attrs)


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
