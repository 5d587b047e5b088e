"""Distance in units in the last place between two arrays of one dtype: how far apart two runs'
outputs are when their digests differ (harness/reporting/changes.py), counted as the number of
representable values between them, so 1 is a last-bit change whatever the magnitude."""
from __future__ import annotations

import numpy as np

from . import dtypes


def _float(dtype: str) -> dtypes.DType | None:
    """The DType of a floating dtype the harness computes with, else None."""
    d = dtypes.BY_NAME.get(dtype)
    return d if d is not None and d.is_float and d.torch_name else None


def _ordered(bits: np.ndarray, width: int) -> np.ndarray:
    """Float bit patterns mapped to integers in the floats' order (-0.0 and +0.0 both 0)."""
    sign = np.uint64(1) << np.uint64(width - 1)
    b = bits.astype(np.uint64)
    magnitude = (b & (sign - np.uint64(1))).astype(np.int64)
    return np.where((b & sign) != 0, -magnitude, magnitude)


def _bits(a: np.ndarray, d: dtypes.DType) -> tuple[np.ndarray, int]:
    if not d.numpy_name:      # numpy lacks it (bfloat16): stored widened to float32, exactly (judge/arrays.py)
        return (np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) >> np.uint32(32 - d.bits)), d.bits
    return np.ascontiguousarray(a, dtype=np.dtype(d.numpy_name)).view(f"u{d.itemsize}"), d.bits


def largest(before: np.ndarray, now: np.ndarray, dtype: str) -> dict | None:
    """{"ulps", "index", "before", "now"} of the element farthest apart (a NaN against a number is
    infinitely far; two NaNs are equal), or None when the shapes differ. Integer dtypes: the
    difference itself."""
    if before.shape != now.shape:
        return None
    if before.size == 0:
        return {"ulps": 0, "index": None, "before": None, "now": None}
    d = _float(dtype)
    if d is not None:
        (b, width), (n, _) = _bits(before, d), _bits(now, d)
        dist = np.abs(_ordered(b, width) - _ordered(n, width)).astype(np.float64)
        nan_b, nan_n = np.isnan(before.astype(np.float64)), np.isnan(now.astype(np.float64))
        dist[nan_b & nan_n] = 0
        dist[nan_b ^ nan_n] = np.inf
    else:
        dist = np.abs(before.astype(np.float64) - now.astype(np.float64))
    flat = int(np.argmax(dist))
    index = tuple(int(i) for i in np.unravel_index(flat, before.shape))
    ulps = float(dist.reshape(-1)[flat])
    return {"ulps": int(ulps) if np.isfinite(ulps) else "inf (NaN against a number)", "index": list(index),
            "before": before[index].item(), "now": now[index].item()}
