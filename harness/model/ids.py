"""Case ids: short, generic and stable, so that an id is its own repro selector."""
from __future__ import annotations


def _abbrev(name: str) -> str:
    """kernelSize -> ks, ceilMode -> cm, stride -> s."""
    return (name[0] + "".join(c for c in name[1:] if c.isupper())).lower()


def _fmt_value(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (list, tuple)):
        return "x".join(_fmt_value(x) for x in v) if v else "-"
    return str(v)


def attrs_id(attrs: dict) -> str:
    return "_".join(f"{_abbrev(k)}{_fmt_value(v)}" for k, v in attrs.items())


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
