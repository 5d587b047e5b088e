"""Read one case file: bounded YAML (source.py), schema, the operator's description, then expansion.

`load(path, vocab)` returns (OpSpec, [Case]) or raises CaseFileError, whose
str() is one line naming the file, the group and the field.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import yaml

from ..core.errors import CaseFileError
from . import distributions, messages, source
from .expand import expand_invalid, expand_matrix
from .fields import MAX_CASES, Where
from .spec import AtkExecutor, Check, CoverageExemption, Limit, OpSpec, Param
from .vocabulary import Vocabulary

_SCHEMA_PATH = Path(__file__).with_name("schema.yaml")


def _is_integer(checker, instance) -> bool:
    """JSON Schema counts 2.0 as an integer; a case file's integers are written as integers (a
    shape of [2.0] would run as 2 under a case id reading 2.0)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema      # only when a case file is expanded anew (build/casefiles/ holds the rest)
    schema = yaml.safe_load(_SCHEMA_PATH.read_text())
    base = jsonschema.Draft202012Validator
    strict = jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_integer))
    return strict(schema)


def _field(loc) -> str | None:
    return ".".join(str(x) for x in loc) or None


def _schema_error(path, doc, err) -> CaseFileError:
    err = messages.innermost(err)
    loc = list(err.absolute_path)
    group = None
    if len(loc) >= 2 and loc[0] == "groups" and isinstance(loc[1], int):
        groups = doc.get("groups") or []
        g = groups[loc[1]] if loc[1] < len(groups) else {}
        group = g.get("name", f"#{loc[1]}") if isinstance(g, dict) else f"#{loc[1]}"
        loc = loc[2:]
    return CaseFileError(path, messages.schema_message(err), group, _field(loc))


def _params(w: Where, doc) -> tuple[list[Param], set[str]]:
    params, seen = [], set()
    for i, p in enumerate(doc["signature"]):
        if p["name"] in seen:
            raise w.error(f"parameter {p['name']!r} appears twice", f"signature.{i}.name")
        seen.add(p["name"])
        dt = p.get("dtype")
        if p["type"] == "tensor" and dt not in (None, "data", "index"):
            dt = w.dtype(f"signature.{i}.dtype", dt).name    # Case.dtype_of gives its DType
        if "ranks" in p and p["type"] != "tensor":
            raise w.error(f"ranks given for {p['name']!r}, which is not a tensor", f"signature.{i}.ranks")
        ranks = w.ranks(f"signature.{i}.ranks", p["ranks"]) if "ranks" in p else ()
        params.append(Param(p["name"], p["type"], dt, bool(p.get("output", False)), ranks))
    if not any(p.output for p in params):
        raise w.error("no output tensor (mark one with output: true)", "signature")
    return params, seen


def _checks(w: Where, doc, fams) -> tuple[Check, ...]:
    checks = tuple(Check(c["id"], c["what"],
                         None if c.get("status") is None else w.status_value(f"checks.{i}.status", c["status"]),
                         w.families(f"checks.{i}.families", c.get("families", fams)),
                         c.get("untestable"), Limit(**c["limit"]) if c.get("limit") else None,
                         tuple(c.get("axes") or ()), c.get("boundary"))
                   for i, c in enumerate(doc.get("checks") or []))
    ids = [c.id for c in checks]
    dup = {x for x in ids if ids.count(x) > 1}
    if dup:
        raise w.error(f"duplicate check ids: {', '.join(sorted(dup))}", "checks")
    return checks


def _op_spec(path, doc, vocab: Vocabulary) -> OpSpec:
    w = Where(path, None, vocab)
    params, seen = _params(w, doc)
    fams = w.families("families", doc["families"])
    if doc["output_like"] not in seen:
        raise w.error(f"output_like names unknown parameter {doc['output_like']!r}", "output_like")
    w.standard("standard", doc["standard"])
    if doc["golden"] not in vocab.goldens:
        raise w.error(f"unknown golden {doc['golden']!r}; available goldens: {', '.join(vocab.goldens)}", "golden")
    checks = _checks(w, doc, fams)
    for i, chk in enumerate(checks):
        if chk.limit and chk.limit.tensor not in {p.name for p in params if p.type == "tensor"}:
            raise w.error(f"limit names {chk.limit.tensor!r}, which is not a tensor parameter", f"checks.{i}.limit.tensor")
    for fmt in doc.get("channel_last_formats", []):
        w.format("channel_last_formats", fmt)
    input_attrs = []
    for i, p in enumerate(doc.get("input_attrs") or []):
        if p["name"] in seen:
            raise w.error(f"input attribute {p['name']!r} is also an API parameter", f"input_attrs.{i}.name")
        seen.add(p["name"])
        input_attrs.append(Param(p["name"], p["type"]))
    return OpSpec(doc["op"], doc["golden"], doc["standard"], fams, tuple(params), doc["output_like"],
                  tuple(doc.get("channel_last_formats", [])), checks, str(path), tuple(input_attrs),
                  w.deviations(doc.get("atk_deviations"), "atk_deviations"),
                  bool(doc.get("deterministic_by_default", False)), doc["spatial_rank"],
                  _atk_executor(w, doc.get("atk"), {p.name for p in params}), _exemptions(w, doc, fams))


