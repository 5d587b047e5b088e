"""aclnnAdaptiveMaxPool2dBackward, phase 1: spec ops/adaptive_max_pool2d_backward.md section B.

The output size is gradOutput's last two dims (no outputSize argument); gradOutput is never
compared with self by the aclnn checks. Rows left out: #0 executor creation and #13-#15, #18
internal nullptrs (no argument reaches them), #17 the result shape (#7 already forces it).
Row #16 is modelled from the tiling checks the spec lists: unlike the max pools' wrappers,
AdaptiveMaxPool3DGrad's returns nullptr when its launcher fails, so a tiling rejection is
561103 in phase 1 (the spec marks this an inference to verify on hardware).
After #16 come the generic L0 label rules (l0_format_rules.md 2.1): the 4-D result is relabelled
with gradOutput's label (R1), and a 3-D result, relabelled NCL, is copied into gradInput (R2).
"""
from __future__ import annotations

from .._phase1 import INNER_NULLPTR, INVALID, Call, Phase1, Phase1Model
from ._l0 import caller_label, reformat_refuses, viewcopy_refuses
from ._checks import (INT32_MAX, UNDEFINED, contiguous, dtype_in, inner_nullptr_if, invalid_if, is_regbase,
                      no_private_format, not_null, out_pointers_written, rank_in, rule, same_dtype, same_format, success_if_empty,
                      tensor)

TENSORS = ("self", "gradInput", "gradOutput", "indices")


def _self_dtypes(family: str) -> frozenset[str]:
    """#4: regbase (950), ASCEND910B or ASCEND910_93 -> BF16, FP16, FP32; every other SoC -> none."""
    if is_regbase(family) or family in ("ascend910b", "ascend910_93"):
        return frozenset({"bfloat16", "float16", "float32"})
    return frozenset()


def _index_dtypes(family: str) -> frozenset[str]:
    """#5: INT32 or INT64 on every SoC."""
    return frozenset({"int32", "int64"})


def _ranks_differ(call, family) -> bool:
    """#6: self, gradInput, gradOutput and indices have one rank."""
    return len({tensor(call, n).rank for n in TENSORS}) > 1


def _pairs_differ(call, family) -> bool:
    """#7: gradOutput's dims equal indices', and self's equal gradInput's (gradOutput is not
    compared with self)."""
    pairs = (("gradOutput", "indices"), ("self", "gradInput"))
    return any(tensor(call, a).dims != tensor(call, b).dims for a, b in pairs)


def _plane_over_int32(call, family) -> bool:
    """#11, non-regbase only: self's H*W (its last two dims, N and C left out) <= INT32_MAX."""
    t = tensor(call, "self")
    if is_regbase(family) or t.rank < 2:
        return False
    h, w = t.dims[-2:]
    return h * w > INT32_MAX


def _as_4d(dims: tuple[int, ...]) -> tuple[int, ...]:
    """A 3-D (C, H, W) tensor as the 4-D (1, C, H, W) the executor unsqueezes it to."""
    return (1,) + dims if len(dims) == 3 else dims


def _routes_to_adaptive_kernel(family: str, x: tuple[int, ...], grad: tuple[int, ...]) -> bool:
    """Dispatch step 5: 950 always runs AdaptiveMaxPool3DGrad; the others run it unless every
    spatial dim divides (H % Ho == 0 and W % Wo == 0), which goes to MaxPool3DGradWithArgmax,
    whose wrapper ignores its launcher's status."""
    if is_regbase(family):
        return True
    (h, w), (ho, wo) = x[-2:], grad[-2:]
    return not (ho and wo and h % ho == 0 and w % wo == 0)


def _adaptive_tiling(call, family):
    """#16: on the AdaptiveMaxPool3DGrad path, its tiling rejects a zero dim of x (self) and a
    gradOutput whose N or C differ from self's; the launcher fails and the L0 op returns nullptr."""
    x, grad = tensor(call, "self"), tensor(call, "gradOutput")
    if min(x.rank, grad.rank) < 3:
        return None
    xd, gd = _as_4d(x.dims), _as_4d(grad.dims)
    if not _routes_to_adaptive_kernel(family, xd, gd):
        return None
    if any(d < 0 for d in xd + gd):
        # no check of the API refuses a negative view dim: what the launcher's shape arithmetic makes
        # of it has no documented result (found by ./run explore drawing gradOutput and indices alike)
        return UNDEFINED
    return INNER_NULLPTR if 0 in xd or xd[:2] != gd[:2] else None


def _result_relabel(call, family) -> bool:
    """L0.R1 (A2D:184-187): a 4-D result is squeezed from 5-D and relabelled with gradOutput's
    label; a label of another fixed rank (NCL, NCDHW, ...) is refused. A 3-D input was relabelled
    NCHW on the way in, which fits."""
    grad = tensor(call, "gradOutput")
    return grad.rank == 4 and reformat_refuses(grad.format, 4)


