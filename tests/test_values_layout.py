"""Value distributions and memory layouts."""
from __future__ import annotations

import math

import pytest
import torch

from harness.inputs import layout, values
from harness.model import distributions


def _dist(name):
    return distributions.resolve(name, {})


def test_draw_is_deterministic_and_seeded_by_case_and_tensor():
    d = _dist("uniform")
    a = values.draw_tensor(d, "op.case[1]", "self", (3, 4), torch.float32)
    assert torch.equal(a, values.draw_tensor(d, "op.case[1]", "self", (3, 4), torch.float32))
    assert not torch.equal(a, values.draw_tensor(d, "op.case[2]", "self", (3, 4), torch.float32))
    assert not torch.equal(a, values.draw_tensor(d, "op.case[1]", "gradOutput", (3, 4), torch.float32))
    assert a.min() >= -5 and a.max() <= 5


def test_specials_are_mixed_in_at_about_the_fraction():
    d = distributions.parse("s", {"kind": "uniform", "low": -1, "high": 1,
                           "special": {"fraction": 0.2, "values": ["nan", "inf", "-inf", "-0.0", "subnormal", "max"]}})
    t = values.draw_tensor(d, "c", "x", (100, 100), torch.float16)
    nonfinite = (~torch.isfinite(t)).float().mean().item()
    assert 0.05 < nonfinite < 0.15          # nan, inf, -inf: half of 20%
    assert torch.isnan(t).any() and torch.isposinf(t).any() and torch.isneginf(t).any()
    assert (t == torch.finfo(torch.float16).max).any()
    neg_zero = (t == 0) & torch.signbit(t)
    assert neg_zero.any()
    sub = (t != 0) & (t.abs() < torch.finfo(torch.float16).smallest_normal)
    assert sub.any()


def test_integer_dtypes_get_integer_extremes_not_nan():
    d = distributions.resolve("specials", {})
    t = values.draw_tensor(d, "c", "x", (50, 50), torch.int8)
    assert t.dtype == torch.int8 and (t == 127).any() and (t == -128).any()


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32])
def test_unsigned_dtypes_torch_barely_supports_get_their_extremes(dtype):
    """torch has no CPU index_put for uint16/uint32 (a dtype a contributor may make computable):
    their specials are placed through int64, and the tensor comes back in the dtype asked for."""
    d = distributions.resolve("specials", {})
    t = values.draw_tensor(d, "c", "x", (50, 50), dtype)
    wide = t.to(torch.int64)
    assert t.dtype == dtype and (wide == torch.iinfo(dtype).max).any() and (wide == 0).any()
    assert torch.equal(wide, values.draw_tensor(d, "c", "x", (50, 50), dtype).to(torch.int64))


def test_small_int_and_constant_make_ties():
    t = values.draw_tensor(_dist("small_int"), "c", "x", (10, 10), torch.bfloat16)
    assert set(t.float().unique().tolist()) <= set(range(-3, 4))
    assert (values.draw_tensor(_dist("constant"), "c", "x", (4,), torch.float32) == 1).all()


def test_per_tensor_override():
    d = distributions.parse("mix", {"kind": "constant", "value": 2.0, "tensors": {"gradOutput": "small_int"}})
    assert (values.draw_tensor(d, "c", "self", (5,), torch.float32) == 2).all()
    assert not (values.draw_tensor(d, "c", "gradOutput", (50,), torch.float32) == 2).all()


@pytest.mark.parametrize("bad,words", [({"kind": "beta"}, "kind"), ({"kind": "uniform", "low": 0}, "high"),
                                       ({"kind": "normal", "mean": 0, "std": 1, "special": {"fraction": 2}}, "fraction"),
                                       ({"kind": "constant", "value": 0, "special": {"fraction": 0.1, "values": ["nil"]}}, "nil")])
def test_bad_distribution_names_the_problem(bad, words):
    with pytest.raises(ValueError, match=words):
        distributions.parse("x", bad)


@pytest.mark.parametrize("lay", layout.LAYOUTS)
@pytest.mark.parametrize("channel_last", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5), (2, 3, 2, 4, 5)])
def test_layouts_round_trip(lay, channel_last, shape):
    x = torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
    arg = layout.materialize("x", x, "NHWC", lay, channel_last)
    assert torch.equal(arg.logical, x)
    assert int(arg.covered().sum()) == x.numel()
    if channel_last:
        assert arg.dims[-1] == shape[1 if len(shape) > 3 else 0]       # channel is innermost
    if lay in ("strided", "offset"):
        assert arg.offset > 0
    if lay == "strided":
        assert not arg.device_view.is_contiguous() and arg.storage.numel() > x.numel()
    if lay == "channels_last" and not channel_last:
        assert arg.strides[1 if len(shape) > 3 else 0] == 1             # channel-first view, channel-last memory


def test_channel_last_dims_are_nhwc():
    x = torch.zeros(2, 3, 4, 5)
    arg = layout.materialize("x", x, "NHWC", "contiguous", channel_last=True)
    assert arg.dims == (2, 4, 5, 3) and arg.strides == (60, 15, 3, 1)


def test_indices_a_case_names_itself_replace_the_forward_and_may_repeat():
    """MaxUnpool3dBackward's indices come from a max_pool3d forward (never repeating) unless the
    case gives `indices` a distribution of its own: then they are taken as drawn, modulo the
    output volume, so all-zero indices (ATK's [0, 0] cases) make every element read the first."""
    from harness.model.distributions import parse
    from golden import max_unpool3d_backward as unpool, _opinfo
    zero = parse("z", {"kind": "constant", "value": 0})
    dist = parse("d", {"kind": "normal", "mean": 0.0, "std": 1.0, "tensors": {"indices": "z"}}, {"z": zero})
    p = _opinfo.params((2, 3, 2, 3, 3), torch.float32, {"outputSize": [4, 6, 6], "stride": [2, 2, 2],
                                                         "padding": [0, 0, 0]}, torch.int64)
    draw = values.make_draw(dist, "case-1")
    assert draw.explicit("indices") and not draw.explicit("gradOutput")
    inputs = unpool.prepare(draw, p)
    assert inputs["indices"].dtype == torch.int64 and not inputs["indices"].any()
    out = unpool.golden(inputs, p.attrs)[unpool.OUTPUT]
    first = inputs["gradOutput"].double().reshape(2, 3, -1)[:, :, :1]
    assert torch.equal(out.reshape(2, 3, -1), first.expand(2, 3, 18))
    plain = values.make_draw(parse("n", {"kind": "normal", "mean": 0.0, "std": 1.0}), "case-1")
    forward = unpool.prepare(plain, p)["indices"].reshape(2, 3, -1)
    assert all(len(set(row.tolist())) == row.numel() for row in forward.reshape(6, -1))   # a forward never repeats
