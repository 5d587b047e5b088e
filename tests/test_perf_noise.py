"""The perf gate against the noise between runs: multi-run baselines, the between-run statistic,
interleaved A/B re-measurement, and the offline gate's agreement with the live one.

Synthetic launch times (seeded) or the software CANN's modelled device time (SWCANN_DEVICE_TIME=1):
no test here compares CPU times or holds a wall-clock margin (benchmarks/bench_perf_noise.py
measures the CPU-time gate on a busy machine)."""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from harness.judge.outcome import Outcome
from harness.core.status import Status
from harness.reporting import __main__ as cli, baseline as bl, reruns
from harness.reporting.perf import ab as perf_ab, baseline as perf_baseline, gate as perf_gate
from harness.reporting.perf import runs as perf_runs
from tests.reporting_fixtures import launch_times, perf_rec, write_run
from tests.test_binding import needs_swcann

A, B, C = (f"AvgPool2dBackward.g[float32-{k}]" for k in "abc")


def times(seed: int, median: float = 1.0, n: int = 60) -> list[float]:
    return list(launch_times(np.random.default_rng(seed), n, median, sigma=0.01))


def _runs(tmp_path, levels=(1.0, 1.06, 0.97), ids=(A, B)) -> list[str]:
    """One run per machine level: the same library, each run's launches around that level."""
    return [str(write_run(tmp_path / f"base{k}", [perf_rec(c, times(10 * k + j, level)) for j, c in enumerate(ids)]))
            for k, level in enumerate(levels)]


def _baseline(tmp_path, runs, name="perf.json", *extra) -> str:
    out = tmp_path / name
    assert cli.main(["baseline", "--perf", *runs, "-o", str(out), *extra]) == 0
    return str(out)


def _own(path):
    return perf_baseline.pick(bl.load_file(path))[0]


# ------------------------------------------------------------------ the baseline of several runs

def test_a_baseline_of_several_runs_keeps_each_runs_median_and_pools_their_launches(tmp_path, capsys):
    runs = _runs(tmp_path)
    path = _baseline(tmp_path, runs)
    assert "from 3 run(s)" in capsys.readouterr().out
    doc = json.loads(open(path).read())
    assert doc["version"] == 2 and [r["run"] for r in doc["measured"]["runs"]] == runs
    entry = doc["cases"][A]
    assert entry["n"] == len(entry["samples_ms"]) == 180 and len(entry["run_medians_ms"]) == 3
    assert entry["run_medians_ms"] == pytest.approx([1.0, 1.06, 0.97], rel=0.01)
    own = _own(path)
    assert own.entry(A).run_medians_ms == tuple(entry["run_medians_ms"])


def test_one_run_keeps_the_old_shape_and_its_verdict_says_it_cannot_rule_out_between_run_noise(tmp_path, capsys):
    path = _baseline(tmp_path, _runs(tmp_path)[:1])
    assert "one run: the gate cannot rule out the noise between runs" in capsys.readouterr().out
    assert "run_medians_ms" not in json.loads(open(path).read())["cases"][A]
    gated, result = perf_gate.gate([perf_rec(A, times(99, 1.0))], bl.load_file(path))
    v = gated[0]["perf_gate"][0]
    assert v["verdict"] == "SAME" and v["between_runs"] == {"runs": 1, "note": perf_runs.ONE_RUN}
    doc = json.loads(open(path).read())        # a version-1 file (no version, no runs) still loads
    for key in ("version",):
        doc.pop(key)
    for key in ("runs", "library_root", "libraries", "switches"):
        doc["measured"].pop(key)
    (tmp_path / "v1.json").write_text(json.dumps(doc))
    assert _own(tmp_path / "v1.json").entry(A).run_medians_ms == ()


def test_the_spread_is_the_stated_prediction_bound_never_below_a_run_seen():
    s = perf_runs.spread([1.0, 1.06, 0.97])
    logs = np.log([1.0, 1.06, 0.97])
    w = perf_runs.Z * np.std(logs, ddof=1) * np.sqrt(1 + 1 / 3)
    assert s.runs == 3 and s.center_ms == 1.0 and s.slowest_ms == pytest.approx(np.exp(w))
    assert s.fastest_ms == pytest.approx(np.exp(-w)) and s.slowest_ms > 1.06
    same = perf_runs.spread([2.0, 2.0])                   # no spread: the runs' own level
    assert same.slowest_ms == same.fastest_ms == 2.0
    assert perf_runs.spread([1.0]) is None and perf_runs.spread([]) is None


