"""What a reproducer does, as plain data: the plan the C text and the data files are written from.

Everything here is read off the argument list the harness's backend receives
(`harness.inputs.build_args`): each tensor's descriptor is the one `CaseObjects.tensor`
passes to aclCreateTensor (view dims, element strides, offset, format, dtype, 1-D storage
dims of the whole flat storage, 1 for an unbacked descriptor), each attribute the value the
backend passes, NULL where the case passes NULL. Nothing is recomputed from the case.
What the case expects (status, numerics, the precision standard and its thresholds) comes
from the case and harness.judge.compare, the same sources the case runner judges with.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from ..target.discovery import DEFAULT_SOFTWARE_FAMILY
from ..core import dtypes, families, formats
from ..backends.aclnn import WORKSPACE_GUARD, workspace_guard_pattern
from ..inputs import Arg, guard, poison
from ..judge import compare
from ..model import Case


@dataclass(frozen=True)
class TensorPlan:
    name: str
    is_output: bool
    dtype: str                      # case-file name of the dtype passed (Arg.dtype)
    acl_dtype: int
    acl_dtype_name: str
    format: str
    acl_format: int
    dims: tuple[int, ...]           # the view, as aclCreateTensor receives it (device order)
    strides: tuple[int, ...]
    offset: int
    storage_dims: tuple[int, ...]
    itemsize: int                   # bytes per storage element
    storage_bytes: int              # bytes of the whole flat storage (uploaded, downloaded)
    data: bytes | None              # the whole storage as uploaded: an input's values; an output's poison in
                                    # the view and the case's exact guard bytes outside it (inputs/guard.py)
    fill: bytes | None              # outputs: one element's bytes, the poison every element of the view holds
    logical_dims: tuple[int, ...]   # the same view in channel-first order: what the golden is laid out by
    logical_strides: tuple[int, ...]
    unbacked: bool
    file: str                       # the file the storage is uploaded from


@dataclass(frozen=True)
class ArgPlan:
    name: str
    kind: str                       # tensor | int_array | bool | int64 | int8 | double | out_pointer
    value: object                   # TensorPlan, list[int], a scalar, or None for NULL
    is_output: bool = False


@dataclass(frozen=True)
class Judgement:
    """How one output is compared with its golden (harness/judge/compare.py)."""
    output: str
    dtype: str                      # canonical output dtype
    integer: bool                   # exact int64 comparison
    thresholds: dict
    golden: bytes                   # logical (channel-first) order: float64, or int64 when `integer`
    golden_not_whole: int           # integer output, float golden: values that are not whole numbers
    shape_mismatch: str             # "" or the harness's reason when golden and output shapes differ

    @property
    def file(self) -> str:
        """The golden's file: float64, or int64 for an integer output."""
        return f"{self.output}.golden.{'i64' if self.integer else 'f64'}"


@dataclass(frozen=True)
class Plan:
    case_id: str
    op: str                         # e.g. MaxPool2dWithIndicesBackward
    source: str                     # the case file's name
    signature: tuple[tuple[str, str, bool], ...]   # (name, type, output) per phase-1 parameter
    family: str
    soc_patterns: tuple[str, ...]
    kind: str                       # valid | invalid
    status: int                     # expected phase-1 status on `family`
    check: str | None
    standard: str
    numerics: bool
    deterministic: bool
    args: tuple[ArgPlan, ...]       # the phase-1 parameters in signature order, then NULL out-pointers
    judgements: tuple[Judgement, ...]
    empty_inputs: tuple[str, ...]   # inputs without elements: phase 1 must ask for no workspace
    note: str
    workspace_guard: bytes          # the guard bytes after the workspace's rounded end (the case's pattern)

    @property
    def aclnn(self) -> str:
        return "aclnn" + self.op

    @property
    def tensors(self) -> tuple[TensorPlan, ...]:
        return tuple(a.value for a in self.args if a.kind == "tensor" and a.value is not None)

    @property
    def null_out_pointers(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.kind == "out_pointer")


def raw_bytes(t: torch.Tensor) -> bytes:
    """A contiguous tensor's bytes as stored (bfloat16 and bool included)."""
    t = t.contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _tensor(arg: Arg) -> TensorPlan:
    t = arg.value
    d = dtypes.lookup(arg.dtype)
    logical = t.logical if not t.unbacked else None
    if arg.is_output:
        # a failing case hands its arguments over after the launch: the storage as build_args laid it
        # is made again from the harness's poison and the buffer's guard pattern
        fill = b"\0" if t.unbacked else raw_bytes(torch.full((1,), poison(t.storage.dtype), dtype=t.storage.dtype))
        data = raw_bytes(t.storage) if t.unbacked else _as_laid(t)   # unbacked: the bytes the descriptor points at
    else:
        fill, data = None, raw_bytes(t.storage)
    return TensorPlan(
        name=t.name, is_output=arg.is_output, dtype=d.name, acl_dtype=d.acl, acl_dtype_name=d.acl_name,
        format=t.format, acl_format=formats.lookup(t.format), dims=tuple(int(x) for x in t.dims),
        strides=tuple(int(x) for x in t.strides), offset=int(t.offset),
        # as harness/acl/objects.py CaseObjects.tensor: the whole flat storage, 1-D (torch_npu, spec 7.2)
        storage_dims=(1,) if t.unbacked else (t.storage.numel(),),
        itemsize=t.storage.element_size(), storage_bytes=t.storage.numel() * t.storage.element_size(),
        data=data, fill=fill,
        logical_dims=tuple(logical.shape) if logical is not None else (),
        logical_strides=tuple(logical.stride()) if logical is not None else (),
        unbacked=t.unbacked, file=f"{t.name}.initial.bin" if arg.is_output else f"{t.name}.bin")


