"""Each axis of each check on its own: a check that compares shapes or validates a per-axis
attribute must be hit through every axis alone, or a check that looks at one axis only passes.

A check with `axes:` in its case file (e.g. `axes: [N, C, H, W]` for a shape comparison,
`axes: [D, H, W]` for padding <= kernel/2) needs, on every family it applies to and for every
axis named, an invalid case naming the check, expecting the check's status there, whose change
touches that axis and no other. What a scenario touches is read from the case, not declared:

* a tensor shape change of the same rank: the dimensions that differ from the prepared base
  shape, named from the end (W, H, D for the op's spatial rank, then C, then N);
* an attribute list change: the positions whose value differs from the base's once both are
  expanded to one value per spatial axis (a length-1 list applies to every axis).

A rank change, a list-length change, a null or a dtype/format change touches no single axis.

A check with `boundary:` too ("value > boundary": kernel, stride, dilation > 0) counts, per axis,
only the cases whose offending element is exactly the boundary: a check written `<` where `<=` is
due rejects every other value the same way.

`python -m harness.audit.coverage` prints the table and counts the gaps in its exit status;
tests/test_per_axis.py fails on a gap.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import inputs
from ..model import Case, OpSpec

SPATIAL = ("D", "H", "W")


@dataclass(frozen=True)
class AxisGap:
    op: str
    check: str
    family: str
    axis: str
    boundary: int | None = None      # the check's, when it has one: the gap is a case at that value

    def __str__(self) -> str:
        at = "" if self.boundary is None else f" with the value {self.boundary}, the boundary,"
        return (f"{self.op} {self.check} on {self.family}: no case offends on {self.axis} alone{at} "
                f"(expecting the check's status)")


def spatial_rank(op: OpSpec) -> int:
    """The dims the op pools over (its case file's `spatial_rank`)."""
    return op.spatial_rank


def dim_names(op: OpSpec, rank: int) -> tuple[str, ...]:
    """Axis names of a tensor of `rank` dimensions: spatial last, then C, then N. The leading
    dim of an unbatched tensor is C for the pools but N for MaxUnpool3d's (N,D,H,W): "?", never
    counted as either."""
    s = spatial_rank(op)
    if rank == s + 2:
        return ("N", "C") + SPATIAL[-s:]
    return ("?",) + SPATIAL[-s:] if rank == s + 1 else ()


def _per_axis(op: OpSpec, value) -> tuple | None:
    """An attribute list as one value per spatial axis, or None when it is not per-axis."""
    s = spatial_rank(op)
    if not isinstance(value, (list, tuple)):
        return None
    if len(value) == 1:
        return tuple(value) * s
    return tuple(value) if len(value) == s else None


class _BaseShapes:
    """Prepared (pre-mutation) tensor shapes of invalid cases, cached per base configuration."""

    def __init__(self):
        self._seen: dict[tuple, dict[str, tuple[int, ...]]] = {}

    def __call__(self, case: Case) -> dict[str, tuple[int, ...]]:
        key = (case.op.name, case.group, case.shape, case.dtype, case.index_dtype, repr(sorted(case.attrs.items())),
               repr(sorted(case.formats.items())))
        if key not in self._seen:
            try:
                prepared = inputs.prepare(case)
            except ValueError:      # a base the golden cannot prepare (a run says so): no axis to count
                self._seen[key] = {}
                return self._seen[key]
            shapes = {k: tuple(v.shape) for k, v in prepared.items() if hasattr(v, "shape")}
            out_shape = shapes.get(case.op.output_like, tuple(case.shape))
            shapes.update({p.name: out_shape for p in case.op.params if p.output and p.type == "tensor"})
            self._seen[key] = shapes
        return self._seen[key]


def touched(case: Case, base_shapes) -> frozenset[str] | None:
    """The axes an invalid case's change touches; None when some change is not per-axis."""
    values = touched_values(case, base_shapes)
    return None if values is None else frozenset(values)


def touched_values(case: Case, base_shapes) -> dict[str, object] | None:
    """Axis -> the new value there (an attribute element, or a tensor's new dimension) for every axis
    an invalid case's change touches; None when some change is not per-axis."""
    m = case.mutation
    if m is None or m.null:
        return None
    axes: dict[str, object] = {}
    for name, change in m.tensors.items():
        if "shape" not in change:
            continue
        before, after = base_shapes(case).get(name), tuple(change["shape"])
        if before is None or len(before) != len(after):
            return None
        names = dim_names(case.op, len(after))
        if not names:
            return None
        axes.update({names[i]: b for i, (a, b) in enumerate(zip(before, after)) if a != b})
    for name, value in m.attrs.items():
        before, after = _per_axis(case.op, case.attrs.get(name)), _per_axis(case.op, value)
        if before is None or after is None:
            if isinstance(value, (list, tuple)):
                return None
            continue            # a scalar attribute (ceilMode, divisorOverride) is no axis
        axes.update({SPATIAL[-spatial_rank(case.op):][i]: b for i, (a, b) in enumerate(zip(before, after)) if a != b})
    return axes


def table(op: OpSpec, cases: list[Case], base_shapes=None) -> dict[str, dict[str, dict[str, list[Case]]]]:
    """check id -> family -> axis -> cases offending on that axis alone (checks with `axes`)."""
    base_shapes = base_shapes or _BaseShapes()
    out = {}
    for chk in op.checks:
        if not chk.axes or chk.untestable:
            continue
        named = [c for c in cases if c.kind == "invalid" and c.check == chk.id]
        single = {c.id: touched_values(c, base_shapes) for c in named}
        per = out.setdefault(chk.id, {})
        for fam in chk.families:
            per[fam] = {axis: [c for c in named if fam in c.families and c.expected_status(fam) == chk.status
                               and _alone_on(single[c.id], axis, chk.boundary)] for axis in chk.axes}
    return out


def _alone_on(values: dict | None, axis: str, boundary: int | None) -> bool:
    """The change touches `axis` and no other (at the boundary value, where the check has one)."""
    return values is not None and set(values) == {axis} and (boundary is None or values[axis] == boundary)


def gaps(loaded) -> list[AxisGap]:
    base_shapes = _BaseShapes()
    out = []
    for op, cases in loaded:
        boundary = {c.id: c.boundary for c in op.checks}
        out += [AxisGap(op.name, cid, fam, axis, boundary[cid]) for cid, per in table(op, cases, base_shapes).items()
                for fam, by_axis in per.items() for axis, found in by_axis.items() if not found]
    return out


def render(loaded) -> str:
    base_shapes = _BaseShapes()
    lines = ["| op | check | family | " + " | ".join(("N", "C") + SPATIAL) + " |", "|---|---|---|" + "---|" * 5]
    for op, cases in loaded:
        for cid, per in table(op, cases, base_shapes).items():
            for fam, by_axis in per.items():
                cells = [("**NO CASE**" if not by_axis[a] else ", ".join(c.name.split("[", 1)[1].rstrip("]")
                                                                          for c in by_axis[a]))
                         if a in by_axis else "" for a in ("N", "C") + SPATIAL]
                lines.append(f"| {op.name} | {cid} | {fam} | " + " | ".join(cells) + " |")
    return "\n".join(lines)

