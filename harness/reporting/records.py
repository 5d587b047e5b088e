"""Case records: the one data model behind results.jsonl, the gate, and every report.

A record is a JSON object per case, built by `build` alone and described field by field in
record.schema.json (tests/test_record_schema.py holds real records to it). `status` is a Status
name (core/status.py) decided by classify(); `raw_status` is what the case itself did;
`phase1.status` the integer phase 1 returned.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..core import jsonsafe
from ..core.jsonsafe import jsonable
from ..core.status import Status, parse
from ..execution import journal
from ..judge import compare
from ..judge.outcome import DIAGNOSTIC_KEYS, Outcome
from ..target import UNKNOWN, Target
from .classify import classify
from .record_type import FACT_KEYS, CaseFacts, Record

RESULTS = "results.jsonl"
MANIFEST = "manifest.json"


class ResultsError(Exception):
    """A results directory that cannot be read. str() is one line naming the file (and line)."""


def status_of(rec: dict) -> Status:
    return parse(rec.get("status") or "MISSING")


def raw_status_of(rec: dict) -> Status:
    return parse(rec.get("raw_status") or rec.get("status") or "MISSING")


def _prop(rec: dict, key: str) -> str:
    """A top-level field, else the backend property of that name (records carry both)."""
    if rec.get(key):
        return str(rec[key])
    backend = rec.get("backend")
    return str(backend.get(key) or "") if isinstance(backend, dict) else ""


def family_of(rec: dict) -> str:
    return _prop(rec, "family")


def backend_of(rec: dict) -> str:
    backend = rec.get("backend")
    return str(backend.get("backend", "")) if isinstance(backend, dict) else str(backend or "")


def dtype_of(rec: dict) -> str:
    """The case's data dtype (a record of a case the run knew nothing of has none: '?')."""
    return rec.get("dtype") or "?"


# ------------------------------------------------------------------ metrics against thresholds

def metrics_of(verdict: dict | None) -> list[dict]:
    """[{name, value, threshold, rule}] for every thresholded metric of a verdict (empty without one)."""
    if not verdict:
        return []
    metrics, thresholds = verdict.get("metrics") or {}, verdict.get("thresholds") or {}
    out = []
    for name, thr_key, rule in compare.limits(verdict.get("standard")):
        if name not in metrics:
            continue
        threshold = thresholds.get(thr_key, 0) if thr_key else 0     # allclose: every element within tolerance
        out.append({"name": name, "value": metrics[name], "threshold": threshold, "rule": rule})
    return out


def threshold_ratio(metric: dict) -> float | None:
    """How much of its threshold a metric uses: > 1 fails for '<'/'<=' rules. For '>=' rules
    (matched ratio) the shortfall is mapped the same way: (1 - value) / (1 - threshold)."""
    v, t = metric.get("value"), metric.get("threshold")
    if not isinstance(v, (int, float)) or not isinstance(t, (int, float)):
        return None
    if metric.get("rule") == ">=":
        v, t = 1 - v, 1 - t
    if t == 0:
        return 0.0 if v == 0 else math.inf
    return v / t


# ------------------------------------------------------------------ reading and writing

def dumps(rec: dict) -> str:
    return jsonsafe.dumps(rec)


def _parse_record(line: bytes) -> tuple[dict | None, str]:
    """(the record of one results.jsonl line, or None and why not)."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as e:
        # a run killed mid-write leaves a torn last line
        return None, f"not a JSON record ({e.msg})"
    return _checked(rec)


def _checked(rec) -> tuple[dict | None, str]:
    """(`rec`, if every reader can read it, or None and why not)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("case_id"), str) or not rec["case_id"]:
        return None, "a record needs a 'case_id'"
    try:                      # every reader sorts and counts by status: a bad one would stop them all
        status_of(rec), raw_status_of(rec)
    except ValueError as e:
        return None, f"field 'status': {e}"
    why = _perf_shape(rec.get("perf"))       # every perf reader (baseline --perf, the gates, the summary) reads it
    if why:
        return None, why
    return rec, ""


def _perf_shape(perf) -> str:
    """Why a record's `perf` cannot be read ('' when it can): an object (or null) whose sample lists are lists."""
    if perf is None:
        return ""
    if not isinstance(perf, dict):
        return f"field 'perf': must be an object or null, got {type(perf).__name__}"
    for key in ("samples_ms", "remeasured_ms", "remeasured_base_ms"):
        if perf.get(key) is not None and not isinstance(perf[key], list):
            return f"field 'perf.{key}': must be a list of launch times, got {type(perf[key]).__name__}"
    return ""


