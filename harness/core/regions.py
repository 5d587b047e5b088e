"""The names of the guard regions around an output's view and after the workspace (inputs/guard.py
lays and reads them; the judge's reasons and triage's signatures name them). Here, below both, so
that reading a record never imports the input machinery (and torch with it)."""
from __future__ import annotations

BEFORE_VIEW = "before the view"
STRIDE_GAP = "stride gap"
AFTER_TAIL = "after the tail"
WORKSPACE_TAIL = "workspace tail"
REGIONS = (BEFORE_VIEW, STRIDE_GAP, AFTER_TAIL, WORKSPACE_TAIL)
