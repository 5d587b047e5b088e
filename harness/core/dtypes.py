"""The dtypes of platforms/platform.yaml, looked up the ways the harness needs: by case-file name
or ATK alias, and to and from torch.

The facts (ACL enum values, names, widths, kinds, storage) live in the platform file only; this
module adds the one thing the platform layer must not do, import torch, and does it lazily: the
pytest process of a case run reads the table but never computes (its case workers do).
"""
from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

from platforms import DTYPE as BY_NAME, DTYPES as ALL, DType  # noqa: F401 (the public names)

if TYPE_CHECKING:
    import torch

_BY_ALIAS = {a: d for d in ALL for a in (d.name, *d.aliases)}


def lookup(name: str) -> DType:
    """The DType of a case-file name or alias; KeyError naming the valid ones."""
    try:
        return _BY_ALIAS[str(name)]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r} (known: {', '.join(sorted(_BY_ALIAS))})") from None


def canonical(name: str) -> str:
    """'fp16' -> 'float16'; a name the table does not know is returned unchanged."""
    d = _BY_ALIAS.get(str(name))
    return d.name if d else str(name)


def torch_or_none(d: DType | str) -> "torch.dtype | None":
    """The torch dtype of a DType (or name), None where the harness cannot compute with it."""
    d = lookup(d) if isinstance(d, str) else d
    return getattr(importlib.import_module("torch"), d.torch_name) if d.torch_name else None


def from_torch(dtype: "torch.dtype") -> DType:
    try:
        return _by_torch()[dtype]
    except KeyError:
        raise KeyError(f"torch dtype {dtype} has no ACL equivalent in this suite") from None


@functools.lru_cache(maxsize=1)
def _by_torch() -> dict:
    return {torch_or_none(d): d for d in ALL if d.torch_name}


def torch_of(name: str) -> "torch.dtype":
    """The torch dtype of a case-file name; ValueError where the harness cannot compute with it."""
    d = lookup(name)
    if not d.torch_name:
        raise ValueError(f"dtype {d.name} has no torch equivalent: it can only be passed to the library")
    return torch_or_none(d)
