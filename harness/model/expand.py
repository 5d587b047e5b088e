"""Expansion of a validated case file's groups into Cases.

A `matrix` group is the product of its lists (valid cases); an `invalid` group
is one base configuration plus scenarios that each break one thing. Every
problem is a CaseFileError naming the file, the group and the field.
"""
from __future__ import annotations

import itertools
import math

from ..core import dtypes, families, formats, perfstats
from ..core.errors import CaseFileError
from . import distributions, ids, messages
from .spec import LAYOUTS, OUT_POINTERS, SCALAR_KINDS, Case, Deviation, Mutation, OpSpec, Param
from .vocabulary import Vocabulary


# Bounds on what a case file may ask for. Values travel through the ABI as int64; a valid
# case (and an invalid group's base, from which valid inputs are prepared first) is
# allocated, so its element count is capped (the largest real case has 16.8 M elements).
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_RANK = 32
MAX_ELEMENTS = 1 << 27
MAX_ARRAY_LEN = 64                 # int_array attributes
MAX_CASES = 100_000                # per file: twice the synthetic 50,000-case file of benchmarks/bench_suite.py;
                                   # the real files expand to 200-350
# aclnnStatus values: 0 and the 161xxx (parameter), 361xxx (runtime), 561xxx (internal) ranges
# (spec acl_abi.md 4.1); a phase-1 expectation outside them cannot come back from a library.
STATUS_RANGES = (range(0, 1), range(161000, 162000), range(361000, 362000), range(561000, 562000))


def is_status(v) -> bool:
    return _is_int(v) and any(v in r for r in STATUS_RANGES)


