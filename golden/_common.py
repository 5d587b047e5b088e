"""Helpers shared by the golden modules (attr normalisation, output-size
formula, the index scatter every max-pool backward reduces to)."""
import math

import torch


def int_list(v):
    """An aclIntArray-like attr (None, int, list/tuple/tensor) as a list of ints."""
    if v is None:
        return []
    if torch.is_tensor(v):
        v = v.reshape(-1).tolist()
    if isinstance(v, int):
        return [v]
    return [int(x) for x in v]


def expand(v, n, name, default=None):
    """Length 1 -> the value on every axis; length n -> as is; length 0 ->
    `default` (stride = kernel) where the API allows an empty list."""
    vals = int_list(v)
    if not vals and default is not None:
        return tuple(default)
    if len(vals) == 1:
        return (vals[0],) * n
    if len(vals) == n:
        return tuple(vals)
    allowed = "0, 1" if default is not None else "1"
    raise ValueError(f"{name} must have length {allowed} or {n}, got {vals}")


def pool_attrs(attrs, n, dilation=True):
    """Normalised (kernel, stride, padding, dilation, ceil) for an n-D pool,
    validated the way PyTorch's forward validates them."""
    k = expand(attrs.get("kernelSize"), n, "kernelSize")
    s = expand(attrs.get("stride"), n, "stride", default=k)
    p = expand(attrs.get("padding", [0]), n, "padding")
    d = expand(attrs.get("dilation", [1]), n, "dilation") if dilation else (1,) * n
    ceil = bool(attrs.get("ceilMode", False))
    for name, vals in (("kernelSize", k), ("stride", s), ("dilation", d)):
        if min(vals) <= 0:
            raise ValueError(f"{name} must be > 0, got {list(vals)}")
    for kk, pp in zip(k, p):
        # both the aclnn checks and torch require 0 <= pad <= floor(k/2)
        if pp < 0 or pp > kk // 2:
            raise ValueError(f"padding {list(p)} must be in [0, floor(k/2)] for kernel {list(k)}")
    return k, s, p, d, ceil


def pool_out_size(i, k, s, p, d=1, ceil=False):
    """PyTorch pooling_output_shape: floor division rounding toward -inf, and
    in ceil mode the last window is dropped when it would start in the
    right/bottom padding."""
    o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= i + p:
        o -= 1
    return o


def empty_windows(spatial, k, s, p, d, out):
    """(axis, output index) of windows that contain no input element. Only
    possible with dilation > 1 (all taps land in the padding); torch's
    forward then returns -inf and an index outside the plane."""
    return [(a, i) for a in range(len(spatial)) for i in range(out[a])
            if not any(0 <= i * s[a] - p[a] + t * d[a] < spatial[a] for t in range(k[a]))]


def check_windows(spatial, k, s, p, d, out):
    bad = empty_windows(spatial, k, s, p, d, out)
    if bad:
        a, i = bad[0]
        raise ValueError(f"window {i} on spatial axis {a} lies entirely in the padding (kernel {list(k)}, "
                         f"dilation {list(d)}, padding {list(p)}, input {list(spatial)}): the forward index "
                         f"is undefined (torch returns one outside the plane)")


def split_batch(shape, n, name="self"):
    """(leading dims, spatial dims) of a tensor with n spatial axes and one
    or two leading (C or N,C) axes."""
    shape = tuple(shape)
    if len(shape) not in (n + 1, n + 2):
        raise ValueError(f"{name} must be {n + 1}-D or {n + 2}-D, got shape {shape}")
    return shape[:-n], shape[-n:]


def check_shape(t, expected, name):
    if tuple(t.shape) != tuple(expected):
        raise ValueError(f"{name} shape {tuple(t.shape)} != expected {tuple(expected)}")


def scatter_backward(grad_out, indices, self_shape, n):
    """Sum every gradOutput value into the flat position its index names,
    per (n, c) plane of the un-padded input (the max-pool backward).
    Computed in float64 from the exact input values."""
    lead, spatial = split_batch(self_shape, n)
    plane = math.prod(spatial)
    # explicit trailing size: reshape(0, -1) is ambiguous for an empty batch (N = 0)
    go = grad_out.detach().cpu().to(torch.float64).reshape(math.prod(lead), math.prod(grad_out.shape[len(lead):]))
    idx = indices.detach().cpu().to(torch.int64).reshape(go.shape)
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= plane):
        raise ValueError(f"indices must lie in [0, {plane}) (flat index into the "
                         f"{'x'.join(map(str, spatial))} plane); got "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    out = torch.zeros(go.shape[0], plane, dtype=torch.float64)
    out.scatter_add_(1, idx, go)   # duplicates (overlapping windows) are summed
    return out.reshape(self_shape)


def maxpool_golden(inputs, attrs, n):
    """Golden of MaxPool{2,3}d backward: validate gradOutput/indices against
    the forward output shape, then scatter."""
    go, x, idx = inputs["gradOutput"], inputs["self"], inputs["indices"]
    k, s, p, d, ceil = pool_attrs(attrs, n)
    lead, spatial = split_batch(x.shape, n)
    out = tuple(pool_out_size(*a, ceil) for a in zip(spatial, k, s, p, d))
    if min(out) <= 0:
        raise ValueError(f"pooled size {out} is not positive for input {spatial}")
    check_windows(spatial, k, s, p, d, out)
    check_shape(go, lead + out, "gradOutput")
    check_shape(idx, lead + out, "indices")
    return scatter_backward(go, idx, tuple(x.shape), n)


def maxpool_prepare(draw, p, n, forward):
    """self drawn; indices and gradOutput's shape from the real torch forward
    (run in float64 so every dtype, tie and NaN behaves the same)."""
    k, s, pad, d, ceil = pool_attrs(p.attrs, n)
    x = draw("self", tuple(p.shape), p.dtype)
    _, spatial = split_batch(x.shape, n)
    check_windows(spatial, k, s, pad, d,
                  [pool_out_size(*a, ceil) for a in zip(spatial, k, s, pad, d)])
    y, idx = forward(x.double(), k, s, pad, d, ceil_mode=ceil, return_indices=True)
    go = draw("gradOutput", tuple(y.shape), p.dtype)
    return {"gradOutput": go.contiguous(), "self": x.contiguous(),
            "indices": idx.to(p.index_dtype or torch.int32).contiguous()}
