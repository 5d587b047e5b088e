"""Batch-slice consistency, determinism level 3 (harness/judge/batch_slice.py, --determinism-level).

A slice [N//2:N] of a case's batch, run alone, must give the bits of the same slice of the full
batch. It must hold on the fault-free software CANN for every operator it applies to, and a library
whose accumulation order depends on the batch index (SWCANN_FAULTS=batch_order_varies: batch n > 0
sums its windows in reverse) must fail it while passing everything else: the same case twice gives
the same bits, and every result is within its tolerance. Otherwise the check proves nothing about slicing.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

from harness import inputs as inputs_mod
from harness.judge import batch_slice, reasons
from harness.judge.cache import materials
from harness.judge.outcome import Outcome
from tests import swenv

ROOT = Path(__file__).resolve().parents[1]


def _batched(loaded, family: str, per_op: int):
    """Per operator, up to `per_op` numeric cases the check applies to on `family`: one of each group
    first, so every kind of case the op has is in."""
    out = {}
    for op, cases in loaded:
        pick, seen = [], set()
        usable = [c for c in cases if c.tier == "default" and family in c.families and c.runs_numerics(family)
                  and batch_slice.not_applicable(c, family) is None]
        for c in usable:
            if c.group not in seen:
                seen.add(c.group)
                pick.append(c)
        pick += [c for c in usable if c not in pick][:max(0, per_op - len(pick))]
        out[op.name] = pick[:per_op]
    return out


def test_every_operator_keeps_batch_slices_on_the_fault_free_library(backend, loaded):
    """In process (swenv.IN_PROCESS_FAMILY), deterministic mode on as level 3 sets it: every operator has
    batched cases the check applies to, and on each the slice run alone has the full batch's bits."""
    family = swenv.IN_PROCESS_FAMILY
    checked = defaultdict(int)
    with backend.deterministic_mode():
        for op, cases in _batched(loaded, family, per_op=30).items():
            for case in cases:
                made = materials(case, True, None)
                inputs = inputs_mod.mutate(case, made.prepared)
                args = inputs_mod.build_args(case, inputs, tuple(made.prepared[case.op.output_like].shape))
                full = backend.run(case.op.descriptor, args)
                assert not backend.after_case() and full.status == 0 and full.sync_status == 0, case.id
                broken, facts = batch_slice.differs(case, backend, inputs, full)
                assert broken is None, f"{case.id}: {broken}"
                assert facts == {"slice": [case.shape[0] // 2, case.shape[0]], "batch": case.shape[0]}
                checked[op] += 1
    assert set(checked) == {op.name for op, _ in loaded}, "an operator without a batched case to check"
    assert min(checked.values()) >= 10, dict(checked)


@dataclasses.dataclass
class _Arg:
    logical: torch.Tensor


class _Backend:
    """Returns `outputs` for whatever it is asked to run: a stand-in library to break on purpose."""
    deterministic = 3

    def __init__(self, outputs: dict, status=(0, 0, 0)):
        self.outputs, self.status, self.calls = outputs, status, []

    def run(self, op, args):
        self.calls.append(args)
        st, p2, sync = self.status
        return SimpleNamespace(status=st, phase2_status=p2, sync_status=sync, message="m",
                               outputs={k: _Arg(v) for k, v in self.outputs.items()})

    def after_case(self):
        return []


def _case(loaded):
    """A batched float32 numeric case of the first operator that has one, and a family it runs on."""
    for _, cases in loaded:
        for c in cases:
            fam = next((f for f in c.families if c.runs_numerics(f)), None)
            if fam and c.dtype == "float32" and batch_slice.not_applicable(c, fam) is None:
                return c, fam
    raise AssertionError("no batched float32 case in any case file")


def test_one_ulp_in_the_slice_is_caught_and_equal_bits_pass(loaded):
    case, family = _case(loaded)
    made = materials(case, True, None)
    inputs = inputs_mod.mutate(case, made.prepared)
    n, lo = case.shape[0], case.shape[0] // 2
    name = next(p.name for p in case.op.params if p.output)
    full_out = made.expected[name].float()
    full = SimpleNamespace(outputs={name: _Arg(full_out)})
    same = _Backend({name: full_out[lo:].clone()})
    assert batch_slice.differs(case, same, inputs, full)[0] is None
    # the slice run got the slice of every batched input, and only those
    sliced = {a.name: a.value.logical for a in same.calls[0] if a.kind == "tensor" and a.value is not None
              and not a.is_output}
    for k, t in sliced.items():
        assert torch.equal(t, inputs[k][lo:]), k
    nudged = full_out[lo:].clone()
    flat = nudged.view(-1)
    flat[0] = torch.nextafter(flat[0], torch.tensor(float("inf")))
    broken, facts = batch_slice.differs(case, _Backend({name: nudged}), inputs, full)
    assert broken.startswith(reasons.BATCH_SLICE) and f"{name}[{lo}:{n}] differs in 1 of" in broken, broken
    failed = batch_slice.differs(case, _Backend({name: full_out[lo:]}, status=(0, 0, 507015)), inputs, full)[0]
    assert failed.startswith(reasons.BATCH_SLICE) and "sync 507015" in failed, failed


def test_where_the_check_applies(loaded):
    case, family = _case(loaded)
    assert batch_slice.not_applicable(case, family) is None
    one = dataclasses.replace(case, shape=(1, *case.shape[1:]))
    assert "batch 1" in batch_slice.not_applicable(one, family)
    unbatched = dataclasses.replace(case, shape=case.shape[1:])
    assert "no batch dim" in batch_slice.not_applicable(unbatched, family)
    # AdaptiveMaxPool2d on A2/A3: overlapping windows (atomic adds, the flag ignored) are ruled out,
    # the divisible path and the 950 are not
    adaptive = next(c for op, cases in loaded if op.name == "AdaptiveMaxPool2dBackward" for c in cases
                    if c.kind == "valid" and len(c.shape) == 4)
    over = dataclasses.replace(adaptive, shape=(2, 3, 9, 9), attrs={**adaptive.attrs, "outputSize": [4, 4]})
    exact = dataclasses.replace(adaptive, shape=(2, 3, 8, 8), attrs={**adaptive.attrs, "outputSize": [4, 4]})
    for fam in ("ascend910b", "ascend910_93"):
        assert "G.12" in batch_slice.not_applicable(over, fam)
        assert batch_slice.not_applicable(exact, fam) is None
    assert batch_slice.not_applicable(over, "ascend950") is None


def test_levels_below_3_run_no_slice(loaded):
    case, _ = _case(loaded)
    for level in (0, 1, 2):
        be = _Backend({})
        be.deterministic = level
        out = Outcome(case.id, case.op.name)
        assert batch_slice.check(case, be, "ascend910b", {}, None, repeated=level > 0, out=out) is None
        assert not be.calls
        assert out.determinism == (None if level == 0 else {"level": level, "repeat": True})


# ------------------------------------------------------------------ through the suite

_SELECT = ("determinism or windows_overlap or (fp32_windows and contiguous) or (windows and float32 and contiguous) "
           "or divisible or repeated_indices")


def _suite(tmp_path, name: str, *args, **env) -> list[dict]:
    report = tmp_path / name
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SWCANN_") and k != "ASCEND_HOME_PATH"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "--soc", "ascend910b",
                           "-q", "-n", "0", "-p", "no:cacheprovider", "-k", _SELECT, "--report-dir", str(report), *args],
                          cwd=ROOT, env={**full_env, **env}, capture_output=True, text=True, timeout=600)
    results = report / "results.jsonl"
    assert results.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return [json.loads(line) for line in results.read_text().splitlines()]


