"""Independent slow references for the five pooling-backward goldens.

Plain NumPy and Python loops over planes, output positions and window
elements; written separately from golden/ (no torch, nothing imported from
there). Every function takes `inputs` (dict of NumPy arrays by ABI name: only
the shape of "self" is used) and `attrs` (ABI names) and returns the
expected output as a NumPy array (float64, or the input dtype for integer
unpool). Max-pool references derive window membership themselves and
fail loudly if an index does not name an element of its own window.
"""
import itertools
import math
from fractions import Fraction

import numpy as np


def _ints(v):
    if v is None:
        return []
    if isinstance(v, (int, np.integer)):
        return [int(v)]
    return [int(x) for x in v]


def _per_axis(v, n, empty=None):
    v = _ints(v)
    if len(v) == 0 and empty is not None:
        return list(empty)
    if len(v) == 1:
        return v * n
    assert len(v) == n, f"attr {v} is neither 1 nor {n} long"
    return v


def _pooled_len(size, k, s, p, d, ceil):
    """Output length per the documented formula: ceil/floor of a fraction,
    then drop a last window that would start in the trailing padding."""
    span = Fraction(size + 2 * p - d * (k - 1) - 1, s)
    o = (math.ceil(span) if ceil else math.floor(span)) + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def _planes(shape, nsp):
    """Number of (n, c) planes and the spatial shape."""
    return int(np.prod(shape[:-nsp], dtype=np.int64)), tuple(shape[-nsp:])


def _flat(pos, spatial):
    f = 0
    for x, n in zip(pos, spatial):
        f = f * n + x
    return f


def _max_pool(inputs, attrs, nsp):
    go = np.asarray(inputs["gradOutput"], dtype=np.float64)
    idx = np.asarray(inputs["indices"]).astype(np.int64)
    shape = inputs["self"].shape
    k = _per_axis(attrs["kernelSize"], nsp)
    s = _per_axis(attrs.get("stride"), nsp, empty=k)
    p = _per_axis(attrs.get("padding", [0]), nsp)
    d = _per_axis(attrs.get("dilation", [1]), nsp)
    ceil = bool(attrs.get("ceilMode", False))
    nplanes, spatial = _planes(shape, nsp)
    out = tuple(_pooled_len(spatial[a], k[a], s[a], p[a], d[a], ceil) for a in range(nsp))
    assert go.shape == tuple(shape[:-nsp]) + out, f"gradOutput {go.shape} vs pooled {out}"
    assert idx.shape == go.shape
    go = go.reshape(nplanes, -1)
    idx = idx.reshape(nplanes, -1)
    gi = np.zeros((nplanes, int(np.prod(spatial))), dtype=np.float64)
    for b in range(nplanes):
        for o, opos in enumerate(itertools.product(*[range(n) for n in out])):
            target = int(idx[b, o])
            hit = False
            for koff in itertools.product(*[range(kk) for kk in k]):
                pos = [opos[a] * s[a] - p[a] + koff[a] * d[a] for a in range(nsp)]
                if all(0 <= pos[a] < spatial[a] for a in range(nsp)) and _flat(pos, spatial) == target:
                    hit = True
                    break
            assert hit, f"index {target} is not in the window of output {opos} (plane {b})"
            gi[b, target] += go[b, o]
    return gi.reshape(shape)


def max_pool2d_with_indices_backward(inputs, attrs):
    return _max_pool(inputs, attrs, 2)


def max_pool3d_with_argmax_backward(inputs, attrs):
    return _max_pool(inputs, attrs, 3)


def adaptive_max_pool2d_backward(inputs, attrs):
    go = np.asarray(inputs["gradOutput"], dtype=np.float64)
    idx = np.asarray(inputs["indices"]).astype(np.int64)
    shape = inputs["self"].shape
    nplanes, (H, W) = _planes(shape, 2)
    Ho, Wo = go.shape[-2:]
    go = go.reshape(nplanes, Ho, Wo)
    idx = idx.reshape(nplanes, Ho, Wo)
    gi = np.zeros((nplanes, H, W), dtype=np.float64)
    for b in range(nplanes):
        for i in range(Ho):
            h0, h1 = (i * H) // Ho, -((-(i + 1) * H) // Ho)    # floor / ceil
            for j in range(Wo):
                w0, w1 = (j * W) // Wo, -((-(j + 1) * W) // Wo)
                target = int(idx[b, i, j])
                found = None
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        if h * W + w == target:
                            found = (h, w)
                assert found is not None, f"index {target} not in adaptive window ({i},{j})"
                gi[b, found[0], found[1]] += go[b, i, j]
    return gi.reshape(shape)


def avg_pool2d_backward(inputs, attrs):
    go = np.asarray(inputs["gradOutput"], dtype=np.float64)
    shape = inputs["self"].shape
    kh, kw = _per_axis(attrs["kernelSize"], 2)
    sh, sw = _per_axis(attrs.get("stride"), 2, empty=[kh, kw])
    ph, pw = _per_axis(attrs.get("padding", [0]), 2)
    ceil = bool(attrs.get("ceilMode", False))
    cip = bool(attrs.get("countIncludePad", True))
    div = int(attrs.get("divisorOverride", 0) or 0)
    nplanes, (H, W) = _planes(shape, 2)
    Ho, Wo = _pooled_len(H, kh, sh, ph, 1, ceil), _pooled_len(W, kw, sw, pw, 1, ceil)
    assert go.shape == tuple(shape[:-2]) + (Ho, Wo), f"gradOutput {go.shape} vs pooled {(Ho, Wo)}"
    go = go.reshape(nplanes, Ho, Wo)
    gi = np.zeros((nplanes, H, W), dtype=np.float64)
    for b in range(nplanes):
        for i in range(Ho):
            for j in range(Wo):
                # Count, element by element, the window members inside the
                # padded input (count_include_pad pool size) and inside the
                # real input (the elements that receive gradient).
                padded, real = 0, []
                for a in range(kh):
                    for c in range(kw):
                        h, w = i * sh - ph + a, j * sw - pw + c
                        if -ph <= h < H + ph and -pw <= w < W + pw:
                            padded += 1
                        if 0 <= h < H and 0 <= w < W:
                            real.append((h, w))
                divisor = div if div != 0 else (padded if cip else len(real))
                for h, w in real:
                    gi[b, h, w] += go[b, i, j] / divisor
    return gi.reshape(shape)


def max_unpool3d_backward(inputs, attrs):
    go = np.asarray(inputs["gradOutput"])
    idx = np.asarray(inputs["indices"]).astype(np.int64)
    shape = inputs["self"].shape
    nplanes, spatial = _planes(shape, 3)
    assert idx.shape == tuple(shape)
    vol = int(np.prod(go.shape[-3:]))
    if attrs.get("outputSize") is not None:
        assert tuple(go.shape[-3:]) == tuple(_per_axis(attrs["outputSize"], 3))
    go = go.reshape(nplanes, vol)
    idx = idx.reshape(nplanes, -1)
    out = np.zeros(idx.shape, dtype=go.dtype)
    for b in range(nplanes):
        for q in range(idx.shape[1]):
            src = int(idx[b, q])
            assert 0 <= src < vol, f"index {src} out of [0, {vol})"
            out[b, q] = go[b, src]
    return out.reshape(shape)
