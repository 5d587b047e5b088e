"""aclnnAdaptiveMaxPool2dBackward (spec ops/adaptive_max_pool2d_backward.md).

Same scatter as the max-pool backward: gradInput[n,c,p] = sum of
gradOutput[n,c,i,j] with indices[n,c,i,j] == p (p = h*W + w). The output size
(Ho, Wo) is gradOutput's last two dims; attrs["outputSize"] is only used by
prepare() to run the forward. self is (C,H,W) or (N,C,H,W)."""
import torch
import torch.nn.functional as F

from . import _common

OUTPUT = "gradInput"


def prepare(draw, p):
    out_size = _common.expand(p.attrs.get("outputSize"), 2, "outputSize")
    x = draw("self", tuple(p.shape), p.dtype)
    y, idx = F.adaptive_max_pool2d(x.double(), out_size, return_indices=True)
    go = draw("gradOutput", tuple(y.shape), p.dtype)
    return {"gradOutput": go.contiguous(), "self": x.contiguous(),
            "indices": idx.to(p.index_dtype or torch.int64).contiguous()}


def golden(inputs, attrs):
    go, x, idx = inputs["gradOutput"], inputs["self"], inputs["indices"]
    lead, _ = _common.split_batch(x.shape, 2)
    glead, out = _common.split_batch(go.shape, 2, "gradOutput")
    # N, C must match self (the per-plane scatter needs it); any Ho, Wo > 0 is valid
    if glead != lead or min(out) <= 0:
        raise ValueError(f"gradOutput shape {tuple(go.shape)} does not fit self {tuple(x.shape)}")
    _common.check_shape(idx, go.shape, "indices")
    return {OUTPUT: _common.scatter_backward(go, idx, tuple(x.shape), 2)}


def torch_op(inputs, attrs):
    r = torch.ops.aten.adaptive_max_pool2d_backward(
        inputs["gradOutput"], inputs["self"], inputs["indices"].long())
    return {OUTPUT: r}
