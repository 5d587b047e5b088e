"""Value distributions for generated inputs, and the deterministic `draw`.

Every tensor of a case is drawn from its own generator seeded by
sha256(case id, tensor name): a single case reruns identically on its own, in
any order, on any worker, and adding a tensor to an op shifts no other values.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import torch

KINDS = ("uniform", "normal", "small_int", "constant")
SPECIALS = ("nan", "inf", "-inf", "-0.0", "subnormal", "max", "min", "tiny")

# Presets usable by name in any case file; files may add their own under `distributions:`.
PRESETS = {
    "uniform": {"kind": "uniform", "low": -5.0, "high": 5.0},      # ATK's range for these ops
    "normal": {"kind": "normal", "mean": 0.0, "std": 1.0},
    "small_int": {"kind": "small_int", "low": -3, "high": 3},       # many ties in max windows
    "constant": {"kind": "constant", "value": 1.0},                 # every window is one big tie
    "specials": {"kind": "uniform", "low": -5.0, "high": 5.0,
                 "special": {"fraction": 0.05, "values": list(SPECIALS)}},
}


@dataclass(frozen=True)
class Distribution:
    name: str
    kind: str
    params: dict = field(default_factory=dict, hash=False, compare=False)
    special_fraction: float = 0.0
    special_values: tuple = ()
    per_tensor: dict = field(default_factory=dict, hash=False, compare=False)  # tensor -> Distribution

    def for_tensor(self, tensor: str) -> "Distribution":
        return self.per_tensor.get(tensor, self)


def parse(name: str, spec: dict, named: dict[str, "Distribution"] | None = None) -> Distribution:
    """Build a Distribution from a (validated) spec; raises ValueError with the offending key."""
    named = named or {}
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    params = {k: v for k, v in spec.items() if k not in ("kind", "special", "tensors")}
    required = {"uniform": ("low", "high"), "normal": ("mean", "std"),
                "small_int": ("low", "high"), "constant": ("value",)}[kind]
    for key in required:
        if key not in params:
            raise ValueError(f"{kind} needs {key!r}")
    if kind in ("uniform", "small_int") and not params["low"] <= params["high"]:
        raise ValueError(f"low {params['low']} > high {params['high']}")
    special = spec.get("special") or {}
    fraction = float(special.get("fraction", 0.0))
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"special.fraction {fraction} not in [0, 1]")
    values = tuple(str(v) for v in special.get("values", SPECIALS if fraction else ()))
    for v in values:
        if v not in SPECIALS:
            raise ValueError(f"special value {v!r} not one of {', '.join(SPECIALS)}")
    per_tensor = {}
    for tensor, ref in (spec.get("tensors") or {}).items():
        per_tensor[tensor] = resolve(ref, named)
    return Distribution(name, kind, params, fraction, values, per_tensor)


def resolve(ref: str, named: dict[str, Distribution]) -> Distribution:
    if ref in named:
        return named[ref]
    if ref in PRESETS:
        return parse(ref, PRESETS[ref], named)
    raise ValueError(f"unknown distribution {ref!r} (presets: {', '.join(PRESETS)}; file: {', '.join(named) or 'none'})")


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
