"""Baselines: which cases are known to fail, known to be flaky, or to be skipped, per target.

In the spirit of Mesa's *-fails.txt / *-flakes.txt / *-skips.txt and VK-GL-CTS waivers, but one
YAML file per target (backend + SoC family, optionally a CANN version):

    target: {backend: aclnn, family: ascend910b, cann_version: "8.1.RC1"}   # cann_version optional
    fails:                       # expected to fail; passing makes the entry stale (UNEXPECTED_PASS)
      - case: "AvgPool2dBackward.dev_global_padding[*]"     # a case id, or a pattern with * wildcards
        reason: global-pool fast path ignores padding (spec G.8)
        link: https://issues.example/1234
        status: FAIL             # optional: only this failing status is expected (FAIL, CRASH, TIMEOUT)
    flakes:                      # may fail or pass; a failure is FLAKE, not a gate failure
      - {case: "...", reason: ..., link: ...}
    skips:                       # not run at all in gating mode
      - {case: "...", reason: ..., link: ...}

A perf baseline (harness/reporting/perf/baseline.py: `kind: perf`, timing distributions per case)
has the same target and is loaded, picked and checked here too, so a --gate file or directory
may hold either kind; each is recognised by its content, whatever its name (*.yaml, *.yml, *.json).

A mistake in a baseline file is one line naming the file and the field (BaselineError).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..core import families as families_mod
from ..backends import NAMES as BACKENDS
from ..core.status import Status
from .baseline_file import BaselineError, read_document

KINDS = ("fails", "flakes", "skips")
_EXPECTABLE = ("FAIL", "CRASH", "TIMEOUT", "MISSING")

_ENTRY = {"type": "object", "additionalProperties": False, "required": ["case", "reason", "link"],
          "properties": {"case": {"type": "string", "minLength": 1},
                         "reason": {"type": "string", "minLength": 1},
                         "link": {"type": "string", "minLength": 1},
                         "status": {"enum": list(_EXPECTABLE)}}}
_TARGET = {"type": "object", "additionalProperties": False, "required": ["backend", "family"],
           "properties": {"backend": {"type": "string"}, "family": {"type": "string"},
                          "cann_version": {"type": ["string", "null"]}}}
_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["target"],
           "properties": {"target": _TARGET, **{k: {"type": ["array", "null"], "items": _ENTRY} for k in KINDS}}}

PERF_KIND = "perf"
# A number of a perf baseline is also finite (_check_numbers: JSON's NaN and Infinity are numbers to
# a schema, and a NaN tolerance once gated nothing); each launch time finite and > 0 (_check_samples:
# a schema would walk every sample of every case, fifty times slower than the check).
_TOLERANCE = {"type": "number", "minimum": 0}
_SHA256 = {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$", "maxLength": 64}    # `$` passes a final "\n"
_OPT_TEXT = {"type": ["string", "null"]}
_PERF_ENTRY = {"type": "object", "additionalProperties": False, "required": ["timing", "samples_ms"],
               "properties": {"timing": {"type": "string", "minLength": 1},
                              "samples_ms": {"type": "array", "minItems": 1},    # values: _check_samples
                              "median_ms": {"type": "number", "exclusiveMinimum": 0},
                              "n": {"type": "integer", "minimum": 1},
                              "tolerance": _TOLERANCE,
                              # version 2: the median of each baseline run that measured the case
                              "run_medians_ms": {"type": "array", "minItems": 1,
                                                 "items": {"type": "number", "exclusiveMinimum": 0}}}}
_PERF_RUN = {"type": "object", "additionalProperties": False, "required": ["run"],
             "properties": {"run": {"type": "string", "minLength": 1}, "started": _OPT_TEXT,
                            "library_sha256": _SHA256, "cases": {"type": "integer", "minimum": 0}}}
_MEASURED = {"type": "object",
             "properties": {"backend": {"type": "string"}, "family": {"type": "string"}, "cann_version": _OPT_TEXT,
                            "library_sha256": _SHA256, "timings": {"type": "array", "items": {"type": "string"}},
                            "run": _OPT_TEXT, "started": _OPT_TEXT, "suite_commit": _OPT_TEXT,
                            # version 2: every run it was built from, and where its library was
                            "runs": {"type": "array", "minItems": 1, "items": _PERF_RUN},
                            "library_root": _OPT_TEXT,
                            "libraries": {"type": "object", "additionalProperties": {"type": "string"}},
                            "switches": {"type": "object", "additionalProperties": {"type": "string"}}}}
_PERF_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["kind", "target", "measured", "cases"],
                "properties": {"kind": {"const": PERF_KIND},
                               "version": {"type": "integer", "enum": [1, 2]},     # absent: 1
                               "target": _TARGET, "note": {"type": "string"},
                               "measured": _MEASURED, "benchmark": {"type": "boolean"},
                               "tolerance": _TOLERANCE,
                               "cases": {"type": "object", "additionalProperties": _PERF_ENTRY}}}


_YAML11_BOOLS = ("yes", "no", "on", "off", "y", "n")


# Bounded as a case file is (model/source.py; tests/input_fuzz.py): deeper nesting was a RecursionError
# traceback, a kilobyte of aliases kept the checks walking for a minute, and of a key given twice the
# first value was silently lost (a case's launch times, a target).
@dataclass(frozen=True)
class Target:
    backend: str
    family: str
    cann_version: str | None = None

    def matches(self, backend: str, family: str, cann_version: str | None) -> bool:
        return (self.backend == backend and self.family == family
                and (self.cann_version is None or self.cann_version == cann_version))

    def __str__(self) -> str:
        return f"{self.backend}-{self.family}" + (f"-{self.cann_version}" if self.cann_version else "")


@dataclass(frozen=True)
class Entry:
    kind: str                 # fails | flakes | skips
    case: str                 # a case id or a pattern
    reason: str
    link: str
    source: str               # "file.yaml:fails[3]", for messages
    status: Status | None = None

    @property
    def pattern(self) -> re.Pattern:
        return _compile(self.case)

    def matches(self, case_id: str) -> bool:
        return bool(self.pattern.fullmatch(case_id))


def _compile(pattern: str) -> re.Pattern:
    """Only '*' is a wildcard: case ids are full of '[' and ']', which fnmatch would read as classes."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


