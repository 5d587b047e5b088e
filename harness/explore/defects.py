"""What a defect of an invalid example can be: one argument changed, or one scenario of the case file.

The generic table changes any argument: a tensor's dtype (any the ABI knows), format, layout or
shape (a rank more or less, a dimension +1, -1, 0, doubled, negative, huge), an attribute (its
length, an element near 0, 1 or a C type's limit), a NULL. The case file's own invalid scenarios add
the changes its author knew each check by, each scenario's changes together: an int8 index, a
6-D gradInput, every tensor in a private format, every tensor of rank 5, a whole call in float64
(a scenario's `base:` change of dtype, index dtype, format or layout is the same change of every
tensor it reaches). Whole-call dtype sets come from every dtype the ABI knows, not only from the
scenarios (whole_call_dtypes). A defect counts only where the model refuses the base with it alone.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from golden._phase1 import UNDEFINED

from ..model.spec import OUT_POINTERS
from . import facts as facts_mod
from .example import TENSOR_FIELDS, Defect, Example, nullable
from .oracle import Oracle

ATTR_VALUES = (0, -1, 1, 2, 3, 2**31 - 1, 2**31, -(2**31), 2**62)
SCALAR_BAD = {"int8": (-1, 4, 127, -128), "int64": (-1, 0, 2**31, -(2**31)), "double": (-1.0, 0.0, 1e30)}


def frozen(v):
    return tuple(v) if isinstance(v, list) else v


def _shape_changes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Shapes one step away: a rank more or less, one dimension +1, -1, 0, doubled, negative, huge
    (past int32, and so large that the tensor's size passes int64)."""
    out = [(1,) + shape, shape[1:], shape + (1,)]
    for i, d in enumerate(shape):
        for new in (d + 1, d - 1, 0, 2 * d + 1, -1, 2**31, 2**62):
            if new != d:
                out.append(shape[:i] + (new,) + shape[i + 1:])
    return list(dict.fromkeys(s for s in out if s != shape))


def _attr_changes(param, current) -> list:
    """Values one step away for an attribute: array lengths and elements, a flipped bool, bad scalars."""
    if param.type == "bool":
        return [not current]
    if param.type in facts_mod.SCALAR:
        return [v for v in SCALAR_BAD[param.type] if v != current]
    values = tuple(current) if current is not None else ()
    out = [values[:n] if n <= len(values) else values + values[-1:] * (n - len(values)) if values else (1,) * n
           for n in range(5)]
    for i, v in enumerate(values):
        for new in ATTR_VALUES + (v + 1, 2 * v + 1):
            out.append(values[:i] + (new,) + values[i + 1:])
    return list(dict.fromkeys(o for o in out if o != values))


def defect_choices(facts: facts_mod.OpFacts, ex: Example, shapes: dict) -> list[Defect]:
    """Every defect of one argument the example's base can take (the model then filters them)."""
    out = [Defect("null", name) for name in nullable(facts)]
    for p in facts.op.tensor_params:
        out += [Defect("dtype", p.name, d) for d in facts_mod.all_dtypes()]
        out += [Defect("format", p.name, f) for f in facts_mod.all_formats()]
        out += [Defect("layout", p.name, lay) for lay in facts_mod.all_layouts()]
        out += [Defect("shape", p.name, s) for s in _shape_changes(shapes[p.name])]
    attrs = dict(ex.config.attrs)
    for p in facts.op.attr_params:
        if p.name in attrs and p not in facts.op.input_attrs:
            out += [Defect("attr", p.name, v) for v in _attr_changes(p, attrs[p.name])]
    return out


def paired_shape_defects(facts: facts_mod.OpFacts, shapes: dict) -> list[tuple[Defect, ...]]:
    """The same shape change of two tensors that share a shape in the base (gradOutput and indices,
    self and gradInput): a check that compares two tensors with a third (a tiling's N/C of gradOutput
    against self's) is reached only when the pair changes together, as no single change does."""
    names = [p.name for p in facts.op.tensor_params if shapes.get(p.name) is not None]
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if shapes[a] == shapes[b]:
                out += [(Defect("shape", a, s), Defect("shape", b, s)) for s in _shape_changes(shapes[a])]
    return out


