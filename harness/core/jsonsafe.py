"""The one JSON encoding of results: strict JSON, whatever the floats hold.

NaN -> null, +Inf -> "inf", -Inf -> "-inf" (json.dumps would write bare NaN/Infinity,
which strict parsers reject). A metric that is NaN never passes (compare.py), so null
losing the difference between "NaN" and "not measured" costs no verdict.
numpy scalars become Python numbers; tuples become lists; keys become strings; a platform
record (DType, Family) its name.
"""
from __future__ import annotations

import json
import math
from typing import Any

from platforms import DType, Family

_PLAIN = (str, int, bool, type(None))


def jsonable(x: Any) -> Any:
    t = type(x)                     # the common exact types first: a record holds thousands of them
    if t in _PLAIN:
        return x
    if t is float:
        return x if math.isfinite(x) else _non_finite(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if t is DType or t is Family:
        return x.name
    if type(x).__module__ == "numpy" and hasattr(x, "item"):   # a numpy scalar; numpy itself is not
        x = x.item()                                            # imported here (the pytest process needs none)
    if isinstance(x, float) and not math.isfinite(x):
        return _non_finite(x)
    return x


def _non_finite(x: float):
    return None if math.isnan(x) else ("inf" if x > 0 else "-inf")


def dumps(x: Any, **kw) -> str:
    """json.dumps of jsonable(x). Most records are JSON-safe already (the comparators make their
    metrics so), and the C encoder refuses exactly what jsonable would change (non-finite floats,
    numpy scalars), so it is tried first: a run writes every record three times."""
    try:
        return json.dumps(x, allow_nan=False, **kw)
    except (ValueError, TypeError):
        return json.dumps(jsonable(x), **kw)
