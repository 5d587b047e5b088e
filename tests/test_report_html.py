"""report.html's performance section and its matplotlib plots, as a real headless Chromium reads them.

One merged report of a perf sweep (two families, two devices each, gated against a perf baseline,
compared with the previous night) is rendered by `python -m harness.reporting merge`, and the DOM
Chromium builds from it must hold: a device-time plot per operator (an inline SVG with its title,
axis labels and limit line), the metric plots, the perf gate's rows, the drift lists, each
device's utilisation with the right numbers, and nothing that points outside the page. The
checker is one function; it is also run on pages broken on purpose (a plot missing, a regression
row missing, an external reference, a wrong utilisation) and must name each break.
"""
from __future__ import annotations

import json
import re
import statistics
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from harness.reporting import __main__ as cli, changes
from harness.reporting import html as html_mod
from harness.reporting import plots
from harness.reporting.runs import Report, load_run
from tests.reporting_fixtures import OPS, launch_times, many_records, perf_rec, rec, write_run
from tests.test_nightly_sweep import chromium_or_skip

AVG, MP2 = "AvgPool2dBackward", "MaxPool2dWithIndicesBackward"
A, B, C, D, E = (f"{AVG}.g[float32-{k}]" for k in "abcde")
M = f"{MP2}.g[float16-m]"
MOVED = {A: (4_000_000, 1_000_000), B: (400_000, 100_000), C: (40_000, 10_000), D: (8_000_000, 2_000_000),
         E: (4_000, 1_000), M: (1_200_000, 300_000)}
LIMIT = {"ascend910b": 1600.0, "ascend950": 4000.0}
WALL_S = 600.0                     # write_run's identity: started 01:00:00, ended 01:10:00
DIGEST = {k: "sha256:" + k * 64 for k in "0123"}


def times(seed: int, median: float = 1.0, n: int = 60) -> list[float]:
    return list(launch_times(np.random.default_rng(seed), n, median, sigma=0.03, outliers=0.05))


def _measured(cid, seed, slower=1.0, again=None, family="ascend910b", device="0", digest="0"):
    """A measured case at about half its limit's speed plus 5 us, `slower` times that; `again`:
    the re-measurement's factor."""
    ms = (sum(MOVED[cid]) / (LIMIT[family] * 1e9 / 2) + 5e-6) * 1000
    return perf_rec(cid, times(seed, ms * slower), times(seed + 1, ms * again) if again else None, moved=MOVED[cid],
                    limit_gbps=LIMIT[family], family=family, device=device, launch_s=0.002,
                    digests={"gradInput": DIGEST[digest]})


def _scenario(tmp_path):
    """The baseline run, last night and tonight (910b: A slower twice, D faster twice, B slower
    once; C's output bits changed since last night; on 950 C's bits differ from 910b's), merged."""
    base = write_run(tmp_path / "base", [_measured(c, k) for k, c in enumerate((A, B, C, D, E, M))])
    gates = tmp_path / "gates"            # a directory: each run is gated by its family's file, 950 has none
    gates.mkdir()
    assert cli.main(["baseline", "--perf", str(base), "-o", str(gates / "perf-aclnn-ascend910b.json")]) == 0
    last = write_run(tmp_path / "last", [_measured(c, 20 + k, digest="1" if c == C else "0")
                                         for k, c in enumerate((A, B, C, D, E, M))])
    b910 = write_run(tmp_path / "910b", [
        _measured(A, 10, 1.3, 1.3, device="0"), _measured(B, 12, 1.3, 1.0, device="1"),
        _measured(C, 14, device="0", digest="2"), _measured(D, 15, 0.7, 0.7, device="1"),
        _measured(E, 17, device="0"), _measured(M, 18, device="1"),
        rec(f"{AVG}.h[float32-x]", "FAIL", mere=0.5, device="0", launch_s=0.25)])
    b950 = write_run(tmp_path / "950", [_measured(c, 30 + k, family="ascend950", device=str(k % 2),
                                                  digest="3" if c == C else "0")
                                        for k, c in enumerate((A, B, C, D, E, M))], family="ascend950")
    out = tmp_path / "merged"
    code = cli.main(["merge", "-o", str(out), str(b910), str(b950), "--gate", str(gates), "--previous", str(last)])
    assert code == 1 and (out / "report.html").is_file()     # 1: A's repeated regression (and the FAIL) fail the gate
    return out


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    return _scenario(tmp_path_factory.mktemp("perfsweep"))