_SCENARIOS: dict[str, tuple[tuple[Defect, ...], ...]] = {}


def scenario_defects(facts: facts_mod.OpFacts) -> tuple[tuple[Defect, ...], ...]:
    """The changes each invalid scenario of the case file makes, one tuple per scenario (each as often
    as the scenarios make it); a scenario that changes its base's shape is left out (the explorer
    prepares its own base)."""
    key = str(facts.path)
    if key not in _SCENARIOS:
        out = []
        groups: dict[str, list] = {}
        for c in facts.cases:
            if c.kind == "invalid" and c.mutation is not None:
                groups.setdefault(c.group, []).append(c)
        for cases in groups.values():
            usual = _usual_base(cases)
            for c in cases:
                if c.shape == usual["shape"]:
                    out.append(_changes(facts, c, usual))
        _SCENARIOS[key] = tuple(o for o in out if o)
    return _SCENARIOS[key]


def whole_call_dtypes(facts: facts_mod.OpFacts) -> tuple[tuple[Defect, ...], ...]:
    """Every data tensor of the call in one dtype, for each dtype the ABI knows (and likewise every
    index tensor): a consistent set, as a caller converting a whole model would pass it. A check that a
    library skips for one dtype only shows when every tensor it compares agrees on that dtype; three
    independent draws of it would take about 1e-9 of the examples."""
    out = []
    for role in ("data", "index"):
        tensors = [p.name for p in facts.op.tensor_params if p.dtype == role]
        if len(tensors) > 1 or (tensors and role == "index"):
            out += [tuple(Defect("dtype", t, dt) for t in tensors) for dt in facts_mod.all_dtypes()]
    return tuple(out)


def _usual_base(cases) -> dict:
    """An invalid group's base: what most of its scenarios keep (the rest changed it in `base:`)."""
    def most(values):
        return Counter(values).most_common(1)[0][0]
    return {"shape": most(c.shape for c in cases), "dtype": most(c.dtype for c in cases),
            "index_dtype": most(c.index_dtype for c in cases),
            "format": {t: most(c.formats.get(t) for c in cases) for t in cases[0].formats},
            "layout": {t: most(c.layouts.get(t) for c in cases) for t in cases[0].layouts}}


def _changes(facts: facts_mod.OpFacts, c, usual: dict) -> tuple[Defect, ...]:
    """One scenario's changes to its group's base as defects: base changes first, reaching every
    tensor they apply to, then its own (which win where both change one thing)."""
    out: dict = {}
    for p in facts.op.tensor_params:
        if p.dtype == "data" and c.dtype != usual["dtype"]:
            out[("dtype", p.name)] = Defect("dtype", p.name, c.dtype.name)     # a defect's value: a name
        if p.dtype == "index" and c.index_dtype != usual["index_dtype"] and c.index_dtype:
            out[("dtype", p.name)] = Defect("dtype", p.name, c.index_dtype.name)
        for kind, mine, base in (("format", c.formats, usual["format"]), ("layout", c.layouts, usual["layout"])):
            if p.name in mine and mine[p.name] != base.get(p.name):
                out[(kind, p.name)] = Defect(kind, p.name, mine[p.name])
    m = c.mutation
    if m.null:
        out[("null", m.null)] = Defect("null", m.null)
    for tensor, change in m.tensors.items():
        for k, v in change.items():
            if k in TENSOR_FIELDS:
                out[(k, tensor)] = Defect(k, tensor, frozen(v))
    for k, v in m.attrs.items():
        out[("attr", k)] = Defect("attr", k, frozen(v))
    return tuple(out.values())


def refused_alone(oracle: Oracle, ex: Example, defect: Defect | tuple[Defect, ...]) -> bool:
    """A defect (or a scenario's changes together): the model refuses the base with it alone (a NULL
    out-pointer is one by the spec, G.14, though only a failing check before it shows as a status)."""
    defects = defect if isinstance(defect, tuple) else (defect,)
    if len(defects) == 1 and defects[0].kind == "null" and defects[0].target in OUT_POINTERS:
        return True
    try:
        answer, _ = oracle.answer(replace(ex, defects=defects))
    except ValueError:
        return False
    return answer.status not in (0, UNDEFINED)


