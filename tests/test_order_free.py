"""No case asserts a result whose order of additions spec C leaves free (harness/audit/order_free.py),
and the check finds one when a case file is given such values."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from harness.audit import order_free
from harness.judge import sums
from harness.model.distributions import resolve

pytestmark = pytest.mark.loops_over_ops

FLT_MAX = torch.finfo(torch.float32).max


def test_no_case_asserts_a_sum_whose_order_is_free(loaded):
    found = order_free.gaps(loaded)
    assert not found, ("cases whose golden depends on the order of the additions (where windows overlap, give "
                       "them g_specials_sum_safe instead of g_specials: README, 'The case format in brief'):\n"
                       + "\n".join(map(str, found)))


def test_gradient_extremes_in_overlapping_windows_are_found(loaded):
    """Put the extremes back into every valid case that runs the sum-safe specials (they exist because
    their windows overlap): some of them must be found, and each one found names its case."""
    extremes = resolve("g_specials", {})
    swapped = [(op, [dataclasses.replace(c, values=extremes) for c in cases
                     if c.kind == "valid" and c.values.name == "g_specials_sum_safe"]) for op, cases in loaded]
    assert sum(len(cases) for _, cases in swapped) >= 10
    found = order_free.gaps(swapped)
    assert found and all("cancel at an element" in x.why or "past the dtype's largest" in x.why for x in found)
    ids = {c.id for _, cases in swapped for c in cases}
    assert {x.case for x in found} <= ids


def test_huge_terms_that_cancel_have_no_order_free_result():
    """+FLT_MAX/3 and -FLT_MAX/3 with 3.59/3 between them: the golden says 1.198, a kernel adding in
    another order says 0 (found by exploring)."""
    expected = {"y": torch.tensor([3.59 / 3], dtype=torch.float64)}
    bound = {"y": torch.tensor([2 * FLT_MAX / 3 + 3.59 / 3], dtype=torch.float64)}
    assert "cancel at an element" in sums.order_dependence(expected, bound)


def test_a_sum_past_the_accumulators_range_has_no_order_free_result():
    bound = {"y": torch.tensor([1.5 * FLT_MAX], dtype=torch.float64)}
    assert "past the dtype's largest value" in sums.order_dependence({"y": torch.tensor([1e38])}, bound,
                                                                     torch.finfo(sums.ACCUMULATOR).max)


def test_half_terms_past_the_halfs_range_are_order_free_in_an_fp32_accumulator():
    """Two fp16 maxima and a third of the other sign: 65504 in every order of an fp32 sum."""
    expected = {"y": torch.tensor([65504.0], dtype=torch.float64)}
    bound = {"y": torch.tensor([3 * 65504.0], dtype=torch.float64)}
    assert sums.order_dependence(expected, bound, torch.finfo(sums.ACCUMULATOR).max) == ""
    assert "past the dtype's largest" in sums.order_dependence(expected, bound, torch.finfo(torch.float16).max)


def test_ordinary_gradients_are_order_free():
    g = torch.linspace(-5, 5, 101, dtype=torch.float64)
    assert sums.order_dependence({"y": g}, {"y": g.abs() * 9}) == ""
