"""Turn a Case into concrete inputs: golden `prepare`, invalid-case mutations,
and the ordered argument list (with poisoned output buffers) for a backend."""
from __future__ import annotations

from types import SimpleNamespace

import torch

import golden as golden_pkg

from .. import dtypes
from ..model import Case
from . import layout, values
from .args import Arg


def params_of(case: Case) -> SimpleNamespace:
    return SimpleNamespace(shape=case.shape, dtype=dtypes.torch_of(case.dtype),
                           index_dtype=dtypes.torch_of(case.index_dtype) if case.index_dtype else None,
                           attrs=dict(case.attrs))


def prepare(case: Case) -> dict[str, torch.Tensor]:
    """Logical input tensors of a case, before any invalid-scenario mutation."""
    module = golden_pkg.load(case.op.golden)
    return module.prepare(values.make_draw(case.values, case.id), params_of(case))


def mutate(case: Case, prepared: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inputs an invalid scenario passes: its tensor changes applied to a copy."""
    inputs = dict(prepared)
    if case.mutation:
        for name, change in case.mutation.tensors.items():
            if name not in inputs:     # an output: changed when it is allocated
                continue
            t = inputs[name]
            if "shape" in change:
                t = values.draw_tensor(case.values, case.id, f"{name}#mutated", change["shape"], t.dtype)
            if "dtype" in change:
                t = t.to(dtypes.torch_of(change["dtype"]))
            inputs[name] = t
    return inputs


def poison(dtype: torch.dtype):
    """Fill value for output buffers: anything the library never writes fails comparison."""
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return True
    info = torch.iinfo(dtype)
    return info.min if info.min < 0 else info.max


def build_args(case: Case, inputs: dict[str, torch.Tensor], output_shape: tuple[int, ...]) -> list[Arg]:
    """The phase-1 argument list in signature order.

    `output_shape` is the output's shape in the valid configuration (the shape of
    `output_like` before mutation), so a scenario that changes only an input's
    shape really does make the two disagree.
    """
    op = case.op
    attrs = case.call_attrs
    changes = case.mutation.tensors if case.mutation else {}
    null = case.mutation.null if case.mutation else None
    args = []
    for p in op.params:
        if p.type != "tensor":
            args.append(Arg(p.name, p.type, None if p.name == null else attrs[p.name]))
            continue
        change = changes.get(p.name, {})
        fmt = change.get("format", case.formats[p.name])
        lay = change.get("layout", case.layouts[p.name])
        if p.output:
            dt = change.get("dtype", case.dtype_of(p))
            shape = change.get("shape", tuple(output_shape))
            tdt = dtypes.torch_of(dt)
            logical = torch.full(tuple(shape), poison(tdt), dtype=tdt)
        else:
            logical = inputs[p.name]
            dt = dtypes.from_torch(logical.dtype).name
        arg = layout.materialize(p.name, logical, fmt, lay, fmt in op.channel_last_formats, p.output)
        if p.output:
            arg.storage.fill_(poison(logical.dtype))   # the gaps of strided layouts too
        args.append(Arg(p.name, "tensor", None if p.name == null else arg, dt, p.output))
    return args