def _as_laid(t) -> bytes:
    """An output's storage as build_args lays it before phase 2: the poison in every element, then
    the buffer's guard pattern in every byte outside the view."""
    if t.guard is None:
        raise ValueError(f"{t.name}: no guard pattern was laid in this output (harness.inputs.build_args lays one)")
    fresh = dataclasses.replace(t, storage=torch.full_like(t.storage, poison(t.storage.dtype)))
    guard.lay(fresh, t.guard)
    return raw_bytes(fresh.storage)


def _arg(a: Arg) -> ArgPlan:
    if a.kind == "tensor":
        return ArgPlan(a.name, a.kind, None if a.value is None else _tensor(a), a.is_output)
    if a.kind == "int_array":
        return ArgPlan(a.name, a.kind, None if a.value is None else [int(v) for v in a.value])
    return ArgPlan(a.name, a.kind, a.value)


def _judgement(output: TensorPlan, dtype: str, standard: str, golden: torch.Tensor) -> Judgement:
    thr = compare.thresholds(standard, dtype)       # ValueError for a standard without this dtype
    kind = dtypes.torch_of(dtype)
    integer = not (kind.is_floating_point or kind.is_complex)     # compare.py: numpy kinds i, u, b
    g = golden.detach().cpu().contiguous().reshape(-1)
    not_whole = 0
    if integer and (g.is_floating_point() or g.is_complex()):
        g = g.double()
        whole = torch.isfinite(g) & (g == g.round())
        not_whole = int((~whole).sum())
        g = torch.where(whole, g, torch.zeros_like(g))
    g = g.to(torch.int64) if integer else g.double()
    mismatch = ""
    if tuple(golden.shape) != output.logical_dims:
        mismatch = f"shape mismatch: golden {tuple(golden.shape)} vs actual {output.logical_dims}"
    return Judgement(output.name, dtypes.canonical(dtype), integer, thr, raw_bytes(g), not_whole, mismatch)


def _empty_inputs(plans: list[ArgPlan]) -> tuple[str, ...]:
    """Inputs with no element (runner._status0_promise: phase 1 must then ask for no workspace)."""
    return tuple(a.name for a in plans if a.kind == "tensor" and a.value is not None and not a.is_output
                 and not a.value.unbacked and math.prod(a.value.dims) == 0)


def default_family(case: Case) -> str:
    """The software CANN's default family where the case has an expectation there, else the
    first family of the case that has one."""
    if DEFAULT_SOFTWARE_FAMILY in case.status:
        return DEFAULT_SOFTWARE_FAMILY
    for family in case.families:
        if family in case.status:
            return family
    raise ValueError(f"{case.id} expects a status on no family")


def make(case: Case, args: list[Arg], golden: dict | None, family: str) -> Plan:
    """The plan of `case` on `family` from the argument list the backend receives and the
    golden outputs (None: the case compares no numerics on `family`)."""
    if family not in case.status:
        known = ", ".join(map(str, sorted(case.status))) or "none"
        raise ValueError(f"{case.id} has no expected status on {family} (it has one on: {known})")
    numerics = case.runs_numerics(family)
    if numerics and golden is None:
        raise ValueError(f"{case.id} compares numerics on {family}: its golden outputs are needed")
    plans = [_arg(a) for a in args]
    judgements = []
    if numerics:
        for p in case.op.params:
            if p.output:
                out = next(a.value for a in plans if a.name == p.name)
                judgements.append(_judgement(out, case.dtype_of(p), case.standard, golden[p.name]))
    return Plan(case_id=case.id, op=case.op.name, source=Path(case.op.path).name,
                signature=tuple((p.name, p.type, p.output) for p in case.op.params),
                family=family, soc_patterns=families.BY_NAME[family].soc_patterns,
                kind=case.kind, status=int(case.status[family]), check=case.check, standard=case.standard,
                numerics=numerics, deterministic=bool(case.deterministic), args=tuple(plans),
                judgements=tuple(judgements), empty_inputs=_empty_inputs(plans), note=case.note or "",
                workspace_guard=_workspace_guard(args))


def _workspace_guard(args: list[Arg]) -> bytes:
    outputs = {a.name: a.value for a in args if a.kind == "tensor" and a.is_output and a.value is not None}
    return workspace_guard_pattern(outputs).at(0, WORKSPACE_GUARD).tobytes()
