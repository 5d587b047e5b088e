"""The one table of data types: case-file names, aliases, ACL enum values, torch dtypes.

Every other place (the ctypes ABI tables, the comparators, the case-file loader) reads
this table; nothing else spells an enum value. Values are those of acl_base_rt.h (spec
acl_abi.md section 3.1). Case files name dtypes the way torch does (float16,
bfloat16, ...); ATK's short names (fp16, bf16, ...) are aliases so ATK lists can be pasted
in. A dtype with no torch equivalent (complex32, uint1, ...) can still be named in an
invalid scenario: it is passed to the library, never computed with.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class DType:
    name: str                   # the case-file name
    acl_name: str               # the aclDataType constant
    acl: int                    # its enum value
    ge_name: str                # the name aclnn error texts print (acl_abi.md 3.1 note)
    itemsize: int               # bytes per element (1 for sub-byte types, 0: not a tensor dtype)
    torch_name: str | None      # the torch dtype's attribute name; None: the harness cannot compute with it
    aliases: tuple[str, ...] = ()

    @functools.cached_property
    def torch(self) -> "torch.dtype | None":
        """The torch dtype. torch is imported on first use, not with this table: the pytest process
        of a case run reads the table but never computes (its case workers do)."""
        return getattr(importlib.import_module("torch"), self.torch_name) if self.torch_name else None


ALL: tuple[DType, ...] = (
    DType("undefined", "ACL_DT_UNDEFINED", -1, "DT_UNDEFINED", 0, None),
    DType("float32", "ACL_FLOAT", 0, "DT_FLOAT", 4, "float32", ("fp32", "float")),
    DType("float16", "ACL_FLOAT16", 1, "DT_FLOAT16", 2, "float16", ("fp16", "half")),
    DType("int8", "ACL_INT8", 2, "DT_INT8", 1, "int8"),
    DType("int32", "ACL_INT32", 3, "DT_INT32", 4, "int32"),
    DType("uint8", "ACL_UINT8", 4, "DT_UINT8", 1, "uint8"),
    DType("int16", "ACL_INT16", 6, "DT_INT16", 2, "int16"),
    DType("uint16", "ACL_UINT16", 7, "DT_UINT16", 2, None),
    DType("uint32", "ACL_UINT32", 8, "DT_UINT32", 4, None),
    DType("int64", "ACL_INT64", 9, "DT_INT64", 8, "int64"),
    DType("uint64", "ACL_UINT64", 10, "DT_UINT64", 8, None),
    DType("float64", "ACL_DOUBLE", 11, "DT_DOUBLE", 8, "float64", ("fp64", "double")),
    DType("bool", "ACL_BOOL", 12, "DT_BOOL", 1, "bool"),
    DType("string", "ACL_STRING", 13, "DT_STRING", 0, None),
    DType("complex64", "ACL_COMPLEX64", 16, "DT_COMPLEX64", 8, "complex64"),
    DType("complex128", "ACL_COMPLEX128", 17, "DT_COMPLEX128", 16, "complex128"),
    DType("bfloat16", "ACL_BF16", 27, "DT_BFLOAT16", 2, "bfloat16", ("bf16",)),
    DType("int4", "ACL_INT4", 29, "DT_INT4", 1, None),
    DType("uint1", "ACL_UINT1", 30, "DT_UINT1", 1, None),
    DType("complex32", "ACL_COMPLEX32", 33, "DT_COMPLEX32", 4, None),
    DType("hifloat8", "ACL_HIFLOAT8", 34, "DT_HIFLOAT8", 1, None),
    DType("float8_e5m2", "ACL_FLOAT8_E5M2", 35, "DT_FLOAT8_E5M2", 1, None),
    DType("float8_e4m3fn", "ACL_FLOAT8_E4M3FN", 36, "DT_FLOAT8_E4M3FN", 1, None),
    DType("float8_e8m0", "ACL_FLOAT8_E8M0", 37, "DT_FLOAT8_E8M0", 1, None),
    DType("float6_e3m2", "ACL_FLOAT6_E3M2", 38, "DT_FLOAT6_E3M2", 1, None),
    DType("float6_e2m3", "ACL_FLOAT6_E2M3", 39, "DT_FLOAT6_E2M3", 1, None),
    DType("float4_e2m1", "ACL_FLOAT4_E2M1", 40, "DT_FLOAT4_E2M1", 1, None),
    DType("float4_e1m2", "ACL_FLOAT4_E1M2", 41, "DT_FLOAT4_E1M2", 1, None),
)

BY_NAME = {d.name: d for d in ALL}
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


def from_torch(dtype: "torch.dtype") -> DType:
    try:
        return _by_torch()[dtype]
    except KeyError:
        raise KeyError(f"torch dtype {dtype} has no ACL equivalent in this suite") from None


@functools.lru_cache(maxsize=1)
def _by_torch() -> dict:
    return {d.torch: d for d in ALL if d.torch_name}


def torch_of(name: str) -> "torch.dtype":
    """The torch dtype of a case-file name; ValueError where the harness cannot compute with it."""
    d = lookup(name)
    if d.torch is None:
        raise ValueError(f"dtype {d.name} has no torch equivalent: it can only be passed to the library")
    return d.torch
