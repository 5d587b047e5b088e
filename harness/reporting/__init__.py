"""Statuses, baselines and gating, sharding, and the reports (results.jsonl, junit.xml, summary.md,
report.html) with merging and night-over-night comparison. CLI: python -m harness.reporting --help."""
