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


def _special_values(name: str, dtype: torch.dtype, n: int, gen: torch.Generator) -> torch.Tensor:
    """`n` values of the special `name` in `dtype` (drawn at once: a per-element loop is slow)."""
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        if name == "subnormal":     # random multiples of the smallest subnormals, still subnormal
            return (torch.rand(n, generator=gen, dtype=torch.float64) * 0.5 * info.smallest_normal).to(dtype)
        table = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0,
                 "max": info.max, "min": info.min, "tiny": info.tiny}
        return torch.full((n,), table[name], dtype=dtype)
    if dtype == torch.bool or dtype.is_complex:
        return torch.zeros(n, dtype=dtype)
    info = torch.iinfo(dtype)
    # Integer tensors cannot hold nan/inf: map the specials onto the integer extremes.
    value = {"max": info.max, "inf": info.max, "min": info.min, "-inf": info.min}.get(name, 0)
    return torch.full((n,), value, dtype=dtype)


def _base(dist: Distribution, shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    p = dist.params
    if dist.kind == "constant":
        return torch.full(shape, p["value"], dtype=torch.float64)
    if dist.kind == "small_int":
        return torch.randint(int(p["low"]), int(p["high"]) + 1, shape, generator=gen).double()
    if dist.kind == "normal":
        return torch.randn(shape, generator=gen, dtype=torch.float64) * p["std"] + p["mean"]
    lo, hi = _finite_bounds(float(p["low"]), float(p["high"]), dtype)
    if not dtype.is_floating_point:
        # drawn as int64, never through float64, so that 64-bit bounds stay exact
        return torch.randint(math.ceil(lo), math.floor(hi) + 1, shape, generator=gen)
    return torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo


def _finite_bounds(lo: float, hi: float, dtype: torch.dtype):
    """Infinite uniform bounds (ATK's ["-inf", "inf"]) mean the dtype's whole finite range.
    Integer bounds are returned as ints; int64's top value is left out (randint's high is exclusive
    and must itself fit int64)."""
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        return max(lo, float(info.min)), min(hi, float(info.max))
    if dtype == torch.bool or dtype.is_complex:
        return lo, hi
    info = torch.iinfo(dtype)
    top = info.max - 1 if dtype == torch.int64 else info.max
    # a range beyond the dtype (e.g. "large" for int8) collapses onto the nearest extreme
    lo = info.min if lo == -math.inf else min(max(info.min, math.ceil(lo)), top)
    hi = top if hi == math.inf else max(min(top, math.floor(hi)), lo)
    return lo, hi


def draw_tensor(dist: Distribution, case_id: str, tensor: str, shape, dtype: torch.dtype) -> torch.Tensor:
    """Deterministic values for one input tensor, in `dtype`, CPU, contiguous."""
    dist = dist.for_tensor(tensor)
    gen = torch.Generator().manual_seed(seed_for(case_id, tensor))
    shape = tuple(int(s) for s in shape)
    values = _base(dist, shape, dtype, gen)
    if not dtype.is_floating_point and dtype != torch.bool:
        info = torch.iinfo(dtype)
        if values.is_floating_point():
            values = values.round()
        values = values.clamp(info.min, info.max)
    # torch's CPU kernels for its barebones unsigned dtypes have no index_put: their specials go in
    # through int64, which holds every uint16 and uint32 value (uint64 has no such holder)
    staged = torch.int64 if dtype in (torch.uint16, torch.uint32) else dtype
    out = values.to(staged)
    if dist.special_fraction and dist.special_values and out.numel():
        mask = torch.rand(shape, generator=gen) < dist.special_fraction
        picks = torch.randint(len(dist.special_values), shape, generator=gen)
        flat_out, flat_mask, flat_picks = out.view(-1), mask.view(-1), picks.view(-1)
        for j, name in enumerate(dist.special_values):
            where = flat_mask & (flat_picks == j)
            flat_out[where] = _special_values(name, dtype, int(where.sum()), gen).to(staged)
    return out.to(dtype)


def make_draw(dist: Distribution, case_id: str):
    """The `draw(name, shape, dtype)` callable handed to golden `prepare` functions.
    `draw.explicit(name)`: whether the case gives that tensor a distribution of its own (a golden
    may then take the tensor as drawn instead of deriving it, e.g. indices without a forward)."""
    def draw(name, shape, dtype):
        return draw_tensor(dist, case_id, name, shape, dtype)
    draw.explicit = lambda name: name in dist.per_tensor
    return draw
