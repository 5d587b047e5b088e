"""What a run, a merge or a sweep does with --db when it ends: ingest its runs, then (for report.html)
the History section. It never raises: the run's files are written before and stay the source of
truth, so a store that cannot be reached costs one line (saying how to retry) and nothing else.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from .ingest import RunSource, ingest
from .store import HistoryError, one_line, open_store

PROG = "python -m harness.reporting"


@dataclass
class Recorded:
    lines: list[str] = field(default_factory=list)
    section: dict | None = None
    ok: bool = False


def retry_line(url: str, directories: list[str], why: str) -> str:
    """The one line of a failed ingest: what failed, that nothing is lost, how to retry."""
    dirs = " ".join(shlex.quote(d) for d in directories)
    return (f"history: not ingested ({why}); the files in {', '.join(directories)} are the source of truth: "
            f"`{PROG} ingest {dirs} --db {shlex.quote(url)}` ingests them later")


def record(url: str, runs: list, library_hash, *, families: list[str] | None = None, ops: list[str] | None = None,
           section: bool = False) -> Recorded:
    """runs: objects with directory, identity, records, manifest and duration_s (reporting's Run);
    library_hash(identity) -> the operator libraries' sha256. With section=True, also the History
    section's data for these families and ops."""
    out = Recorded()
    directories = [str(r.directory) for r in runs]
    try:
        store = open_store(url)
    except HistoryError as e:
        out.lines.append(retry_line(url, directories, str(e)))
        return out
    try:
        if store.upgraded:
            out.lines.append(f"history: {store.upgraded}")
        sources = [RunSource(str(r.directory), r.identity or {}, r.records, library_hash(r.identity or {}),
                             r.manifest, r.duration_s) for r in runs]
        for done in ingest(store, sources):
            out.lines.append(f"history: {done.line()} ({store.label})")
        out.ok = True
        if section:
            from .section import section as make_section
            out.section = make_section(store, families or [], ops or [])
    except Exception as e:          # noqa: BLE001 -- a broken store must never cost the run its files or exit status
        out.lines.append(retry_line(url, directories, f"{store.label}: {one_line(e)}") if not out.ok else
                         f"history: the History section was left out ({store.label}: {one_line(e)})")
    finally:
        store.close()
    return out
