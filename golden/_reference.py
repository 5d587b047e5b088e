"""Helpers of the independent loop references (each op module's `_reference_loop`).

Plain NumPy and Python loops over planes, output positions and window elements,
written separately from the goldens: nothing here, and nothing a reference uses,
comes from golden/_common.py or torch (an import contract in pyproject.toml holds
that). A reference takes `inputs` (dict of NumPy arrays by ABI name) and `attrs`
(ABI names) and returns the expected output as a NumPy array. Max-pool references
derive window membership themselves and fail loudly if an index does not name an
element of its own window.
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


def max_pool(inputs, attrs, nsp):
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
