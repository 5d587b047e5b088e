"""aclnnAdaptiveAvgPool2dBackward (CANN's public aclnn API; PyTorch's
aten._adaptive_avg_pool2d_backward(grad, self)).

self is (C,H,W) or (N,C,H,W); gradOutput has the same leading dims and the
output size (Ho, Wo) as its last two dims (the API has no outputSize
parameter). Output cell (i, j) averages rows [floor(i*H/Ho), ceil((i+1)*H/Ho))
and columns [floor(j*W/Wo), ceil((j+1)*W/Wo)); the backward adds
gradOutput[i, j] / (window height * window width) to every input element of
that window, so elements of overlapping windows (H % Ho or W % Wo != 0) sum
several gradients. attrs["outputSize"] is only used by prepare() to make
gradOutput's shape."""
import numpy as np
import torch
import torch.nn.functional as F

from . import _common, _opinfo
from ._models._checks import (invalid_if, is_regbase, not_null, out_pointers_written, rank_in, same_dims,
                              same_dtype, success_if_empty, tensor, dtype_in)
from ._phase1 import Phase1Model

OUTPUT = "out"


def prepare(draw, p):
    out_size = _common.expand(p.attrs.get("outputSize"), 2, "outputSize")
    x = draw("self", tuple(p.shape), p.dtype)
    lead, _ = _common.split_batch(x.shape, 2)
    go = draw("gradOutput", tuple(lead) + tuple(out_size), p.dtype)
    return {"gradOutput": go.contiguous(), "self": x.contiguous()}


def _window(i, n_in, n_out):
    """[start, end) of adaptive window i along an axis of n_in elements pooled to n_out."""
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def golden(inputs, attrs):
    go, x = inputs["gradOutput"], inputs["self"]
    lead, (H, W) = _common.split_batch(x.shape, 2)
    glead, (Ho, Wo) = _common.split_batch(go.shape, 2, "gradOutput")
    if len(glead) != len(lead) or glead != lead:
        raise ValueError(f"gradOutput shape {tuple(go.shape)} does not fit self {tuple(x.shape)}")
    if min(H, W, Ho, Wo) <= 0:
        raise ValueError(f"self {tuple(x.shape)} and gradOutput {tuple(go.shape)} need H, W, Ho, Wo > 0")
    g = go.detach().cpu().to(torch.float64)
    out = torch.zeros(tuple(x.shape), dtype=torch.float64)
    for i in range(Ho):
        h0, h1 = _window(i, H, Ho)
        for j in range(Wo):
            w0, w1 = _window(j, W, Wo)
            out[..., h0:h1, w0:w1] += (g[..., i, j] / ((h1 - h0) * (w1 - w0)))[..., None, None]
    return {OUTPUT: out}


def torch_op(inputs, attrs):
    go, x = inputs["gradOutput"], inputs["self"]
    if go.dtype in (torch.float16, torch.bfloat16):
        # fp16/bf16 accumulate in fp32 (as torch's CUDA kernel and the aclnn op do); torch's CPU
        # kernel would add overlapping windows' gradients in the tensor dtype
        r = torch.ops.aten._adaptive_avg_pool2d_backward(go.float(), x.float())
        return {OUTPUT: r.to(go.dtype)}
    return {OUTPUT: torch.ops.aten._adaptive_avg_pool2d_backward(go, x)}


# ------------------------------------------------------------ for the harness's own tests

def _gen_config(rng):
    hw = [rng.randint(1, 8) for _ in range(2)]
    out = []
    for n in hw:
        kind = rng.choice(["divides", "any", "larger"])
        if kind == "divides":
            out.append(rng.choice([q for q in range(1, n + 1) if n % q == 0]))
        elif kind == "any":
            out.append(rng.randint(1, n))
        else:
            out.append(rng.randint(n + 1, n + 3))
    batched = rng.random() < 0.5
    shape = _opinfo.lead_dims(rng, batched) + tuple(hw)
    tags = {f"rank{len(shape)}"}
    tags.add("divisible" if all(a % b == 0 for a, b in zip(hw, out)) else "overlap")
    if any(b > a for a, b in zip(hw, out)):
        tags.add("output>input")
    if out == [1, 1]:
        tags.add("global")
    return _opinfo.params(shape, rng.choice(_opinfo.FLOATS), {"outputSize": out}), tags


