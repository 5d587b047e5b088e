"""aclnnMaxPool3dWithArgmaxBackward (spec ops/max_pool3d_with_argmax_backward.md).

gradInput[n,c,d,h,w] = sum of gradOutput[n,c,o] over the outputs whose index
equals d*H*W + h*W + w (flat index into the un-padded D x H x W volume of the
same (n,c)). self is (C,D,H,W) or (N,C,D,H,W). The API itself does not check
gradOutput's spatial size; the golden does (anything else is undefined)."""
import torch
import torch.nn.functional as F

from . import _common, _opinfo, _reference
from ._models.max_pool3d_with_argmax_backward import EXAMPLES, MODEL

OUTPUT = "gradInput"


def prepare(draw, p):
    return _common.maxpool_prepare(draw, p, 3, F.max_pool3d)


def golden(inputs, attrs):
    return {OUTPUT: _common.maxpool_golden(inputs, attrs, 3)}


def _supported_layout(t):
    # the CPU kernel accepts only contiguous or channels_last_3d strides
    ok = t.is_contiguous() or (t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d))
    return t if ok else t.contiguous()


def torch_op(inputs, attrs):
    k, s, p, d, ceil = _common.pool_attrs(attrs, 3)
    go, x, idx = (_supported_layout(inputs[n]) for n in ("gradOutput", "self", "indices"))
    r = torch.ops.aten.max_pool3d_with_indices_backward(
        go, x, list(k), list(s), list(p), list(d), ceil, idx.long())
    return {OUTPUT: r}


# ------------------------------------------------------------ for the harness's own tests

def _reference_loop(inputs, attrs):
    return _reference.max_pool(inputs, attrs, 3)


def _doc_example():
    # spec section C example: one 2x2x2 window; the maximum 1.7510 sits at flat index 6
    x = torch.tensor([0.0850, -0.5147, -0.0212, -0.5654, -0.3222, 0.5847, 1.7510, 0.9954]).reshape(1, 1, 2, 2, 2)
    attrs = {"kernelSize": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0], "dilation": [1, 1, 1],
             "ceilMode": False}
    inputs = prepare(lambda name, shape, dt: x if name == "self" else torch.full(shape, 0.4757),
                     _opinfo.params((1, 1, 2, 2, 2), torch.float32, attrs))
    assert inputs["indices"].dtype == torch.int32 and inputs["indices"].reshape(-1).tolist() == [6]
    got = golden(inputs, attrs)["gradInput"].reshape(-1)
    assert got[6] == float(torch.tensor(0.4757)) and torch.count_nonzero(got) == 1


INFO = _opinfo.max_pool_info(
    3, golden, _reference_loop, {"rank4", "rank5"}, (_doc_example,) + EXAMPLES,     # EXAMPLES: the phase-1 model
    deviations=(
        _opinfo.ImplDeviation(
            "dilation_accepted_without_kernel", "G.5", _opinfo.A2A3 + ("ascend950",),
            "the API accepts any dilation > 0, but no kernel supports dilation != 1",
            no_case="undefined behaviour (policy 2): dilation != 1 is neither a valid case nor a status"),
        _opinfo.empty_grad_unwritten("C (Empty tensors), G.8", "PyTorch's forward rejects such a configuration"),
    ),
    model=MODEL)
