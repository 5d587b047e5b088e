"""Tests for harness/judge/compare.py against the rules in spec README "Precision standards".

Expected numbers are written as literals derived by hand (see the comments); inputs are
chosen so the arithmetic is exact (powers of two) wherever a test sits on a threshold.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from harness.core import dtypes
from harness.judge import compare as C
from harness.judge import elementwise
from harness.judge.compare import STANDARDS, Verdict, compare, thresholds

NAN, INF = math.nan, math.inf
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
         "hifloat32": torch.float32, "float64": torch.float64}
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
        torch.float64: torch.int64}


def act(values, dtype: str) -> torch.Tensor:
    """A device-style result; asserts every value is exactly representable in `dtype`."""
    src = torch.tensor(values, dtype=torch.float64)
    t = src.to(TORCH[dtype])
    same = (t.double() == src) | (torch.isnan(src) & torch.isnan(t.double()))
    assert bool(same.all()), f"{values} not representable in {dtype}"
    return t


def g64(values) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def step(x: float, dtype: str, n: int = 1) -> float:
    """x moved n representable steps up in `dtype` (x >= 0)."""
    t = torch.tensor([x], dtype=TORCH[dtype])
    return float((t.view(BITS[t.dtype]) + n).view(t.dtype)[0])


# --------------------------------------------------------------------------- the tables
# Literal copy of spec README "Precision standards (exact published numbers)".
SPEC = {
    "mere_mare": {  # MERE < T, MARE < 10*T
        "float16": {"mere": 2**-10, "mare": 10 * 2**-10},
        "bfloat16": {"mere": 2**-7, "mare": 10 * 2**-7},
        "float32": {"mere": 2**-13, "mare": 10 * 2**-13},
        "hifloat32": {"mere": 2**-11, "mare": 10 * 2**-11},
    },
    "single_bm_high_precision": {
        "float16": {"error": 2**-11, "eb": 2**-10},
        "bfloat16": {"error": 2**-8, "eb": 2**-7},
        "float32": {"error": 2**-14, "eb": 2**-14},
    },
    "single_bm_high_performance": {
        "float16": {"error": 2**-7, "eb": 2**-10},
        "bfloat16": {"error": 2**-6, "eb": 2**-7},
        "float32": {"error": 2**-11, "eb": 2**-14},
    },
    "bit_exact": {dt: {"max_mismatches": 0} for dt in (
        "float16", "bfloat16", "float32", "float64",
        "int8", "uint8", "int16", "int32", "int64", "bool")},
    "ttk_mixed": {
        "float16": {"rtol": 2**-9, "atol": 2**-9, "max_abs_err": 0.1, "min_matched_ratio": 0.99},
        "bfloat16": {"rtol": 2**-6, "atol": 2**-6, "max_abs_err": 1, "min_matched_ratio": 0.99},
        "float32": {"rtol": 2**-10, "atol": 2**-16, "max_abs_err": 0.01, "min_matched_ratio": 0.99},
    },
    "allclose": {
        "float16": {"rtol": 1e-3, "atol": 1e-5},
        "bfloat16": {"rtol": 1.6e-2, "atol": 1e-5},
        "float32": {"rtol": 1.3e-6, "atol": 1e-5},
        "float64": {"rtol": 1e-7, "atol": 1e-7},
        **{dt: {"rtol": 0, "atol": 0}
           for dt in ("int8", "uint8", "int16", "int32", "int64", "bool")},
    },
}


def test_yaml_matches_spec_exactly():
    assert set(STANDARDS) == set(SPEC)
    for std, table in SPEC.items():
        floats = {dt for dt in table if dt == "hifloat32" or dtypes.lookup(dt).kind == "float"}
        assert set(C._tables()[std]) - {C.INTEGERS} == floats, std
        for dt, thr in table.items():
            assert thresholds(std, dt) == thr, (std, dt)


def test_every_integer_dtype_is_exact_without_a_row_of_its_own():
    # the spec states integer outputs exact ("any integer output", "integers exact"): a dtype the
    # platform adds later (uint16, uint32 have no row) is judged exactly, never refused or loosened
    for d in dtypes.ALL:
        if d.kind in ("int", "uint", "bool"):      # written out: the test does not trust is_integer
            assert thresholds("bit_exact", d.name) == {"max_mismatches": 0}, d.name
            assert thresholds("allclose", d.name) == {"rtol": 0, "atol": 0}, d.name
            with pytest.raises(ValueError, match=d.name):
                thresholds("mere_mare", d.name)
    for name in ("complex64", "float8_e5m2", "string"):      # not integers: still no threshold
        with pytest.raises(ValueError, match=name):
            thresholds("bit_exact", name)


def test_a_row_that_names_no_dtype_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "standards.yaml"
    bad.write_text(C._YAML.read_text().replace("  integers: {max_mismatches: 0}", "  intgers: {max_mismatches: 0}"))
    monkeypatch.setattr(C, "_YAML", bad)
    C._tables.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"bit_exact\.intgers: not a dtype's name"):
            thresholds("bit_exact", "int32")
    finally:
        C._tables.cache_clear()


def test_allclose_table_equals_torch_defaults():
    from torch.testing._comparison import default_tolerances
    for dt in ("float16", "bfloat16", "float32", "float64", "int32"):
        rtol, atol = default_tolerances(getattr(torch, dt))
        assert thresholds("allclose", dt) == {"rtol": rtol, "atol": atol}


@pytest.mark.parametrize("std,dt", [
    ("nope", "float16"), ("mere_mare", "int32"), ("ttk_mixed", "float64"),
    ("single_bm_high_precision", "hifloat32"), ("bit_exact", "hifloat32"),
    ("allclose", "complex64")])
def test_undefined_standard_or_dtype_raises_naming_both(std, dt):
    with pytest.raises(ValueError) as e:
        thresholds(std, dt)
    assert std in str(e.value) and dt in str(e.value)
    with pytest.raises(ValueError):
        compare(std, g64([1.0]), act([1.0], "float32"), dt)


def test_thresholds_returns_a_copy_and_accepts_aliases():
    t = thresholds("mere_mare", "fp16")
    t["mere"] = 1.0
    assert thresholds("mere_mare", "float16")["mere"] == 2**-10


# --------------------------------------------------------------------------- MERE / MARE

def test_mere_mare_hand_computed():
    # golden [1, 2, 0.5], actual [1 + 2^-10, 2, 0.5] (fp16-exact)
    # RE = [2^-10 / (1 + 1e-7), 0, 0] = [0.0009765624023437598, 0, 0]
    # MERE = 0.0009765624023437598 / 3 = 0.0003255208007812533; MARE = 0.0009765624023437598
    # fp16: MERE < 2^-10 = 0.0009765625 and MARE < 10*2^-10 = 0.009765625 -> PASS
    v = compare("mere_mare", g64([1, 2, 0.5]), act([1 + 2**-10, 2, 0.5], "float16"), "float16")
    assert v.passed and v.reason == ""
    assert v.metrics["mare"] == pytest.approx(0.0009765624023437598, rel=1e-14)
    assert v.metrics["mere"] == pytest.approx(0.0003255208007812533, rel=1e-14)
    assert v.worst["index"] == (0,) and v.worst["golden"] == 1.0
    assert v.worst["actual"] == 1 + 2**-10
    # same data judged as fp32 (T = 2^-13 = 0.000122): MERE 0.000326 >= T and MARE < 10T
    v = compare("mere_mare", g64([1, 2, 0.5]), act([1 + 2**-10, 2, 0.5], "float32"), "float32")
    assert not v.passed and v.reason.startswith("MERE=") and "MARE" not in v.reason


def _exact_re_golden(limit: float, dtype: str) -> tuple[float, float]:
    """(actual, golden) with |a-g|/(|g|+1e-7) == limit exactly in float64.

    With |g| ~ 1e-9 the ratio moves by about one ULP of `limit` per ULP of g, so an exact hit
    exists near g0 = (a + limit*1e-7) / (1 - limit) for some tiny representable a.
    """
    for a in [0.0] + [2.0**-k for k in range(24, 80)]:
        if float(torch.tensor(a, dtype=TORCH[dtype])) != a:
            continue
        g = g0 = (a + limit * 1e-7) / (1 - limit)
        for _ in range(64):
            for cand in (g, 2 * g0 - g):
                if abs(a - cand) / (abs(cand) + 1e-7) == limit:
                    return a, cand
            g = np.nextafter(g, INF)
    raise AssertionError(f"no exact golden for {limit}")


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "hifloat32"])
def test_mare_straddles_10T(dt):
    lim = SPEC["mere_mare"][dt]["mare"]
    a, g = _exact_re_golden(lim, dt)
    # one element at RE = 10T exactly plus ten exact ones: MERE = 10T/11 < T, MARE = 10T
    ones = [1.0] * 10
    v = compare("mere_mare", g64([g] + ones), act([a] + ones, dt), dt)
    assert v.metrics["mare"] == lim and v.metrics["mere"] < SPEC["mere_mare"][dt]["mere"]
    assert not v.passed and v.reason.startswith("MARE=")  # strict '<': equal fails
    assert v.worst["index"] == (0,)
    g_in = float(np.nextafter(g, a))  # one float64 ULP closer to the actual: RE < 10T
    v = compare("mere_mare", g64([g_in] + ones), act([a] + ones, dt), dt)
    assert v.passed and v.metrics["mare"] < lim


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "hifloat32"])
def test_mere_straddles_T(dt):
    lim = SPEC["mere_mare"][dt]["mere"]
    a, g = _exact_re_golden(lim, dt)
    # a single element: MERE = MARE = T; MARE < 10T holds, MERE < T does not
    v = compare("mere_mare", g64([g]), act([a], dt), dt)
    assert v.metrics["mere"] == lim and not v.passed and v.reason.startswith("MERE=")
    v = compare("mere_mare", g64([float(np.nextafter(g, a))]), act([a], dt), dt)
    assert v.passed


def test_mere_mare_zero_golden_uses_epsilon():
    # golden 0, actual 2^-24 (fp16 min subnormal): RE = 2^-24 / 1e-7 = 0.5960464477539062
    v = compare("mere_mare", g64([0.0]), act([2**-24], "float16"), "float16")
    assert v.metrics["mare"] == pytest.approx(0.5960464477539062, rel=1e-14) and not v.passed


# --------------------------------------------------------------------------- single benchmark

SBM = [(s, d) for s in ("single_bm_high_precision", "single_bm_high_performance")
       for d in ("float16", "bfloat16", "float32")]


def test_single_bm_hand_computed():
    # golden [0.5, 2, -4], actual fp32 [0.5 + 2^-12, 2 - 2^-10, -4 + 2^-9]
    # |g|<1 -> abs err:  +2^-12
    # |g|>=1 -> rel err: -2^-10/2 = -2^-11 ; +2^-9/4 = +2^-11
    # EB = (2^-12 - 2^-11 + 2^-11) / 3 = 2^-12/3 = 8.138020833333333e-05
    # max abs (small) = 2^-12 = 0.000244140625 ; max rel (large) = 2^-11 = 0.00048828125
    # high_performance fp32: error thd 2^-11 -> both <= ; eb thd 2^-14 = 6.1035e-05 < EB -> FAIL
    v = compare("single_bm_high_performance", g64([0.5, 2, -4]),
                act([0.5 + 2**-12, 2 - 2**-10, -4 + 2**-9], "float32"), "float32")
    m = v.metrics
    assert m["eb"] == pytest.approx(2**-12 / 3, rel=1e-15)
    assert m["max_abs_err_small"] == 2**-12 and m["max_rel_err_large"] == 2**-11
    assert (m["n_small"], m["n_large"]) == (1, 2)
    assert not v.passed and v.reason.startswith("|EB|=")
    # worst = largest error in its own unit: rel 2^-11 at index 1 (first of the two maxima)
    assert v.worst["index"] == (1,) and v.worst["error"] == 2**-10


@pytest.mark.parametrize("std,dt", SBM)
def test_single_bm_abs_error_straddles_threshold(std, dt):
    thd = SPEC[std][dt]["error"]
    # |g| < 1: errors +thd and -thd (EB = 0): max abs err == thd passes ('<=')
    v = compare(std, g64([0.5 - thd, 0.5 + thd]), act([0.5, 0.5], dt), dt)
    assert v.passed and v.metrics["max_abs_err_small"] == thd and v.metrics["eb"] == 0
    v = compare(std, g64([0.5 - thd - 2**-40, 0.5 + thd]), act([0.5, 0.5], dt), dt)
    assert not v.passed and "max abs err" in v.reason and "|EB|" not in v.reason
    assert v.worst["index"] == (0,)


@pytest.mark.parametrize("std,dt", SBM)
def test_single_bm_rel_error_straddles_threshold(std, dt):
    thd = SPEC[std][dt]["error"]
    # |g| >= 1: golden [1, -1], actual [1 - thd, -1 + thd] -> rel errors -thd, +thd, EB = 0
    v = compare(std, g64([1, -1]), act([1 - thd, -1 + thd], dt), dt)
    assert v.passed and v.metrics["max_rel_err_large"] == thd and v.metrics["eb"] == 0
    # golden 1 + 2^-30: |rel| = (thd + 2^-30) / (1 + 2^-30) > thd
    v = compare(std, g64([1 + 2**-30, -1]), act([1 - thd, -1 + thd], dt), dt)
    assert not v.passed and "max rel err" in v.reason and "|EB|" not in v.reason


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_single_bm_eb_straddles_threshold_both_signs(dt):
    std = "single_bm_high_performance"  # the class where eb < error threshold
    eb = SPEC[std][dt]["eb"]
    # actual 0.5, golden 0.5 -+ eb: signed error +-eb, |EB| == eb passes ('<=')
    for sign in (+1, -1):
        v = compare(std, g64([0.5 - sign * eb]), act([0.5], dt), dt)
        assert v.passed and v.metrics["eb"] == sign * eb and v.metrics["abs_eb"] == eb
        v = compare(std, g64([0.5 - sign * (eb + 2**-40)]), act([0.5], dt), dt)
        assert not v.passed and v.reason.startswith("|EB|=")
        assert math.copysign(1, v.metrics["eb"]) == sign


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_single_bm_eb_signed_errors_cancel(dt):
    std = "single_bm_high_performance"
    e = SPEC[std][dt]["error"]  # > eb, still within the error threshold
    # errors +e, +e, -e, -e -> EB = 0 -> PASS; all +e -> EB = e > eb -> FAIL
    v = compare(std, g64([0.5 - e, 0.5 - e, 0.5 + e, 0.5 + e]), act([0.5] * 4, dt), dt)
    assert v.passed and v.metrics["eb"] == 0
    v = compare(std, g64([0.5 - e] * 4), act([0.5] * 4, dt), dt)
    assert not v.passed and v.metrics["eb"] == e and v.reason.startswith("|EB|=")


def test_single_bm_eb_never_binding_in_high_precision():
    # |EB| <= max|e| <= error thd <= eb thd for every dtype: the EB test cannot decide
    # high_precision (documented here because it looks like a table mistake but is not ours).
    for thr in SPEC["single_bm_high_precision"].values():
        assert thr["eb"] >= thr["error"]


def test_single_bm_split_at_abs_golden_one():
    std, dt = "single_bm_high_performance", "float16"
    below = float(np.nextafter(1.0, 0.0))
    v = compare(std, g64([1.0, -1.0, below, -below]), act([1, -1, 1, -1], dt), dt)
    assert (v.metrics["n_small"], v.metrics["n_large"]) == (2, 2)
    # the same absolute error 0.5 is 0.0005 relative at golden 1000 (passes: <= 2^-7 and
    # EB 0.0005 <= 2^-10) but 0.5 absolute at golden 0.25 (fails)
    v = compare(std, g64([1000.0]), act([1000.5], dt), dt)
    assert v.passed and v.metrics["max_rel_err_large"] == 0.0005
    v = compare(std, g64([0.25]), act([0.75], dt), dt)
    assert not v.passed and v.metrics["max_abs_err_small"] == 0.5


# --------------------------------------------------------------------------- bit exact

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_bit_exact_float(dt):
    vals = [0.0, 1.0, -2.5, 0.15625, 3.0]
    assert compare("bit_exact", g64(vals), act(vals, dt), dt).passed
    # one ULP off at 1.0
    a = act(vals, dt).clone()
    a[1] = step(1.0, dt)
    v = compare("bit_exact", g64(vals), a, dt)
    assert not v.passed and v.metrics["mismatches"] == 1 and v.worst["index"] == (1,)
    assert v.worst["golden_bits"] != v.worst["actual_bits"]
    # -0.0 vs 0.0: equal as numbers, different bits
    v = compare("bit_exact", g64([0.0]), act([-0.0], dt), dt)
    assert not v.passed and v.metrics["max_abs_err"] == 0.0


def test_bit_exact_reports_bits():
    v = compare("bit_exact", g64([1.0]), act([1 + 2**-7], "bfloat16"), "bfloat16")
    assert (v.worst["golden_bits"], v.worst["actual_bits"]) == ("0x3f80", "0x3f81")
    v = compare("bit_exact", g64([1.0]), act([1 + 2**-10], "float16"), "float16")
    assert (v.worst["golden_bits"], v.worst["actual_bits"]) == ("0x3c00", "0x3c01")


def test_bit_exact_golden_rounded_once():
    # 1 + 2^-8 + 2^-30 lies above the bf16 midpoint 1 + 2^-8 -> rounds to 1 + 2^-7.
    # (torch's float64->bf16 cast rounds via float32 and would give 1.0.)
    g = g64([1 + 2**-8 + 2**-30])
    assert compare("bit_exact", g, act([1 + 2**-7], "bfloat16"), "bfloat16").passed
    assert not compare("bit_exact", g, act([1.0], "bfloat16"), "bfloat16").passed
    # exact tie 1 + 2^-8 -> round half to even -> 1.0
    assert compare("bit_exact", g64([1 + 2**-8]), act([1.0], "bfloat16"), "bfloat16").passed
    # fp16: 1 + 2^-11 + 2^-40 -> 1 + 2^-10
    assert compare("bit_exact", g64([1 + 2**-11 + 2**-40]), act([1 + 2**-10], "float16"),
                   "float16").passed


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "int32", "int64"])
def test_bit_exact_integers(dt):
    tdt = getattr(torch, dt)
    g = torch.tensor([[0, 1], [2, 100]], dtype=tdt)
    assert compare("bit_exact", g, g.clone(), dt).passed
    a = g.clone()
    a[1, 0] = 3
    v = compare("bit_exact", g, a, dt)
    assert not v.passed and v.worst["index"] == (1, 0)
    assert (v.worst["golden"], v.worst["actual"]) == (2, 3)


def test_integers_compare_exactly_beyond_float64_precision():
    # 2^62 + 1 and 2^62 are the same float64; integer data must not go through floats
    g = torch.tensor([2**62 + 1], dtype=torch.int64)
    a = torch.tensor([2**62], dtype=torch.int64)
    for std in ("bit_exact", "allclose"):
        assert not compare(std, g, a, "int64").passed
    flags = torch.tensor([True, False])
    assert compare("bit_exact", flags, flags.clone(), "bool").passed
    assert not compare("allclose", torch.tensor([True]), torch.tensor([False]), "bool").passed


# --------------------------------------------------------------------------- TTK mixed

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_ttk_element_tolerance_straddles(dt):
    t = SPEC["ttk_mixed"][dt]
    # golden 1, actual 1 + atol + rtol (exact): |a-g| == atol + rtol*|g| -> element passes
    a = act([1 + t["atol"] + t["rtol"]], dt)
    v = compare("ttk_mixed", g64([1.0]), a, dt)
    assert v.passed and v.metrics["matched_ratio"] == 1.0
    # golden 1 - 2^-40: the error grows by 2^-40, the tolerance shrinks -> the element fails
    v = compare("ttk_mixed", g64([1 - 2**-40]), a, dt)
    assert not v.passed and v.metrics["matched_ratio"] == 0.0 and v.metrics["mismatches"] == 1


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_ttk_matched_ratio_straddles_99_percent(dt):
    t = SPEC["ttk_mixed"][dt]
    bad = 4 * t["atol"]  # outside atol (golden 0) but under the cap
    g = g64([0.0] * 100)
    a = act([bad] + [0.0] * 99, dt)  # 99/100 = 0.99 -> PASS ('>=')
    v = compare("ttk_mixed", g, a, dt)
    assert v.passed and v.metrics["matched_ratio"] == 0.99 and v.metrics["mismatches"] == 1
    a = act([bad, bad] + [0.0] * 98, dt)  # 0.98 -> FAIL
    v = compare("ttk_mixed", g, a, dt)
    assert not v.passed and v.reason.startswith("matched ratio=0.98")


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_ttk_cap_straddles(dt):
    cap = SPEC["ttk_mixed"][dt]["max_abs_err"]
    a = act([0.0] * 100, dt)
    # one element with |a-g| == cap (an element mismatch, but 99% still match)
    v = compare("ttk_mixed", g64([-cap] + [0.0] * 99), a, dt)
    assert v.passed and v.metrics["max_abs_err"] == cap
    v = compare("ttk_mixed", g64([float(np.nextafter(-cap, -INF))] + [0.0] * 99), a, dt)
    assert not v.passed and v.reason.startswith("max abs err=") and v.worst["index"] == (0,)


# --------------------------------------------------------------------------- allclose

def _largest_at_most(x: float, dt: str) -> float:
    y = float(torch.tensor([x], dtype=torch.float64).to(TORCH[dt])[0])
    while y > x:
        y = step(y, dt, -1)
    while step(y, dt) <= x:
        y = step(y, dt)
    return y


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_allclose_atol_straddles(dt):
    atol = SPEC["allclose"][dt]["atol"]
    # golden 0: the element passes iff |a| <= atol
    y = _largest_at_most(atol, dt)
    assert compare("allclose", g64([0.0, 1.0]), act([y, 1.0], dt), dt).passed
    v = compare("allclose", g64([0.0, 1.0]), act([step(y, dt), 1.0], dt), dt)
    assert not v.passed and v.metrics["mismatches"] == 1 and v.worst["index"] == (0,)


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_allclose_rtol_straddles_and_agrees_with_torch(dt):
    rtol, atol = SPEC["allclose"][dt]["rtol"], SPEC["allclose"][dt]["atol"]
    # actual 1; the largest float64 golden above 1 still within atol + rtol*|g| (bisection)
    lo, hi = 1.0, 2.0
    while np.nextafter(lo, INF) < hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if abs(1 - mid) <= atol + rtol * abs(mid) else (lo, mid)
    a = act([1.0], dt)
    assert compare("allclose", g64([lo]), a, dt).passed
    assert not compare("allclose", g64([hi]), a, dt).passed
    # torch.isclose uses the same inequality
    assert torch.isclose(a.double(), torch.tensor([lo], dtype=torch.float64), rtol, atol).item()
    assert not torch.isclose(a.double(), torch.tensor([hi], dtype=torch.float64), rtol, atol).item()


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_allclose_mismatch_count_matches_torch_isclose(dt):
    gen = torch.Generator().manual_seed(0)
    g = torch.randn(2000, generator=gen, dtype=torch.float64) * 4
    noise = torch.randn(2000, generator=gen, dtype=torch.float64) * 1e-3 * g.abs()
    a = (g + noise).to(TORCH[dt])
    thr = thresholds("allclose", dt)
    expected = int((~torch.isclose(a.double(), g, thr["rtol"], thr["atol"])).sum())
    v = compare("allclose", g.numpy(), a, dt)
    assert v.metrics["mismatches"] == expected and v.passed == (expected == 0)


# --------------------------------------------------------------------------- NaN / Inf

NAN_CASES = [  # (golden, actual, passes)
    ([NAN, 1.0], [NAN, 1.0], True),        # same-position NaN counts as equal
    ([INF, -INF, 2.0], [INF, -INF, 2.0], True),  # same-sign Inf counts as equal
    ([1.0, 2.0], [NAN, 2.0], False),       # number vs NaN
    ([NAN, 2.0], [1.0, 2.0], False),       # NaN vs number
    ([INF, 2.0], [-INF, 2.0], False),      # +Inf vs -Inf
    ([INF, 2.0], [1.0, 2.0], False),       # Inf vs number
    ([1.0, 2.0], [INF, 2.0], False),       # number vs Inf
    ([NAN, 2.0], [INF, 2.0], False),       # NaN vs Inf
]


@pytest.mark.parametrize("std", STANDARDS)
@pytest.mark.parametrize("golden,actual,passes", NAN_CASES)
def test_nan_inf_rule(std, golden, actual, passes):
    v = compare(std, g64(golden), act(actual, "float32"), "float32")
    assert v.passed is passes
    if not passes:
        assert v.metrics["nan_inf_mismatches"] == 1 and v.worst["index"] == (0,)
        assert "NaN/Inf mismatch" in v.reason


@pytest.mark.parametrize("std", STANDARDS)
def test_nan_in_actual_fails_even_if_all_else_perfect(std):
    g = g64([[1.0, 2.0], [3.0, 4.0]])
    a = act([[1.0, 2.0], [NAN, 4.0]], "float32")
    v = compare(std, g, a, "float32")
    assert not v.passed and v.reason.startswith("1 NaN/Inf mismatch")
    assert v.worst["index"] == (1, 0) and v.worst["flat_index"] == 2
    assert v.worst["golden"] == 3.0 and math.isnan(v.worst["actual"])
    assert v.metrics["n_compared"] == 3  # the NaN position stays out of the numeric metrics


def test_equal_specials_are_excluded_from_metrics():
    # golden [nan, inf, 1], actual [nan, inf, 1 + 2^-10]: only the last element is measured
    # RE = 2^-10 / (1 + 1e-7) -> MERE = MARE = 0.0009765624023437598
    v = compare("mere_mare", g64([NAN, INF, 1.0]), act([NAN, INF, 1 + 2**-10], "float16"),
                "float16")
    assert v.metrics["n_compared"] == 1 and v.metrics["n_nan_inf_equal"] == 2
    assert v.metrics["mere"] == v.metrics["mare"] == pytest.approx(0.0009765624023437598, rel=1e-14)
    # nothing left to measure: a pass with zero error, not a NaN metric
    v = compare("mere_mare", g64([NAN, -INF]), act([NAN, -INF], "float16"), "float16")
    assert v.passed and v.metrics["n_compared"] == 0 and v.metrics["mare"] == 0.0


def test_golden_beyond_dtype_range_expects_inf():
    # 70000 rounds to +Inf in fp16 (max 65504): +Inf is the correctly rounded answer
    v = compare("allclose", g64([70000.0]), act([INF], "float16"), "float16")
    assert v.passed and v.metrics["golden_overflow"] == 1
    assert not compare("allclose", g64([70000.0]), act([65504.0], "float16"), "float16").passed
    assert compare("bit_exact", g64([70000.0]), act([INF], "float16"), "float16").passed


def test_nan_metric_is_never_a_pass():
    assert not elementwise.lt(NAN, 1.0) and not elementwise.le(NAN, 1.0) and not elementwise.ge(NAN, 0.0)


# --------------------------------------------------------------------------- verdict & shapes

def test_verdict_shape_summary_and_json():
    g = np.zeros((1, 3, 6, 2))
    g[0, 2, 5, 1] = 1.25
    a = torch.tensor(g, dtype=torch.float16)
    a[0, 2, 5, 1] = 1.289  # fp16 1.2890625: RE = 0.0390625/1.2500001 = 0.03124999750
    v = compare("mere_mare", g, a, "float16")
    assert isinstance(v, Verdict) and not v.passed
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.passed = True
    assert v.worst["index"] == (0, 2, 5, 1) and v.worst["flat_index"] == 2 * 12 + 5 * 2 + 1
    assert v.worst["golden"] == 1.25 and v.worst["actual"] == 1.2890625
    assert v.worst["error"] == 0.0390625
    assert v.metrics["mare"] == pytest.approx(0.0390625 / 1.2500001, rel=1e-14)
    for key in ("n", "n_compared", "nan_inf_mismatches", "mere", "mare", "threshold_mere",
                "threshold_mare", "golden_overflow"):
        assert key in v.metrics
    assert v.thresholds == SPEC["mere_mare"]["float16"]
    s = v.summary()
    # MERE = 0.03125/72 = 0.000434 < 2^-10 passes; only MARE fails
    assert s == "FAIL mere_mare[float16]: MARE=0.03125 >= 0.009766 at (0, 2, 5, 1): " \
                "golden=1.25 actual=1.289", s
    d = v.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["worst"]["index"] == [0, 2, 5, 1] and d["summary"] == s
    assert compare("mere_mare", g, torch.tensor(g, dtype=torch.float16), "float16").summary() \
        .startswith("PASS mere_mare[float16]: MERE=0 MARE=0")


def test_to_dict_nan_becomes_none():
    v = compare("allclose", g64([NAN, 1.0]), act([1.0, 1.0], "float32"), "float32")
    d = v.to_dict()
    assert d["worst"]["golden"] is None and d["worst"]["actual"] == 1.0
    json.dumps(d, allow_nan=False)
    v = compare("allclose", g64([INF]), act([1.0], "float32"), "float32")
    json.dumps(v.to_dict(), allow_nan=False)


@pytest.mark.parametrize("std", STANDARDS)
def test_shape_mismatch_fails_without_exception(std):
    v = compare(std, g64([1.0, 2.0]), act([[1.0, 2.0]], "float32"), "float32")
    assert not v.passed and "shape mismatch" in v.reason and v.worst is None
    assert v.summary().startswith(f"FAIL {std}[float32]: shape mismatch")


@pytest.mark.parametrize("std", STANDARDS)
def test_empty_and_scalar(std):
    v = compare(std, np.zeros((0, 4)), torch.zeros((0, 4)), "float32")
    assert v.passed and v.metrics["n"] == 0 and v.worst is None
    v = compare(std, np.float64(2.0), torch.tensor(2.0), "float32")
    assert v.passed and v.metrics["n"] == 1


def test_actual_dtype_must_match_case_dtype():
    v = compare("allclose", g64([1.0]), act([1.0], "float32"), "float16")
    assert not v.passed and "dtype" in v.reason
    # hifloat32 results are stored as float32
    assert compare("mere_mare", g64([1.0]), act([1.0], "float32"), "hifloat32").passed


def test_numpy_inputs_and_bf16_tensor_accepted():
    g = g64([0.5, -1.5])
    assert compare("allclose", g, np.array([0.5, -1.5], dtype=np.float32), "float32").passed
    assert compare("ttk_mixed", torch.tensor(g), act([0.5, -1.5], "bfloat16"), "bfloat16").passed
    a = act([0.5, -1.5], "bfloat16").requires_grad_()
    assert compare("single_bm_high_precision", g, a, "bfloat16").passed


def test_an_integer_output_is_exact_even_against_a_float_golden():
    """Through float64, an int64 output of 2**60 + 1 equalled a golden of 2**60 (53-bit mantissa):
    an integer output is compared in int64 whatever the golden's type."""
    golden = np.array([2.0 ** 60, 3.0])
    assert not compare("bit_exact", golden, np.array([2 ** 60 + 1, 3], dtype=np.int64), "int64").passed
    assert compare("bit_exact", golden, np.array([2 ** 60, 3], dtype=np.int64), "int64").passed
    half = compare("bit_exact", np.array([2.5]), np.array([2], dtype=np.int64), "int64")
    assert not half.passed and "not whole numbers" in half.summary()


def test_a_float_dtype_without_a_known_rounding_is_refused_not_rounded_as_bfloat16():
    """A float dtype added to the platform to compute with (a float8) used to take bfloat16's
    rounding silently: an 8-bit format judged with a 16-bit one's mantissa and range."""
    from harness.judge import elementwise
    g = np.array([1.0 + 2.0 ** -9, 3.0e38])
    assert elementwise.round_to(g, "bfloat16")[0][0] == 1.0               # the known ones still round
    with pytest.raises(ValueError, match="float8_e5m2"):
        elementwise.round_to(g, "float8_e5m2")