class Where:
    """The file and group being expanded: every error names them."""

    def __init__(self, path, group: str | None, vocab: Vocabulary):
        self.path, self.group, self.vocab = path, group, vocab

    def error(self, message: str, fld: str | None) -> CaseFileError:
        return CaseFileError(self.path, message, self.group, fld)

    # ------------------------------------------------------------ single values

    def families(self, fld, names) -> tuple[str, ...]:
        for i, n in enumerate(names):
            if n not in families.FAMILIES:
                raise self.error(f"unknown SoC family {n!r}; valid: {', '.join(families.FAMILIES)}", fld)
            if n in names[:i]:
                raise self.error(f"family {n!r} is listed twice", fld)
        return tuple(names)

    def status_value(self, fld, v) -> int:
        if not is_status(v):
            shown = messages.shown(v) + messages.hint(v, {"integer"})
            raise self.error(f"status {shown} is not an aclnn status (0, 161xxx, 361xxx or 561xxx)", fld)
        return v

    def status(self, fld, spec, fams) -> dict:
        if _is_int(spec):
            return {f: self.status_value(fld, spec) for f in fams}
        if not isinstance(spec, dict):     # the schema refuses these first; the ATK loader does not use it
            raise self.error("status: " + messages.wrong_type(spec, ["integer", "object"]), fld)
        for k, v in spec.items():
            self.status_value(f"{fld}.{k}", v)
            if k != "others" and k not in families.FAMILIES:
                raise self.error(f"unknown SoC family {k!r} in status; valid: {', '.join(families.FAMILIES)} "
                                 "or 'others'", fld)
        out, others = {}, spec.get("others")
        for f in fams:
            if f in spec:
                out[f] = spec[f]
            elif others is not None:
                out[f] = others
            else:
                raise self.error(f"no expected status for family {f!r} (give it, or 'others')", fld)
        return out

    def dtype(self, fld, name) -> str:
        try:
            return dtypes.lookup(name).name
        except KeyError as e:
            raise self.error(str(e.args[0]), fld) from None

    def format(self, fld, name) -> str:
        if name not in formats.FORMATS and name != formats.CALLER:
            raise self.error(f"unknown format {name!r}; known: {', '.join(formats.FORMATS)}", fld)
        return name

    def layout(self, fld, name) -> str:
        if name not in LAYOUTS:
            raise self.error(f"unknown layout {name!r}; known: {', '.join(LAYOUTS)}", fld)
        return name

    def shape(self, fld, shape) -> tuple[int, ...]:
        """A shape that is allocated: dimensions >= 0, at most MAX_ELEMENTS elements."""
        self.any_shape(fld, shape)
        if any(s < 0 for s in shape):
            raise self.error(f"negative dimension in shape {shape}", fld)
        if any(s > MAX_ELEMENTS for s in shape) or math.prod(shape) > MAX_ELEMENTS:
            raise self.error(f"shape {shape} has more than {MAX_ELEMENTS} elements (the cap for cases whose "
                             "inputs are allocated)", fld)
        return tuple(shape)

    def ranks(self, fld, spec) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """A tensor's `ranks:` (a list, or a mapping family/'others' -> list) as (family, ranks) pairs."""
        table = spec if isinstance(spec, dict) else {"others": spec}
        for k, ranks in table.items():
            if k != "others" and k not in families.FAMILIES:
                raise self.error(f"unknown SoC family {k!r} in ranks; valid: {', '.join(families.FAMILIES)} "
                                 "or 'others'", fld)
            if max(ranks) > MAX_RANK:
                raise self.error(f"rank {max(ranks)} is more than {MAX_RANK}", fld)
        return tuple((k, tuple(sorted(v))) for k, v in table.items())

    def rank(self, fld, shape, tensor: Param, fams) -> None:
        """An allocated shape of `tensor` within the ranks the op takes on every family of the case.
        (A wrong rank on purpose belongs in a scenario's `tensors:`: described, never prepared.)"""
        if not tensor.ranks:
            return
        for fam in fams:
            ranks = tensor.ranks_on(fam)
            if ranks is None:
                raise self.error(f"the signature gives {tensor.name}'s ranks per family, but none for {fam!r} "
                                 "(give it, or 'others')", fld)
            if len(shape) not in ranks:
                on = "" if dict(tensor.ranks).keys() == {"others"} else f" on {fam}"
                raise self.error(f"shape {list(shape)} has rank {len(shape)}, but {tensor.name} takes rank "
                                 f"{' or '.join(map(str, ranks))}{on} (signature ranks); a wrong rank on purpose "
                                 "goes in an invalid scenario's tensors:", fld)

    def any_shape(self, fld, shape) -> tuple[int, ...]:
        """A shape only described to the library (an invalid scenario's tensor): int64 dimensions."""
        if len(shape) > MAX_RANK:
            raise self.error(f"rank {len(shape)} is more than {MAX_RANK}", fld)
        for d in shape:
            if not INT64_MIN <= d <= INT64_MAX:
                raise self.error(f"dimension {d} does not fit int64", fld)
        return tuple(shape)

    def standard(self, fld, name, dtype=None) -> str:
        if name not in self.vocab.standards:
            raise self.error(f"unknown precision standard {name!r}; known: {', '.join(self.vocab.standards)}", fld)
        gap = self.vocab.standard_gap(name, dtype) if dtype is not None else None
        if gap:
            raise self.error(gap, fld)
        return name

    def distribution(self, fld, ref, named):
        try:
            return distributions.resolve(ref, named)
        except ValueError as e:
            raise self.error(str(e), fld) from None

    # ------------------------------------------------------------ per tensor

    def per_tensor(self, fld, spec, op: OpSpec, what: str, check) -> dict:
        """A value for every tensor: one string for all, or a mapping by tensor name with 'default'."""
        names = [p.name for p in op.tensor_params]
        if isinstance(spec, str):
            spec = {"default": spec}
        for k in spec:
            if k != "default" and k not in names:
                raise self.error(f"{what} given for unknown tensor {k!r}", fld)
        out = {}
        for t in names:
            value = spec.get(t, spec.get("default"))
            if value is None:
                raise self.error(f"no {what} for tensor {t!r} (give it, or 'default')", fld)
            out[t] = check(fld, value)
        return out

    def formats(self, fld, spec, op) -> dict:
        return self.per_tensor(fld, spec, op, "format", self.format)

    def layouts(self, fld, spec, op) -> dict:
        return self.per_tensor(fld, spec, op, "layout", self.layout)

    # ------------------------------------------------------------ attributes

    def attrs(self, fld, attrs, op: OpSpec, partial=False) -> dict:
        known = {p.name: p for p in op.attr_params}
        for k in attrs:
            if k not in known:
                raise self.error(f"unknown attribute {k!r}; the signature has: {', '.join(known) or 'none'}",
                                 f"{fld}.{k}")
        out = {}
        for name, p in known.items():
            if name not in attrs:
                if partial:
                    continue
                raise self.error(f"missing attribute {name!r}", f"{fld}.{name}")
            out[name] = self._attr(f"{fld}.{name}", name, p.type, attrs[name])
        return out

    def _attr(self, where, name, kind, v):
        if kind == "int_array":
            if v is not None and not (isinstance(v, list) and all(_is_int(x) for x in v)):
                bad = next((x for x in v if not _is_int(x)), None) if isinstance(v, list) else None
                raise self.error(f"{name} must be a list of integers (or null), got {v!r}"
                                 f"{messages.hint(bad, {'integer'})}", where)
            if v is not None and len(v) > MAX_ARRAY_LEN:
                raise self.error(f"{name} has {len(v)} entries, more than {MAX_ARRAY_LEN}", where)
            if v is not None and not all(INT64_MIN <= x <= INT64_MAX for x in v):
                raise self.error(f"{name} entries must fit int64, got {v!r}", where)
            return None if v is None else list(v)
        want = SCALAR_KINDS[kind]
        if want is bool:
            ok = isinstance(v, bool)
        elif want is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        else:
            ok = _is_int(v)
        if not ok:
            expected = {bool: "boolean", float: "number", int: "integer"}[want]
            raise self.error(f"{name} must be {kind}, got {v!r}{messages.hint(v, {expected})}", where)
        if kind == "int8" and not -128 <= v <= 127:
            raise self.error(f"{name} must fit int8, got {v}", where)
        if kind == "int64" and not INT64_MIN <= v <= INT64_MAX:
            raise self.error(f"{name} must fit int64, got {v}", where)
        if kind == "double" and isinstance(v, int) and not -1e308 < v < 1e308:
            raise self.error(f"{name} must fit a C double, got an integer of {len(str(abs(v)))} digits", where)
        return v

    def deviations(self, items, fld: str = "deviations") -> tuple[Deviation, ...]:
        """The deviation entries `items` (a group's `deviations`, a file's `atk_deviations`: `fld`)."""
        out = []
        for i, d in enumerate(items or []):
            if d["backend"] not in self.vocab.backends:
                raise self.error(f"unknown backend {d['backend']!r}; valid: {', '.join(self.vocab.backends)}",
                                 f"{fld}.{i}.backend")
            dts = tuple(self.dtype(f"{fld}.{i}.dtype", x) for x in d.get("dtype", []))
            fams = self.families(f"{fld}.{i}.families", d["families"]) if "families" in d else ()
            out.append(Deviation(d["backend"], dts, d["reason"], tuple(fams)))
        return tuple(out)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def expand_matrix(path, op: OpSpec, g: dict, named: dict, vocab: Vocabulary) -> list[Case]:
    name, m = g["name"], g["matrix"]
    w = Where(path, name, vocab)
    count = math.prod(len(m[k]) for k in ("shape", "dtype", "index_dtype", "format", "layout", "values", "attrs")
                      if k in m)
    if count > MAX_CASES:       # before looking at any entry: the lists may be long
        raise w.error(f"the matrix expands to {count} cases, more than {MAX_CASES}", "matrix")
    fams = w.families("families", g.get("families", op.families))
    status = w.status("status", g.get("status", 0), fams)
    standard = w.standard("standard", g.get("standard", op.standard))
    shapes = [w.shape(f"matrix.shape.{i}", s) for i, s in enumerate(m["shape"])]
    for i, shape in enumerate(shapes):
        w.rank(f"matrix.shape.{i}", shape, op.shaped, fams)
    dts = [w.dtype("matrix.dtype", d) for d in m["dtype"]]
    for d in dts:
        w.standard("standard", standard, d)
    idts = [w.dtype("matrix.index_dtype", d) for d in m.get("index_dtype", [])] or [None]
    if any(p.dtype == "index" for p in op.tensor_params) and idts == [None]:
        raise w.error("the op has an index tensor: give matrix.index_dtype", "matrix.index_dtype")
    # no `format`: every tensor gets the label real callers give its rank (formats.caller_label)
    fmts = [w.formats(f"matrix.format.{i}", f, op) for i, f in enumerate(m["format"])] if "format" in m else [None]
    lays = [w.layouts(f"matrix.layout.{i}", x, op) for i, x in enumerate(m.get("layout", ["contiguous"]))]
    dists = [w.distribution("matrix.values", v, named) for v in m.get("values", ["uniform"])]
    attr_sets = [w.attrs(f"matrix.attrs.{i}", a, op) for i, a in enumerate(m["attrs"])]
    devs = w.deviations(g.get("deviations"))
    cases = []
    for shape, dt, idt, fmt, lay, dist, attrs in itertools.product(shapes, dts, idts, fmts, lays, dists, attr_sets):
        fmt = caller_formats(op, len(shape), fmt)
        case_name = ids.matrix_case_name(name, dt, idt, shape, attrs, fmt, lay, dist.name)
        cases.append(Case(op, name, case_name, "valid", shape, dt, idt, fmt, lay, attrs, dist,
                          fams, status, standard, g.get("tier", "default"), g.get("note"), deviations=devs,
                          timeout_s=g.get("timeout_s"), deterministic=bool(g.get("deterministic", False)),
                          relaunch=bool(g.get("relaunch", False)), perf=_perf(w, g.get("perf"))))
    return cases