def test_a_slowdown_within_the_spread_between_runs_is_not_a_regression_and_a_real_one_is(tmp_path):
    """A new run at 1.12x the center: against one fast run (0.97) a regression; against three runs
    spread 0.97-1.06, within the slowest plausible run's tolerance. 1.30x is one against both."""
    runs = _runs(tmp_path, levels=(0.97, 1.06, 1.0))
    one, multi = _baseline(tmp_path, runs[:1], "one.json"), _baseline(tmp_path, runs, "multi.json")
    tonight = [perf_rec(A, times(50, 1.12), times(51, 1.12)), perf_rec(B, times(52, 1.30), times(53, 1.30))]
    by_one = {r["case_id"]: r["perf_gate"][0] for r in perf_gate.gate(tonight, bl.load_file(one))[0]}
    by_multi = {r["case_id"]: r["perf_gate"][0] for r in perf_gate.gate(tonight, bl.load_file(multi))[0]}
    assert by_one[A]["verdict"] == "REGRESSION" and by_multi[A]["verdict"] == "SAME"
    assert by_multi[A]["ratio"] == pytest.approx(1.12, rel=0.02)            # to the runs' center
    facts = by_multi[A]["between_runs"]
    assert facts["runs"] == 3 and facts["ratio_to_slowest"] < 1.10 and facts["statistic"] == perf_runs.STATISTIC
    assert by_one[B]["verdict"] == by_multi[B]["verdict"] == "REGRESSION"
    assert by_multi[B]["between_runs"]["ratio_to_slowest"] > 1.10
    assert "3 baseline runs, slowest plausible" in perf_gate.describe(by_multi[B])
    # faster than the fastest plausible run by more than the tolerance: an improvement
    fast = perf_gate.gate([perf_rec(A, times(54, 0.7), times(55, 0.7))], bl.load_file(multi))[0]
    assert fast[0]["perf_gate"][0]["verdict"] == "IMPROVEMENT"


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["cases"][A].update(run_medians_ms=[1.0, 0]), "run_medians_ms.1"),
    (lambda d: d["cases"][A].update(run_medians_ms=[1.0, "1"]), "run_medians_ms.1"),
    (lambda d: d["cases"][A].update(run_medians_ms=[]), "run_medians_ms"),
    (lambda d: d["cases"][A].update(run_medians_ms=[1.0, 1.0, 1.0, 1.0]), "3 run(s)"),
    (lambda d: d.update(version=3), "version"),
    (lambda d: d["measured"]["runs"].append({"run": ""}), "measured.runs.3.run"),
    (lambda d: d["measured"]["runs"][0].update(library_sha256="not a hash"), "measured.runs.0.library_sha256"),
    (lambda d: d["measured"].update(library_root=3), "measured.library_root"),
    (lambda d: d["measured"].update(libraries={"opapi": 1}), "measured.libraries.opapi"),
])
def test_the_new_fields_are_validated_like_the_old(tmp_path, edit, message):
    path = _baseline(tmp_path, _runs(tmp_path))
    doc = json.loads(open(path).read())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(bl.BaselineError, match="bad.json: field") as e:
        bl.load_file(bad)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_nan_run_median_is_refused(tmp_path):
    path = _baseline(tmp_path, _runs(tmp_path))
    text = open(path).read().replace('"run_medians_ms": [', '"run_medians_ms": [NaN, ', 1)
    (tmp_path / "nan.json").write_text(text)
    with pytest.raises(bl.BaselineError, match="must be a finite number"):
        bl.load_file(tmp_path / "nan.json")


