"""aclnnAdaptiveMaxPool2dBackward (spec ops/adaptive_max_pool2d_backward.md).

Same scatter as the max-pool backward: gradInput[n,c,p] = sum of
gradOutput[n,c,i,j] with indices[n,c,i,j] == p (p = h*W + w). The output size
(Ho, Wo) is gradOutput's last two dims; attrs["outputSize"] is only used by
prepare() to run the forward. self is (C,H,W) or (N,C,H,W)."""
import numpy as np
import torch
import torch.nn.functional as F

from . import _common, _opinfo, _reference
from ._models.adaptive_max_pool2d_backward import EXAMPLES, MODEL

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
    # N, C must match self (the per-plane scatter needs it); any Ho, Wo > 0 is valid. An empty self
    # returns success and has nothing to write (spec B #12), whatever gradOutput's Ho, Wo: torch's
    # forward gives an output size of 0 a (.., 0, 0) gradOutput there. A non-empty self with an empty
    # gradOutput has no documented result (gradInput left unwritten, G.5): still refused
    if glead != lead or (min(out) <= 0 and x.numel()):
        raise ValueError(f"gradOutput shape {tuple(go.shape)} does not fit self {tuple(x.shape)}")
    _common.check_shape(idx, go.shape, "indices")
    return {OUTPUT: _common.scatter_backward(go, idx, tuple(x.shape), 2)}


def torch_op(inputs, attrs):
    r = torch.ops.aten.adaptive_max_pool2d_backward(
        inputs["gradOutput"], inputs["self"], inputs["indices"].long())
    return {OUTPUT: r}


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
    tags.add("divisible" if all(a % b == 0 for a, b in zip(hw, out)) else "non-divisible")
    if any(b > a for a, b in zip(hw, out)):
        tags.add("output>input")
    p = _opinfo.params(shape, rng.choice(_opinfo.FLOATS), {"outputSize": out},
                       rng.choice([None, torch.int32, torch.int64]))
    return p, tags


def _reference_loop(inputs, attrs):
    go = np.asarray(inputs["gradOutput"], dtype=np.float64)
    idx = np.asarray(inputs["indices"]).astype(np.int64)
    shape = inputs["self"].shape
    nplanes, (H, W) = _reference._planes(shape, 2)
    Ho, Wo = go.shape[-2:]
    go = go.reshape(nplanes, Ho, Wo)
    idx = idx.reshape(nplanes, Ho, Wo)
    gi = np.zeros((nplanes, H, W), dtype=np.float64)
    for b in range(nplanes):
        for i in range(Ho):
            h0, h1 = (i * H) // Ho, -((-(i + 1) * H) // Ho)    # floor / ceil
            for j in range(Wo):
                w0, w1 = (j * W) // Wo, -((-(j + 1) * W) // Wo)
                target = int(idx[b, i, j])
                found = None
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        if h * W + w == target:
                            found = (h, w)
                assert found is not None, f"index {target} not in adaptive window ({i},{j})"
                gi[b, found[0], found[1]] += go[b, i, j]
    return gi.reshape(shape)


def _autograd(inputs, attrs):
    x = inputs["self"].double().requires_grad_(True)
    go = inputs["gradOutput"].double()
    y, _ = F.adaptive_max_pool2d(x, tuple(go.shape[-2:]), return_indices=True)
    y.backward(go)
    return x.grad


def _forward(p, draw, inputs):
    y, idx = F.adaptive_max_pool2d(inputs["self"].double(), p.attrs["outputSize"], return_indices=True)
    return _opinfo.Forward(tuple(y.shape), idx, torch.int64)


def _repo_example():
    # spec G.10: self 3x2, gradOut 2x1, indices {1, 4} (the doc's index 6 is out of range)
    inputs = {"gradOutput": torch.tensor([0.25, -1.5]).reshape(1, 1, 2, 1), "self": torch.zeros(1, 1, 3, 2),
              "indices": torch.tensor([1, 4]).reshape(1, 1, 2, 1)}
    got = golden(inputs, {})["gradInput"].reshape(-1).tolist()
    assert got == [0, 0.25, 0, 0, -1.5, 0]
    ref = _reference_loop({k: v.double().numpy() if v.is_floating_point() else v.numpy()
                           for k, v in inputs.items()}, {})
    assert ref.reshape(-1).tolist() == got


