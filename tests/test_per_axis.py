"""Each axis of each shape or per-axis attribute check is hit on its own, on every family the
check applies to, and the checker notices a scenario that goes missing or touches two axes."""
from __future__ import annotations

import dataclasses


import pytest

from harness.audit import per_axis
from harness.model import Mutation

pytestmark = pytest.mark.loops_over_ops


def test_every_axis_of_every_check_is_hit_alone(loaded):
    missing = per_axis.gaps(loaded)
    assert not missing, "axes without a case of their own:\n" + "\n".join(map(str, missing))


def test_shape_and_per_axis_checks_declare_their_axes(loaded):
    """Every op has checks with axes (shape comparisons and attribute values)."""
    for op, _ in loaded:
        assert sum(1 for c in op.checks if c.axes) >= 1, f"{op.name} declares no per-axis check"
    assert sum(1 for op, _ in loaded for c in op.checks if c.axes) >= 25


def _op(loaded, prefix):
    return next((op, cases) for op, cases in loaded if op.name.startswith(prefix))


def test_a_removed_axis_case_is_a_gap(loaded):
    """Drop the one scenario of MaxPool3d B25 that puts padding too large on D alone: D is the gap."""
    op, cases = _op(loaded, "MaxPool3d")
    shapes = per_axis._BaseShapes()
    on_d = {c.id for c in cases if c.check == "B25" and per_axis.touched(c, shapes) == frozenset({"D"})}
    assert on_d
    pruned = [(o, [c for c in cs if c.id not in on_d]) if o is op else (o, cs) for o, cs in loaded]
    found = {(g.op, g.check, g.axis) for g in per_axis.gaps(pruned)}
    assert found == {(op.name, "B25", "D")}


def test_a_bounded_check_needs_its_boundary_on_every_axis(loaded):
    """MaxPool2d B26a (950: dilation > 0, boundary 0): dilation -1 on W alone offends on W, but a
    check written `dW < 0` rejects it too; without the dilation-0 case on W, W is a gap."""
    op, cases = _op(loaded, "MaxPool2d")
    assert next(c for c in op.checks if c.id == "B26a").boundary == 0
    zero_w = {c.id for c in cases if c.name.endswith("[B26a-dW-zero]")}
    assert zero_w
    pruned = [(o, [c for c in cs if c.id not in zero_w]) if o is op else (o, cs) for o, cs in loaded]
    gaps = [g for g in per_axis.gaps(pruned)]
    assert {(g.check, g.family, g.axis) for g in gaps} == {("B26a", "ascend950", "W")}
    assert "with the value 0, the boundary" in str(gaps[0])
    negative_w = next(c for c in cases if c.name.endswith("[B26a-dW]"))      # dilation [1, -1]
    assert per_axis.touched(negative_w, per_axis._BaseShapes()) == frozenset({"W"})


def test_touched_axes_come_from_the_change(loaded):
    op, cases = _op(loaded, "MaxPool3d")
    shapes = per_axis._BaseShapes()
    base = next(c for c in cases if c.check == "B25" and per_axis.touched(c, shapes) == frozenset({"D"}))
    pads = base.attrs["padding"]
    pads = list(pads) * 3 if len(pads) == 1 else list(pads)
    two = dataclasses.replace(base, mutation=Mutation(attrs={"padding": [9, 9, pads[2]]}))
    assert per_axis.touched(two, shapes) == frozenset({"D", "H"})      # two axes: covers neither alone
    one = dataclasses.replace(base, mutation=Mutation(attrs={"padding": [pads[0], pads[1], 9]}))
    assert per_axis.touched(one, shapes) == frozenset({"W"})
    broadcast = dataclasses.replace(base, mutation=Mutation(attrs={"padding": [9]}))
    assert 9 not in pads and per_axis.touched(broadcast, shapes) == frozenset("DHW")
    self_shape = list(shapes(base)["self"])
    self_shape[1] += 1                                               # C of self
    c_only = dataclasses.replace(base, mutation=Mutation(tensors={"self": {"shape": self_shape}}))
    assert per_axis.touched(c_only, shapes) == frozenset({"C"})
    rank = dataclasses.replace(base, mutation=Mutation(tensors={"self": {"shape": self_shape[1:]}}))
    assert per_axis.touched(rank, shapes) is None                     # a rank change is no axis


def test_the_table_names_the_cases(loaded):
    text = per_axis.render(loaded)
    assert "| MaxUnpool3dBackward | B14 |" in text and "NO CASE" not in text
