"""What an operator declares about itself, read once for exploring it: nothing here names an op.

An op is explored through its case file (its OpSpec and valid groups) and its golden's INFO (the
random configuration generator, the phase-1 model). Every valid group of the case file says, for
each family where it expects status 0, one way the library runs the op: a dtype (and index dtype),
a format and a memory layout per tensor, a value class, the precision standard its numbers are held
to, and the attribute sets it uses. Each such combination is an `Envelope`: the explorer keeps
those together (a standard was chosen for its value class and attributes), and varies the shape and
the window attributes around them with the op's own generator.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import golden

from .. import operators
from ..core import dtypes as dtypes_mod, formats as formats_mod
from ..judge import sums
from ..model import LAYOUTS, Case, OpSpec
from ..model.distributions import Distribution

# Attribute kinds a case file may give (model/spec.py SCALAR_KINDS + int_array)
SCALAR = ("int64", "int8", "double")
# Standards that hold every element to its own value (spec README: MERE/MARE's |a-g| / (|g| + 1e-7)):
# meaningful only where each golden element is a well-conditioned result (the case files pair them
# with same-sign gradients, windows where each gradient lands once, or small windows only)
RELATIVE_STANDARDS = frozenset({"mere_mare"})


@dataclass(frozen=True)
class Envelope:
    """One successful way to call the op on one family, as a valid group of its case file declares it."""
    group: str
    family: str
    dtype: dtypes_mod.DType
    index_dtype: dtypes_mod.DType | None
    formats: tuple[tuple[str, str], ...]      # tensor -> ACL format label
    layouts: tuple[tuple[str, str], ...]      # tensor -> memory layout
    values: Distribution
    standard: str
    ranks: frozenset[int]                     # the ranks of the group's shapes
    scalars: tuple[tuple[str, tuple], ...]    # scalar attribute -> the values the group uses
    deviations: tuple = ()
    deterministic: bool = False
    relaunch: bool = False
    # its labels are the callers' for its case's rank (formats.caller_label): a config of another
    # rank is labelled for its own rank, as torch_npu would label it, not with this envelope's labels
    callers: bool = False
    # the (shape, attributes) pairs the group runs with this envelope: the case file's own
    # configurations, which reach the paths it was written for (a global pool, a tile boundary)
    configs: tuple = field(default=(), compare=False, hash=False, repr=False)

    @property
    def overflowing(self) -> bool:
        """Its values may put +-FLT_MAX into a tensor: two such gradients summed in a varying order give
        inf or a finite number (spec C, Determinism), so no golden is right where they meet; the oracle
        skips an example of it whose sums could pass the dtype's range (a gather, held bit-exact, sums
        nothing)."""
        return sums.may_hold_extremes(self.values, self.standard)

    def formats_for(self, rank: int) -> dict[str, str]:
        """The labels a config of `rank` is called with: the callers' for that rank where this
        envelope labels as callers do, else the envelope's own (a group that tests labels)."""
        if self.callers:
            return {t: formats_mod.caller_label(rank) for t, _ in self.formats}
        return dict(self.formats)

    @property
    def simplicity(self) -> tuple:
        """Sort key: plain envelopes first, so that shrinking (towards the first) ends on them."""
        odd_layouts = sum(lay != "contiguous" for _, lay in self.layouts)
        return (odd_layouts, self.values.name != "uniform", len({f for _, f in self.formats}) > 1,
                self.deterministic, self.relaunch, self.group)


@dataclass(frozen=True)
class OpFacts:
    op: OpSpec
    path: Path                       # the case file
    cases: tuple[Case, ...]
    envelopes: tuple[Envelope, ...]  # every family's, simplest first
    gen_config: Callable             # INFO.gen_config: (random.Random) -> (params, tags)
    model: Any                       # INFO.model (golden/_phase1.Phase1Model), None: not explored

    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self) -> str:          # Hypothesis prints strategies with their arguments
        return f"OpFacts({self.name})"

    def envelopes_on(self, family: str) -> tuple[Envelope, ...]:
        return tuple(e for e in self.envelopes if e.family == family)

    @functools.cached_property
    def null_arrays(self) -> frozenset[str]:
        """The int_array attributes some valid case passes as NULL."""
        return frozenset(k for c in self.cases if c.kind == "valid" for k, v in c.attrs.items() if v is None)

    @functools.cached_property
    def declared_checks(self) -> frozenset[str]:
        return frozenset(c.id for c in self.op.checks)

    @functools.cached_property
    def check_status(self) -> dict[str, int | None]:
        return {c.id: c.status for c in self.op.checks}

    def accepted_dtypes(self, family: str, index: bool = False) -> frozenset[str]:
        """The data (or index) dtypes a valid group runs on `family`."""
        return frozenset((e.index_dtype if index else e.dtype) for e in self.envelopes_on(family)) - {None}

    def used_formats(self) -> frozenset[str]:
        return frozenset(f for e in self.envelopes for _, f in e.formats)

    def held_elements(self, family: str) -> dict[str, int]:
        """The int_array attributes whose elements take one value in every valid case of the family
        (a dilation the kernels support only at 1): a generated configuration keeps them at it, since
        no valid group says what the library does with another value there."""
        return self._held.get(family, {})

    @functools.cached_property
    def _held(self) -> dict[str, dict[str, int]]:
        seen: dict = defaultdict(lambda: defaultdict(set))
        for c in self.cases:
            if c.kind == "valid" and c.tier == "default":
                for fam in (f for f, s in c.status.items() if s == 0):
                    for k, v in c.attrs.items():
                        if isinstance(v, list):
                            seen[fam][k] |= set(v)
        return {fam: {k: next(iter(v)) for k, v in attrs.items() if len(v) == 1} for fam, attrs in seen.items()}

    @functools.cached_property
    def plain_standard(self) -> str | None:
        """The standard the case file holds sums to where a relative bound means nothing: its
        default, or where that is itself relative, the one its valid groups use most that is not
        (None: the case file uses none)."""
        if self.op.standard not in RELATIVE_STANDARDS:
            return self.op.standard
        used: dict[str, int] = defaultdict(int)
        for e in self.envelopes:
            if e.standard not in RELATIVE_STANDARDS and e.standard != "bit_exact":
                used[e.standard] += 1
        return max(sorted(used), key=used.get) if used else None

    def array_lengths(self, name: str) -> frozenset[int]:
        """The lengths the op's valid cases give an int_array attribute."""
        return frozenset(len(c.attrs[name]) for c in self.cases
                         if c.kind == "valid" and isinstance(c.attrs.get(name), list))


