"""The report data model: one or more runs (identity + records) turned into what every writer shows.

summary.md, report.html and junit.xml are all written from a Report, so they cannot disagree.
"""
from __future__ import annotations

import datetime as _dt
import functools
import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from . import records as rec_mod
from .records import dtype_of, family_of, status_of
from .utilisation import consistent as utilisation_consistent
from ..core.status import ORDER, Status

# What a report lists as a problem, worst first; PASS and SKIP are only counted.
LISTED = tuple(s for s in ORDER if s not in (Status.PASS, Status.SKIP))
CONFIRM_JSON = "confirm/confirm.json"     # written by `triage --confirm` into the run directory


@dataclass
class Run:
    """One report directory: what produced it and what it found."""
    directory: str
    identity: dict
    records: list[dict]
    manifest: dict | None = None
    duration_s: float | None = None     # summary.json's: the run's wall time, to the millisecond

    @property
    def wall_s(self) -> float | None:
        """The run's wall time: its duration_s, else its identity's started..ended (whole seconds)."""
        return self.duration_s if _positive(self.duration_s) else run_wall_s(self.identity)

    @property
    def label(self) -> str:
        ident = self.identity
        shard = (self.manifest or {}).get("shard")
        return f"{ident.get('backend', '?')}-{ident.get('family') or 'any'}" + (f" shard {shard[0]}/{shard[1]}" if shard else "")


@dataclass
class Problem:
    """Something wrong with the set of runs (not with a case): missing, duplicated, wrong identity."""
    kind: str          # missing | duplicate | identity | shards | unreadable | job | no cases | stopped
    message: str
    blocking: bool = True      # False: listed, but the merge does not fail on it (a job that selected no cases)


