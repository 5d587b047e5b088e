"""The argument list a backend receives: one Arg per phase-1 parameter, in signature order."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Arg:
    """One phase-1 parameter.

    kind: 'tensor' (value: TensorArg, or None for a NULL pointer), 'int_array'
    (list[int], or None for NULL), 'bool', 'int64', 'int8', 'double' (by value), or
    'out_pointer' (after the signature: phase 1's workspaceSize or executor, value None = pass NULL).
    """
    name: str
    kind: str
    value: Any
    dtype: str | None = None      # tensors: case-file dtype name
    is_output: bool = False


def attrs_of(args: list[Arg]) -> dict:
    """The non-tensor arguments by name: what both backends compute attributes from."""
    return {a.name: a.value for a in args if a.kind not in ("tensor", "out_pointer")}
