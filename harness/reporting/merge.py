"""Merge report directories from several shards, machines and SoC families into one report.

It reports what a sweep can lose or mix up: a case selected but in no shard's results (MISSING),
a case recorded twice, a family or shard that never reported, and a run whose identity is not the
one it was asked for (its own manifest.json, or the sweep manifest: backend, SoC families,
library sha256).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import yaml

from . import records as rec_mod
from ..target import UNKNOWN
from .identity import opapi_hash
from .runs import Problem, Report, Run, load_run
from ..core.status import Status


class ManifestError(Exception):
    """A bad sweep manifest; str() is one line naming the file and field."""


def load_sweep_manifest(path: Path) -> dict:
    """backend (str), families (list), shards (int), library_sha256 (str, optional), soc_names ({family: name})."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ManifestError(f"{path}: cannot read the sweep manifest ({e})") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{path}: expected a mapping with backend, families, shards")
    types = {"backend": str, "families": list, "shards": int, "library_sha256": str, "soc_names": dict, "jobs": list}
    for key, value in doc.items():
        if key not in types:
            raise ManifestError(f"{path}: field {key!r}: unknown (known: {', '.join(types)})")
        if not isinstance(value, types[key]):
            raise ManifestError(f"{path}: field {key!r}: expected {types[key].__name__}, got {value!r}")
    for i, job in enumerate(doc.get("jobs") or []):
        _check_job(path, i, job)
    return doc


def _check_job(path: Path, i: int, job) -> None:
    """jobs: what each job of the sweep's matrix exited with ({family, shard, exit}), written by the sweep."""
    if not isinstance(job, dict):
        raise ManifestError(f"{path}: field 'jobs[{i}]': expected a mapping with family, shard, exit, got {job!r}")
    for key, kind in (("family", str), ("shard", int), ("exit", int)):
        if not isinstance(job.get(key), kind) or isinstance(job.get(key), bool):
            raise ManifestError(f"{path}: field 'jobs[{i}].{key}': expected {kind.__name__}, got {job.get(key)!r}")


def _key(rec: dict) -> tuple[str, str]:
    return rec_mod.family_of(rec) or "any", rec["case_id"]


def _identity_problems(run: Run, sweep: dict | None, majority_hash: str | None) -> list[Problem]:
    ident, out = run.identity, []
    asked = dict((run.manifest or {}).get("requested") or {})
    for key in ("backend", "family"):
        if asked.get(key) and ident.get(key) and asked[key] != ident[key]:
            out.append(Problem("identity", f"{run.directory}: ran {key} {ident[key]!r}, its manifest asked for {asked[key]!r}"))
    sweep = sweep or {}
    if sweep.get("backend") and ident.get("backend") != sweep["backend"]:
        out.append(Problem("identity", f"{run.directory}: backend {ident.get('backend')!r}, the sweep asked for {sweep['backend']!r}"))
    if sweep.get("families") and ident.get("family") not in sweep["families"]:
        out.append(Problem("identity", f"{run.directory}: family {ident.get('family')!r} is not one the sweep asked for"))
    want_soc = (sweep.get("soc_names") or {}).get(ident.get("family"))
    if want_soc and ident.get("soc_name") != want_soc:
        out.append(Problem("identity", f"{run.directory}: SoC {ident.get('soc_name')!r}, the sweep asked for {want_soc!r}"))
    have = opapi_hash(ident)
    want = sweep.get("library_sha256") or majority_hash
    if want and have != want:
        whose = "the sweep manifest" if sweep.get("library_sha256") else "the other runs"
        out.append(Problem("identity", f"{run.directory}: library sha256 {have} differs from {whose} ({want})"))
    return out


_EXIT = {2: "interrupted", 3: "internal error", 4: "usage error or failed start-up"}


def _job_problems(sweep: dict | None) -> list[Problem]:
    """What the sweep's jobs exited with. A job that selected no cases (pytest exit 5) is listed
    but does not fail the merge: a family no case file covers, or more shards than cases, selects
    nothing by design. Every job selecting nothing fails it: such a sweep tested nothing. A job
    that stopped otherwise (usage error, internal error, signal) fails it even when its directory
    holds a report: that report may say nothing about cases it never reached."""
    jobs = (sweep or {}).get("jobs") or []
    n = (sweep or {}).get("shards", "?")
    empty = [j for j in jobs if j["exit"] == 5]
    out = [Problem("no cases", f"job {j['family']} shard {j['shard']}/{n}: selected no cases (pytest exit 5)",
                   blocking=False) for j in empty]
    if jobs and len(empty) == len(jobs):
        out.append(Problem("no cases", f"all {len(jobs)} job(s) selected no cases: the sweep tested nothing"))
    for j in jobs:
        code = j["exit"]
        if code not in (0, 1, 5):
            why = f"killed by signal {-code}" if code < 0 else _EXIT.get(code, "failed")
            out.append(Problem("job", f"job {j['family']} shard {j['shard']}/{n}: pytest exit {code} ({why}); "
                                      "its results are incomplete or absent"))
    return out