def read_records(path: Path, bad: list[str] | None = None) -> list[dict]:
    """The records of a results.jsonl file; ResultsError names the file and line of a bad one.
    With `bad` (a list), a bad line is added to it as 'file:line: why' and skipped instead, so
    that one torn line does not cost the file's other records."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ResultsError(f"{path}: cannot read ({e.strerror})") from None
    lines = enumerate(data.splitlines(), 1)      # bytes: only \n and \r end a line
    return _readable(((f"{path}:{n}", *_parse_record(line)) for n, line in lines if line.strip()), bad,
                     "that line is left out, the file's other records are kept")


def _readable(items, bad: list[str] | None, left_out: str) -> list[dict]:
    """The records of `items`, each (where, the record or None, why not): an unreadable one raises
    ResultsError naming where, or with `bad` (a list) is named there and left out."""
    out = []
    for where, rec, why in items:
        if rec is None:
            if bad is None:
                raise ResultsError(f"{where}: {why}")
            bad.append(f"{where}: {why}; {left_out}")
            continue
        out.append(rec)
    return out


def load_results(directory: Path, bad: list[str] | None = None) -> list[dict]:
    directory = Path(directory)
    if not directory.is_dir():
        raise ResultsError(f"{directory}: no such report directory")
    path = directory / RESULTS
    if path.exists():
        return read_records(path, bad)
    if unfinished(directory):
        return _unfinished_run(directory, bad)
    raise ResultsError(f"{path}: no results file and no journal (is {directory} a report directory?)")


def unfinished(directory: Path) -> bool:
    """A run's report directory without results.jsonl yet, with journals: still running, or killed."""
    return not (Path(directory) / RESULTS).exists() and (Path(directory) / journal.DIRNAME).is_dir()


def _unfinished_run(directory: Path, bad: list[str] | None) -> list[dict]:
    """The records of a run that has not written results.jsonl (killed before its end, or still
    running), read from its journals as its end would have made them: the last record of every
    case that finished, MISSING for a case that started and never finished, or that the manifest
    assigned and no process started. A journal line that cannot be read is named in `bad` (its
    case, where the run knows it, is one of the MISSING); a record no reader can read raises
    ResultsError, or is named in `bad` and left out."""
    state = journal.scan(directory)
    manifest = load_manifest(directory)
    asked = (manifest or {}).get("requested") or {}
    target = UNKNOWN.requested(str(asked.get("backend") or ""), asked.get("family"))
    where = f"{directory / journal.DIRNAME}: a record of the journals"
    out = _readable(((where, *_checked(rec)) for rec in state.records()), bad, "it is left out")
    if bad is not None:
        bad += [f"{w}: an unreadable journal line (damaged, or cut short by a kill); skipped" for w in state.unreadable]
    out += unfinished_records(state.unfinished, target)
    return out + missing_records(manifest, out, target)


def load_manifest(directory: Path) -> dict | None:
    path = Path(directory) / MANIFEST
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: not valid JSON ({getattr(e, 'msg', None) or e.reason})") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{path}: expected an object with shard, requested, selected, assigned")
    return doc


