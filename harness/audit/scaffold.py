"""A new operator's case file, started from what the project's gates will demand of it.

    python -m harness.audit.coverage --scaffold cases/<op>.yaml [--dtypes float32,float16] [--index-dtypes int32]

reads the header a newcomer wrote (op, golden, standard, families, signature with ranks, output_like,
spatial_rank, checks) and writes the groups the gates test for (harness/audit: coverage, traceability,
per-axis, size limits) below it: every memory layout and value class for each dtype, a shape whose
planes span tiles and cores, and one invalid scenario per testable check (per axis where the check has
`axes:`, over and at its limit where it has `limit:`). What the scaffold can derive it writes; what only
a person can decide (the change that breaks a check, an expected status on a family the check does not
name) is a `TODO` comment beside a scenario that fails until it is decided, never a silent pass.
"""
from __future__ import annotations

import math
from pathlib import Path

import yaml

from ..core import dtypes as dtypes_mod
from ..model.spec import LAYOUTS, OUT_POINTERS
from .requirements import AI_CORES, FLOAT_CLASSES, INT_CLASSES, TILE_ELEMENTS

SPATIAL = ("D", "H", "W")
ATTR_DEFAULTS = {"bool": False, "int64": 0, "int8": 0, "double": 0.0}


def _flow(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=1000, sort_keys=False).strip()


def base_shape(spatial_rank: int, rank: int) -> list[int]:
    """A small valid-looking shape: N=2, C=3 before spatial dims of 9 (4 for the depth of a 3-D op)."""
    spatial = [4, 9, 9][-spatial_rank:]
    return ([2, 3] + spatial)[-rank:]


def tile_shape(spatial_rank: int, rank: int) -> list[int]:
    """More planes than AI cores (not a multiple of them), each over a tile and not a multiple of it,
    with an odd width: where tail-tile and last-core bugs show (coverage.spans_tiles_and_cores)."""
    spatial = [3, 11, 13][-spatial_rank:]
    while math.prod(spatial) <= TILE_ELEMENTS:
        spatial[-1] += 2 * TILE_ELEMENTS // math.prod(spatial[:-1]) + 1
        spatial[-1] += 1 - spatial[-1] % 2
    lead = [7, 7][: rank - spatial_rank]
    assert math.prod(lead) > AI_CORES or rank - spatial_rank < 2
    return lead + spatial


def _attrs(signature: list[dict], spatial_rank: int) -> dict:
    out = {}
    for p in signature:
        if p["type"] == "int_array":
            out[p["name"]] = [2] * spatial_rank
        elif p["type"] in ATTR_DEFAULTS:
            out[p["name"]] = ATTR_DEFAULTS[p["type"]]
    return out


def _value_classes(dtypes: list[str]) -> list[str]:
    """One preset of each value class the coverage gate asks for: the sum-safe one where the class has
    one (README: where windows overlap, ±max among the gradients makes the golden depend on the order
    of the additions; the scaffold cannot tell whether the op's windows overlap, and ±max stays
    covered by `large`)."""
    floats = any(getattr(dtypes_mod.BY_NAME.get(dtypes_mod.canonical(d)), "is_float", False) for d in dtypes)
    classes = FLOAT_CLASSES if floats else INT_CLASSES
    return ["uniform"] + sorted({next((n for n in names if n.endswith("_sum_safe")), names[0])
                                 for names in classes.values()})


def _tensors_named(what: str, signature: list[dict], kinds=("tensor",)) -> list[str]:
    """The parameters of `kinds` a check's description names, in the order it names them."""
    named = [p["name"] for p in signature if p["type"] in kinds and p["name"] in what]
    return sorted(named, key=what.index)


def _placement(check: dict, families: list[str]) -> tuple[dict, str | None]:
    """The scenario's `families:`/`status:` for a check, and a TODO where a person must decide: on a
    family of the op that the check does not name, the same change may pass or fail another check."""
    fams = check.get("families") or families
    if set(fams) == set(families):
        return {"status": check["status"]}, None
    out = {"status": {**{f: check["status"] for f in fams}, "others": 0}}
    if not set(fams) <= set(families):
        out["families"] = sorted(set(families) | set(fams), key=lambda f: (f not in families, f))
    others = [f for f in families if f not in fams]
    return out, (f"TODO {check['id']}: the status on {', '.join(others)} (the check does not apply there)"
                 if others else None)


