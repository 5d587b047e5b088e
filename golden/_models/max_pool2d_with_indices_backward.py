"""aclnnMaxPool2dWithIndicesBackward, phase 1: spec ops/max_pool2d_with_indices_backward.md section B.

Both code paths (950's V3 and the other archs' 3-D-kernel path) run the same CheckParams; only the
dtype lists (#9, #12) and the dilation rule (#26a/#26b) depend on the arch. Rows the model leaves
out: #0 executor creation and #34 an internal nullptr (no argument reaches them), #32 the
indices-vs-gradOutput shape (logged, its result discarded). Kernel tiling failures are not phase-1
statuses here: the L0 wrappers discard them (B.2).
After #33 come the generic L0 label rules (l0_format_rules.md 2.2), inside #34: the inputs are
relabelled after an unsqueeze (an indices rank other than self's is refused) and the result,
squeezed back, is relabelled with gradInput's label (on 950 only for 3-D input).
"""
from __future__ import annotations

from .._phase1 import INNER_NULLPTR, INVALID, Call, Phase1, Phase1Model, Rule, TensorDesc
from ._l0 import caller_label, ranks_differ_from, result_relabel_refused
from ._checks import (ARCH, UNDEFINED, contiguous, dtype_in, invalid_if, is_regbase, length_in, no_private_format,
                      inner_nullptr_if, not_null_each, out_pointers_written, per_axis_fails, pool_attr, rank_in_each, rule, same_dims,
                      same_dtype, same_format, success_if_empty, tensor)

RANKS = frozenset({3, 4})


def _self_dtypes(family: str) -> frozenset[str]:
    """#9: DAV_3510 -> FLOAT16, FLOAT, BF16; DAV_2201 -> FLOAT; DAV_1001 and any other arch -> none."""
    if is_regbase(family):
        return frozenset({"float16", "float32", "bfloat16"})
    return frozenset({"float32"}) if ARCH.get(family) == "DAV_2201" else frozenset()


def _index_dtypes(family: str) -> frozenset[str]:
    """#12: DAV_3510 -> INT32, INT64; every other arch -> INT32, INT8 (INT8 has no kernel: G.4)."""
    return frozenset({"int32", "int64"}) if is_regbase(family) else frozenset({"int32", "int8"})


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
    if t.rank not in RANKS:
        return None
    dims = t.dims if t.rank == 4 else (None,) + t.dims
    if t.format == "NHWC":
        return dims[0], dims[3], dims[1], dims[2], True
    return dims[0], dims[1], dims[2], dims[3], False


def _out_hw(call: Call):
    """(Ho, Wo) from self's H and W, or None when self's rank or the window cannot give them."""
    planes = _planes(call)
    window = zip(*(pool_attr(call, n, 2) for n in ("kernelSize", "stride", "padding", "dilation")))
    if planes is None:
        return None
    ceil = bool(call.attrs.get("ceilMode", False))
    outs = tuple(_pool_out(size, *axis, ceil) for size, axis in zip(planes[2:4], window))
    return None if None in outs or len(outs) != 2 else outs


def _zero_plane_dim(call, family) -> bool:
    """#28: C, H and W of self are non-zero (N may be 0)."""
    planes = _planes(call)
    return planes is not None and 0 in planes[1:4]


def _output_not_positive(call, family) -> bool:
    """#30: Ho > 0 and Wo > 0."""
    out = _out_hw(call)
    return out is not None and min(out) <= 0


def _grad_output_misshapen(call, family) -> bool:
    """#31: gradOutput's view shape is exactly (N,)C,Ho,Wo, or (N,)Ho,Wo,C for NHWC storage."""
    planes, out, grad = _planes(call), _out_hw(call), tensor(call, "gradOutput")
    if planes is None or out is None:
        return False
    n, c, _, _, channel_last = planes
    plane = out + (c,) if channel_last else (c,) + out
    return grad.dims != (plane if n is None else (n,) + plane)


INT64 = range(-(1 << 63), 1 << 63)


