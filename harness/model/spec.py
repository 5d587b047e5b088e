"""The case model: what a case file says, as frozen data (no I/O, no torch).

OpSpec describes one operator (its phase-1 signature, checks, families);
Case is one expanded test case; OpDescriptor is the little a backend needs to
know about the operator it calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core import dtypes
from ..core.dtypes import DType
from ..core.families import Family
from .distributions import Distribution

SCALAR_KINDS = {"bool": bool, "int64": int, "int8": int, "double": float}
# Memory layouts a case may give a tensor (made real by harness/inputs/layout.py).
LAYOUTS = ("contiguous", "channels_last", "strided", "offset")
# Phase 1's two output pointers (after the signature): a scenario may pass either as NULL.
OUT_POINTERS = ("workspaceSize", "executor")


@dataclass(frozen=True)
class Param:
    name: str
    type: str                 # tensor | int_array | bool | int64 | int8 | double
    dtype: str | None = None  # tensors: 'data', 'index' or a fixed dtype's name (Case.dtype_of: its DType)
    output: bool = False
    # tensors: the ranks the op takes, as (family or "others", ranks) pairs (spec sections A/B);
    # empty: not given, no limit
    ranks: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def ranks_on(self, family: str) -> tuple[int, ...] | None:
        """The ranks this tensor may have on `family`; None when the case file gives none."""
        table = dict(self.ranks)
        return table.get(family, table.get("others"))


@dataclass(frozen=True)
class Limit:
    """A size limit of a check: prod(tensor.shape[-dims:]) <= max."""
    tensor: str
    dims: int
    max: int

    def product(self, shape) -> int:
        out = 1
        for d in tuple(shape)[-self.dims:]:
            out *= d
        return out


@dataclass(frozen=True)
class Check:
    """One section-B check of the op, as its case file's `checks:` lists it."""
    id: str
    what: str
    status: int | None              # what it returns when it fails (None: no status to assert)
    families: tuple[Family, ...]    # where it runs
    untestable: str | None
    limit: Limit | None = None
    axes: tuple[str, ...] = ()      # axes the check examines one by one (N, C, D, H, W)
    boundary: int | None = None     # "value > boundary" per axis: each axis needs a case at exactly it


@dataclass(frozen=True)
class OpDescriptor:
    """What a backend needs of an operator besides its arguments."""
    name: str                 # e.g. MaxPool2dWithIndicesBackward
    golden: str               # module in golden/ (the torch backend runs its torch_op)

    @property
    def aclnn(self) -> str:
        return "aclnn" + self.name


@dataclass(frozen=True)
class AtkExecutor:
    """What ATK's executor for one op does between the JSON and the library (spec section E.2)."""
    format: str                       # the ACL format every tensor is created with
    index_dtype: DType | None = None  # dtype indices are cast to (None: the JSON's)
    placeholders: tuple[str, ...] = ()  # JSON entries the executor replaces (values from a forward pass)
    drawn: bool = False               # inputs are used as drawn from the JSON (no forward pass)
    note: str | None = None
    sums: bool = True                 # the backward adds gradients (False: a pure gather)


@dataclass(frozen=True)
class CoverageExemption:
    """A coverage requirement that cannot hold for one family and dtype, and why."""
    family: str
    dtype: DType
    requirement: str                  # values | layouts | tiles
    why: str


@dataclass(frozen=True)
class OpSpec:
    name: str                 # e.g. MaxPool2dWithIndicesBackward
    golden: str               # module name in golden/
    standard: str
    families: tuple[Family, ...]
    params: tuple[Param, ...]
    output_like: str          # input whose shape the output takes
    channel_last_formats: tuple[str, ...]
    checks: tuple[Check, ...]
    path: str
    input_attrs: tuple[Param, ...] = ()   # shape the inputs (e.g. adaptive outputSize), not passed to the API
    atk_deviations: tuple["Deviation", ...] = ()  # known backend deviations of the op's ATK cases
    deterministic_by_default: bool = False    # documented deterministic without deterministic mode
    spatial_rank: int = 2                     # trailing dims the op pools over (D, H, W: 3)
    atk: AtkExecutor | None = None            # its ATK executor (None: the op has no ATK list)
    coverage_exemptions: tuple[CoverageExemption, ...] = ()

    def exempt(self, family: str, dtype: DType, requirement: str) -> str | None:
        """Why `requirement` need not hold for `family` and `dtype`, or None."""
        return next((e.why for e in self.coverage_exemptions
                     if (e.family, e.dtype, e.requirement) == (family, dtype, requirement)), None)

    @property
    def descriptor(self) -> OpDescriptor:
        return OpDescriptor(self.name, self.golden)

    @property
    def marker(self) -> str:
        return self.golden

    @property
    def shaped(self) -> Param:
        """The tensor a case's `shape` is the shape of (the output has its shape)."""
        return next(p for p in self.params if p.name == self.output_like)

    @property
    def tensor_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.type == "tensor")

    @property
    def incoming_gradients(self) -> list[str]:
        """The data inputs other than the forward's input: the gradients the backward is linear in."""
        return [p.name for p in self.tensor_params if not p.output and p.dtype == "data" and p.name != self.output_like]

    @property
    def attr_params(self) -> tuple[Param, ...]:
        """Every attribute a case sets: API scalars/arrays, then input-only attributes."""
        return tuple(p for p in self.params if p.type != "tensor") + self.input_attrs


