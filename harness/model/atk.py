"""ATK system-test case lists (the official `atk_aclnn<Op>.json` files) read as Cases.

An ATK file is a JSON list of cases; each names its operator (`aclnn_name`), an accuracy
standard and a positional `inputs` list (spec ops/*.md section E). A case becomes one valid
Case of the operator's case file (`OpSpec`), so it runs and is judged exactly like a YAML
case. What ATK's per-op executor does to the JSON before calling the library (which tensors
it replaces by a forward pass, the format it labels tensors with, the dtype it casts indices
to) is the op's `atk:` entry in its case file (OpSpec.atk), from each op file's section E.2.

Nothing is silently dropped or changed: a case the harness cannot express faithfully becomes
a Case with `skip` set to the reason, and interpretations the spec calls interpretations
(the `nd` distribution, attribute ranges) are written into the case's note.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path

from ..core import dtypes
from ..core.errors import CaseFileError
from . import ids
from .distributions import Distribution
from .spec import Case, Deviation, OpSpec
from .vocabulary import Vocabulary

GROUP = "atk"
# A case whose largest tensor exceeds SLOW_ELEMENTS runs in the slow tier; one above
# MAX_ELEMENTS is skipped: its float64 golden and host copies need about 40 bytes an element.
SLOW_ELEMENTS = 1 << 20
MAX_ELEMENTS = 1 << 26


# What the case files declare for every summing group: the torch CPU backend is no fp32-accumulating
# device, so its fp16/bf16 results are expected to miss the ATK golden (summed in fp32).
TORCH_HALF = Deviation("torch", (dtypes.lookup("float16"), dtypes.lookup("bfloat16")),
                       "torch CPU accumulates fp16/bf16 gradients in the tensor dtype; ATK's golden sums in fp32")


def standard_of(acc) -> str | None:
    """The harness standard for an ATK `standard.acc` value, or None when it has none."""
    if acc == "md5":
        return "bit_exact"
    if acc == "default":
        # ATK's own default thresholds live in the ATK tool, not in the spec; the published
        # Ascend experimental standard (MERE/MARE) is the documented one for a single benchmark
        return "mere_mare"
    if isinstance(acc, dict) and set(acc) == {"single_bm"}:
        kind = (acc["single_bm"] or {}).get("type", "high_precision")
        if kind in ("high_precision", "high_performance"):
            return f"single_bm_{kind}"
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


class _Skip(Exception):
    """The case cannot be expressed faithfully: the reason becomes the Case's skip."""


def _rng(key: str, what: str) -> random.Random:
    """A generator seeded by (file, case id, what): interpretations are drawn once, reproducibly."""
    digest = hashlib.sha256(f"{key}\0{what}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


class _Reader:
    """One ATK case; collects the interpretations it makes into `notes`."""

    def __init__(self, key: str, raw: dict):
        self.key, self.raw, self.notes = key, raw, []

    def attr_value(self, name: str, rv):
        """An attribute's range_values: an int/bool literal, [v], or a range [lo, hi] sampled once."""
        if isinstance(rv, (bool, int, float)):
            return rv
        if isinstance(rv, list) and len(rv) == 1 and isinstance(rv[0], (int, float)):
            return rv[0]
        if isinstance(rv, list) and len(rv) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in rv):
            v = _rng(self.key, name).randint(min(rv), max(rv))
            self.notes.append(f"{name} range {rv} sampled as {v}")
            return v
        raise _Skip(f"attribute {name}: range_values {rv!r} is not a value or an integer range")

    def distribution(self, tensor: str, rv) -> Distribution:
        """A tensor's range_values as a Distribution (spec E: [lo, hi], nd, special fills, constants)."""
        if isinstance(rv, dict) and rv.get("name") == "nd":
            r = _rng(self.key, tensor)
            mean, std = (r.uniform(*rv["mean"]), r.uniform(*rv["std"])) if _pairs(rv, "mean", "std") else (None, None)
            if mean is None:
                raise _Skip(f"{tensor}: nd distribution {rv!r} needs [lo, hi] for mean and std")
            self.notes.append(f"{tensor} nd: mean {mean:.4g} from {rv['mean']}, std {std:.4g} from {rv['std']}")
            return Distribution(f"nd({mean:.4g},{std:.4g})", "normal", {"mean": mean, "std": std})
        if isinstance(rv, (int, float)) and not isinstance(rv, bool):
            return Distribution(f"const({rv})", "constant", {"value": float(rv)})
        if isinstance(rv, list) and len(rv) == 1 and rv[0] in ("inf", "-inf", "nan"):
            return Distribution(f"const({rv[0]})", "constant", {"value": float(rv[0])})
        if isinstance(rv, list) and len(rv) == 2:
            lo, hi = (_bound(x) for x in rv)
            if lo is not None and hi is not None and lo <= hi:
                # infinite bounds mean the dtype's whole finite range (values.py clamps them)
                return Distribution(f"uniform({rv[0]},{rv[1]})", "uniform", {"low": lo, "high": hi})
        raise _Skip(f"{tensor}: range_values {rv!r} is not a form the harness knows "
                    "([lo, hi], nd, ['inf'|'-inf'|'nan'], a constant)")


