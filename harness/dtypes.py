"""Data-type names used in case files, and their torch / ACL equivalents.

Case files name dtypes the way torch does (float16, bfloat16, ...); ATK's short
names (fp16, bf16, ...) are accepted as aliases so ATK lists can be pasted in.
The ACL enum values are those of acl_base_rt.h (spec acl_abi.md section 3.1).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DType:
    name: str
    torch: torch.dtype
    acl: int            # aclDataType enum value
    ge_name: str        # the name CANN error texts use (DT_FLOAT, ...)

    @property
    def is_floating(self) -> bool:
        return self.torch.is_floating_point

    @property
    def itemsize(self) -> int:
        return torch.empty((), dtype=self.torch).element_size()


_ALL = (
    DType("float32", torch.float32, 0, "DT_FLOAT"),
    DType("float16", torch.float16, 1, "DT_FLOAT16"),
    DType("int8", torch.int8, 2, "DT_INT8"),
    DType("int32", torch.int32, 3, "DT_INT32"),
    DType("uint8", torch.uint8, 4, "DT_UINT8"),
    DType("int16", torch.int16, 6, "DT_INT16"),
    DType("int64", torch.int64, 9, "DT_INT64"),
    DType("float64", torch.float64, 11, "DT_DOUBLE"),
    DType("bool", torch.bool, 12, "DT_BOOL"),
    DType("bfloat16", torch.bfloat16, 27, "DT_BFLOAT16"),
)

_ALIASES = {
    "fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16",
    "bf16": "bfloat16", "fp64": "float64", "double": "float64",
}

BY_NAME = {d.name: d for d in _ALL}


def lookup(name: str) -> DType:
    """Return the DType for a case-file name; raise KeyError listing valid names."""
    key = _ALIASES.get(str(name), str(name))
    try:
        return BY_NAME[key]
    except KeyError:
        valid = ", ".join(sorted(BY_NAME) + sorted(_ALIASES))
        raise KeyError(f"unknown dtype {name!r} (known: {valid})") from None


def from_torch(dtype: torch.dtype) -> DType:
    for d in _ALL:
        if d.torch == dtype:
            return d
    raise KeyError(f"torch dtype {dtype} has no ACL equivalent in this suite")
