"""The store's schema version: checked on every open, upgraded by Alembic's migrations when older,
refused when newer (a store a later harness wrote: this one would misread its tables).

The migrations ship in migrations/ beside this file (package data). The version lives in
Alembic's own `alembic_version` table, so `alembic` itself can also read and move it.
"""
from __future__ import annotations

from pathlib import Path

from . import schema
from .errors import HistoryError, StoreTooNew

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# PostgreSQL advisory lock id: only one opener at a time checks and upgrades the schema; the
# others wait and then find it current (8 shard jobs opening a new store at once create it once)
_LOCK_ID = 0x61636C6E6E68          # "aclnnh"


def _config():
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def _current(conn) -> str | None:
    """The stored revision, by plain SQL: the usual case (current) costs one query, no Alembic import."""
    from sqlalchemy import inspect, text
    if not inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(rows) > 1:
        raise HistoryError(f"the store has {len(rows)} schema versions ({', '.join(rows)}): branched migrations, "
                           "which this harness does not make")
    return rows[0] if rows else None


def known_revisions() -> list[str]:
    from alembic.script import ScriptDirectory
    return [s.revision for s in ScriptDirectory.from_config(_config()).walk_revisions()]


def ensure_current(store, target: str = "head") -> str | None:
    """Bring the store to `target` (head: schema.HEAD) in one transaction. Returns a line saying
    what was done (created, upgraded from X), or None when it was current already."""
    with store.writing() as conn:
        with conn.begin():
            if store.dialect == "postgresql":
                from sqlalchemy import text
                conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _LOCK_ID})
            current = _current(conn)
            if target == "head" and current == schema.HEAD:
                return None
            known = known_revisions()
            if current is not None and current not in known:
                raise StoreTooNew(f"{store.label}: its schema version {current} is newer than this harness knows "
                                  f"(newest: {schema.HEAD}); use the harness that wrote it, or a newer one")
            if current == target:
                return None
            from alembic import command
            cfg = _config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, target)
            return (f"created the results store at {store.label} (schema {target if target != 'head' else schema.HEAD})"
                    if current is None else
                    f"upgraded the results store at {store.label} from schema {current} to "
                    f"{target if target != 'head' else schema.HEAD}")
