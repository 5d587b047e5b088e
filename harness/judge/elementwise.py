"""The element level of every comparison: the golden and the actual output as flat values, the
golden rounded once to the output dtype, the NaN/Inf rule, and the guards every pass test goes
through (a NaN metric is never a pass). harness/judge/standards.py judges with them.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

# hifloat32 is a compute mode whose results are stored as float32.
STORAGE = {"hifloat32": "float32"}


def load(x: Any) -> tuple[np.ndarray, str, np.ndarray | None]:
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


def round_to(g: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """float64 golden rounded once (round-to-nearest-even) to `dtype`: (values as float64, bits).

    torch's float64 -> float16/bfloat16 casts go through float32 and so round twice (e.g.
    1 + 2^-8 + 2^-30 -> bf16 gives 1.0, not 1.0078125). numpy's float64 -> float16 rounds
    once; for bfloat16 we round to float32 with round-to-odd first, which makes the second
    rounding exact (float32 keeps >= 2 extra bits).
    """
    dtype = STORAGE.get(str(dtype), str(dtype))
    if dtype not in ("float16", "float32", "float64", "bfloat16"):
        # never a silent bfloat16 rounding of another format (a float8 has neither its mantissa
        # nor its range): a dtype added to the platform to compute with needs its rounding here
        raise ValueError(f"no round-to-nearest-even is known for dtype {dtype!r} "
                         "(harness/judge/elementwise.py round_to: float16, float32, float64, bfloat16)")
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
class Data:
    shape: tuple[int, ...]
    dtype: str
    g: np.ndarray        # flat golden: float64 (floating dtypes) or int64 (integer data)
    a: np.ndarray        # flat actual, same kind as g
    a_bits: np.ndarray | None
    g_round: np.ndarray | None   # floating dtypes: golden rounded once to the output dtype
    g_bits: np.ndarray | None    # ... and its bits (what bit_exact compares)
    cmp: np.ndarray      # bool: both finite -> enters the numeric metrics
    bad: np.ndarray      # bool: NaN/Inf mismatch -> fails the case


def special(g: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The NaN/Inf rule, shared by every standard. Returns (cmp, bad, n_equal_special)."""
    both_nan = np.isnan(g) & np.isnan(a)
    same_inf = np.isinf(g) & (g == a)  # same sign: +inf == +inf, -inf == -inf
    special = ~np.isfinite(g) | ~np.isfinite(a)
    equal = both_nan | same_inf
    return ~special, special & ~equal, int(equal.sum())


def lt(x: float, lim: float) -> bool:
    return not math.isnan(x) and x < lim


def le(x: float, lim: float) -> bool:
    return not math.isnan(x) and x <= lim


def ge(x: float, lim: float) -> bool:
    return not math.isnan(x) and x >= lim


def largest(x: np.ndarray) -> float:
    # No element compared means no error observed (an explicit 0, never NaN from max([])).
    return float(x.max()) if x.size else 0.0


def argmax_full(d: Data, per_elem: np.ndarray) -> int | None:
    """Flat index (into the whole array) of the largest per-element error over d.cmp."""
    if per_elem.size == 0:
        return None
    return int(np.flatnonzero(d.cmp)[int(np.argmax(per_elem))])