# ------------------------------------------------------------------ reading a page back

class _Page(HTMLParser):
    """What the checks look at: the perf section's figures (op, caption, their SVG's texts),
    the metric plots, the verdict rows, the drift items, the utilisation rows, every tag's
    attributes (for references out of the page), and SVG ids and references."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.perf_figures, self.metric_figures, self.verdicts, self.drift, self.devices = [], [], [], [], []
        self.gate_figures: list[dict] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.ids: list[str] = []
        self.refs: list[str] = []

    def _inside(self, tag: str, **attrs) -> dict | None:
        for t, a in reversed(self.stack):
            if t == tag and all(v in (a.get(k) or "").split() or a.get(k) == v for k, v in attrs.items()):
                return a
        return None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.attrs += [(tag, k, v) for k, v in a.items()]
        if self._inside("svg") is not None or tag == "svg":
            self.ids += [a["id"]] if "id" in a else []
            self.refs += [v for k, v in a.items() if k in ("href", "xlink:href")]
        if tag not in ("br", "meta", "img", "input", "hr"):
            self.stack.append((tag, a))
        if tag == "figure" and "perf-plot" in a.get("class", ""):
            self.perf_figures.append({"op": a.get("data-op"), "svg": 0, "texts": [], "caption": ""})
        elif tag == "figure" and "gate-plot" in a.get("class", ""):
            self.gate_figures.append({"op": a.get("data-against"), "svg": 0, "texts": [], "caption": ""})
        elif tag == "figure" and self._inside("section", id="plots") is not None:
            self.metric_figures.append({"op": a.get("data-op"), "svg": 0, "texts": [], "caption": ""})
        if tag == "svg" and self._inside("figure") is not None:
            self._figure()["svg"] += 1
        if tag == "tr" and a.get("data-verdict"):
            self.verdicts.append({"verdict": a["data-verdict"], "cells": []})
        if tag == "li" and a.get("data-kind"):
            self.drift.append({"kind": a["data-kind"], "text": ""})
        if tag == "tr" and a.get("data-device") is not None and self._inside("table", **{"class": "utilisation"}):
            self.devices.append({"device": a["data-device"], "cells": []})
        if tag == "td" and self._row() is not None:
            self._row()["cells"].append("")

    def _row(self) -> dict | None:
        """The verdict or utilisation row being read, if the parser is inside one."""
        row = self._inside("tr")
        if row is None:
            return None
        if row.get("data-verdict") and self.verdicts:
            return self.verdicts[-1]
        return self.devices[-1] if row.get("data-device") is not None and self.devices else None

    def _figure(self) -> dict:
        if self._inside("figure", **{"class": "gate-plot"}) is not None:
            return self.gate_figures[-1]
        perf = self._inside("figure", **{"class": "perf-plot"})
        return (self.perf_figures if perf is not None else self.metric_figures)[-1]

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if self._inside("figure") is not None and (self.perf_figures or self.metric_figures or self.gate_figures):
            if self._inside("text") is not None:
                self._figure()["texts"].append(data.strip())
            elif self._inside("figcaption") is not None:
                self._figure()["caption"] += data
        if self._inside("td") is not None and self._row() is not None:
            self._row()["cells"][-1] += data.strip()
        if self._inside("li") is not None and self.drift and (self._inside("li").get("data-kind")):
            self.drift[-1]["text"] += data


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def external_references(text: str) -> list[str]:
    """Anything in the page that would reach outside it: a URL scheme, a protocol-relative or
    other non-fragment src/href, a stylesheet link, a script file, a CSS url()."""
    found = [m.group(0) for m in re.finditer(r"https?:|<script\b[^>]*\bsrc|<link\b|url\(|@import", text)]
    for tag, key, value in _parse(text).attrs:
        if key in ("src", "href", "xlink:href", "srcset", "action", "data") and not value.startswith("#"):
            found.append(f"<{tag} {key}={value!r}>")
    return found


def _busy(records, family, device) -> float:
    """A device's busy seconds, worked out here: each case's timed launches, else its launch_s."""
    mine = [r for r in records if r["family"] == family and r["backend"].get("device") == device]
    return sum(r["perf"]["median_ms"] * len(r["perf"]["samples_ms"]) / 1000 if r.get("perf") else r["launch_s"]
               for r in mine)


def problems(text: str, records: list[dict]) -> list[str]:
    """Everything the perf section of a rendered page `text` lacks or gets wrong, [] when right.
    `records`: the merged run's, for the numbers the page must show."""
    page, out = _parse(text), []
    out += [f"external reference: {x}" for x in external_references(text)]
    ops = {r["op"] for r in records if (r.get("perf") or {}).get("bytes")}
    figures = {f["op"]: f for f in page.perf_figures}
    for op in sorted(ops):
        fig = figures.get(op)
        if fig is None or fig["svg"] != 1:
            out.append(f"{op}: no device-time plot")
            continue
        for label in (op, "bytes moved (read + written)", "device time per launch (median)", "ascend910b", "ascend950",
                      "limit 1600 GB/s (peak table; ascend910b)", "limit 4000 GB/s (peak table; ascend950)"):
            if label not in fig["texts"]:
                out.append(f"{op}: the plot has no text {label!r}")
        perfs = [r["perf"] for r in records if r["op"] == op and (r.get("perf") or {}).get("bytes")]
        gbps = [(p["bytes"]["read"] + p["bytes"]["written"]) / (p["median_ms"] / 1000) / 1e9 for p in perfs]
        share = statistics.median(100 * g / p["limit"]["gbps"] for g, p in zip(gbps, perfs))
        expected = f"{len(perfs)} case(s); median achieved {statistics.median(gbps):.3g} GB/s, {share:.3g} % of its limit"
        if fig["caption"].strip() != expected:
            out.append(f"{op}: caption {fig['caption']!r}, expected {expected!r}")
    # every gated case on one plot, SAME ones too (a SAME case near its allowed ratio must be in sight)
    same = sum(v.get("verdict") == "SAME" and isinstance(v.get("ratio"), (int, float))
               for r in records for v in r.get("perf_gate") or [])
    gate = next((f for f in page.gate_figures if f["op"] == "baseline" and f["svg"] == 1), None)
    if gate is None:
        out.append("no plot of the gated cases' ratios")
    else:
        for label in ("every gated case against the baseline", "allowed ratio", f"same ({same})"):
            if label not in gate["texts"]:
                out.append(f"the ratio plot has no text {label!r}")
    metric_ops = {f["op"] for f in page.metric_figures if f["svg"] == 1 and "metric / threshold" in f["texts"]}
    if metric_ops != {r["op"] for r in records if r.get("metrics")}:
        out.append(f"metric plots for {sorted(metric_ops)}")
    rows = {(v["verdict"], v["cells"][1]): v["cells"] for v in page.verdicts if len(v["cells"]) > 1}
    for verdict, cid in (("REGRESSION", A), ("IMPROVEMENT", D), ("NOISE", B)):
        cells = rows.get((verdict, cid))
        if cells is None:
            out.append(f"no {verdict} row for {cid}")
        elif verdict == "REGRESSION" and not (cells[4].startswith("1.") and cells[7] == "1.100x"
                                               and cells[8].endswith("(REGRESSION)")):
            out.append(f"regression row {cells}")
    kinds = {(d["kind"], d["text"].split(":")[0]) for d in page.drift}
    for kind, cid in (("digest-change", f"{C} (ascend910b)"), ("digest-split", C)):
        if (kind, cid) not in kinds:
            out.append(f"no {kind} item for {cid}")
    shown = {(d["cells"][0], d["device"]): d["cells"] for d in page.devices}
    for family in ("ascend910b", "ascend950"):
        for device in ("0", "1"):
            cells = shown.get((f"aclnn-{family}", device))
            busy = _busy(records, family, device)
            if cells is None:
                out.append(f"{family} device {device}: no utilisation row")
            elif cells[3] != f"{busy:.3f}" or cells[5] != f"{busy / WALL_S * 100:.3g} %":
                out.append(f"{family} device {device}: {cells[3:6]}, expected busy {busy:.3f} s of {WALL_S} s")
    return out


