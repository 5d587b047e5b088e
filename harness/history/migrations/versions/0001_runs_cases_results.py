"""The first layout: runs (identity), cases and metric sets (interned), results (one per case per run).

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.Text, nullable=False, unique=True),
        sa.Column("content_sha256", sa.Text, nullable=False),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("directory", sa.Text, nullable=False),
        sa.Column("host", sa.Text, nullable=False, server_default=""),
        sa.Column("backend", sa.Text, nullable=False, server_default=""),
        sa.Column("family", sa.Text, nullable=False, server_default=""),
        sa.Column("soc_name", sa.Text, nullable=False, server_default=""),
        sa.Column("cann_version", sa.Text, nullable=False, server_default=""),
        sa.Column("library_sha256", sa.Text),
        sa.Column("libraries", sa.Text, nullable=False, server_default="{}"),
        sa.Column("simulated", sa.Integer, nullable=False, server_default="0"),
        sa.Column("suite_commit", sa.Text, nullable=False, server_default=""),
        sa.Column("switches", sa.Text, nullable=False, server_default="{}"),
        sa.Column("shard", sa.Text),
        sa.Column("started", sa.Text, nullable=False),
        sa.Column("ended", sa.Text),
        sa.Column("duration_s", sa.Float),
        sa.Column("stopped", sa.Text),
        sa.Column("identity", sa.Text, nullable=False, server_default="{}"),
        sa.Column("ingested", sa.Text, nullable=False),
    )
    op.create_index("runs_family_started", "runs", ["family", "started"])
    op.create_table(
        "cases",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("case_id", sa.Text, nullable=False, unique=True),
        sa.Column("op", sa.Text, nullable=False, server_default=""),
        sa.Column("grp", sa.Text, nullable=False, server_default=""),
        sa.Column("kind", sa.Text, nullable=False, server_default=""),
        sa.Column("dtype", sa.Text, nullable=False, server_default=""),
    )
    op.create_index("cases_op", "cases", ["op"])
    op.create_table(
        "metric_sets",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("metrics", sa.Text, nullable=False, unique=True),
    )
    op.create_table(
        "results",
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("case", sa.Integer, sa.ForeignKey("cases.id"), primary_key=True),
        sa.Column("family", sa.Text, nullable=False, server_default=""),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("raw_status", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("phase1_status", sa.Integer),
        sa.Column("phase1_expected", sa.Integer),
        sa.Column("phase1_check", sa.Text),
        sa.Column("metric_set", sa.Integer, sa.ForeignKey("metric_sets.id")),
        sa.Column("metric_values", sa.Text),
        sa.Column("worst_share", sa.Float),
        sa.Column("digest", sa.BigInteger),
        sa.Column("digests", sa.Text),
        sa.Column("perf_timing", sa.Text),
        sa.Column("perf_median_ms", sa.Float),
        sa.Column("perf_ci_low_ms", sa.Float),
        sa.Column("perf_ci_high_ms", sa.Float),
        sa.Column("perf_n", sa.Integer),
        sa.Column("perf_verdict", sa.Text),
        sa.Column("perf_ratio", sa.Float),
        sa.Column("time_s", sa.Float),
        sa.Column("launch_s", sa.Float),
        sa.Column("attempts", sa.Integer),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("results")
    op.drop_table("metric_sets")
    op.drop_table("cases")
    op.drop_table("runs")
