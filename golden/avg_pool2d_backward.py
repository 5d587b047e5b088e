"""aclnnAvgPool2dBackward (spec ops/avg_pool2d_backward.md, section C.2).

For each output (i, j): window rows [i*sH - pH, min(i*sH - pH + kH, H + pH)),
likewise columns; poolSize = its area BEFORE clipping to the input (so in ceil
mode a window hanging past the right/bottom padding has a smaller poolSize);
divisor = divisorOverride if != 0 (negative allowed), else poolSize if
countIncludePad, else the clipped area. Every input element of the clipped
window receives gradOutput[i, j] / divisor. self is (C,H,W) or (N,C,H,W); only
its shape is used. cubeMathType has no numerical meaning for the golden."""
import functools

import numpy as np
import torch
import torch.nn.functional as F

from . import _common, _opinfo, _reference
from ._models.avg_pool2d_backward import MODEL
from ._models.avg_pool2d_backward_examples import EXAMPLES as MODEL_EXAMPLES

OUTPUT = "gradInput"


def _attrs(attrs):
    k, s, p, _, ceil = _common.pool_attrs(attrs, 2, dilation=False)
    cip = bool(attrs.get("countIncludePad", True))
    div = int(attrs.get("divisorOverride", 0) or 0)
    return k, s, p, ceil, cip, div


def _axis_windows(size, k, s, p, n_out):
    """Per output index along one axis: clipped start, clipped end and the
    pre-clip (padded) window length."""
    start = [i * s - p for i in range(n_out)]
    end = [min(b + k, size + p) for b in start]
    pre = [e - b for b, e in zip(start, end)]
    return [max(b, 0) for b in start], [min(e, size) for e in end], pre


def _divisors(hwin, wwin, cip, div):
    """(Ho, Wo) float64 divisor of every output position."""
    if div != 0:
        return torch.full((len(hwin[0]), len(wwin[0])), float(div), dtype=torch.float64)
    if cip:
        h, w = hwin[2], wwin[2]
    else:
        h = [e - b for b, e in zip(hwin[0], hwin[1])]
        w = [e - b for b, e in zip(wwin[0], wwin[1])]
    return torch.outer(torch.tensor(h, dtype=torch.float64), torch.tensor(w, dtype=torch.float64))


