"""Running one case: automatic reruns, the failure dump, and the record.

The case runs in its case worker (harness/execution/); what comes back is the worker's record.
A case that failed, crashed or timed out is run again (a fresh attempt in the worker) up to
`reruns` times; if an attempt passes it is a FLAKE (attempts recorded), otherwise the first
failure is what the record shows. A skip, a known deviation that deviated, or a case not run
(device lost) says the same the next time, so it is not rerun.
"""
from __future__ import annotations

from pathlib import Path

from . import dump_meta as dump, identity, records, repro_line as repro
from ..core.status import Status

_RERUN = (Status.FAIL, Status.CRASH, Status.TIMEOUT)


def _failed(worker_record: dict) -> bool:
    return records.classify_worker(worker_record)[0] in _RERUN


def run_with_reruns(run, reruns: int):
    """run() -> the worker's record, repeated while it fails (up to `reruns` more times).
    Returns (worker record to build the record from, attempts as raw status names)."""
    attempts, first = [], None
    while True:
        rec = run()
        attempts.append(records.classify_worker(rec)[0].value)
        if first is None:
            first = rec
        if not _failed(rec) or len(attempts) > reruns:
            break
    if _failed(rec) or len(attempts) == 1:
        return first, attempts
    # passed on a rerun: record the pass, but keep the first failure's reason
    rec = dict(rec, reason=f"passed on attempt {len(attempts)} of {reruns + 1}; attempt 1: {first.get('reason', '')}")
    return rec, attempts


def case_facts(case) -> dict:
    return {"group": case.group, "dtype": case.dtype, "kind": case.kind, "tier": case.tier}


def record_for(case, worker_record: dict, *, nodeid: str, props: dict, attempts: list[str], root: Path,
               switches: dict[str, str]) -> dict:
    command = repro.command(nodeid, props, switches, root)
    return records.from_outcome(worker_record, nodeid=nodeid, case_facts=case_facts(case), props=props,
                                library_sha256=identity.library_hashes(props), repro=command, attempts=attempts,
                                timings=worker_record.get("timings"))


def finish_dump(record: dict, written: dict | None) -> str | None:
    """Complete the .npz the case worker wrote for a failing case with the record's meta; its path."""
    if not written or not records.parse(record["attempts"][0]).is_failure:
        return None
    return str(dump.add_meta(Path(written["path"]), record, written["dtypes"]))
