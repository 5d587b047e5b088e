"""One explored example as plain data, and the real `Case` it becomes.

A `Config` is a valid configuration: an envelope of the case file (dtype, formats, layouts, value
class, standard) with a shape and attributes. An `Example` is a config on one family plus 0-3
`Defect`s, each the change of one argument (a tensor's dtype, format, layout or shape, an
attribute's value, a NULL pointer), exactly what an invalid scenario of a case file can say.

The case an example becomes has the id it would have in a case file whose group is named after the
example's content hash (`explore_<hash>`): the emitted YAML group reproduces the same case id, and
with it the same drawn input values (inputs/values.py seeds them from the id).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace

from ..model import Case, Mutation
from ..model import ids
from ..model.spec import OUT_POINTERS
from .facts import Envelope, OpFacts

TENSOR_FIELDS = ("dtype", "format", "layout", "shape")


@dataclass(frozen=True)
class Config:
    envelope: Envelope
    shape: tuple[int, ...]
    attrs: tuple[tuple[str, object], ...]      # name -> value (int arrays as tuples, None for NULL)

    @property
    def attr_dict(self) -> dict:
        """The attributes as a case file writes them (int arrays as lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.attrs}

    def with_attr(self, name: str, value) -> "Config":
        return replace(self, attrs=tuple((k, value if k == name else v) for k, v in self.attrs))


@dataclass(frozen=True)
class Defect:
    """One argument changed: kind null (target: tensor, array or out-pointer), dtype, format,
    layout or shape (target: a tensor), attr (target: an attribute; value: its new value)."""
    kind: str
    target: str
    value: object = None

    def describe(self) -> str:
        """`self.dtype.float64`, `stride.attr.2x0`, `gradOutput.null`: a scenario name's characters only."""
        if self.kind == "null":
            return f"{self.target}.null"
        shown = "x".join(map(str, self.value)) if isinstance(self.value, tuple) else str(self.value)
        return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{self.target}.{self.kind}.{shown or 'empty'}")


@dataclass(frozen=True)
class Example:
    facts: OpFacts = field(compare=False, hash=False, repr=False)
    family: str
    config: Config
    defects: tuple[Defect, ...] = ()
    # the standard its numbers are held to where it is not its envelope's (oracle.Oracle.judged)
    standard: str | None = None

    @property
    def op(self) -> str:
        return self.facts.name

    def __repr__(self) -> str:
        return f"Example({self.op} on {self.family}: {self.canonical()})"

    def _repr_pretty_(self, printer, cycle) -> None:
        """Hypothesis prints a dataclass field by field (its facts hold every case of the op): not this one."""
        printer.text(repr(self))

    def without(self, i: int) -> "Example":
        return replace(self, defects=self.defects[:i] + self.defects[i + 1:])

    def canonical(self) -> dict:
        """The example as JSON-able data (its hash, the summary, the YAML emitter read this)."""
        env = self.config.envelope
        return {"op": self.op, "family": str(self.family), "envelope": env.group, "dtype": str(env.dtype),
                "index_dtype": str(env.index_dtype) if env.index_dtype else None, "formats": dict(env.formats), "layouts": dict(env.layouts),
                "values": env.values.name, "standard": self.standard or env.standard, "shape": list(self.config.shape),
                "attrs": self.config.attr_dict,
                "defects": [[d.kind, d.target, list(d.value) if isinstance(d.value, tuple) else d.value]
                            for d in self.defects]}

    @property
    def key(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:10]

    @property
    def group(self) -> str:
        return f"explore_{self.key}"

    @property
    def label(self) -> str:
        """The invalid scenario's name: its defects, or `as-is` for a config refused unchanged."""
        return "__".join(d.describe() for d in self.defects) or "as-is"

    def mutation(self) -> Mutation:
        null, tensors, attrs = None, {}, {}
        for d in self.defects:
            if d.kind == "null":
                null = d.target
            elif d.kind == "attr":
                attrs[d.target] = list(d.value) if isinstance(d.value, tuple) else d.value
            else:
                tensors.setdefault(d.target, {})[d.kind] = list(d.value) if d.kind == "shape" else d.value
        return Mutation(null, tensors, attrs)


def valid_case(ex: Example, note: str | None = None) -> Case:
    """The example as a matrix case (status 0 on its family, numerics under the envelope's standard)."""
    env, op = ex.config.envelope, ex.facts.op
    attrs, formats, layouts = ex.config.attr_dict, env.formats_for(len(ex.config.shape)), dict(env.layouts)
    name = ids.matrix_case_name(ex.group, env.dtype, env.index_dtype, ex.config.shape, attrs, formats, layouts,
                                env.values.name)
    return Case(op, ex.group, name, "valid", ex.config.shape, env.dtype, env.index_dtype, formats, layouts, attrs,
                env.values, (ex.family,), {ex.family: 0}, ex.standard or env.standard, "default", note,
                deviations=env.deviations, deterministic=env.deterministic, relaunch=env.relaunch)


def invalid_case(ex: Example, status: int, check: str | None, note: str | None = None) -> Case:
    """The example as an invalid scenario: its base prepared as a valid call, its defects applied,
    phase 1 expected to return `status` (raised by `check`, where the case file declares it)."""
    env, op = ex.config.envelope, ex.facts.op
    check = check if check in ex.facts.declared_checks else None
    return Case(op, ex.group, f"{ex.group}[{ex.label}]", "invalid", ex.config.shape, env.dtype, env.index_dtype,
                env.formats_for(len(ex.config.shape)), dict(env.layouts), ex.config.attr_dict, env.values, (ex.family,),
                {ex.family: status}, op.standard, "default", note, check, ex.mutation())


def nullable(facts: OpFacts) -> tuple[str, ...]:
    """What a NULL defect may name: tensors and int arrays of the signature, phase 1's out-pointers."""
    return tuple(p.name for p in facts.op.params if p.type in ("tensor", "int_array")) + OUT_POINTERS


def from_canonical(facts: OpFacts, doc: dict) -> Example:
    """The Example an explore.json entry (Example.canonical) describes, on its op's facts."""
    def same(e) -> bool:
        return (e.group, e.family, e.dtype, e.index_dtype, dict(e.formats), dict(e.layouts), e.values.name) == \
            (doc["envelope"], doc["family"], doc["dtype"], doc["index_dtype"], doc["formats"], doc["layouts"],
             doc["values"])
    env = next(e for e in facts.envelopes if same(e))
    attrs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in doc["attrs"].items())
    defects = tuple(Defect(k, t, tuple(v) if isinstance(v, list) else v) for k, t, v in doc["defects"])
    standard = doc.get("standard")
    return Example(facts, doc["family"], Config(env, tuple(doc["shape"]), attrs), defects,
                   None if standard in (None, env.standard) else standard)
