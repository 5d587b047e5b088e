"""Issue 32, items 2 and 3: launch times outside physical bounds fail their case with a reason,
an outlier is reported rather than averaged away, utilisation cannot read over 100 %, the software
CANN's limit is one no correct launch beats (labelled with how it was derived), and the perf
plots name the time as it was measured with legends the figure does not cut off."""
from __future__ import annotations

import math

import pytest

from harness.core.status import Status
from harness.judge import peak_bandwidth, perf
from harness.judge.runner import run_case
from harness.reporting import utilisation
from tests.test_binding import FAMILY, needs_swcann
from tests.test_perf_mode import FakeClock, _launches, _passing_case


# ---------------------------------------------------------------- the bounds, on stand-in launches

def _sampled(times, bounds=perf.Bounds(), step=0.001):
    clock = FakeClock()
    return perf.sample(_launches(times, clock, step), perf.PerfSettings(warmup=3), clock, bounds)


@pytest.mark.parametrize("bad,words", [
    (3e30, "on the host's clock: impossible"),           # longer than the call took (and any deadline)
    (float("nan"), "not a finite time"),
    (float("inf"), "not a finite time"),
    (-1.0, "no work reached the stream"),
])
def test_an_impossible_launch_time_fails_with_its_reason(bad, words):
    times = [1.0] * 3 + [1.0] * 10 + [bad] + [1.0] * 200     # one bad sample among the first
    with pytest.raises(perf.LaunchFailed, match="timed launch 14 took") as e:
        _sampled(times, step=0.002)
    assert words in str(e.value)


def test_a_launch_faster_than_the_bandwidth_allows_fails():
    """1e-30 ms for a launch that must write 1 MB at 1600 GB/s (at least 6.25e-4 ms)."""
    limit = {"gbps": 1600.0, "bytes": "written"}
    least = perf.least_ms(limit, {"read": 4_000_000, "written": 1_000_000})
    assert least == pytest.approx(1e6 / 1.6e12 * 1e3)
    bounds = perf.Bounds(least, "its written bytes need at the limit's 1600 GB/s")
    with pytest.raises(perf.LaunchFailed, match="faster than the bandwidth allows") as e:
        _sampled([1.0] * 10 + [1e-30] + [1.0] * 300, bounds)
    assert "timed launch 11 took 1e-30 ms" in str(e.value)
    # within the stated factor it is a (fast) time, not an impossible one
    ok = _sampled([least / perf.FASTER_FACTOR * 1.01] * 300, bounds, step=1e-6)
    assert ok["samples_ms"]
    # the read + written count of a hardware limit
    assert perf.least_ms({"gbps": 1600.0, "bytes": "read+written"}, {"read": 4, "written": 1}) == 5 / 1.6e12 * 1e3
    assert perf.least_ms({"gbps": None, "bytes": "written"}, {"read": 4, "written": 1}) is None


def test_an_outlier_is_listed_not_averaged_away():
    samples = [1.0 + 0.001 * i for i in range(59)] + [9.0]
    far = perf.outliers(samples, 1.03, warmup=3)
    assert far["count"] == 1 and far["launches"] == [{"launch": 63, "ms": 9.0, "x_median": pytest.approx(9 / 1.03)}]
    assert perf.outliers([1.0] * 60, 1.0, 3)["count"] == 0


# ---------------------------------------------------------------- the bounds, on the software CANN

class ReportsOnLaunch:
    """The in-process backend, except that timed launch `which` (0-based, warmups counted) reads
    as `ms` (a library whose events report absurd times)."""

    def __init__(self, backend, which: int, ms: float):
        self._b, self._which, self._ms = backend, which, ms

    def __getattr__(self, name):
        return getattr(self._b, name)

    def measure(self, op, args, loop):
        count = iter(range(10 ** 6))

        def lying_loop(launch):
            def one():
                real = launch()
                return self._ms(real) if callable(self._ms) else (self._ms if next(count) == self._which else real)
            return loop(one)
        return self._b.measure(op, args, lying_loop)


@needs_swcann
@pytest.mark.parametrize("ms,words", [(3e30, "impossible"), (1e-30, "faster than the bandwidth allows"),
                                      (float("nan"), "not a finite time")])
def test_absurd_event_times_fail_the_case_on_the_software_cann(backend, monkeypatch, ms, words):
    monkeypatch.setattr(backend, "perf_all", True)
    case = _passing_case("max_pool2d_with_indices_backward")
    out = run_case(case, ReportsOnLaunch(backend, 30, ms), FAMILY)
    assert out.raw is Status.FAIL and out.perf is None, out.reason
    assert out.reason.startswith(perf.FAILED) and "timed launch 31 took" in out.reason and words in out.reason
    assert out.verdict and out.verdict["passed"]                 # correctness was judged first, and held
    assert backend.after_case() == []


@needs_swcann
def test_every_absurd_time_fails_and_a_plausible_outlier_is_in_the_record(backend, monkeypatch):
    monkeypatch.setattr(backend, "perf_all", True)
    case = _passing_case("max_pool2d_with_indices_backward")
    for ms in (3e30, 1e-30):                                      # every launch absurd
        out = run_case(case, ReportsOnLaunch(backend, -1, lambda real, ms=ms: ms), FAMILY)
        assert out.raw is Status.FAIL and "timed launch 1 took" in out.reason
    launches = iter(range(10 ** 6))
    out = run_case(case, ReportsOnLaunch(backend, -1, lambda real: real * (5 if next(launches) == 23 else 1)), FAMILY)
    assert out.raw is Status.PASS, out.reason
    far = out.perf["outliers"]
    assert far["count"] >= 1 and 24 in [o["launch"] for o in far["launches"]], far
    assert backend.after_case() == []