@dataclass
class Report:
    title: str
    runs: list[Run]
    records: list[dict]
    problems: list[Problem] = field(default_factory=list)
    gate_lines: list[str] = field(default_factory=list)
    changes: dict | None = None           # night-over-night comparison (compare.py), when given
    # a run stopped by a signal: why its plots and causes are left out (they cost seconds a runner's
    # grace period does not give); `python -m harness.reporting render` draws them later
    brief: str | None = None
    # the History section (harness/history/section.py) of a run or merge given --db: what the results
    # store says of these families over the nights before; None without --db
    history: dict | None = None

    # ---------------------------------------------------------------- derived views

    @functools.cached_property      # asked for once per matrix cell by the writers
    def families(self) -> list[str]:
        return sorted({family_of(r) or "any" for r in self.records})

    @property
    def totals(self) -> Counter:
        return Counter(status_of(r) for r in self.records)

    def ordered_totals(self) -> list[tuple[Status, int]]:
        t = self.totals
        return [(s, t[s]) for s in ORDER if t[s]]

    def matrix(self) -> list[dict]:
        """Rows of the operator x dtype x family matrix: {op, dtype, cells: {family: {status: n}}, worst}."""
        cells: dict = defaultdict(lambda: defaultdict(Counter))
        for r in self.records:
            cells[(r.get("op", "?"), dtype_of(r))][family_of(r) or "any"][status_of(r)] += 1
        rows = []
        for (op, dtype) in sorted(cells):
            row = {"op": op, "dtype": dtype, "cells": {}}
            for fam in self.families:
                counts = cells[(op, dtype)].get(fam, Counter())
                row["cells"][fam] = {"counts": [(s, counts[s]) for s in ORDER if counts[s]],
                                     "worst": worst(counts)}
            rows.append(row)
        return rows

    def causes(self):
        """The failures' causes (harness/triage: signatures, then the shortest predicate over the
        cases' facts), worked out once for the records the report holds now (a gate replaces them)."""
        key = (id(self.records), len(self.records))
        cached = self.__dict__.get("_causes")
        if cached is None or cached[0] != key:
            from ..triage import triage
            cached = self.__dict__["_causes"] = (key, triage([] if self.brief else self.records))
        return cached[1]

    def confirmations(self) -> dict[tuple[str, str], dict]:
        """What `triage --confirm` found for the causes (each run directory's confirm/confirm.json),
        by (signature, predicate text): a confirmation whose cause is no longer the report's is not shown."""
        import json
        out: dict[tuple[str, str], dict] = {}
        for run in self.runs:
            path = Path(run.directory) / CONFIRM_JSON
            try:
                docs = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
            except (OSError, ValueError):
                continue            # a torn or foreign file: the causes stand without it
            for d in docs if isinstance(docs, list) else []:
                if isinstance(d, dict) and isinstance(d.get("signature"), str) and isinstance(d.get("predicate"), str):
                    out[(d["signature"], d["predicate"])] = d
        return out

    def listed(self) -> list[dict]:
        """Every record that is not a plain PASS or SKIP, worst status first."""
        rank = {s: i for i, s in enumerate(LISTED)}
        picked = [r for r in self.records if status_of(r) in rank]
        return sorted(picked, key=lambda r: (rank[status_of(r)], r.get("op", ""), r["case_id"]))

    def slowest(self, n: int = 15) -> list[dict]:
        return sorted((r for r in self.records if _total_time(r) is not None),
                      key=lambda r: -_total_time(r))[:n]

    def deviations(self) -> list[dict]:
        """Documentation deviations the run looked at: each case-file note with how its cases fared."""
        by_note: dict = defaultdict(Counter)
        for r in self.records:
            if r.get("note"):
                by_note[r["note"]][status_of(r)] += 1
        return [{"note": note, "counts": [(s, c[s]) for s in ORDER if c[s]], "found": any(s.is_failure or s == Status.EXPECTED_FAIL for s in c)}
                for note, c in sorted(by_note.items())]

    def metric_points(self) -> dict[str, list[tuple[str, str, float]]]:
        """op -> [(dtype, metric name, value/threshold)] for every judged metric."""
        out: dict = defaultdict(list)
        for r in self.records:
            for m in r.get("metrics") or rec_mod.metrics_of(r.get("verdict")):
                ratio = rec_mod.threshold_ratio(m)
                if ratio is not None:
                    out[r.get("op", "?")].append((dtype_of(r), m["name"], ratio))
        return dict(sorted(out.items()))

    def perf_points(self) -> dict[str, list[dict]]:
        """op -> every measured case whose bytes are known: {family, bytes (read + written), median_ms,
        gbps: bytes / median time, limit_gbps and limit_source: the record's perf.limit (None, "" if
        it names none), limit_bytes: which bytes the limit counts ("read+written", or "written"),
        least_ms: those bytes over the limit (the least time a launch can take; None without a
        limit), timing: what timed it (perf.timing)}."""
        out: dict = defaultdict(list)
        for r in self.records:
            perf = r.get("perf") or {}
            moved, median = bytes_moved(perf), perf.get("median_ms")
            if moved and _positive(median):
                limit = perf.get("limit") if isinstance(perf.get("limit"), dict) else {}
                gbps = limit["gbps"] if _positive(limit.get("gbps")) else None
                counts = "written" if limit.get("bytes") == "written" else "read+written"
                counted = (perf.get("bytes") or {}).get("written") if counts == "written" else moved
                least = (limit["least_ms"] if _positive(limit.get("least_ms")) else
                         counted / (gbps * 1e9) * 1e3 if gbps and _positive(counted) else None)
                out[r.get("op", "?")].append({"family": family_of(r) or "any", "bytes": moved, "median_ms": median,
                                              "gbps": moved / median / 1e6, "limit_gbps": gbps,
                                              "limit_source": str(limit.get("source") or ""), "limit_bytes": counts,
                                              "least_ms": least, "timing": str(perf.get("timing") or "unknown")})
        return dict(sorted(out.items()))

    def device_use(self) -> list[dict]:
        """Per run and device (the record's backend.device): {run, device, cases, busy_s, wall_s,
        utilisation, sources}. busy_s: the cases' device time summed (device_time()); wall_s: the
        run's (Run.wall_s); utilisation = busy / wall (None without a wall, and None with `inconsistent`
        saying why where busy exceeds wall: utilisation.consistent)."""
        runs = {r.directory: r for r in self.runs}
        busy: dict = defaultdict(lambda: {"cases": 0, "busy_s": 0.0, "sources": Counter()})
        for r in self.records:
            run = runs.get(r.get("_run")) or (self.runs[0] if len(self.runs) == 1 else None)
            spent = device_time(r)
            if run is None or spent is None:
                continue
            backend = r.get("backend") if isinstance(r.get("backend"), dict) else {}
            row = busy[(run.directory, str(backend.get("device", "?")))]
            row["cases"] += 1
            row["busy_s"] += spent[0]
            row["sources"][spent[1]] += 1
        out = []
        for (directory, device), row in sorted(busy.items()):
            wall = runs[directory].wall_s
            share, inconsistent = utilisation_consistent(row["busy_s"], wall)
            out.append({"run": runs[directory].label, "device": device, "cases": row["cases"], "busy_s": row["busy_s"],
                        "wall_s": wall, "utilisation": share, "sources": dict(row["sources"].most_common()),
                        **({"inconsistent": inconsistent} if inconsistent else {})})
        return out


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def bytes_moved(perf: dict) -> float | None:
    """perf.bytes as one number: read + written ({read, written}), or the number itself."""
    moved = perf.get("bytes")
    if isinstance(moved, dict):
        read, written = moved.get("read"), moved.get("written")
        moved = read + written if isinstance(read, (int, float)) and isinstance(written, (int, float)) else None
    return float(moved) if _positive(moved) else None


