"""The plots of report.html, drawn by matplotlib and inlined as SVG.

Only calls to the library live here: plain data in, one `<svg>` element out per figure. The
figures are made with matplotlib's object API and its SVG canvas (no pyplot, so no GUI backend
and no global figure registry that would keep them alive), text stays text (`svg.fonttype:
none`: no font is embedded or fetched, and the page can be searched), and nothing in the output
points outside the page: no clip paths (every artist lies inside its axes, so none is needed, and
clipping would add `url(#...)`), and the XML prolog and namespace declarations, which name URLs,
are left out (HTML's parser puts an inline `<svg>` in the SVG namespace by itself).

Points are aggregated before drawing: one marker per occupied bin (1/BINS_PER_DECADE of a decade
on each log axis), placed at the mean of its points (a lone point stays exact), its area growing
with the cases in it. A report of 40,000 records then draws hundreds of markers per plot, not
thousands: the SVG writer's cost is per marker (benchmarks/bench_report.py).
"""
from __future__ import annotations

import functools
import io
import math
import textwrap

import numpy as np
from markupsafe import Markup
from matplotlib import rc_context, ticker
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from ..core.text import printable

PASS_COLOUR, FAIL_COLOUR, LIMIT_COLOUR = "#2e7d32", "#c62828", "#37474f"
BINS_PER_DECADE = 10
LEGEND_WIDTH = 62                     # characters per legend line at 7 pt: fits the 4.4 in figure
RATIO_RANGE = (1e-6, 1e6)             # the strip plot's y axis; values beyond sit on its edges

