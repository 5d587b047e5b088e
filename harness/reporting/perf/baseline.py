"""Perf baselines: per case, the launch times a reference run measured, for the perf gate.

A perf baseline is a baseline file (baseline.py loads, picks and checks its target like any other)
whose content says `kind: perf`. It is written as JSON (a YAML reader reads it too):

    {"kind": "perf", "version": 2,         # absent: 1 (one run, no run_medians_ms): still read
     "target": {"backend": "aclnn", "family": "ascend910b"},     # the runs it gates; cann_version pins one
     "measured": {"backend": "aclnn", "family": "ascend910b", "cann_version": "8.1.RC1",
                  "library_sha256": "<hex>", "timings": ["events"], "run": "reports/x", "started": "...",
                  "runs": [{"run": "reports/x", "started": "...", "library_sha256": "<hex>", "cases": 50}, ...],
                  "library_root": "/usr/local/Ascend/cann", "libraries": {"opapi": "<path>", ...}},
     "benchmark": false,      # true: measured on the benchmark device of ATK's standard.perf ratios
     "tolerance": 0.10,       # optional: this file's default tolerance
     "cases": {"<case id>": {"timing": "events", "samples_ms": [...], "median_ms": 1.23, "n": 40,
                             "tolerance": 0.05,                   # tolerance optional, per entry
                             "run_medians_ms": [1.22, 1.25, 1.21]}}}  # one per baseline run (version 2)

A baseline built from several runs (`baseline --perf RUN1 RUN2 ...`, one library) pools their
launch times in samples_ms and keeps each run's median in run_medians_ms: the spread between runs
is what the gate widens its reference by (runs.py). `library_root` and `libraries` say where
the measured library was, so that a live gate can re-measure a flagged case against it (ab.py).

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

from .. import baseline as bl
from ..identity import SWITCH_PREFIXES as SWITCHES, opapi_hash
from ..records import backend_of, family_of

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
    run_medians_ms: tuple[float, ...] = ()     # one per baseline run (version 2); () or one: a one-run baseline

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
                              f"{name}:cases[{cid}]", tuple(float(x) for x in e.get("run_medians_ms") or ()))
               for cid, e in doc["cases"].items()}
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


def library_root(identity: dict) -> str | None:
    """The CANN root the run's operator library came from (<root>/lib64/lib*.so or
    <root>/<arch>-linux/lib64/lib*.so), else None."""
    libs = identity.get("libraries") or {}
    path = next((p for role, p in sorted(libs.items()) if role.startswith("opapi")), None)
    if not path:
        return None
    lib64 = Path(path).parent
    if lib64.name != "lib64":
        return None
    root = lib64.parent
    return str(root.parent if root.name.endswith("-linux") else root)


def from_run(records: list[dict], identity: dict, target: bl.Target, run: str, *, benchmark: bool = False,
             tolerance: float | None = None) -> dict:
    """from_runs() of one run."""
    return from_runs([(records, identity, run)], target, benchmark=benchmark, tolerance=tolerance)


def from_runs(runs: list[tuple[list[dict], dict, str]], target: bl.Target, *, benchmark: bool = False,
              tolerance: float | None = None) -> dict:
    """The document of a perf baseline from one or more runs [(records, identity, name)] of one
    library: per case, every run's first sample set pooled in samples_ms (not a re-measurement) and
    each run's median in run_medians_ms. A benchmark baseline is measured on the run's own backend
    (the benchmark device) and gates the target's backend. ValueError when the runs measured
    different libraries or backends (their spread would be the libraries', not the machine's)."""
    first_identity = runs[0][1]
    backend = first_identity.get("backend", "") if benchmark else target.backend
    pooled: dict[str, dict] = {}
    described, libraries = [], set()
    for records, identity, run in runs:
        if benchmark and identity.get("backend", "") != backend:
            raise ValueError(f"{run}: backend {identity.get('backend')!r}, but {runs[0][2]} ran {backend!r}")
        recs = sorted(measured_records(records, backend, target.family), key=lambda r: r["case_id"])
        sha = _library_hash(identity, recs)
        libraries.add(sha)
        described.append({"run": run, "started": identity.get("started"), "library_sha256": sha, "cases": len(recs)})
        for r in recs:
            samples = [_round(x) for x in r["perf"]["samples_ms"]]
            _samples(run, r["case_id"], samples)
            e = pooled.setdefault(r["case_id"], {"timing": str(r["perf"].get("timing") or "unknown"), "samples_ms": [],
                                                 "run_medians_ms": []})
            if e["timing"] != str(r["perf"].get("timing") or "unknown"):
                raise ValueError(f"{run}: {r['case_id']} timed by {r['perf'].get('timing')}, by {e['timing']} "
                                 "in an earlier run")
            e["samples_ms"] += samples
            e["run_medians_ms"].append(_round(statistics.median(samples)))
    if len(libraries) > 1:
        raise ValueError("the runs measured different operator libraries (" + ", ".join(
            f"{d['run']}: {(d['library_sha256'] or 'unknown')[:12]}" for d in described)
            + "): a baseline's runs must be of one library")
    cases = {cid: {"timing": e["timing"], "samples_ms": e["samples_ms"],
                   "median_ms": _round(statistics.median(e["samples_ms"])), "n": len(e["samples_ms"]),
                   **({"run_medians_ms": e["run_medians_ms"]} if len(runs) > 1 else {})}
             for cid, e in sorted(pooled.items())}
    all_recs = [r for records, _, _ in runs for r in records]
    cann = next((r["cann_version"] for r in measured_records(all_recs, backend, target.family)
                 if r.get("cann_version")), None) or first_identity.get("cann_version")
    libs = {role: p for role, p in (first_identity.get("libraries") or {}).items() if isinstance(p, str)}
    measured = {"backend": backend, "family": target.family, "cann_version": cann or None,
                "library_sha256": described[0]["library_sha256"],
                "timings": sorted({c["timing"] for c in cases.values()}), "run": runs[0][2],
                "started": first_identity.get("started"), "suite_commit": first_identity.get("suite_commit"),
                "runs": described, "library_root": library_root(first_identity), "libraries": libs,
                "switches": {k: str(v) for k, v in (first_identity.get("switches") or {}).items()
                             if k.startswith(SWITCHES)}}
    t = {"backend": target.backend, "family": target.family,
         **({"cann_version": target.cann_version} if target.cann_version else {})}
    names = ", ".join(r for _, _, r in runs)
    return {"kind": bl.PERF_KIND, "version": 2, "target": t,
            "note": f"launch times measured by {names}; review the tolerances before gating on it",
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
