"""Batch-slice consistency: determinism level 3 (`--determinism-level 3`, TTK's `--dl=3`).

TTK's levels (hicann/ops-test-kit docs/Deterministic_Compute.md), which ACL_OPT_DETERMINISTIC's
values follow (acl_abi.md 3.3): 1 the same case run again gives the same bits, 2 strong
consistency (compile-time determinism too: there is no graph compile around one aclnn call, so the
harness checks what it checks at 1), 3 batch consistency: a slice of a batch gives the bits of the
same slice of the full batch. Here, at level 3, a case whose batch N > 1 runs a second time with
every batched tensor sliced to [N//2:N] (the same data, the indices of each (n, c) plane unchanged),
and that output must hold the bits of the full run's output [N//2:N]. The slice starts past 0 on
purpose: a library whose result depends on where a plane sits in the batch (its offset, a tiling
that splits the batch) gives the first planes the same treatment either way.

Where it applies, per operator (spec section C of each op; every (n, c) plane is computed on its
own by all five, so the spec rules the check out only where the bits may vary by themselves):
* MaxPool2dWithIndices, MaxPool3dWithArgmax: yes. Only the summation order of overlapping windows
  varies, and deterministic mode (which level 3 sets) fixes it on A2/A3 (their Normal tiling reads
  the flag); the 950 kernels accumulate in an fp32 buffer.
* AvgPool2d: yes. AvgPool3DGrad (A2/A3) honours the flag (isDetermine), AvgPoolV2Grad (950) gathers,
  the cube and global-average paths are a per-plane convolution and a broadcast.
* MaxUnpool3d: yes. A gather: deterministic by default, no accumulation.
* AdaptiveMaxPool2d: yes, except on A2/A3 when the windows overlap (the input not divisible by the
  output size): that tiling never reads the deterministic flag and sums with fp32 atomic adds, so
  even two runs of the same batch may differ (spec C "Determinism", G.12). The divisible path writes
  each element once and is checked.
An operator this table does not name is checked: the spec's silence does not rule it out.
"""
from __future__ import annotations

import torch

from .. import inputs as inputs_mod
from ..model import Case
from . import reasons

A2A3 = ("ascend910b", "ascend910_93")


def _adaptive(case: Case, family: str | None) -> str | None:
    if family not in A2A3:
        return None
    h, w = case.shape[-2:]
    oh, ow = case.attrs.get("outputSize") or (0, 0)
    if oh and ow and h % oh == 0 and w % ow == 0:
        return None
    return (f"not checked on {family}: overlapping adaptive windows are summed with atomic adds whose order "
            f"the A2/A3 tiling does not fix, even in deterministic mode (spec C Determinism, G.12)")


# operator -> (case, family) -> why the spec rules the check out for that case, or None
_RULED_OUT = {"AdaptiveMaxPool2dBackward": _adaptive}

SLICE_LEVEL = 3


def level_of(backend) -> int:
    """The determinism level the backend runs at (0: none; torch and other backends set none)."""
    level = getattr(backend, "deterministic", 0)
    return int(level) if isinstance(level, (bool, int)) else 0


def not_applicable(case: Case, family: str | None) -> str | None:
    """Why the batch-slice check does not apply to `case` on `family`, or None when it does."""
    ranks = case.op.shaped.ranks_on(family) if family else None
    if not ranks:
        return f"not checked: the case file gives no ranks for {case.op.shaped.name}, so no dim is known to be the batch"
    if len(case.shape) != max(ranks):
        return f"not checked: {len(case.shape)}-D {case.op.shaped.name} has no batch dim (batched: {max(ranks)}-D)"
    if case.shape[0] < 2:
        return f"not checked: batch {case.shape[0]} has no slice smaller than itself"
    rule = _RULED_OUT.get(case.op.name)
    return rule(case, family) if rule else None


def _bits(t: torch.Tensor) -> torch.Tensor:
    if not t.dtype.is_floating_point:
        return t
    return t.contiguous().view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()])


def _sliced(case: Case, tensors: dict, lo: int) -> dict:
    """Every batched tensor (the case's rank, its batch at dim 0) cut to [lo:N]; others as they are."""
    n = case.shape[0]
    return {name: t[lo:] if isinstance(t, torch.Tensor) and t.dim() == len(case.shape) and t.shape[0] == n else t
            for name, t in tensors.items()}


def differs(case: Case, backend, inputs: dict, full) -> tuple[str | None, dict]:
    """Run `case` on the slice [N//2:N] of its batch and compare every output's bits with that slice
    of the full run `full` (a RunResult). Returns (why it failed or None, what the record says)."""
    n = case.shape[0]
    lo = n // 2
    facts = {"slice": [lo, n], "batch": n}
    part_inputs = _sliced(case, inputs, lo)
    out_shape = (n - lo, *case.shape[1:])
    args = inputs_mod.build_args(case, part_inputs, out_shape)
    try:
        part = backend.run(case.op.descriptor, args)
    finally:
        problems = backend.after_case()
    where = f"batch slice [{lo}:{n}] of {n} run alone"
    if problems:
        return f"{reasons.BATCH_SLICE} {where}: {'; '.join(problems)}", facts
    if (part.status, part.phase2_status, part.sync_status) != (0, 0, 0):
        return (f"{reasons.BATCH_SLICE} {where} ended with phase-1 status {part.status}, phase 2 {part.phase2_status}, "
                f"sync {part.sync_status} (the full batch passed): {part.message}"), facts
    for name, arg in full.outputs.items():
        whole, alone = arg.logical[lo:], part.outputs[name].logical
        changed = _bits(whole) != _bits(alone)
        if changed.any():
            delta = (whole[changed].double() - alone[changed].double()).abs().nan_to_num(nan=float("inf")).max().item()
            return (f"{reasons.BATCH_SLICE} {name}[{lo}:{n}] differs in {int(changed.sum())} of {alone.numel()} elements "
                    f"between the full batch and the {where} (largest difference {delta:.3g}); "
                    f"--determinism-level {SLICE_LEVEL} asks for the same bits"), facts
    return None, facts


def check(case: Case, backend, family: str | None, inputs: dict, full, repeated: bool, out) -> str | None:
    """The determinism checks of one judged numeric case beyond its repeat run: at level 3, batch-slice
    consistency. Records the level and what was checked in `out.determinism`; returns a failure or None."""
    level = level_of(backend)
    if level < 1 and not repeated:
        return None
    out.determinism = {"level": max(level, 1), "repeat": repeated}
    if level < SLICE_LEVEL:
        return None
    why_not = not_applicable(case, family)
    if why_not:
        out.determinism["batch_slice"] = why_not
        return None
    broken, facts = differs(case, backend, inputs, full)
    out.determinism["batch_slice"] = facts
    return broken
