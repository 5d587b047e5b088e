"""A repeatable executor launched twice (acl_abi.md 2.2): the `relaunch: true` groups and --relaunch.

Graph replay and torch_npu's executor cache make an executor repeatable
(aclSetAclOpExecutorRepeatable right after phase 1) and launch it again and again. A library that
keeps state in the executor across launches (a clearing done once, tiling data freed after the
first launch) is right on the first launch and wrong on every later one, which a suite launching
each executor once never sees. The second launch runs on the same buffers, its outputs set back to
their poison and with a workspace of its own (the first must stay untouched), and is judged like the first.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.judge import runner
from harness.operators import load_case_file
from tests.test_binding import FAMILY, _args, needs_swcann

ROOT = Path(__file__).resolve().parents[1]


def _cases(name: str):
    return load_case_file(ROOT / "cases" / f"{name}.yaml")[1]


def _relaunch_case(name: str):
    return next(c for c in _cases(name) if c.relaunch and FAMILY in c.families and c.status.get(FAMILY) == 0)


def _break_phase2(backend, monkeypatch, broken) -> None:
    """Every phase-2 call of a run goes through broken(phase2, seen, ws, size, executor, stream),
    `seen` the workspaces of the run's earlier calls (its repeatable executor's launches)."""
    real_entry = backend._entry

    def entry(op, kinds):          # once per backend.run
        phase1, phase2 = real_entry(op, kinds)
        seen: list[int] = []

        def call(ws, size, executor, stream):
            ret = broken(phase2, list(seen), ws, size, executor, stream)
            seen.append(ws)
            return ret
        return phase1, call
    monkeypatch.setattr(backend, "_entry", entry)


@needs_swcann
def test_a_relaunch_runs_the_executor_twice_and_destroys_it(backend):
    """Both launches give the result and leave nothing behind: the repeatable executor is freed
    with aclDestroyAclOpExecutor (the software CANN counts live objects after every case)."""
    case = _relaunch_case("max_pool3d_with_argmax_backward")
    launches = backend._launches()
    result = backend.run(case.op.descriptor, _args(case), relaunch=True)
    assert backend._launches() - launches == 2
    assert result.status == 0 and not result.runtime_failed, result.message
    second = result.second
    assert second is not None and not second.runtime_failed, second.message
    for name, arg in result.outputs.items():
        assert arg.storage.data_ptr() != second.outputs[name].storage.data_ptr()   # two downloads, not one
        assert not arg.logical.isnan().any() and not second.outputs[name].logical.isnan().any()
    assert backend.after_case() == []
    assert runner.run_case(case, backend, FAMILY).raw.value == "PASS"


@needs_swcann
def test_a_second_launch_that_does_nothing_fails_the_case(backend, monkeypatch):
    """Broken on purpose: the second phase-2 call returns success without running the kernel.
    The outputs were set back to poison before it, so the case fails, and says which launch."""
    case = _relaunch_case("max_unpool3d_backward")
    _break_phase2(backend, monkeypatch, lambda phase2, seen, *args: 0 if seen else phase2(*args))
    out = runner.run_case(case, backend, FAMILY)
    assert out.raw.value == "FAIL"
    assert out.reason.startswith("second launch of the repeatable executor: out:"), out.reason
    assert out.verdict is not None and not out.verdict["passed"]      # the report shows that launch's metrics
    plain = runner.run_case(dataclasses.replace(case, relaunch=False), backend, FAMILY)
    assert plain.raw.value == "PASS", plain.reason      # one launch: the break does not show
    assert backend.after_case() == []


def _suite(tmp_path, name: str, faults: str | None, *args) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "SWCANN_FAULTS", "SWCANN_DEVIATIONS")}
    env["SWCANN_SOC"] = "ascend910b"
    if faults:
        env["SWCANN_FAULTS"] = faults
    report = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "pytest", "cases/max_pool3d_with_argmax_backward.yaml", "--backend",
                           "aclnn", "--soc", "ascend910b", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "--report-dir", str(report), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    results = report / "results.jsonl"
    assert results.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return [json.loads(line) for line in results.read_text().splitlines()]


@needs_swcann
@pytest.mark.parametrize("fault", ["relaunch_not_zeroed", "relaunch_no_kernel"])
def test_library_state_kept_across_launches_is_caught_by_the_relaunch_groups(tmp_path, fault):
    """The software CANN's faults: a clearing of gradInput done on the first launch only, and
    tiling data released after it. Only the repeatable_executor cases see them."""
    records = _suite(tmp_path, fault, fault, "-k", "repeatable_executor or windows_exact")
    failed = {r["case_id"] for r in records if r["status"] != "PASS"}
    relaunched = {r["case_id"] for r in records if ".repeatable_executor[" in r["case_id"]}
    assert relaunched and failed == relaunched, sorted(failed ^ relaunched)[:5]
    assert all(r["reason"].startswith("second launch of the repeatable executor: gradInput:")
               for r in records if r["status"] != "PASS")


@needs_swcann
def test_relaunch_option_holds_every_case_to_it(tmp_path):
    """--relaunch launches every case's executor twice: the fault now shows on cases outside the
    relaunch groups too, and the run says it was made that way (properties, repro line)."""
    records = _suite(tmp_path, "all", "relaunch_no_kernel", "-k", "windows_exact and float32", "--relaunch")
    assert records and all(r["status"] == "FAIL" for r in records), [r["status"] for r in records]
    assert all(r["reason"].startswith("second launch of the repeatable executor") for r in records)
    summary = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert summary["properties"]["relaunch"] == "true"
    assert " --relaunch" in records[0]["repro"]
    clean = _suite(tmp_path, "clean", None, "-k", "windows_exact and float32", "--relaunch")
    assert clean and all(r["status"] == "PASS" for r in clean)


@needs_swcann
def test_a_second_launch_in_the_first_launchs_workspace_fails_the_case(backend, monkeypatch):
    """Broken on purpose: the second phase-2 call works in the workspace of the first (an address
    kept in the executor). It gets a workspace of its own and the first one must stay untouched."""
    case = _relaunch_case("max_pool3d_with_argmax_backward")
    plain = runner.run_case(case, backend, FAMILY)
    assert plain.raw.value == "PASS", plain.reason
    _break_phase2(backend, monkeypatch, lambda phase2, seen, ws, *rest: phase2((seen or [ws])[0], *rest))
    result = backend.run(case.op.descriptor, _args(case), relaunch=True)
    assert result.workspace_size and result.second.stale_workspace > 0
    out = runner.run_case(case, backend, FAMILY)
    assert out.raw.value == "FAIL" and "wrote into the first launch's workspace" in out.reason, out.reason
    assert backend.after_case() == []
