"""Keeping several devices busy: case workers sized by devices where the work is device time
(harness/execution/sizing.py), cases dealt so that no worker idles while cases wait
(harness/execution/pool.py), and each device's utilisation reported (harness/reporting/utilisation.py).

The software CANN shows N devices (SWCANN_DEVICES) and, with SWCANN_DEVICE_TIME=1, sleeps each
kernel's modelled device time (bytes / SWCANN_DEVICE_GBPS): a device-bound run on two cores.
benchmarks/bench_devices.py measures the targets on 8 devices.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from harness.execution import sizing
from harness.reporting import utilisation
from tests.test_casefile_errors import BASE
from tests.test_robust import _pytest, _records

ATTRS = {"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}
DEVICE_TIME = {"SWCANN_DEVICE_TIME": "1"}


def _group(name: str, shapes, layouts=("contiguous", "strided"), values=("uniform", "small_int", "normal",
                                                                           "constant")) -> dict:
    return {"name": name, "matrix": {"shape": [list(s) for s in shapes], "dtype": ["float32"], "index_dtype": ["int32"],
                                     "format": ["NCHW"], "layout": list(layouts), "values": list(values),
                                     "attrs": [ATTRS]}}


def _write(tmp: Path, groups: list[dict]) -> None:
    doc = copy.deepcopy(BASE)
    doc["groups"] = groups
    (tmp / "cases").mkdir(parents=True, exist_ok=True)
    (tmp / "cases" / "mp.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


SHORT = [(1, 1, h, w) for h in (4, 6) for w in (4, 6)]       # 32 cases of about 250 bytes moved


def test_four_devices_with_device_time_get_four_workers_each_busy_and_reported(tmp_path):
    _write(tmp_path, [_group("short", SHORT + [(1, 2, 6, 6)])])
    env = {"SWCANN_DEVICES": "4", **DEVICE_TIME, "SWCANN_DEVICE_GBPS": "0.00002"}    # ~15 ms a case
    code, out, _ = _pytest(tmp_path, "-n", "0", env=env)
    assert code == 0, out[-3000:]
    assert "case workers: 4 per pytest process (auto: one per device, 4 device(s); software CANN with " \
           "SWCANN_DEVICE_TIME=1" in out, out[:3000]
    records = _records(tmp_path / "rep")
    assert {(r["worker"], r["backend"]["device"]) for r in records} == \
        {(f"main.{k}", f"npu:{k}") for k in range(4)}                    # every device ran cases, each its own worker
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert summary["identity"]["case_workers"] == 4
    util = summary["utilisation"]
    assert [row["device"] for row in util["devices"]] == [f"npu:{k}" for k in range(4)]
    assert sum(row["cases"] for row in util["devices"]) == len(records) == 40
    for row in util["devices"]:
        mine = [r for r in records if r["backend"]["device"] == row["device"]]
        assert row["busy_s"] == pytest.approx(sum(r["device_s"] for r in mine), abs=1e-5)
        assert 0 < row["utilisation"] <= 1 and row["source"] == "launches"
    assert util["busy_s"] >= 40 * 0.010          # the modelled sleep is in it
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("npu:") and "% busy" in ln]
    assert len(lines) == 4, out[-2000:]
    md = (tmp_path / "rep" / "summary.md").read_text()
    assert "## Device utilisation" in md and md.count("| npu:") == 4


def test_without_device_time_the_cores_decide(tmp_path):
    """The same four devices timing their kernels' CPU time: the work is CPU work, one worker per core."""
    _write(tmp_path, [_group("short", SHORT[:1], layouts=("contiguous",), values=("uniform",))])
    code, out, _ = _pytest(tmp_path, "-n", "0", env={"SWCANN_DEVICES": "4"})
    assert code == 0, out[-3000:]
    assert "per pytest process (auto: one per core" in out and "one per device" not in out, out[:3000]


def test_a_long_case_does_not_leave_the_other_workers_idle(tmp_path):
    """pytest asks for cases in order. A long case first (about 5.5 s of device time, slept), then 32 short
    ones (25 ms each), on two devices: while pytest waits for the long one, the other worker runs the short
    ones, all of them, not only a fixed window ahead of it (once 2 x LOOKAHEAD per worker: 16).

    The long case is long enough for a busy machine: the short ones fit in it while each costs up to 170 ms
    (on a quiet machine the other worker began all of its short ones within 0.75 s of the long one's start,
    about 25 ms each, CPU included, which load stretches); a fixed window stops at 16 however long the long
    case is. "While it ran" is told by the workers' own clock: the long one ended when its worker began its
    next case (the pytest process may take that answer later: it once counted a case begun 14 ms after)."""
    _write(tmp_path, [_group("long", [(1, 1, 96, 96)], layouts=("contiguous",), values=("uniform",)),
                      _group("short", SHORT)])
    env = {"SWCANN_DEVICES": "2", **DEVICE_TIME, "SWCANN_DEVICE_GBPS": "0.00001"}
    code, out, _ = _pytest(tmp_path, "-n", "0", env=env)
    assert code == 0, out[-3000:]
    records = _records(tmp_path / "rep")
    long = next(r for r in records if ".long[" in r["case_id"])
    assert long["device_s"] > 4.0, long["device_s"]
    after = [r["started_at"] for r in records if r["worker"] == long["worker"] and r["started_at"] > long["started_at"]]
    end = min(after, default=long["started_at"] + long["timings"]["total"])
    meanwhile = [r for r in records if ".short[" in r["case_id"] and r["started_at"] < end]
    assert {r["worker"] for r in meanwhile} == {({"main.0", "main.1"} - {long["worker"]}).pop()}
    assert len(meanwhile) >= 28, f"{len(meanwhile)} of 32 short cases started while the long one ran"


