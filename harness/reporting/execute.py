"""Running one case: automatic reruns, the failure dump, and the record.

A case that fails is rerun up to `reruns` times in the same process; if a rerun passes it is a
FLAKE (attempts recorded), otherwise the first failure is what the record shows. Only plain
failures are rerun: a skip, or a known deviation that deviated, says the same the next time.
"""
from __future__ import annotations

import os
from pathlib import Path

from . import dump, identity, records, repro


def run_with_reruns(run, reruns: int):
    """run() -> Outcome, repeated while it fails (up to `reruns` more times).
    Returns (outcome to record, attempts as raw status names, capture of the first failure)."""
    attempts, first = [], None
    while True:
        outcome, capture = run()
        raw, _ = records.classify(outcome.outcome)
        attempts.append(raw.value)
        if first is None:
            first = (outcome, capture)
        if outcome.outcome != "failed" or len(attempts) > reruns:
            break
    if outcome.outcome == "failed" or len(attempts) == 1:
        return first[0], attempts, first[1]
    # passed on a rerun: record the pass, but keep the first failure's reason
    outcome.reason = f"passed on attempt {len(attempts)} of {reruns + 1}; attempt 1: {first[0].reason}"
    return outcome, attempts, first[1]


def case_facts(case) -> dict:
    return {"group": case.group, "dtype": case.dtype, "kind": case.kind, "tier": case.tier}


def record_for(case, outcome, *, nodeid: str, props: dict, attempts: list[str], root: Path,
               timings: dict | None = None) -> dict:
    command = repro.command(nodeid, props, identity.switches(os.environ), root)
    return records.from_outcome(outcome.to_dict(), nodeid=nodeid, case_facts=case_facts(case), props=props,
                                library_sha256=identity.library_hashes(props), repro=command, attempts=attempts,
                                timings=timings)


def dump_failure(record: dict, capture: dict | None, directory: Path) -> str | None:
    """Write the .npz of a failing case; returns its path (None when there is nothing to dump)."""
    if not capture or not records.parse(record["attempts"][0]).is_failure:
        return None
    path = dump.write(directory, record, capture.get("inputs") or {}, capture.get("golden"), capture.get("actual"))
    return str(path)
