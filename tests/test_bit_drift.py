"""Bit drift between two runs: outputs whose digests changed while every case still passes, and
how far apart they are in ulps (harness/core/ulps.py) where both runs kept their arrays (--dump-all)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from harness.core import ulps
from tests import perf_planting as P
from tests.test_perf_mode import _records, needs_swcann


# ---------------------------------------------------------------- the distance itself

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_one_step_to_the_next_float_is_one_ulp_at_any_magnitude(dtype):
    for value in (1e-3, 1.0, 3.0e3, -7.5):
        a = np.array([value], dtype=dtype)
        b = np.nextafter(a, np.array([np.inf], dtype=dtype))
        got = ulps.largest(a, b, dtype)
        assert got["ulps"] == 1 and got["index"] == [0], (dtype, value, got)


def test_the_distance_crosses_zero_and_names_the_farthest_element():
    a = np.array([[1.0, -0.0], [2.0, np.float32(1e-45)]], dtype=np.float32)
    b = a.copy()
    b[0, 1] = np.float32(1e-45)                # -0.0 -> the smallest subnormal: 1 ulp
    b[1, 1] = -np.float32(1e-45)               # +1 subnormal -> -1 subnormal: 2 ulps, through both zeros
    b[1, 0] = np.nextafter(np.nextafter(np.float32(2.0), np.float32(0)), np.float32(0))     # 2 below
    got = ulps.largest(a, b, "float32")
    assert got["ulps"] == 2 and got["index"] in ([1, 1], [1, 0])
    b[1, 0] = np.float32(2.0) + np.float32(2 ** -20)       # 4 ulps above 2.0 (ulp of 2.0 is 2**-22)
    got = ulps.largest(a, b, "float32")
    assert got == {"ulps": 4, "index": [1, 0], "before": 2.0, "now": float(np.float32(2.0) + np.float32(2 ** -20))}


def test_bfloat16_is_counted_in_its_own_ulps_from_the_widened_float32():
    # judge/arrays.py stores bfloat16 as float32 exactly: one bfloat16 ulp at 1.0 is 2**-7
    a = np.array([1.0, 4.0], dtype=np.float32)
    b = np.array([1.0 + 2 ** -7, 4.0], dtype=np.float32)
    assert ulps.largest(a, b, "bfloat16")["ulps"] == 1
    assert ulps.largest(a, b, "float32")["ulps"] == 2 ** 16


def test_nan_against_a_number_is_infinitely_far_and_two_nans_are_equal():
    a = np.array([np.nan, 1.0], dtype=np.float32)
    assert ulps.largest(a, a.copy(), "float32")["ulps"] == 0
    b = np.array([np.nan, np.nan], dtype=np.float32)
    got = ulps.largest(a, b, "float32")
    assert got["ulps"].startswith("inf") and got["index"] == [1] and math.isnan(got["now"])


def test_integers_differ_by_their_difference_and_shapes_must_match():
    assert ulps.largest(np.array([3, 9], np.int64), np.array([3, 4], np.int64), "int64")["ulps"] == 5
    assert ulps.largest(np.zeros(3, np.float32), np.zeros(4, np.float32), "float32") is None
    assert ulps.largest(np.zeros(0, np.float32), np.zeros(0, np.float32), "float32")["ulps"] == 0


# ---------------------------------------------------------------- two runs, one library changed by a bit

AVG_SOURCE = "swcann/src/ops/avg_pool2d_backward.c"
# AvgPool2d's fp32 cases change; MaxPool2d's (a copy of gradOutput values, no arithmetic) do not
SELECT = ("(avg_pool2d and float32 and 2x3x9x9 and contiguous-normal) or "
          "(max_pool2d and fp32_windows and 2x3x9x9 and contiguous and (ks2x2_s2x2_p0x0_d1x1_cm0 or ks3x3_s2x2_p1x1))")
_ANCHOR = "    if (a->h.deviations) a->value = deviation_value;\n"
_PLANT = """    a->value = planted_value;       /* planted (tests/test_bit_drift.py) */
"""
_PLANTED_FN = """
/* planted (tests/test_bit_drift.py): each window's share with its last bit flipped */
static float planted_value(const avg_job *a, float g, int64_t pool, int64_t area)
{
    float v = g / avg_divisor(a, pool, area);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (v != 0.0f) bits ^= 1u;
    memcpy(&v, &bits, sizeof v);
    return v;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAvgPool2dBackward("""


_DECLARED = "static float deviation_value(const avg_job *a, float g, int64_t pool, int64_t area);\n"


def _one_bit_off(text: str) -> str:
    fn = "\nACL_FUNC_VISIBILITY aclnnStatus aclnnAvgPool2dBackward("
    assert all(text.count(anchor) == 1 for anchor in (_ANCHOR, fn, _DECLARED)), f"{AVG_SOURCE}: the planting's anchors moved"
    declared = _DECLARED + _DECLARED.replace("deviation_value", "planted_value")
    return text.replace(_ANCHOR, _ANCHOR + _PLANT).replace(fn, _PLANTED_FN).replace(_DECLARED, declared)


@needs_swcann
def test_a_last_bit_change_is_a_digest_change_with_its_ulp_distance(tmp_path):
    """The same cases on the checkout's library and on a copy whose AvgPool2d flips the last bit of
    each window's share: every case passes on both (a last-bit change is inside fp32's tolerance),
    so only `compare` can see it. It lists exactly the AvgPool2d outputs, each with a small nonzero
    distance in ulps, taken from the two runs' --dump-all arrays; MaxPool2d's are unchanged."""
    root = P.edited_root(tmp_path / "lib", AVG_SOURCE, _one_bit_off)
    # deterministic mode: on 910b an overlapping AvgPool2d is summed atomically, and without the mode
    # its bits may change between runs by themselves (allowed nondeterminism, never drift)
    before = P.suite(tmp_path / "before", "--dump-all", "--deterministic", select=SELECT)
    now = P.suite(tmp_path / "now", "--dump-all", "--deterministic", select=SELECT, root=root)
    for proc in (before, now):
        assert proc.returncode == 0, proc.stdout[-3000:]
    records = {name: {r["case_id"]: r for r in _records(tmp_path / name)} for name in ("before", "now")}
    assert records["before"].keys() == records["now"].keys() and len(records["now"]) == 4
    assert all(r["status"] == "PASS" and r["dump"] for run in records.values() for r in run.values())
    avg = {cid for cid in records["now"] if cid.startswith("AvgPool2dBackward")}
    assert len(avg) == 2

    from harness.reporting.__main__ import main as reporting
    out = tmp_path / "changes.json"
    assert reporting(["compare", str(tmp_path / "now"), str(tmp_path / "before"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    # a last-bit change may grow a tiny error metric many times over (still far inside its threshold)
    assert not result["new_failures"] and {d["case_id"] for d in result["drifts"]} <= avg
    changed = result["digest_changes"]
    assert {c["case_id"] for c in changed} == avg, changed
    for c in changed:
        far = c["ulps"]
        assert isinstance(far["ulps"], int) and far["ulps"] >= 1, c
        assert f"largest distance {far['ulps']} ulp at " in c["text"]
        a, b = np.float32(far["before"]), np.float32(far["now"])
        assert a != b and abs(int(a.view(np.uint32)) - int(b.view(np.uint32))) == far["ulps"]
        # the ulps of the sum can be many (shares of opposite signs cancel), the change itself is a
        # few last bits of shares of about 1 (normal gradOutput over 4 or 9 elements)
        assert abs(float(a) - float(b)) < 1e-6, c


# ---------------------------------------------------------------- allowed nondeterminism (issue 32)

def _drift_record(op, shape, attrs, family, digest):
    return {"case_id": f"{op}.c[{shape}-{family}]", "op": op, "shape": list(shape), "attrs": attrs,
            "family": family, "status": "PASS", "digests": {"gradInput": digest}}


def test_a_digest_change_the_spec_allows_is_reported_apart_from_drift():
    """AdaptiveMaxPool2d's overlapping windows on A2/A3 are summed by atomic adds in no fixed order
    (the golden's order_varies): a changed digest there is allowed nondeterminism, with the spec's
    reason, never drift; the divisible call on the same family, and MaxPool2d, stay drift."""
    from harness.reporting import changes
    calls = [("AdaptiveMaxPool2dBackward", (2, 3, 7, 9), {"outputSize": [3, 4]}, "ascend910b"),   # overlapping
             ("AdaptiveMaxPool2dBackward", (2, 3, 8, 8), {"outputSize": [4, 4]}, "ascend910b"),   # divisible
             ("MaxPool2dWithIndicesBackward", (2, 3, 8, 8), {"kernelSize": [2, 2]}, "ascend910b")]
    before = [_drift_record(*c, "sha256:" + "a" * 64) for c in calls]
    now = [_drift_record(*c, "sha256:" + "b" * 64) for c in calls]
    got = changes.compare(now, before)
    allowed, drift = got["allowed_nondeterminism"], got["digest_changes"]
    assert [c["case_id"] for c in allowed] == [before[0]["case_id"]], allowed
    assert "atomic adds" in allowed[0]["allowed"] and "allowed nondeterminism" in allowed[0]["text"]
    assert "ulp distance unknown" in allowed[0]["text"] and allowed[0]["ulps"] is None
    assert sorted(c["case_id"] for c in drift) == sorted(r["case_id"] for r in before[1:]), drift
    assert not any(c.get("allowed") for c in drift)
    assert any("1 allowed nondeterminism" in line for line in changes.lines(got))


def test_overlapping_windows_summed_atomically_on_a2a3_are_allowed_outside_deterministic_mode():
    """MaxPool2d, MaxPool3d and AvgPool2d sum overlapping windows with atomic adds on 910B/910_93,
    in an order only deterministic mode fixes (their spec C Determinism): two runs of one library
    on 910b, tier all, without it, reported 154 digest changes of theirs as drift before these
    goldens said so. Allowed there; drift with windows that do not overlap, in a deterministic
    run, and on 950 (a gather, or an order its kernel fixes)."""
    from harness.reporting import changes
    det = {"level": 1, "repeat": True}
    calls = [  # (op, shape, attrs, family, determinism, allowed)
        ("MaxPool2dWithIndicesBackward", (2, 3, 9, 9), {"kernelSize": [3, 3], "stride": [2, 2]}, "ascend910b", None, True),
        ("MaxPool2dWithIndicesBackward", (2, 3, 9, 9), {"kernelSize": [2, 2], "stride": [1, 1],
                                                        "dilation": [2, 2]}, "ascend910_93", None, True),
        ("MaxPool3dWithArgmaxBackward", (1, 2, 5, 6, 6), {"kernelSize": [2, 2, 2], "stride": [1, 2, 2]},
         "ascend910b", None, True),
        ("AvgPool2dBackward", (2, 3, 9, 10), {"kernelSize": [3, 2], "stride": [2, 1]}, "ascend910_93", None, True),
        ("MaxPool2dWithIndicesBackward", (2, 3, 9, 9), {"kernelSize": [3, 3], "stride": [2, 2]}, "ascend910b", det, False),
        ("MaxPool2dWithIndicesBackward", (2, 3, 9, 9), {"kernelSize": [3, 3], "stride": [2, 2]}, "ascend950", None, False),
        ("MaxPool2dWithIndicesBackward", (2, 3, 9, 9), {"kernelSize": [2, 2], "stride": []}, "ascend910b", None, False),
        ("AvgPool2dBackward", (2, 3, 9, 10), {"kernelSize": [3, 2], "stride": [2, 1]}, "ascend950", None, False),
        ("AvgPool2dBackward", (2, 3, 9, 10), {"kernelSize": [2, 2], "stride": [2, 2]}, "ascend910b", None, False),
    ]
    before, now = [], []
    for i, (op, shape, attrs, family, determinism, _) in enumerate(calls):
        for out, digest in ((before, "a"), (now, "b")):
            rec = _drift_record(op, shape, attrs, family, "sha256:" + digest * 64)
            out.append({**rec, "case_id": f"{rec['case_id']}#{i}", "determinism": determinism})
    got = changes.compare(now, before)
    allowed = {c["case_id"] for c in got["allowed_nondeterminism"]}
    assert allowed == {r["case_id"] for r, c in zip(before, calls) if c[-1]}, got["allowed_nondeterminism"]
    assert {c["case_id"] for c in got["digest_changes"]} == {r["case_id"] for r, c in zip(before, calls) if not c[-1]}
    assert all("atomic adds" in c["allowed"] and "deterministic mode" in c["allowed"]
               for c in got["allowed_nondeterminism"])
    # a metric that moved with the bits moved within the allowance; beside a drift it is drift
    for i, r in enumerate(before):
        r["metrics"] = [{"name": "mere", "value": 1e-6, "threshold": 1.0, "rule": "<="}]
        now[i]["metrics"] = [{"name": "mere", "value": 4e-6, "threshold": 1.0, "rule": "<="}]
    got = changes.compare(now, before)
    assert {d["case_id"] for d in got["drifts"]} == {r["case_id"] for r, c in zip(before, calls) if not c[-1]}
    assert all(c["metric_drifts"][0]["metric"] == "mere" and "moved with its bits: mere 4x" in c["text"]
               for c in got["allowed_nondeterminism"])
