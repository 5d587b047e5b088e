"""Night over night: what changed between a previous run (or merged sweep) and this one.

New failures, fixed cases, new flakes, and metric drifts: a metric whose share of its threshold
grew by at least `drift` times (a case whose MERE doubled is worth a look even while it passes).
Perf drifts: a case whose launch times differ between the two runs by the perf gate's statistics
(perfstats.compare, one sample set each: a drift to look at, not a gated regression). Digest
changes: an output whose digest changed although both runs may pass (the library now computes
other bits). A digest change of a call whose op's spec lets its bits vary from run to run (the
golden INFO's `order_varies(shape, attrs, family)`: atomic adds in an order the tiling does not fix)
is listed apart, as `allowed_nondeterminism` with the spec's reason and its ulp distance, never
among `digest_changes`, and so are the metric drifts of such a case (its metrics moved with its
bits: `metric_drifts`); every other change stays drift. Within one run, digest_splits() lists the
cases whose outputs differ between families.
"""
from __future__ import annotations

import functools
import re
from collections import defaultdict
from pathlib import Path

import golden

from . import dump_meta
from .records import family_of, metrics_of, status_of, threshold_ratio
from ..core import perfstats, ulps
from ..core.status import Status

PERF_TOLERANCE = 0.10
KEYS = ("new_failures", "fixed", "new_flakes", "drifts", "perf_drifts", "digest_changes", "allowed_nondeterminism",
        "appeared", "disappeared")

_BAD = frozenset({Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.MISSING})


def _index(records: list[dict]) -> dict[tuple[str, str], dict]:
    return {(family_of(r) or "any", r["case_id"]): r for r in records}


def _metrics(rec: dict) -> dict[str, float]:
    out = {}
    for m in rec.get("metrics") or metrics_of(rec.get("verdict")):
        ratio = threshold_ratio(m)
        if ratio is not None:
            out[m["name"]] = ratio
    return out


def compare(current: list[dict], previous: list[dict], drift: float = 2.0, floor: float = 0.0,
            previous_label: str = "the previous run") -> dict:
    """{new_failures, fixed, new_flakes, drifts, perf_drifts, digest_changes, allowed_nondeterminism,
    appeared, disappeared}: lists of {case_id, family, text}."""
    now, before = _index(current), _index(previous)
    out = {k: [] for k in KEYS}
    out["previous"] = previous_label
    for key in sorted(now):
        fam, cid = key
        rec, old = now[key], before.get(key)
        s = status_of(rec)
        item = {"case_id": cid, "family": fam}
        if old is None:
            out["appeared"].append({**item, "text": f"{cid} ({fam}): new case, {s.value}"})
            if s in _BAD:
                out["new_failures"].append({**item, "text": f"{cid} ({fam}): {s.value} (new case): {rec.get('reason', '')}"})
            continue
        o = status_of(old)
        if s in _BAD and o not in _BAD:
            out["new_failures"].append({**item, "text": f"{cid} ({fam}): {o.value} -> {s.value}: {rec.get('reason', '')}"})
        elif s == Status.PASS and (o in _BAD or o == Status.EXPECTED_FAIL):
            out["fixed"].append({**item, "text": f"{cid} ({fam}): {o.value} -> PASS"})
        if s == Status.FLAKE and o != Status.FLAKE:
            out["new_flakes"].append({**item, "text": f"{cid} ({fam}): FLAKE (was {o.value})"})
        drifts = _metric_drifts(item, rec, old, drift, floor)
        out["perf_drifts"] += _perf_drift(item, rec, old)
        digests = _digest_changes(item, rec, old)
        if drifts and digests and all(c.get("allowed") for c in digests):
            # its metrics moved because its bits did, in the order its spec leaves free: part of
            # the allowed nondeterminism, not drift (a failure is still a new failure above)
            moved = ", ".join(f"{d['metric']} {d['ratio']:.3g}x" for d in drifts)
            for c in digests:
                c["metric_drifts"] = drifts
                c["text"] += f"; its metrics moved with its bits: {moved}"
        else:
            out["drifts"] += drifts
        for change in digests:
            out["allowed_nondeterminism" if change.get("allowed") else "digest_changes"].append(change)
    for key in sorted(set(before) - set(now)):
        out["disappeared"].append({"case_id": key[1], "family": key[0], "text": f"{key[1]} ({key[0]}): not in this run"})
    return out


def _metric_drifts(item: dict, rec: dict, old: dict, drift: float, floor: float) -> list[dict]:
    """The case's metrics whose share of their threshold grew at least `drift` times."""
    m_now, m_old = _metrics(rec), _metrics(old)
    out = []
    for name in sorted(set(m_now) & set(m_old)):
        a, b = m_old[name], m_now[name]
        if a > 0 and b >= floor and b / a >= drift:
            out.append({**item, "metric": name, "ratio": b / a,
                        "text": f"{item['case_id']} ({item['family']}): {name} grew {b / a:.3g}x "
                                f"({a:.3g} -> {b:.3g} of its threshold), now {status_of(rec).value}"})
    return out


def _perf_drift(item: dict, rec: dict, old: dict) -> list[dict]:
    """The case's launch times against the previous run's, when both were measured the same way."""
    now_perf, old_perf = rec.get("perf") or {}, old.get("perf") or {}
    if not now_perf.get("samples_ms") or not old_perf.get("samples_ms") or now_perf.get("timing") != old_perf.get("timing"):
        return []
    tolerance = rec.get("perf_tolerance")
    tolerance = tolerance if isinstance(tolerance, (int, float)) and tolerance >= 0 else PERF_TOLERANCE
    try:
        c = perfstats.compare(old_perf["samples_ms"], now_perf["samples_ms"], tolerance)
    except ValueError:
        return []
    if c.verdict == perfstats.SAME:
        return []
    return [{**item, "verdict": c.verdict, **c.as_dict(),
             "text": f"{item['case_id']} ({item['family']}): {c.verdict.lower()}, {c.text()}"}]


