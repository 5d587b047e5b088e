"""Comparators: device result vs golden under one named precision standard.

The rules are those of /work/shared/spec/README.md, "Precision standards (exact published
numbers)"; every threshold comes from harness/standards.yaml. Entry points:

    thresholds(standard, dtype) -> dict     # validates a case up front (ValueError if undefined)
    compare(standard, golden, actual, dtype) -> Verdict

Shared conventions (one place each, below):
- `_load` turns numpy arrays / torch tensors (bfloat16 included) into flat float64 values
  (int64 for integer data) plus the raw bits of floating `actual`.
- `_special` applies the NaN/Inf rule: same-position NaN, or same-sign Inf, counts as equal
  and is left out of the numeric metrics; any other NaN/Inf disagreement fails the case.
- Every pass test goes through `_lt`/`_le`/`_ge`, which treat a NaN metric as a failure.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import sys

import numpy as np
import yaml

from ..core import dtypes
from ..core.jsonsafe import jsonable

# name -> how it judges and which metrics its PASS line shows. A standard is one
# @_standard(...) function below plus its thresholds in standards.yaml.
_REGISTRY: dict[str, "_Standard"] = {}

_YAML = Path(__file__).with_name("standards.yaml")
_RE_EPS = 1e-7  # part of the MERE/MARE formula (|g| + 1e-7), not a tunable threshold
_FLOATS = ("float16", "bfloat16", "float32", "hifloat32", "float64")
# hifloat32 is a compute mode whose results are stored as float32.
_STORAGE = {"hifloat32": "float32"}
# hifloat32 is a compute mode, not an aclDataType: the one name the dtype table lacks
_COMPUTE_MODES = {"hf32": "hifloat32"}


# --------------------------------------------------------------------------- thresholds

@functools.lru_cache(maxsize=1)
def _tables() -> dict[str, dict[str, dict[str, float]]]:
    with open(_YAML, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    missing = set(_REGISTRY) - set(data)
    if missing:
        raise ValueError(f"{_YAML}: no table for standard(s) {sorted(missing)}")
    for std, table in data.items():
        for dt, thr in table.items():
            for key, val in thr.items():
                # bool is an int subclass; "1e-5" without a dot loads as a str in PyYAML.
                if isinstance(val, bool) or not isinstance(val, (int, float)):
                    raise ValueError(f"{_YAML}: {std}.{dt}.{key} = {val!r} is not a number")
    return data


def _canon(dtype: str) -> str:
    return _COMPUTE_MODES.get(str(dtype)) or dtypes.canonical(dtype)


def thresholds(standard: str, dtype: str) -> dict[str, float]:
    """The threshold dict for (standard, dtype); ValueError naming both if undefined."""
    tables = _tables()
    if standard not in _REGISTRY:
        raise ValueError(f"unknown precision standard {standard!r} (dtype {dtype!r}); "
                         f"known standards: {', '.join(_REGISTRY)}")
    table = tables[standard]
    key = _canon(dtype)
    if key not in table:
        raise ValueError(f"precision standard {standard!r} defines no threshold for dtype "
                         f"{dtype!r}; it covers: {', '.join(table)}")
    return dict(table[key])


# --------------------------------------------------------------------------- verdict

def _fmt(x: Any) -> str:
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
            _REGISTRY[n] = _Standard(fn, headline, limits)
        return fn
    return register


def limits(standard: str) -> tuple[tuple[str, str | None, str], ...]:
    """The thresholded metrics of `standard` (empty for an unknown one)."""
    entry = _REGISTRY.get(standard)
    return entry.limits if entry else ()


@dataclass(frozen=True)
class Verdict:
    passed: bool
    standard: str
    dtype: str
    metrics: dict[str, float]
    thresholds: dict
    worst: dict | None  # flat_index, index, golden, actual, error, metric (+ bits for bit_exact)
    reason: str         # one line; "" when passed

    def summary(self) -> str:
        head = f"{'PASS' if self.passed else 'FAIL'} {self.standard}[{self.dtype}]"
        if self.passed:
            body = " ".join(f"{k.upper() if k in ('mere', 'mare', 'eb') else k}="
                            f"{_fmt(self.metrics[k])}"
                            for k in _REGISTRY[self.standard].headline if k in self.metrics)
            body = f"{body} (n={self.metrics.get('n', 0)})".strip()
        else:
            body = self.reason
        w = self.worst
        if w is not None and not self.passed:
            body += f" at {tuple(w['index'])}: golden={w['golden_str']} actual={w['actual_str']}"
        return f"{head}: {body}"

    def to_dict(self) -> dict:
        d = {"passed": self.passed, "standard": self.standard, "dtype": self.dtype,
             "metrics": self.metrics, "thresholds": self.thresholds, "worst": self.worst,
             "reason": self.reason, "summary": self.summary()}
        return jsonable(d)


# --------------------------------------------------------------------------- loading

def _load(x: Any) -> tuple[np.ndarray, str, np.ndarray | None]:
    """(values, dtype name, raw bits or None). bf16 values are widened to float32 (exact)."""
    torch = sys.modules.get("torch")     # not imported: then `x` cannot be a tensor (reports never import it)
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach().cpu().resolve_conj().resolve_neg()
        name = str(t.dtype).removeprefix("torch.")
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16
            return t.float().numpy(), name, t.view(torch.int16).numpy().view(np.uint16)
        arr = t.numpy()
    else:
        arr = np.asarray(x)
        name = arr.dtype.name
        if name == "bfloat16":  # ml_dtypes arrays
            return arr.astype(np.float32), name, arr.view(np.uint16)
    bits = arr.view(f"u{arr.itemsize}") if arr.dtype.kind == "f" else None
    return arr, name, bits


def _round_to(g: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """float64 golden rounded once (round-to-nearest-even) to `dtype`: (values as float64, bits).

    torch's float64 -> float16/bfloat16 casts go through float32 and so round twice (e.g.
    1 + 2^-8 + 2^-30 -> bf16 gives 1.0, not 1.0078125). numpy's float64 -> float16 rounds
    once; for bfloat16 we round to float32 with round-to-odd first, which makes the second
    rounding exact (float32 keeps >= 2 extra bits).
    """
    dtype = _STORAGE.get(dtype, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype in ("float16", "float32", "float64"):
            r = g.astype(dtype)
            return r.astype(np.float64), r.view(f"u{r.itemsize}")
        f = g.astype(np.float32)
        u = f.view(np.uint32).copy()
        inexact = np.isfinite(g) & (f.astype(np.float64) != g)
        u -= (inexact & (np.abs(f.astype(np.float64)) > np.abs(g))).astype(np.uint32)  # truncate
        u |= inexact.astype(np.uint32)  # ... and make it odd: round-to-odd
    import torch
    t = torch.from_numpy(u.view(np.float32)).to(torch.bfloat16)
    return t.float().numpy().astype(np.float64), t.view(torch.int16).numpy().view(np.uint16)


@dataclass
class _Data:
    shape: tuple[int, ...]
    dtype: str
    g: np.ndarray        # flat golden: float64 (floating dtypes) or int64 (integer data)
    a: np.ndarray        # flat actual, same kind as g
    a_bits: np.ndarray | None
    g_round: np.ndarray | None   # floating dtypes: golden rounded once to the output dtype
    g_bits: np.ndarray | None    # ... and its bits (what bit_exact compares)
    cmp: np.ndarray      # bool: both finite -> enters the numeric metrics
    bad: np.ndarray      # bool: NaN/Inf mismatch -> fails the case


def _special(g: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The NaN/Inf rule, shared by every standard. Returns (cmp, bad, n_equal_special)."""
    both_nan = np.isnan(g) & np.isnan(a)
    same_inf = np.isinf(g) & (g == a)  # same sign: +inf == +inf, -inf == -inf
    special = ~np.isfinite(g) | ~np.isfinite(a)
    equal = both_nan | same_inf
    return ~special, special & ~equal, int(equal.sum())