def _effective_kernel_padding(call, family):
    """#29: pad <= floor(((k-1)*dil+1)/2) per axis, computed in int64 (spec B row 29, lines 320-329). A
    kernel or dilation whose product passes int64 is signed overflow, no defined result (policy 2):
    UNDEFINED (found by ./run explore: kernelSize 2^62 with dilation 3 made the library fail #29)."""
    axes = zip(*(pool_attr(call, n, 2) for n in ("padding", "kernelSize", "dilation")))
    for p, k, d in axes:
        if (k - 1) * d + 1 not in INT64 or d * (k - 1) + 2 * abs(p) not in INT64:
            return UNDEFINED
        if p > ((k - 1) * d + 1) // 2:
            return INVALID
    return None


def _dilation(rule_id: str, regbase: bool, bad) -> Rule:
    """#26a (DAV_3510: d > 0) and #26b (every other arch: d == 1) are one check, per arch."""
    return invalid_if(rule_id, lambda call, family: is_regbase(family) == regbase
                      and any(bad(d) for d in pool_attr(call, "dilation", 2)))


def _inputs_relabel(call, family) -> bool:
    """L0.R1.inputs: 910B/910_93 unsqueeze every input to 5-D and relabel it NCDHW (MP2:831-844),
    950 unsqueezes 3-D input to 4-D and relabels it NCHW (MP2:763-774): an indices rank other than
    self's (B32 does not enforce it) lands on the wrong rank and is refused, on 950 only when self
    is 3-D."""
    x = tensor(call, "self")
    return (not is_regbase(family) or x.rank == 3) and ranks_differ_from(call, "self", "indices")


def _result_relabel(call, family) -> bool:
    """L0.R1: the result is squeezed back and relabelled with gradInput's own label (MP2:856-859;
    950: MP2:785-787, for 3-D input only, as at rank 4 the result already has self's label)."""
    out = tensor(call, "gradInput")
    return (not is_regbase(family) or out.rank == 3) and result_relabel_refused(call, "gradInput")