def _pairs(rv: dict, *keys) -> bool:
    return all(isinstance(rv.get(k), list) and len(rv[k]) == 2 for k in keys)


def _bound(x):
    if isinstance(x, str) and x in ("inf", "-inf"):
        return float(x)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    return None


def _entries(raw: dict):
    """(tensors by name, attributes by camelCase name -> list of element entries or one entry)."""
    tensors, attrs = {}, {}
    for item in raw["inputs"]:
        if isinstance(item, list):
            if not item or not all(isinstance(e, dict) and "name" in e for e in item):
                raise _Skip(f"an attribute list entry is malformed: {str(item)[:80]}")
            attrs[_camel(item[0]["name"])] = item
        elif isinstance(item, dict) and item.get("type") == "tensor":
            tensors[item["name"]] = item
        elif isinstance(item, dict):
            attrs[_camel(item["name"])] = item
        else:
            raise _Skip(f"an input entry is neither an object nor a list: {str(item)[:80]}")
    return tensors, attrs


def _attrs(rd: _Reader, op: OpSpec, given: dict) -> dict:
    known = {p.name: p for p in op.attr_params}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise _Skip(f"attribute(s) {', '.join(unknown)} are not parameters of aclnn{op.name}")
    out = {}
    for name, p in known.items():
        if name not in given:
            raise _Skip(f"the JSON gives no value for {name}")
        entry = given[name]
        if p.type == "int_array":
            elems = entry if isinstance(entry, list) else [entry]
            out[name] = [int(rd.attr_value(f"{name}[{i}]", e["range_values"])) for i, e in enumerate(elems)]
        else:
            if isinstance(entry, list):
                raise _Skip(f"{name} is a scalar parameter but the JSON gives a list")
            v = rd.attr_value(name, entry["range_values"])
            out[name] = bool(v) if p.type == "bool" else (float(v) if p.type == "double" else int(v))
    return out


def _dtype(name: str, what: str) -> dtypes.DType:
    try:
        return dtypes.lookup(name)
    except KeyError:
        raise _Skip(f"{what}: unknown dtype {name!r}") from None


def supported_status(cases: list[Case]) -> dict:
    """(dtype, index dtype) -> {family: 0} where the case file runs that pair as a valid case.

    An ATK case expects status 0 exactly where the operator's own case file says the dtypes are
    accepted; elsewhere the case is skipped (its status is not the ATK list's business)."""
    table: dict = {}
    for c in cases:
        if c.kind == "valid":
            fams = table.setdefault((c.dtype, c.index_dtype), {})
            fams.update({f: 0 for f, s in c.status.items() if s == 0})
    return table


