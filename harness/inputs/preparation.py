"""Turn a Case into concrete inputs: golden `prepare`, invalid-case mutations,
and the ordered argument list (with poisoned output buffers) for a backend."""
from __future__ import annotations

from types import SimpleNamespace

import torch

import golden as golden_pkg

from ..core import dtypes
from ..model import Case
from ..model.spec import OUT_POINTERS
from . import guard, layout, values
from .args import Arg


def params_of(case: Case) -> SimpleNamespace:
    return SimpleNamespace(shape=case.shape, dtype=dtypes.torch_of(case.dtype),
                           index_dtype=dtypes.torch_of(case.index_dtype) if case.index_dtype else None,
                           attrs=dict(case.attrs))


def prepare(case: Case) -> dict[str, torch.Tensor]:
    """Logical input tensors of a case, before any invalid-scenario mutation."""
    draw = values.make_draw(case.values, case.id)
    if case.drawn_shapes is not None:       # every input used as drawn (e.g. ATK random indices)
        return {p.name: draw(p.name, case.drawn_shapes[p.name], dtypes.torch_of(case.dtype_of(p))).contiguous()
                for p in case.op.tensor_params if not p.output}
    return golden_pkg.load(case.op.golden).prepare(draw, params_of(case))


def mutate(case: Case, prepared: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inputs an invalid scenario passes: its tensor changes applied to a copy."""
    inputs = dict(prepared)
    if case.mutation:
        for name, change in case.mutation.tensors.items():
            if name not in inputs:     # an output: changed when it is allocated
                continue
            t = inputs[name]
            shape = tuple(change.get("shape", t.shape))
            dt = change.get("dtype", dtypes.from_torch(t.dtype).name)
            if layout.Unbacked.needed(shape, dt):
                inputs[name] = layout.Unbacked(shape, dt)     # phase 1 only: no memory behind it
                continue
            if "shape" in change:
                t = values.draw_tensor(case.values, case.id, f"{name}#mutated", change["shape"], t.dtype)
            if "dtype" in change:
                t = t.to(dtypes.torch_of(change["dtype"]))
            inputs[name] = t
    return inputs


# Guard elements after every output view's last element: a kernel that stores a whole block
# (or tile) past the tail of the output changes them, contiguous outputs included.
OUTPUT_GUARD = 64


def guard_pattern(case: Case, name: str) -> guard.Pattern:
    """The exact bytes outside output `name`'s view (offset, stride gaps, tail guard), seeded from
    the case id: they differ from case to case, and from output to output."""
    return guard.Pattern(f"{case.id}#{name}")


def poison(dtype: torch.dtype):
    """Fill value of an output's view: anything the library never writes fails comparison."""
    if dtype.is_floating_point:
        return float("nan")
    if dtype.is_complex:
        # both parts: a library that writes only the real part must not look finished
        return complex(float("nan"), float("nan"))
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
        channel_last = fmt in op.channel_last_formats
        if p.output:
            dt = change.get("dtype", case.dtype_of(p))
            shape = tuple(change.get("shape", tuple(output_shape)))
            # only an invalid scenario's output is ever a bare descriptor: a valid case computes
            phase1_only = case.kind == "invalid" and layout.Unbacked.needed(shape, dt)
            logical = layout.Unbacked(shape, dt) if phase1_only else None
            if logical is None:
                tdt = dtypes.torch_of(dt)
                logical = torch.full(shape, poison(tdt), dtype=tdt)
        else:
            logical = inputs[p.name]
            dt = logical.dtype if isinstance(logical, layout.Unbacked) else dtypes.from_torch(logical.dtype).name
        if isinstance(logical, layout.Unbacked):
            arg = layout.unbacked(p.name, logical, fmt, lay, channel_last, p.output)
        else:
            arg = layout.materialize(p.name, logical, fmt, lay, channel_last, p.output,
                                     OUTPUT_GUARD if p.output else 0)
            if p.output:      # the view holds the poison already (materialize copied it in)
                guard.lay(arg, guard_pattern(case, p.name))
        args.append(Arg(p.name, "tensor", None if p.name == null else arg, dt, p.output))
    if null in OUT_POINTERS:
        args.append(Arg(null, "out_pointer", None))     # phase 1's workspaceSize / executor passed as NULL
    return args
