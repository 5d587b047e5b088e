"""Opening the results store: the URL checked, the engine made, the schema brought to this code's.

`--db` takes a SQLAlchemy URL: `sqlite:///reports/history.db` (or a plain file path: SQLite, the
default, a file beside the reports) or `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB` (a fleet:
many machines into one database; `?host=/socket/dir` for a Unix socket). A URL that cannot be one
of these is a `HistoryError` before anything connects; a database that cannot be reached is a
`StoreUnreachable`, which callers turn into one line and never into a lost run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HistoryError, StoreTooNew, StoreUnreachable

# How long a writer waits for another writer's transaction on SQLite (two shard jobs ingesting at
# once): a 4,000-case run commits in well under a second, a year of nights in minutes; the wait is
# for the other one's commit, so a long one costs only time, never the ingest.
SQLITE_BUSY_S = 300
CONNECT_TIMEOUT_S = 10          # PostgreSQL: a host that does not answer is unreachable after this
SCHEMES = ("sqlite", "postgresql")
__all__ = ["HistoryError", "Store", "StoreTooNew", "StoreUnreachable", "open_store", "parse_url"]


def parse_url(text: str):
    """A SQLAlchemy URL from --db's value; HistoryError (one line) for anything else."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
    if text is None or not str(text).strip():
        raise HistoryError("--db: an empty value (an unset variable in the calling script?)")
    text = str(text).strip()
    if "://" not in text:             # a plain path: the SQLite default
        return make_url("sqlite:///" + os.path.abspath(text))
    try:
        url = make_url(text)
    except ArgumentError:
        raise HistoryError(f"--db {text!r}: not a database URL (sqlite:///FILE or postgresql://USER@HOST/DB)") from None
    backend = url.get_backend_name()
    if backend == "postgres":
        backend = "postgresql"
    if backend not in SCHEMES:
        raise HistoryError(f"--db {redacted(url)}: unknown database kind {backend!r} "
                           "(sqlite:///FILE or postgresql://USER@HOST/DB)")
    if backend == "sqlite":
        if not url.database or url.database == ":memory:" or url.database.startswith("file:"):
            raise HistoryError(f"--db {text}: SQLite needs a file (sqlite:///path/to/history.db); an in-memory "
                               "store would forget every run when the process ends")
        return url.set(drivername="sqlite", database=os.path.abspath(url.database))
    if "+" in url.drivername and url.get_driver_name() != "psycopg":     # postgresql+psycopg2://, +asyncpg://
        raise HistoryError(f"--db {redacted(url)}: driver {url.get_driver_name()!r} is not installed "
                           "(postgresql:// uses psycopg 3)")
    if not url.database:
        raise HistoryError(f"--db {redacted(url)}: no database name (postgresql://USER@HOST/DB)")
    return url.set(drivername="postgresql+psycopg")


def redacted(url) -> str:
    """The URL as messages show it: any password hidden."""
    return url.render_as_string(hide_password=True) if hasattr(url, "render_as_string") else str(url)


@dataclass
class Store:
    engine: object            # sqlalchemy.Engine
    url: object               # sqlalchemy.URL
    upgraded: str | None = None      # what migrate() did on opening, for the caller to say
    # ids this process saw committed (cases, metric sets): they never change, so a store open for many
    # runs (a merge, the benchmark) looks each up once
    cache: dict = field(default_factory=dict)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def label(self) -> str:
        return redacted(self.url)

    @property
    def description(self) -> str:
        """The store in words, not as a URL (report.html names nothing outside itself as a link)."""
        if self.dialect == "sqlite":
            return f"SQLite file {self.url.database}"
        where = self.url.host or (self.url.query or {}).get("host") or "the local socket"
        return f"PostgreSQL database {self.url.database} on {where}"

    def writing(self):
        """A connection whose transactions write: on SQLite they take the write lock at BEGIN
        (BEGIN IMMEDIATE), so two ingests queue on the busy timeout instead of one failing at once
        when both try to upgrade a read lock (SQLite's deadlock rule)."""
        return self.engine.connect().execution_options(history_write=True)

    def reading(self):
        return self.engine.connect()

    def optimize(self) -> None:
        """SQLite: refresh the planner's statistics where the tables grew (PRAGMA optimize: usually
        nothing). Without them it reads a window's failures through the primary key, every pass
        included, instead of the failing-results index (schema.py)."""
        if self.dialect == "sqlite":
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA optimize")

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_engine(url):
    from sqlalchemy import create_engine, event
    path = Path(url.database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreUnreachable(f"{url.database}: cannot create its directory ({e.strerror})") from None
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        # the driver's own transaction handling off: BEGIN is ours (below), so DDL, the version
        # check and the rows of one run are one transaction, as on PostgreSQL
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        # WAL: readers (a report's History section) never block the writer and the writer never
        # blocks them; synchronous=NORMAL in WAL loses no committed run on a crash of the process
        # (only, at worst, the last one on a power loss: the run's files are the source of truth)
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_S * 1000}")
        cur.execute("PRAGMA cache_size=-65536")        # 64 MiB
        cur.execute("PRAGMA analysis_limit=1000")      # ANALYZE (PRAGMA optimize, below) samples: milliseconds
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("history_write") else "BEGIN")

    return engine


def _postgres_engine(url):
    from sqlalchemy import create_engine
    return create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})


def open_store(text: str, *, migrate: bool = True, create: bool = True) -> Store:
    """The store at --db's URL, its schema checked and, when older, upgraded (one transaction,
    under a lock: concurrent openers of a new store create it once). HistoryError for a bad URL,
    StoreUnreachable for a database that cannot be reached, StoreTooNew for a newer schema.
    create=False (a question, not an ingest): a SQLite file that is not there is an error, never
    a new empty store (and directories) made by a typo."""
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError
    url = parse_url(text)
    if not create and url.get_backend_name() == "sqlite" and not Path(url.database or "").is_file():
        raise StoreUnreachable(f"{text}: no results store there (python -m harness.reporting ingest RUN --db {text} "
                               "makes one)")
    engine = _sqlite_engine(url) if url.get_backend_name() == "sqlite" else _postgres_engine(url)
    store = Store(engine, url)
    if migrate:
        from . import migrate as migrate_mod
        try:
            store.upgraded = migrate_mod.ensure_current(store)
        except HistoryError:
            engine.dispose()
            raise
        except (DBAPIError, SQLAlchemyError, OSError) as e:
            engine.dispose()
            raise StoreUnreachable(f"{store.label}: {one_line(e)}") from None
    return store


def one_line(error: BaseException) -> str:
    """A database error as one line: the driver's first line, without SQLAlchemy's links and SQL."""
    inner = getattr(error, "orig", None) or error
    text = str(inner).strip().splitlines()
    return text[0] if text else type(inner).__name__
