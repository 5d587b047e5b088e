"""aclnnAvgPool2dBackwardGetWorkspaceSize, section B of shared/spec/ops/avg_pool2d_backward.md.

B1.* are the rows of table B.1 (CheckParams, every SoC), B2.* the steps of B.2 (the 950 path,
IsRegbase), B3.* the steps of B.3 (every other SoC), in code order. Rows that fail only when the
runtime cannot allocate (B1.17 executor creation, B2.1, B2.5, the graph builds of B2.2 and B3.1)
are not modelled: no argument reaches them.

Where the spec gives phase 1 no result the model says UNDEFINED: a NULL stride dereferenced on
the 950 non-global path (B2.3) and the 910B/910_93 3-D path (B3.3); a NULL workspaceSize or
executor, which this op never checks (G.14) and writes through whenever it returns success; and
arithmetic the code does in int64 that overflows (2*pad in B1.14, a shape size in B1.18, the
pooling formula in B2.4).

After the checks of its path come the generic L0 label rules (l0_format_rules.md 2.4), whose
status depends on the path the call took: L0.R3.cube (TransData of a 4-D self labelled NCL on the
cube path, 161002), then the final copy of a 3-D result, relabelled NCL, into a gradInput labelled
otherwise: L0.R2.cube (161002), L0.R2.global (561103), L0.R2.v2 (950's AvgPoolV2Grad, 561000);
the 910B/910_93 AvgPool3DGrad path copies an ND result and refuses nothing. The path rules
therefore no longer end the model with a success: each passes (None) where its path goes on.
"""
from __future__ import annotations

from golden._phase1 import (INNER_NULLPTR, INT64, INVALID, NULLPTR, SUCCESS, UNDEFINED, Call, Phase1,
                            Phase1Model, Rule, TensorDesc, int64_product)

from ._checks import FAMILIES, PRIVATE_FORMATS, is_regbase
from ._l0 import reformat_refuses

INNER = 561000                            # ACLNN_ERR_INNER: what 950's HandleGradInput returns

TENSORS = ("gradOutput", "self", "gradInput")
FORMATS = ("NCHW", "NCL")
A2A3 = ("ascend910b", "ascend910_93")     # SocVersion ASCEND910B / ASCEND910_93
REGBASE = tuple(f for f in FAMILIES if is_regbase(f))     # NpuArch DAV_3510
CUBE_DIVISOR = 255                        # CheckCubeSupport: divisorOverride in [-255, 255]


# ------------------------------------------------------------------ reading the arguments
# Every rule judges its own condition only and passes (None) on what it cannot read, so that a
# model with a rule dropped or two rules swapped still runs (tests/test_phase1_models.py).

def _c_int(value, bits: int) -> int:
    """The value the C parameter holds (ctypes narrows int8_t / int64_t modulo 2**bits)."""
    v = int(value) & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


def _array(call: Call, name: str) -> tuple[int, ...] | None:
    value = call.attrs.get(name)
    return None if value is None else tuple(_c_int(x, 64) for x in value)


def _pair(values: tuple[int, ...] | None) -> tuple[int, int] | None:
    """(H, W); a length-1 array means the same value for both (AP:100-123)."""
    if values is None or len(values) not in (1, 2):
        return None
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def _kernel(call: Call) -> tuple[int, int] | None:
    return _pair(_array(call, "kernelSize"))


def _stride(call: Call) -> tuple[int, int] | None:
    """Length 0 means stride = kernel; a NULL stride is None (each path treats it its own way)."""
    stride = _array(call, "stride")
    return _kernel(call) if stride == () else _pair(stride)


def _padding(call: Call) -> tuple[int, int] | None:
    return _pair(_array(call, "padding"))


def _divisor(call: Call) -> int:
    return _c_int(call.attrs.get("divisorOverride", 0), 64)


def _tensors(call: Call):
    """The non-NULL ones of gradOutput, self, gradInput."""
    return [t for t in (call.tensors.get(n) for n in TENSORS) if t is not None]


def _hw(call: Call, name: str) -> tuple[int, int] | None:
    """A tensor's last two dims (H, W), whatever its format label says."""
    t = call.tensors.get(name)
    return None if t is None or t.rank < 2 else tuple(t.dims[-2:])


def _success(call: Call) -> int:
    """The empty-input return writes *workspaceSize and *executor, which this op never
    null-checks (G.14)."""
    return UNDEFINED if call.null_out else SUCCESS


