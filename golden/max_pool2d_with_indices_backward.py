"""aclnnMaxPool2dWithIndicesBackward (spec ops/max_pool2d_with_indices_backward.md).

gradInput[n,c,h,w] = sum of gradOutput[n,c,ho,wo] over the outputs whose index
equals h*W + w (flat index into the un-padded H x W plane of the same (n,c)).
self is (C,H,W) or (N,C,H,W)."""
import torch
import torch.nn.functional as F

from . import _common

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
