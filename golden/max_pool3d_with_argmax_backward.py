"""aclnnMaxPool3dWithArgmaxBackward (spec ops/max_pool3d_with_argmax_backward.md).

gradInput[n,c,d,h,w] = sum of gradOutput[n,c,o] over the outputs whose index
equals d*H*W + h*W + w (flat index into the un-padded D x H x W volume of the
same (n,c)). self is (C,D,H,W) or (N,C,D,H,W). The API itself does not check
gradOutput's spatial size; the golden does (anything else is undefined)."""
import torch
import torch.nn.functional as F

from . import _common

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
