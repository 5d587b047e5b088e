"""Load, validate and expand case files (cases/*.yaml) into Case objects.

A file names the operator, its golden, its phase-1 signature and groups of
cases. A group is either a `matrix` (shapes x dtypes x index dtypes x formats x
layouts x value distributions x attribute sets) of valid cases, or an `invalid`
block: one base configuration and scenarios that each break one thing, with the
expected status per SoC family. Every problem is reported as one line naming
the file, the group and the field (CaseFileError).
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from . import dtypes, families, formats, layout, values
from .errors import CaseFileError

_SCHEMA_PATH = Path(__file__).with_name("casefile.schema.yaml")
SCALAR_KINDS = {"bool": bool, "int64": int, "int8": int, "double": float}


@dataclass(frozen=True)
class Param:
    name: str
    type: str                 # tensor | int_array | bool | int64 | int8 | double
    dtype: str | None = None  # tensors: 'data', 'index' or a fixed dtype name
    output: bool = False


@dataclass(frozen=True)
class Check:
    id: str
    what: str
    families: tuple[str, ...]
    status: int | None
    untestable: str | None


@dataclass(frozen=True)
class OpSpec:
    name: str                 # e.g. MaxPool2dWithIndicesBackward
    golden: str               # module name in golden/
    standard: str
    families: tuple[str, ...]
    params: tuple[Param, ...]
    output_like: str          # input whose shape the output takes
    channel_last_formats: tuple[str, ...]
    checks: tuple[Check, ...]
    path: str
    input_attrs: tuple[Param, ...] = ()   # shape the inputs (e.g. adaptive outputSize), not passed to the API

    @property
    def aclnn(self) -> str:
        return "aclnn" + self.name

    @property
    def marker(self) -> str:
        return self.golden

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    @property
    def tensor_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.type == "tensor")

    @property
    def attr_params(self) -> tuple[Param, ...]:
        """Every attribute a case sets: API scalars/arrays, then input-only attributes."""
        return tuple(p for p in self.params if p.type != "tensor") + self.input_attrs


@dataclass(frozen=True)
class Deviation:
    """A known deviation of a backend (not of the op): matching cases are expected to fail there."""
    backend: str
    dtypes: tuple[str, ...]     # empty: every dtype
    reason: str

    def matches(self, backend: str, case: "Case") -> bool:
        return backend == self.backend and (not self.dtypes or case.dtype in self.dtypes)


@dataclass(frozen=True)
class Mutation:
    """What an invalid scenario changes after the valid inputs were prepared."""
    null: str | None = None
    tensors: dict = field(default_factory=dict, hash=False, compare=False)   # name -> {dtype, shape, format, layout}
    attrs: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, eq=False)
class Case:
    op: OpSpec
    group: str
    name: str                 # pytest item name: group[params]
    kind: str                 # 'valid' | 'invalid'
    shape: tuple[int, ...]
    dtype: str
    index_dtype: str | None
    formats: dict             # tensor name -> ACL format label
    layouts: dict             # tensor name -> memory layout
    attrs: dict
    values: values.Distribution
    families: tuple[str, ...]
    status: dict              # family -> expected phase-1 status
    standard: str
    tier: str = "default"
    note: str | None = None
    check: str | None = None
    mutation: Mutation | None = None
    deviations: tuple[Deviation, ...] = ()

    def deviation_on(self, backend: str) -> Deviation | None:
        return next((d for d in self.deviations if d.matches(backend, self)), None)

    @property
    def id(self) -> str:
        return f"{self.op.name}.{self.name}"

    def expected_status(self, family: str | None) -> int | None:
        return None if family is None else self.status.get(family)

    def runs_numerics(self, family: str | None) -> bool:
        """Numerics are compared for valid cases expected to succeed on `family`."""
        if self.kind != "valid":
            return False
        if family is None:
            return any(s == 0 for s in self.status.values())
        return self.status.get(family) == 0

    def dtype_of(self, param: Param) -> str:
        if param.dtype in (None, "data"):
            return self.dtype
        if param.dtype == "index":
            return self.index_dtype
        return param.dtype


# ----------------------------------------------------------------- ids

def _abbrev(name: str) -> str:
    """kernelSize -> ks, ceilMode -> cm, stride -> s: short, generic, stable."""
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


# ----------------------------------------------------------------- loading

@functools.lru_cache(maxsize=1)
def _validator():
    schema = yaml.safe_load(_SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def _schema_error(path, doc, err) -> CaseFileError:
    loc = list(err.absolute_path)
    group = None
    if len(loc) >= 2 and loc[0] == "groups" and isinstance(loc[1], int):
        groups = doc.get("groups") or []
        g = groups[loc[1]] if loc[1] < len(groups) else {}
        group = g.get("name", f"#{loc[1]}") if isinstance(g, dict) else f"#{loc[1]}"
        loc = loc[2:]
    fld = ".".join(str(x) for x in loc) or None
    msg = err.message
    if err.validator == "oneOf" and "matrix" in str(err.schema):
        msg = "a group needs exactly one of 'matrix' or 'invalid'"
    elif err.validator == "additionalProperties":
        msg = f"{err.message}"
    return CaseFileError(path, msg, group, fld)


def _families(path, group, fld, names) -> tuple[str, ...]:
    for n in names:
        if n not in families.FAMILIES:
            raise CaseFileError(path, f"unknown SoC family {n!r}; valid: {', '.join(families.FAMILIES)}", group, fld)
    return tuple(names)


def _status(path, group, fld, spec, fams) -> dict:
    if isinstance(spec, int):
        return {f: spec for f in fams}
    out = {}
    others = spec.get("others")
    for k in spec:
        if k != "others" and k not in families.FAMILIES:
            raise CaseFileError(path, f"unknown SoC family {k!r} in status; valid: {', '.join(families.FAMILIES)} or 'others'", group, fld)
    for f in fams:
        if f in spec:
            out[f] = spec[f]
        elif others is not None:
            out[f] = others
        else:
            raise CaseFileError(path, f"no expected status for family {f!r} (give it, or 'others')", group, fld)
    return out


def _dtype(path, group, fld, name) -> str:
    try:
        return dtypes.lookup(name).name
    except KeyError as e:
        raise CaseFileError(path, str(e.args[0]), group, fld) from None


def _per_tensor(path, group, fld, spec, op_params, what: str, known) -> dict:
    """A value for every tensor: one string for all, or a mapping by tensor name with 'default'."""
    tensor_names = [p.name for p in op_params if p.type == "tensor"]
    if isinstance(spec, str):
        spec = {"default": spec}
    for k in spec:
        if k != "default" and k not in tensor_names:
            raise CaseFileError(path, f"{what} given for unknown tensor {k!r}", group, fld)
    out = {}
    for t in tensor_names:
        value = spec.get(t, spec.get("default"))
        if value is None:
            raise CaseFileError(path, f"no {what} for tensor {t!r} (give it, or 'default')", group, fld)
        if value not in known:
            raise CaseFileError(path, f"unknown {what} {value!r}; known: {', '.join(known)}", group, fld)
        out[t] = value
    return out


def _format_map(path, group, fld, spec, op_params) -> dict:
    return _per_tensor(path, group, fld, spec, op_params, "format", formats.FORMATS)


def _layout_map(path, group, fld, spec, op_params) -> dict:
    return _per_tensor(path, group, fld, spec, op_params, "layout", layout.LAYOUTS)


def _layout(path, group, fld, name) -> str:
    if name not in layout.LAYOUTS:
        raise CaseFileError(path, f"unknown layout {name!r}; known: {', '.join(layout.LAYOUTS)}", group, fld)
    return name


def _attrs(path, group, fld, attrs, op: OpSpec, partial=False) -> dict:
    known = {p.name: p for p in op.attr_params}
    for k in attrs:
        if k not in known:
            raise CaseFileError(path, f"unknown attribute {k!r}; the signature has: {', '.join(known) or 'none'}", group, f"{fld}.{k}")
    out = {}
    for name, p in known.items():
        if name not in attrs:
            if partial:
                continue
            raise CaseFileError(path, f"missing attribute {name!r}", group, f"{fld}.{name}")
        v = attrs[name]
        where = f"{fld}.{name}"
        if p.type == "int_array":
            if v is not None and not (isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)):
                raise CaseFileError(path, f"{name} must be a list of integers (or null), got {v!r}", group, where)
            out[name] = None if v is None else list(v)
        else:
            want = SCALAR_KINDS[p.type]
            ok = isinstance(v, bool) if want is bool else (isinstance(v, (int, float)) and not isinstance(v, bool) if want is float else isinstance(v, int) and not isinstance(v, bool))
            if not ok:
                raise CaseFileError(path, f"{name} must be {p.type}, got {v!r}", group, where)
            if p.type == "int8" and not -128 <= v <= 127:
                raise CaseFileError(path, f"{name} must fit int8, got {v}", group, where)
            out[name] = v
    return out


def _op_spec(path, doc) -> OpSpec:
    params = []
    seen = set()
    for i, p in enumerate(doc["signature"]):
        if p["name"] in seen:
            raise CaseFileError(path, f"parameter {p['name']!r} appears twice", None, f"signature.{i}.name")
        seen.add(p["name"])
        dt = p.get("dtype")
        if p["type"] == "tensor" and dt not in (None, "data", "index"):
            dt = _dtype(path, None, f"signature.{i}.dtype", dt)
        params.append(Param(p["name"], p["type"], dt, bool(p.get("output", False))))
    if not any(p.output for p in params):
        raise CaseFileError(path, "no output tensor (mark one with output: true)", None, "signature")
    fams = _families(path, None, "families", doc["families"])
    if doc["output_like"] not in seen:
        raise CaseFileError(path, f"output_like names unknown parameter {doc['output_like']!r}", None, "output_like")
    _check_standard(path, None, "standard", doc["standard"])
    try:
        import golden
        golden.load(doc["golden"])
    except LookupError as e:
        raise CaseFileError(path, str(e), None, "golden") from None
    checks = []
    for i, c in enumerate(doc.get("checks") or []):
        checks.append(Check(c["id"], c["what"], _families(path, None, f"checks.{i}.families", c.get("families", fams)),
                            c.get("status"), c.get("untestable")))
    ids = [c.id for c in checks]
    dup = {x for x in ids if ids.count(x) > 1}
    if dup:
        raise CaseFileError(path, f"duplicate check ids: {', '.join(sorted(dup))}", None, "checks")
    for fmt in doc.get("channel_last_formats", []):
        if fmt not in formats.FORMATS:
            raise CaseFileError(path, f"unknown format {fmt!r}", None, "channel_last_formats")
    input_attrs = []
    for i, p in enumerate(doc.get("input_attrs") or []):
        if p["name"] in seen:
            raise CaseFileError(path, f"input attribute {p['name']!r} is also an API parameter", None, f"input_attrs.{i}.name")
        seen.add(p["name"])
        input_attrs.append(Param(p["name"], p["type"]))
    return OpSpec(doc["op"], doc["golden"], doc["standard"], fams, tuple(params), doc["output_like"],
                  tuple(doc.get("channel_last_formats", [])), tuple(checks), str(path), tuple(input_attrs))


def _check_standard(path, group, fld, name, dtype=None):
    from . import compare
    if name not in compare.STANDARDS:
        raise CaseFileError(path, f"unknown precision standard {name!r}; known: {', '.join(compare.STANDARDS)}", group, fld)
    if dtype is not None:
        try:
            compare.thresholds(name, dtype)
        except ValueError as e:
            raise CaseFileError(path, str(e), group, fld) from None


def _distributions(path, doc) -> dict:
    named = {}
    for name, spec in (doc.get("distributions") or {}).items():
        try:
            named[name] = values.parse(name, spec, named)
        except ValueError as e:
            raise CaseFileError(path, str(e), None, f"distributions.{name}") from None
    return named


def _distribution(path, group, fld, ref, named):
    try:
        return values.resolve(ref, named)
    except ValueError as e:
        raise CaseFileError(path, str(e), group, fld) from None


def _shape(path, group, fld, shape):
    if any(s < 0 for s in shape):
        raise CaseFileError(path, f"negative dimension in shape {shape}", group, fld)
    return tuple(shape)


def _expand_matrix(path, op, g, named) -> list[Case]:
    name, m = g["name"], g["matrix"]
    fams = _families(path, name, "families", g.get("families", op.families))
    status = _status(path, name, "status", g.get("status", 0), fams)
    standard = g.get("standard", op.standard)
    _check_standard(path, name, "standard", standard)
    shapes = [_shape(path, name, f"matrix.shape.{i}", s) for i, s in enumerate(m["shape"])]
    dts = [_dtype(path, name, "matrix.dtype", d) for d in m["dtype"]]
    for d in dts:
        _check_standard(path, name, "standard", standard, d)
    idts = [_dtype(path, name, "matrix.index_dtype", d) for d in m.get("index_dtype", [])] or [None]
    if any(p.dtype == "index" for p in op.tensor_params) and idts == [None]:
        raise CaseFileError(path, "the op has an index tensor: give matrix.index_dtype", name, "matrix.index_dtype")
    fmts = [_format_map(path, name, f"matrix.format.{i}", f, op.params) for i, f in enumerate(m.get("format", ["ND"]))]
    lays = [_layout_map(path, name, f"matrix.layout.{i}", x, op.params) for i, x in enumerate(m.get("layout", ["contiguous"]))]
    dists = [_distribution(path, name, "matrix.values", v, named) for v in m.get("values", ["uniform"])]
    attr_sets = [_attrs(path, name, f"matrix.attrs.{i}", a, op) for i, a in enumerate(m["attrs"])]
    devs = _deviations(path, name, g)
    cases = []
    for shape, dt, idt, fmt, lay, dist, attrs in itertools.product(shapes, dts, idts, fmts, lays, dists, attr_sets):
        parts = [dt + (f"-{idt}" if idt else ""), shape_id(shape), attrs_id(attrs), per_tensor_id(fmt), per_tensor_id(lay), dist.name]
        cases.append(Case(op, name, f"{name}[{'-'.join(parts)}]", "valid", shape, dt, idt, fmt, lay, attrs, dist,
                          fams, status, standard, g.get("tier", "default"), g.get("note"), deviations=devs))
    return cases


def _deviations(path, group, g) -> tuple[Deviation, ...]:
    from . import backends
    out = []
    for i, d in enumerate(g.get("deviations") or []):
        if d["backend"] not in backends.NAMES:
            raise CaseFileError(path, f"unknown backend {d['backend']!r}; valid: {', '.join(backends.NAMES)}", group, f"deviations.{i}.backend")
        dts = tuple(_dtype(path, group, f"deviations.{i}.dtype", x) for x in d.get("dtype", []))
        out.append(Deviation(d["backend"], dts, d["reason"]))
    return tuple(out)


def _expand_invalid(path, op, g, named) -> list[Case]:
    name, block = g["name"], g["invalid"]
    group_fams = _families(path, name, "families", g.get("families", op.families))
    tensor_names = {p.name for p in op.tensor_params}
    check_ids = {c.id for c in op.checks}
    cases = []
    for i, sc in enumerate(block["scenarios"]):
        fld = f"invalid.scenarios.{i}"
        base = dict(block["base"], **(sc.get("base") or {}))
        fams = _families(path, name, f"{fld}.families", sc.get("families", group_fams))
        status = _status(path, name, f"{fld}.status", sc["status"], fams)
        if sc.get("check") is not None and op.checks and sc["check"] not in check_ids:
            raise CaseFileError(path, f"check {sc['check']!r} is not declared in 'checks'", name, f"{fld}.check")
        null = sc.get("null")
        if null is not None and null not in {p.name for p in op.params if p.type in ("tensor", "int_array")}:
            raise CaseFileError(path, f"null names {null!r}, which is not a tensor or int_array parameter", name, f"{fld}.null")
        changes = {}
        for t, ch in (sc.get("tensors") or {}).items():
            if t not in tensor_names:
                raise CaseFileError(path, f"unknown tensor {t!r}", name, f"{fld}.tensors")
            ch = dict(ch)
            if "dtype" in ch:
                ch["dtype"] = _dtype(path, name, f"{fld}.tensors.{t}.dtype", ch["dtype"])
            if "format" in ch and ch["format"] not in formats.FORMATS:
                raise CaseFileError(path, f"unknown format {ch['format']!r}", name, f"{fld}.tensors.{t}.format")
            if "layout" in ch:
                _layout(path, name, f"{fld}.tensors.{t}.layout", ch["layout"])
            changes[t] = ch
        attrs = _attrs(path, name, "invalid.base.attrs", base["attrs"], op)
        attr_changes = _attrs(path, name, f"{fld}.attrs", sc.get("attrs") or {}, op, partial=True)
        dt = _dtype(path, name, "invalid.base.dtype", base["dtype"])
        idt = _dtype(path, name, "invalid.base.index_dtype", base["index_dtype"]) if base.get("index_dtype") else None
        fmt = _format_map(path, name, "invalid.base.format", base.get("format", "ND"), op.params)
        lay = _layout_map(path, name, "invalid.base.layout", base.get("layout", "contiguous"), op.params)
        dist = _distribution(path, name, "invalid.base.values", base.get("values", "uniform"), named)
        label = sc.get("name") or (f"{sc['check']}" if sc.get("check") else f"s{i}")
        cases.append(Case(op, name, f"{name}[{label}]", "invalid", _shape(path, name, "invalid.base.shape", base["shape"]),
                          dt, idt, fmt, lay, attrs, dist, fams, status, op.standard, g.get("tier", "default"),
                          sc.get("note", g.get("note")), sc.get("check"), Mutation(null, changes, attr_changes)))
    return cases


def load(path) -> tuple[OpSpec, list[Case]]:
    """Parse and validate one case file; raise CaseFileError (one line) on any problem."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise CaseFileError(path, f"not valid YAML{where}: {problem}") from None
    except OSError as e:
        raise CaseFileError(path, f"cannot read: {e.strerror}") from None
    if not isinstance(doc, dict):
        raise CaseFileError(path, "top level must be a mapping with op, golden, signature, groups")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), str(list(e.absolute_path))))
    if errors:
        deepest = max(errors, key=lambda e: len(list(e.absolute_path)))
        raise _schema_error(path, doc, deepest)
    op = _op_spec(path, doc)
    named = _distributions(path, doc)
    cases, names = [], set()
    for g in doc["groups"]:
        if g["name"] in names:
            raise CaseFileError(path, "duplicate group name", g["name"], "name")
        names.add(g["name"])
        expand = _expand_matrix if "matrix" in g else _expand_invalid
        for case in expand(path, op, g, named):
            cases.append(case)
    ids = [c.name for c in cases]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise CaseFileError(path, f"duplicate case id {dup!r} (two entries expand to the same case)", dup.split("[")[0], None)
    return op, cases

