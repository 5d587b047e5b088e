"""The checked values of a case file's fields: the bounds on what a file may ask for, and `Where`,
the file and group being expanded, whose readers turn one raw field into a checked value or
raise a CaseFileError naming the file, the group and the field (expand.py puts them together)."""
from __future__ import annotations

import math

from ..core import dtypes, families, formats
from ..core.errors import CaseFileError
from . import distributions, messages
from .spec import LAYOUTS, SCALAR_KINDS, Deviation, OpSpec, Param
from .vocabulary import Vocabulary


# Bounds on what a case file may ask for. Values travel through the ABI as int64; a valid
# case (and an invalid group's base, from which valid inputs are prepared first) is
# allocated, so its element count is capped (the largest real case has 16.8 M elements).
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_RANK = 32
MAX_ELEMENTS = 1 << 27
MAX_ARRAY_LEN = 64                 # int_array attributes
MAX_CASES = 100_000                # per file: twice the synthetic 50,000-case file of benchmarks/bench_suite.py;
                                   # the real files expand to 200-350
# aclnnStatus values: 0 and the 161xxx (parameter), 361xxx (runtime), 561xxx (internal) ranges
# (spec acl_abi.md 4.1); a phase-1 expectation outside them cannot come back from a library.
STATUS_RANGES = (range(0, 1), range(161000, 162000), range(361000, 362000), range(561000, 562000))


def is_status(v) -> bool:
    return _is_int(v) and any(v in r for r in STATUS_RANGES)