def test_runs_of_different_libraries_or_several_runs_without_perf_are_one_error_line(tmp_path, capsys):
    runs = _runs(tmp_path, levels=(1.0, 1.0))
    other = write_run(tmp_path / "other", [perf_rec(A, times(7))], opapi_sha="b" * 64)
    assert cli.main(["baseline", "--perf", runs[0], str(other), "-o", str(tmp_path / "x.json")]) == 4
    err = capsys.readouterr().err
    assert err.startswith("ERROR:") and "different operator libraries" in err and len(err.splitlines()) == 1
    assert cli.main(["baseline", *runs, "-o", str(tmp_path / "y.yaml")]) == 4
    assert "perf baseline only (--perf)" in capsys.readouterr().err


# ------------------------------------------------------------------ A/B re-measurement

def _outcome(samples):
    return Outcome(A, "AvgPool2dBackward", perf={"samples_ms": samples, "stop": "ci"})


def test_an_interleaved_remeasurement_tells_a_busy_machine_from_a_slower_library(tmp_path):
    """Flagged at 1.3x. A CPU hog in the re-measurement's window slows both libraries alike: A/B
    ~1.0x, noise. A slower library stays 1.3x against the baseline's in the same window."""
    own = _own(_baseline(tmp_path, _runs(tmp_path)))
    calls = []

    def side(name, level, seed):
        def go():
            calls.append(name)
            return _outcome(times(seed + len(calls), level))
        return go
    for base_level, expect in ((1.3, "NOISE"), (1.0, "REGRESSION")):
        calls.clear()
        record = perf_rec(A, times(1, 1.3))
        outcome = Outcome(A, "AvgPool2dBackward", perf=dict(record["perf"]))
        assert reruns.remeasure(record, outcome, side("A", 1.3, 100), own,
                                ab=lambda: (side("A", 1.3, 100), side("B", base_level, 200)))
        assert calls == list(perf_ab.ORDER[:len(calls)]) and perf_ab.ORDER.startswith("ABBAAB")   # ABBA
        perf = outcome.perf
        pairs = len(perf["remeasured_ab"]["medians_ms"])
        assert len(perf["remeasured_ms"]) == len(perf["remeasured_base_ms"]) == 60 * pairs and len(calls) == 2 * pairs
        # stopped once settled: a library like the baseline's after a few pairs, a slower one needs 16 of 20
        assert pairs < 10 if expect == "NOISE" else 16 <= pairs <= perf_ab.ROUNDS
        v = perf_gate.apply([dict(record, perf=perf)], own)[0]["perf_gate"][0]
        assert v["verdict"] == expect and v["remeasured"]["against"] == "baseline library"
        assert "noise" not in v and "unconfirmed" not in v


class _Machine:
    """A shared 2-core machine as bench_perf_noise measured it: a fast and a slow state (1.5x:
    the sibling hyperthread busy), each lasting about one launch series (it flips before a series
    with probability `flip`). Every launch of a series runs in the state it started in."""

    def __init__(self, seed: int, flip: float = 0.1):
        self.rng, self.flip, self.slow = np.random.default_rng(seed), flip, False

    def side(self, level: float, n: int = 15):
        def go():
            if self.rng.random() < self.flip:
                self.slow = not self.slow
            return _outcome(list(launch_times(self.rng, n, level * (1.5 if self.slow else 1.0), sigma=0.03)))
        return go


def _ab_verdict(own, machine: _Machine, slower: float) -> str:
    record = perf_rec(A, times(1, 1.3))
    outcome = Outcome(A, "AvgPool2dBackward", perf=dict(record["perf"]))
    assert reruns.remeasure(record, outcome, machine.side(slower), own,
                            ab=lambda: (machine.side(slower), machine.side(1.0)))
    return perf_gate.apply([dict(record, perf=outcome.perf)], own)[0]["perf_gate"][0]["verdict"]