class _Scenarios:
    """The invalid scenarios of the checks, each a (TODO comment or None, scenario) pair. `shapes`: the
    base call's prepared shape of every tensor, when the golden could prepare it."""

    def __init__(self, header: dict, base: dict, shapes: dict | None):
        self.header, self.base, self.shapes, self.out = header, base, shapes, []
        self.sig, self.fams = header["signature"], header["families"]

    def add(self, chk: dict, name: str, change: dict, todo: str | None = None) -> None:
        placed, other = _placement(chk, self.fams)
        notes = [t for t in (todo, other) if t]
        self.out.append(("; ".join(notes) or None, {"name": name, "check": chk["id"], **change, **placed}))

    def for_check(self, chk: dict) -> None:
        cid, what = chk["id"], chk.get("what", "")
        # the out-pointers are nullable parameters of every phase 1 too (`null: workspaceSize`)
        nullable = sorted(_tensors_named(what, self.sig, ("tensor", "int_array"))
                          + [o for o in OUT_POINTERS if o in what], key=what.index)
        if chk.get("limit"):
            self._limit(chk)
        elif chk.get("axes"):
            for axis in chk["axes"]:
                self._axis(chk, axis)
        elif chk["status"] == 161001 and nullable:
            self.add(chk, cid, {"null": nullable[0]})
        else:
            self.add(chk, cid, {}, f"TODO {cid} ({what}): change the base so that {cid} alone fails "
                                   "(tensors:/attrs:/base:)")

    def _limit(self, chk: dict) -> None:
        lim, cid = chk["limit"], chk["id"]
        rank = len(self.base["shape"])
        for side, product in (("over", lim["max"] + 1), ("at", lim["max"])):
            change = {"tensors": {lim["tensor"]: {"shape": [1] * (rank - 1) + [product]}}}
            if side == "over":
                self.add(chk, f"{cid}-{side}", change)
            else:
                placed, _ = _placement(chk, self.fams)
                self.out.append((f"TODO {cid}: status 0 exactly at the limit, unless a later check refuses this "
                                 "shape (then that check's status)",
                                 {"name": f"{cid}-{side}", "check": cid, **change, "status": 0,
                                  **({"families": placed["families"]} if "families" in placed else {})}))

    def _axis(self, chk: dict, axis: str) -> None:
        """A scenario that breaks the check on `axis` alone: an attribute's element set to the check's
        boundary, or one dimension of the tensor the check names first (the one it compares with the
        others: "out shape == self shape") changed, to the boundary where the check has one."""
        cid, what = chk["id"], chk.get("what", "")
        spatial = SPATIAL[-self.header["spatial_rank"]:]
        arrays = _tensors_named(what, self.sig, ("int_array",))
        tensors = _tensors_named(what, self.sig)
        if arrays and "boundary" not in chk and (not tensors or what.index(arrays[0]) < what.index(tensors[0])):
            # a check of an attribute's elements per axis ("kernelSize[D,H,W] > 0"): its axes are the
            # attribute's elements, not a tensor's dims; the value that breaks it is the check's to say
            self.add(chk, f"{cid}-{axis}", {}, f"TODO {cid}-{axis}: set the {axis} element of {arrays[0]} to a "
                                                  f"value {cid} refuses (or give the check a `boundary:`)")
            return
        if "boundary" in chk and arrays:
            if axis in spatial and arrays[0] in self.base["attrs"]:
                values = list(self.base["attrs"][arrays[0]])
                values = values * len(spatial) if len(values) == 1 else values
                values[spatial.index(axis)] = chk["boundary"]
                self.add(chk, f"{cid}-{axis}", {"attrs": {arrays[0]: values}})
            else:
                self.add(chk, f"{cid}-{axis}", {}, f"TODO {cid}-{axis}: set the {axis} element of {arrays[0]} "
                                                      f"to {chk['boundary']}, the boundary")
            return
        tensors = tensors or [self.header["output_like"]]
        target = tensors[0]
        shape = list((self.shapes or {}).get(target) or ())
        names = ("N", "C") + spatial if len(shape) == len(spatial) + 2 else ("?",) + spatial
        if not shape or axis not in names:
            self.add(chk, f"{cid}-{axis}", {}, f"TODO {cid}-{axis}: change one tensor's {axis} alone "
                                                  f"({target}'s shape is not known: is golden/{self.header['golden']}.py "
                                                  f"there and does it prepare the base call?)")
            return
        i = names.index(axis)
        shape[i] = chk["boundary"] if "boundary" in chk else shape[i] + 1
        self.add(chk, f"{cid}-{axis}", {"tensors": {target: {"shape": shape}}},
                 None if len(tensors) > 1 or "boundary" in chk else
                 f"TODO {cid}-{axis}: {target}'s {axis} changed alone; check that {cid} compares it")


