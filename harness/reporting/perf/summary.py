"""What a report shows of a perf run, as plain data read from its records: the perf gate's
verdicts (the records' `perf_gate`, gate.py) and how the stopping rule fared (each record's
`perf`: launches, why sampling stopped, how wide the median's interval came out).

summary.json and summary.md are written from summary() and markdown(); report.html may draw
from rows() and stopping() the same way.
"""
from __future__ import annotations

import statistics
from collections import Counter

from .gate import INCOMPARABLE, LABELS, NOISE, NOT_REMEASURED, p_text
from ...core import perfstats
from ...core.perfstats import IMPROVEMENT, REGRESSION

LISTED = (REGRESSION, IMPROVEMENT, NOISE, NOT_REMEASURED, INCOMPARABLE)


def rows(records: list[dict]) -> list[dict]:
    """One row per verdict worth listing, regressions first, then by how far the ratio is from 1:
    {case_id, op, family, against, verdict, label, ratio, ci, p, tolerance, limit, remeasured_ratio,
    remeasured_verdict, baseline, why, unconfirmed}."""
    out = []
    for rec in records:
        for v in rec.get("perf_gate") or []:
            if v["verdict"] not in LISTED:
                continue
            again = v.get("remeasured") or {}
            out.append({"case_id": rec["case_id"], "op": rec.get("op"), "family": rec.get("family") or "any",
                        "against": v["against"], "verdict": v["verdict"], "label": LABELS[v["verdict"]],
                        "ratio": v.get("ratio"), "ci": v.get("ci"), "p": v.get("p"), "tolerance": v["tolerance"],
                        "limit": v["limit"], "remeasured_ratio": again.get("ratio"),
                        "remeasured_verdict": again.get("verdict"), "baseline": v["baseline"], "why": v.get("why"),
                        "unconfirmed": v.get("unconfirmed")})
    far = lambda r: -abs(r["ratio"] - 1) if r["ratio"] is not None else 0.0
    return sorted(out, key=lambda r: (LISTED.index(r["verdict"]), far(r), r["case_id"]))


def _rel_halfwidth(perf: dict) -> float | None:
    ci, median = perf.get("ci_ms"), perf.get("median_ms")
    if isinstance(ci, list) and len(ci) == 2 and isinstance(median, (int, float)) and median > 0:
        return (ci[1] - ci[0]) / 2 / median
    try:
        return perfstats.rel_halfwidth(perf.get("samples_ms") or [])
    except ValueError:
        return None


def stopping(records: list[dict]) -> dict | None:
    """How much sampling the run took: measured cases, launches per case (median, mean, max, total),
    why sampling stopped (counts), the median's relative 95 % half-width (median, p90, max across
    cases), re-measured cases and timing kinds. None when no case was measured."""
    perfs = [r["perf"] for r in records if r.get("perf")]
    if not perfs:
        return None
    launches = [int(p.get("n") or len(p.get("samples_ms") or [])) for p in perfs]
    widths = sorted(w for w in map(_rel_halfwidth, perfs) if w is not None)
    return {"measured": len(perfs),
            "launches": {"median": statistics.median(launches), "mean": statistics.fmean(launches),
                         "max": max(launches), "total": sum(launches)},
            "stop": dict(Counter(str(p.get("stop") or "unknown") for p in perfs).most_common()),
            "rel_ci_halfwidth": {"median": statistics.median(widths), "p90": widths[int(0.9 * (len(widths) - 1))],
                                 "max": widths[-1]} if widths else None,
            "remeasured": sum(1 for p in perfs if p.get("remeasured_ms")),
            "timings": dict(Counter(str(p.get("timing")) for p in perfs).most_common())}


def summary(records: list[dict]) -> dict | None:
    """summary.json's "performance": {verdicts: {name: count}, rows, stopping}, or None."""
    stats = stopping(records)
    if stats is None:
        return None
    counts = Counter(v["verdict"] for r in records for v in r.get("perf_gate") or [])
    return {"verdicts": dict(sorted(counts.items())), "rows": rows(records), "stopping": stats}


def _pct(x) -> str:
    return f"{x:.1%}" if isinstance(x, (int, float)) else "–"


def markdown(records: list[dict], limit: int = 100) -> list[str]:
    """summary.md's "Performance" section ([] when no case was measured)."""
    doc = summary(records)
    if doc is None:
        return []
    s = doc["stopping"]
    width = s["rel_ci_halfwidth"] or {}
    out = ["## Performance", "",
           f"{s['measured']} case(s) measured, {s['remeasured']} re-measured; launches per case: median "
           f"{s['launches']['median']:g}, mean {s['launches']['mean']:.1f}, max {s['launches']['max']} "
           f"({s['launches']['total']} in all); stopped by " + ", ".join(f"{k} {n}" for k, n in s["stop"].items())
           + f"; median's 95 % CI half-width: median {_pct(width.get('median'))}, p90 {_pct(width.get('p90'))}, "
           f"max {_pct(width.get('max'))}; timing: " + ", ".join(f"{k} {n}" for k, n in s["timings"].items()), ""]
    if doc["verdicts"]:
        out += ["Verdicts: " + ", ".join(f"{LABELS.get(k, k)} {n}" for k, n in doc["verdicts"].items()), ""]
    listed = doc["rows"]
    if listed:
        out += ["| verdict | case | family | against | ratio | CI | p | allowed | re-measured |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in listed[:limit]:
            if r["verdict"] == INCOMPARABLE:
                out.append(f"| {r['label']} | `{r['case_id']}` | {r['family']} | {r['against']} | – | – | – | – | "
                           f"{str(r['why']).replace('|', '/')} |")
                continue
            again = (f"{r['remeasured_ratio']:.3f}x ({r['remeasured_verdict']})" if r["remeasured_ratio"] else
                     "not re-measured: noise not ruled out" if r.get("unconfirmed") else "–")
            out.append(f"| {r['label']} | `{r['case_id']}` | {r['family']} | {r['against']} | {r['ratio']:.3f}x | "
                       f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] | {p_text(r['p'])} | {r['limit']:.3f}x | {again} |")
        if len(listed) > limit:
            out.append(f"\n… and {len(listed) - limit} more (summary.json: performance.rows)")
        out.append("")
    return out
