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

from . import perf_summary
from .changes import digest_splits
from .perf_gate import LABELS, p_text
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


def _limits(points: list[dict]) -> list[tuple[float, str]]:
    """The limit lines of one operator's plot: per family and limit source the median of its
    records' limits (a measured host bandwidth varies a little between workers), one line per
    distinct (bandwidth to 3 digits, source), naming its families."""
    per_family: dict = defaultdict(list)
    for p in points:
        if p["limit_gbps"]:
            per_family[(p["family"], p["limit_source"] or "source not given")].append(p["limit_gbps"])
    lines: dict = defaultdict(list)
    for (family, source), values in sorted(per_family.items()):
        lines[(float(f"{statistics.median(values):.3g}"), source)].append(family)
    named = len(lines) > 1          # which families a line belongs to, when there is more than one
    return [(gbps, f"{gbps:g} GB/s ({source}" + (f"; {', '.join(fams)})" if named else ")"))
            for (gbps, source), fams in sorted(lines.items())]


def perf_plots(report: Report) -> list[dict]:
    """Per operator: device time per launch against bytes moved (log-log) with its limit lines,
    and the medians of the achieved bandwidth and of its share of the case's limit (both from the
    plotted numbers: bytes / median time)."""
    from . import plots
    out = []
    for op, points in report.perf_points().items():
        limits = _limits(points)
        svg = plots.device_time(op, [(p["family"], p["bytes"], p["median_ms"] / 1000) for p in points], limits)
        out.append({"op": op, "svg": svg, "n": len(points), "limits": [label for _, label in limits],
                    "gbps": median_of(p["gbps"] for p in points),
                    "percent": median_of(100 * p["gbps"] / p["limit_gbps"] for p in points if p["limit_gbps"])})
    return out


def performance(report: Report) -> dict:
    """The performance section: plots, the perf gate's verdicts (perf_summary.rows), how sampling
    went, bit and perf drift (report.changes, and digests that differ between families), and each
    device's busy share of its run."""
    from . import plots
    changes = report.changes or {}
    summary = perf_summary.summary(report.records) or {}
    return {"plots": perf_plots(report), "verdicts": summary.get("verdicts") or {}, "rows": summary.get("rows") or [],
            "stopping": summary.get("stopping"), "previous": changes.get("previous"),
            "digest_changes": changes.get("digest_changes") or [], "perf_drifts": changes.get("perf_drifts") or [],
            "digest_splits": digest_splits(report.records), "devices": report.device_use(),
            "labels": LABELS, "bins_per_decade": plots.BINS_PER_DECADE}


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
                           deviations=report.deviations(), plots=metric_plots(report), perf=performance(report),
                           colours=COLOURS, order=ORDER, status_of=status_of, metrics_of=metrics_of, Status=Status,
                           p_text=p_text)
