"""Executable section-B models of the operators (golden/_phase1.py)."""
