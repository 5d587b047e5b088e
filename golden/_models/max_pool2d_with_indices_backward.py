"""aclnnMaxPool2dWithIndicesBackward, phase 1: spec ops/max_pool2d_with_indices_backward.md section B.

Both code paths (950's V3 and the other archs' 3-D-kernel path) run the same CheckParams; only the
dtype lists (#9, #12) and the dilation rule (#26a/#26b) depend on the arch. Rows the model leaves
out: #0 executor creation and #34 an internal nullptr (no argument reaches them), #32 the
indices-vs-gradOutput shape (logged, its result discarded). Kernel tiling failures are not phase-1
statuses here: the L0 wrappers discard them (B.2).
"""
from __future__ import annotations

from .._phase1 import INVALID, Call, Phase1Model, Rule
from ._checks import (int_array, is_regbase, length_in, no_private_format, not_null, out_pointers_written,
                      per_axis, rank_in, same_dims, same_dtype, same_format, success_if_empty, tensor, dtype_in)

RANKS = frozenset({3, 4})


def _self_dtypes(family: str) -> frozenset[str]:
    """#9: DAV_3510 -> FLOAT16, FLOAT, BF16; DAV_2201 -> FLOAT; DAV_1001 and any other arch -> none."""
    if is_regbase(family):
        return frozenset({"float16", "float32", "bfloat16"})
    return frozenset({"float32"}) if family in ("ascend910b", "ascend910_93") else frozenset()


def _index_dtypes(family: str) -> frozenset[str]:
    """#12: DAV_3510 -> INT32, INT64; every other arch -> INT32, INT8 (INT8 has no kernel: G.4)."""
    return frozenset({"int32", "int64"}) if is_regbase(family) else frozenset({"int32", "int8"})


def _window(call: Call):
    """(k, s, p, d) as (H, W) pairs after the single-int expansion (A.3): stride empty = kernel.
    A list the length checks (#19-#22) reject gives fewer values (_checks.per_axis)."""
    k = per_axis(int_array(call, "kernelSize"), 2)
    stride = int_array(call, "stride")
    s = k if stride == () else per_axis(stride, 2)
    p = per_axis(int_array(call, "padding"), 2)
    d = per_axis(int_array(call, "dilation"), 2)
    return None if None in (k, s, p, d) else (k, s, p, d)


def _axis_rule(rule_id: str, bad) -> Rule:
    """161002 when `bad(k, s, p, d)` holds for the H or the W axis."""
    def run(call, family, scratch):
        w = _window(call)
        return INVALID if w is not None and any(bad(*axis) for axis in zip(*w)) else None
    return Rule(rule_id, run)


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int | None:
    """The output size (spec B notes, = PyTorch's pooling_output_shape): division rounds toward
    -inf; in ceil mode a last window starting at or past size + pad is dropped. None for s <= 0."""
    if s <= 0:
        return None
    o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def _planes(call: Call):
    """self as #28 reads it: (N or None, C, H, W, channel_last); NHWC storage puts C last
    (4-D (N,H,W,C), 3-D (H,W,C)). None for a rank other than 3 or 4."""
    t = tensor(call, "self")
    if t is None or t.rank not in RANKS:
        return None
    dims = t.dims if t.rank == 4 else (None,) + t.dims
    if t.format == "NHWC":
        return dims[0], dims[3], dims[1], dims[2], True
    return dims[0], dims[1], dims[2], dims[3], False


def _out_hw(call: Call):
    """(Ho, Wo) of self's H and W, or None when self or the window cannot be read."""
    planes, w = _planes(call), _window(call)
    if planes is None or w is None:
        return None
    ceil = bool(call.attrs.get("ceilMode", False))
    outs = tuple(_pool_out(size, *axis, ceil) for size, axis in zip(planes[2:4], zip(*w)))
    return None if None in outs or len(outs) != 2 else outs


def _zero_plane_dim(call, family, scratch):
    """#28: C, H and W of self are non-zero (N may be 0)."""
    planes = _planes(call)
    return INVALID if planes is not None and 0 in planes[1:4] else None


def _output_positive(call, family, scratch):
    """#30: Ho > 0 and Wo > 0."""
    out = _out_hw(call)
    return INVALID if out is not None and min(out) <= 0 else None


def _grad_output_shape(call, family, scratch):
    """#31: gradOutput's view shape is exactly (N,)C,Ho,Wo, or (N,)Ho,Wo,C for NHWC storage."""
    planes, out, g = _planes(call), _out_hw(call), tensor(call, "gradOutput")
    if planes is None or out is None or g is None:
        return None
    n, c, _, _, channel_last = planes
    plane = out + (c,) if channel_last else (c,) + out
    expected = plane if n is None else (n,) + plane
    return INVALID if g.dims != expected else None


def _dilation_rule(rule_id: str, regbase: bool, bad) -> Rule:
    """#26a (DAV_3510: d > 0) and #26b (every other arch: d == 1) are one check per arch."""
    check = _axis_rule(rule_id, lambda k, s, p, d: bad(d)).run

    def run(call, family, scratch):
        return check(call, family, scratch) if is_regbase(family) == regbase else None
    return Rule(rule_id, run)


MODEL = Phase1Model((
    not_null("B1", "gradOutput"),
    not_null("B2", "self"),
    not_null("B3", "indices"),
    not_null("B4", "kernelSize"),
    not_null("B5", "stride"),
    not_null("B6", "padding"),
    not_null("B7", "dilation"),
    not_null("B8", "gradInput"),
    dtype_in("B9", "self", _self_dtypes),
    same_dtype("B10", "self", "gradOutput"),
    same_dtype("B11", "self", "gradInput"),
    dtype_in("B12", "indices", _index_dtypes),
    same_format("B13", "self", "gradOutput", "gradInput"),
    no_private_format("B14", "self", "gradInput", "gradOutput", "indices"),
    rank_in("B15", RANKS, "self"),
    rank_in("B16", RANKS, "gradInput"),
    rank_in("B17", RANKS, "gradOutput"),
    rank_in("B18", RANKS, "indices"),
    length_in("B19", "kernelSize", frozenset({1, 2})),
    length_in("B20", "stride", frozenset({0, 1, 2})),
    length_in("B21", "padding", frozenset({1, 2})),
    length_in("B22", "dilation", frozenset({1, 2})),
    _axis_rule("B23", lambda k, s, p, d: k <= 0),
    _axis_rule("B24", lambda k, s, p, d: s <= 0),
    _axis_rule("B25", lambda k, s, p, d: p < 0 or p > k // 2),
    _dilation_rule("B26a", True, lambda d: d <= 0),
    _dilation_rule("B26b", False, lambda d: d != 1),
    same_dims("B27", "self", "gradInput"),
    Rule("B28", _zero_plane_dim),
    # implied by B25 for every dilation >= 1 (spec G.9): first only when B25/B26 are bypassed
    _axis_rule("B29", lambda k, s, p, d: p > ((k - 1) * d + 1) // 2),
    Rule("B30", _output_positive),
    Rule("B31", _grad_output_shape),
    success_if_empty("B33", "self"),
    out_pointers_written("out-pointers"),
))