def write_manifest(directory: Path, selected: list[dict], assigned: list[dict], shard: tuple[int, int] | None,
                   requested: dict) -> Path:
    """What this run was asked to do: every case selected before sharding, the ones this shard
    runs (each {case_id, nodeid}), and the identity the command line asked for (backend, family)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # one case per line: readable and diffable, and encoded by json's C encoder (indent= falls back
    # to the pure-Python one, which a large run would pay before its first case: benchmarks/NOTES.md)
    def cases(entries: list[dict]) -> str:
        return "[\n  " + ",\n  ".join(json.dumps(e) for e in entries) + "\n ]" if entries else "[]"
    text = (f'{{\n "shard": {json.dumps(list(shard) if shard else None)},\n "requested": {json.dumps(requested)},\n'
            f' "selected": {cases(selected)},\n "assigned": {cases(assigned)}\n}}\n')
    path = directory / MANIFEST
    path.write_text(text, encoding="utf-8")
    return path


def selected_ids(manifest: dict | None) -> list[str]:
    """The case ids a run's manifest says were selected (every shard's, before sharding)."""
    return [a["case_id"] for a in (manifest or {}).get("selected") or [] if isinstance(a, dict) and "case_id" in a]


# ------------------------------------------------------------------ building a record

SCHEMA = 2       # the record layout (record.schema.json); records without the key are older

# What every record says about what produced it. The backend's other properties (its environment,
# every library path, how set_env.sh was applied, ...) belong to the run: summary.json's
# "properties" (repeated in each record they would be a large share of results.jsonl: benchmarks/NOTES.md).
RECORD_IDENTITY = ("backend", "library", "device", "soc_name", "family", "simulated", "backend_version",
                   "software_cann", "root", "opapi", "timing")


def record_identity(target: Target) -> dict:
    wire = target.to_wire()
    return {k: wire[k] for k in RECORD_IDENTITY if k in wire}


def facts_of(case, nodeid: str, deviation: str | None = None) -> CaseFacts:
    """What a record says about its case: enough to select and group cases without parsing ids."""
    facts = CaseFacts(case_id=case.id, nodeid=nodeid, op=case.op.name, group=case.group, kind=case.kind,
                      tier=case.tier, dtype=case.dtype.name,
                      index_dtype=case.index_dtype.name if case.index_dtype else None, shape=list(case.shape),
                      attrs=jsonable(case.call_attrs), layouts=dict(case.layouts), formats=dict(case.formats),
                      check=case.check, note=case.note, deviation=deviation)
    if (case.perf or {}).get("tolerance") is not None:
        facts["perf_tolerance"] = case.perf["tolerance"]
    if case.atk_perf is not None:
        facts["atk_perf"] = case.atk_perf
    return facts


def facts_in(rec: dict) -> dict:
    """The case facts a record carries (facts_of's keys), to build another record of the same case."""
    return {k: rec[k] for k in FACT_KEYS if k in rec}


@dataclass(frozen=True)
class Context:
    """Where a record was made: the run's target and what the reporting layer adds."""
    target: Target
    library_sha256: dict = field(default_factory=dict)
    repro: str = ""
    attempts: tuple = ()             # every attempt's raw status (reruns), the first one first
    baseline: object = None          # the run's Baseline, or None


def build(outcome: Outcome, facts: dict, ctx: Context) -> Record:
    """The results.jsonl record of one case: the one constructor of every record (a judged case, a
    crash, a hang, a case not run, a case a stop or a killed process left MISSING, a case file that
    does not load). Its status is decided here, by classify() alone."""
    run = ctx.target
    raw = outcome.raw
    attempts = list(ctx.attempts) or [raw.value]
    decision = classify(raw, outcome.reason, case_id=facts["case_id"], attempts=attempts,
                        deviation=facts.get("deviation"), backend=run.backend, baseline=ctx.baseline)
    verdict = outcome.verdict
    rec: Record = {
        "schema": SCHEMA, "nodeid": None, **facts,
        "family": outcome.family or run.family or "", "soc_name": run.soc_name, "cann_version": run.version,
        "status": decision.status.value, "raw_status": raw.value, "reason": decision.reason,
        "raw_reason": outcome.reason, "waiver": decision.waiver, "attempts": attempts,
        "phase1": {"status": outcome.phase1_status, "expected": outcome.expected_status,
                   "check": facts.get("check"), "message": outcome.message,
                   "workspace_size": outcome.workspace_size},
        "phase2_status": outcome.phase2_status, "sync_status": outcome.sync_status,
        "standard": (verdict or {}).get("standard"), "metrics": metrics_of(verdict),
        "worst": (verdict or {}).get("worst"), "verdict": verdict, "digests": dict(outcome.digests),
        "timings": {**outcome.timings, "total": outcome.duration_s}, "started_at": outcome.started_at,
        "launch_s": outcome.launch_s, "device_s": outcome.device_s,
        "launches": outcome.launches, "launches_note": outcome.launches_note,
        "problems": list(outcome.problems),
        "repro": ctx.repro if decision.status is not Status.PASS else "",
        "library_sha256": dict(ctx.library_sha256),
        "backend": record_identity(outcome.backend or run),     # what ran the case, where it said
        "worker": outcome.worker, "device_resets": outcome.device_resets,
        **{k: outcome.diagnostics[k] for k in DIAGNOSTIC_KEYS if k in outcome.diagnostics},
        "dump": outcome.dump, "perf": outcome.perf, "determinism": outcome.determinism,
    }
    return rec


def regated(rec: dict, baseline) -> dict:
    """A finished record judged again against `baseline` (the offline gate): the same decision as a
    run makes, from the record's own fields."""
    decision = classify(raw_status_of(rec), rec.get("raw_reason", rec.get("reason", "")), case_id=rec["case_id"],
                        attempts=rec.get("attempts") or (), deviation=rec.get("deviation"),
                        backend=backend_of(rec), baseline=baseline)
    return {**rec, "status": decision.status.value, "reason": decision.reason, "waiver": decision.waiver}


def not_run(case_facts: dict, raw: Status, reason: str, ctx: Context) -> dict:
    """The record of a case that produced no outcome of its own: MISSING (selected, never finished),
    a crash of the pytest process running it, or a harness or case-file error around it."""
    return build(Outcome(case_facts["case_id"], case_facts.get("op") or "", raw, reason), case_facts, ctx)


def missing_records(manifest: dict | None, records: list[dict], target: Target,
                    stopped: str | None = None) -> list[dict]:
    """A MISSING record for each case the manifest assigned to this run that has no record.
    stopped: the signal that stopped the run and when, if one did (the reason says so)."""
    if not manifest:
        return []
    why = f"the run was stopped by {stopped} before it started" if stopped else "process killed or case lost"
    seen = {r["case_id"] for r in records}
    ctx = Context(target.requested(manifest["requested"].get("backend", ""), manifest["requested"].get("family")))
    return [not_run(facts_of_entry(a), Status.MISSING,
                    f"selected for this run but no result was recorded ({why})", ctx)
            for a in manifest.get("assigned", []) if a["case_id"] not in seen]


def facts_of_entry(entry: dict) -> dict:
    """Case facts from a manifest entry (facts_of's keys) or a journal's start entry (id, node id, op)."""
    facts = facts_in(entry)
    facts.setdefault("op", entry["case_id"].split(".")[0])
    return facts


def unfinished_records(unfinished: dict, target: Target) -> list[dict]:
    """MISSING records of the cases the journals saw start and never finish (journal.State.unfinished:
    case id -> (start entry, why))."""
    return [not_run(facts_of_entry(start), Status.MISSING, why, Context(target)) for start, why in unfinished.values()]
