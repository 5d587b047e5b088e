"""aclnnAvgPool2dBackward (spec ops/avg_pool2d_backward.md, section C.2).

For each output (i, j): window rows [i*sH - pH, min(i*sH - pH + kH, H + pH)),
likewise columns; poolSize = its area BEFORE clipping to the input (so in ceil
mode a window hanging past the right/bottom padding has a smaller poolSize);
divisor = divisorOverride if != 0 (negative allowed), else poolSize if
countIncludePad, else the clipped area. Every input element of the clipped
window receives gradOutput[i, j] / divisor. self is (C,H,W) or (N,C,H,W); only
its shape is used. cubeMathType has no numerical meaning for the golden."""
import torch

from . import _common

OUTPUT = "gradInput"


def _attrs(attrs):
    k, s, p, _, ceil = _common.pool_attrs(attrs, 2, dilation=False)
    cip = bool(attrs.get("countIncludePad", True))
    div = int(attrs.get("divisorOverride", 0) or 0)
    return k, s, p, ceil, cip, div


def _axis_windows(size, k, s, p, n_out):
    """Per output index along one axis: clipped start, clipped end and the
    pre-clip (padded) window length."""
    start = [i * s - p for i in range(n_out)]
    end = [min(b + k, size + p) for b in start]
    pre = [e - b for b, e in zip(start, end)]
    return [max(b, 0) for b in start], [min(e, size) for e in end], pre


def _divisors(hwin, wwin, cip, div):
    """(Ho, Wo) float64 divisor of every output position."""
    if div != 0:
        return torch.full((len(hwin[0]), len(wwin[0])), float(div), dtype=torch.float64)
    if cip:
        h, w = hwin[2], wwin[2]
    else:
        h = [e - b for b, e in zip(hwin[0], hwin[1])]
        w = [e - b for b, e in zip(wwin[0], wwin[1])]
    return torch.outer(torch.tensor(h, dtype=torch.float64), torch.tensor(w, dtype=torch.float64))


def _offset_slices(size, k, s, p, n_out):
    """For each kernel offset a: (input slice, output slice) of the outputs
    whose window element a lies inside the input (0 <= i*s - p + a < size)."""
    res = []
    for a in range(k):
        i0 = max(0, -((a - p) // s))            # ceil((p - a) / s)
        i1 = min(n_out - 1, (size - 1 + p - a) // s)
        if i0 <= i1:
            h0 = i0 * s - p + a
            res.append((slice(h0, h0 + (i1 - i0) * s + 1, s), slice(i0, i1 + 1)))
    return res


def golden(inputs, attrs):
    go, x = inputs["gradOutput"], inputs["self"]
    (kh, kw), (sh, sw), (ph, pw), ceil, cip, div = _attrs(attrs)
    lead, (h, w) = _common.split_batch(x.shape, 2)
    ho, wo = _common.pool_out_size(h, kh, sh, ph, 1, ceil), _common.pool_out_size(w, kw, sw, pw, 1, ceil)
    if ho <= 0 or wo <= 0:
        raise ValueError(f"pooled size {(ho, wo)} is not positive for input {(h, w)}")
    _common.check_shape(go, lead + (ho, wo), "gradOutput")
    hwin, wwin = _axis_windows(h, kh, sh, ph, ho), _axis_windows(w, kw, sw, pw, wo)
    g = go.detach().cpu().to(torch.float64) / _divisors(hwin, wwin, cip, div)
    gi = torch.zeros(lead + (h, w), dtype=torch.float64)
    # Only additions of g values: no 0*inf products, so Inf/NaN stay local.
    if ho * wo <= kh * kw:      # few windows: add each window's value to its block
        for i in range(ho):
            for j in range(wo):
                gi[..., hwin[0][i]:hwin[1][i], wwin[0][j]:wwin[1][j]] += g[..., i:i + 1, j:j + 1]
    else:                       # few kernel offsets: one strided add per offset
        for hin, hout in _offset_slices(h, kh, sh, ph, ho):
            for win, wout in _offset_slices(w, kw, sw, pw, wo):
                gi[..., hin, win] += g[..., hout, wout]
    return {OUTPUT: gi}


def prepare(draw, p):
    (kh, kw), (sh, sw), (ph, pw), ceil, _, _ = _attrs(p.attrs)
    shape = tuple(p.shape)
    lead, (h, w) = _common.split_batch(shape, 2)
    x = draw("self", shape, p.dtype)
    # gradOutput has the forward output's shape (the same formula torch uses)
    out = (_common.pool_out_size(h, kh, sh, ph, 1, ceil), _common.pool_out_size(w, kw, sw, pw, 1, ceil))
    go = draw("gradOutput", lead + out, p.dtype)
    return {"gradOutput": go.contiguous(), "self": x.contiguous()}


def torch_op(inputs, attrs):
    k, s, p, ceil, cip, div = _attrs(attrs)
    go, x = inputs["gradOutput"], inputs["self"]
    # the API does not tie self's dtype to gradOutput's; only self's shape matters
    x = x.to(go.dtype)
    r = torch.ops.aten.avg_pool2d_backward(go, x, list(k), list(s), list(p), ceil, cip,
                                           div if div != 0 else None)
    return {OUTPUT: r}