# --------------------------------------------------------------------------- guards

def _lt(x: float, lim: float) -> bool:
    return not math.isnan(x) and x < lim


def _le(x: float, lim: float) -> bool:
    return not math.isnan(x) and x <= lim


def _ge(x: float, lim: float) -> bool:
    return not math.isnan(x) and x >= lim


def _max(x: np.ndarray) -> float:
    # No element compared means no error observed (an explicit 0, never NaN from max([])).
    return float(x.max()) if x.size else 0.0


def _argmax_full(d: _Data, per_elem: np.ndarray) -> int | None:
    """Flat index (into the whole array) of the largest per-element error over d.cmp."""
    if per_elem.size == 0:
        return None
    return int(np.flatnonzero(d.cmp)[int(np.argmax(per_elem))])


# --------------------------------------------------------------------------- standards
# Each returns (numeric_pass, metrics, worst flat index or None, metric name of worst, reasons).

@_standard("mere_mare", headline=("mere", "mare"), limits=(("mere", "mere", "<"), ("mare", "mare", "<")))
def _mere_mare(d: _Data, thr: dict):
    g, a = d.g[d.cmp], d.a[d.cmp]
    re = np.abs(a - g) / (np.abs(g) + _RE_EPS)
    mere = float(re.mean()) if re.size else 0.0
    mare = _max(re)
    reasons = []
    if not _lt(mere, thr["mere"]):  # strict '<' per the standard
        reasons.append(f"MERE={_fmt(mere)} >= {_fmt(thr['mere'])}")
    if not _lt(mare, thr["mare"]):
        reasons.append(f"MARE={_fmt(mare)} >= {_fmt(thr['mare'])}")
    return not reasons, {"mere": mere, "mare": mare}, _argmax_full(d, re), "RE", reasons