@pytest.mark.loops_over_ops
def test_level_3_holds_on_a2a3_and_catches_a_batch_dependent_order(tmp_path):
    """On ascend910b (atomic adds over overlapping windows, fixed by deterministic mode) every op's
    batched cases keep their slices at level 3; the batch_order_varies library fails there, with the
    batch-slice reason only, and passes level 1 (each run repeats its bits, every result in tolerance)."""
    clean = _suite(tmp_path, "clean", "--determinism-level", "3")
    assert clean and all(r["status"] == "PASS" for r in clean), [r["reason"] for r in clean if r["status"] != "PASS"][:3]
    sliced = [r for r in clean if isinstance((r.get("determinism") or {}).get("batch_slice"), dict)]
    # every op the selection reaches is sliced, and it reaches every op whose case file has a
    # determinism group (a sixth op without one is simply not selected: no count of ops here)
    with_group = {yaml.safe_load(f.read_text())["op"] for f in (ROOT / "cases").glob("*.yaml")
                  if "\n  - name: determinism\n" in f.read_text()}
    assert {r["op"] for r in sliced} == {r["op"] for r in clean} and {r["op"] for r in clean} >= with_group
    assert len(with_group) >= 2
    assert all(r["determinism"]["level"] == 3 and r["determinism"]["repeat"] for r in sliced)
    skipped = [r for r in clean if isinstance((r.get("determinism") or {}).get("batch_slice"), str)]
    assert skipped and all(r["determinism"]["batch_slice"].startswith("not checked") for r in skipped)
    summary = json.loads((tmp_path / "clean" / "summary.json").read_text())
    assert summary["identity"]["determinism_level"] == 3

    faulty = _suite(tmp_path, "faulty", "--determinism-level", "3", SWCANN_FAULTS="batch_order_varies")
    failed = [r for r in faulty if r["status"] != "PASS"]
    assert len(failed) >= 10, len(failed)
    assert all(r["reason"].startswith(reasons.BATCH_SLICE) for r in failed), [r["reason"] for r in failed][:3]
    assert {r["op"] for r in failed} >= {"MaxPool3dWithArgmaxBackward", "AvgPool2dBackward"}
    assert "MaxUnpool3dBackward" not in {r["op"] for r in failed}       # a gather: nothing to reorder
    assert all("--determinism-level 3" in r["repro"] for r in failed)

    level1 = _suite(tmp_path, "level1", "--determinism-level", "1", SWCANN_FAULTS="batch_order_varies")
    assert all(r["status"] == "PASS" for r in level1), [r["reason"] for r in level1 if r["status"] != "PASS"][:3]
    assert all((r.get("determinism") or {}).get("level") == 1 for r in level1)


def test_deterministic_and_level_0_contradict(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "cases/max_unpool3d_backward.yaml", "--backend", "aclnn",
                           "--deterministic", "--determinism-level", "0", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4 and "contradicts --determinism-level 0" in proc.stdout + proc.stderr
