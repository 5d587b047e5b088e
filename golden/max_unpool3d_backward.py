"""aclnnMaxUnpool3dBackward (spec ops/max_unpool3d_backward.md, section C).

out[n, c, p] = gradOutput[n, c, indices[n, c, p]] for p over self's D*H*W; the
index is flat into gradOutput's oD*oH*oW volume of the same (n, c). A pure
gather: stride, padding and self's values have no effect. 5-D is
(N,C,D,H,W); 4-D is (N,D,H,W) (C = 1; torch reads it as (C,D,H,W), which
gathers identically)."""
import math

import torch
import torch.nn.functional as F

from . import _common

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
    # indices come from a real max_pool3d(kernel = stride, padding 0) over an
    # "original" volume of outputSize, so that volume must pool to self's size
    pooled = tuple(o // s if s > 0 else -1 for o, s in zip(out_size, stride))
    if pooled != spatial:
        raise ValueError(f"inconsistent unpool config: max_pool3d(kernel=stride={list(stride)}) "
                         f"of outputSize {list(out_size)} gives {pooled}, but self's D,H,W are {spatial}")
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