MODEL = Phase1Model((
    *not_null_each(1, "gradOutput", "self", "indices", "kernelSize", "stride", "padding", "dilation", "gradInput"),
    # dtypes (B9-B12)
    dtype_in("B9", "self", _self_dtypes),
    same_dtype("B10", "self", "gradOutput"),
    same_dtype("B11", "self", "gradInput"),
    dtype_in("B12", "indices", _index_dtypes),
    # formats (B13-B14)
    same_format("B13", "self", "gradOutput", "gradInput"),
    no_private_format("B14", "self", "gradInput", "gradOutput", "indices"),
    # ranks (B15-B18)
    *rank_in_each(15, RANKS, "self", "gradInput", "gradOutput", "indices"),
    # attribute lengths (B19-B22), then values (B23-B26)
    length_in("B19", "kernelSize", frozenset({1, 2})),
    length_in("B20", "stride", frozenset({0, 1, 2})),
    length_in("B21", "padding", frozenset({1, 2})),
    length_in("B22", "dilation", frozenset({1, 2})),
    per_axis_fails("B23", 2, ("kernelSize",), lambda k: k <= 0),
    per_axis_fails("B24", 2, ("stride",), lambda s: s <= 0),
    per_axis_fails("B25", 2, ("padding", "kernelSize"), lambda p, k: p < 0 or p > k // 2),
    _dilation("B26a", True, lambda d: d <= 0),
    _dilation("B26b", False, lambda d: d != 1),
    same_dims("B27", "self", "gradInput"),
    invalid_if("B28", _zero_plane_dim),
    # implied by B25 for every dilation >= 1 (spec G.9): first only when B25/B26 are bypassed
    rule("B29", _effective_kernel_padding),
    invalid_if("B30", _output_not_positive),
    invalid_if("B31", _grad_output_misshapen),
    success_if_empty("B33", "self"),
    inner_nullptr_if("L0.R1.inputs", _inputs_relabel),
    inner_nullptr_if("L0.R1", _result_relabel),
    out_pointers_written("out-pointers"),
))


# ------------------------------------------------------------------ what no case file reaches

def _call(self_dims, grad_dims, k, s, p, ceil, null_out=frozenset()):
    grad = contiguous(grad_dims, "float32", "NCHW")
    return Call({"gradOutput": grad, "self": contiguous(self_dims, "float32", "NCHW"),
                 "indices": contiguous(grad_dims, "int32", "NCHW"),
                 "gradInput": contiguous(self_dims, "float32", "NCHW")},
                {"kernelSize": k, "stride": s, "padding": p, "dilation": (1,), "ceilMode": ceil}, frozenset(null_out))


def _output_size_examples():
    """Spec B notes: I=1, k=2, s=2, pad=1, ceil -> raw O=2, dropped to 1; I=5, k=2, s=2: floor 2,
    ceil 3 (B31 holds gradOutput to exactly that)."""
    assert MODEL(_call((1, 1, 1, 1), (1, 1, 1, 1), (2,), (2,), (1,), True), "ascend910b") == Phase1(0)
    assert MODEL(_call((1, 1, 1, 1), (1, 1, 2, 2), (2,), (2,), (1,), True), "ascend910b") == Phase1(INVALID, "B31")
    for ceil, out in ((False, 2), (True, 3)):
        assert MODEL(_call((1, 1, 5, 5), (1, 1, out, out), (2,), (2,), (0,), ceil), "ascend950") == Phase1(0)


def _null_out_pointers():
    """Spec B: workspaceSize/executor are not null-checked: a failing check still returns its
    status, a call that passes them all (or returns early at #33) writes through the NULL."""
    ok, empty = ((2, 3, 9, 9), (2, 3, 4, 4)), ((0, 3, 9, 9), (0, 3, 4, 4))
    assert MODEL(_call(*ok, (2,), (), (0,), False, {"executor"}), "ascend910b") == Phase1(UNDEFINED, "out-pointers")
    assert MODEL(_call(*empty, (2,), (), (0,), False, {"workspaceSize"}), "ascend950") == Phase1(UNDEFINED, "B33")
    assert MODEL(_call(*ok, (0,), (), (0,), False, {"workspaceSize"}), "ascend950") == Phase1(INVALID, "B23")


def _int64_overflow_is_undefined():
    """#29 in int64: (k-1)*dil+1 past INT64_MAX has no defined result; within it, the bound holds."""
    call = _call((0, 1, 3, 1), (0, 1, 1, 1), (1 << 62, 1), (1, 2), (1, 0), True)
    call = Call(call.tensors, {**call.attrs, "dilation": (3, 1)})
    assert MODEL(call, "ascend950") == Phase1(UNDEFINED, "B29")
    assert MODEL(Call(call.tensors, {**call.attrs, "dilation": (1, 1)}), "ascend950").check == "B30"


def _labels_by_rank():
    """l0_format_rules.md 2.2: 3-D works with ND or NCL, not NCHW/NHWC (doc-vs-code deviation); 4-D
    NCL passes only on 950 (the result keeps self's label there); an indices rank other than
    self's is refused on 910B/910_93 both ways, on 950 only for a 3-D self."""
    def call(self_dims, grad_dims, fmt, index_dims=None):
        base = _call(self_dims, grad_dims, (2,), (), (0,), False)
        tensors = {n: TensorDesc(t.dims, t.dtype, fmt, t.strides) for n, t in base.tensors.items()}
        if index_dims:
            tensors["indices"] = contiguous(index_dims, "int32", caller_label(len(index_dims)))
        return Call(tensors, base.attrs)
    plane, batch = ((3, 9, 9), (3, 4, 4)), ((2, 3, 9, 9), (2, 3, 4, 4))
    for family in ("ascend910b", "ascend950"):
        assert MODEL(call(*plane, "NCL"), family) == Phase1(0)
        assert MODEL(call(*plane, "ND"), family) == Phase1(0)
        assert MODEL(call(*plane, "NCHW"), family) == Phase1(INNER_NULLPTR, "L0.R1")
        assert MODEL(call(*plane, "NCL", (1, 3, 4, 4)), family) == Phase1(INNER_NULLPTR, "L0.R1.inputs")
    assert MODEL(call(*batch, "NCL"), "ascend950") == Phase1(0)
    assert MODEL(call(*batch, "NCL"), "ascend910_93") == Phase1(INNER_NULLPTR, "L0.R1")
    assert MODEL(call(*batch, "NCHW", (3, 4, 4)), "ascend950") == Phase1(0)
    assert MODEL(call(*batch, "NCHW", (3, 4, 4)), "ascend910b") == Phase1(INNER_NULLPTR, "L0.R1.inputs")


EXAMPLES = (_output_size_examples, _null_out_pointers, _int64_overflow_is_undefined, _labels_by_rank)
