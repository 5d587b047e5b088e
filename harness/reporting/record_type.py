"""What a record is: the keys of one results.jsonl line, declared once.

`CaseFacts` is what a record says about its case (records.facts_of), `Record` the whole line
(records.build). record.schema.json documents exactly these keys and requires exactly the Required
ones: tests/test_record_schema.py checks both ways.
"""
# No `from __future__ import annotations` here: a TypedDict tells Required keys from the others only
# by annotations evaluated when the class is made (Record.__required_keys__).

from typing import Required, TypedDict


class CaseFacts(TypedDict, total=False):
    """What a record says about its case (facts_of), declared once: FACT_KEYS is its keys, so a
    record rebuilt from another (facts_in: a harness error around a judged case) keeps every one."""
    case_id: str
    nodeid: str
    op: str
    group: str
    kind: str
    tier: str
    dtype: str
    index_dtype: str | None
    shape: list[int]
    attrs: dict
    layouts: dict
    formats: dict
    check: str | None
    note: str | None
    deviation: str | None
    perf_tolerance: float           # only where the case's group gives the perf gate a tolerance
    atk_perf: object                # only where an ATK list's standard.perf is a ratio (perf_gate.atk_ratio)


FACT_KEYS = tuple(CaseFacts.__annotations__)


class Record(CaseFacts, total=False):
    """One line of results.jsonl, declared once: `build` writes every Required key, the case facts it
    has, the diagnostics an outcome carries; the perf gate adds `perf_gate` to a copy (perf_gate.gate),
    a merged report `_run` to what it reads. record.schema.json documents exactly these keys, with
    exactly these required (tests/test_record_schema.py checks both ways)."""
    schema: Required[int]
    case_id: Required[str]
    nodeid: Required[str | None]
    op: Required[str]
    family: Required[str]
    soc_name: Required[str]
    cann_version: Required[str]
    status: Required[str]
    raw_status: Required[str]
    reason: Required[str]
    raw_reason: Required[str]
    waiver: Required[dict | None]
    attempts: Required[list[str]]
    phase1: Required[dict]
    phase2_status: Required[int | None]
    sync_status: Required[int | None]
    standard: Required[str | None]
    metrics: Required[list[dict]]
    worst: Required[dict | None]
    verdict: Required[dict | None]
    digests: Required[dict[str, str]]
    timings: Required[dict[str, float | None]]
    started_at: Required[float | None]
    launch_s: Required[float | None]
    device_s: Required[float | None]
    launches: Required[int | None]
    launches_note: Required[str]
    problems: Required[list[str]]
    repro: Required[str]
    library_sha256: Required[dict[str, str | None]]
    backend: Required[dict[str, str]]       # the target's identity keys (RECORD_IDENTITY), as strings
    worker: Required[str]
    device_resets: Required[int]
    dump: Required[dict | str | None]
    perf: Required[dict | None]
    determinism: Required[dict | None]
    # the diagnostics of an outcome that has them (judge/outcome.py DIAGNOSTIC_KEYS)
    signal: str
    stack: str
    last_error: str
    output: str
    deadline_s: float
    traceback: str
    recovery: dict
    recovered_from: dict
    blocked_signals: dict
    oom: str
    blame: dict
    left_processes: str
    harness_error: str
    # added to a built record's copy by a later reader
    perf_gate: list[dict]
    _run: str
