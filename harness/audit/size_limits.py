"""Size limits of spec section B: each is tested with its real-sized shape, on both sides.

A check with a `limit:` in its case file (the product of the last `dims` dimensions of one
tensor must not exceed `max`, e.g. INT32_MAX for an H*W plane) needs, on every family the check
applies to:

* **over**: an invalid case naming the check whose tensor is over the limit with no zero
  dimension, i.e. the real-sized shape (a descriptor over tiny storage, phase 1 only), expecting
  the check's status. A shape made "empty" with N = 0 to stay small does not count: a library
  that returns early on empty tensors before the size check would pass it.
* **at**: a case naming the check whose tensor is exactly at the limit, expecting status 0: a
  check that is off by one (`<` for `<=`), or that uses a smaller bound, fails it. Only the limit
  itself tells `<` from `<=`; a shape with a product of exactly `max` always exists (1, ..., max).

`python -m harness.audit.coverage` prints the table and counts the gaps in its exit status;
tests/test_size_limits.py fails on a gap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import Case, Check, OpSpec

@dataclass(frozen=True)
class LimitGap:
    op: str
    check: str
    family: str
    side: str        # "over" | "at"

    def __str__(self) -> str:
        want = ("a real-sized case over the limit (no zero dimension) expecting the check's status"
                if self.side == "over" else "a case exactly at the limit expecting status 0")
        return f"{self.op} {self.check} on {self.family}: no {want}"


def limited_shape(chk: Check, op: OpSpec, case: Case) -> tuple[int, ...] | None:
    """The shape of the check's limited tensor in `case`, where the case file says it."""
    changed = (case.mutation.tensors.get(chk.limit.tensor) or {}) if case.mutation else {}
    if "shape" in changed:
        return tuple(changed["shape"])
    return tuple(case.shape) if chk.limit.tensor == op.output_like else None


def sides(chk: Check, op: OpSpec, case: Case, family: str) -> set[str]:
    """Which side of the limit `case` tests on `family` ("over", "at", or neither)."""
    shape = limited_shape(chk, op, case)
    if shape is None or case.kind != "invalid" or case.check != chk.id or family not in case.families:
        return set()
    product, status = chk.limit.product(shape), case.expected_status(family)
    found = set()
    if product > chk.limit.max and math.prod(shape) > 0 and status == chk.status:
        found.add("over")
    if product == chk.limit.max and status == 0:
        found.add("at")
    return found


def table(op: OpSpec, cases: list[Case]) -> dict[str, dict[str, dict[str, list[Case]]]]:
    """check id -> family -> side -> cases, for the checks of `op` that carry a limit."""
    out = {}
    for chk in op.checks:
        if chk.limit is None:
            continue
        per = out.setdefault(chk.id, {})
        for fam in chk.families:
            got = per.setdefault(fam, {"over": [], "at": []})
            for c in cases:
                for side in sides(chk, op, c, fam):
                    got[side].append(c)
    return out


def gaps(loaded) -> list[LimitGap]:
    return [LimitGap(op.name, cid, fam, side)
            for op, cases in loaded for cid, per in table(op, cases).items()
            for fam, got in per.items() for side, found in got.items() if not found]


def render(loaded) -> str:
    lines = ["| op | check | limit | family | over the limit | at the limit |", "|---|---|---|---|---|---|"]
    for op, cases in loaded:
        checks = {c.id: c for c in op.checks}
        for cid, per in table(op, cases).items():
            lim = checks[cid].limit
            text = f"prod({lim.tensor}[-{lim.dims}:]) <= {lim.max}"
            for fam, got in per.items():
                cells = [", ".join(c.name for c in got[s]) or "**NO CASE**" for s in ("over", "at")]
                lines.append(f"| {op.name} | {cid} | {text} | {fam} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)

