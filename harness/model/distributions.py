"""Value distributions as case files describe them (presets, named, per tensor).

Drawing values from them is the inputs layer's job (harness/inputs/values.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

KINDS = ("uniform", "normal", "small_int", "constant")
SPECIALS = ("nan", "inf", "-inf", "-0.0", "subnormal", "max", "min", "tiny")
EXTREMES = frozenset({"max", "min"})     # the dtype's largest finite values, +-FLT_MAX for fp32

# Presets usable by name in any case file; files may add their own under `distributions:`.
PRESETS = {
    "uniform": {"kind": "uniform", "low": -5.0, "high": 5.0},      # ATK's range for these ops
    "normal": {"kind": "normal", "mean": 0.0, "std": 1.0},
    "small_int": {"kind": "small_int", "low": -3, "high": 3},       # many ties in max windows
    "constant": {"kind": "constant", "value": 1.0},                 # every window is one big tie
    "specials": {"kind": "uniform", "low": -5.0, "high": 5.0,
                 "special": {"fraction": 0.05, "values": list(SPECIALS)}},
    # value classes every op is run with (issue 10)
    "zeros": {"kind": "constant", "value": 0.0},                    # all-zero gradients (and inputs)
    "neg_zero": {"kind": "constant", "value": -0.0},
    "subnormal": {"kind": "uniform", "low": -1.0, "high": 1.0, "special": {"fraction": 1.0, "values": ["subnormal"]}},
    # near fp16's largest finite value, one sign: mixed signs would make sums cancel catastrophically,
    # an error of the float32 arithmetic itself that no threshold could tell from a bug
    "large": {"kind": "uniform", "low": 30000.0, "high": 60000.0},
    # one class in one tensor only: gradOutput (g_) or self (x_), the others uniform
    "g_zeros": {"kind": "uniform", "low": -5.0, "high": 5.0, "tensors": {"gradOutput": "zeros"}},
    "g_specials": {"kind": "uniform", "low": -5.0, "high": 5.0, "tensors": {"gradOutput": "specials"}},
    # gradOutput specials whose sums do not depend on the order of the adds, for windows that
    # overlap: with +-FLT_MAX among the gradients, three of them summed into one element give inf in
    # one order and a finite value in another, or lose a small term between two that cancel, and
    # spec C leaves the order free (A2/A3 add atomically, in an order that varies from run to run):
    # no result is right, so no case may assert one (harness/audit/order_free.py finds such cases)
    "specials_sum_safe": {"kind": "uniform", "low": -5.0, "high": 5.0,
                          "special": {"fraction": 0.05, "values": [v for v in SPECIALS if v not in EXTREMES]}},
    "g_specials_sum_safe": {"kind": "uniform", "low": -5.0, "high": 5.0, "tensors": {"gradOutput": "specials_sum_safe"}},
    "x_specials": {"kind": "uniform", "low": -5.0, "high": 5.0, "tensors": {"self": "specials"}},
    "g_subnormal": {"kind": "uniform", "low": -5.0, "high": 5.0, "tensors": {"gradOutput": "subnormal"}},
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


def _finite_number(v) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) < 1e308 if isinstance(v, int) else math.isfinite(v)   # a huge int overflows float()


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
    for key, v in params.items():
        if key not in required:
            raise ValueError(f"{kind} takes {', '.join(required)}, not {key!r}")
        if not _finite_number(v):
            raise ValueError(f"{key} must be a finite number, got {v!r}")
        if kind == "small_int" and not (isinstance(v, int) and abs(v) < 1 << 62):
            raise ValueError(f"small_int {key} must be an integer below 2^62 in size, got {v!r}")
    if kind in ("uniform", "small_int") and not params["low"] <= params["high"]:
        raise ValueError(f"low {params['low']} > high {params['high']}")
    if kind == "normal" and params["std"] < 0:
        raise ValueError(f"std {params['std']} < 0")
    special = spec.get("special") or {}
    fraction = special.get("fraction", 0.0)
    if not _finite_number(fraction) or not 0.0 <= fraction <= 1.0:
        raise ValueError(f"special.fraction {fraction} not in [0, 1]")
    values = tuple(str(v) for v in special.get("values", SPECIALS if fraction else ()))
    for v in values:
        if v not in SPECIALS:
            raise ValueError(f"special value {v!r} not one of {', '.join(SPECIALS)}")
    per_tensor = {}
    for tensor, ref in (spec.get("tensors") or {}).items():
        per_tensor[tensor] = resolve(ref, named)
    return Distribution(name, kind, params, float(fraction), values, per_tensor)


def resolve(ref: str, named: dict[str, Distribution]) -> Distribution:
    if ref in named:
        return named[ref]
    if ref in PRESETS:
        return parse(ref, PRESETS[ref], named)
    raise ValueError(f"unknown distribution {ref!r} (presets: {', '.join(PRESETS)}; file: {', '.join(named) or 'none'})")