@dataclass
class Baseline:
    target: Target
    entries: list[Entry] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    searched: str | None = None      # the directory the files were picked from (None: a file was given)
    perf: list[tuple[str, dict]] = field(default_factory=list)   # (path, document) of each perf baseline picked

    def find(self, kind: str, case_id: str) -> Entry | None:
        return next((e for e in self.entries if e.kind == kind and e.matches(case_id)), None)

    def of_kind(self, kind: str) -> list[Entry]:
        return [e for e in self.entries if e.kind == kind]

    def duplicates(self) -> list[str]:
        """One line per case text listed more than once (in one kind, or in several: then only
        one entry is ever used, fails before flakes, and a skip means neither is checked)."""
        by_case: dict[str, list[Entry]] = {}
        for e in self.entries:
            by_case.setdefault(e.case, []).append(e)
        out = []
        for case, entries in by_case.items():
            if len(entries) < 2:
                continue
            kinds = [k for k in KINDS if any(e.kind == k for e in entries)]
            sources = ", ".join(e.source for e in entries)
            if len(kinds) == 1:
                out.append(f"duplicate baseline entry {case!r} ({sources}): only the first is used")
            else:
                used = "the case is skipped, so the other entry is never checked" if "skips" in kinds else \
                    "the fails entry decides"
                out.append(f"{case!r} is listed under both {' and '.join(kinds)} ({sources}): {used}")
        return out


def is_perf(doc) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == PERF_KIND


def _validate(path: Path, doc, schema: dict) -> None:
    import jsonschema      # here, not at import: a run without a baseline never needs it (0.05 s at start-up)
    # JSON Schema's "integer" includes 2.0 and its enum [1, 2] too: refused, as a case file refuses them
    integers = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool))
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=integers)
    errors = sorted(validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        wanted = err.validator_value if err.validator == "type" else None
        booleans = "boolean" in (wanted if isinstance(wanted, list) else [wanted])
        yaml11 = booleans and isinstance(err.instance, str) and err.instance.lower() in _YAML11_BOOLS
        raise BaselineError(f"{path}: field {where!r}: {err.message}" + (
            f" (YAML 1.1 reads {err.instance!r} as a boolean, YAML 1.2 as text: write true or false)" if yaml11 else ""))


def _not_finite(doc, where: str = "") -> str | None:
    """The field of the first number in `doc` that is not finite (NaN, +-Infinity), else None."""
    if isinstance(doc, (float, int)) and not isinstance(doc, bool):
        # also an integer past a float's range (JSON's 1e400 written out): the gate's float() raised OverflowError
        return None if abs(doc) <= sys.float_info.max else (where or "(top level)")
    if isinstance(doc, dict):
        items = ((f"{where}.{k}" if where else str(k), v) for k, v in doc.items())
    elif isinstance(doc, list):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(doc))
    else:
        return None
    return next((bad for field_, v in items if (bad := _not_finite(v, field_))), None)


def _check_numbers(path: Path, doc) -> None:
    bad = _not_finite(doc)
    if bad:
        raise BaselineError(f"{path}: field {bad!r}: must be a finite number (not NaN or Infinity, nor beyond "
                            "a float's range)")