def _offset_slices(size, k, s, p, n_out):
    """For each kernel offset a: (input slice, output slice) of the outputs
    whose window element a lies inside the input (0 <= i*s - p + a < size)."""
    res = []
    for a in range(k):
        i0 = max(0, -((a - p) // s))            # ceil((p - a) / s)
        i1 = min(n_out - 1, (size - 1 + p - a) // s)
        if i0 <= i1:
            h0 = i0 * s - p + a
            res.append((slice(h0, h0 + (i1 - i0) * s + 1, s), slice(i0, i1 + 1)))
    return res


def golden(inputs, attrs):
    go, x = inputs["gradOutput"], inputs["self"]
    (kh, kw), (sh, sw), (ph, pw), ceil, cip, div = _attrs(attrs)
    lead, (h, w) = _common.split_batch(x.shape, 2)
    ho, wo = _common.pool_out_size(h, kh, sh, ph, 1, ceil), _common.pool_out_size(w, kw, sw, pw, 1, ceil)
    if ho <= 0 or wo <= 0:
        raise ValueError(f"pooled size {(ho, wo)} is not positive for input {(h, w)}")
    _common.check_shape(go, lead + (ho, wo), "gradOutput")
    hwin, wwin = _axis_windows(h, kh, sh, ph, ho), _axis_windows(w, kw, sw, pw, wo)
    g = go.detach().cpu().to(torch.float64) / _divisors(hwin, wwin, cip, div)
    gi = torch.zeros(lead + (h, w), dtype=torch.float64)
    # Only additions of g values: no 0*inf products, so Inf/NaN stay local.
    if ho * wo <= kh * kw:      # few windows: add each window's value to its block
        for i in range(ho):
            for j in range(wo):
                gi[..., hwin[0][i]:hwin[1][i], wwin[0][j]:wwin[1][j]] += g[..., i:i + 1, j:j + 1]
    else:                       # few kernel offsets: one strided add per offset
        for hin, hout in _offset_slices(h, kh, sh, ph, ho):
            for win, wout in _offset_slices(w, kw, sw, pw, wo):
                gi[..., hin, win] += g[..., hout, wout]
    return {OUTPUT: gi}


def prepare(draw, p):
    (kh, kw), (sh, sw), (ph, pw), ceil, _, _ = _attrs(p.attrs)
    shape = tuple(p.shape)
    lead, (h, w) = _common.split_batch(shape, 2)
    x = draw("self", shape, p.dtype)
    # gradOutput has the forward output's shape (the same formula torch uses)
    out = (_common.pool_out_size(h, kh, sh, ph, 1, ceil), _common.pool_out_size(w, kw, sw, pw, 1, ceil))
    go = draw("gradOutput", lead + out, p.dtype)
    return {"gradOutput": go.contiguous(), "self": x.contiguous()}


def torch_op(inputs, attrs):
    k, s, p, ceil, cip, div = _attrs(attrs)
    go, x = inputs["gradOutput"], inputs["self"]
    # the API does not tie self's dtype to gradOutput's; only self's shape matters
    x = x.to(go.dtype)
    r = torch.ops.aten.avg_pool2d_backward(go, x, list(k), list(s), list(p), ceil, cip,
                                           div if div != 0 else None)
    return {OUTPUT: r}


# ------------------------------------------------------------ for the harness's own tests

def _gen_config(rng):
    k = [rng.randint(1, 4) for _ in range(2)]
    s = [rng.randint(1, 4) for _ in range(2)]
    p = [rng.randint(0, kk // 2) for kk in k]
    ceil, cip = rng.random() < 0.5, rng.random() < 0.5
    div = rng.choice([0, 0, 0, rng.randint(1, 6), -rng.randint(1, 6)])
    hw = []
    for a in range(2):
        lo = max(1, k[a] - 2 * p[a])
        hw.append(rng.randint(lo, lo + 6))
    batched = rng.random() < 0.5
    shape = _opinfo.lead_dims(rng, batched) + tuple(hw)
    stride = rng.choice([None, _opinfo.list_form(rng, s, k)])      # None / [] both mean "= kernel"
    attrs = {"kernelSize": _opinfo.list_form(rng, k), "stride": stride,
             "padding": _opinfo.list_form(rng, p), "ceilMode": ceil, "countIncludePad": cip,
             "divisorOverride": div, "cubeMathType": rng.randint(0, 3)}
    if stride is None:
        s = k
    tags = {f"rank{len(shape)}", f"ceil={ceil}", f"cip={cip}",
            "div=0" if div == 0 else ("div>0" if div > 0 else "div<0")}
    tags |= {"overlap"} if any(kk > ss for kk, ss in zip(k, s)) else set()
    tags |= {"gaps"} if any(ss > kk for kk, ss in zip(k, s)) else set()
    tags |= {"padding"} if any(p) else set()
    for a in range(2):
        if ceil and _common.pool_out_size(hw[a], k[a], s[a], p[a], 1, True) != \
                _common.pool_out_size(hw[a], k[a], s[a], p[a], 1, False):
            tags.add("ceil changes shape")
    return _opinfo.params(shape, rng.choice(_opinfo.FLOATS), attrs), tags


def _reference_loop(inputs, attrs):
    per_axis, pooled_len = _reference._per_axis, _reference._pooled_len
    go = np.asarray(inputs["gradOutput"], dtype=np.float64)
    shape = inputs["self"].shape
    kh, kw = per_axis(attrs["kernelSize"], 2)
    sh, sw = per_axis(attrs.get("stride"), 2, empty=[kh, kw])
    ph, pw = per_axis(attrs.get("padding", [0]), 2)
    ceil = bool(attrs.get("ceilMode", False))
    cip = bool(attrs.get("countIncludePad", True))
    div = int(attrs.get("divisorOverride", 0) or 0)
    nplanes, (H, W) = _reference._planes(shape, 2)
    Ho, Wo = pooled_len(H, kh, sh, ph, 1, ceil), pooled_len(W, kw, sw, pw, 1, ceil)
    assert go.shape == tuple(shape[:-2]) + (Ho, Wo), f"gradOutput {go.shape} vs pooled {(Ho, Wo)}"
    go = go.reshape(nplanes, Ho, Wo)
    gi = np.zeros((nplanes, H, W), dtype=np.float64)
    for b in range(nplanes):
        for i in range(Ho):
            for j in range(Wo):
                # Count, element by element, the window members inside the padded input
                # (count_include_pad pool size) and inside the real input (the elements
                # that receive gradient).
                padded, real = 0, []
                for a in range(kh):
                    for c in range(kw):
                        h, w = i * sh - ph + a, j * sw - pw + c
                        if -ph <= h < H + ph and -pw <= w < W + pw:
                            padded += 1
                        if 0 <= h < H and 0 <= w < W:
                            real.append((h, w))
                divisor = div if div != 0 else (padded if cip else len(real))
                for h, w in real:
                    gi[b, h, w] += go[b, i, j] / divisor
    return gi.reshape(shape)


def _autograd(inputs, attrs):
    x = inputs["self"].double().requires_grad_(True)
    k, s, p, _, ceil = _common.pool_attrs(attrs, 2, dilation=False)
    y = F.avg_pool2d(x, k, s, p, ceil, bool(attrs["countIncludePad"]), attrs["divisorOverride"] or None)
    y.backward(inputs["gradOutput"].double())
    return x.grad


def _forward(p, draw, inputs):
    assert set(inputs) == {"gradOutput", "self"}, sorted(inputs)
    k, s, pd, _, ceil = _common.pool_attrs(p.attrs, 2, dilation=False)
    y = F.avg_pool2d(inputs["self"].double(), k, s, pd, ceil, p.attrs["countIncludePad"])
    return _opinfo.Forward(tuple(y.shape))


def _patched(name, fn):
    """A mutant that replaces this module's `name` with fn(original)."""
    import sys
    module = sys.modules[__name__]

    def mutant(patch):
        patch(module, name, fn(getattr(module, name)))
        return module.golden
    return mutant


def _uncapped(win):
    def windows(size, k, s, p, n_out):
        # pool size k*k even where a ceil-mode window runs past the padding
        cs, ce, _ = win(size, k, s, p, n_out)
        return cs, ce, [k] * n_out
    return windows


_MUTANTS = {
    "countIncludePad ignored": _patched("_divisors", lambda div: lambda h, w, cip, d: div(h, w, False, d)),
    "divisor off by one": _patched("_divisors", lambda div: lambda h, w, cip, d: div(h, w, cip, d) + 1),
    "divisorOverride ignored": _patched("_divisors", lambda div: lambda h, w, cip, d: div(h, w, cip, 0)),
    "sign of divisorOverride dropped": _patched("_divisors", lambda div: lambda h, w, cip, d: div(h, w, cip, abs(d))),
    "ceil-mode pool size k*k": _patched("_axis_windows", _uncapped),
}


def _run(inputs_shape, go, **attrs):
    a = {"padding": [0], "ceilMode": False, "countIncludePad": True, "divisorOverride": 0, "cubeMathType": 0}
    a.update(attrs)
    inputs = {"gradOutput": go, "self": torch.zeros(inputs_shape)}
    return golden(inputs, a)["gradInput"], torch_op(inputs, a)["gradInput"]


def _negative_divisor_gives_minus_half():
    got, t = _run((1, 1, 2, 2), torch.ones(1, 1, 1, 1), kernelSize=[2], stride=[2], divisorOverride=-2)
    assert torch.equal(got, torch.full((1, 1, 2, 2), -0.5, dtype=torch.float64))
    assert torch.equal(t, got.float())


def _global_pool_with_padding_matches_spec(cip, value):
    # spec C.4: H=W=10, k=s=10, p=2 -> torch has 8 non-zero rows, 0.01 / 0.015625
    got, _ = _run((1, 1, 10, 10), torch.ones(1, 1, 1, 1), kernelSize=[10, 10], stride=[10, 10],
                  padding=[2, 2], countIncludePad=cip)
    assert torch.all(got[0, 0, :8, :8] == value) and torch.count_nonzero(got) == 64, cip


def _ceil_mode_pool_size_matches_spec():
    # spec C.3: H=W=5, k=2, s=2, p=0, ceil, countIncludePad -> last row/col 0.5 (corner 1.0), rest 0.25
    got, t = _run((1, 1, 5, 5), torch.ones(1, 1, 3, 3), kernelSize=[2], stride=[2], ceilMode=True)
    assert got[0, 0, 0, 0] == 0.25 and got[0, 0, 4, 0] == 0.5 and got[0, 0, 0, 4] == 0.5 and got[0, 0, 4, 4] == 1.0
    assert torch.equal(t, got.float())


INFO = _opinfo.OpInfo(
    order_varies=_opinfo.overlap_summed_atomically(
        2, False, "910B/910_93's AvgPool3DGrad adds overlapping windows atomically unless isDetermine, "
                  "spec C Determinism"),
    model=MODEL,
    doc_deviations=(
        _opinfo.DocDeviation(
            "nchw_3d_grad_input_refused", "NCHW or NCL at ranks 3-4, not tied to the rank "
            "(aclnnAvgPool2dBackward.md:105,115,197)",
            "a 3-D gradInput labelled NCHW is refused by the final copy of the NCL-labelled result, with each "
            "path's status: 161002 cube (L0.R2.cube), 561000 on 950's AvgPoolV2Grad (L0.R2.v2), 561103 global "
            "(L0.R2.global); 910B/910_93's AvgPool3DGrad copies an ND result and takes it (l0_format_rules.md 2.4)",
            _opinfo.FAMILIES,
            ("l0_labels[L0.R2.cube-gradInput-NCHW-3d]", "l0_labels[L0.R2.v2-gradInput-NCHW-3d]",
             "l0_labels[L0.R2.global-gradInput-NCHW-3d]", "l0_accepted")),
        _opinfo.DocDeviation(
            "self_format_not_compared", "self and gradInput of different dtype or format -> 161002 "
            "(aclnnAvgPool2dBackward.md:286)",
            "no L2 check compares them: a 3-D self labelled NCHW beside NCL tensors passes everywhere (0); a 4-D "
            "self labelled NCL is refused only by the cube path's TransData, 161002 (L0.R3.cube), and passes "
            "on 950's AvgPoolV2Grad and 910B/910_93's AvgPool3DGrad (l0_format_rules.md 2.4, measured)",
            _opinfo.FAMILIES,
            ("l0_self_nchw_3d", "l0_self_nchw_3d_cube", "l0_self_ncl_4d", "bad_params[L0.R3.cube-self-NCL-4d]",
             "l0_labels[L0.R3.cube-self-NCL-4d-legacy]"))),
    gen_config=_gen_config,
    required_tags=frozenset({"rank3", "rank4", "ceil=True", "ceil=False", "cip=True", "cip=False", "div=0",
                             "div>0", "div<0", "overlap", "gaps", "padding", "ceil changes shape"}),
    reference=_reference_loop,
    exact=False,               # the summation order differs from the loop's
    autograd=_autograd,
    forward=_forward,
    mutants=_MUTANTS,
    examples=(_negative_divisor_gives_minus_half,
              functools.partial(_global_pool_with_padding_matches_spec, True, 0.01),
              functools.partial(_global_pool_with_padding_matches_spec, False, 0.015625),
              _ceil_mode_pool_size_matches_spec) + MODEL_EXAMPLES,
    deviations=(
        _opinfo.ImplDeviation(
            "cube_ceil_divisor", "C.3 deviation 1, G.9", ("ascend910", "ascend310p"),
            "cube path, countIncludePad, no divisor, ceil mode: the divisor is always kH*kW",
            groups=("dev_cube_ceil_divisor", "dev_cube_ceil_divisor_k3", "dev_cube_ceil_divisor_fp32")),
        _opinfo.ImplDeviation(
            "cube_divisor_255_ignored", "C.3 deviation 2, G.9", ("ascend910", "ascend310p"),
            "cube path, divisorOverride +-255 without countIncludePad: the real-element count is used",
            groups=("dev_cube_divisor_255", "dev_cube_divisor_255_fp32")),
        _opinfo.ImplDeviation(
            "cube_fp16_constants", "C.3 (dtype handling), C.7", _opinfo.A2A3 + ("ascend910", "ascend310p"),
            "FP16 input on the cube path runs an Fp162Fp16 conv: the kernel value 1/divisor and the mean "
            "matrix 1/(real elements) are FP16 constants, inexact unless a power of two",
            groups=("dev_cube_fp16_kernel_matrix", "dev_cube_fp16_mean_matrix")),
        # the global path's deviations were written for every family but 310B (documented unsupported,
        # not refused by code: spec "Surprises" 12), and are left so
        _opinfo.ImplDeviation(
            "global_ignores_padding", "C.4, G.8", _opinfo.families_but("ascend310b"),
            "global-average-pool path ignores padding, stride and countIncludePad",
            groups=("dev_global_padding",)),
        _opinfo.ImplDeviation(
            "global_fp16_divisor_overflow", "C.4, G.8", _opinfo.families_but("ascend310b"),
            "FP16 compute on the global path stores H*W as an FP16 constant: +inf at H*W >= 65520",
            groups=("dev_global_fp16_divisor", "dev_global_fp16_divisor_boundary", "dev_global_fp16_divisor_fp32")),
        _opinfo.ImplDeviation(
            "global_fp16_divisor_inexact", "C.4, G.8", _opinfo.families_but("ascend310b"),
            "the FP16 divisor constant H*W is inexact above 2048 (51*51 = 2601 becomes 2600)",
            no_case="rounding H*W to FP16 changes the result by at most half an FP16 ulp (2^-11 relative), "
                    "within every FP16 standard; FP32 input reaches it only through cubeMathType 1/2, "
                    "whose FP16 compute is exposed by dev_global_fp16_divisor_fp32"),
        _opinfo.ImplDeviation(
            "fp32_down_precision_is_fp16", "C.7, G.7", _opinfo.A2A3 + ("ascend950",),
            "cubeMathType 1 (documented HF32 on A2/A3 and the 950 global path) computes in FP16",
            groups=("dev_global_fp32_down_precision",)),
        _opinfo.ImplDeviation(
            "divisor_narrowed_to_int32", "G.6", ("ascend950",),
            "divisorOverride is unchecked on 950 and narrowed to int32",
            groups=("dev_divisor_int32_950",)),
        _opinfo.ImplDeviation(
            "stride_null_dereferenced", "G.2", _opinfo.A2A3 + ("ascend950",),
            "stride = nullptr passes the checks but is dereferenced on the 950 and 910B/93 3-D paths",
            no_case="a crash is undefined behaviour (policy 2): at most a robustness case"),
        _opinfo.ImplDeviation(
            "empty_success_unwritten", "G.5", _opinfo.families_but("ascend310b"),
            "empty tensors succeed with nothing written (DOC: empty tensors unsupported)",
            no_case="no documented result to assert; the status-0 cases check the launch"),
    ),
)
