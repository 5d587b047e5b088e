"""The deterministic `draw` of input values from a case's distribution.

Every tensor of a case is drawn from its own generator seeded by
sha256(case id, tensor name): a single case reruns identically on its own, in
any order, on any worker, and adding a tensor to an op shifts no other values.
"""
from __future__ import annotations

import hashlib
import math

import torch

from ..model.distributions import Distribution


def seed_for(case_id: str, tensor: str) -> int:
    digest = hashlib.sha256(f"{case_id}\0{tensor}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def _special_value(name: str, dtype: torch.dtype, gen: torch.Generator) -> float:
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        table = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0,
                 "max": info.max, "min": info.min, "tiny": info.tiny,
                 # a random multiple of the smallest subnormal, still subnormal
                 "subnormal": info.smallest_normal * float(torch.rand((), generator=gen)) * 0.5}
        return table[name]
    info = torch.iinfo(dtype)
    # Integer tensors cannot hold nan/inf: map the specials onto the integer extremes.
    return {"max": info.max, "inf": info.max, "min": info.min, "-inf": info.min}.get(name, 0)


def _base(dist: Distribution, shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    p = dist.params
    if dist.kind == "constant":
        return torch.full(shape, p["value"], dtype=torch.float64)
    if dist.kind == "small_int":
        return torch.randint(int(p["low"]), int(p["high"]) + 1, shape, generator=gen).double()
    if dist.kind == "normal":
        return torch.randn(shape, generator=gen, dtype=torch.float64) * p["std"] + p["mean"]
    lo, hi = float(p["low"]), float(p["high"])
    if not dtype.is_floating_point:
        return torch.randint(math.ceil(lo), math.floor(hi) + 1, shape, generator=gen).double()
    return torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo


def draw_tensor(dist: Distribution, case_id: str, tensor: str, shape, dtype: torch.dtype) -> torch.Tensor:
    """Deterministic values for one input tensor, in `dtype`, CPU, contiguous."""
    dist = dist.for_tensor(tensor)
    gen = torch.Generator().manual_seed(seed_for(case_id, tensor))
    shape = tuple(int(s) for s in shape)
    values = _base(dist, shape, dtype, gen)
    if not dtype.is_floating_point and dtype != torch.bool:
        info = torch.iinfo(dtype)
        values = values.round().clamp(info.min, info.max)
    out = values.to(dtype)
    if dist.special_fraction and dist.special_values and out.numel():
        mask = torch.rand(shape, generator=gen) < dist.special_fraction
        picks = torch.randint(len(dist.special_values), shape, generator=gen)
        flat_out, flat_mask, flat_picks = out.view(-1), mask.view(-1), picks.view(-1)
        for i in torch.nonzero(flat_mask).view(-1).tolist():
            flat_out[i] = _special_value(dist.special_values[flat_picks[i]], dtype, gen)
    return out


def make_draw(dist: Distribution, case_id: str):
    """The `draw(name, shape, dtype)` callable handed to golden `prepare` functions."""
    def draw(name, shape, dtype):
        return draw_tensor(dist, case_id, name, shape, dtype)
    return draw