def test_the_paired_rounds_hold_where_a_machine_state_outlasts_a_launch_series(tmp_path, monkeypatch):
    """The false REGRESSIONs bench_perf_noise found: the machine's state changes at about the pace
    of launch series. Where it flips before half of them, two rounds a side, pooled (before),
    confirm a library against itself as slower in 12 of 200 windows; the paired ABBA rounds (now)
    in none. Where it flips before one in ten, the rounds find a 1.30x library in nearly every
    window and never a 1.05x one."""
    own = _own(_baseline(tmp_path, _runs(tmp_path)))
    seeds = range(200)
    assert [_ab_verdict(own, _Machine(s, flip=0.5), 1.0) for s in seeds].count("REGRESSION") == 0
    assert [_ab_verdict(own, _Machine(1000 + s), 1.3) for s in seeds].count("REGRESSION") >= 185
    assert [_ab_verdict(own, _Machine(2000 + s), 1.05) for s in seeds].count("REGRESSION") == 0
    # the scheme it replaced: two long series a side in A/B/A/B, their launches pooled
    monkeypatch.setattr(perf_ab, "ROUNDS", 2)
    monkeypatch.setattr(perf_ab, "ORDER", "ABAB")
    pooled = []
    for s in seeds:
        machine = _Machine(s, flip=0.5)
        record = perf_rec(A, times(1, 1.3))
        outcome = Outcome(A, "AvgPool2dBackward", perf=dict(record["perf"]))
        reruns.remeasure(record, outcome, machine.side(1.0, 60), own,
                         ab=lambda: (machine.side(1.0, 60), machine.side(1.0, 60)))
        perf = {k: v for k, v in outcome.perf.items() if k != "remeasured_ab"}        # pooled, as recorded then
        pooled.append(perf_gate.apply([dict(record, perf=perf)], own)[0]["perf_gate"][0]["verdict"])
    assert pooled.count("REGRESSION") >= 8


def test_the_paired_verdict_needs_enough_rounds_and_tolerates_a_few_off():
    from harness.core.paired import compare_rounds
    base = [1.0] * 20
    assert compare_rounds([1.0] * 6, [2.0] * 6).verdict == "SAME"          # 2^-6 > 1 %: undecidable
    assert compare_rounds([1.0] * 7, [2.0] * 7).verdict == "REGRESSION"
    four_off, five_off = [1.3] * 16 + [0.6] * 4, [1.3] * 15 + [0.6] * 5
    c = compare_rounds(base, four_off)
    assert c.verdict == "REGRESSION" and c.ratio == pytest.approx(1.3) and c.ci[0] == pytest.approx(1.3)
    assert compare_rounds(base, five_off).verdict == "SAME"                # the interval reaches 0.6
    assert compare_rounds(base, [1 / 1.3] * 20).verdict == "IMPROVEMENT"
    assert compare_rounds(base, [1.05] * 20).verdict == "SAME"             # inside the tolerance
    for bad in (([1.0, 1.0], [1.0]), ([1.0], [0.0]), ([], []), ([1.0], [float("nan")])):
        with pytest.raises(ValueError):
            compare_rounds(*bad)


def test_the_rounds_stop_once_settled_and_the_gate_judges_the_whole_design():
    """Exact early stopping: the verdict of the 20-pair design is decided once both extremes of the
    pairs still to come give it; a record cut before that decides nothing."""
    from harness.core.paired import compare_design, settled
    assert settled([1.0] * 5, 20, 0.10) and not settled([1.0] * 4, 20, 0.10)
    assert settled([1.306] * 16, 20, 0.10) and not settled([1.306] * 15, 20, 0.10)
    rng = np.random.default_rng(5)
    for level in (1.0, 1.05, 1.3, 0.7):
        ratios = list(level * np.exp(rng.normal(0, 0.08, 20)))
        whole = compare_design([1.0] * 20, ratios, 20).verdict
        k = next(k for k in range(1, 21) if settled(ratios[:k], 20, 0.10))
        assert compare_design([1.0] * k, ratios[:k], 20).verdict == whole, (level, k)
    with pytest.raises(ValueError, match="before its verdict was settled"):
        compare_design([1.0] * 3, [1.3] * 3, 20)


def test_a_damaged_round_list_in_a_record_is_not_comparable_not_a_traceback(tmp_path):
    own = _own(_baseline(tmp_path, _runs(tmp_path)))
    record = perf_rec(A, times(1, 1.3))
    for damaged in ("not a list", [[1.0]], [[1.0, "x"]], [[1.0, -1.0]] * 8):
        perf = {**record["perf"], "remeasured_ms": times(2, 1.3), "remeasured_base_ms": times(3, 1.0),
                "remeasured_ab": {"medians_ms": damaged}}
        v = perf_gate.apply([dict(record, perf=perf)], own)[0]["perf_gate"][0]
        assert v["verdict"] == "INCOMPARABLE", (damaged, v)