def _digest_changes(item: dict, rec: dict, old: dict) -> list[dict]:
    """Outputs whose digest differs from the previous run's (both recorded one), whatever the status;
    with the largest ulp distance where both runs dumped the case's arrays (--dump-all)."""
    now_d, old_d = rec.get("digests") or {}, old.get("digests") or {}
    changed = [name for name in sorted(set(now_d) & set(old_d)) if now_d[name] != old_d[name]]
    dumps = _both_dumps(old, rec) if changed else None          # read once for all of the case's outputs
    allowed = order_varies(rec, item["family"]) if changed else None
    out = []
    for name in changed:
        far = _largest_ulps(dumps, name)
        said = (f", largest distance {far['ulps']} ulp at {tuple(far['index'])} ({far['before']!r} -> {far['now']!r})"
                if far and far["index"] is not None else
                ", ulp distance unknown (both runs need --dump-all)" if allowed else "")
        head = "allowed nondeterminism: " if allowed else ""
        out.append({**item, "output": name, "before": old_d[name], "now": now_d[name], "ulps": far,
                    "allowed": allowed,
                    "text": f"{item['case_id']} ({item['family']}): {head}output {name} digest {old_d[name][:19]}… -> "
                            f"{now_d[name][:19]}…, {status_of(old).value} -> {status_of(rec).value}{said}"
                            + (f" ({allowed})" if allowed else "")})
    return out


def _golden_name(op: str) -> str:
    """AdaptiveMaxPool2dBackward -> adaptive_max_pool2d_backward: the golden module of an op."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op).lower()


@functools.lru_cache(maxsize=None)
def _order_varies_of(op: str):
    """The op's golden INFO.order_varies, or None (no such golden, or deterministic everywhere)."""
    name = _golden_name(op)
    if name not in golden.available():
        return None
    return getattr(getattr(golden.load(name), "INFO", None), "order_varies", None)


def order_varies(rec: dict, family: str) -> str | None:
    """Why the op's spec lets this call's output bits differ between runs (the golden's
    order_varies(shape, attrs, family)), or None: then a digest change is drift."""
    varies = _order_varies_of(str(rec.get("op") or ""))
    shape, attrs = rec.get("shape"), rec.get("attrs")
    if varies is None or not isinstance(shape, list) or not isinstance(attrs, dict):
        return None
    # a case run without deterministic mode may also vary where only that mode fixes the order (the
    # golden's order_varies takes `deterministic=False` for that; one that does not is asked as is)
    deterministic = bool(rec.get("determinism"))
    try:
        try:
            why = varies(tuple(shape), attrs, family, deterministic=deterministic)
        except TypeError:
            why = varies(tuple(shape), attrs, family)
    except Exception:           # a record the golden cannot read (an older layout): no allowance
        return None
    return str(why) if why else None


def _both_dumps(old: dict, rec: dict):
    """((meta, arrays) of the previous run's dump, the same of this run's), or None where either run
    has no readable dump of the case."""
    if not (old.get("dump") and rec.get("dump")):
        return None
    try:
        return dump_meta.load(Path(old["dump"])), dump_meta.load(Path(rec["dump"]))
    except (ValueError, OSError, KeyError):     # a dump that cannot be read: no distance, the change stands
        return None


def _largest_ulps(dumps, output: str) -> dict | None:
    """core.ulps.largest of the two runs' dumped outputs, or None where either has no array of it."""
    if dumps is None:
        return None
    key = f"actual.{output}"
    (meta_old, old_arrays), (meta_now, now_arrays) = dumps
    dtype = meta_now.get("dtypes", {}).get(key)
    if key not in old_arrays or key not in now_arrays or dtype != meta_old.get("dtypes", {}).get(key):
        return None
    return ulps.largest(old_arrays[key], now_arrays[key], dtype)


def digest_splits(records: list[dict]) -> list[dict]:
    """Within one (merged) run: the cases whose output digests differ between families,
    [{case_id, output, digests: {family: digest}, text}]. Families may legitimately differ (other
    kernels, other accumulation orders); a bit-exact op or an index-only result should not."""
    by_case: dict = defaultdict(dict)
    for r in records:
        if r.get("digests"):
            by_case[r["case_id"]][family_of(r) or "any"] = r["digests"]
    out = []
    for cid in sorted(by_case):
        fams = by_case[cid]
        for name in sorted({n for d in fams.values() for n in d}):
            seen = {f: d[name] for f, d in sorted(fams.items()) if name in d}
            if len(set(seen.values())) > 1:
                groups = defaultdict(list)
                for f, d in seen.items():
                    groups[d].append(f)
                text = "; ".join(f"{', '.join(fs)}: {d[:19]}…" for d, fs in groups.items())
                out.append({"case_id": cid, "output": name, "digests": seen,
                            "text": f"{cid}: output {name} differs between families ({text})"})
    return out


def lines(changes: dict) -> list[str]:
    out = [f"changes since {changes.get('previous')}: " + ", ".join(
        f"{len(changes.get(k) or [])} {k.replace('_', ' ')}" for k in KEYS)]
    for k in ("new_failures", "new_flakes", "drifts", "perf_drifts", "digest_changes", "allowed_nondeterminism", "fixed"):
        for item in (changes.get(k) or [])[:30]:
            out.append(f"  {k.replace('_', ' ')}: {item['text']}")
    return out