# ------------------------------------------------------------------ B.1 CheckParams (every SoC)

def nulls(call, family, scratch):
    # stride is not checked (G.2)
    if (any(call.tensors.get(n) is None for n in TENSORS)
            or call.attrs.get("kernelSize") is None or call.attrs.get("padding") is None):
        return NULLPTR


def dtypes_supported(call, family, scratch):
    # BF16 is decided by SocVersion (ASCEND910B / ASCEND910_93) or regbase (AP:273-288)
    allowed = ("float32", "float16", "bfloat16") if family in A2A3 + REGBASE else ("float32", "float16")
    if any(t.dtype not in allowed for t in _tensors(call)):
        return INVALID


def grad_dtypes_equal(call, family, scratch):
    # self is not compared (G.3)
    grad, grad_input = call.tensors.get("gradOutput"), call.tensors.get("gradInput")
    if grad is not None and grad_input is not None and grad.dtype != grad_input.dtype:
        return INVALID


def formats_supported(call, family, scratch):
    if any(t.format not in FORMATS for t in _tensors(call)):
        return INVALID


def four_d_is_nchw(call, family, scratch):
    # self's format is not tied to its rank (G.1)
    grad, grad_input = call.tensors.get("gradOutput"), call.tensors.get("gradInput")
    if grad is not None and grad.rank == 4 and (
            grad.format != "NCHW" or (grad_input is not None and grad_input.format != "NCHW")):
        return INVALID


def grad_not_private(call, family, scratch):
    # dead code after B1.4, kept so that the rule list is the spec's
    grad = call.tensors.get("gradOutput")
    if grad is not None and grad.format in PRIVATE_FORMATS:
        return INVALID


def ranks_paired(call, family, scratch):
    grad, grad_input = call.tensors.get("gradOutput"), call.tensors.get("gradInput")
    if grad is not None and grad_input is not None and (grad.rank, grad_input.rank) not in ((3, 3), (4, 4)):
        return INVALID


def no_negative_dims(call, family, scratch):
    if any(d < 0 for t in _tensors(call) for d in t.dims):
        return INVALID


def kernel_length(call, family, scratch):
    kernel = _array(call, "kernelSize")
    if kernel is not None and len(kernel) not in (1, 2):
        return INVALID


def kernel_positive(call, family, scratch):
    if any(k <= 0 for k in _array(call, "kernelSize") or ()):
        return INVALID


def stride_valid(call, family, scratch):
    stride = _array(call, "stride")
    if stride is not None and (len(stride) > 2 or any(s <= 0 for s in stride)):
        return INVALID


def padding_not_long(call, family, scratch):
    padding = _array(call, "padding")
    if padding is not None and len(padding) > 2:
        return INVALID


def padding_not_empty(call, family, scratch):
    if _array(call, "padding") == ():
        return INVALID


def _leading_pair(values: tuple[int, ...] | None) -> tuple[int, ...]:
    """The H and W values a per-axis loop reads, whatever the array's length (a longer one is
    refused by B1.9/B1.12, which run first in the spec's order)."""
    if not values:
        return ()
    return (values[0], values[0]) if len(values) == 1 else tuple(values[:2])


def kernel_holds_padding(call, family, scratch):
    # negative padding passes here (G.10)
    kernel, padding = _leading_pair(_array(call, "kernelSize")), _leading_pair(_array(call, "padding"))
    for k, p in zip(kernel, padding):       # H, then W
        if 2 * p not in INT64:
            return UNDEFINED
        if k < 2 * p:
            return INVALID


def cube_math_type_known(call, family, scratch):
    if _c_int(call.attrs.get("cubeMathType", 0), 8) not in (0, 1, 2, 3):
        return INVALID


def self_shape_is_grad_input(call, family, scratch):
    # the only shape check of CheckParams: gradOutput's shape is not validated here (G.4)
    self_, grad_input = call.tensors.get("self"), call.tensors.get("gradInput")
    if self_ is not None and grad_input is not None and tuple(self_.dims) != tuple(grad_input.dims):
        return INVALID


def empty_returns_success(call, family, scratch):
    # DOC says empty tensors are unsupported; the code returns success, workspace 0 (G.5)
    sizes = [int64_product(t.dims) for t in _tensors(call)]
    if None in sizes:
        return UNDEFINED
    if 0 in sizes:
        return _success(call)


# ------------------------------------------------------------------ shared by B.2 and B.3

