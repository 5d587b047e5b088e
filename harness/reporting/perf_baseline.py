"""Perf baselines: per case, the launch times a reference run measured, for the perf gate.

A perf baseline is a baseline file (baseline.py loads, picks and checks its target like any other)
whose content says `kind: perf`. It is written as JSON (a YAML reader reads it too):

    {"kind": "perf",
     "target": {"backend": "aclnn", "family": "ascend910b"},     # the runs it gates; cann_version pins one
     "measured": {"backend": "aclnn", "family": "ascend910b", "cann_version": "8.1.RC1",
                  "library_sha256": "<hex>", "timings": ["events"], "run": "reports/x", "started": "..."},
     "benchmark": false,      # true: measured on the benchmark device of ATK's standard.perf ratios
     "tolerance": 0.10,       # optional: this file's default tolerance
     "cases": {"<case id>": {"timing": "events", "samples_ms": [...], "median_ms": 1.23, "n": 40,
                             "tolerance": 0.05}}}                  # tolerance optional, per entry

Every sample is kept (rounded to 6 significant digits, below any device timer's resolution): the
rank test needs the whole distribution, not a summary. `measured` keys the numbers to what
produced them (backend, family, CANN version, library hash and, per entry, the timing kind); the
target only says which runs the file gates, so a new library is gated against the old one's times.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import baseline as bl
from .identity import opapi_hash
from .records import backend_of, family_of

# Timings of device time only: a benchmark device may be timed by other events than the device
# under test, and that comparison is still time against time; host-side clocks are not.
DEVICE_TIMINGS = frozenset({"events", "cuda_events"})


@dataclass(frozen=True)
class PerfEntry:
    """One case's timing distribution in a perf baseline."""
    case_id: str
    timing: str
    samples_ms: tuple[float, ...]
    tolerance: float | None
    source: str                      # "file.json:cases[<case id>]", for messages

    def comparable(self, timing: str, benchmark: bool) -> bool:
        """Whether a run's launches timed by `timing` may be compared with these."""
        return timing == self.timing or (benchmark and {timing, self.timing} <= DEVICE_TIMINGS)


@dataclass
class PerfBaseline:
    target: bl.Target
    path: str
    measured: dict
    benchmark: bool = False
    tolerance: float | None = None
    entries: dict[str, PerfEntry] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return Path(self.path).name

    def entry(self, case_id: str) -> PerfEntry | None:
        return self.entries.get(case_id)


def _samples(path: str, case_id: str, raw) -> tuple[float, ...]:
    """The samples of one entry: finite positive numbers, else BaselineError naming the field."""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0 for x in raw):
        raise bl.BaselineError(f"{path}: field 'cases.{case_id}.samples_ms': launch times must be finite "
                               "positive numbers")
    return tuple(float(x) for x in raw)


def from_document(path: str, doc: dict) -> PerfBaseline:
    """A perf baseline from a document baseline.load_file() has checked."""
    t = doc["target"]
    name = Path(path).name
    entries = {cid: PerfEntry(cid, e["timing"], _samples(path, cid, e["samples_ms"]), e.get("tolerance"),
                              f"{name}:cases[{cid}]") for cid, e in doc["cases"].items()}
    return PerfBaseline(bl.Target(t["backend"], t["family"], t.get("cann_version")), path, doc.get("measured") or {},
                        bool(doc.get("benchmark")), doc.get("tolerance"), entries)


def pick(base: bl.Baseline | None) -> tuple[PerfBaseline | None, PerfBaseline | None]:
    """(the run's own perf baseline, the benchmark one) among those a baseline picked for the run.
    One of each kind at most: a file pinned to the run's CANN version wins over an unpinned one,
    and two equally fitting files are a BaselineError (which one gates would be an accident)."""
    perfs = [from_document(p, d) for p, d in (base.perf if base else [])]
    out = []
    for benchmark in (False, True):
        mine = [p for p in perfs if p.benchmark == benchmark]
        best = [p for p in mine if p.target.cann_version] or mine
        if len(best) > 1:
            kind = "benchmark perf baselines" if benchmark else "perf baselines"
            raise bl.BaselineError(f"{', '.join(p.path for p in best)}: several {kind} for {best[0].target}; "
                                   "keep one, or pin each to its cann_version")
        out.append(best[0] if best else None)
    return out[0], out[1]


def load_for(path: Path, backend: str, family: str, cann_version: str | None = None
             ) -> tuple[PerfBaseline | None, PerfBaseline | None]:
    """For the runner: the perf baselines (own, benchmark) a --gate file or directory holds for a run."""
    return pick(bl.load_for(Path(path), backend, family, cann_version))


# ------------------------------------------------------------------ writing one from a run

def _round(x: float) -> float:
    return float(f"{x:.6g}")


def _library_hash(identity: dict, records: list[dict]) -> str | None:
    """Which operator libraries produced the times: the run's, else (a merged directory names its
    libraries only in its records) the hash of every library a record names."""
    shas = next((r["library_sha256"] for r in records if r.get("library_sha256")), {})
    return opapi_hash(identity) or opapi_hash({"libraries": {p: p for p in shas}, "library_sha256": shas})


def measured_records(records: list[dict], backend: str, family: str) -> list[dict]:
    """The records of one backend and family that carry launch times."""
    return [r for r in records if (r.get("perf") or {}).get("samples_ms")
            and family_of(r) == family and (not backend_of(r) or backend_of(r) == backend)]


def from_run(records: list[dict], identity: dict, target: bl.Target, run: str, *, benchmark: bool = False,
             tolerance: float | None = None) -> dict:
    """The document of a perf baseline from a run's measured records of the target's family (each
    entry keeps its first sample set, not a re-measurement). A benchmark baseline is measured on
    the run's own backend (the benchmark device) and gates the target's backend."""
    backend = identity.get("backend", "") if benchmark else target.backend
    recs = sorted(measured_records(records, backend, target.family), key=lambda r: r["case_id"])
    cases = {}
    for r in recs:
        samples = [_round(x) for x in r["perf"]["samples_ms"]]
        _samples(run, r["case_id"], samples)
        cases[r["case_id"]] = {"timing": str(r["perf"].get("timing") or "unknown"), "samples_ms": samples,
                               "median_ms": _round(statistics.median(samples)), "n": len(samples)}
    cann = next((r["cann_version"] for r in recs if r.get("cann_version")), None) or identity.get("cann_version")
    measured = {"backend": backend, "family": target.family, "cann_version": cann or None,
                "library_sha256": _library_hash(identity, recs),
                "timings": sorted({c["timing"] for c in cases.values()}), "run": run,
                "started": identity.get("started"), "suite_commit": identity.get("suite_commit")}
    t = {"backend": target.backend, "family": target.family,
         **({"cann_version": target.cann_version} if target.cann_version else {})}
    return {"kind": bl.PERF_KIND, "target": t,
            "note": f"launch times measured by {run}; review the tolerances before gating on it",
            "measured": measured, "benchmark": benchmark,
            **({"tolerance": tolerance} if tolerance is not None else {}), "cases": cases}


def write(path: Path, doc: dict) -> Path:
    """Write a perf baseline that baseline.load_file() reads back (one case per line: diffable)."""
    path = Path(path)
    bl.check_perf_document(path, doc)        # never a file the gate would refuse (a NaN tolerance, a bad hash)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = [f"  {json.dumps(cid)}: {json.dumps(e)}" for cid, e in doc["cases"].items()]
    text = json.dumps(head, indent=1)[:-2] + ',\n "cases": {\n' + ",\n".join(lines) + "\n }\n}\n"
    path.write_text(text, encoding="utf-8")
    return path
