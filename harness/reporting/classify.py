"""The one decision of a case's final status.

Three things decide what a case's result means for the gate, in this order: what the case did on
every attempt (a pass after a failed attempt is a FLAKE), what its case file says of this backend (a
known deviation: its failure is EXPECTED_FAIL, its pass an UNEXPECTED_PASS that shows but does not
gate), and what the run's baseline says (a listed failure is EXPECTED_FAIL, a listed flake a FLAKE, a
listed failure that now passes an UNEXPECTED_PASS that fails the gate: the stale entry must go).
A run decides it when the case finishes; `python -m harness.reporting gate` decides it again for a
finished run against another baseline, from the same fields of the record.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.status import Status
from .baseline import Baseline, Entry


@dataclass(frozen=True)
class Decision:
    status: Status
    reason: str
    waiver: dict | None = None


def _baseline_waiver(entry: Entry) -> dict:
    return {"kind": f"baseline-{entry.kind}", "source": entry.source, "case": entry.case,
            "reason": entry.reason, "link": entry.link}


def classify(raw: Status, reason: str = "", *, case_id: str = "", attempts=(), deviation: str | None = None,
             backend: str = "", baseline: Baseline | None = None) -> Decision:
    """raw: what the case did (its record's raw_status); attempts: every attempt's raw status, in
    order; deviation: the case file's known deviation of this backend on this family, if one applies."""
    status, waiver = raw, None
    if raw is Status.PASS and any(Status(a).is_failure for a in list(attempts)[:-1]):
        status = Status.FLAKE
    if deviation and raw in (Status.FAIL, Status.PASS) and status is not Status.FLAKE:
        waiver = {"kind": "deviation", "reason": deviation}
        status = Status.EXPECTED_FAIL if raw is Status.FAIL else Status.UNEXPECTED_PASS
        reason = f"known {backend} deviation: {deviation}" + (f" | {reason}" if reason else "")
    if baseline is None:
        return Decision(status, reason, waiver)
    fails, flakes = baseline.find("fails", case_id), baseline.find("flakes", case_id)
    if raw.is_failure or status is Status.EXPECTED_FAIL:
        actual = raw if raw.is_failure else Status.FAIL
        if fails and (fails.status is None or fails.status == actual):
            return Decision(Status.EXPECTED_FAIL, reason, _baseline_waiver(fails))
        if flakes:
            return Decision(Status.FLAKE, reason, _baseline_waiver(flakes))
        if fails:          # listed, but failing differently than the entry expects (e.g. now a CRASH)
            return Decision(actual, f"{fails.source} expects {fails.status}, got {actual}: {reason}", waiver)
    elif raw is Status.PASS and status is not Status.FLAKE and fails:
        return Decision(Status.UNEXPECTED_PASS, reason, _baseline_waiver(fails))
    return Decision(status, reason, waiver)


def is_gate_failure(status: Status, waiver: dict | None) -> bool:
    """New problems: a failure nothing waives, or a baseline entry that no longer fails (stale)."""
    if status in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.MISSING):
        return True
    return status is Status.UNEXPECTED_PASS and str((waiver or {}).get("kind", "")).startswith("baseline")