def _copy_into_grad_input(call, family) -> bool:
    """L0.R2 (A2D:189-194): a 3-D result is relabelled NCL (A2D:103-117), and the final ViewCopy
    refuses a gradInput labelled anything else, ND included (the doc's only label)."""
    out = tensor(call, "gradInput")
    return out.rank == 3 and viewcopy_refuses("NCL", out.format)


MODEL = Phase1Model((
    not_null("B1", "gradOutput", "self", "indices", "gradInput"),
    same_dtype("B2", "self", "gradOutput"),
    same_dtype("B3", "self", "gradInput"),
    dtype_in("B4", "self", _self_dtypes),
    dtype_in("B5", "indices", _index_dtypes),
    invalid_if("B6", _ranks_differ),
    invalid_if("B7", _pairs_differ),
    same_format("B8", "self", "gradOutput", "gradInput", "indices"),
    no_private_format("B9", *TENSORS),
    rank_in("B10", frozenset({3, 4}), *TENSORS),
    invalid_if("B11", _plane_over_int32),
    success_if_empty("B12", "gradOutput", "self", "indices"),
    rule("B16", _adaptive_tiling),
    inner_nullptr_if("L0.R1", _result_relabel),
    inner_nullptr_if("L0.R2", _copy_into_grad_input),
    out_pointers_written("out-pointers"),
))


# ------------------------------------------------------------------ what no case file reaches

def _call(self_dims, grad_dims, null_out=frozenset(), dtype="float32", fmt=None):
    fmt = fmt or caller_label(len(self_dims))
    grad, x = contiguous(grad_dims, dtype, fmt), contiguous(self_dims, dtype, fmt)
    return Call({"gradOutput": grad, "self": x, "indices": contiguous(grad_dims, "int32", fmt), "gradInput": x},
                {}, frozenset(null_out))


def _tiling_rejection_by_route():
    """#16 and dispatch step 5: gradOutput's C differing from self's passes every aclnn check; only
    the AdaptiveMaxPool3DGrad tiling rejects it (561103), which A2/A3 reach for sizes that do not
    divide and 950 always; A2/A3's divisible route ignores its launcher's status."""
    divisible, not_divisible = _call((2, 3, 8, 8), (2, 4, 4, 4)), _call((2, 3, 9, 9), (2, 4, 4, 4))
    assert MODEL(divisible, "ascend910b") == Phase1(0)
    assert MODEL(not_divisible, "ascend910_93") == Phase1(INNER_NULLPTR, "B16")
    assert MODEL(divisible, "ascend950") == Phase1(INNER_NULLPTR, "B16")
    assert MODEL(_call((3, 9, 9), (3, 4, 4)), "ascend950") == Phase1(0)      # 3-D: (1, C) both


def _null_out_pointers():
    """#13 of G: workspaceSize/executor are never checked: a failing check still returns its status,
    a call that passes them all (or returns early) writes through the NULL."""
    ok = _call((2, 3, 9, 9), (2, 3, 4, 4), {"executor"})
    empty = _call((0, 3, 9, 9), (0, 3, 4, 4), {"workspaceSize"})
    bad = _call((2, 3, 9, 9), (2, 3, 4, 4), {"workspaceSize"}, "float64")
    assert MODEL(ok, "ascend910b") == Phase1(UNDEFINED, "out-pointers")
    assert MODEL(empty, "ascend950") == Phase1(UNDEFINED, "B12")
    assert MODEL(bad, "ascend950") == Phase1(INVALID, "B4")


def _labels_by_rank():
    """l0_format_rules.md 2.1: 3-D works only with NCL (the doc's ND is refused: a doc-vs-code
    deviation), 4-D with any label of rank 4 or none; a tiling rejection (#16) comes first."""
    for dims, grad, fmt, want in (((3, 9, 9), (3, 4, 4), "NCL", Phase1(0)),
                                  ((3, 9, 9), (3, 4, 4), "ND", Phase1(INNER_NULLPTR, "L0.R2")),
                                  ((3, 9, 9), (3, 4, 4), "NCHW", Phase1(INNER_NULLPTR, "L0.R2")),
                                  ((2, 3, 9, 9), (2, 3, 4, 4), "ND", Phase1(0)),
                                  ((2, 3, 9, 9), (2, 3, 4, 4), "NHWC", Phase1(0)),
                                  ((2, 3, 9, 9), (2, 3, 4, 4), "NCL", Phase1(INNER_NULLPTR, "L0.R1")),
                                  ((2, 3, 9, 9), (2, 4, 4, 4), "NCL", Phase1(INNER_NULLPTR, "B16"))):
        for family in ("ascend910b", "ascend910_93", "ascend950"):
            assert MODEL(_call(dims, grad, fmt=fmt), family) == want, (dims, fmt, family)


EXAMPLES = (_tiling_rejection_by_route, _null_out_pointers, _labels_by_rank)