class Where:
    """The file and group being expanded: every error names them."""

    def __init__(self, path, group: str | None, vocab: Vocabulary):
        self.path, self.group, self.vocab = path, group, vocab

    def error(self, message: str, fld: str | None) -> CaseFileError:
        return CaseFileError(self.path, message, self.group, fld)

    # ------------------------------------------------------------ single values

    def families(self, fld, names) -> tuple[families.Family, ...]:
        for i, n in enumerate(names):
            if n not in families.FAMILIES:
                raise self.error(f"unknown SoC family {str(n)!r}; valid: {', '.join(families.FAMILIES)}", fld)
            if n in names[:i]:
                raise self.error(f"family {str(n)!r} is listed twice", fld)
        return tuple(families.BY_NAME[str(n)] for n in names)

    def status_value(self, fld, v) -> int:
        if not is_status(v):
            shown = messages.shown(v) + messages.hint(v, {"integer"})
            raise self.error(f"status {shown} is not an aclnn status (0, 161xxx, 361xxx or 561xxx)", fld)
        return v

    def status(self, fld, spec, fams) -> dict:
        if _is_int(spec):
            return {f: self.status_value(fld, spec) for f in fams}
        if not isinstance(spec, dict):     # the schema refuses these first; the ATK loader does not use it
            raise self.error("status: " + messages.wrong_type(spec, ["integer", "object"]), fld)
        for k, v in spec.items():
            self.status_value(f"{fld}.{k}", v)
            if k != "others" and k not in families.FAMILIES:
                raise self.error(f"unknown SoC family {k!r} in status; valid: {', '.join(families.FAMILIES)} "
                                 "or 'others'", fld)
        out, others = {}, spec.get("others")
        for f in fams:
            if f in spec:
                out[f] = spec[f]
            elif others is not None:
                out[f] = others
            else:
                raise self.error(f"no expected status for family {f.name!r} (give it, or 'others')", fld)
        return out

    def dtype(self, fld, name) -> dtypes.DType:
        try:
            return dtypes.lookup(name)
        except KeyError as e:
            raise self.error(str(e.args[0]), fld) from None

    def format(self, fld, name) -> str:
        if name not in formats.FORMATS and name != formats.CALLER:
            raise self.error(f"unknown format {name!r}; known: {', '.join(formats.FORMATS)}", fld)
        return name

    def layout(self, fld, name) -> str:
        if name not in LAYOUTS:
            raise self.error(f"unknown layout {name!r}; known: {', '.join(LAYOUTS)}", fld)
        return name

    def shape(self, fld, shape) -> tuple[int, ...]:
        """A shape that is allocated: dimensions >= 0, at most MAX_ELEMENTS elements."""
        self.any_shape(fld, shape)
        if any(s < 0 for s in shape):
            raise self.error(f"negative dimension in shape {shape}", fld)
        if any(s > MAX_ELEMENTS for s in shape) or math.prod(shape) > MAX_ELEMENTS:
            raise self.error(f"shape {shape} has more than {MAX_ELEMENTS} elements (the cap for cases whose "
                             "inputs are allocated)", fld)
        return tuple(shape)

    def ranks(self, fld, spec) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """A tensor's `ranks:` (a list, or a mapping family/'others' -> list) as (family, ranks) pairs."""
        table = spec if isinstance(spec, dict) else {"others": spec}
        for k, ranks in table.items():
            if k != "others" and k not in families.FAMILIES:
                raise self.error(f"unknown SoC family {k!r} in ranks; valid: {', '.join(families.FAMILIES)} "
                                 "or 'others'", fld)
            if max(ranks) > MAX_RANK:
                raise self.error(f"rank {max(ranks)} is more than {MAX_RANK}", fld)
        return tuple((k, tuple(sorted(v))) for k, v in table.items())

    def rank(self, fld, shape, tensor: Param, fams) -> None:
        """An allocated shape of `tensor` within the ranks the op takes on every family of the case.
        (A wrong rank on purpose belongs in a scenario's `tensors:`: described, never prepared.)"""
        if not tensor.ranks:
            return
        for fam in fams:
            ranks = tensor.ranks_on(fam)
            if ranks is None:
                raise self.error(f"the signature gives {tensor.name}'s ranks per family, but none for {str(fam)!r} "
                                 "(give it, or 'others')", fld)
            if len(shape) not in ranks:
                on = "" if dict(tensor.ranks).keys() == {"others"} else f" on {fam}"
                raise self.error(f"shape {list(shape)} has rank {len(shape)}, but {tensor.name} takes rank "
                                 f"{' or '.join(map(str, ranks))}{on} (signature ranks); a wrong rank on purpose "
                                 "goes in an invalid scenario's tensors:", fld)

    def any_shape(self, fld, shape) -> tuple[int, ...]:
        """A shape only described to the library (an invalid scenario's tensor): int64 dimensions."""
        if len(shape) > MAX_RANK:
            raise self.error(f"rank {len(shape)} is more than {MAX_RANK}", fld)
        for d in shape:
            if not INT64_MIN <= d <= INT64_MAX:
                raise self.error(f"dimension {d} does not fit int64", fld)
        return tuple(shape)

    def standard(self, fld, name, dtype=None) -> str:
        if name not in self.vocab.standards:
            raise self.error(f"unknown precision standard {name!r}; known: {', '.join(self.vocab.standards)}", fld)
        gap = self.vocab.standard_gap(name, dtype) if dtype is not None else None
        if gap:
            raise self.error(gap, fld)
        return name

    def distribution(self, fld, ref, named):
        try:
            return distributions.resolve(ref, named)
        except ValueError as e:
            raise self.error(str(e), fld) from None

    # ------------------------------------------------------------ per tensor

    def per_tensor(self, fld, spec, op: OpSpec, what: str, check) -> dict:
        """A value for every tensor: one string for all, or a mapping by tensor name with 'default'."""
        names = [p.name for p in op.tensor_params]
        if isinstance(spec, str):
            spec = {"default": spec}
        for k in spec:
            if k != "default" and k not in names:
                raise self.error(f"{what} given for unknown tensor {k!r}", fld)
        out = {}
        for t in names:
            value = spec.get(t, spec.get("default"))
            if value is None:
                raise self.error(f"no {what} for tensor {t!r} (give it, or 'default')", fld)
            out[t] = check(fld, value)
        return out

    def formats(self, fld, spec, op) -> dict:
        return self.per_tensor(fld, spec, op, "format", self.format)

    def layouts(self, fld, spec, op) -> dict:
        return self.per_tensor(fld, spec, op, "layout", self.layout)

    # ------------------------------------------------------------ attributes

    def attrs(self, fld, attrs, op: OpSpec, partial=False) -> dict:
        known = {p.name: p for p in op.attr_params}
        for k in attrs:
            if k not in known:
                raise self.error(f"unknown attribute {k!r}; the signature has: {', '.join(known) or 'none'}",
                                 f"{fld}.{k}")
        out = {}
        for name, p in known.items():
            if name not in attrs:
                if partial:
                    continue
                raise self.error(f"missing attribute {name!r}", f"{fld}.{name}")
            out[name] = self._attr(f"{fld}.{name}", name, p.type, attrs[name])
        return out

    def _attr(self, where, name, kind, v):
        if kind == "int_array":
            if v is not None and not (isinstance(v, list) and all(_is_int(x) for x in v)):
                bad = next((x for x in v if not _is_int(x)), None) if isinstance(v, list) else None
                raise self.error(f"{name} must be a list of integers (or null), got {v!r}"
                                 f"{messages.hint(bad, {'integer'})}", where)
            if v is not None and len(v) > MAX_ARRAY_LEN:
                raise self.error(f"{name} has {len(v)} entries, more than {MAX_ARRAY_LEN}", where)
            if v is not None and not all(INT64_MIN <= x <= INT64_MAX for x in v):
                raise self.error(f"{name} entries must fit int64, got {v!r}", where)
            return None if v is None else list(v)
        want = SCALAR_KINDS[kind]
        if want is bool:
            ok = isinstance(v, bool)
        elif want is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        else:
            ok = _is_int(v)
        if not ok:
            expected = {bool: "boolean", float: "number", int: "integer"}[want]
            raise self.error(f"{name} must be {kind}, got {v!r}{messages.hint(v, {expected})}", where)
        if kind == "int8" and not -128 <= v <= 127:
            raise self.error(f"{name} must fit int8, got {v}", where)
        if kind == "int64" and not INT64_MIN <= v <= INT64_MAX:
            raise self.error(f"{name} must fit int64, got {v}", where)
        if kind == "double" and isinstance(v, int) and not -1e308 < v < 1e308:
            raise self.error(f"{name} must fit a C double, got an integer of {len(str(abs(v)))} digits", where)
        return v

    def deviations(self, items, fld: str = "deviations") -> tuple[Deviation, ...]:
        """The deviation entries `items` (a group's `deviations`, a file's `atk_deviations`: `fld`)."""
        out = []
        for i, d in enumerate(items or []):
            if d["backend"] not in self.vocab.backends:
                raise self.error(f"unknown backend {d['backend']!r}; valid: {', '.join(self.vocab.backends)}",
                                 f"{fld}.{i}.backend")
            dts = tuple(self.dtype(f"{fld}.{i}.dtype", x) for x in d.get("dtype", []))
            fams = self.families(f"{fld}.{i}.families", d["families"]) if "families" in d else ()
            out.append(Deviation(d["backend"], dts, d["reason"], tuple(fams)))
        return tuple(out)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
