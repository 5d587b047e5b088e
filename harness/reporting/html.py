"""report.html: one self-contained page (inline CSS and SVG, no network) from a Report.

The page is a Jinja2 template (templates/report.html.j2, autoescaped); the plots are matplotlib
figures rendered to inline SVG.
"""
from __future__ import annotations

import io
import math

import jinja2
from markupsafe import Markup

from .model import Report
from .records import metrics_of, status_of
from ..status import ORDER, Status

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("harness.reporting", "templates"),
                          autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)

COLOURS = {Status.PASS: "#2e7d32", Status.FAIL: "#c62828", Status.CRASH: "#6a1b9a", Status.TIMEOUT: "#ad1457",
           Status.SKIP: "#9e9e9e", Status.MISSING: "#ef6c00", Status.EXPECTED_FAIL: "#f9a825",
           Status.UNEXPECTED_PASS: "#1565c0", Status.FLAKE: "#00838f"}


def _svg(fig) -> Markup:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return Markup(text[text.index("<svg"):])     # drop the XML prolog and DOCTYPE: inline in HTML


def metric_plots(report: Report) -> list[dict]:
    """Per operator: each judged metric as a fraction of its threshold (log scale), per dtype and
    metric; the red line is the threshold. Points above it failed."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    plots = []
    for op, points in report.metric_points().items():
        cats = sorted({(d, m) for d, m, _ in points})
        index = {c: i for i, c in enumerate(cats)}
        floor = 1e-6
        xs = [index[(d, m)] for d, m, _ in points]
        ys = [min(max(v, floor), 1e6) if math.isfinite(v) else 1e6 for _, _, v in points]
        fig, ax = plt.subplots(figsize=(max(4.0, 0.55 * len(cats) + 1.5), 3.0))
        ax.scatter(xs, ys, s=10, alpha=0.6, c=["#c62828" if y > 1 else "#2e7d32" for y in ys])
        ax.axhline(1.0, color="#c62828", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(range(len(cats)), [f"{d}\n{m}" for d, m in cats], fontsize=6, rotation=30, ha="right")
        ax.set_ylabel("metric / threshold", fontsize=7)
        ax.set_title(op, fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        plots.append({"op": op, "svg": _svg(fig), "n": len(points)})
        plt.close(fig)
    return plots


def render(report: Report) -> str:
    template = _ENV.get_template("report.html.j2")
    return template.render(report=report, families=report.families, matrix=report.matrix(),
                           totals=report.ordered_totals(), listed=report.listed(), slowest=report.slowest(),
                           deviations=report.deviations(), plots=metric_plots(report), colours=COLOURS,
                           order=ORDER, status_of=status_of, metrics_of=metrics_of, Status=Status)