@_standard("single_bm_high_precision", "single_bm_high_performance",
           limits=(("abs_eb", "eb", "<="), ("max_abs_err_small", "error", "<="), ("max_rel_err_large", "error", "<=")),
           headline=("eb", "max_abs_err_small", "max_rel_err_large"))
def _single_bm(d: _Data, thr: dict):
    g, a = d.g[d.cmp], d.a[d.cmp]
    small = np.abs(g) < 1
    err = a - g  # signed on purpose: EB measures bias, so +e and -e cancel
    # absolute error where |g| < 1, relative error elsewhere (|g| >= 1, so no division by 0)
    e = np.where(small, err, err / np.where(small, 1.0, np.abs(g)))
    eb = float(e.mean()) if e.size else 0.0
    max_abs = _max(np.abs(e[small]))
    max_rel = _max(np.abs(e[~small]))
    reasons = []
    # The spec writes "EB <= eb_thd"; a bias is a bias in either direction, so test |EB|.
    if not _le(abs(eb), thr["eb"]):
        reasons.append(f"|EB|={_fmt(abs(eb))} > {_fmt(thr['eb'])}")
    if not _le(max_abs, thr["error"]):
        reasons.append(f"max abs err (|g|<1)={_fmt(max_abs)} > {_fmt(thr['error'])}")
    if not _le(max_rel, thr["error"]):
        reasons.append(f"max rel err (|g|>=1)={_fmt(max_rel)} > {_fmt(thr['error'])}")
    m = {"eb": eb, "abs_eb": abs(eb), "max_abs_err_small": max_abs, "max_rel_err_large": max_rel,
         "n_small": int(small.sum()), "n_large": int((~small).sum())}
    # worst: the element with the largest error in the unit it is judged in (abs or rel)
    return not reasons, m, _argmax_full(d, np.abs(e)), "abs_or_rel_err", reasons


def _tolerance(d: _Data, thr: dict):
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
def _ttk_mixed(d: _Data, thr: dict):
    diff, ok, ratio = _tolerance(d, thr)
    n = ok.size
    matched_ratio = float(ok.sum()) / n if n else 1.0
    max_abs = _max(diff)
    reasons = []
    if not _ge(matched_ratio, thr["min_matched_ratio"]):
        reasons.append(f"matched ratio={_fmt(matched_ratio)} < {_fmt(thr['min_matched_ratio'])}")
    if not _le(max_abs, thr["max_abs_err"]):
        reasons.append(f"max abs err={_fmt(max_abs)} > {_fmt(thr['max_abs_err'])}")
    m = {"matched_ratio": matched_ratio, "mismatches": int(n - ok.sum()), "max_abs_err": max_abs,
         "max_tol_ratio": _max(ratio)}
    return not reasons, m, _argmax_full(d, ratio), "err/tol", reasons


@_standard("allclose", headline=("mismatches", "max_abs_err"), limits=(("mismatches", None, "<="),))
def _allclose(d: _Data, thr: dict):
    diff, ok, ratio = _tolerance(d, thr)
    bad = int(ok.size - ok.sum())
    what = "differ (integers must match exactly)" if d.g.dtype.kind in "iub" \
        else f"outside atol+rtol*|g| (max abs err={_fmt(_max(diff))})"
    reasons = [f"{bad} of {ok.size} elements {what}"] if bad else []
    m = {"mismatches": bad, "max_abs_err": _max(diff), "max_tol_ratio": _max(ratio)}
    return not reasons, m, _argmax_full(d, ratio), "err/tol", reasons


@_standard("bit_exact", headline=("mismatches",), limits=(("mismatches", "max_mismatches", "<="),))
def _bit_exact(d: _Data, thr: dict):
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
    m = {"mismatches": int(bad.size), "max_abs_err": _max(finite_diff)}
    return not reasons, m, (int(bad[0]) if bad.size else None), "first_bit_mismatch", reasons


STANDARDS: tuple[str, ...] = tuple(_REGISTRY)


# --------------------------------------------------------------------------- entry point

def _value_str(x: Any, dtype: str | None) -> str:
    """Shortest faithful text for a value; actual values print in their own dtype."""
    if isinstance(x, int):
        return str(x)
    if dtype in ("float16", "float32"):
        return str(getattr(np, dtype)(x))
    if dtype == "bfloat16":
        return f"{x:.4g}"
    return f"{x:.7g}"