def groups_text(header: dict, dtypes: list[str], index_dtypes: list[str] | None = None,
                shape: list[int] | None = None, attrs: dict | None = None, shapes: dict | None = None) -> str:
    """The scaffolded `groups:` block (YAML text with its TODO comments). shape, attrs: a valid call's
    (else small defaults, which a person then corrects: a TODO says so)."""
    out_param = next(p for p in header["signature"] if p.get("output"))
    ranks = next((p.get("ranks") for p in header["signature"] if p["name"] == header["output_like"]), None) \
        or out_param.get("ranks") or [header["spatial_rank"] + 2]
    ranks = ranks if isinstance(ranks, list) else sorted({r for v in ranks.values() for r in v})
    rank = len(shape) if shape else max(ranks)
    todo_index = not index_dtypes and any(p.get("dtype") == "index" for p in header["signature"])
    index_dtypes = ["int64"] if todo_index else index_dtypes
    given = attrs is not None
    params = header["signature"] + (header.get("input_attrs") or [])
    attrs = {**_attrs(params, header["spatial_rank"]), **(attrs or {})}
    index = {"index_dtype": index_dtypes} if index_dtypes else {}
    base = {"shape": list(shape) if shape else base_shape(header["spatial_rank"], rank), "dtype": dtypes[0],
            **({"index_dtype": index_dtypes[0]} if index_dtypes else {}), "attrs": attrs}
    lines = ["groups:"] + ([] if given else [
             "  # TODO attrs: the scaffold's defaults; give every group the attributes your op's valid calls use"]) + (
             ["  # TODO index_dtype: int64 by default; give the index dtypes your op accepts"] if todo_index else []) + [
             "  - name: layouts",
             f"    matrix: {_flow({'shape': [base['shape']], 'dtype': dtypes, **index, 'layout': list(LAYOUTS), 'values': ['uniform'], 'attrs': [attrs]})}",
             "  - name: value_classes",
             f"    matrix: {_flow({'shape': [base['shape']], 'dtype': dtypes, **index, 'values': _value_classes(dtypes), 'attrs': [attrs]})}",
             "  - name: tiles_and_cores",
             f"    matrix: {_flow({'shape': [tile_shape(header['spatial_rank'], rank)], 'dtype': dtypes, **index, 'attrs': [attrs]})}"]
    scen = _Scenarios(header, base, shapes)
    for chk in header.get("checks") or []:
        if chk.get("status") is not None and not chk.get("untestable"):
            scen.for_check(chk)
    if scen.out:
        lines += ["  - name: checks", "    invalid:", f"      base: {_flow(base)}", "      scenarios:"]
        for todo, sc in scen.out:
            if todo:
                lines.append(f"        # {todo}")
            lines.append(f"        - {_flow(sc)}")
    return "\n".join(lines) + "\n"


def scaffold_file(path: Path, dtypes: list[str], index_dtypes: list[str] | None = None,
                  shape: list[int] | None = None, attrs: dict | None = None) -> tuple[str, bool]:
    """Rewrite `path` as its header (everything before `groups:`) plus the scaffolded groups. Returns
    the text, and whether the op's golden prepared the base call (else the per-axis shape changes
    are TODOs: write the golden first, then scaffold again)."""
    text = Path(path).read_text(encoding="utf-8")
    head = text.split("\ngroups:", 1)[0].rstrip("\n") + "\n"
    header = yaml.safe_load(head) or {}
    missing = [k for k in ("op", "golden", "families", "signature", "output_like", "spatial_rank") if k not in header]
    if missing:
        raise ValueError(f"{path}: the header needs {', '.join(missing)} before it can be scaffolded")
    new = head + "\n" + groups_text(header, dtypes, index_dtypes, shape, attrs)
    Path(path).write_text(new, encoding="utf-8")
    shapes = _base_shapes(Path(path))          # once the golden can prepare the base: exact per-axis changes
    if shapes:
        new = head + "\n" + groups_text(header, dtypes, index_dtypes, shape, attrs, shapes)
        Path(path).write_text(new, encoding="utf-8")
    return new, shapes is not None


def _base_shapes(path: Path) -> dict | None:
    """Every tensor's shape in the scaffolded base call, prepared by the op's golden (None when the
    file does not load yet or the golden cannot prepare that call)."""
    from .. import inputs
    from ..core.errors import CaseFileError
    from ..operators import load_case_file
    try:
        op, cases = load_case_file(path)
        case = next(c for c in cases if c.group == "checks")
        prepared = inputs.prepare(case)
    except (CaseFileError, StopIteration, ValueError):
        return None
    shapes = {k: list(v.shape) for k, v in prepared.items() if hasattr(v, "shape")}
    out_shape = shapes.get(op.output_like, list(case.shape))
    shapes.update({p.name: out_shape for p in op.params if p.output and p.type == "tensor"})
    return shapes
