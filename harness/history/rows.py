"""A record (results.jsonl's one line per case) as the store's rows: its case and its result.

Only what the history questions read or show is kept; results.jsonl stays the full account (each
output's whole sha256, every launch time, the verdict, the stack of a crash). Written for speed:
a year of nightly sweeps is 8.8 M of these, and ingestion's budget is 20 us a result (50,000 a
second on 2 cores), so a result is one tuple built inline, in COLUMNS order, with no JSON encoder
where a value can be written directly.
"""
from __future__ import annotations

import hashlib
import json
import math

from ..core.status import Status

FAILED = frozenset(s.value for s in Status if s.is_failure)
REASON_CHARS = 300
COLUMNS = ("run", "case", "family", "status", "raw_status", "reason", "phase1_status", "phase1_expected",
           "phase1_check", "metric_set", "metric_values", "worst_share", "digest", "digests", "perf_timing",
           "perf_median_ms", "perf_ci_low_ms", "perf_ci_high_ms", "perf_n", "perf_verdict", "perf_ratio", "time_s",
           "launch_s", "attempts")
_SIGN = 1 << 63
_isfinite = math.isfinite


def case_row(rec: dict) -> dict:
    return {"case_id": rec["case_id"], "op": str(rec.get("op") or ""), "grp": str(rec.get("group") or ""),
            "kind": str(rec.get("kind") or ""), "dtype": str(rec.get("dtype") or "")}


def digest_int(hex_digest: str) -> int | None:
    """The first 64 bits of a hex digest ('sha256:...' or bare) as a signed 64-bit integer."""
    try:
        return int(str(hex_digest).rpartition(":")[2][:16], 16) - _SIGN
    except ValueError:
        return None


def digest_hex(value: int | None) -> str | None:
    """The 16 hex digits a stored digest shows as (the start of the record's sha256)."""
    return None if value is None else f"{value + _SIGN:016x}"


def _real(x):
    """A finite float or int (not a bool), else None: JSON and SQL have no NaN to keep."""
    return x if x.__class__ in (float, int) and _isfinite(x) else None


class RowMaker:
    """Builds result rows; interns metric sets (names, thresholds, rules) as it meets them.
    metric_set(key) -> the store id of that set (the ingest looks it up or adds it)."""

    def __init__(self, metric_set):
        self._metric_set = metric_set
        self._sets: dict = {}

    def _metrics(self, metrics):
        """(set id, values as JSON, largest value / threshold) of a record's metrics list."""
        try:
            key = tuple([(m["name"], m["threshold"], m["rule"]) for m in metrics])
            values = [m["value"] for m in metrics]
        except (KeyError, TypeError):        # an older or damaged record: only its well-formed metrics
            good = [m for m in metrics if m.__class__ is dict]
            key = tuple([(m.get("name"), m.get("threshold"), m.get("rule")) for m in good])
            values = [m.get("value") for m in good]
        found = self._sets.get(key)
        if found is None:
            # per set: each metric's threshold and whether its rule is '>=' (a shortfall, mapped alike)
            limits = [(t if t.__class__ in (float, int) and _isfinite(t) and t else None, r == ">=") for _, t, r in key]
            names = json.dumps([[n, t if t.__class__ in (float, int) and _isfinite(t) else None, r]
                                for n, t, r in key], separators=(",", ":"), default=str)
            found = self._sets[key] = (self._metric_set(names), limits)
        set_id, limits = found
        worst = None
        texts = []
        for v, (t, ge) in zip(values, limits):
            if v.__class__ in (float, int) and _isfinite(v):
                texts.append(repr(v))
                if t is not None:
                    share = ((1 - v) / (1 - t) if t != 1 else None) if ge else v / t
                    if share is not None and (worst is None or share > worst):
                        worst = share
            else:
                texts.append("null")
        return set_id, "[" + ",".join(texts) + "]", worst

    def row(self, rec: dict, case: int, family: str) -> tuple:
        """The result row of one record, without its first column (the run's id, known later)."""
        status = rec.get("status") or "MISSING"
        phase1 = rec.get("phase1")
        if phase1.__class__ is dict:
            p1, p1e, p1c = phase1.get("status"), phase1.get("expected"), phase1.get("check")
            p1 = p1 if p1.__class__ is int else None
            p1e = p1e if p1e.__class__ is int else None
        else:
            p1 = p1e = p1c = None
        metrics = rec.get("metrics")
        mset, mvalues, worst = self._metrics(metrics) if metrics else (None, None, None)
        digests = rec.get("digests")
        digest = many = None
        if digests and digests.__class__ is dict:
            if len(digests) == 1:
                digest = digest_int(next(iter(digests.values())))
            else:
                names = sorted(digests)
                whole = hashlib.sha256("".join(f"{k}={digests[k]};" for k in names).encode()).hexdigest()
                digest = digest_int(whole)
                many = json.dumps({k: str(digests[k]).rpartition(":")[2][:16] for k in names}, separators=(",", ":"))
        perf = rec.get("perf")
        if perf.__class__ is dict and _real(perf.get("median_ms")) is not None:
            ci = perf.get("ci_ms")
            lo, hi = (_real(ci[0]), _real(ci[1])) if ci.__class__ in (list, tuple) and len(ci) == 2 else (None, None)
            n = perf.get("n")
            ptiming, pmedian, pn = str(perf.get("timing") or ""), perf["median_ms"], n if n.__class__ is int else None
        else:
            ptiming = pmedian = lo = hi = pn = None
        gates = rec.get("perf_gate")
        if gates and gates.__class__ is list and gates[0].__class__ is dict:
            verdict, ratio = gates[0].get("verdict"), _real(gates[0].get("ratio"))
        else:
            verdict = ratio = None
        timings = rec.get("timings")
        total = _real(timings.get("total")) if timings.__class__ is dict else None
        attempts = rec.get("attempts")
        reason = rec.get("reason") or ""
        return (case, family, status, rec.get("raw_status") or status,
                reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS], p1, p1e, p1c, mset, mvalues, worst,
                digest, many, ptiming, pmedian, lo, hi, pn, verdict, ratio, total, _real(rec.get("launch_s")),
                len(attempts) if attempts.__class__ is list else None)
