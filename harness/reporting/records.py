"""Case records: the one data model behind results.jsonl, the gate, and every report.

A record is a JSON object per case. The keys every consumer relies on:

    case_id, nodeid, op, group, dtype, kind, family, soc_name, cann_version, library_sha256
    {path: sha256}, status, raw_status, reason, waiver, attempts, standard, metrics [{name, value,
    threshold, rule}], worst, phase1 {status, expected, check, message}, timings {golden, inputs,
    run, phase1, phase2, compare, total} (seconds; `golden` covers drawing the inputs and the
    golden, or reading both from --golden-cache; `inputs` the scenario's change and the argument
    list), error, repro, and `backend`: the backend properties (every library path).

`status` is a Status name (status.py); `raw_status` what the case itself did before any waiver.
Older records (pytest outcome words in `outcome`, no `status`) are read through `status_of`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..judge import compare
from ..core import jsonsafe
from ..core.jsonsafe import jsonable
from ..core.status import Status, parse

RESULTS = "results.jsonl"
MANIFEST = "manifest.json"


class ResultsError(Exception):
    """A results directory that cannot be read. str() is one line naming the file (and line)."""


def status_of(rec: dict) -> Status:
    return parse(rec.get("status") or rec.get("outcome") or "MISSING")


def raw_status_of(rec: dict) -> Status:
    return parse(rec.get("raw_status") or rec.get("status") or rec.get("outcome") or "MISSING")


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
    """The case's data dtype; older records only have it as the first id parameter."""
    if rec.get("dtype"):
        return rec["dtype"]
    cid = rec.get("case_id", "")
    return cid.split("[", 1)[1].split("-", 1)[0].rstrip("]") if "[" in cid else "?"


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
    if not isinstance(rec, dict) or not isinstance(rec.get("case_id"), str) or not rec["case_id"]:
        return None, "a record needs a 'case_id'"
    try:                      # every reader sorts and counts by status: a bad one would stop them all
        status_of(rec), raw_status_of(rec)
    except ValueError as e:
        return None, f"field 'status': {e}"
    return rec, ""