def _records(out) -> list[dict]:
    return load_run(out).records


# ------------------------------------------------------------------ the page in a browser

def test_chromium_shows_the_perf_section_with_its_plots(merged, tmp_path):
    browser = chromium_or_skip()
    page = merged / "report.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'p'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and 'id="performance"' in dom.stdout, dom.stderr[-2000:]
    assert problems(dom.stdout, _records(merged)) == []
    assert problems(page.read_text(encoding="utf-8"), _records(merged)) == []
    shot = tmp_path / "report.png"
    subprocess.run([browser, *flags, "--window-size=1400,3000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, text=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_every_svg_reference_points_at_one_element_of_the_page(merged):
    text = (merged / "report.html").read_text(encoding="utf-8")
    page = _parse(text)
    assert text.count("<svg") == 4 and page.refs     # 1 metric plot, 2 perf plots, 1 ratio plot; markers are <use>
    counts = {i: page.ids.count(i) for i in set(page.ids)}
    assert all(ref.startswith("#") and counts.get(ref[1:]) == 1 for ref in page.refs), \
        [r for r in page.refs if counts.get(r[1:]) != 1]


# ------------------------------------------------------------------ the checker catches each break

def _report_of(out) -> Report:
    """The merged report again, in this process: its gated records, its runs, the night's changes."""
    runs = [load_run(out.parent / name) for name in ("910b", "950")]
    records = _records(out)
    report = Report("merged again", runs, records)
    report.changes = changes.compare(records, _records(out.parent / "last"), previous_label="last night")
    return report


def test_the_unbroken_page_rendered_in_process_passes_the_checker(merged):
    assert problems(html_mod.render(_report_of(merged)), _records(merged)) == []


def test_a_missing_perf_plot_is_caught(merged, monkeypatch):
    real = plots.device_time
    monkeypatch.setattr(plots, "device_time", lambda op, *a: "" if op == MP2 else real(op, *a))
    assert problems(html_mod.render(_report_of(merged)), _records(merged)) == [f"{MP2}: no device-time plot"]


def test_a_plot_without_its_limit_line_is_caught(merged, monkeypatch):
    monkeypatch.setattr(html_mod, "_limits", lambda points: [])
    found = problems(html_mod.render(_report_of(merged)), _records(merged))
    assert f"{AVG}: the plot has no text 'limit 1600 GB/s (peak table; ascend910b)'" in found


def test_a_ratio_plot_without_its_same_cases_is_caught(merged, monkeypatch):
    real = plots.gate_ratios
    monkeypatch.setattr(plots, "gate_ratios", lambda points, against: real([p for p in points if p[0] != "SAME"], against))
    found = problems(html_mod.render(_report_of(merged)), _records(merged))
    assert len(found) == 1 and found[0].startswith("the ratio plot has no text 'same ("), found


def test_a_missing_regression_row_is_caught(merged):
    report = _report_of(merged)
    report.records = [dict(r, perf_gate=[]) if r["case_id"] == A else r for r in report.records]
    assert problems(html_mod.render(report), _records(merged)) == [f"no REGRESSION row for {A}"]


def test_an_external_reference_is_caught(merged):
    text = html_mod.render(_report_of(merged))
    for bad in ('<img src="//cdn.example/x.png">', '<link rel="stylesheet" href="s.css">',
                '<div style="background: url(x.png)">', '<a href="http://example.com/">'):
        assert problems(text.replace("<body>", "<body>" + bad), _records(merged)), bad


def test_a_wrong_utilisation_is_caught(merged, monkeypatch):
    real = Report.device_use
    monkeypatch.setattr(Report, "device_use", lambda self: [dict(d, busy_s=d["busy_s"] * 2) for d in real(self)])
    found = problems(html_mod.render(_report_of(merged)), _records(merged))
    assert len(found) == 4 and all("expected busy" in x for x in found), found


def test_a_missing_drift_item_is_caught(merged):
    report = _report_of(merged)
    report.changes = dict(report.changes or {}, digest_changes=[])
    assert problems(html_mod.render(report), _records(merged)) == [f"no digest-change item for {C} (ascend910b)"]


# ------------------------------------------------------------------ plots and views on their own

def test_binning_keeps_a_lone_point_where_it_is_and_counts_every_case():
    logs = np.log10(np.array([3.3e-3, 1.01, 1.02, 1.03, 0.99, 5.0]))
    failed = np.array([0, 1, 1, 1, 0, 1])
    groups, (means,), counts = plots._aggregate(np.column_stack([np.zeros(6, np.int64), failed]), logs)
    assert counts.sum() == 6 and sorted(counts.tolist()) == [1, 1, 1, 3]
    lone = {round(float(10 ** m), 12) for m, c in zip(means, counts) if c == 1}
    assert lone == {3.3e-3, 0.99, 5.0}                      # exactly where they were, not at a bin's centre
    merged = next(k for k, c in enumerate(counts) if c == 3)
    assert groups[merged, 1] == 1 and 10 ** means[merged] == pytest.approx(1.02, rel=1e-3)
    # 0.99 (passed) shares a bin with 1.01..1.03 (failed) by value, but a passing and a failing
    # value are never drawn as one marker


def test_the_metric_plot_draws_failing_and_non_finite_shares_red():
    svg = plots.metric_strip("Op", [("float32", "mere", 2.0), ("float32", "mere", 0.5), ("float32", "mere", 0.5),
                                    ("float32", "mare", float("nan")), ("float32", "mare", float("inf")),
                                    ("float32", "mare", 0.0)])
    uses = re.findall(r'<use [^>]*style="fill: (#[0-9a-f]{6})', svg)
    # red: 2.0, and NaN with inf (one bin on the top edge); green: the two 0.5s (one bin), and 0
    assert sorted(uses) == sorted([plots.FAIL_COLOUR] * 2 + [plots.PASS_COLOUR] * 2), uses
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert {"Op", "metric / threshold", "mere", "mare"} <= set(texts), texts


def test_many_cases_are_drawn_as_few_markers_and_all_counted(tmp_path):
    records = many_records(4000)
    run = load_run(write_run(tmp_path / "big", records))
    figures = html_mod.perf_plots(Report("big", [run], run.records))
    assert [f["op"] for f in figures] == sorted(OPS) and all(f["n"] == 800 for f in figures)
    markers = [len(re.findall(r"<use [^>]*fill", str(f["svg"]))) for f in figures]
    assert all(50 < m < 800 for m in markers), markers       # aggregated, and not into a handful of blobs


def test_device_use_reads_old_and_new_records_alike(tmp_path):
    perf = perf_rec(f"{AVG}.g[float32-n]", [2.0] * 10, device="3")                        # 10 launches of 2 ms
    old = rec(f"{AVG}.g[float32-o]", launch_s=0.5)                                          # no device, no perf
    bare = rec(f"{AVG}.g[float32-b]", device="3")                                           # nothing timed
    directory = write_run(tmp_path / "run", [perf, old, bare, rec(f"{AVG}.g[float32-p]", device="3", launch_s=0.1)])
    run = load_run(directory)
    rows = Report("r", [run], run.records).device_use()
    assert rows == [{"run": "aclnn-ascend910b", "device": "3", "cases": 2, "busy_s": pytest.approx(0.12),
                     "wall_s": WALL_S, "utilisation": pytest.approx(0.12 / WALL_S),
                     "sources": {"perf (events)": 1, "launch_s (phase 2 + sync)": 1}},
                    {"run": "aclnn-ascend910b", "device": "?", "cases": 1, "busy_s": 0.5, "wall_s": WALL_S,
                     "utilisation": pytest.approx(0.5 / WALL_S), "sources": {"launch_s (phase 2 + sync)": 1}}]
    run.identity.pop("ended")                                 # a run that never finished: no wall, no share
    assert [r["utilisation"] for r in Report("r", [run], run.records).device_use()] == [None, None]
    assert "unknown" in html_mod.render(Report("r", [run], run.records)).split('id="performance"')[1]
    summary = json.loads((directory / "summary.json").read_text())       # the run's own clock, to the ms, wins
    (directory / "summary.json").write_text(json.dumps(dict(summary, duration_s=12.5)))
    run = load_run(directory)
    assert [r["wall_s"] for r in Report("r", [run], run.records).device_use()] == [12.5, 12.5]


def test_plot_text_is_shown_as_written_and_escaped():
    """A '$' is text, not mathtext; markup characters are escaped by the SVG writer; a control
    character is shown as \\xNN (printable()), never written raw into the page."""
    svg = plots.metric_strip("Op$x^2$ <b>&\x07", [("float<16>", "m$e", 0.5)])
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "Op$x^2$ &lt;b&gt;&amp;\\x07" in texts and "float&lt;16&gt;" in texts and "m$e" in texts, texts
    assert "\x07" not in svg and "<b>" not in svg
