"""aclnnMaxPool3dWithArgmaxBackward, phase 1: spec ops/max_pool3d_with_argmax_backward.md section B.

CheckParams runs CheckNotNullPtr, CheckDtypeValid, CheckFormat, CheckParamsValid,
CheckSelfShapeSupport, CheckInputShape; the first failure returns. There is no output-size check:
gradOutput's spatial dims, N and C are never compared with self's (G.1), and ceilMode is read by
no check. Rows left out: #0 executor creation and #32 an internal nullptr (no argument reaches
them), #33 the L0 result shape (#30 already forces it). Kernel tiling failures are discarded by
the L0 wrapper (B.2): not phase-1 statuses.
"""
from __future__ import annotations

from .._phase1 import INVALID, Call, Phase1Model, Rule
from ._checks import (INT32_MAX, dtype_in, int_array, is_regbase, length_in, no_private_format, not_null,
                      out_pointers_written, per_axis, rank_in, same_dims, same_dtype, same_format,
                      success_if_empty, tensor)

RANKS = frozenset({4, 5})
LENGTHS = frozenset({1, 3})


def _self_dtypes(family: str) -> frozenset[str]:
    """#9: DAV_3510 and DAV_2201 -> BF16, FLOAT16, FLOAT; DAV_1001 and any other arch -> none."""
    if is_regbase(family) or family in ("ascend910b", "ascend910_93"):
        return frozenset({"bfloat16", "float16", "float32"})
    return frozenset()


def _index_dtypes(family: str) -> frozenset[str]:
    """#10: DAV_3510 -> INT32, INT64; any other arch -> INT32."""
    return frozenset({"int32", "int64"}) if is_regbase(family) else frozenset({"int32"})


def _axes(call: Call, name: str) -> tuple[int, ...] | None:
    """An attribute's (D, H, W) values: length 1 is every axis; stride's length 0 is the kernel."""
    values = int_array(call, name)
    if name == "stride" and values == ():
        return _axes(call, "kernelSize")
    return per_axis(values, 3)


def _each_axis(rule_id: str, name: str, bad) -> Rule:
    """161002 when `bad(value, kernel)` holds on the D, H or W axis of attribute `name`."""
    def run(call, family, scratch):
        values, kernel = _axes(call, name), _axes(call, "kernelSize")
        if values is None or kernel is None:
            return None
        return INVALID if any(bad(v, k) for v, k in zip(values, kernel)) else None
    return Rule(rule_id, run)


def _volume_within_int32(call, family, scratch):
    """#28, every arch but DAV_3510: self's D*H*W (its last three dims, C of a 4-D self left out)
    is at most INT32_MAX."""
    t = tensor(call, "self")
    if is_regbase(family) or t is None or t.rank < 3:
        return None
    d, h, w = t.dims[-3:]
    return INVALID if d * h * w > INT32_MAX else None


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
    dtype_in("B10", "indices", _index_dtypes),
    same_dtype("B11", "self", "gradOutput"),
    same_dtype("B12", "self", "gradInput"),
    same_format("B13", "self", "gradOutput", "gradInput"),
    no_private_format("B14", "self", "gradInput", "gradOutput", "indices"),
    rank_in("B15", RANKS, "gradOutput"),
    rank_in("B16", RANKS, "gradInput"),
    rank_in("B17", RANKS, "indices"),
    rank_in("B18", RANKS, "self"),
    length_in("B19", "kernelSize", LENGTHS),
    _each_axis("B20", "kernelSize", lambda k, _: k <= 0),
    length_in("B21", "stride", frozenset({0, 1, 3})),
    _each_axis("B22", "stride", lambda s, _: s <= 0),
    length_in("B23", "padding", LENGTHS),
    # two passes over the axes: every pad >= 0 first, then every pad <= floor(k/2)
    _each_axis("B24", "padding", lambda p, _: p < 0),
    _each_axis("B25", "padding", lambda p, k: p > k // 2),
    length_in("B26", "dilation", LENGTHS),
    _each_axis("B27", "dilation", lambda d, _: d <= 0),
    Rule("B28", _volume_within_int32),
    same_dims("B29", "indices", "gradOutput"),
    same_dims("B30", "self", "gradInput"),
    success_if_empty("B31", "gradOutput", "self", "indices"),
    out_pointers_written("out-pointers"),
))
