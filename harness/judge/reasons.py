"""Words the runner's failure reasons are built from, where tools read a reason back
(harness.audit.faultscore classifies records by them): defined once, so rewording a reason cannot
quietly change what the reason is classified as."""
from __future__ import annotations

from ..acl.meminfo import NOT_RETURNED as MEMORY_NOT_RETURNED    # a backend's problem: + ": N bytes less free ..."

WROTE_INTO_INPUT = "the library wrote into input"            # + " gradOutput: ..." (the inputs, then a colon)
WORKSPACE_OVERRUN = "the library wrote past the end of its workspace"
OUTSIDE_VIEW = "wrote outside the output view"         # + ": " the region, byte offset, bytes found and expected
NONDETERMINISTIC = "nondeterministic:"
BATCH_SLICE = "batch-slice inconsistent:"                   # + " gradInput[i:j] differs ..." (batch_slice.py)
RELAUNCH = "second launch of the repeatable executor"        # + ": " what that launch got wrong
