"""The typed facts of a record that a cause may be stated in (the predicates' vocabulary).

A feature is (name, value, complexity): one equality atom `name = value`, read from the record's
typed fields only (never from its reason text; the value class, which no field carries, is the
last part of a matrix case's id: harness/model/ids.py `matrix_case_name`). Complexity orders
equally good explanations: a cause said with the operator, family or dtype reads better than one
said with a remainder.

The remainders: each dim modulo 16 (fp16/bf16 elements of one 32-byte block, the cube unit's
edge), 32 (bytes of the unified buffer's block: swcann/README.md's "32-byte block"), 48 (cores of
the largest family) and 256 (elements of one vector tile); and whether the output's bytes, and
one of its rows, fill whole 32-byte blocks (`tail_unwritten`-like bugs: the last partial block).
"""
from __future__ import annotations

import math
import re

from ..core import dtypes, formats
from ..core.text import Spelling, spelled

MODULI = (16, 32, 48, 256)
BLOCK_BYTES = 32

# complexity of each kind of atom (lower reads simpler)
_OP, _FAMILY, _DTYPE, _KIND, _RANK, _CHECK, _FORMAT, _LAYOUT, _VALUES, _ATTR, _BYTES, _SHAPE, _DIM, _MOD = \
    1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 6
_AXES = {1: ("",), 2: ("_h", "_w"), 3: ("_d", "_h", "_w")}
_BRACKET = re.compile(r"\[(.*)\]$")


_ATOM_WORDS = Spelling(null="null", true="true", false="false", empty="[]")


def _dim_names(rec: dict, rank: int) -> list[str]:
    """N, C, H, W from the tensors' format label where they all agree and it has one letter per
    dim (NCHW, NCDHW, NCL); else d0, d1, ... An ND label counts as the callers' label of its rank:
    these ops read an ND tensor in that layout, so a slice such as `W mod 16 = 1` is one atom over
    the cases labelled NCHW and ND alike (named d3 on ND ones, their failures were left unexplained)."""
    per = rec.get("formats")
    labels = {formats.caller_label(rank) if str(v) == "ND" else str(v) for v in per.values()} \
        if isinstance(per, dict) else set()
    if len(labels) == 1:
        label = next(iter(labels))
        if label != "ND" and len(label) == rank and label.isalpha() and len(set(label)) == rank:
            return list(label)
    return [f"d{i}" for i in range(rank)]


def value_class(rec: dict) -> str | None:
    """The value distribution of a valid matrix case: the last part of its id ('...-uniform]')."""
    if rec.get("kind") != "valid":
        return None
    m = _BRACKET.search(rec.get("case_id") or "")
    if not m or "-" not in m.group(1):
        return None
    last = m.group(1).rsplit("-", 1)[1]
    return last if re.fullmatch(r"[a-z][a-z0-9_]*", last) else None


def _itemsize(dtype) -> int | None:
    try:
        return dtypes.lookup(dtype).itemsize or None
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


def of(rec: dict) -> list[tuple[str, str, int]]:
    """Every (feature, value, complexity) of one record."""
    out: list[tuple[str, str, int]] = []

    def add(name, value, cx):
        out.append((name, spelled(value, _ATOM_WORDS), cx))

    for key, cx in (("op", _OP), ("family", _FAMILY), ("dtype", _DTYPE), ("index_dtype", _DTYPE),
                    ("kind", _KIND), ("group", _FORMAT), ("check", _CHECK)):
        if rec.get(key) not in (None, "") and not isinstance(rec[key], (dict, list)):
            add(key, rec[key], cx)
    shape = rec.get("shape")
    if isinstance(shape, list) and all(isinstance(d, int) for d in shape):
        rank = len(shape)
        add("rank", rank, _RANK)
        add("shape", shape, _SHAPE)
        numel = math.prod(shape)
        add("empty", numel == 0, _RANK)
        for name, d in zip(_dim_names(rec, rank), shape):
            add(name, d, _DIM)
            for m in MODULI:
                add(f"{name} mod {m}", d % m, _MOD)
        size = _itemsize(rec.get("dtype"))
        if size and shape:
            add(f"bytes mod {BLOCK_BYTES} = 0", numel * size % BLOCK_BYTES == 0, _BYTES)
            add(f"row bytes mod {BLOCK_BYTES} = 0", shape[-1] * size % BLOCK_BYTES == 0, _BYTES)
    attrs = rec.get("attrs")
    for key, value in sorted(attrs.items() if isinstance(attrs, dict) else (), key=lambda kv: str(kv[0])):
        add(key, value, _ATTR)
        if isinstance(value, (list, tuple)) and 1 < len(value):
            axes = _AXES.get(len(value)) or tuple(f"[{i}]" for i in range(len(value)))
            for axis, v in zip(axes, value):
                add(f"{key}{axis}", v, _ATTR)
    for key, field, cx in (("format", "formats", _FORMAT), ("layout", "layouts", _LAYOUT)):
        per = rec.get(field) or {}
        if not isinstance(per, dict) or not per:
            continue
        if len(set(map(str, per.values()))) == 1:
            add(key, next(iter(per.values())), cx)
        for tensor, v in sorted(per.items()):
            add(f"{key}({tensor})", v, cx + 1)
    labels = rec.get("formats")
    if isinstance(labels, dict) and labels and isinstance(shape, list):
        # the label real callers give this rank (3-D NCL, 4-D NCHW, 5-D NCDHW), and whether every label
        # fits its rank at all: the facts the generic L0 rules refuse on (l0_format_rules.md)
        rank = len(shape)
        add("labels are the callers'", all(v == formats.caller_label(rank) for v in labels.values()), _FORMAT)
        add("labels fit their rank", all(formats.fits_rank(str(v), rank) for v in labels.values()), _FORMAT)
    values = value_class(rec)
    if values:
        add("values", values, _VALUES)
    return out


def atom_text(name: str, value: str) -> str:
    """How one atom reads: the operator by its name alone, a boolean fact as itself, else name=value."""
    if name == "op":
        return value
    if name.endswith("= 0") and value in ("true", "false"):
        return name if value == "true" else name.replace("= 0", "≠ 0")
    if name == "empty":
        return "empty" if value == "true" else "not empty"
    if name.startswith("labels ") and value in ("true", "false"):
        return name if value == "true" else f"not: {name}"
    if " mod " in name:
        return f"{name} = {value}"
    return f"{name}={value}"


_FIRST = ("op", "family", "dtype", "index_dtype", "kind", "group", "check", "rank", "shape", "empty")


def reading_order(name: str) -> tuple:
    """Where an atom goes in a predicate as printed: the operator, family and dtypes first, then the
    case's kind, shape and dims (each dim before its remainders), the block facts, the attributes,
    and the labels, layouts and value class last."""
    if name in _FIRST:
        return (_FIRST.index(name), "")
    if " mod " in name and not name.startswith(("bytes", "row bytes")):
        return (20, name)
    if name.startswith(("bytes", "row bytes")):
        return (21, name)
    if name.startswith(("format", "layout", "values")):
        return (40, name)
    if re.fullmatch(r"[A-Z]|d\d+", name):
        return (20, name)
    return (30, name)