# text as <text> elements, no mathtext (a '$' in an op name is text), one small sans-serif size
_RC = {"svg.fonttype": "none", "text.parse_math": False, "font.family": "sans-serif", "font.size": 8,
       "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7}
_UNDECLARED = (' xmlns:xlink="http://www.w3.org/1999/xlink"', ' xmlns="http://www.w3.org/2000/svg"')


def _svg(fig: Figure, gid: str) -> Markup:
    """The figure as an inline `<svg>` element. `gid` names its top group; it also salts the ids
    matplotlib gives markers, so that two figures on one page never share an id."""
    fig.set_gid(gid)
    buf = io.StringIO()
    with rc_context({"svg.hashsalt": gid}):
        FigureCanvasSVG(fig).print_svg(buf, metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    for attr in _UNDECLARED:
        text = text.replace(attr, "", 1)
    return Markup(text)


def _styled(draw):
    """Run a plot function under the report's rc: an artist keeps the rc in force when it is made,
    ticks and layout read it while drawing."""
    @functools.wraps(draw)
    def styled(*args, **kwargs):
        with rc_context(_RC):
            return draw(*args, **kwargs)
    return styled


def _label(text) -> str:
    return printable(str(text))


def _aggregate(groups: np.ndarray, *logs: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Points binned: `groups` (int columns that must not mix, e.g. the column and pass/fail), each
    log10 coordinate in `logs` cut into bins of 1/BINS_PER_DECADE. Per occupied bin: its groups,
    the mean of each log coordinate over its points (a lone point stays where it is), its count."""
    keys = np.column_stack([groups, *(np.floor(v * BINS_PER_DECADE) for v in logs)]).astype(np.int64)
    rows, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    return rows[:, :groups.shape[1]], [np.bincount(inverse, weights=v) / counts for v in logs], counts


def _scatter(ax, x: np.ndarray, y: np.ndarray, counts: np.ndarray, colour: str, label: str | None = None) -> None:
    """Bins as markers whose area grows with log2 of their count (one case: the smallest, 256 and
    more: the largest); one call per size, so the SVG defines each marker once and reuses it."""
    size = np.minimum(np.log2(counts), 8).astype(np.int64)
    for k, cls in enumerate(np.unique(size)):
        mine = size == cls
        ax.scatter(x[mine], y[mine], s=6.0 * (1 + cls), color=colour, alpha=0.6, linewidths=0, clip_on=False,
                   label=label if k == 0 and label else "_nolegend_")


@_styled
def metric_strip(op: str, points: list[tuple[str, str, float]]) -> Markup:
    """Per operator: each judged metric as a share of its threshold (log axis), one column per
    (dtype, metric); markers above the red line at 1 failed (red), the others passed (green). A
    share that is not finite (a NaN or infinite metric, a zero threshold) sits on the top edge, red."""
    cats = sorted({(d, m) for d, m, _ in points})
    index = {c: i for i, c in enumerate(cats)}
    lo, hi = RATIO_RANGE
    ratios = np.clip(np.array([v if math.isfinite(v) else hi for _, _, v in points], dtype=float), lo, hi)
    failed = np.array([not v <= 1 for _, _, v in points], dtype=np.int64)      # NaN fails, as the comparator has it
    cols = np.array([index[(d, m)] for d, m, _ in points], dtype=np.int64)
    groups, (logs,), counts = _aggregate(np.column_stack([cols, failed]), np.log10(ratios))
    fig = Figure(figsize=(max(2.6, 0.62 * len(cats) + 1.1), 2.9), layout="constrained")
    ax = fig.add_subplot()
    for failing, colour in ((0, PASS_COLOUR), (1, FAIL_COLOUR)):
        mine = groups[:, 1] == failing
        _scatter(ax, groups[mine, 0].astype(float), 10.0 ** logs[mine], counts[mine], colour)
    ax.axhline(1.0, color=FAIL_COLOUR, linewidth=1, clip_on=False)
    ax.set_yscale("log")
    ax.set_ylim(lo / 2, hi * 2)
    ax.yaxis.set_major_locator(ticker.LogLocator(numticks=7))
    ax.yaxis.set_major_formatter(ticker.StrMethodFormatter("{x:.0e}"))
    ax.yaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlim(-0.6, len(cats) - 0.4)
    ax.set_xticks(range(len(cats)), [f"{_label(d)}\n{_label(m)}" for d, m in cats], fontsize=7)
    ax.set_ylabel("metric / threshold")
    ax.set_title(_label(op))
    return _svg(fig, f"metrics-{_label(op)}")


def _wrapped(text: str, width: int = LEGEND_WIDTH) -> str:
    """A legend entry wrapped to lines of `width` characters: a long limit source must not run past
    the figure's edges, where the SVG cuts it off."""
    return textwrap.fill(text, width, break_long_words=True, break_on_hyphens=False)


@_styled
def device_time(op: str, points: list[tuple[str, float, float]], limits: list[tuple], time_name: str = "device time"
                ) -> Markup:
    """Per operator, log-log: time per launch (seconds; `time_name` says what measured it) against
    bytes moved, a colour per family, and each limit: (GB/s, label) as the line time = bytes /
    bandwidth; (GB/s, label, [(bytes, seconds)]) as each case's least time (a limit over other bytes
    than the x axis's). points: (family, bytes, seconds)."""
    families = sorted({f for f, _, _ in points})
    fam = np.array([families.index(f) for f, _, _ in points], dtype=np.int64)
    x = np.array([b for _, b, _ in points], dtype=float)
    y = np.array([s for _, _, s in points], dtype=float)
    groups, (logx, logy), counts = _aggregate(fam[:, None], np.log10(x), np.log10(y))
    fig = Figure(figsize=(4.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    for i, name in enumerate(families):
        mine = groups[:, 0] == i
        _scatter(ax, 10.0 ** logx[mine], 10.0 ** logy[mine], counts[mine], f"C{i}", _label(name))
    span = np.array([x.min() / 2, x.max() * 2])          # a little past the cases: one case still gets a line
    for k, limit in enumerate(limits):
        gbps, label = limit[0], _wrapped(_label(f"limit {limit[1]}"))
        if len(limit) > 2:              # each case's least time: markers, binned as the cases are
            least = [(b, t) for b, t in limit[2] if b > 0 and t > 0]
            if not least:
                continue
            lx, ly = np.log10([b for b, _ in least]), np.log10([t for _, t in least])
            _, (bx, by), _ = _aggregate(np.zeros((len(least), 1), dtype=np.int64), lx, ly)
            ax.scatter(10.0 ** bx, 10.0 ** by, marker="_", s=30, color=LIMIT_COLOUR, linewidths=1, clip_on=False,
                       label=label)
            continue
        ax.plot(span, span / (gbps * 1e9), color=LIMIT_COLOUR, linestyle=("--", ":", "-.")[k % 3], linewidth=1,
                label=label, clip_on=False)
    ax.margins(0.05)
    for axis, unit in ((ax.xaxis, "B"), (ax.yaxis, "s")):
        axis.set_major_formatter(ticker.EngFormatter(unit=unit))
        axis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("bytes moved (read + written)")
    ax.set_ylabel(_wrapped(_label(f"{time_name} per launch (median)"), 48))
    ax.set_title(_label(op))
    long = any(len(lim[1]) > 24 for lim in limits)
    # under the axes: never over a case; one column where a label is long, each wrapped to the figure's width
    fig.legend(loc="outside lower center", frameon=False, ncols=1 if long else 2)
    return _svg(fig, f"perf-{_label(op)}")


@_styled
def pass_rates(series: dict[str, list[float]]) -> Markup:
    """The History section's pass rate per family over its runs: family -> passed / all, one value
    per run, oldest first (x: the run's place in the family's window; runs of different families
    are not aligned in time, which the caption says)."""
    # a fixed layout: the constrained one cost most of the History section's drawing time
    rows = -(-len(series) // 3)                   # legend rows under the axes
    fig = Figure(figsize=(5.6, 2.7 + 0.16 * rows))
    fig.subplots_adjust(left=0.12, right=0.97, top=0.9, bottom=(0.42 + 0.16 * rows) / (2.7 + 0.16 * rows))
    ax = fig.add_subplot()
    for i, (family, rates) in enumerate(sorted(series.items())):
        xs = np.arange(1, len(rates) + 1)
        ys = np.array([100 * r if r is not None else np.nan for r in rates], dtype=float)
        ax.plot(xs, ys, color=f"C{i}", linewidth=1, marker="o", markersize=2.5, label=_label(family or "any"),
                clip_on=False)
    ax.set_ylim(min(90.0, np.nanmin([100 * r for rs in series.values() for r in rs if r is not None] or [90.0])) - 2,
                101)
    ax.set_xlabel("run (oldest first)")
    ax.set_ylabel("passed (%)")
    ax.set_title("pass rate per family")
    fig.legend(loc="lower center", frameon=False, ncols=3)
    return _svg(fig, "history-pass-rate")


@_styled
def perf_trend(family: str, series: list[tuple[str, bool, list[float], list, list]]) -> Markup:
    """The History section's perf trend of one family: per operator, each run's median launch time
    relative to its cases' first runs in the window (1 = unchanged) with the cases' 95 % intervals as
    a band; an operator whose slow drift was detected is drawn solid and named so, the others dotted.
    series: (op, drift, ratios, lows, highs)."""
    rows = -(-len(series) // 2)                   # legend rows under the axes
    fig = Figure(figsize=(5.6, 2.8 + 0.16 * rows))
    fig.subplots_adjust(left=0.13, right=0.97, top=0.91, bottom=(0.45 + 0.16 * rows) / (2.8 + 0.16 * rows))
    ax = fig.add_subplot()
    for i, (op, drift, ratios, lows, highs) in enumerate(series):
        xs = np.arange(1, len(ratios) + 1)
        colour = f"C{i}"
        ax.plot(xs, ratios, color=colour, linewidth=1.4 if drift else 0.9, linestyle="-" if drift else ":",
                marker="o", markersize=2, clip_on=False, label=_label(op + (" (slow drift)" if drift else "")))
        if all(v is not None for v in lows + highs) and lows:
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.15, linewidth=0)
    ax.axhline(1.0, color=LIMIT_COLOUR, linewidth=0.8)
    ax.set_xlabel("run (oldest first)")
    ax.set_ylabel("median time / first in window")
    ax.set_title(_label(f"perf trend, {family}"))
    fig.legend(loc="lower center", frameon=False, ncols=2)
    return _svg(fig, f"history-perf-{_label(family)}")


VERDICT_COLOURS = {"REGRESSION": FAIL_COLOUR, "IMPROVEMENT": PASS_COLOUR, "SAME": "#607d8b"}
OTHER_VERDICT_COLOUR = "#ef6c00"          # flagged once, noise: not settled either way


@_styled
def gate_ratios(points: list[tuple[str, float, float, float, float]], against: str) -> Markup:
    """Every gated case's ratio to the baseline (its median time / the baseline's), sorted, with its
    interval as a bar and its allowed ratio (1 + tolerance) as a dash above it: a SAME case whose
    interval nears its dash, or a slower case the gate let through, is in sight, not only the flagged
    ones. points: (verdict, ratio, interval low, interval high, allowed ratio)."""
    order = sorted(range(len(points)), key=lambda i: points[i][1])
    x = np.arange(1, len(points) + 1)
    fig = Figure(figsize=(5.6, 3.2))
    fig.subplots_adjust(left=0.13, right=0.97, top=0.9, bottom=0.3)
    ax = fig.add_subplot()
    ax.set_yscale("log")
    verdicts = [points[i][0] for i in order]
    ratio = np.array([points[i][1] for i in order])
    # the interval is the ratio's own, but a ratio judged against the slowest plausible baseline run
    # (perf_runs) may sit outside it: the bar then reaches from the interval to the point
    lo = np.minimum(np.array([points[i][2] for i in order]), ratio)
    hi = np.maximum(np.array([points[i][3] for i in order]), ratio)
    limit = np.array([points[i][4] for i in order])
    for name in sorted(set(verdicts)):
        mine = np.array([v == name for v in verdicts])
        colour = VERDICT_COLOURS.get(name, OTHER_VERDICT_COLOUR)
        bars = ax.errorbar(x[mine], ratio[mine], yerr=[ratio[mine] - lo[mine], hi[mine] - ratio[mine]], fmt="o",
                           markersize=2.5, elinewidth=0.8, color=colour, label=_label(f"{name.lower()} ({mine.sum()})"))
        for artist in bars.lines[0:1] + tuple(bars.lines[2]):
            artist.set_clip_on(False)     # a clip path is a url() reference: the page keeps none
    ax.scatter(x, limit, marker="_", s=40, color=LIMIT_COLOUR, linewidths=1, label="allowed ratio", clip_on=False)
    ax.axhline(1.0, color=LIMIT_COLOUR, linewidth=0.6, linestyle=":", clip_on=False)
    ax.yaxis.set_major_locator(ticker.MaxNLocator(nbins=6))       # ratios span little of a decade: plain steps
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%.2fx"))
    ax.yaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("gated cases, by ratio")
    ax.set_ylabel(_label(f"time / {against}"))
    ax.set_title(_label(f"every gated case against the {against}"))
    fig.legend(loc="lower center", frameon=False, ncols=3)
    return _svg(fig, f"perf-gate-{_label(against)}")

