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

A mistake in a baseline file is one line naming the file and the field (BaselineError).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import HarnessConfigError
from ..status import Status

KINDS = ("fails", "flakes", "skips")
_EXPECTABLE = ("FAIL", "CRASH", "TIMEOUT", "MISSING")

_ENTRY = {"type": "object", "additionalProperties": False, "required": ["case", "reason", "link"],
          "properties": {"case": {"type": "string", "minLength": 1},
                         "reason": {"type": "string", "minLength": 1},
                         "link": {"type": "string", "minLength": 1},
                         "status": {"enum": list(_EXPECTABLE)}}}
_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["target"],
           "properties": {"target": {"type": "object", "additionalProperties": False,
                                     "required": ["backend", "family"],
                                     "properties": {"backend": {"type": "string"}, "family": {"type": "string"},
                                                    "cann_version": {"type": ["string", "null"]}}},
                          **{k: {"type": ["array", "null"], "items": _ENTRY} for k in KINDS}}}


class BaselineError(HarnessConfigError):
    """A malformed or inapplicable baseline. str() is one line naming the file and field."""


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

    def find(self, kind: str, case_id: str) -> Entry | None:
        return next((e for e in self.entries if e.kind == kind and e.matches(case_id)), None)

    def of_kind(self, kind: str) -> list[Entry]:
        return [e for e in self.entries if e.kind == kind]


def load_file(path: Path) -> Baseline:
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BaselineError(f"{path}: cannot read baseline: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise BaselineError(f"{path}:{where} not valid YAML: {getattr(e, 'problem', e)}") from None
    import jsonschema      # here, not at import: a run without a baseline never needs it (0.05 s at start-up)
    errors = sorted(jsonschema.Draft202012Validator(_SCHEMA).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise BaselineError(f"{path}: field {where!r}: {err.message}")
    t = doc["target"]
    baseline = Baseline(Target(t["backend"], t["family"], t.get("cann_version")), files=[str(path)])
    for kind in KINDS:
        for i, e in enumerate(doc.get(kind) or []):
            baseline.entries.append(Entry(kind, e["case"], e["reason"], e["link"], f"{path.name}:{kind}[{i}]",
                                          Status[e["status"]] if e.get("status") else None))
    return baseline


def load_for(path: Path, backend: str, family: str, cann_version: str | None = None) -> Baseline:
    """The baseline for a run: a file (its target must match the run) or a directory (every file in it
    whose target matches is combined; none matching is an empty baseline for that target, said loudly
    by the caller through `files`)."""
    path = Path(path)
    if path.is_dir():
        combined = Baseline(Target(backend, family, cann_version))
        for f in sorted(path.glob("*.y*ml")):
            b = load_file(f)
            if b.target.matches(backend, family, cann_version):
                combined.entries += b.entries
                combined.files += b.files
        return combined
    if not path.exists():
        raise BaselineError(f"{path}: baseline file or directory not found")
    b = load_file(path)
    if not b.target.matches(backend, family, cann_version):
        raise BaselineError(f"{path}: field 'target': baseline is for {b.target}, but the run is "
                            f"{backend}-{family}" + (f"-{cann_version}" if cann_version else ""))
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
