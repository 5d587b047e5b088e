"""Comparators: device result vs golden under one named precision standard.

The rules are those of /work/shared/spec/README.md, "Precision standards (exact published
numbers)"; every threshold comes from harness/judge/standards.yaml. Entry points:

    thresholds(standard, dtype) -> dict     # validates a case up front (ValueError if undefined)
    compare(standard, golden, actual, dtype) -> Verdict

Shared conventions (one place each):
- `elementwise.load` turns numpy arrays / torch tensors (bfloat16 included) into flat float64 values
  (int64 for integer data) plus the raw bits of floating `actual`.
- `elementwise.special` applies the NaN/Inf rule: same-position NaN, or same-sign Inf, counts as
  equal and is left out of the numeric metrics; any other NaN/Inf disagreement fails the case.
- Every pass test goes through `elementwise.lt/le/ge`, which treat a NaN metric as a failure.
- Each standard is one judge in `standards.py` with its thresholds in standards.yaml.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..core import dtypes
from ..core.jsonsafe import jsonable
from .elementwise import STORAGE as _STORAGE, Data as _Data, load as _load, round_to as _round_to, special as _special
from .standards import REGISTRY as _REGISTRY, STANDARDS, fmt as _fmt, headline, limits  # noqa: F401 (the public names)

_YAML = Path(__file__).with_name("standards.yaml")
# hifloat32 is a compute mode, not an aclDataType: the one name the dtype table lacks
_COMPUTE_MODES = {"hf32": "hifloat32"}
# the row of every integer dtype (the spec states integer outputs exact under any dtype width)
INTEGERS = "integers"


# --------------------------------------------------------------------------- thresholds

@functools.lru_cache(maxsize=1)
def _tables() -> dict[str, dict[str, dict[str, float]]]:
    with open(_YAML, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    missing = set(_REGISTRY) - set(data)
    if missing:
        raise ValueError(f"{_YAML}: no table for standard(s) {sorted(missing)}")
    known = {d.name for d in dtypes.ALL} | set(_COMPUTE_MODES.values()) | {INTEGERS}
    for std, table in data.items():
        for dt, thr in table.items():
            if dt not in known:
                raise ValueError(f"{_YAML}: {std}.{dt}: not a dtype's name, a compute mode or {INTEGERS!r}")
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
        raise ValueError(f"unknown precision standard {standard!r} (dtype {str(dtype)!r}); "
                         f"known standards: {', '.join(_REGISTRY)}")
    table = tables[standard]
    key = _canon(dtype)
    if key not in table and INTEGERS in table and key in dtypes.BY_NAME and dtypes.BY_NAME[key].is_integer:
        key = INTEGERS
    if key not in table:
        raise ValueError(f"precision standard {standard!r} defines no threshold for dtype "
                         f"{str(dtype)!r}; it covers: {', '.join(table)}")
    return dict(table[key])


# --------------------------------------------------------------------------- verdict

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
        if dtype in _COMPUTE_MODES.values() or dtypes.lookup(dtype).is_float:
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
