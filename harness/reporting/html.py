"""report.html: one self-contained page (inline CSS and SVG, no network) from a Report.

The page is a Jinja2 template (templates/report.html.j2, autoescaped); its plots come from
matplotlib (plots.py), imported on first use: at a run's start prepare() imports it in the
background, so the report written at the end does not wait for it.
"""
from __future__ import annotations

import statistics
import threading
from collections import defaultdict

import jinja2
from markupsafe import Markup

from .perf import summary as perf_summary
from .changes import digest_splits
from .perf.gate import LABELS, p_text
from .runs import Report, median_of
from .records import metrics_of, status_of
from ..core.status import ORDER, Status
from ..core.text import printable


def _shown(value):
    """Every `{{ }}` of the template passes here before autoescaping: text gets its non-printable
    characters escaped (HTML has no place for a control character; a bidi override would reorder
    what follows it); the SVG plots, already markup, and non-text values pass as they are."""
    return printable(value, lines=True) if isinstance(value, str) and not isinstance(value, Markup) else value


_ENV = jinja2.Environment(loader=jinja2.PackageLoader("harness.reporting", "templates"),
                          autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          finalize=_shown)

COLOURS = {Status.PASS: "#2e7d32", Status.FAIL: "#c62828", Status.CRASH: "#6a1b9a", Status.TIMEOUT: "#ad1457",
           Status.SKIP: "#9e9e9e", Status.MISSING: "#ef6c00", Status.EXPECTED_FAIL: "#f9a825",
           Status.UNEXPECTED_PASS: "#1565c0", Status.FLAKE: "#00838f"}


def metric_plots(report: Report) -> list[dict]:
    """Per operator: each judged metric as a fraction of its threshold (log scale), per dtype and
    metric; the red line is the threshold. Points above it failed."""
    from . import plots
    return [{"op": op, "svg": plots.metric_strip(op, points), "n": len(points)}
            for op, points in report.metric_points().items()]


def _limits(points: list[dict]) -> list[tuple]:
    """The limits of one operator's plot: per family and limit source the median of its records'
    limits (a measured host bandwidth varies a little between workers), one entry per distinct
    (bandwidth to 3 digits, source, bytes counted), naming its families. A limit over the bytes
    read + written is the line time = bytes / bandwidth: (gbps, label). One over the bytes written
    is no line in read + written bytes: (gbps, label, [(bytes, least seconds)]), each case's least time."""
    per_family: dict = defaultdict(list)
    for p in points:
        if p["limit_gbps"]:
            per_family[(p["family"], p["limit_source"] or "source not given", p.get("limit_bytes") or "read+written")].append(p)
    lines: dict = defaultdict(lambda: ([], []))
    for (family, source, counts), mine in sorted(per_family.items()):
        entry = lines[(float(f"{statistics.median(p['limit_gbps'] for p in mine):.3g}"), source, counts)]
        entry[0].append(family)
        entry[1].extend(mine)
    named = len(lines) > 1          # which families a line belongs to, when there is more than one
    out = []
    for (gbps, source, counts), (fams, mine) in sorted(lines.items()):
        label = f"{gbps:g} GB/s ({source}" + (f"; {', '.join(fams)})" if named else ")")
        if counts == "written":
            out.append((gbps, label + ", over the bytes written: each case's least time",
                        [(p["bytes"], p["least_ms"] / 1000) for p in mine if p.get("least_ms")]))
        else:
            out.append((gbps, label))
    return out


# perf.timing -> what the plot's time axis measured
TIME_AXIS = {"events": "device time", "cuda_events": "device time", "cpu_time": "CPU time (software CANN)",
             "modelled": "modelled device time (software CANN)", "perf_counter": "host clock time"}


def time_axis(timings) -> str:
    """The time axis's name for the timings of a plot's records, as they were measured."""
    names = sorted({TIME_AXIS.get(t, f"time ({t})") for t in timings}) or ["device time"]
    return " / ".join(names)


def _percent(p: dict) -> float | None:
    """A case's least time (its limit) as a share of its median time, in %."""
    return 100 * p["least_ms"] / p["median_ms"] if p.get("least_ms") else None


def perf_plots(report: Report) -> list[dict]:
    """Per operator: time per launch against bytes moved (log-log) with its limits, the time named
    as it was measured (perf.timing), and the medians of the achieved bandwidth and of the share of
    the case's limit (its least time over its median time)."""
    from . import plots
    out = []
    for op, points in report.perf_points().items():
        limits = _limits(points)
        svg = plots.device_time(op, [(p["family"], p["bytes"], p["median_ms"] / 1000) for p in points], limits,
                                time_axis(p.get("timing") for p in points))
        out.append({"op": op, "svg": svg, "n": len(points), "limits": [lim[1] for lim in limits],
                    "gbps": median_of(p["gbps"] for p in points),
                    "percent": median_of(x for x in map(_percent, points) if x is not None)})
    return out