def _is_global(call: Call) -> bool:
    """The global-average-pool fast path (C.4): it ignores stride, padding and countIncludePad."""
    hw = _hw(call, "self")
    return (hw is not None and _divisor(call) == 0 and _kernel(call) == hw and min(hw) >= 10
            and _hw(call, "gradOutput") == (1, 1))


def _array_data_invalid(kernel, stride, padding) -> bool:
    """CheckArrayDataAvgPoolBackWard (AP:51-93) on arrays of equal length: kernel, stride > 0 and
    0 <= pad <= k/2 per axis."""
    return (any(k <= 0 for k in kernel) or any(s <= 0 for s in stride)
            or any(p < 0 or 2 * p > k for k, p in zip(kernel, padding)))


# ------------------------------------------------------------------ B.2 the 950 path

def regbase_array_data(call, family, scratch):
    # on the raw arrays: the kernel/padding length rule is skipped on regbase (AP:70-74)
    if family not in REGBASE or _is_global(call):
        return None
    if call.attrs.get("stride") is None:     # dereferenced here (G.2)
        return UNDEFINED
    kernel, stride, padding = _kernel(call), _stride(call), _padding(call)
    if kernel and stride and padding and _array_data_invalid(kernel, stride, padding):
        return INVALID


def _pool_size(size: int, k: int, s: int, p: int, ceil: bool) -> int | None:
    """The forward output size (C.1); None where a term leaves int64."""
    span = size + 2 * p - k + (s - 1 if ceil else 0)
    out = span // s + 1
    if any(v not in INT64 for v in (2 * p, span, (out - 1) * s, size + p)):
        return None
    return out - 1 if ceil and (out - 1) * s >= size + p else out


def regbase_tiling(call, family, scratch):
    # AvgPoolV2Grad's tiling (its other checks repeat B.1): self N, C == gradOutput's and
    # gradOutput H, W == the pooling formula; a failed launcher gives a nullptr (561103)
    if family not in REGBASE or _is_global(call):
        return None
    grad, self_ = call.tensors.get("gradOutput"), call.tensors.get("self")
    kernel, stride, padding = _kernel(call), _stride(call), _padding(call)
    if grad is None or self_ is None or self_.rank < 2 or not (kernel and stride and padding) or min(stride) <= 0:
        return None
    ceil = bool(call.attrs.get("ceilMode", False))
    want = tuple(_pool_size(*axis, ceil) for axis in zip(self_.dims[-2:], kernel, stride, padding))
    if None in want:
        return UNDEFINED
    if tuple(grad.dims[:-2]) != tuple(self_.dims[:-2]) or tuple(grad.dims[-2:]) != want:
        return INNER_NULLPTR
    return None


# ------------------------------------------------------------------ B.3 every other SoC

def legacy_cube_only(call, family, scratch):
    # 910, 310P, 310B (and any SoC that is neither A2/A3 nor regbase): the cube path or nothing
    if family in REGBASE + A2A3 or _is_global(call):
        return None
    return None if abs(_divisor(call)) <= CUBE_DIVISOR else INVALID


def _cube_supported_a2a3(call: Call) -> bool:
    """CheckCubeSupport on 910B/910_93 (AP:671-681)."""
    kh, kw = _kernel(call)
    return (abs(_divisor(call)) <= CUBE_DIVISOR and kh <= 255 and kw <= 255
            and (kh * kw <= 255 or (kh <= 20 and kw <= 20)))


def _takes_cube_a2a3(call: Call) -> bool:
    """The 910B/910_93 cube conditions (AP:1107-1108); a long strip is judged by integer division
    on self's H, W."""
    h, w = _hw(call, "self")
    return (_cube_supported_a2a3(call) and bool(call.attrs.get("countIncludePad", False))
            and not call.attrs.get("ceilMode", False) and w // h < 2 and h // w < 2
            and call.tensors["gradOutput"].dims[-3] < 65536)


def a2a3_cube_or_3d(call, family, scratch):
    # any failure of either graph build is 161002 (AP:1100, 1111, 1124); the 3-D path's only
    # argument-driven one is CheckArrayDataAvgPoolBackWard on (1,kH,kW), (1,sH,sW), (0,pH,pW)
    if family not in A2A3 or _is_global(call) or _a2a3_path(call) != "3d":
        return None
    if call.attrs.get("stride") is None:     # FillIntArray dereferences it (G.2)
        return UNDEFINED
    kernel, stride, padding = _kernel(call), _stride(call), _padding(call)
    if stride and padding and _array_data_invalid((1,) + kernel, (1,) + stride, (0,) + padding):
        return INVALID
    return None


