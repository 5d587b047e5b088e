"""The precision standards (spec README "Precision standards"): one judge per standard, registered
under its names with the metrics a PASS line shows and the metrics it holds against a threshold.
A standard is one function here plus its thresholds in standards.yaml.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .elementwise import Data, argmax_full, ge, largest, le, lt

RE_EPS = 1e-7  # part of the MERE/MARE formula (|g| + 1e-7), not a tunable threshold

# name -> how it judges and which metrics its PASS line shows
REGISTRY: dict[str, "_Standard"] = {}


def fmt(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class _Standard:
    judge: Callable          # (data, thresholds) -> (pass, metrics, worst index, worst metric, reasons)
    headline: tuple[str, ...]   # metrics a PASS summary shows
    # (metric, threshold key or None, rule) for every metric the standard holds against a threshold:
    # what reports plot and tabulate (harness/reporting)
    limits: tuple[tuple[str, str | None, str], ...]


def _standard(*names: str, headline: tuple[str, ...], limits: tuple):
    def register(fn):
        for n in names:
            REGISTRY[n] = _Standard(fn, headline, limits)
        return fn
    return register


def limits(standard: str) -> tuple[tuple[str, str | None, str], ...]:
    """The thresholded metrics of `standard` (empty for an unknown one)."""
    entry = REGISTRY.get(standard)
    return entry.limits if entry else ()


def headline(standard: str) -> tuple[str, ...]:
    """The metrics a PASS summary of `standard` shows."""
    return REGISTRY[standard].headline


# Each returns (numeric_pass, metrics, worst flat index or None, metric name of worst, reasons).

@_standard("mere_mare", headline=("mere", "mare"), limits=(("mere", "mere", "<"), ("mare", "mare", "<")))
def _mere_mare(d: Data, thr: dict):
    g, a = d.g[d.cmp], d.a[d.cmp]
    re = np.abs(a - g) / (np.abs(g) + RE_EPS)
    mere = float(re.mean()) if re.size else 0.0
    mare = largest(re)
    reasons = []
    if not lt(mere, thr["mere"]):  # strict '<' per the standard
        reasons.append(f"MERE={fmt(mere)} >= {fmt(thr['mere'])}")
    if not lt(mare, thr["mare"]):
        reasons.append(f"MARE={fmt(mare)} >= {fmt(thr['mare'])}")
    return not reasons, {"mere": mere, "mare": mare}, argmax_full(d, re), "RE", reasons


@_standard("single_bm_high_precision", "single_bm_high_performance",
           limits=(("abs_eb", "eb", "<="), ("max_abs_err_small", "error", "<="), ("max_rel_err_large", "error", "<=")),
           headline=("eb", "max_abs_err_small", "max_rel_err_large"))
def _single_bm(d: Data, thr: dict):
    g, a = d.g[d.cmp], d.a[d.cmp]
    small = np.abs(g) < 1
    err = a - g  # signed on purpose: EB measures bias, so +e and -e cancel
    # absolute error where |g| < 1, relative error elsewhere (|g| >= 1, so no division by 0)
    e = np.where(small, err, err / np.where(small, 1.0, np.abs(g)))
    eb = float(e.mean()) if e.size else 0.0
    max_abs = largest(np.abs(e[small]))
    max_rel = largest(np.abs(e[~small]))
    reasons = []
    # The spec writes "EB <= eb_thd"; a bias is a bias in either direction, so test |EB|.
    if not le(abs(eb), thr["eb"]):
        reasons.append(f"|EB|={fmt(abs(eb))} > {fmt(thr['eb'])}")
    if not le(max_abs, thr["error"]):
        reasons.append(f"max abs err (|g|<1)={fmt(max_abs)} > {fmt(thr['error'])}")
    if not le(max_rel, thr["error"]):
        reasons.append(f"max rel err (|g|>=1)={fmt(max_rel)} > {fmt(thr['error'])}")
    m = {"eb": eb, "abs_eb": abs(eb), "max_abs_err_small": max_abs, "max_rel_err_large": max_rel,
         "n_small": int(small.sum()), "n_large": int((~small).sum())}
    # worst: the element with the largest error in the unit it is judged in (abs or rel)
    return not reasons, m, argmax_full(d, np.abs(e)), "abs_or_rel_err", reasons


def _tolerance(d: Data, thr: dict):
    """|a-g| <= atol + rtol*|g| per compared element: (diff, ok, diff/tol)."""
    g, a = d.g[d.cmp], d.a[d.cmp]
    if d.g.dtype.kind in "iub":  # integers: exact; compare as integers (no float rounding)
        ok = a == g
        diff = np.abs(a.astype(np.float64) - g.astype(np.float64))  # for reporting only
        return diff, ok, diff
    diff = np.abs(a - g)
    tol = thr["atol"] + thr["rtol"] * np.abs(g)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(tol > 0, diff / tol, np.where(diff > 0, np.inf, 0.0))
    return diff, diff <= tol, ratio


@_standard("ttk_mixed", headline=("matched_ratio", "max_abs_err"),
           limits=(("matched_ratio", "min_matched_ratio", ">="), ("max_abs_err", "max_abs_err", "<=")))
def _ttk_mixed(d: Data, thr: dict):
    diff, ok, ratio = _tolerance(d, thr)
    n = ok.size
    matched_ratio = float(ok.sum()) / n if n else 1.0
    max_abs = largest(diff)
    reasons = []
    if not ge(matched_ratio, thr["min_matched_ratio"]):
        reasons.append(f"matched ratio={fmt(matched_ratio)} < {fmt(thr['min_matched_ratio'])}")
    if not le(max_abs, thr["max_abs_err"]):
        reasons.append(f"max abs err={fmt(max_abs)} > {fmt(thr['max_abs_err'])}")
    m = {"matched_ratio": matched_ratio, "mismatches": int(n - ok.sum()), "max_abs_err": max_abs,
         "max_tol_ratio": largest(ratio)}
    return not reasons, m, argmax_full(d, ratio), "err/tol", reasons


@_standard("allclose", headline=("mismatches", "max_abs_err"), limits=(("mismatches", None, "<="),))
def _allclose(d: Data, thr: dict):
    diff, ok, ratio = _tolerance(d, thr)
    bad = int(ok.size - ok.sum())
    what = "differ (integers must match exactly)" if d.g.dtype.kind in "iub" \
        else f"outside atol+rtol*|g| (max abs err={fmt(largest(diff))})"
    reasons = [f"{bad} of {ok.size} elements {what}"] if bad else []
    m = {"mismatches": bad, "max_abs_err": largest(diff), "max_tol_ratio": largest(ratio)}
    return not reasons, m, argmax_full(d, ratio), "err/tol", reasons


@_standard("bit_exact", headline=("mismatches",), limits=(("mismatches", "max_mismatches", "<="),))
def _bit_exact(d: Data, thr: dict):
    if d.a_bits is None or d.g_bits is None:  # integer (or bool) data: exact equality
        same = d.a == d.g
        g_cmp = d.g
    else:
        g_cmp, g_bits = d.g_round, d.g_bits
        # bit equality, except that NaN vs NaN counts as equal (spec NaN rule; payloads of a
        # float64 golden do not survive rounding anyway)
        same = (d.a_bits == g_bits) | (np.isnan(d.a) & np.isnan(g_cmp))
    bad = np.flatnonzero(~same)
    with np.errstate(invalid="ignore"):
        diff = np.abs(d.a.astype(np.float64) - g_cmp.astype(np.float64))
    finite_diff = diff[d.cmp & np.isfinite(diff)]
    reasons = []
    if not bad.size <= thr["max_mismatches"]:
        reasons.append(f"{bad.size} of {d.a.size} elements differ bitwise")
    m = {"mismatches": int(bad.size), "max_abs_err": largest(finite_diff)}
    return not reasons, m, (int(bad[0]) if bad.size else None), "first_bit_mismatch", reasons



STANDARDS: tuple[str, ...] = tuple(REGISTRY)
