"""An operator's executable spec model (golden/_phase1.py) applied to a case: the Call the case
makes, and what the model says phase 1 returns for it on a family.

The Call is built from the very argument list a backend receives (inputs.build_args), so the
model judges exactly the descriptors, attributes and NULL pointers the library is given.
"""
from __future__ import annotations

import golden
from golden._phase1 import Call, Phase1, Phase1Model, TensorDesc

from .. import inputs
from ..inputs import Arg
from ..model import Case, OpSpec


def model_of(op: OpSpec) -> Phase1Model | None:
    """The op's model (its golden INFO's `model`), or None when the op has none."""
    info = getattr(golden.load(op.golden), "INFO", None)
    return getattr(info, "model", None)


def call_of(args: list[Arg]) -> Call:
    """The Call of a backend's argument list."""
    tensors, attrs, null_out = {}, {}, set()
    for a in args:
        if a.kind == "out_pointer":
            null_out.add(a.name)
        elif a.kind == "tensor":
            v = a.value
            tensors[a.name] = None if v is None else TensorDesc(tuple(int(d) for d in v.dims), str(a.dtype), v.format,
                                                                tuple(int(s) for s in v.strides), int(v.offset))
        else:
            attrs[a.name] = tuple(a.value) if isinstance(a.value, list) else a.value
    return Call(tensors, attrs, frozenset(null_out))


def call_for(case: Case) -> Call:
    """The Call a case makes: its inputs prepared, its scenario applied, its outputs allocated."""
    prepared = inputs.prepare(case)
    mutated = inputs.mutate(case, prepared)
    return call_of(inputs.build_args(case, mutated, tuple(prepared[case.op.output_like].shape)))


def predict(case: Case, family: str, model: Phase1Model | None = None) -> Phase1 | None:
    """What the op's model says phase 1 returns for `case` on `family` (None: the op has no model)."""
    model = model or model_of(case.op)
    return None if model is None else model(call_for(case), family)