def _order_varies(shape, attrs, family, deterministic=True):
    # spec C "Determinism", G.12: the A2/A3 non-divisible tiling never reads the deterministic flag
    # and sums overlapping windows with fp32 atomic adds; the divisible path writes each element once.
    # The 950 SIMT kernel's atomic adds follow GetDeterministic(): their order is free only outside
    # deterministic mode (deterministic=False: a call run without it)
    h, w = shape[-2:]
    oh, ow = attrs.get("outputSize") or (0, 0)
    if oh and ow and h % oh == 0 and w % ow == 0:
        return None
    if family in _opinfo.A2A3:
        return (f"overlapping adaptive windows are summed with atomic adds whose order the {family} tiling "
                f"does not fix, even in deterministic mode (spec C Determinism, G.12)")
    if family == "ascend950" and not deterministic:
        return ("overlapping adaptive windows are summed with atomic adds whose order the 950 SIMT kernel "
                "fixes only in deterministic mode, which this run did not ask for (spec C Determinism)")
    return None


def _empty_self_any_output_size():
    """Spec B #12: an empty self returns success with nothing to write, so its golden is an empty
    gradInput whatever output size prepared gradOutput (found by ./run explore: self (0, 1, 1) with
    outputSize [0] gives a (0, 0, 0) gradOutput, which the golden refused)."""
    draw = lambda name, shape, dtype: torch.zeros(shape, dtype=dtype)      # noqa: E731
    for shape, size in (((0, 1, 1), [0]), ((0, 3, 4, 5), [0, 2]), ((2, 0, 3, 3), [2, 2])):
        p = _opinfo.params(shape, torch.float32, {"outputSize": size}, torch.int32)
        try:
            inputs = prepare(draw, p)
        except RuntimeError:        # torch's forward refuses an empty C: the shapes it would give
            grad = shape[:-2] + _common.expand(size, 2, "outputSize")
            inputs = {"gradOutput": torch.zeros(grad), "self": torch.zeros(shape),
                      "indices": torch.zeros(grad, dtype=torch.int32)}
        assert golden(inputs, p.attrs)[OUTPUT].shape == shape
    # a non-empty self with an empty gradOutput has no documented result (G.5): refused
    inputs = {"gradOutput": torch.zeros(1, 0, 2), "self": torch.zeros(1, 3, 3),
              "indices": torch.zeros(1, 0, 2, dtype=torch.int32)}
    try:
        golden(inputs, {})
    except ValueError:
        return
    raise AssertionError("the golden gave a result for a non-empty self with an empty gradOutput")


INFO = _opinfo.scatter_op_info(
    golden, gen_config=_gen_config, reference=_reference_loop, autograd=_autograd, forward=_forward,
    required_tags=frozenset({"rank3", "rank4", "divisible", "non-divisible", "output>input"}),
    examples=(_repo_example, _empty_self_any_output_size) + EXAMPLES,     # EXAMPLES: the phase-1 model where no case reaches
    doc_deviations=(_opinfo.DocDeviation(
        "nd_3d_refused", "ND is the only format, at ranks 3 and 4 (aclnnAdaptiveMaxPool2dBackward.md:95,105,115,125)",
        "a 3-D ND gradInput is refused by the final copy of the NCL-labelled result: 561103 (L0.R2); 3-D "
        "works only with NCL, the label callers pass (l0_format_rules.md 2.1, measured)",
        _opinfo.A2A3 + ("ascend950",), ("l0_labels[L0.R2-3d-ND]",)),),
    deviations=(
        _opinfo.ImplDeviation(
            "dtype_accumulation_950", "C (Accumulation), F", ("ascend950",),
            "the 950 SIMT kernel adds coinciding fp16/bf16 gradients in the tensor dtype, not in fp32",
            groups=("dev_half_accumulation_950",)),
        _opinfo.ImplDeviation(
            "scatter_last_writer_wins", "G.7 (divisible -> MaxPool3DGradWithArgmax)", _opinfo.A2A3,
            "the divisible path's Scatter template stores each gradient (last writer wins)",
            no_case="divisible adaptive windows do not overlap, so forward-generated indices never coincide"),
        _opinfo.ImplDeviation(
            "beyond_2p24_silently_wrong", "G.7, 'The 2^24 limit'", _opinfo.A2A3,
            "non-divisible planes of more than 2^24 elements: float32 index decomposition, silently wrong",
            no_case="outside the documented input domain (DOC:239-240 limits such planes to 2^24); "
                    "at_2p24_a2 (slow) asserts the documented semantics at the limit"),
        _opinfo.ImplDeviation(
            "no_deterministic_switch_a2a3", "C (Determinism), G.12", _opinfo.A2A3,
            "overlapping windows use fp32 atomic adds with no deterministic mode, despite DOC:237",
            groups=("dev_no_deterministic_switch",)),
        _opinfo.empty_grad_unwritten("C (Empty tensors), G.5", "PyTorch rejects an empty gradOutput plane"),
    ),
    model=MODEL, order_varies=_order_varies)
