"""aclnnMaxUnpool3dBackwardGetWorkspaceSize, section B of shared/spec/ops/max_unpool3d_backward.md.

The rules are the rows of table B in code order. No check depends on the SoC (spec B): the six
families, 310P and 310B included (documented unsupported, not rejected, G.8), run the same ones.
Formats are never checked (G.3). Rows that fail only when the runtime cannot allocate (B1
executor creation) are not modelled: no argument reaches them.

The spec does not define IsContiguous (B3); the model follows opbase's (hicann/opbase
opdev/tensor_view_utils: IsContiguous): a private storage format, or a view of 0 or 1 element,
is contiguous whatever its strides; otherwise row-major strides over every dim longer than 1.

UNDEFINED where the spec gives phase 1 no result: a self whose batch N is negative (dim 0 is the
one dim B15 leaves unchecked) with matching indices, out and gradOutput passes every check and is
not empty, and the l0 steps that follow (B25) are not described for it; and a shape size or
volume (B3, B20, B24) that overflows the int64 the code computes it in.
"""
from __future__ import annotations

from golden._phase1 import (INVALID, NULLPTR, PASSED, SUCCESS, UNDEFINED, Call, Phase1, Phase1Model, Rule,
                            TensorDesc, int64_product)

TENSORS = ("gradOutput", "self", "indices", "out")
ARRAYS = ("outputSize", "stride", "padding")
# MU:39-41: no BF16, no BOOL, no unsigned type wider than 8 bits
DTYPES = frozenset({"float32", "float16", "int8", "uint8", "int16", "int32", "int64", "float64"})
# opbase op::IsPrivateFormat (the list of spec max_pool2d_with_indices_backward.md B #14)
PRIVATE_FORMATS = frozenset({"NC1HWC0", "FRACTAL_Z", "NDC1HWC0", "FRACTAL_Z_3D", "FRACTAL_NZ", "NC1HWC0_C04",
                             "FRACTAL_NZ_C0_2", "FRACTAL_NZ_C0_4", "FRACTAL_NZ_C0_8", "FRACTAL_NZ_C0_16",
                             "FRACTAL_NZ_C0_32"})


# Every rule judges its own condition only and passes (None) on what it cannot read, so that a
# model with a rule dropped or two rules swapped still runs (tests/test_phase1_models.py).

def _dims(call: Call, name: str) -> tuple[int, ...] | None:
    t = call.tensors.get(name)
    return None if t is None else tuple(t.dims)


def _c_int64(value) -> int:
    """The value an int64_t holds (ctypes narrows modulo 2**64)."""
    v = int(value) & ((1 << 64) - 1)
    return v - (1 << 64) if v >> 63 else v


def _array(call: Call, name: str) -> tuple[int, ...] | None:
    value = call.attrs.get(name)
    return None if value is None else tuple(_c_int64(x) for x in value)


def is_contiguous(t) -> bool | None:
    """opbase IsContiguous; None where the shape size it computes overflows int64."""
    if t.format in PRIVATE_FORMATS:
        return True
    size = int64_product(t.dims)
    if size is None:
        return None
    if size in (0, 1):
        return True
    if len(t.dims) != len(t.strides):
        return False
    expected = 1
    for d, s in zip(reversed(t.dims), reversed(t.strides)):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def out_pointers(call, family, scratch):
    # OEC:234-238, before anything else (G.7)
    if call.null_out:
        return NULLPTR


def nulls(call, family, scratch):
    if any(call.tensors.get(n) is None for n in TENSORS) or any(call.attrs.get(n) is None for n in ARRAYS):
        return NULLPTR


def out_contiguous(call, family, scratch):
    # only out: the inputs may be any view (G.2)
    out = call.tensors.get("out")
    contiguous = True if out is None else is_contiguous(out)
    if contiguous is None:
        return UNDEFINED
    if not contiguous:
        return INVALID


def _dtype_listed(name):
    def rule(call, family, scratch):
        t = call.tensors.get(name)
        if t is not None and t.dtype not in DTYPES:
            return INVALID
    return rule


