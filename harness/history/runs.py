"""The runs table as every question reads it: a family's runs in the order they started, and the
window of its last N runs.

A window counts runs, not nights: with shards, a night is several runs and each case is in one of
them, so a case's rates over a window are over the runs that ran it (said in every answer).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .schema import runs

COLUMNS = ("id", "run_id", "directory", "host", "family", "backend", "soc_name", "cann_version", "library_sha256",
           "started", "ended", "shard", "switches", "suite_commit", "total", "passed", "failed")


@dataclass(frozen=True)
class RunRow:
    id: int
    run_id: str
    directory: str
    host: str
    family: str
    backend: str
    soc_name: str
    cann_version: str
    library_sha256: str | None
    started: str
    ended: str | None
    shard: str | None
    switches: str
    suite_commit: str
    total: int
    passed: int
    failed: int

    def brief(self) -> dict:
        """What an answer says of a run: when, where, which library and CANN."""
        return {"run": self.run_id, "started": self.started, "directory": self.directory, "host": self.host,
                "family": self.family, "library_sha256": self.library_sha256, "cann_version": self.cann_version,
                "shard": self.shard}

    def text(self) -> str:
        lib = (self.library_sha256 or "?")[:12]
        return f"{self.started} {self.directory} (run {self.run_id}; library {lib}, CANN {self.cann_version or '?'})"


def differences(before: RunRow, after: RunRow) -> list[str]:
    """What changed between two runs' identities: the suspects of a first bad run."""
    out = []
    if before.library_sha256 != after.library_sha256:
        out.append(f"library {(before.library_sha256 or '?')[:12]} -> {(after.library_sha256 or '?')[:12]}")
    if before.cann_version != after.cann_version:
        out.append(f"CANN {before.cann_version or '?'} -> {after.cann_version or '?'}")
    if before.suite_commit != after.suite_commit:
        out.append(f"suite {before.suite_commit[:12] or '?'} -> {after.suite_commit[:12] or '?'}")
    a, b = json.loads(before.switches or "{}"), json.loads(after.switches or "{}")
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k) and not k.startswith("ASCEND_"):
            out.append(f"{k} {a.get(k, '(unset)')!s} -> {b.get(k, '(unset)')!s}")
    if before.host != after.host:
        out.append(f"host {before.host} -> {after.host}")
    return out


def of_family(conn, family: str | None = None) -> list[RunRow]:
    """Every run (of `family`), oldest first."""
    from sqlalchemy import select
    q = select(*(runs.c[c] for c in COLUMNS)).order_by(runs.c.started, runs.c.id)
    if family:
        q = q.where(runs.c.family == family)
    return [RunRow(*row) for row in conn.execute(q)]


def families(conn) -> list[str]:
    from sqlalchemy import select
    return sorted(f for (f,) in conn.execute(select(runs.c.family).distinct()))


def window(all_runs: list[RunRow], last: int | None) -> list[RunRow]:
    return all_runs[-last:] if last else list(all_runs)