def _case(path: Path, op: OpSpec, raw: dict, statuses: dict, vocab: Vocabulary) -> Case:
    ex = op.atk
    cid = raw.get("id")
    rd = _Reader(f"{path.name}#{cid}", raw)
    base = dict(op=op, group=GROUP, kind="valid", families=op.families, standard=op.standard,
                formats={p.name: ex.format for p in op.tensor_params},
                layouts={p.name: "contiguous" for p in op.tensor_params})
    try:
        tensors, given_attrs = _entries(raw)
        inputs = [p for p in op.tensor_params if not p.output]
        missing = [p.name for p in inputs if p.name not in tensors]
        extra = sorted(set(tensors) - {p.name for p in inputs})
        if missing or extra:
            raise _Skip(f"tensors {missing or extra} do not match aclnn{op.name}'s inputs")
        data = [p for p in inputs if p.dtype in (None, "data")]
        dts = {p.name: _dtype(tensors[p.name]["dtype"], p.name) for p in data}
        dtype = dts[data[0].name] if data else None
        if len(set(dts.values())) > 1:
            raise _Skip(f"data tensors of different dtypes {dts}: the case model has one data dtype")
        idx = next((p for p in inputs if p.dtype == "index"), None)
        index_dtype = None
        if idx is not None:
            index_dtype = ex.index_dtype or _dtype(tensors[idx.name]["dtype"], idx.name)
        shape = tuple(int(s) for s in tensors[op.output_like]["shape"])
        if any(s < 0 for s in shape):
            raise _Skip(f"negative dimension in {op.output_like} shape {list(shape)}")
        attrs = _attrs(rd, op, given_attrs)
        per_tensor = {p.name: rd.distribution(p.name, tensors[p.name]["range_values"])
                      for p in inputs if p.name not in ex.placeholders}
        first = next(iter(per_tensor.values()))
        values = Distribution("atk", first.kind, first.params, per_tensor=per_tensor)
        acc = (raw.get("standard") or {}).get("acc", "default")
        standard = standard_of(acc)
        if standard is None:
            raise _Skip(f"standard.acc {acc!r} has no counterpart among the harness's standards")
        gap = vocab.standard_gap(standard, dtype) if dtype else None
        if gap:
            raise _Skip(gap)
        drawn = {p.name: tuple(int(s) for s in tensors[p.name]["shape"]) for p in inputs} if ex.drawn else None
        largest = max(math.prod(int(s) for s in t["shape"]) for n, t in tensors.items() if n not in ex.placeholders)
        if largest > MAX_ELEMENTS:
            raise _Skip(f"a tensor of {largest:,} elements exceeds the harness's per-case limit of "
                        f"{MAX_ELEMENTS:,} (float64 golden and host copies need ~40 bytes an element)")
        status = statuses.get((dtype, index_dtype), {})
        perf = (raw.get("standard") or {}).get("perf")
        notes = ([ex.note] if ex.note else []) + rd.notes
        name = f"{GROUP}[{cid}-{dtype}{f'-{index_dtype}' if index_dtype else ''}-{ids.shape_id(shape)}]"
        return Case(name=name, shape=shape, dtype=dtype, index_dtype=index_dtype, attrs=attrs, values=values,
                    status={f: s for f, s in status.items() if f in op.families}, standard=standard,
                    tier="slow" if largest > SLOW_ELEMENTS else "default", note="; ".join(notes) or None,
                    drawn_shapes=drawn, deviations=((TORCH_HALF,) if ex.sums else ()) + op.atk_deviations,
                    atk_perf=None if perf in (None, "not_key") else perf,
                    **{k: v for k, v in base.items() if k != "standard"})
    except _Skip as e:
        return _skipped(path, base, cid, str(e))
    except (KeyError, TypeError, ValueError, IndexError) as e:   # a malformed entry: name what was missing
        return _skipped(path, base, cid, f"malformed case ({type(e).__name__}: {e})")


def _skipped(path: Path, base: dict, cid, reason: str) -> Case:
    """A case the harness cannot run faithfully: a reasoned skip that names the list it came from
    (a sweep runs several lists, and the skip table is read apart from the run's command line)."""
    return Case(name=f"{GROUP}[{cid}]", shape=(), dtype="undefined", index_dtype=None, attrs={},
                values=Distribution("none", "constant", {"value": 0.0}), status={},
                skip=f"ATK case {cid} of {path.name}: {reason}", **base)


def read(path) -> list:
    """The JSON list of an ATK file; CaseFileError (one line) when it is not one."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise CaseFileError(path, f"cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise CaseFileError(path, f"not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    if not isinstance(doc, list) or not all(isinstance(c, dict) for c in doc):
        raise CaseFileError(path, "an ATK case list is a JSON list of case objects")
    return doc


def op_name(path, doc: list) -> str:
    """The one operator an ATK file is about (its cases' aclnn_name)."""
    names = {c.get("aclnn_name") for c in doc}
    if len(names) != 1 or None in names:
        raise CaseFileError(path, f"cases name {len(names)} operators in 'aclnn_name' "
                                  f"({', '.join(sorted(map(str, names)))}); one file holds one operator", None,
                            "aclnn_name")
    return names.pop()


def load(path, op: OpSpec, op_cases: list[Case], vocab: Vocabulary, doc: list | None = None) -> list[Case]:
    """The Cases of one ATK file for `op` (with `op_cases`, its case file's cases)."""
    path = Path(path)
    doc = read(path) if doc is None else doc
    if op.atk is None:
        raise CaseFileError(path, f"aclnn{op.name}'s case file ({Path(op.path).name}) says nothing of its ATK "
                                  f"executor: give it an `atk:` entry (spec section E.2)", None, "aclnn_name")
    statuses = supported_status(op_cases)
    cases, seen = [], set()
    for i, raw in enumerate(doc):
        case = _case(path, op, raw, statuses, vocab)
        if case.name in seen:
            raise CaseFileError(path, f"case id {raw.get('id')!r} appears twice", None, f"{i}.id")
        seen.add(case.name)
        cases.append(case)
    return cases