def _check_samples(path: Path, doc: dict) -> None:
    """Each perf entry's launch times: finite numbers > 0 (finiteness: _check_numbers), as many as its `n`."""
    for cid, e in doc["cases"].items():
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in e["samples_ms"]):
            raise BaselineError(f"{path}: field 'cases.{cid}.samples_ms': launch times must be finite "
                                "positive numbers")
        if "n" in e and e["n"] != len(e["samples_ms"]):
            raise BaselineError(f"{path}: field 'cases.{cid}.n': {e['n']}, but samples_ms holds "
                                f"{len(e['samples_ms'])} launch time(s)")
        runs = len((doc.get("measured") or {}).get("runs") or []) or 1
        if len(e.get("run_medians_ms") or ()) > runs:
            raise BaselineError(f"{path}: field 'cases.{cid}.run_medians_ms': {len(e['run_medians_ms'])} run "
                                f"median(s), but the baseline names {runs} run(s) (measured.runs)")


def check_perf_document(path: Path, doc: dict) -> None:
    """BaselineError (one line naming the field) unless `doc` is a perf baseline load_file() accepts:
    perf_baseline.write() checks what it is about to write with it."""
    _check_numbers(path, doc)
    _validate(path, doc, _PERF_SCHEMA)
    _check_samples(path, doc)


def load_file(path: Path) -> Baseline:
    path = Path(path)
    doc = read_document(path)
    perf = is_perf(doc)
    _check_numbers(path, doc)
    _validate(path, doc, _PERF_SCHEMA if perf else _SCHEMA)
    if perf:
        _check_samples(path, doc)
    t = doc["target"]
    _check_target_names(path, t)
    target = Target(t["backend"], t["family"], t.get("cann_version"))
    if perf:
        return Baseline(target, perf=[(str(path), doc)])
    baseline = Baseline(target, files=[str(path)])
    for kind in KINDS:
        for i, e in enumerate(doc.get(kind) or []):
            baseline.entries.append(Entry(kind, e["case"], e["reason"], e["link"], f"{path.name}:{kind}[{i}]",
                                          Status[e["status"]] if e.get("status") else None))
    return baseline


def _check_target_names(path: Path, target: dict) -> None:
    """A target no run can have (a typo such as ascend999) is named as such: it would otherwise
    surface only as a target mismatch, or, in a directory, as a file silently never picked."""
    if target["backend"] not in BACKENDS:
        raise BaselineError(f"{path}: field 'target.backend': unknown backend {target['backend']!r}; "
                            f"known: {', '.join(BACKENDS)}")
    known = families_mod.FAMILIES + families_mod.OTHER_FAMILIES
    if target["family"] not in known:
        raise BaselineError(f"{path}: field 'target.family': unknown family {target['family']!r}; "
                            f"known: {', '.join(known)}")


def check_target(path: Path, baseline: Baseline, backend: str | None, family: str | None,
                 cann_version: str | None = None, *, partial: bool = False) -> None:
    """BaselineError when a baseline file is for another target than the run. partial: before the
    run has opened its backend, its family (--soc, may be absent) and CANN version are not known
    yet: only what is known is compared, so that a wrong file is refused before any case runs."""
    t = baseline.target
    if partial:
        fits = (not backend or t.backend == backend) and (not family or t.family == family)
    else:
        fits = t.matches(backend or "", family or "", cann_version)
    if not fits:
        run = "-".join(x for x in (backend, family, None if partial else cann_version) if x)
        raise BaselineError(f"{path}: field 'target': baseline is for {t}, but the run is {run}")


def load_dir(path: Path) -> list[Baseline]:
    """Every baseline file of a directory, each checked (a broken file is refused, not skipped)."""
    files = [f for pattern in ("*.y*ml", "*.json") for f in Path(path).glob(pattern)]
    return [load_file(f) for f in sorted(files)]


def load_for(path: Path, backend: str, family: str, cann_version: str | None = None) -> Baseline:
    """The baseline for a run: a file (its target must match the run) or a directory (every file in it
    whose target matches is combined; none matching is an empty baseline for that target, which
    the gate says in its lines: `searched` without `files`). A perf baseline file given alone is
    a run gated on no correctness baseline: `searched` is that file."""
    path = Path(path)
    if path.is_dir():
        combined = Baseline(Target(backend, family, cann_version), searched=str(path))
        for b in load_dir(path):
            if b.target.matches(backend, family, cann_version):
                combined.entries += b.entries
                combined.files += b.files
                combined.perf += b.perf
        return combined
    if not path.exists():
        raise BaselineError(f"{path}: baseline file or directory not found")
    b = load_file(path)
    check_target(path, b, backend, family, cann_version)
    if b.perf:
        b.searched = str(path)
    return b


def write(path: Path, target: Target, entries: list[Entry], header: str = "") -> Path:
    """Write a baseline file that load_file() reads back to the same entries."""
    doc = {"target": {"backend": target.backend, "family": target.family,
                      **({"cann_version": target.cann_version} if target.cann_version else {})}}
    for kind in KINDS:
        items = [{"case": e.case, "reason": e.reason, "link": e.link,
                  **({"status": e.status.value} if e.status else {})} for e in entries if e.kind == kind]
        if items:
            doc[kind] = items
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"# {line}\n" for line in header.splitlines()) + yaml.safe_dump(doc, sort_keys=False, width=120)
    path.write_text(text, encoding="utf-8")
    return path
