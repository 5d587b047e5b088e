"""aclnnMaxPool2dWithIndicesBackward (spec ops/max_pool2d_with_indices_backward.md).

gradInput[n,c,h,w] = sum of gradOutput[n,c,ho,wo] over the outputs whose index
equals h*W + w (flat index into the un-padded H x W plane of the same (n,c)).
self is (C,H,W) or (N,C,H,W)."""
import torch
import torch.nn.functional as F

from . import _common, _opinfo, _reference
from ._models.max_pool2d_with_indices_backward import EXAMPLES, MODEL

OUTPUT = "gradInput"


def prepare(draw, p):
    return _common.maxpool_prepare(draw, p, 2, F.max_pool2d)


def golden(inputs, attrs):
    return {OUTPUT: _common.maxpool_golden(inputs, attrs, 2)}


def torch_op(inputs, attrs):
    k, s, p, d, ceil = _common.pool_attrs(attrs, 2)
    r = torch.ops.aten.max_pool2d_with_indices_backward(
        inputs["gradOutput"], inputs["self"], list(k), list(s), list(p), list(d), ceil,
        inputs["indices"].long())
    return {OUTPUT: r}


# ------------------------------------------------------------ for the harness's own tests

def _reference_loop(inputs, attrs):
    return _reference.max_pool(inputs, attrs, 2)


def _doc_example():
    # spec section C example: 4x3 plane, k=s=2 -> indices 0 and 6 receive the two gradients
    inputs = {"gradOutput": torch.tensor([0.4757, 0.1726]).reshape(1, 1, 2, 1),
              "self": torch.zeros(1, 1, 4, 3), "indices": torch.tensor([0, 6], dtype=torch.int32).reshape(1, 1, 2, 1)}
    attrs = {"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}
    want = torch.zeros(12, dtype=torch.float64)
    want[0], want[6] = float(torch.tensor(0.4757)), float(torch.tensor(0.1726))
    assert torch.equal(golden(inputs, attrs)["gradInput"].reshape(-1), want)
    assert torch.equal(torch_op(inputs, attrs)["gradInput"].reshape(-1), want.float())


def _window_entirely_in_padding_is_rejected():
    # dilation 3, kernel 2, pad 1 on H=2: the only window's taps are rows -1 and 2, both
    # outside the input; torch's forward returns -inf and index 12 == H*W (outside the
    # plane), so neither prepare nor golden may use it
    import pytest
    attrs = {"kernelSize": [2, 1], "stride": [2, 3], "padding": [1, 0], "dilation": [3, 2], "ceilMode": True}
    p = _opinfo.params((1, 1, 2, 6), torch.float32, attrs)
    y, idx = F.max_pool2d(torch.randn(p.shape, dtype=torch.float64), (2, 1), (2, 3), (1, 0), (3, 2), True,
                          return_indices=True)
    assert int(idx.max()) >= 12 and torch.isneginf(y).all()
    with pytest.raises(ValueError, match="entirely in the padding"):
        prepare(lambda name, shape, dt: torch.randn(shape, dtype=torch.float64).to(dt), p)
    inputs = {"gradOutput": torch.ones(1, 1, 1, 2), "self": torch.zeros(p.shape), "indices": idx}
    with pytest.raises(ValueError, match="entirely in the padding"):
        golden(inputs, attrs)


INFO = _opinfo.max_pool_info(
    2, golden, _reference_loop, {"rank3", "rank4"},
    (_doc_example, _window_entirely_in_padding_is_rejected) + EXAMPLES,     # EXAMPLES: the phase-1 model
    deviations=(_opinfo.ImplDeviation(
        "nhwc_read_as_nchw_a2a3", "G.4", _opinfo.A2A3,
        "NHWC passes the A2/A3 API checks, but the A2/A3 kernel reads the memory as NCHW",
        no_case="the spec calls the result undefined (policy 2); NHWC cases run on 950 only"),),
    model=MODEL,
    doc_deviations=(_opinfo.DocDeviation(
        "nchw_nhwc_3d_refused", "ND, NCHW and NHWC at ranks 3-4 (aclnnMaxPool2dWithIndicesBackward.md:107,117,127,187; "
        "950: :215)", "a 3-D NCHW or NHWC gradInput is refused when the result is relabelled: 561103 (L0.R1) on "
        "910B, 910_93 and 950; 3-D ND and NCL pass (l0_format_rules.md 2.2, measured)",
        _opinfo.A2A3 + ("ascend950",), ("l0_labels[L0.R1-3d-NCHW]", "l0_labels[L0.R1-3d-NHWC]")),))