def caller_formats(op: OpSpec, rank: int, given: dict | None = None) -> dict:
    """The case's labels: those `given`, where a tensor's is CALLER (or none is given) the label
    real callers give a tensor of `rank` (all of an op's tensors share the case's rank)."""
    given = given or {}
    return {p.name: formats.caller_label(rank) if given.get(p.name, formats.CALLER) == formats.CALLER
            else given[p.name] for p in op.tensor_params}


def _relabel(change: dict, base_spec: str, rank: int) -> dict:
    """A scenario's change of one tensor with its CALLER label resolved. A tensor the base labels as
    callers do (CALLER, or no format given) and the scenario reshapes keeps a caller's label, that
    of its new rank, unless the change names a label of its own."""
    label = change.get("format", base_spec if "shape" in change else None)
    if label != formats.CALLER:
        return change
    return dict(change, format=formats.caller_label(len(change["shape"]) if "shape" in change else rank))


def _perf(w: Where, spec) -> dict | None:
    """A group's `perf:` as the case carries it: None (not timed unless --perf), or its settings
    ({} for the defaults), checked as the measuring loop will use them."""
    if spec is None or spec is False:
        return None
    settings = {} if spec is True else dict(spec)
    for key in ("rel_halfwidth", "budget_s", "tolerance"):
        if key in settings and not settings[key] < math.inf:       # .inf and .nan pass the schema's bounds
            raise w.error(f"must be a finite number, got {settings[key]}", f"perf.{key}")
    try:
        names = perfstats.StoppingRule.__dataclass_fields__
        perfstats.StoppingRule(**{k: v for k, v in settings.items() if k in names})
    except ValueError as e:
        raise w.error(str(e), "perf") from None
    return settings