def _dtype_is_grad_output(name):
    def rule(call, family, scratch):
        t, grad = call.tensors.get(name), call.tensors.get("gradOutput")
        if t is not None and grad is not None and t.dtype != grad.dtype:
            return INVALID
    return rule


def indices_int64(call, family, scratch):
    # INT32 indices are rejected (G.1)
    indices = call.tensors.get("indices")
    if indices is not None and indices.dtype != "int64":
        return INVALID


def self_rank(call, family, scratch):
    dims = _dims(call, "self")
    if dims is not None and len(dims) not in (4, 5):
        return INVALID


def _rank_is_self(name):
    def rule(call, family, scratch):
        dims, self_dims = _dims(call, name), _dims(call, "self")
        if dims is not None and self_dims is not None and len(dims) != len(self_dims):
            return INVALID
    return rule


def _shape_is_self(name):
    def rule(call, family, scratch):
        dims, self_dims = _dims(call, name), _dims(call, "self")
        if dims is not None and self_dims is not None and dims != self_dims:
            return INVALID
    return rule


def self_dims_positive(call, family, scratch):
    # N (dim 0) may be 0 (or anything): only the other dims are checked (L2B:391-406)
    if any(d <= 0 for d in (_dims(call, "self") or ())[1:]):
        return INVALID


def _length_three(name):
    def rule(call, family, scratch):
        values = _array(call, name)
        if values is not None and len(values) != 3:
            return INVALID
    return rule


def stride_and_size_positive(call, family, scratch):
    # stride[i] before outputSize[i], per index (L2B:433-443); padding values are never checked
    for s, o in zip(_array(call, "stride") or (), _array(call, "outputSize") or ()):
        if s <= 0 or o <= 0:
            return INVALID


def volume_holds_self(call, family, scratch):
    # a volume test over self's spatial dims (the last three), not per axis
    size, self_dims = _array(call, "outputSize"), _dims(call, "self")
    if size is None or self_dims is None:
        return None
    volume, self_volume = int64_product(size), int64_product(self_dims[-3:])
    if volume is None or self_volume is None:
        return UNDEFINED
    if volume < self_volume:
        return INVALID


def grad_spatial_is_output_size(call, family, scratch):
    grad, size = _dims(call, "gradOutput"), _array(call, "outputSize")
    if grad is not None and size is not None and grad[-3:] != size:
        return INVALID


def grad_batch_is_self(call, family, scratch):
    # 4-D is (N, D, H, W): only N; 5-D (N, C, D, H, W): N and C
    grad, self_dims = _dims(call, "gradOutput"), _dims(call, "self")
    if grad is None or self_dims is None:
        return None
    lead = 1 if len(self_dims) == 4 else 2
    if grad[:lead] != self_dims[:lead]:
        return INVALID


def empty_returns_success(call, family, scratch):
    # after every check: only N == 0 gets here (MU:211-215)
    grad = call.tensors.get("gradOutput")
    size = None if grad is None else int64_product(grad.dims)
    if grad is not None and size is None:
        return UNDEFINED
    if size == 0:
        return SUCCESS


def gather(call, family, scratch):
    # the l0 steps (MU:217-242) fail only when the runtime does: no argument reaches them. The
    # spec describes them on a batch of at least one; a negative one passes every check (B15
    # leaves dim 0 alone) and gets no result, and an empty one never gets here (B24)
    self_dims, grad = _dims(call, "self"), _dims(call, "gradOutput")
    if not self_dims or not grad or self_dims[0] <= 0 or grad[0] <= 0:
        return UNDEFINED
    return PASSED


