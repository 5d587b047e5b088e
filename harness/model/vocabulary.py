"""Names a case file may use that are defined by higher layers.

The loader validates against a Vocabulary handed to it (built by
harness.operators.vocabulary()), so the case model never imports the goldens, the
comparators or the backends.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


def _any_dtype(standard: str, dtype: str) -> str | None:
    return None


@dataclass(frozen=True)
class Vocabulary:
    goldens: tuple[str, ...]
    standards: tuple[str, ...]
    backends: tuple[str, ...]
    # error text when `standard` defines no thresholds for `dtype`, else None
    standard_gap: Callable[[str, str], str | None] = _any_dtype