def _tensor_changes(w: Where, fld: str, changes: dict, op: OpSpec) -> dict:
    tensor_names = {p.name for p in op.tensor_params}
    out = {}
    for t, ch in (changes or {}).items():
        if t not in tensor_names:
            raise w.error(f"unknown tensor {t!r}", f"{fld}.tensors")
        ch = dict(ch)
        if "dtype" in ch:
            ch["dtype"] = w.dtype(f"{fld}.tensors.{t}.dtype", ch["dtype"])
        if "format" in ch:
            w.format(f"{fld}.tensors.{t}.format", ch["format"])
        if "layout" in ch:
            w.layout(f"{fld}.tensors.{t}.layout", ch["layout"])
        if "shape" in ch:
            w.any_shape(f"{fld}.tensors.{t}.shape", ch["shape"])
        out[t] = ch
    return out


def _accepted_ranks(w: Where, fld: str, changes: dict, op: OpSpec, status: dict) -> None:
    """A described tensor may have any rank, but a family cannot accept (status 0) a rank the
    op does not take: such a scenario contradicts the signature's ranks."""
    params = {p.name: p for p in op.tensor_params}
    for t, ch in changes.items():
        for fam, s in status.items():
            ranks = params[t].ranks_on(fam)
            if "shape" in ch and s == 0 and ranks is not None and len(ch["shape"]) not in ranks:
                raise w.error(f"{t} of rank {len(ch['shape'])} is expected to pass on {fam} (status 0), but "
                              f"{t} takes rank {' or '.join(map(str, ranks))} (signature ranks)",
                              f"{fld}.tensors.{t}.shape")