def _coverage(runs: list[Run], sweep: dict | None) -> tuple[list[Problem], list[dict]]:
    """Shards or families that never reported, and MISSING records for selected cases nobody ran."""
    problems, missing = [], []
    # a job that selected no cases wrote no manifest, but it did report: nothing
    empty_jobs = [(j["family"], j["shard"]) for j in (sweep or {}).get("jobs") or [] if j["exit"] == 5]
    groups: dict = defaultdict(list)
    for run in runs:
        groups[(run.identity.get("backend", ""), run.identity.get("family") or "any")].append(run)
    for fam in (sweep or {}).get("families", []):
        if not any(f == fam for _, f in groups):
            problems.append(Problem("shards", f"family {fam}: no run reported"))
    for (backend, fam), group in sorted(groups.items()):
        shards = [tuple(r.manifest["shard"]) for r in group if r.manifest and r.manifest.get("shard")]
        n = (sweep or {}).get("shards") or (shards[0][1] if shards else None)
        if n and n > 1:
            absent = sorted(set(range(1, n + 1)) - {i for i, _ in shards} - {i for f, i in empty_jobs if f == fam})
            if absent:
                problems.append(Problem("shards", f"{backend}-{fam}: shard(s) {', '.join(f'{i}/{n}' for i in absent)} never reported"))
        selected: dict[str, dict] = {}
        for r in group:
            for a in (r.manifest or {}).get("selected", []):
                selected.setdefault(a["case_id"], a)
        seen = {rec["case_id"] for r in group for rec in r.records}
        lost = sorted(set(selected) - seen)
        if lost:
            problems.append(Problem("missing", f"{backend}-{fam}: {len(lost)} selected case(s) have no result: "
                                               + ", ".join(lost[:5]) + (" …" if len(lost) > 5 else "")))
            ctx = rec_mod.Context(UNKNOWN.requested(backend, fam))
            missing += [rec_mod.not_run(rec_mod.facts_of_entry(selected[c]), Status.MISSING,
                                        "selected in the sweep but in no shard's results", ctx) for c in lost]
    return problems, missing


def _load(directories: list[Path]) -> tuple[list[Run], list[Problem]]:
    """Every run that can be read. A directory that cannot (absent, no results.jsonl) and each bad
    line or file inside one is a problem: one broken shard must not cost the other shards' results."""
    runs, problems = [], []
    for d in directories:
        bad: list[str] = []
        try:
            runs.append(load_run(Path(d), bad))
        except rec_mod.ResultsError as e:
            problems.append(Problem("unreadable", f"{e}: none of its results are in this report"))
        problems += [Problem("unreadable", why) for why in bad]
    return runs, problems


def merge(directories: list[Path], sweep: dict | None = None, title: str = "aclnn conformance: merged report") -> Report:
    runs, problems = _load(directories)
    problems += _job_problems(sweep)
    hashes = Counter(h for h in (opapi_hash(r.identity) for r in runs) if h)
    majority = hashes.most_common(1)[0][0] if hashes else None
    for run in runs:
        problems += _identity_problems(run, sweep, majority)
        if run.identity.get("stopped"):      # harness/execution/stopping.py: its MISSING cases say why
            problems.append(Problem("stopped", f"{run.directory}: stopped by {run.identity['stopped']} before "
                                               "every case had run (--resume finishes it)"))
    records, first_seen = [], {}
    for run in runs:
        for rec in run.records:
            rec = dict(rec, _run=run.directory)
            key = _key(rec)
            if key in first_seen:
                problems.append(Problem("duplicate", f"{key[1]} ({key[0]}) recorded in {first_seen[key]} and in {run.directory}; "
                                                     "the first is kept"))
                continue
            first_seen[key] = run.directory
            records.append(rec)
    cov_problems, missing = _coverage(runs, sweep)
    return Report(title, runs, records + missing, problems + cov_problems)