def _a2a3_path(call: Call) -> str | None:
    """910B/910_93 off the global path: 'cube' or '3d', None where the call cannot say (a rule
    before this one refuses such a call)."""
    grad, hw = call.tensors.get("gradOutput"), _hw(call, "self")
    if grad is None or grad.rank < 3 or not hw or min(hw) <= 0 or not _kernel(call):
        return None
    return "cube" if _takes_cube_a2a3(call) else "3d"


def _path(call: Call, family: str) -> str | None:
    """The code path a call that passed B.1 takes (ops/avg_pool2d_backward.md B.2, B.3):
    'global', 'v2' (950 AvgPoolV2Grad), 'cube' or '3d' (910B/910_93 AvgPool3DGrad)."""
    if _is_global(call):
        return "global"
    if family in REGBASE:
        return "v2"
    if family in A2A3:
        return _a2a3_path(call)
    return "cube"


# ------------------------------------------------------------------ the L0 label rules (l0_format_rules.md 2.4)
# Only two label situations get past B1.4/B1.5: a 3-D gradInput labelled NCHW (the 3-D result is
# relabelled NCL before the final copy) and a 4-D self labelled NCL (TransData on the cube path).

def _grad_input_not_ncl_3d(call: Call) -> bool:
    out = call.tensors.get("gradInput")
    return out is not None and out.rank == 3 and reformat_refuses(out.format, 3)


def cube_transdata_self(call, family, scratch):
    # AP:939-940: self (after an optional Cast that keeps its label) goes to NC1HWC0; a 4-D self
    # labelled NCL fails the storage-rank check (TD:285-295), and the cube builder's 561103
    # becomes the caller's 161002 (AP:1100/1111)
    x = call.tensors.get("self")
    if _path(call, family) == "cube" and x is not None and x.rank == 4 and reformat_refuses(x.format, 4):
        return INVALID


def cube_copy_grad_input(call, family, scratch):
    # HandleGradInput (AP:968, 817-829) -> 161001, returned by the cube caller as 161002
    if _path(call, family) == "cube" and _grad_input_not_ncl_3d(call):
        return INVALID


def global_copy_grad_input(call, family, scratch):
    # Div's ND result relabelled NCL for 3-D (AP:1018-1066); the copy's failure is 561103
    # (AP:1080 non-950, AP:1187 950)
    if _path(call, family) == "global" and _grad_input_not_ncl_3d(call):
        return INNER_NULLPTR


def regbase_copy_grad_input(call, family, scratch):
    # AvgPoolV2Grad's NCHW result relabelled NCL for 3-D, then copied (AP:1205-1206): 561000
    if _path(call, family) == "v2" and _grad_input_not_ncl_3d(call):
        return INNER


def out_pointers(call, family, scratch):
    # the end of every path writes *workspaceSize and *executor, never null-checked (G.14)
    return UNDEFINED if call.null_out else None


MODEL = Phase1Model((
    Rule("B1.1", nulls),
    Rule("B1.2", dtypes_supported),
    Rule("B1.3", grad_dtypes_equal),
    Rule("B1.4", formats_supported),
    Rule("B1.5", four_d_is_nchw),
    Rule("B1.6", grad_not_private),
    Rule("B1.7", ranks_paired),
    Rule("B1.8", no_negative_dims),
    Rule("B1.9", kernel_length),
    Rule("B1.10", kernel_positive),
    Rule("B1.11", stride_valid),
    Rule("B1.12", padding_not_long),
    Rule("B1.13", padding_not_empty),
    Rule("B1.14", kernel_holds_padding),
    Rule("B1.15", cube_math_type_known),
    Rule("B1.16", self_shape_is_grad_input),
    Rule("B1.18", empty_returns_success),
    Rule("B2.3", regbase_array_data),
    Rule("B2.4", regbase_tiling),
    Rule("B3.2", legacy_cube_only),
    Rule("B3.3", a2a3_cube_or_3d),
    Rule("L0.R3.cube", cube_transdata_self),
    Rule("L0.R2.cube", cube_copy_grad_input),
    Rule("L0.R2.global", global_copy_grad_input),
    Rule("L0.R2.v2", regbase_copy_grad_input),
    Rule("out-pointers", out_pointers),
))