MODEL = Phase1Model((
    Rule("B0", out_pointers),
    Rule("B2", nulls),
    Rule("B3", out_contiguous),
    # dtypes (B4-B9)
    *(Rule(f"B{4 + i}", _dtype_listed(name)) for i, name in enumerate(("gradOutput", "self", "out"))),
    *(Rule(f"B{7 + i}", _dtype_is_grad_output(name)) for i, name in enumerate(("self", "out"))),
    Rule("B9", indices_int64),
    # ranks and shapes (B10-B15)
    Rule("B10", self_rank),
    Rule("B11", _rank_is_self("indices")),
    Rule("B12", _rank_is_self("out")),
    Rule("B13", _shape_is_self("indices")),
    Rule("B14", _shape_is_self("out")),
    Rule("B15", self_dims_positive),
    # attribute lengths (B16-B18), then values (B19-B20)
    *(Rule(f"B{16 + i}", _length_three(name)) for i, name in enumerate(("outputSize", "stride", "padding"))),
    Rule("B19", stride_and_size_positive),
    Rule("B20", volume_holds_self),
    Rule("B21", _rank_is_self("gradOutput")),    # after the outputSize checks (G.5)
    Rule("B22", grad_spatial_is_output_size),
    Rule("B23", grad_batch_is_self),
    Rule("B24", empty_returns_success),
    Rule("B25", gather),
))


# ------------------------------------------------------------------ corner cases the cases leave open
# Policy 2 keeps undefined behaviour out of the case files, and the spec does not define
# IsContiguous, so these pin the model's answers there (INFO.examples, run by tests/test_golden.py).

def _tensor(dims, dtype="float32", fmt="ND", strides=None) -> TensorDesc:
    if strides is None:
        strides, step = [], 1
        for d in reversed(dims):
            strides.insert(0, step)
            step *= max(d, 1)
    return TensorDesc(tuple(dims), dtype, fmt, tuple(strides))


def _call(self_dims=(2, 3, 2, 3, 3), grad_dims=(2, 3, 4, 6, 6), out=None, size=(4, 6, 6)) -> Call:
    """A valid 5-D call: self (2,3,2,3,3) fp32, outputSize (4,6,6)."""
    tensors = {"gradOutput": _tensor(grad_dims), "self": _tensor(self_dims),
               "indices": _tensor(self_dims, "int64"), "out": out or _tensor(self_dims)}
    return Call(tensors, {"outputSize": size, "stride": (2, 2, 2), "padding": (0, 0, 0)})


def out_contiguity_is_opbase_is_contiguous():
    # a private storage format is contiguous whatever its strides, a dim of 1 has no stride to keep
    strided = (1, 1, 1, 1, 1)
    assert MODEL(_call(out=_tensor((2, 3, 2, 3, 3), strides=strided)), "ascend910b") == Phase1(INVALID, "B3")
    assert MODEL(_call(out=_tensor((2, 3, 2, 3, 3), fmt="NC1HWC0", strides=strided)), "ascend910b") == Phase1(0)
    one = (2, 1, 2, 3, 3)
    c_of_one = _call(self_dims=one, grad_dims=(2, 1, 4, 6, 6), out=_tensor(one, strides=(18, 99, 9, 3, 1)))
    assert MODEL(c_of_one, "ascend950") == Phase1(0)


def negative_batch_is_undefined():
    # B15 leaves dim 0 alone: a negative N on every tensor passes each check and is not empty
    negative = _call(self_dims=(-2, 3, 2, 3, 3), grad_dims=(-2, 3, 4, 6, 6))
    assert MODEL(negative, "ascend910") == Phase1(UNDEFINED, "B25")
    assert MODEL(_call(self_dims=(0, 3, 2, 3, 3), grad_dims=(0, 3, 4, 6, 6)), "ascend910") == Phase1(0, "B24")


def int64_overflow_is_undefined():
    # shape sizes and volumes are int64 in the code: signed overflow has no defined result
    huge = (2, 3, 1 << 31, 1 << 31, 2)
    assert MODEL(_call(out=_tensor(huge)), "ascend310p") == Phase1(UNDEFINED, "B3")
    big = (1 << 21, 1 << 21, 1 << 21)
    assert MODEL(_call(size=big), "ascend910_93") == Phase1(UNDEFINED, "B20")
    assert MODEL(_call(size=(1 << 20, 1 << 21, 1 << 21)), "ascend910_93") == Phase1(INVALID, "B22")


EXAMPLES = (out_contiguity_is_opbase_is_contiguous, negative_batch_is_undefined, int64_overflow_is_undefined)