def _atk_executor(w: Where, atk: dict | None, names: set[str]) -> AtkExecutor | None:
    if atk is None:
        return None
    fmt = w.format("atk.format", atk["format"])
    index_dtype = w.dtype("atk.index_dtype", atk["index_dtype"]) if "index_dtype" in atk else None
    for i, name in enumerate(atk.get("placeholders") or []):
        if name not in names:
            raise w.error(f"unknown parameter {name!r}", f"atk.placeholders.{i}")
    return AtkExecutor(fmt, index_dtype, tuple(atk.get("placeholders") or ()), bool(atk.get("drawn", False)),
                       atk.get("note"), bool(atk.get("sums", True)))


def _exemptions(w: Where, doc, fams) -> tuple[CoverageExemption, ...]:
    out = []
    for i, e in enumerate(doc.get("coverage_exemptions") or []):
        if e["family"] not in fams:
            raise w.error(f"family {e['family']!r} is not one of the op's families", f"coverage_exemptions.{i}.family")
        out.append(CoverageExemption(e["family"], w.dtype(f"coverage_exemptions.{i}.dtype", e["dtype"]),
                                     e["requirement"], e["why"]))
    return tuple(out)


def _named_distributions(path, doc, op: OpSpec) -> dict:
    named, tensors = {}, {p.name for p in op.tensor_params}
    for name, spec in (doc.get("distributions") or {}).items():
        for t in spec.get("tensors") or {}:
            if t not in tensors:
                raise CaseFileError(path, f"unknown tensor {t!r}", None, f"distributions.{name}.tensors")
        try:
            named[name] = distributions.parse(name, spec, named)
        except ValueError as e:
            raise CaseFileError(path, str(e), None, f"distributions.{name}") from None
    return named


def _read_yaml(path: Path):
    try:
        return source.parse(source.read(path))
    except source.SourceProblem as e:
        loc = list(e.path[2:] if e.group is not None else e.path)
        where = f" (line {e.line})" if e.line else ""
        raise CaseFileError(path, e.message + where, e.group, _field(loc)) from None
    except OSError as e:
        raise CaseFileError(path, f"cannot read: {e.strerror}") from None


def load(path, vocab: Vocabulary):
    """Parse and validate one case file; raise CaseFileError (one line) on any problem."""
    path = Path(path)
    doc = _read_yaml(path)
    if not isinstance(doc, dict):
        raise CaseFileError(path, "top level must be a mapping with op, golden, signature, groups")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), str(list(e.absolute_path))))
    if errors:
        raise _schema_error(path, doc, max(errors, key=lambda e: len(list(e.absolute_path))))
    op = _op_spec(path, doc, vocab)
    named = _named_distributions(path, doc, op)
    cases, names = [], set()
    for g in doc["groups"]:
        if g["name"] in names:
            raise CaseFileError(path, "duplicate group name", g["name"], "name")
        names.add(g["name"])
        if "timeout_s" in g and not g["timeout_s"] < math.inf:      # .inf and .nan pass the schema's > 0
            raise CaseFileError(path, f"must be a finite number of seconds > 0, got {g['timeout_s']}", g["name"],
                                "timeout_s")
        expand = expand_matrix if "matrix" in g else expand_invalid
        cases.extend(expand(path, op, g, named, vocab))
        if len(cases) > MAX_CASES:
            raise CaseFileError(path, f"the file expands to more than {MAX_CASES} cases", g["name"], None)
    seen = set()
    for c in cases:
        if c.name in seen:
            raise CaseFileError(path, f"duplicate case id {c.name!r} (two entries expand to the same case)",
                                c.group, None)
        seen.add(c.name)
    return op, cases
