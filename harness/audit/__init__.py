"""Audits of the case files themselves (coverage, traceability, per-axis and size-limit
gaps) and of the suite against a misbehaving library (faultscore)."""
