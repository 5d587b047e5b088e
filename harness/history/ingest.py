"""Ingesting finished runs: one transaction per run, and the same run twice adds nothing.

A run is named by its host and run id (run.json, written when the run took its report directory;
a resumed run keeps its id), so ingesting `reports/x` tonight and `reports/x/previous/<id>` after
tomorrow's run moved it is the same run. Its content is hashed too: the same run with other
records (a run ingested when stopped, then resumed and ingested again) replaces its rows, in the
same one transaction, and says so.

A killed ingest leaves nothing: the run's row and its results are written and committed together
(PostgreSQL and SQLite both roll back a transaction whose process died), and a rerun ingests it.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import rows as rows_mod
from .schema import cases, metric_sets, results, runs
from .store import Store

# The test hook that makes "killed mid-transaction" and "ingesting at once" deterministic: with
# this set to a directory, each ingest writes inside-<pid>-<n> there once its run's rows are written
# and not yet committed, then waits until a file `go` appears (at most PAUSE_LIMIT_S).
PAUSE_ENV = "ACLNN_HISTORY_PAUSE"
PAUSE_LIMIT_S = 300
_CHUNK = 900          # ids per IN (...) list: under SQLite's old limit of 999 parameters


@dataclass
class RunSource:
    """One run as reporting loaded it: its directory, identity (summary.json), records, manifest."""
    directory: str
    identity: dict
    records: list[dict]
    library_sha256: str | None = None     # the operator libraries' hash (reporting's identity.opapi_hash)
    manifest: dict | None = None
    duration_s: float | None = None
    run_id: str | None = None             # run.json's; read from the directory when not given

    def __post_init__(self):
        if self.run_id is None:
            self.run_id = _run_id(Path(self.directory), self.identity)


@dataclass
class Ingested:
    directory: str
    outcome: str             # added | already | replaced | empty
    results: int = 0
    run: int | None = None   # the store's id of the run
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        what = {"added": f"{self.results} result(s) added", "replaced": f"{self.results} result(s) replaced "
                "(the run's records changed since it was ingested: resumed?)",
                "already": "already in the store: nothing added", "empty": "no records: nothing added"}[self.outcome]
        return f"{self.directory}: {what}"


def _run_id(directory: Path, identity: dict) -> str:
    try:
        doc = json.loads((directory / "run.json").read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("run_id"):
            return str(doc["run_id"])
    except (OSError, ValueError):
        pass
    if identity.get("run_id"):
        return str(identity["run_id"])
    # no run.json (a run of an older harness): its start and directory name it
    return f"{identity.get('started') or ''}@{directory.resolve()}"


def run_key(source: RunSource) -> str:
    return hashlib.sha256(f"{source.identity.get('host') or ''}\n{source.run_id}".encode()).hexdigest()


def content_sha256(source: RunSource) -> str:
    """What tells two ingests of one run apart: a resumed run ends anew, and a run stopped and
    ingested before has other counts. (Not a hash of every record: that cost as much as a quarter
    of the ingest, and a run's records change only with its end.)"""
    counts: dict = {}
    for r in source.records:
        s = r.get("status")
        counts[s] = counts.get(s, 0) + 1
    text = f"{source.identity.get('started')}\n{source.identity.get('ended')}\n{len(source.records)}\n" + \
        "\n".join(f"{k}={v}" for k, v in sorted(counts.items(), key=str))
    return hashlib.sha256(text.encode()).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _started(identity: dict) -> str:
    """The run's start as ISO 8601 UTC (the order of a timeline); a run without one sorts first."""
    text = str(identity.get("started") or "")
    try:
        stamp = _dt.datetime.fromisoformat(text)
    except ValueError:
        return text or "0000-00-00T00:00:00+00:00"
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")


def _shard(source: RunSource):
    shard = (source.manifest or {}).get("shard") or source.identity.get("shard")
    if isinstance(shard, (list, tuple)) and len(shard) == 2:
        return f"{shard[0]}/{shard[1]}"
    return str(shard) if shard else None


def _run_row(source: RunSource, key: str, content: str) -> dict:
    ident = source.identity
    counts: dict = {}
    for r in source.records:
        s = str(r.get("status") or "MISSING")
        counts[s] = counts.get(s, 0) + 1
    return {"run_key": key, "content_sha256": content, "run_id": source.run_id,
            "directory": str(Path(source.directory).resolve()), "host": str(ident.get("host") or ""),
            "backend": str(ident.get("backend") or ""), "family": str(ident.get("family") or ""),
            "soc_name": str(ident.get("soc_name") or ""), "cann_version": str(ident.get("cann_version") or ""),
            "library_sha256": source.library_sha256,
            "libraries": json.dumps(ident.get("library_sha256") or {}, sort_keys=True),
            "simulated": 1 if ident.get("simulated") else 0, "suite_commit": str(ident.get("suite_commit") or ""),
            "switches": json.dumps(ident.get("switches") or {}, sort_keys=True), "shard": _shard(source),
            "started": _started(ident), "ended": ident.get("ended"), "duration_s": source.duration_s,
            "stopped": ident.get("stopped"),
            "identity": json.dumps({k: v for k, v in ident.items() if k != "backend_properties"}, sort_keys=True,
                                   default=str),
            "ingested": _now(), "total": len(source.records), "passed": counts.get("PASS", 0),
            "failed": sum(n for s, n in counts.items() if s in rows_mod.FAILED),
            "totals": json.dumps(dict(sorted(counts.items())))}


def _insert_ignoring(conn, table, rows: list[dict]) -> None:
    """INSERT that leaves rows another ingest wrote first in place (two shard jobs, one new case)."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    conn.execute(insert(table).on_conflict_do_nothing(), rows)


def _case_ids(conn, records: list[dict], known: dict[str, int]) -> dict[str, int]:
    """case id -> the store's integer id, adding the cases it does not have yet. `known`: ids this
    process saw committed (a case's id never changes), so a night of the same cases asks for none.
    New ones in sorted order: two PostgreSQL transactions adding the same new cases then wait for
    each other in one order and never deadlock."""
    from sqlalchemy import select
    ids = dict(known)
    wanted = sorted({r["case_id"] for r in records} - ids.keys())
    for i in range(0, len(wanted), _CHUNK):
        part = wanted[i:i + _CHUNK]
        ids.update(conn.execute(select(cases.c.case_id, cases.c.id).where(cases.c.case_id.in_(part))).all())
    new = {r["case_id"]: r for r in records if r["case_id"] not in ids}
    if new:
        _insert_ignoring(conn, cases, [rows_mod.case_row(new[c]) for c in sorted(new)])
        missing = sorted(new)
        for i in range(0, len(missing), _CHUNK):
            part = missing[i:i + _CHUNK]
            ids.update(conn.execute(select(cases.c.case_id, cases.c.id).where(cases.c.case_id.in_(part))).all())
    return ids


def _metric_sets(conn, known: dict[str, int], added: dict[str, int]):
    """metric_set(key) -> the id of that set of names, thresholds and rules, added when new."""
    from sqlalchemy import select

    def metric_set(key: str) -> int:
        if key in known:
            return known[key]
        found = conn.execute(select(metric_sets.c.id).where(metric_sets.c.metrics == key)).scalar()
        if found is None:
            _insert_ignoring(conn, metric_sets, [{"metrics": key}])
            found = conn.execute(select(metric_sets.c.id).where(metric_sets.c.metrics == key)).scalar()
        added[key] = found
        return found
    return metric_set


def _insert_results(conn, rows: list[tuple]) -> None:
    """The run's results in one statement: SQLite's executemany of a prepared INSERT, PostgreSQL's
    COPY (psycopg's copy protocol: several times an INSERT's rate). Through the DBAPI cursor, not
    SQLAlchemy's parameter processing: at 8.8 M rows a year, its per-row cost was most of the
    ingest (benchmarks/bench_history.py)."""
    names = ", ".join(f'"{c}"' for c in rows_mod.COLUMNS)
    if conn.dialect.name == "postgresql":
        driver = conn.connection.driver_connection
        with driver.cursor() as cur, cur.copy(f"COPY results ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    conn.exec_driver_sql(f"INSERT INTO results ({names}) VALUES ({', '.join('?' * len(rows_mod.COLUMNS))})", rows)


def _pause() -> None:
    """The test hook (PAUSE_ENV): say where we are, then wait for `go`."""
    where = os.environ.get(PAUSE_ENV)
    if not where:
        return
    folder = Path(where)
    n = 0
    while (folder / f"inside-{os.getpid()}-{n}").exists():
        n += 1
    (folder / f"inside-{os.getpid()}-{n}").write_text(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while not (folder / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def ingest_one(store: Store, source: RunSource) -> Ingested:
    """Write one run and its results in one transaction.

    Before it, in a short transaction of its own, the run's new case ids and metric sets are added:
    they are dictionary entries, not the run (a killed ingest may leave one that no result names,
    which no question sees), and taking them out of the run's transaction lets shard jobs that meet
    the same new metric set ingest at once instead of waiting for each other's commit."""
    from sqlalchemy import delete, select
    records = [r for r in source.records if isinstance(r, dict) and r.get("case_id")]
    if not records:
        return Ingested(source.directory, "empty")
    source = RunSource(source.directory, source.identity, records, source.library_sha256, source.manifest,
                       source.duration_s, source.run_id)
    key, content = run_key(source), content_sha256(source)
    with store.reading() as conn:       # the usual answer for a run ingested before, without any lock
        found = conn.execute(select(runs.c.id, runs.c.content_sha256).where(runs.c.run_key == key)).first()
    if found is not None and found.content_sha256 == content:
        return Ingested(source.directory, "already", 0, found.id)
    default_family = str(source.identity.get("family") or "")
    new_sets: dict[str, int] = {}
    with store.writing() as conn:
        with conn.begin():
            ids = _case_ids(conn, records, store.cache.setdefault("cases", {}))
            make = rows_mod.RowMaker(_metric_sets(conn, store.cache.setdefault("metric_sets", {}), new_sets))
            seen: set[int] = set()
            rows = []
            for r in records:
                case = ids[r["case_id"]]
                if case in seen:          # a run holds a case once; a duplicated line counts once
                    continue
                seen.add(case)
                fam = r.get("family") or default_family
                rows.append(make.row(r, case, fam if fam.__class__ is str else str(fam)))
    store.cache["cases"].update(ids)
    store.cache["metric_sets"].update(new_sets)
    with store.writing() as conn:
        with conn.begin():
            found = conn.execute(select(runs.c.id, runs.c.content_sha256).where(runs.c.run_key == key)).first()
            if found is not None and found.content_sha256 == content:
                return Ingested(source.directory, "already", 0, found.id)
            replaced = found is not None
            if replaced:
                conn.execute(delete(results).where(results.c.run == found.id))
                conn.execute(delete(runs).where(runs.c.id == found.id))
            row = _run_row(source, key, content)
            _insert_ignoring(conn, runs, [row])
            run = conn.execute(select(runs.c.id, runs.c.content_sha256).where(runs.c.run_key == key)).first()
            if run.content_sha256 != content or (not replaced and _inserted_by_other(conn, run.id)):
                return Ingested(source.directory, "already", 0, run.id)      # another ingest of it won the race
            run_id = run.id
            _insert_results(conn, [(run_id, *r) for r in rows])
            _pause()
    return Ingested(source.directory, "replaced" if replaced else "added", len(rows), run_id)


def _inserted_by_other(conn, run_id: int) -> bool:
    """Whether the run row with our key was written by a concurrent ingest of the same run, not by
    us (ON CONFLICT DO NOTHING kept theirs): it already has results."""
    from sqlalchemy import exists, select
    return bool(conn.execute(select(exists().where(results.c.run == run_id))).scalar())


def ingest(store: Store, sources: list[RunSource]) -> list[Ingested]:
    """Each run in a transaction of its own, in the order given."""
    done = [ingest_one(store, s) for s in sources]
    if any(d.outcome in ("added", "replaced") for d in done):
        store.optimize()
    return done
