"""Case ids: short, generic and stable, so that an id is its own repro selector."""
from __future__ import annotations

from ..core.text import Spelling, spelled

_ID_WORDS = Spelling(null="NULL", true="1", false="0", empty="-")


def _abbrev(name: str) -> str:
    """kernelSize -> ks, ceilMode -> cm, stride -> s."""
    return (name[0] + "".join(c for c in name[1:] if c.isupper())).lower()


def attrs_id(attrs: dict) -> str:
    return "_".join(f"{_abbrev(k)}{spelled(v, _ID_WORDS)}" for k, v in attrs.items())


def shape_id(shape) -> str:
    return "x".join(str(s) for s in shape) if shape else "scalar"


def per_tensor_id(values: dict) -> str:
    """'NCHW' when every tensor agrees, else 'gradOutput.NCHW+self.ND+...'."""
    labels = sorted(set(values.values()))
    if len(labels) == 1:
        return labels[0]
    return "+".join(f"{k}.{v}" for k, v in sorted(values.items()))


def matrix_case_name(group: str, dtype, index_dtype, shape, attrs: dict,
                     formats: dict, layouts: dict, values: str) -> str:
    """dtype, index_dtype: DTypes (or their names), index_dtype None for an op without indices."""
    parts = [f"{dtype}" + (f"-{index_dtype}" if index_dtype else ""), shape_id(shape), attrs_id(attrs),
             per_tensor_id(formats), per_tensor_id(layouts), values]
    return f"{group}[{'-'.join(parts)}]"