def _agrees_with_check(w: Where, fld: str, status: dict, check) -> None:
    """A scenario aimed at check Bx expects Bx's status, or 0 where a family accepts the call
    (e.g. a dtype only 950 supports); any other status means the scenario or the check is wrong."""
    if check is None or check.status is None:
        return
    for fam, s in status.items():
        if s not in (0, check.status):
            raise w.error(f"status {s} on {fam} disagrees with check {check.id}, which returns {check.status} "
                          "(or 0 where the family accepts the call)", f"{fld}.status")


def expand_invalid(path, op: OpSpec, g: dict, named: dict, vocab: Vocabulary) -> list[Case]:
    name, block = g["name"], g["invalid"]
    w = Where(path, name, vocab)
    if g.get("perf"):
        raise w.error("only a matrix group's cases can be timed (an invalid scenario launches no kernel)", "perf")
    group_fams = w.families("families", g.get("families", op.families))
    checks = {c.id: c for c in op.checks}
    nullable = {p.name for p in op.params if p.type in ("tensor", "int_array")} | set(OUT_POINTERS)
    cases = []
    for i, sc in enumerate(block["scenarios"]):
        fld = f"invalid.scenarios.{i}"
        changed = sc.get("base") or {}
        base = dict(block["base"], **changed)

        def src(key):       # where a base value came from: the scenario's changes or the group's base
            return f"{fld}.base.{key}" if key in changed else f"invalid.base.{key}"
        fams = w.families(f"{fld}.families", sc.get("families", group_fams))
        status = w.status(f"{fld}.status", sc["status"], fams)
        if sc.get("check") is not None and op.checks and sc["check"] not in checks:
            raise w.error(f"check {sc['check']!r} is not declared in 'checks'", f"{fld}.check")
        _agrees_with_check(w, fld, status, checks.get(sc.get("check")))
        null = sc.get("null")
        if null is not None and null not in nullable:
            raise w.error(f"null names {null!r}, which is not a tensor or int_array parameter "
                          f"nor one of phase 1's out-pointers ({', '.join(OUT_POINTERS)})", f"{fld}.null")
        changes = _tensor_changes(w, fld, sc.get("tensors"), op)
        _accepted_ranks(w, fld, changes, op, status)
        attrs = w.attrs(src("attrs"), base["attrs"], op)
        attr_changes = w.attrs(f"{fld}.attrs", sc.get("attrs") or {}, op, partial=True)
        dt = w.dtype(src("dtype"), base["dtype"])
        idt = w.dtype(src("index_dtype"), base["index_dtype"]) if base.get("index_dtype") else None
        shape = w.shape(src("shape"), base["shape"])
        spec = w.formats(src("format"), base["format"], op) if "format" in base else {}
        fmt = caller_formats(op, len(shape), spec)
        changes = {t: _relabel(ch, spec.get(t, formats.CALLER), len(shape)) for t, ch in changes.items()}
        lay = w.layouts(src("layout"), base.get("layout", "contiguous"), op)
        dist = w.distribution(src("values"), base.get("values", "uniform"), named)
        label = sc.get("name") or (f"{sc['check']}" if sc.get("check") else f"s{i}")
        w.rank(src("shape"), shape, op.shaped, fams)     # the base is prepared as a valid call first
        cases.append(Case(op, name, f"{name}[{label}]", "invalid", shape,
                          dt, idt, fmt, lay, attrs, dist, fams, status, op.standard, g.get("tier", "default"),
                          sc.get("note", g.get("note")), sc.get("check"), Mutation(null, changes, attr_changes),
                          timeout_s=g.get("timeout_s")))
    return cases
