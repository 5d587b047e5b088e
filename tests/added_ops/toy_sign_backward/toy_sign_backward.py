"""aclnnToySignBackward, a toy operator: gradInput = gradOutput * sign(self).

It lives in tests/toy_op/ and is copied into golden/ of a temporary repository by
tests/test_toy_operator.py, which shows that an operator is three files."""
import numpy as np
import torch

from . import _opinfo

OUTPUT = "gradInput"


def prepare(draw, p):
    shape = tuple(p.shape)
    return {"gradOutput": draw("gradOutput", shape, p.dtype).contiguous(),
            "self": draw("self", shape, p.dtype).contiguous()}


def _sign(x):
    """sign with NaN kept as NaN (torch.sign maps NaN to 0)."""
    return torch.where(torch.isnan(x), x, torch.sign(x))


def golden(inputs, attrs):
    go, x = inputs["gradOutput"], inputs["self"]
    if go.shape != x.shape:
        raise ValueError(f"gradOutput {tuple(go.shape)} and self {tuple(x.shape)} differ")
    return {OUTPUT: go.detach().cpu().double() * _sign(x.detach().cpu().double())}


def torch_op(inputs, attrs):
    return {OUTPUT: inputs["gradOutput"] * _sign(inputs["self"]).to(inputs["gradOutput"].dtype)}


def _gen_config(rng):
    shape = tuple(rng.randint(1, 4) for _ in range(rng.choice([2, 4])))
    return _opinfo.params(shape, rng.choice(_opinfo.FLOATS), {}), {f"rank{len(shape)}"}


def _reference_loop(inputs, attrs):
    go, x = np.asarray(inputs["gradOutput"], dtype=np.float64), np.asarray(inputs["self"], dtype=np.float64)
    out = np.zeros(go.shape)
    for i in np.ndindex(go.shape):
        out[i] = go[i] * (1.0 if x[i] > 0 else -1.0 if x[i] < 0 else 0.0 if x[i] == 0 else np.nan)
    return out


def _sign_dropped(patch):
    return lambda inputs, attrs: {OUTPUT: inputs["gradOutput"].double()}


INFO = _opinfo.OpInfo(gen_config=_gen_config, required_tags=frozenset({"rank2", "rank4"}),
                      reference=_reference_loop, mutants={"sign dropped": _sign_dropped})
