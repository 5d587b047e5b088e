"""Judging layer: comparators, the case runner, and what it produces (outcome, digests)."""