def test_both_sides_of_a_round_run_pinned_to_one_cpu_and_are_let_go_after():
    """A round is exactly ROUND_LAUNCHES launches on one CPU (the same for both libraries); the
    pinning covers every thread of the case worker, and gives each its own mask back."""
    import threading
    from dataclasses import dataclass as _dc
    from harness.core import affinity
    from harness.judge.perf import PerfSettings

    @_dc(frozen=True)
    class _Case:
        perf: dict | None = None
    short = perf_ab.round_case(_Case({"warmup": 5, "tolerance": 0.2}))
    settings = PerfSettings.of(short.perf)
    assert settings.warmup == 5 and settings.rule.max_n == perf_ab.ROUND_LAUNCHES
    assert settings.rule.min_n == perf_ab.ROUND_MIN_LAUNCHES and settings.rule.budget_s == perf_ab.ROUND_BUDGET_S
    assert short.perf[perf_ab.TIMING_ONLY] is True
    assert settings.cpu == affinity.last_cpu() == max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    seen, go, done = {}, threading.Event(), threading.Event()

    def stream():                       # a thread started before the pinning, as the CANN's stream is
        go.wait()
        seen["inside"] = os.sched_getaffinity(0)
        done.set()
    t = threading.Thread(target=stream)
    t.start()
    with affinity.pinned(settings.cpu):
        assert os.sched_getaffinity(0) == {settings.cpu}
        go.set()
        done.wait(60)
    t.join()
    assert seen["inside"] == {settings.cpu} and os.sched_getaffinity(0) == before
    with affinity.pinned(10_000):       # a CPU this process may not use: nothing changes
        assert os.sched_getaffinity(0) == before


def test_without_the_baseline_library_the_regression_says_noise_is_not_ruled_out(tmp_path):
    own = _own(_baseline(tmp_path, _runs(tmp_path)))
    record = perf_rec(A, times(1, 1.3))
    outcome = Outcome(A, "AvgPool2dBackward", perf=dict(record["perf"]))
    assert reruns.remeasure(record, outcome, lambda: _outcome(times(2, 1.3)), own, alone_why="its root is gone")
    gated, result = perf_gate.gate([dict(record, perf=outcome.perf)], bl.Baseline(own.target, perf=[
        (own.path, json.loads(open(own.path).read()))]))
    v = gated[0]["perf_gate"][0]
    assert v["verdict"] == "REGRESSION" and v["remeasured"]["against"] == "baseline file"
    assert "its root is gone" in v["noise"] and "machine noise" in v["noise"]
    assert "1 of them re-measured without the baseline library" in result.lines()[0]


def test_a_side_that_fails_leaves_a_remeasurement_of_this_runs_side_only(tmp_path):
    own = _own(_baseline(tmp_path, _runs(tmp_path)))
    record = perf_rec(A, times(1, 1.3))
    outcome = _outcome(record["perf"]["samples_ms"])
    failed = lambda: Outcome(A, "AvgPool2dBackward", Status.FAIL, "boom")     # noqa: E731
    assert reruns.remeasure(record, outcome, lambda: _outcome(times(3, 1.3)), own,
                            ab=lambda: (lambda: _outcome(times(3, 1.3)), failed))
    assert "remeasured_base_ms" not in outcome.perf and "boom" in outcome.perf["remeasured_alone"]