def _worst(d: _Data, i: int, metric: str, standard: str) -> dict:
    g, a = d.g[i].item(), d.a[i].item()
    if isinstance(g, float) and isinstance(a, float):
        error = abs(a - g) if not (math.isnan(a) or math.isnan(g)) else math.nan
    else:
        error = abs(float(a) - float(g))
    w = {"flat_index": i, "index": tuple(int(k) for k in np.unravel_index(i, d.shape)),
         "golden": g, "actual": a, "error": error, "metric": metric,
         "golden_str": _value_str(g, None),
         "actual_str": _value_str(a, _STORAGE.get(d.dtype, d.dtype))}
    if standard == "bit_exact" and d.a_bits is not None and d.g_bits is not None:
        r = float(d.g_round[i])
        w.update(golden_rounded=r, golden_bits=hex(int(d.g_bits[i])),
                 actual_bits=hex(int(d.a_bits[i])),
                 golden_str=_value_str(r, _STORAGE.get(d.dtype, d.dtype)))
    return w


def _fail(standard: str, dtype: str, thr: dict, reason: str, **metrics) -> Verdict:
    return Verdict(False, standard, dtype, dict(metrics), thr, None, reason)


def compare(standard: str, golden: Any, actual: Any, dtype: str) -> Verdict:
    """Judge `actual` against `golden` under `standard` for output dtype `dtype`."""
    thr = thresholds(standard, dtype)  # ValueError for unknown standard / undefined dtype
    dtype = _canon(dtype)
    g_arr, _, _ = _load(golden)
    a_arr, a_name, a_bits = _load(actual)
    if g_arr.shape != a_arr.shape:
        return _fail(standard, dtype, thr, f"shape mismatch: golden {tuple(g_arr.shape)} vs "
                     f"actual {tuple(a_arr.shape)}", n=int(g_arr.size))
    want = _STORAGE.get(dtype, dtype)
    if a_name != want:  # the output dtype is part of the contract; bits mean nothing otherwise
        return _fail(standard, dtype, thr, f"actual dtype {a_name} != case dtype {want}",
                     n=int(a_arr.size))

    shape = tuple(a_arr.shape)
    # an integer output is compared exactly in int64, whatever the golden's type: through float64
    # an int64 of 2**60 + 1 would equal a golden of 2**60
    integer = a_arr.dtype.kind in "iub"
    if integer and g_arr.dtype.kind not in "iub":
        whole = np.isfinite(g_arr) & (np.asarray(g_arr, np.float64) == np.round(g_arr))
        if not whole.all():
            return _fail(standard, dtype, thr, f"the golden of an {dtype} output holds "
                         f"{int((~whole).sum())} value(s) that are not whole numbers", n=int(a_arr.size))
    kind = np.int64 if integer else np.float64
    g = g_arr.reshape(-1).astype(kind)
    a = a_arr.reshape(-1).astype(kind)
    bits = a_bits.reshape(-1) if a_bits is not None else None
    overflow, g_round, g_bits = 0, None, None
    if integer:
        cmp, bad, n_eq = np.ones(g.size, bool), np.zeros(g.size, bool), 0
    else:
        if dtype in _FLOATS:
            # A finite golden beyond the dtype's range has Inf as its correctly rounded result:
            # judge Inf/NaN positions against the rounded golden, metrics against the exact one.
            g_round, g_bits = _round_to(g, dtype)
            over = np.isinf(g_round) & np.isfinite(g)
            overflow = int(over.sum())
            g_cls = np.where(over, g_round, g)
        else:
            g_cls = g
        cmp, bad, n_eq = _special(g_cls, a)
    d = _Data(shape, dtype, g, a, bits, g_round, g_bits, cmp, bad)

    base = {"n": int(g.size), "n_compared": int(cmp.sum()), "n_nan_inf_equal": n_eq,
            "nan_inf_mismatches": int(bad.sum()), "golden_overflow": overflow}
    base.update({f"threshold_{k}": v for k, v in thr.items()})
    if g.size == 0:  # empty vs empty (same shape) is a legitimate, passing case
        return Verdict(True, standard, dtype, base, thr, None, "")

    ok, metrics, wi, wmetric, reasons = _REGISTRY[standard].judge(d, thr)
    metrics = {**base, **metrics}
    n_bad = base["nan_inf_mismatches"]
    if n_bad:  # fails regardless of the numeric metrics; worst = first such position
        reasons.insert(0, f"{n_bad} NaN/Inf mismatch{'es' if n_bad > 1 else ''}")
        wi, wmetric = int(np.flatnonzero(bad)[0]), "nan_inf_mismatch"
    worst = _worst(d, wi, wmetric, standard) if wi is not None else None
    return Verdict(ok and not n_bad, standard, dtype, metrics, thr, worst, "; ".join(reasons))
