"""Every section-B size limit has a real-sized case over it and one exactly at it on every
family it applies to, and the checker notices when either goes missing."""
from __future__ import annotations

import dataclasses
import re


import pytest

from harness.audit import size_limits

pytestmark = pytest.mark.loops_over_ops


def test_every_size_limit_is_tested_on_both_sides(loaded):
    missing = size_limits.gaps(loaded)
    assert not missing, "size limits without a case:\n" + "\n".join(map(str, missing))


def test_every_size_limit_check_declares_its_limit(loaded):
    """A check whose text is a size bound (INT32_MAX, 2^24, ...) must say so in `limit:`,
    else the gap test above could not see it."""
    bound = re.compile(r"INT32_MAX|INT64_MAX|2\^\d+|2147483647|16777216")
    limited = {(op.name, c.id) for op, _ in loaded for c in op.checks if c.limit}
    worded = {(op.name, c.id) for op, _ in loaded for c in op.checks if bound.search(c.what) and not c.untestable}
    assert worded <= limited, f"size-limit checks without limit: {sorted(worded - limited)}"
    assert len(limited) >= 2


def _drop(loaded, *names):
    return [(op, [c for c in cases if not any(c.name.endswith(f"[{n}]") for n in names)]) for op, cases in loaded]


def test_a_removed_case_is_a_gap(loaded):
    found = {(g.op, g.check, g.family, g.side) for g in size_limits.gaps(_drop(loaded, "B11-int32-plane-exact"))}
    # B11 is checked on the families its check names (910B and 910_93 by SocVersion, and any family
    # a contributor states beside them), not on the 950
    b11 = next(c for op, _ in loaded if op.name == "AdaptiveMaxPool2dBackward" for c in op.checks if c.id == "B11")
    assert {"ascend910b", "ascend910_93"} <= set(b11.families) and "ascend950" not in b11.families
    assert found == {("AdaptiveMaxPool2dBackward", "B11", f, "at") for f in b11.families}
    found = {(g.side, g.check) for g in size_limits.gaps(_drop(loaded, "B28-int32-volume-real", "B28-before-B29",
                                                                        "B28-reads-self", "B28-4d-CDHW-over"))}
    assert found == {("over", "B28")}


def test_an_empty_stand_in_is_not_a_real_sized_case(loaded):
    """N = 0 keeps a case small, but an early return on empty input would pass it: not 'over'."""
    op, cases = next((op, cs) for op, cs in loaded if op.name == "MaxPool3dWithArgmaxBackward")
    chk = next(c for c in op.checks if c.id == "B28")
    empty = next(c for c in cases if c.name.endswith("[B28-int32-volume]"))
    assert size_limits.sides(chk, op, empty, "ascend910b") == set()
    real = next(c for c in cases if c.name.endswith("[B28-int32-volume-real]"))
    assert size_limits.sides(chk, op, real, "ascend910b") == {"over"}
    # only the limit itself tells <= from <: a case just under it is no "at" case
    at = next(c for c in cases if c.name.endswith("[B28-int32-volume-exact]"))
    near = next(c for c in cases if c.name.endswith("[B28-int32-volume-at-limit]"))
    assert size_limits.sides(chk, op, at, "ascend910b") == {"at"}
    assert size_limits.sides(chk, op, near, "ascend910b") == set()
    # a bound that is off by one: the exact case is then over it and no longer counts as "at"
    tighter = dataclasses.replace(chk, limit=dataclasses.replace(chk.limit, max=2**31 - 2))
    assert size_limits.sides(tighter, op, at, "ascend910b") == set()


def test_the_table_names_the_cases(loaded):
    text = size_limits.render(loaded)
    assert "| AdaptiveMaxPool2dBackward | B11 |" in text and "NO CASE" not in text
