"""The case files assert no result whose order of additions is free (judge/sums.py).

A valid case with +-FLT_MAX among its gradients passes on a library that adds in the golden's
order, and may fail on a correct one that adds in another: spec C leaves the order free. Such a
case would fail on hardware without any bug to explain it. The explorer skips these examples; a
case file must not hold them either, so each valid case whose value class can hold the extremes
is prepared (its real inputs, from its seed) and its golden checked here. Its fix is a value class
whose sums do not depend on the order (the preset `g_specials_sum_safe`: inf, -inf, NaN and tiny
values, no +-max), or windows where each gradient lands once.
"""
from __future__ import annotations

from dataclasses import dataclass

import golden

from .. import inputs
from ..judge import sums
from ..model import Case


@dataclass(frozen=True)
class OrderDependent:
    case: str
    why: str

    def __str__(self) -> str:
        return f"{self.case}: {self.why}"


def at_risk(case: Case) -> bool:
    """Could the case's values put +-FLT_MAX into a sum the standard judges?"""
    return case.kind == "valid" and case.skip is None and sums.may_hold_extremes(case.values, case.standard)


def check(case: Case) -> str:
    """Why the case's golden depends on the order of the additions, or ""."""
    grads = case.op.incoming_gradients
    if not grads:
        return ""
    module = golden.load(case.op.golden)
    prepared = inputs.prepare(case)
    expected = module.golden(dict(prepared), case.call_attrs)
    bound = sums.term_bounds(module, prepared, case.call_attrs, grads)
    return sums.order_dependence(expected, bound)


def gaps(loaded) -> list[OrderDependent]:
    """Every valid case of every case file whose asserted result depends on the order of its sums."""
    return [OrderDependent(c.id, why) for _, cases in loaded for c in cases if at_risk(c) for why in [check(c)] if why]