def device_time(rec: dict) -> tuple[float, str] | None:
    """(seconds the case kept its device busy, where that figure comes from): the timed launches
    of a perf run (perf.median_ms x perf.n, as its timing names them), else the phase 2 + sync
    wall time every judged case has (launch_s). None when the record has neither."""
    perf = rec.get("perf") or {}
    n = perf.get("n") or len(perf.get("samples_ms") or [])
    if _positive(perf.get("median_ms")) and _positive(n):
        return perf["median_ms"] * n / 1000, f"perf ({perf.get('timing') or 'unknown timing'})"
    launch = rec.get("launch_s")
    if _positive(launch):
        return float(launch), "launch_s (phase 2 + sync)"
    return None


def run_wall_s(identity: dict) -> float | None:
    """Seconds from the run's start to its end (identity started/ended, ISO 8601), if both are known."""
    try:
        span = _dt.datetime.fromisoformat(identity["ended"]) - _dt.datetime.fromisoformat(identity["started"])
    except (KeyError, TypeError, ValueError):
        return None
    return span.total_seconds() if span.total_seconds() > 0 else None


def median_of(values) -> float | None:
    nums = [v for v in values if _positive(v)]
    return statistics.median(nums) if nums else None


def worst(counts: Counter) -> Status | None:
    return next((s for s in ORDER if counts.get(s)), None)


def _total_time(r: dict) -> float | None:
    t = (r.get("timings") or {}).get("total", r.get("duration_s"))
    return float(t) if isinstance(t, (int, float)) else None


def load_run(directory: Path, bad: list[str] | None = None) -> Run:
    """A report directory as written by the plugin: results.jsonl, summary.json (identity), manifest.json.
    With `bad` (a list), what is unreadable beyond the results file itself (a bad line of it, a
    summary.json or manifest.json that is not JSON) is added to it, one line each, and left out
    instead of stopping the load: a merge keeps every record it can read."""
    import json
    directory = Path(directory)
    records = rec_mod.load_results(directory, bad)
    identity, duration = {}, None
    summary = directory / "summary.json"
    if summary.exists():
        try:
            doc = json.loads(summary.read_text(encoding="utf-8"))
            identity = doc.get("identity") if isinstance(doc, dict) else None
            identity = identity if isinstance(identity, dict) else {}
            duration = doc.get("duration_s") if _positive(doc.get("duration_s")) else None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            why = f"{summary}: not valid JSON ({getattr(e, 'msg', None) or e.reason})"
            if bad is None:
                raise rec_mod.ResultsError(why) from None
            bad.append(why + "; the run's identity is taken from a record")
    if not identity and records:       # an interrupted run has results but no summary: use a record's facts
        b = records[0].get("backend") if isinstance(records[0].get("backend"), dict) else {}
        identity = {"backend": b.get("backend", ""), "family": b.get("family", ""), "soc_name": b.get("soc_name", ""),
                    "libraries": {}, "library_sha256": records[0].get("library_sha256") or {}}
    try:
        manifest = rec_mod.load_manifest(directory)
    except rec_mod.ResultsError as e:
        if bad is None:
            raise
        bad.append(f"{e}; what it selected is not checked")
        manifest = None
    return Run(str(directory), identity, records, manifest, duration)