def read_records(path: Path, bad: list[str] | None = None) -> list[dict]:
    """The records of a results.jsonl file; ResultsError names the file and line of a bad one.
    With `bad` (a list), a bad line is added to it as 'file:line: why' and skipped instead, so
    that one torn line does not cost the file's other records."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ResultsError(f"{path}: cannot read ({e.strerror})") from None
    out = []
    for n, line in enumerate(data.splitlines(), 1):      # bytes: only \n and \r end a line
        if not line.strip():
            continue
        rec, why = _parse_record(line)
        if rec is None:
            if bad is None:
                raise ResultsError(f"{path}:{n}: {why}")
            bad.append(f"{path}:{n}: {why}; that line is left out, the file's other records are kept")
            continue
        out.append(rec)
    return out


def load_results(directory: Path, bad: list[str] | None = None) -> list[dict]:
    directory = Path(directory)
    if not directory.is_dir():
        raise ResultsError(f"{directory}: no such report directory")
    path = directory / RESULTS
    if not path.exists():
        raise ResultsError(f"{path}: no results file (is {directory} a report directory?)")
    return read_records(path, bad)


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
    # one case per line: readable and diffable, and encoded by json's C encoder (indent= falls
    # back to the pure-Python one: 0.1 s for a 3,000-case run, before its first case)
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


def missing_records(manifest: dict | None, records: list[dict], identity: dict | None = None,
                    stopped: str | None = None) -> list[dict]:
    """A MISSING record for each case the manifest assigned to this run that has no record.
    stopped: the signal that stopped the run and when, if one did (the reason says so)."""
    if not manifest:
        return []
    why = f"the run was stopped by {stopped} before it started" if stopped else "process killed or case lost"
    seen = {r["case_id"] for r in records}
    ident = identity or {}
    return [{"case_id": a["case_id"], "nodeid": a.get("nodeid"), "op": a.get("op", a["case_id"].split(".")[0]),
             "dtype": a.get("dtype"), "family": ident.get("family") or manifest["requested"].get("family"),
             "backend": ident.get("backend") or manifest["requested"].get("backend"),
             "status": Status.MISSING.value, "raw_status": Status.MISSING.value,
             "reason": f"selected for this run but no result was recorded ({why})"}
            for a in manifest.get("assigned", []) if a["case_id"] not in seen]


# ------------------------------------------------------------------ building a record

# runner Outcome words -> (what the case did, what it means)
_OUTCOME = {"passed": (Status.PASS, Status.PASS), "failed": (Status.FAIL, Status.FAIL),
            "skipped": (Status.SKIP, Status.SKIP),
            "xfailed": (Status.FAIL, Status.EXPECTED_FAIL),         # a case file's known deviation did deviate
            "xpassed": (Status.PASS, Status.UNEXPECTED_PASS)}       # ... or did not: visible, never a plain PASS


def classify(outcome: str, attempts: list[str] | None = None) -> tuple[Status, Status]:
    """(raw_status, status) of a runner outcome; a pass after failed attempts is a FLAKE."""
    raw, status = _OUTCOME.get(outcome, (parse(outcome), parse(outcome)))
    if raw == Status.PASS and attempts and any(parse(a).is_failure for a in attempts[:-1]):
        status = Status.FLAKE
    return raw, status


def classify_worker(worker_record: dict, attempts: list[str] | None = None) -> tuple[Status, Status]:
    """(raw_status, status) of a case worker's record: the runner's outcome word when it judged
    the case, else the status the supervisor gave it (CRASH, TIMEOUT, MISSING)."""
    word = worker_record.get("outcome")
    if word in _OUTCOME:
        return classify(word, attempts)
    status = parse(worker_record.get("status") or "FAIL")
    return classify(status.value if word != "error" else Status.FAIL.value, attempts)


# What every record says about what produced it. The backend's other properties (its environment,
# every library path, how set_env.sh was applied, ...) belong to the run: summary.json's
# "properties". Repeated in each record they were 40 % of results.jsonl.
RECORD_IDENTITY = ("backend", "library", "device", "soc_name", "family", "simulated", "backend_version",
                   "software_cann", "root", "opapi")


def record_identity(props: dict) -> dict:
    return {k: props[k] for k in RECORD_IDENTITY if k in props}


def from_outcome(outcome: dict, *, nodeid: str, case_facts: dict, props: dict, library_sha256: dict,
                 repro: str, attempts: list[str] | None = None, timings: dict | None = None) -> dict:
    """The results.jsonl record of one case: the case worker's record (runner Outcome.to_dict(),
    or the supervisor's CRASH/TIMEOUT/MISSING record) plus identity."""
    raw, status = classify_worker(outcome, attempts)
    verdict = outcome.get("verdict") or None
    # what the worker's record says beyond these keys (message, device resets and recovery, a
    # crash's signal and stack, ...) is kept as it came; the dump is completed by the caller
    rec = {k: v for k, v in outcome.items() if k != "dump"}
    rec |= {
        "case_id": outcome["case_id"], "nodeid": nodeid, "op": outcome.get("op"), **case_facts,
        "family": outcome.get("family") or props.get("family") or "", "soc_name": props.get("soc_name", ""),
        "cann_version": props.get("backend_version", ""),
        "status": status.value, "raw_status": raw.value, "reason": outcome.get("reason", ""),
        "attempts": attempts or [raw.value],
        "standard": (verdict or {}).get("standard"), "metrics": metrics_of(verdict),
        "worst": (verdict or {}).get("worst"),
        "phase1": {"status": outcome.get("status"), "expected": outcome.get("expected_status"),
                   "check": outcome.get("check"), "message": outcome.get("message", "")},
        "phase2_status": outcome.get("phase2_status"), "sync_status": outcome.get("sync_status"),
        "timings": {**(timings or {}), "total": outcome.get("duration_s")},
        "error": outcome.get("reason", "") if raw.is_failure else "",
        "repro": repro if status != Status.PASS else "",
        "library_sha256": library_sha256,
        "note": outcome.get("note"), "problems": outcome.get("problems") or [],
        # what produced it (the run's full backend properties are in summary.json), and the full verdict
        "backend": record_identity(outcome.get("backend") or props), "verdict": verdict,
        # the pytest-era word, kept for older readers: "error" for a case that raised, crashed or hung
        "outcome": outcome.get("outcome") or ("error" if raw.is_failure and raw != Status.MISSING else None),
    }
    if status == Status.SKIP:
        rec["skip_reason"] = outcome.get("reason", "")
    if outcome.get("outcome") in ("xfailed", "xpassed"):
        rec["waiver"] = {"kind": "deviation", "reason": outcome.get("reason", "")}
    return rec
