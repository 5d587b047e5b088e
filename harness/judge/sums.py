"""Where a golden is no verdict: elements whose result depends on the order of the additions.

Every backward here is linear in its incoming gradients, and spec C leaves the order in which a
kernel adds an element's terms free (the A2/A3 kernels add them atomically, in an order that varies
from run to run). With ordinary gradients any order lands within the standards. With +-FLT_MAX (a
value class holding the `max`/`min` specials) it does not:

* terms whose magnitudes sum past the dtype's largest value give inf in one order and a finite
  number in another;
* two huge terms that cancel swallow a small term added between them in one order and keep it in
  another (found by exploring: +FLT_MAX/3 - FLT_MAX/3 with 3.59/3 between them gave 0, the golden
  1.198).

No golden can say which is right, so neither a case file nor the explorer may assert such an
element. The golden of the terms' magnitudes bounds each element's terms (term_bounds).
"""
from __future__ import annotations

import torch

from ..model.distributions import EXTREMES, Distribution

# What the kernels add in: fp32 for every data dtype (spec C of each op: fp16/bf16 gradients are
# cast to fp32 before they are accumulated, and cast back once). A sum of fp16 terms past fp16's
# range is inf in every order; only a sum past this type's range depends on the order.
ACCUMULATOR = torch.float32
# An element whose terms' magnitudes exceed this many times (its own magnitude + 1) is a
# cancellation of huge terms; ordinary gradients (|g| <= 5, windows of a few dozen elements) stay
# far below it
CANCEL_LIMIT = 2.0 ** 10


def may_hold_extremes(values: Distribution, standard: str) -> bool:
    """Can these values put +-FLT_MAX into a tensor whose sums the standard judges? (A gather held
    bit-exact sums nothing.)"""
    dists = (values,) + tuple(values.per_tensor.values())
    return standard != "bit_exact" and any(EXTREMES & set(d.special_values) for d in dists)


def term_bounds(module, prepared: dict[str, torch.Tensor], attrs: dict, grads: list[str]) -> dict[str, torch.Tensor]:
    """The golden run on the magnitudes of the incoming gradients (NaN and inf as 0): per output
    element, the sum of its terms' magnitudes."""
    magnitudes = {g: torch.nan_to_num(prepared[g].double().abs(), nan=0.0, posinf=0.0) for g in grads}
    return module.golden({**prepared, **magnitudes}, attrs)


def _unbounded(terms: torch.Tensor, result: torch.Tensor, limit: float, eps: float) -> torch.Tensor:
    """Where a finite element's terms exceed `limit` times its own magnitude (plus `eps`)."""
    a, g = terms.double().abs(), result.double().abs()
    return (a > limit * (g + eps)) & torch.isfinite(a) & torch.isfinite(g)


def bounded(terms: torch.Tensor, result: torch.Tensor, limit: float, eps: float) -> bool:
    """Every finite element's terms bounded by `limit` times its own magnitude (plus `eps`)."""
    return not bool(_unbounded(terms, result, limit, eps).any())


def _where(name: str, mask: torch.Tensor, terms: torch.Tensor, result: torch.Tensor | None = None) -> str:
    """The first element of `mask`, its terms' magnitude and (given) the golden's value there."""
    i = int(torch.nonzero(mask.reshape(-1))[0])
    at = [int(k) for k in torch.unravel_index(torch.tensor(i), mask.shape)] if mask.dim() else []
    said = f"{name}{at}: its terms' magnitudes sum to {float(terms.reshape(-1)[i]):.6g}"
    return said if result is None else f"{said}, the golden says {float(result.reshape(-1)[i]):.6g}"


def order_dependence(expected: dict[str, torch.Tensor], bound: dict[str, torch.Tensor],
                     largest: float = torch.finfo(ACCUMULATOR).max) -> str:
    """Why some element of `expected` depends on the order of its additions, or "": its terms
    could sum past `largest` (the accumulator's range, or stricter), or huge terms cancel there."""
    for name, b in bound.items():
        past = b.double() > largest
        if bool(past.any()):
            return ("an element sums gradients past the dtype's largest value: its result depends on the "
                    f"order of the additions (spec C), which no golden can say (at {_where(name, past, b)})")
    for name, g in expected.items():
        cancel = _unbounded(bound[name], g, CANCEL_LIMIT, 1.0)
        if bool(cancel.any()):
            return ("gradients near the dtype's largest value cancel at an element: a kernel that adds a small "
                    "term between them loses it, in an order spec C leaves free, which no golden can say "
                    f"(at {_where(name, cancel, bound[name], g)})")
    return ""
