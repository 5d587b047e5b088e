"""Triage: a run's failures as a few named causes, each a short predicate over the cases' typed
facts with its precision and recall (search.py says how and why; signature.py what failed;
features.py the facts). It reads records; harness/reporting only renders what it returns."""
from __future__ import annotations

from .search import Cause, Triage, Unexplained, triage

__all__ = ["Cause", "Triage", "Unexplained", "triage"]
