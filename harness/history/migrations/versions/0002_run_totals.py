"""Each run's status counts on its own row (a year of pass rates reads 2,190 runs, not 8.8 M
results), and an index of the failing results alone (the flake and first-bad questions read a
window's failures without its passes).

Runs ingested under 0001 get their counts from their results here, so an older store upgraded by
this migration answers the pass-rate question as a new one does.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# the failing statuses (harness/core/status.py: is_failure), spelled out: a migration must keep
# meaning what it meant when written, whatever the code's tables become
_FAILED = "('FAIL', 'CRASH', 'TIMEOUT', 'MISSING')"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("total", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("passed", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("failed", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("totals", sa.Text, nullable=False, server_default="{}"))
    op.execute(
        "UPDATE runs SET "
        "total = (SELECT COUNT(*) FROM results r WHERE r.run = runs.id), "
        "passed = (SELECT COUNT(*) FROM results r WHERE r.run = runs.id AND r.status = 'PASS'), "
        f"failed = (SELECT COUNT(*) FROM results r WHERE r.run = runs.id AND r.status IN {_FAILED})")
    # totals (status -> count) as JSON, built in Python: the two dialects' JSON functions differ
    conn = op.get_bind()
    counts: dict = {}
    for run, status, n in conn.execute(sa.text("SELECT run, status, COUNT(*) FROM results GROUP BY run, status")):
        counts.setdefault(run, {})[status] = n
    import json
    for run, totals in counts.items():
        conn.execute(sa.text("UPDATE runs SET totals = :t WHERE id = :id"),
                     {"t": json.dumps(dict(sorted(totals.items()))), "id": run})


    # spelled out for the same reason as _FAILED; the queries repeat it word for word (schema.FAILING),
    # which is how SQLite knows the partial index answers them
    failing = "status IN ('FAIL', 'CRASH', 'TIMEOUT', 'FLAKE')"
    op.create_index("results_failing", "results", ["run", "case"], sqlite_where=sa.text(failing),
                    postgresql_where=sa.text(failing))


def downgrade() -> None:
    op.drop_index("results_failing", "results")
    with op.batch_alter_table("runs") as batch:
        for name in ("totals", "failed", "passed", "total"):
            batch.drop_column(name)