# ------------------------------------------------------------------ sizing

@pytest.fixture
def plenty(monkeypatch):
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(sizing, "available_memory", lambda: 64 << 30)
    monkeypatch.setattr(sizing, "hardware_devices", lambda backend: None)


def _plan(env: dict, **kw) -> sizing.Plan:
    args = {"backend": "aclnn", "device": None, "distributed": False, "single_case": False, "tier": "default", **kw}
    return sizing.plan("auto", environ=env, **args)


def test_auto_is_one_worker_per_simulated_device_with_device_time(plenty):
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME}).count == 8
    assert _plan({"SWCANN_DEVICE_COUNT": "3", **DEVICE_TIME}).count == 3
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME, "ASCEND_RT_VISIBLE_DEVICES": "1,5"}).count == 2
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME, "ASCEND_RT_VISIBLE_DEVICES": "6,9,1"}).count == 1  # stops at 9
    assert _plan({"SWCANN_DEVICES": "8"}).count == 2                  # CPU time: the cores
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME}, backend="torch").count == 2
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME}, distributed=True).count == 1
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME}, single_case=True).count == 1
    assert sizing.plan("3", backend="aclnn", device=None, distributed=False, single_case=False).count == 3


def test_device_workers_are_capped_by_memory(plenty, monkeypatch):
    monkeypatch.setattr(sizing, "available_memory", lambda: 5 << 30)
    plan = _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME})
    assert plan.count == 5 and "memory holds 5 at 1024 MiB each" in plan.why, plan.why
    assert _plan({"SWCANN_DEVICES": "8", **DEVICE_TIME}, tier="all").count == 1          # 3 GiB a slow case


def test_on_hardware_the_devices_decide(plenty, monkeypatch):
    monkeypatch.setattr(sizing, "hardware_devices", lambda backend: 8 if backend == "aclnn" else None)
    plan = _plan({})
    assert plan.count == 8 and plan.why.endswith("hardware: device time"), plan.why
    assert sizing.auto_xdist_workers("aclnn") == 0                    # one pytest process deals to all eight


def test_device_nodes_are_counted(tmp_path):
    for name in ("davinci0", "davinci7", "davinci_manager", "davinci12", "hisi_hdc"):
        (tmp_path / name).touch()
    assert sizing._device_nodes(tmp_path) == 3
    assert sizing._device_nodes(tmp_path / "missing") == 0


# ------------------------------------------------------------------ utilisation

def _rec(device: str, start: float, total: float, device_s=None, perf=None, launch_s=None) -> dict:
    return {"backend": {"device": device}, "started_at": start, "timings": {"total": total}, "device_s": device_s,
            "launch_s": launch_s, "perf": perf}


def test_utilisation_is_busy_over_the_span_of_the_cases():
    records = [_rec("npu:10", 100.0, 1.0, device_s=0.5), _rec("npu:2", 100.5, 2.0, device_s=1.5),
               _rec("npu:2", 102.5, 1.5, device_s=1.0),
               _rec("npu:2", 101.0, 0.5, perf={"cold_ms": 100.0, "samples_ms": [50.0, 50.0], "remeasured_ms": [50.0]}),
               _rec("npu:10", 101.0, 0.1, launch_s=0.1, device_s=None),       # an invalid case: no launch
               {"case_id": "MISSING", "backend": {}}]
    util = utilisation.summary(records)
    assert util["wall_s"] == pytest.approx(4.0)                      # 100.0 .. 104.0
    rows = {r["device"]: r for r in util["devices"]}
    assert [r["device"] for r in util["devices"]] == ["npu:2", "npu:10"]
    assert rows["npu:2"]["busy_s"] == pytest.approx(2.75) and rows["npu:2"]["cases"] == 3
    assert rows["npu:2"]["utilisation"] == pytest.approx(2.75 / 4) and rows["npu:2"]["source"] == "events+launches"
    assert rows["npu:10"]["busy_s"] == pytest.approx(0.5) and rows["npu:10"]["source"] == "launches"
    assert set(util["sources"]) == {"events", "launches"}
    lines = utilisation.lines(util)
    assert len(lines) == 3 and "npu:2:  68.8 % busy (2.75 s), 3 case(s) [events+launches]" in lines[1], lines
    assert utilisation.summary([{"case_id": "x"}]) is None and utilisation.lines(None) == []
