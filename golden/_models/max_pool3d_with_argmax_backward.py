"""aclnnMaxPool3dWithArgmaxBackward, phase 1: spec ops/max_pool3d_with_argmax_backward.md section B.

CheckParams runs CheckNotNullPtr, CheckDtypeValid, CheckFormat, CheckParamsValid,
CheckSelfShapeSupport, CheckInputShape; the first failure returns. There is no output-size check:
gradOutput's spatial dims, N and C are never compared with self's (G.1), and ceilMode is read by
no check. Rows left out: #0 executor creation and #32 an internal nullptr (no argument reaches
them), #33 the L0 result shape (#30 already forces it). Kernel tiling failures are discarded by
the L0 wrapper (B.2): not phase-1 statuses.
After #31 come the generic L0 label rules (l0_format_rules.md 2.3): the inputs are relabelled
NCDHW (a gradOutput or indices of another rank than self's is refused, which corrects section B's
"Consequences": such a call does not pass phase 1) and the result is relabelled with gradInput's
label (refused when that label has another fixed rank).
"""
from __future__ import annotations

from .._phase1 import INNER_NULLPTR, Call, Phase1, Phase1Model
from ._l0 import ranks_differ_from, result_relabel_refused
from ._checks import (ARCH, INT32_MAX, UNDEFINED, contiguous, dtype_in, invalid_if, is_regbase, length_in,
                      inner_nullptr_if, no_private_format, not_null_each, out_pointers_written, per_axis_fails, rank_in_each,
                      same_dims, same_dtype, same_format, success_if_empty, tensor)

RANKS = frozenset({4, 5})
LENGTHS = frozenset({1, 3})


def _self_dtypes(family: str) -> frozenset[str]:
    """#9: DAV_3510 and DAV_2201 -> BF16, FLOAT16, FLOAT; DAV_1001 and any other arch -> none."""
    if is_regbase(family) or ARCH.get(family) == "DAV_2201":
        return frozenset({"bfloat16", "float16", "float32"})
    return frozenset()


def _index_dtypes(family: str) -> frozenset[str]:
    """#10: DAV_3510 -> INT32, INT64; any other arch -> INT32."""
    return frozenset({"int32", "int64"}) if is_regbase(family) else frozenset({"int32"})


def _volume_over_int32(call, family) -> bool:
    """#28, every arch but DAV_3510: self's D*H*W (its last three dims, C of a 4-D self left out)
    is at most INT32_MAX."""
    t = tensor(call, "self")
    if is_regbase(family) or t.rank < 3:
        return False
    d, h, w = t.dims[-3:]
    return d * h * w > INT32_MAX