def gate_plots(report: Report) -> list[dict]:
    """Per comparison (the baseline, the benchmark): every gated case's ratio with its interval and
    allowed ratio (plots.gate_ratios); a verdict without a ratio (not comparable) is not drawn."""
    from . import plots
    by: dict[str, list] = defaultdict(list)
    for r in report.records:
        for v in r.get("perf_gate") or []:
            if isinstance(v, dict) and all(isinstance(v.get(k), (int, float)) for k in ("ratio", "limit")) \
                    and isinstance(v.get("ci"), list) and len(v["ci"]) == 2:
                by["benchmark" if v.get("against") == "benchmark" else "baseline"].append(
                    (str(v.get("verdict")), v["ratio"], v["ci"][0], v["ci"][1], v["limit"]))
    return [{"against": k, "n": len(points), "svg": plots.gate_ratios(points, k)} for k, points in sorted(by.items())]


def outliers(report: Report) -> list[dict]:
    """The measured cases with samples OUTLIER_FACTOR times off their median (perf.outliers):
    {case_id, family, count, n, worst} (worst: the farthest sample's multiple of the median)."""
    out = []
    for r in report.records:
        far = (r.get("perf") or {}).get("outliers") if isinstance(r.get("perf"), dict) else None
        if isinstance(far, dict) and far.get("count"):
            ratios = [o["x_median"] for o in far.get("launches") or [] if isinstance(o.get("x_median"), (int, float))]
            worst = max(ratios, key=lambda x: max(x, 1 / x) if x > 0 else 0) if ratios else None
            out.append({"case_id": r.get("case_id"), "family": r.get("family"), "count": far["count"],
                        "n": r["perf"].get("n"), "worst": worst, "factor": far.get("factor")})
    return out


def performance(report: Report) -> dict:
    """The performance section: plots, the perf gate's verdicts (perf_summary.rows), how sampling
    went, bit and perf drift (report.changes, and digests that differ between families), and each
    device's busy share of its run. A brief report (a stopped run) draws no plots and never imports
    the plotting library."""
    changes = report.changes or {}
    summary = perf_summary.summary(report.records) or {}
    if report.brief:
        drawn, bins, gated = [], None, []
    else:
        from . import plots
        drawn, bins, gated = perf_plots(report), plots.BINS_PER_DECADE, gate_plots(report)
    return {"plots": drawn, "gate_plots": gated, "verdicts": summary.get("verdicts") or {}, "rows": summary.get("rows") or [],
            "stopping": summary.get("stopping"), "previous": changes.get("previous"),
            "digest_changes": changes.get("digest_changes") or [],
            "allowed_nondeterminism": changes.get("allowed_nondeterminism") or [], "perf_drifts": changes.get("perf_drifts") or [],
            "digest_splits": digest_splits(report.records), "devices": report.device_use(),
            "outliers": outliers(report),
            "labels": LABELS, "bins_per_decade": bins}


def history(report: Report) -> dict | None:
    """The History section (report.history: harness/history/section.py's data, given --db) with
    its plots: the pass rate per family, and per family the perf trend of each operator."""
    data = report.history
    if not data:
        return None
    from . import plots
    rates = {fam: [p["rate"] for p in points] for fam, points in data["pass_rates"].items() if points}
    by_family: dict = defaultdict(list)
    for t in data["trends"]:
        if len(t["nights"]) >= 2:
            by_family[t["family"]].append((t["op"], t["drift"], [n["ratio"] for n in t["nights"]],
                                           [n["low"] for n in t["nights"]], [n["high"] for n in t["nights"]]))
    return {**data, "pass_rate_svg": plots.pass_rates(rates) if rates else None,
            "trend_plots": [{"family": fam, "svg": plots.perf_trend(fam, series)}
                            for fam, series in sorted(by_family.items())]}


_TEMPLATE = "report.html.j2"


def prepare() -> None:
    """Compile the template and import the plotting library now, in a background thread (both are
    kept), so they overlap the cases instead of delaying the end of the run, where nothing overlaps
    them (benchmarks/NOTES.md)."""
    def compile_template():
        try:
            _ENV.get_template(_TEMPLATE)
            from . import plots  # noqa: F401  (matplotlib's import: a few tenths of a second)
        except Exception:   # said by render(), where it matters
            pass
    threading.Thread(target=compile_template, name="report-template", daemon=True).start()


def render(report: Report) -> str:
    template = _ENV.get_template(_TEMPLATE)
    return template.render(report=report, families=report.families, matrix=report.matrix(),
                           totals=report.ordered_totals(), listed=report.listed(), slowest=report.slowest(),
                           deviations=report.deviations(), plots=[] if report.brief else metric_plots(report),
                           perf=performance(report),
                           colours=COLOURS, order=ORDER, status_of=status_of, metrics_of=metrics_of, Status=Status,
                           p_text=p_text, causes=report.causes(), confirmed=report.confirmations(), history=None if report.brief else history(report))
