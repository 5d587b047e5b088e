"""report.html: one self-contained page (inline CSS and SVG, no network) from a Report.

The page is a Jinja2 template (templates/report.html.j2, autoescaped); the plots are small
inline SVGs written here (no plotting library).
"""
from __future__ import annotations

import math
import threading

import jinja2
from markupsafe import Markup, escape as markupsafe_escape

from .runs import Report
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


_W_CAT, _H, _LEFT, _BOTTOM, _TOP = 64, 180, 46, 46, 18     # px: one column per (dtype, metric)
_LOG_LO, _LOG_HI = -6, 6                                     # y axis: 1e-6 .. 1e6 of the threshold


def _y(ratio: float) -> float:
    v = min(max(ratio, 10.0 ** _LOG_LO), 10.0 ** _LOG_HI) if math.isfinite(ratio) else 10.0 ** _LOG_HI
    frac = (math.log10(v) - _LOG_LO) / (_LOG_HI - _LOG_LO)
    return _TOP + (1 - frac) * _H


def _strip_plot(op: str, points: list) -> Markup:
    """One SVG strip plot: a column per (dtype, metric), a dot per distinct pixel (its title says
    how many cases sit there), the red line at the threshold. Written by hand: a plotting library
    cost seconds per report for a few thousand dots, and the page must stay self-contained."""
    cats = sorted({(d, m) for d, m, _ in points})
    index = {c: i for i, c in enumerate(cats)}
    dots: dict[tuple[int, int], int] = {}
    for d, m, v in points:
        key = (index[(d, m)], round(_y(v)))
        dots[key] = dots.get(key, 0) + 1
    width = _LEFT + _W_CAT * len(cats) + 10
    height = _TOP + _H + _BOTTOM
    def e(text):
        return markupsafe_escape(printable(text))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="9" role="img" aria-label="{e(op)}">',
           f'<text x="{width / 2}" y="11" text-anchor="middle" font-size="11">{e(op)}</text>',
           f'<text transform="translate(10 {_TOP + _H / 2}) rotate(-90)" text-anchor="middle">metric / threshold</text>']
    for k in range(_LOG_LO, _LOG_HI + 1, 2):
        y = _y(10.0 ** k)
        out.append(f'<line x1="{_LEFT}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{_LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">1e{k}</text>')
    one = _y(1.0)
    out.append(f'<line x1="{_LEFT}" x2="{width - 10}" y1="{one:.1f}" y2="{one:.1f}" stroke="#c62828"/>')
    for i, (d, m) in enumerate(cats):
        x = _LEFT + _W_CAT * (i + 0.5)
        out.append(f'<text x="{x:.1f}" y="{_TOP + _H + 14}" text-anchor="middle">{e(d)}</text>'
                   f'<text x="{x:.1f}" y="{_TOP + _H + 26}" text-anchor="middle">{e(m)}</text>')
    for (i, y), n in sorted(dots.items()):
        colour = "#c62828" if y < one - 0.5 else "#2e7d32"        # above the line (smaller y) failed
        out.append(f'<circle cx="{_LEFT + _W_CAT * (i + 0.5):.1f}" cy="{y}" r="{min(2 + math.log2(n), 7):.1f}" '
                   f'fill="{colour}" fill-opacity="0.6"><title>{n} case(s)</title></circle>')
    out.append("</svg>")
    return Markup("".join(out))


def metric_plots(report: Report) -> list[dict]:
    """Per operator: each judged metric as a fraction of its threshold (log scale), per dtype and
    metric; the red line is the threshold. Points above it failed."""
    return [{"op": op, "svg": _strip_plot(op, points), "n": len(points)}
            for op, points in report.metric_points().items()]


_TEMPLATE = "report.html.j2"


def prepare() -> None:
    """Compile the template now, in a background thread (jinja keeps it), so the compile overlaps the
    cases instead of delaying the end of the run, where nothing overlaps it (benchmarks/NOTES.md)."""
    def compile_template():
        try:
            _ENV.get_template(_TEMPLATE)
        except Exception:   # said by render(), where it matters
            pass
    threading.Thread(target=compile_template, name="report-template", daemon=True).start()


def render(report: Report) -> str:
    template = _ENV.get_template(_TEMPLATE)
    return template.render(report=report, families=report.families, matrix=report.matrix(),
                           totals=report.ordered_totals(), listed=report.listed(), slowest=report.slowest(),
                           deviations=report.deviations(), plots=metric_plots(report), colours=COLOURS,
                           order=ORDER, status_of=status_of, metrics_of=metrics_of, Status=Status)