@dataclass(frozen=True)
class Deviation:
    """A known deviation of a backend (not of the op): matching cases are expected to fail there."""
    backend: str
    dtypes: tuple[DType, ...]   # empty: every dtype
    reason: str
    families: tuple[Family, ...] = ()  # empty: every family (a hardware deviation names its families)

    def matches(self, backend: str, dtype: DType, family: str | None = None) -> bool:
        return (backend == self.backend and (not self.dtypes or dtype in self.dtypes)
                and (not self.families or family in self.families))


@dataclass(frozen=True)
class Mutation:
    """What an invalid scenario changes after the valid inputs were prepared."""
    null: str | None = None
    tensors: dict = field(default_factory=dict, hash=False, compare=False)   # name -> {dtype, shape, format, layout}
    attrs: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, eq=False)
class Case:
    op: OpSpec
    group: str
    name: str                 # pytest item name: group[params]
    kind: str                 # 'valid' | 'invalid'
    shape: tuple[int, ...]
    dtype: DType
    index_dtype: DType | None
    formats: dict             # tensor name -> ACL format label
    layouts: dict             # tensor name -> memory layout
    attrs: dict
    values: Distribution
    families: tuple[Family, ...]
    status: dict              # Family -> expected phase-1 status
    standard: str
    tier: str = "default"
    note: str | None = None
    check: str | None = None
    mutation: Mutation | None = None
    deviations: tuple[Deviation, ...] = ()
    timeout_s: float | None = None    # the group's deadline; None: sized from the shape
    deterministic: bool = False       # runs in deterministic mode, twice, and must repeat its bits
    relaunch: bool = False            # its repeatable executor is launched twice; both must pass
    # timed after it is judged (its group's `perf:`): the stopping rule's settings and the perf
    # gate's tolerance, {} for the defaults; None: only --perf times it
    perf: dict | None = field(default=None, hash=False, compare=False)
    # an ATK list's standard.perf where it says more than "not_key": the benchmark device's ratio the
    # perf gate holds a timed case to (reporting/perf_gate.atk_ratio); None for every other case
    atk_perf: object = field(default=None, hash=False, compare=False)
    # input tensor -> shape when every input is drawn on its own (no forward pass), e.g. an ATK
    # case whose executor feeds random indices; None: the golden's `prepare` makes the inputs
    drawn_shapes: dict | None = field(default=None, hash=False, compare=False)
    skip: str | None = None   # why the case cannot run as written (kept as a skipped item, never dropped)

    def deviation_on(self, backend: str, family: str | None = None) -> Deviation | None:
        return next((d for d in self.deviations if d.matches(backend, self.dtype, family)), None)

    @property
    def id(self) -> str:
        return f"{self.op.name}.{self.name}"

    def expected_status(self, family: str | None) -> int | None:
        return None if family is None else self.status.get(family)

    def runs_numerics(self, family: str | None) -> bool:
        """Numerics are compared for valid cases expected to succeed on `family`."""
        if self.kind != "valid":
            return False
        if family is None:
            return any(s == 0 for s in self.status.values())
        return self.status.get(family) == 0

    def dtype_of(self, param: Param) -> DType | None:
        if param.dtype in (None, "data"):
            return self.dtype
        if param.dtype == "index":
            return self.index_dtype
        return dtypes.lookup(param.dtype)

    @property
    def call_attrs(self) -> dict:
        """The attributes as called: the case's, with an invalid scenario's changes applied."""
        attrs = dict(self.attrs)
        if self.mutation:
            attrs.update(self.mutation.attrs)
        return attrs
