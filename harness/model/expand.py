"""Expansion of a validated case file's groups into Cases.

A `matrix` group is the product of its lists (valid cases); an `invalid` group
is one base configuration plus scenarios that each break one thing. Every
problem is a CaseFileError naming the file, the group and the field.
"""
from __future__ import annotations

import itertools
import math

from ..core import dtypes, formats, perfstats
from . import ids
from .fields import MAX_CASES, MAX_ELEMENTS, Where
from .spec import OUT_POINTERS, Case, Mutation, OpSpec
from .vocabulary import Vocabulary


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
        for key, value in (("dtype", dt), ("index_dtype", idt)):
            if value is not None and value.torch_name is None:    # found at load, not at run
                raise w.error(f"dtype {value.name!r} has no torch equivalent, and a scenario's base is prepared as a "
                              f"valid call first: pass it as a tensor change (tensors: {{<name>: {{dtype: {value}}}}}), "
                              "an unbacked descriptor", src(key))
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