MODEL = Phase1Model((
    *not_null_each(1, "gradOutput", "self", "indices", "kernelSize", "stride", "padding", "dilation", "gradInput"),
    # dtypes (B9-B12)
    dtype_in("B9", "self", _self_dtypes),
    dtype_in("B10", "indices", _index_dtypes),
    same_dtype("B11", "self", "gradOutput"),
    same_dtype("B12", "self", "gradInput"),
    # formats (B13-B14)
    same_format("B13", "self", "gradOutput", "gradInput"),
    no_private_format("B14", "self", "gradInput", "gradOutput", "indices"),
    # ranks (B15-B18)
    *rank_in_each(15, RANKS, "gradOutput", "gradInput", "indices", "self"),
    # attributes: each length, then its values
    length_in("B19", "kernelSize", LENGTHS),
    per_axis_fails("B20", 3, ("kernelSize",), lambda k: k <= 0),
    length_in("B21", "stride", frozenset({0, 1, 3})),
    per_axis_fails("B22", 3, ("stride",), lambda s: s <= 0),
    length_in("B23", "padding", LENGTHS),
    # two passes over the axes: every pad >= 0 first, then every pad <= floor(k/2)
    per_axis_fails("B24", 3, ("padding",), lambda p: p < 0),
    per_axis_fails("B25", 3, ("padding", "kernelSize"), lambda p, k: p > k // 2),
    length_in("B26", "dilation", LENGTHS),
    per_axis_fails("B27", 3, ("dilation",), lambda d: d <= 0),
    invalid_if("B28", _volume_over_int32),
    same_dims("B29", "indices", "gradOutput"),
    same_dims("B30", "self", "gradInput"),
    success_if_empty("B31", "gradOutput", "self", "indices"),
    # MP3:294-306: a 4-D self is unsqueezed to 5-D, then every input is relabelled NCDHW
    inner_nullptr_if("L0.R1.inputs", lambda call, family: ranks_differ_from(call, "self", "gradOutput", "indices")),
    # MP3:313-316: the result (squeezed to 4-D for a 4-D self) takes gradInput's label
    inner_nullptr_if("L0.R1", lambda call, family: result_relabel_refused(call, "gradInput")),
    out_pointers_written("out-pointers"),
))


# ------------------------------------------------------------------ what no case file reaches

def _call(self_dims, grad_dims, ceil=False, null_out=frozenset(), fmt="ND"):
    grad, x = contiguous(grad_dims, "float16", fmt), contiguous(self_dims, "float16", fmt)
    return Call({"gradOutput": grad, "self": x, "indices": contiguous(grad_dims, "int32", fmt), "gradInput": x},
                {"kernelSize": (2,), "stride": (), "padding": (0,), "dilation": (1,), "ceilMode": ceil},
                frozenset(null_out))


def _no_output_shape_check():
    """G.1, G.2: gradOutput is compared with nothing but indices: a wrong spatial size, other N and
    C all pass phase 1 (the kernels' verdict is undefined, so the case file asserts none of them).
    Another rank than self's passes the L2 checks but not the NCDHW relabel of the inputs
    (l0_format_rules.md 2.3, correcting section B's "Consequences")."""
    for grad in ((2, 3, 2, 3, 3), (2, 3, 3, 3, 3), (5, 7, 2, 3, 3)):
        for ceil in (False, True):
            assert MODEL(_call((2, 3, 4, 6, 6), grad, ceil), "ascend910b") == Phase1(0)
    assert MODEL(_call((2, 3, 4, 6, 6), (3, 2, 3, 3)), "ascend910b") == Phase1(INNER_NULLPTR, "L0.R1.inputs")
    assert MODEL(_call((3, 4, 6, 6), (1, 3, 2, 3, 3)), "ascend950") == Phase1(INNER_NULLPTR, "L0.R1.inputs")


def _labels_by_rank():
    """l0_format_rules.md 2.3: ND passes at both ranks; 4-D NCHW/NHWC and 5-D NCDHW/NDHWC pass; a
    label of another fixed rank is refused when the result is relabelled."""
    for self_dims, grad_dims, fmt, ok in (((3, 4, 6, 6), (3, 2, 3, 3), "NCHW", True),
                                          ((3, 4, 6, 6), (3, 2, 3, 3), "NCDHW", False),
                                          ((3, 4, 6, 6), (3, 2, 3, 3), "NCL", False),
                                          ((2, 3, 4, 6, 6), (2, 3, 2, 3, 3), "NCDHW", True),
                                          ((2, 3, 4, 6, 6), (2, 3, 2, 3, 3), "NCHW", False)):
        want = Phase1(0) if ok else Phase1(INNER_NULLPTR, "L0.R1")
        assert MODEL(_call(self_dims, grad_dims, fmt=fmt), "ascend910_93") == want, (self_dims, fmt)


def _null_out_pointers():
    """Spec B: workspaceSize/executor are not null-checked: a call that passes every check (or
    returns early at #31) writes through the NULL."""
    assert MODEL(_call((2, 3, 4, 6, 6), (2, 3, 2, 3, 3), null_out={"executor"}), "ascend950") \
        == Phase1(UNDEFINED, "out-pointers")
    assert MODEL(_call((2, 3, 4, 6, 6), (2, 0, 2, 3, 3), null_out={"workspaceSize"}), "ascend910_93") \
        == Phase1(UNDEFINED, "B31")


EXAMPLES = (_no_output_shape_check, _null_out_pointers, _labels_by_rank)
