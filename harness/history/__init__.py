"""History: every run in one results store (SQLite by default, PostgreSQL for a fleet), and the
questions that span nights: a case's timeline and its first bad run, flake rates, perf trends and
slow drifts, pass rates per family.

It reads records and run identities handed to it (harness/reporting loads the run directories) and
returns plain data; harness/reporting prints and draws it. Modules: store and errors (the URL, the
engine, what goes wrong), schema and migrate (the tables; Alembic's migrations in migrations/), rows
and ingest (a record as a row; one transaction per run), runs (a family's runs and windows),
timeline, flakes, perf and pass_rate (the questions), rank (the trend test), section (report.html's
History section) and recording (what --db does at the end of a run, merge or sweep).
"""
from __future__ import annotations

from .errors import HistoryError, StoreTooNew, StoreUnreachable
from .store import Store, open_store, parse_url

__all__ = ["HistoryError", "Store", "StoreTooNew", "StoreUnreachable", "open_store", "parse_url"]