@needs_swcann
def test_the_software_canns_limit_bounds_every_correct_launch(backend, monkeypatch):
    """CPU time: the limit counts the bytes written at this host's fastest store rate, and says so;
    a correct case's share of it stays under 100 % (MaxUnpool3d's gather read 113-134 % of the old
    host-copy limit)."""
    monkeypatch.setattr(backend, "perf_all", True)
    for name in ("max_pool2d_with_indices_backward", "max_unpool3d_backward"):
        out = run_case(_passing_case(name), backend, FAMILY)
        assert out.raw is Status.PASS, out.reason
        limit = out.perf["limit"]
        assert limit["bytes"] == "written" and limit["source"].startswith("derived: this host's fastest store rate")
        assert 0 < limit["percent"] < 100, limit
        assert limit["least_ms"] == pytest.approx(out.perf["bytes"]["written"] / (limit["gbps"] * 1e9) * 1e3)
    assert backend.after_case() == []


def test_the_modelled_limit_counts_the_bytes_every_modelled_kernel_moves():
    for env, gbps in (({}, 1600.0), ({"SWCANN_DEVICE_GBPS": "0.0005"}, 0.0005)):
        got = peak_bandwidth.limit("modelled", "ascend910b", environ=env)
        assert got["gbps"] == gbps and got["bytes"] == "written" and got["source"].startswith("derived: ")
    assert peak_bandwidth.limit("modelled", "ascend310b", "Ascend310B1", environ={})["gbps"] == 51.2   # the model's table
    assert peak_bandwidth.limit("modelled", "ascend950", "Ascend950DT_9591", environ={})["gbps"] == 4000.0
    hw = peak_bandwidth.limit("events", "ascend910b")
    assert hw["bytes"] == "read+written" and hw["gbps"] == 1600.0          # hardware: the sourced table stays


# ---------------------------------------------------------------- utilisation cannot exceed 100 %

def _timed_rec(device, ms, n):
    return {"case_id": f"A.g[{device}-{ms}]", "backend": {"device": device}, "started_at": 1000.0,
            "timings": {"total": 6.0}, "perf": {"cold_ms": ms, "samples_ms": [ms] * n}}


def test_busy_over_wall_is_reported_as_inconsistent_not_as_a_share():
    util = utilisation.summary([_timed_rec("npu:0", 3e30, 60), _timed_rec("npu:1", 1.0, 60)])
    bad, good = util["devices"]
    assert bad["utilisation"] is None and bad["inconsistent"].startswith("inconsistent: the measured device time")
    assert good["utilisation"] == pytest.approx(61e-3 / 6.0, rel=1e-2) and "inconsistent" not in good
    text = "\n".join(utilisation.lines(util) + utilisation.markdown(util))
    assert "inconsistent" in text and "e+31 %" not in text and "e+29 %" not in text
    for row in util["devices"]:
        assert row["utilisation"] is None or row["utilisation"] <= 1


# ---------------------------------------------------------------- the plots

def _figure(monkeypatch, *args):
    """plots.device_time's matplotlib figure, drawn, beside its SVG."""
    from harness.reporting import plots
    got = {}
    real = plots._svg

    def keep(fig, gid):
        got["fig"] = fig
        return real(fig, gid)
    monkeypatch.setattr(plots, "_svg", keep)
    svg = plots.device_time(*args)
    return got["fig"], str(svg)


@pytest.mark.parametrize("timing,words", [("cpu_time", "CPU time (software CANN) per launch"),
                                          ("modelled", "modelled device time (software CANN) per launch"),
                                          ("events", "device time per launch")])
def test_the_plot_names_the_time_as_measured_and_its_legend_fits(monkeypatch, timing, words):
    from harness.reporting import html
    from harness.judge.peak_bandwidth import limit
    source = limit(timing, "ascend950", environ={})["source"]        # the longest labels there are
    points = [{"family": "ascend950", "bytes": b, "median_ms": b / 1e6, "gbps": 1.0, "limit_gbps": 1600.0,
               "limit_source": source, "limit_bytes": "written" if timing != "events" else "read+written",
               "least_ms": b / 4 / 1.6e12 * 1e3, "timing": timing} for b in (1e3, 1e5, 1e7)]
    fig, svg = _figure(monkeypatch, "MaxUnpool3dBackward", [("ascend950", p["bytes"], p["median_ms"] / 1e3) for p in points],
                       html._limits(points), html.time_axis([timing]))
    assert words in svg.replace("\n", " ")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()                       # the layout as the SVG had it (constrained layout runs again)
    renderer = canvas.get_renderer()
    box = fig.bbox
    for legend in fig.legends:
        for text in legend.get_texts():
            ext = text.get_window_extent(renderer)
            assert ext.x0 >= box.x0 - 0.5 and ext.x1 <= box.x1 + 0.5 and ext.y0 >= box.y0 - 0.5, (text.get_text(), ext, box)
    assert math.isfinite(fig.get_figheight())