def _reference_loop(inputs, attrs):
    """Element by element: each input element (h, w) sums the gradients of every output cell whose
    window contains it (numpy loops, nothing shared with the golden)."""
    go = np.asarray(inputs["gradOutput"], dtype=np.float64)
    shape = inputs["self"].shape
    H, W = shape[-2:]
    Ho, Wo = go.shape[-2:]
    planes = int(np.prod(shape[:-2]))
    go = go.reshape(planes, Ho, Wo)
    gi = np.zeros((planes, H, W), dtype=np.float64)
    for b in range(planes):
        for h in range(H):
            for w in range(W):
                total = 0.0
                for i in range(Ho):
                    start_h, end_h = int(np.floor(i * H / Ho)), int(np.ceil((i + 1) * H / Ho))
                    if not start_h <= h < end_h:
                        continue
                    for j in range(Wo):
                        start_w, end_w = int(np.floor(j * W / Wo)), int(np.ceil((j + 1) * W / Wo))
                        if start_w <= w < end_w:
                            total += go[b, i, j] / ((end_h - start_h) * (end_w - start_w))
                gi[b, h, w] = total
    return gi.reshape(shape)


def _autograd(inputs, attrs):
    x = inputs["self"].double().requires_grad_(True)
    go = inputs["gradOutput"].double()
    F.adaptive_avg_pool2d(x, tuple(go.shape[-2:])).backward(go)
    return x.grad


def _forward(p, draw, inputs):
    y = F.adaptive_avg_pool2d(inputs["self"].double(), p.attrs["outputSize"])
    return _opinfo.Forward(tuple(y.shape))


def _end_floored(patch):
    """Windows end at floor((i+1)*H/Ho): overlapping windows lose their shared element."""
    import sys
    patch(sys.modules[__name__], "_window", lambda i, n_in, n_out: ((i * n_in) // n_out, ((i + 1) * n_in) // n_out))
    return golden


def _mean_divisor(patch):
    """Every window divided by the mean window size (H/Ho)*(W/Wo), not its own size."""
    def broken(inputs, attrs):
        go, x = inputs["gradOutput"], inputs["self"]
        H, W = x.shape[-2:]
        Ho, Wo = go.shape[-2:]
        return {OUTPUT: _const_divisor(go.double(), tuple(x.shape), H * W / (Ho * Wo))}
    return broken


def _const_divisor(g, shape, divisor):
    H, W = shape[-2:]
    Ho, Wo = g.shape[-2:]
    out = torch.zeros(shape, dtype=torch.float64)
    for i in range(Ho):
        h0, h1 = _window(i, H, Ho)
        for j in range(Wo):
            w0, w1 = _window(j, W, Wo)
            out[..., h0:h1, w0:w1] += (g[..., i, j] / divisor)[..., None, None]
    return out


def _example():
    """H = 3 pooled to Ho = 2: windows [0, 2) and [1, 3) share row 1, which sums both halves."""
    inputs = {"gradOutput": torch.tensor([4.0, -2.0]).reshape(1, 1, 2, 1), "self": torch.zeros(1, 1, 3, 1)}
    assert golden(inputs, {})[OUTPUT].reshape(-1).tolist() == [2.0, 1.0, -1.0]
    ref = _reference_loop({k: v.double().numpy() for k, v in inputs.items()}, {})
    assert ref.reshape(-1).tolist() == [2.0, 1.0, -1.0]


# ------------------------------------------------------------ phase 1 (the case file's checks)
# In the golden module rather than golden/_models/ so that the operator stays three files.

def _grad_dtypes(family):
    """B2: 910B, 910_93 and 950 take fp32, fp16 and bf16; no other family has the op."""
    if is_regbase(family) or family in ("ascend910b", "ascend910_93"):
        return frozenset({"float32", "float16", "bfloat16"})
    return frozenset()


def _ranks_differ(call, family):
    return tensor(call, "gradOutput").rank != tensor(call, "self").rank


def _lead_dims_differ(call, family):
    grad, x = tensor(call, "gradOutput"), tensor(call, "self")
    return grad.dims[:-2] != x.dims[:-2]


def _spatial_not_positive(call, family):
    grad, x = tensor(call, "gradOutput"), tensor(call, "self")
    return any(len(t.dims) >= 2 and min(t.dims[-2:]) <= 0 for t in (grad, x))


MODEL = Phase1Model((
    not_null("B1", "gradOutput", "self", "out"),
    dtype_in("B2", "gradOutput", _grad_dtypes),
    same_dtype("B3", "gradOutput", "self", "out"),
    rank_in("B4", frozenset({3, 4}), "self"),
    invalid_if("B5", _ranks_differ),
    invalid_if("B6", _lead_dims_differ),
    same_dims("B7", "self", "out"),
    invalid_if("B8", _spatial_not_positive),
    success_if_empty("B9", "self"),
    out_pointers_written("out-pointers"),
))


INFO = _opinfo.OpInfo(
    gen_config=_gen_config, reference=_reference_loop, autograd=_autograd, forward=_forward,
    required_tags=frozenset({"rank3", "rank4", "divisible", "overlap", "output>input", "global"}),
    mutants={"window end floored": _end_floored, "constant divisor": _mean_divisor},
    examples=(_example,), grad_shape_free=True, model=MODEL)