def test_the_baseline_library_is_at_hand_only_where_its_files_hash_as_measured(tmp_path):
    root = tmp_path / "cann"
    (root / "lib64").mkdir(parents=True)
    lib = root / "lib64" / "libopapi_nn.so"
    lib.write_bytes(b"kernels")
    measured = {"library_root": str(root), "libraries": {"opapi": str(lib)},
                "library_sha256": hashlib.sha256(b"kernels").hexdigest()}
    assert perf_ab.at_hand(measured) == (root, "")
    assert "names no library root" in perf_ab.at_hand({**measured, "library_root": None})[1]
    outside = tmp_path / "elsewhere.so"
    outside.write_bytes(b"kernels")
    assert "not all under" in perf_ab.at_hand({**measured, "libraries": {"opapi": str(outside)}})[1]
    lib.write_bytes(b"kernels, rebuilt")
    assert "sha256 differs" in perf_ab.at_hand(measured)[1]
    assert "is gone" in perf_ab.at_hand({**measured, "library_root": str(tmp_path / "gone")})[1]
    assert perf_ab.BaselineLibrary({}, measured).runner(None, 1.0) is None


def test_the_baseline_library_runs_with_the_baseline_runs_switches(tmp_path, monkeypatch):
    monkeypatch.setenv("SWCANN_FAULTS", "perf_slow_kernel")
    env = perf_ab.library_env(tmp_path, {"SWCANN_DEVICE_TIME": "1"})
    assert env["SWCANN_FAULTS"] is None and env["SWCANN_DEVICE_TIME"] == "1"     # None: unset in its zygote
    assert env["ASCEND_HOME_PATH"] == str(tmp_path)
    assert perf_ab.library_env(tmp_path)["SWCANN_FAULTS"] == "perf_slow_kernel"  # none recorded: this run's


# ------------------------------------------------------------------ live and offline, one verdict

@needs_swcann
@pytest.mark.parametrize("at_hand", [False, True])
def test_the_offline_gate_gives_the_live_gates_verdicts_and_exit_status(tmp_path, at_hand):
    """On modelled device time: two baseline runs, a baseline of both made 1/1.5 as fast. With the
    file alone, every case is a regression re-measured on this run's side only (machine noise not
    ruled out), exit 1; with the library at hand, the A/B re-measurement finds the library as fast
    as the run (the file's times are not the library's): noise, exit 0. Either way the offline
    gate of the same run directory says the same, case by case, with the same exit status."""
    from tests.test_perf_mode import MODELLED, SMALL, _records, _suite
    for k in (1, 2):
        proc = _suite(tmp_path / f"base{k}", "--perf", select=SMALL, env=MODELLED)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    path = _baseline(tmp_path, [str(tmp_path / "base1"), str(tmp_path / "base2")])
    doc = json.loads(open(path).read())
    assert doc["measured"]["switches"]["SWCANN_DEVICE_TIME"] == "1" and perf_ab.at_hand(doc["measured"])[0]
    for entry in doc["cases"].values():
        entry["samples_ms"] = [x / 1.5 for x in entry["samples_ms"]]
        entry["run_medians_ms"] = [x / 1.5 for x in entry["run_medians_ms"]]
    if not at_hand:
        doc["measured"]["library_root"] = str(tmp_path / "gone")
    (tmp_path / "faster.json").write_text(json.dumps(doc))
    live = _suite(tmp_path / "live", "--perf", "--gate", str(tmp_path / "faster.json"), select=SMALL, env=MODELLED)
    recs = _records(tmp_path / "live")
    expect, code = ("NOISE", 0) if at_hand else ("REGRESSION", 1)
    assert live.returncode == code, live.stdout[-3000:]
    verdicts = {r["case_id"]: r["perf_gate"][0] for r in recs}
    assert len(verdicts) == 3 and all(v["verdict"] == expect for v in verdicts.values()), verdicts
    against = "baseline library" if at_hand else "baseline file"
    assert all(v["remeasured"]["against"] == against for v in verdicts.values())
    assert all(("noise" in v) != at_hand for v in verdicts.values())
    assert all(v["ratio"] == pytest.approx(1.5, rel=1e-6) for v in verdicts.values())
    assert all(v["remeasured"]["ratio"] == pytest.approx(1.0 if at_hand else 1.5, rel=1e-6) for v in verdicts.values())
    offline_code = cli.main(["gate", str(tmp_path / "live"), str(tmp_path / "faster.json")])
    gated, _ = perf_gate.gate(recs, bl.load_file(tmp_path / "faster.json"))
    assert offline_code == live.returncode
    assert {r["case_id"]: r["perf_gate"][0] for r in gated} == verdicts
