"""aclnnMaxUnpool3dBackward (spec ops/max_unpool3d_backward.md, section C).

out[n, c, p] = gradOutput[n, c, indices[n, c, p]] for p over self's D*H*W; the
index is flat into gradOutput's oD*oH*oW volume of the same (n, c). A pure
gather: stride, padding and self's values have no effect. 5-D is
(N,C,D,H,W); 4-D is (N,D,H,W) (C = 1; torch reads it as (C,D,H,W), which
gathers identically)."""
import functools
import math

import numpy as np
import torch
import torch.nn.functional as F

from . import _common, _opinfo, _reference
from ._models.max_unpool3d_backward import EXAMPLES as MODEL_EXAMPLES, MODEL

OUTPUT = "out"


def _flat(t, rank):
    """(N, C, -1) view of a 4-D/5-D tensor (C = 1 for 4-D)."""
    n = t.shape[0]
    c = t.shape[1] if rank == 5 else 1
    # explicit size: reshape(n, c, -1) is ambiguous when N = 0
    return t.reshape(n, c, math.prod(t.shape[2 if rank == 5 else 1:]))


def prepare(draw, p):
    shape = tuple(p.shape)
    if len(shape) not in (4, 5):
        raise ValueError(f"self must be 4-D (N,D,H,W) or 5-D (N,C,D,H,W), got {shape}")
    out_size = _common.expand(p.attrs.get("outputSize"), 3, "outputSize")
    stride = _common.expand(p.attrs.get("stride"), 3, "stride")
    lead, spatial = shape[:-3], shape[-3:]
    if getattr(draw, "explicit", lambda name: False)("indices"):
        # indices the case names itself (all zero, random: ATK's own forms, spec E): any in-range
        # flat index is a defined gather, duplicates included (spec C), so they are taken modulo
        # the output volume rather than from a forward pass, which never repeats one; stride and
        # padding then need not fit anything (they have no effect: CANN's own example passes
        # stride (1,2,3) with outputSize (1,4,4))
        idx = draw("indices", shape, torch.int64).abs().remainder(math.prod(out_size))
    else:
        # indices come from a real max_pool3d(kernel = stride, padding 0) over an
        # "original" volume of outputSize, so that volume must pool to self's size
        pooled = tuple(o // s if s > 0 else -1 for o, s in zip(out_size, stride))
        if pooled != spatial:
            raise ValueError(f"inconsistent unpool config: max_pool3d(kernel=stride={list(stride)}) "
                             f"of outputSize {list(out_size)} gives {pooled}, but self's D,H,W are {spatial}; "
                             f"give indices a distribution of their own (values) to draw them instead")
        x = draw("unpooled", lead + out_size, p.dtype)
        _, idx = F.max_pool3d(x.double(), stride, stride, 0, return_indices=True)
    return {"gradOutput": draw("gradOutput", lead + out_size, p.dtype).contiguous(),
            "self": draw("self", shape, p.dtype).contiguous(),
            "indices": idx.to(p.index_dtype or torch.int64).contiguous()}


def golden(inputs, attrs):
    go, x, idx = inputs["gradOutput"], inputs["self"], inputs["indices"]
    rank = x.dim()
    if rank not in (4, 5):
        raise ValueError(f"self must be 4-D or 5-D, got shape {tuple(x.shape)}")
    _common.check_shape(idx, x.shape, "indices")
    if go.dim() != rank or go.shape[:rank - 3] != x.shape[:rank - 3]:
        raise ValueError(f"gradOutput shape {tuple(go.shape)} does not fit self {tuple(x.shape)}")
    if attrs.get("outputSize") is not None:
        _common.check_shape(go, tuple(x.shape[:rank - 3]) + _common.expand(attrs["outputSize"], 3, "outputSize"),
                            "gradOutput")
    vol = math.prod(go.shape[rank - 3:])
    i = _flat(idx.detach().cpu().to(torch.int64), rank)
    if i.numel() and (int(i.min()) < 0 or int(i.max()) >= vol):
        raise ValueError(f"indices must lie in [0, {vol}), got [{int(i.min())}, {int(i.max())}]")
    g = go.detach().cpu()
    # floats in float64 (exact widening); integers stay in their dtype (bit-exact)
    if g.is_floating_point() or g.is_complex():
        g = g.to(torch.float64)
    return {OUTPUT: _flat(g, rank).gather(2, i).reshape(x.shape)}


def torch_op(inputs, attrs):
    go, x, idx = inputs["gradOutput"], inputs["self"], inputs["indices"]
    rank = x.dim()
    r = _flat(go, rank).gather(2, _flat(idx.long(), rank)).reshape(x.shape)
    return {OUTPUT: r}


# ------------------------------------------------------------ for the harness's own tests

def _gen_config(rng):
    stride = [rng.randint(1, 3) for _ in range(3)]
    sp = [rng.randint(1, 3) for _ in range(3)]
    out = [n * s + rng.randint(0, s - 1) for n, s in zip(sp, stride)]
    rank = rng.choice([4, 5])
    lead = (rng.randint(1, 2),) if rank == 4 else (rng.randint(1, 2), rng.randint(1, 3))
    attrs = {"outputSize": out, "stride": stride, "padding": [rng.randint(-2, 2) for _ in range(3)]}
    dtype = rng.choice(_opinfo.FLOATS[:2] + [torch.float64] + _opinfo.INTS)
    tags = {f"rank{rank}", "int" if not dtype.is_floating_point else "float"}
    if math.prod(out) > math.prod(sp):
        tags.add("outputSize>self")
    return _opinfo.params(lead + tuple(sp), dtype, attrs), tags


def _reference_loop(inputs, attrs):
    go = np.asarray(inputs["gradOutput"])
    idx = np.asarray(inputs["indices"]).astype(np.int64)
    shape = inputs["self"].shape
    nplanes, _ = _reference._planes(shape, 3)
    assert idx.shape == tuple(shape)
    vol = int(np.prod(go.shape[-3:]))
    if attrs.get("outputSize") is not None:
        assert tuple(go.shape[-3:]) == tuple(_reference._per_axis(attrs["outputSize"], 3))
    go = go.reshape(nplanes, vol)
    idx = idx.reshape(nplanes, -1)
    out = np.zeros(idx.shape, dtype=go.dtype)
    for b in range(nplanes):
        for q in range(idx.shape[1]):
            src = int(idx[b, q])
            assert 0 <= src < vol, f"index {src} out of [0, {vol})"
            out[b, q] = go[b, src]
    return out.reshape(shape)


def _autograd(inputs, attrs):
    x = inputs["self"].double().requires_grad_(True)
    go = inputs["gradOutput"].double()
    st = _common.expand(attrs["stride"], 3, "stride")
    y = F.max_unpool3d(x, inputs["indices"].long(), st, st, 0, output_size=tuple(go.shape[-3:]))
    y.backward(go)
    return x.grad


def _forward(p, draw, inputs):
    st = p.attrs["stride"]
    unpooled = draw("unpooled", p.shape[:-3] + tuple(p.attrs["outputSize"]), p.dtype).double()
    _, idx = F.max_pool3d(unpooled, st, st, 0, return_indices=True)
    return _opinfo.Forward(p.shape[:-3] + tuple(p.attrs["outputSize"]), idx, torch.int64)


def _index_off_by_one(patch):
    def fn(inputs, attrs):
        vol = math.prod(inputs["gradOutput"].shape[-3:])
        return golden({**inputs, "indices": (inputs["indices"] + 1) % vol}, attrs)
    return fn


def _rejects_inconsistent_config(output_size, stride, shape):
    import pytest
    attrs = {"outputSize": output_size, "stride": stride, "padding": [0, 0, 0]}
    with pytest.raises(ValueError, match="inconsistent unpool"):
        prepare(lambda name, shp, dt: torch.randn(shp, dtype=torch.float64).to(dt),
                _opinfo.params(shape, torch.float32, attrs))


INFO = _opinfo.OpInfo(
    model=MODEL,
    gen_config=_gen_config,
    required_tags=frozenset({"rank4", "rank5", "int", "float", "outputSize>self"}),
    reference=_reference_loop,
    autograd=_autograd,
    forward=_forward,
    mutants={"swapped indices": lambda patch: _opinfo.swapped_indices(golden),
             "index off by one": _index_off_by_one},
    examples=(functools.partial(_rejects_inconsistent_config, [4, 4, 4], [1, 1, 1], (1, 1, 2, 2, 2)),
              functools.partial(_rejects_inconsistent_config, [5, 4, 4], [2, 2, 2], (1, 3, 2, 2)),
              functools.partial(_rejects_inconsistent_config, [1, 4, 4], [2, 2, 2], (1, 1, 1, 2, 2)))
    + MODEL_EXAMPLES,
    deviations=(_opinfo.ImplDeviation(
        "out_of_range_indices_unchecked", "C (Out-of-range indices), G.9",
        _opinfo.A2A3 + ("ascend950", "ascend910"),
        "indices outside the output volume are not checked (PyTorch raises); the 950 kernel reads garbage",
        no_case="undefined device behaviour (policy 2): cases use indices in range only"),),
)