def _scalar_values(op: OpSpec, group_cases: list[Case]) -> tuple[tuple[str, tuple], ...]:
    out = []
    for p in op.attr_params:
        if p.type in SCALAR:
            seen = sorted({c.attrs[p.name] for c in group_cases if p.name in c.attrs}, key=repr)
            out.append((p.name, tuple(seen)))
    return tuple(out)


def envelopes(op: OpSpec, cases: list[Case]) -> tuple[Envelope, ...]:
    """Every (family, dtype, index dtype, formats, layouts, values, standard) a default-tier valid
    group expects status 0 for, with the group's attribute facts."""
    groups: dict[str, list[Case]] = {}
    for c in cases:
        if c.kind == "valid" and c.tier == "default" and not c.skip and c.drawn_shapes is None:
            groups.setdefault(c.group, []).append(c)
    out, configs = {}, defaultdict(dict)
    order = {p.name: i for i, p in enumerate(op.attr_params)}     # a Config's attributes, in signature order
    for group, members in groups.items():
        ranks = frozenset(len(c.shape) for c in members)
        scalars = _scalar_values(op, members)
        for c in members:
            for fam in c.families:
                if c.status.get(fam) != 0:
                    continue
                env = Envelope(group, fam.name, c.dtype, c.index_dtype, tuple(sorted(c.formats.items())),
                               tuple(sorted(c.layouts.items())), c.values, c.standard, ranks, scalars,
                               c.deviations, c.deterministic, c.relaunch,
                               all(f == formats_mod.caller_label(len(c.shape)) for f in c.formats.values()))
                key = (group, fam.name, env.dtype, env.index_dtype, env.formats, env.layouts, c.values.name)
                out.setdefault(key, env)
                attrs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in
                              sorted(c.attrs.items(), key=lambda kv: order.get(kv[0], len(order))))
                configs[key][(tuple(c.shape), attrs)] = None
    return tuple(sorted((replace(env, configs=tuple(configs[key])) for key, env in out.items()),
                        key=lambda e: e.simplicity))


@functools.lru_cache(maxsize=None)
def load(path: str) -> OpFacts:
    """The facts of the op whose case file is `path`."""
    op, cases = operators.load_case_file(Path(path))
    info = golden.load(op.golden).INFO
    # an op without a phase-1 model (INFO.model is optional) is loaded all the same: explore says it
    # is not explored (run.py), and every other op of the checkout still is
    return OpFacts(op, Path(path), tuple(cases), envelopes(op, cases), info.gen_config, info.model)


def find(cases_dir: Path, names: list[str] | None) -> list[OpFacts]:
    """The ops of `cases_dir` named by op name or case-file stem (all when `names` is empty)."""
    everything = [load(str(p)) for p in sorted(Path(cases_dir).glob("*.yaml"))]
    if not names:
        return everything
    chosen = []
    for name in names:
        hit = [f for f in everything if name in (f.name, f.path.stem, f.op.golden)]
        if not hit:
            known = ", ".join(f.name for f in everything)
            raise ValueError(f"unknown operator {name!r}; the case files of {cases_dir} hold: {known}")
        chosen += [h for h in hit if h not in chosen]
    return chosen


def all_dtypes() -> tuple[str, ...]:
    """Every dtype name the ABI table knows (a defect may name any of them)."""
    return tuple(d.name for d in dtypes_mod.ALL if d.itemsize > 0)


def all_formats() -> tuple[str, ...]:
    return tuple(formats_mod.FORMATS)


def all_layouts() -> tuple[str, ...]:
    return tuple(LAYOUTS)
