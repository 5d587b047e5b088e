"""The results store's tables (SQLAlchemy Core), as the newest migration leaves them.

Three tables: `runs` (one row per run: its whole identity), `cases` (one row per case id: the
case's facts that never change between runs) and `results` (one row per case per run). The
migrations in migrations/versions/ create and change them; this module is what the code reads and
writes, and tests/test_history.py holds the two to the same columns.

Choices, and why:
* Times are ISO 8601 text in UTC (the identity's own form): ordered as text, the same in SQLite and
  PostgreSQL, and free of a driver's conversion on each of millions of rows.
* Structured fields (metrics, digests, timings, the identity) are JSON text: read back only to be
  shown, never filtered on; what the queries filter on has a column of its own (status, the
  digest, the perf median, the largest share of a threshold).
* A case's id is interned in `cases` and results refer to it by integer: the id is ~100 bytes and
  a year of nightly sweeps holds it millions of times. So are the metrics' names, thresholds and
  rules (`metric_sets`: a precision standard and dtype has one set); a result keeps its values.
* A digest is the first 64 bits of the output's sha256 as a signed integer: equality is all the
  queries ask of it, and 8 bytes instead of 71 is a third of a result's row.
* `results` is keyed by (run, case): a run holds a case once, and the database enforces it, and
  ingestion appends to the end of one b-tree.
"""
from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, ForeignKey, Index, Integer, MetaData, Table, Text, text

metadata = MetaData()

# The Alembic revision the tables below are; migrate.py refuses a store newer than this.
HEAD = "0002"

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    # sha256 of host + run id (run.json): the same run ingested twice, from its report directory or
    # from previous/<run id>/ after the next night moved it, is one run
    Column("run_key", Text, nullable=False, unique=True),
    # what the run's records were when ingested: a resumed run ingested again replaces its rows
    Column("content_sha256", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("host", Text, nullable=False, server_default=""),
    Column("backend", Text, nullable=False, server_default=""),
    Column("family", Text, nullable=False, server_default=""),
    Column("soc_name", Text, nullable=False, server_default=""),
    Column("cann_version", Text, nullable=False, server_default=""),
    Column("library_sha256", Text),           # the operator libraries' hash (identity.opapi_hash)
    Column("libraries", Text, nullable=False, server_default="{}"),     # JSON: path -> sha256
    Column("simulated", Integer, nullable=False, server_default="0"),
    Column("suite_commit", Text, nullable=False, server_default=""),
    Column("switches", Text, nullable=False, server_default="{}"),      # JSON: SWCANN_*, ASCEND_*
    Column("shard", Text),                                              # "i/n" or NULL
    Column("started", Text, nullable=False),                            # ISO 8601, UTC
    Column("ended", Text),
    Column("duration_s", Float),
    Column("stopped", Text),
    Column("identity", Text, nullable=False, server_default="{}"),      # JSON: summary.json's identity
    Column("ingested", Text, nullable=False),
    # migration 0002: each run's counts, so that pass rates over a year read runs, not results
    Column("total", Integer, nullable=False, server_default="0"),
    Column("passed", Integer, nullable=False, server_default="0"),
    Column("failed", Integer, nullable=False, server_default="0"),
    Column("totals", Text, nullable=False, server_default="{}"),        # JSON: status -> count
)
Index("runs_family_started", runs.c.family, runs.c.started)

cases = Table(
    "cases", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("case_id", Text, nullable=False, unique=True),
    Column("op", Text, nullable=False, server_default=""),
    Column("grp", Text, nullable=False, server_default=""),           # the case file's group
    Column("kind", Text, nullable=False, server_default=""),          # valid | invalid
    Column("dtype", Text, nullable=False, server_default=""),
)
Index("cases_op", cases.c.op)

metric_sets = Table(
    "metric_sets", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("metrics", Text, nullable=False, unique=True),     # JSON: [[name, threshold, rule], ...]
)

results = Table(
    "results", metadata,
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("case", Integer, ForeignKey("cases.id"), primary_key=True),
    Column("family", Text, nullable=False, server_default=""),
    Column("status", Text, nullable=False),
    Column("raw_status", Text, nullable=False),
    Column("reason", Text, nullable=False, server_default=""),          # first 300 characters
    Column("phase1_status", Integer),
    Column("phase1_expected", Integer),
    Column("phase1_check", Text),
    Column("metric_set", Integer, ForeignKey("metric_sets.id")),    # the names, thresholds and rules
    Column("metric_values", Text),        # JSON: each metric's value, in the set's order
    Column("worst_share", Float),         # the largest value / threshold (> 1 failed a '<=' rule)
    Column("digest", BigInteger),         # the output's digest (several outputs: a digest of theirs)
    Column("digests", Text),              # several outputs: JSON name -> 16 hex digits of each
    Column("perf_timing", Text),          # events | modelled | cpu_time | ...: never compared across
    Column("perf_median_ms", Float),
    Column("perf_ci_low_ms", Float),
    Column("perf_ci_high_ms", Float),
    Column("perf_n", Integer),
    Column("perf_verdict", Text),         # the perf gate's verdict (REGRESSION, SAME, ...) if gated
    Column("perf_ratio", Float),          # and its ratio to the baseline
    Column("time_s", Float),              # timings.total
    Column("launch_s", Float),            # phase 2 + sync
    Column("attempts", Integer),          # --reruns: how many attempts the case took
    sqlite_with_rowid=False,              # one b-tree keyed (run, case): ingestion appends to it
)
# migration 0002: the failing results alone, in run order (a healthy run adds a few entries, at the
# end): the flake and first-bad questions read a window's failures without reading its passes
FAILING = "status IN ('FAIL', 'CRASH', 'TIMEOUT', 'FLAKE')"
Index("results_failing", results.c.run, results.c.case, sqlite_where=text(FAILING), postgresql_where=text(FAILING))
# No index on (case, run): a run's 4,000 results would touch 4,000 of its pages, one per case, and
# each commit wrote them all again (SQLite's ingestion fell from 31,000 to under 20,000 results/s
# over the first 150 nights of a year). A case's timeline is read through the primary key instead,
# `case = ? AND run IN (the family's runs)`: one probe per run, 365 a year per family.
