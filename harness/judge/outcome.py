"""What running one case produced, as one typed object: the case runner fills it in the case
worker, the supervisor makes one for a worker that crashed, hung or lost its device, and the
reporting layer turns it into the case's record (harness/reporting/records.py: the one constructor)
and its final status (harness/reporting/classify.py: the one decision).

`raw` is only what the case itself did (PASS, FAIL, SKIP, CRASH, TIMEOUT, MISSING); what it means
for the gate (a known deviation, a baseline waiver, a flake) is decided later, once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.status import Status
from ..target import Target

# What a record carries about how its worker ran it, when there is something to say (a crash's signal
# and stack, a hang's deadline, the library's last message, a device reset, an exception's traceback,
# why a hung worker gave no stack, whether the OOM killer took it, the culprit or victim of a heap
# corruption or guard violation (blame), processes the library left behind, a harness error beside
# the case's own failure).
DIAGNOSTIC_KEYS = ("signal", "stack", "last_error", "output", "deadline_s", "traceback", "recovery",
                   "recovered_from", "blocked_signals", "oom", "blame", "left_processes",
                   "harness_error")


@dataclass
class Outcome:
    case_id: str
    op: str
    raw: Status = Status.PASS
    reason: str = ""                  # one line: why it failed, was skipped or was not run; "" for a plain pass
    family: str | None = None         # the family the case was judged for
    phase1_status: int | None = None  # what phase 1 (GetWorkspaceSize) returned; None: not called
    expected_status: int | None = None
    check: str | None = None          # the section-B check an invalid case names
    message: str = ""                 # the library's message after a failing call (aclGetRecentErrMsg)
    phase2_status: int | None = None  # None: phase 2 did not run
    sync_status: int | None = None
    workspace_size: int | None = None
    verdict: dict | None = None       # the comparison with the golden (compare.Verdict.to_dict())
    digests: dict = field(default_factory=dict)     # output name -> judge/digest.py digest of its view
    duration_s: float = 0.0
    started_at: float | None = None   # time.time() when its case worker began it (a run's span of cases)
    launch_s: float | None = None     # phase 2 + sync wall time
    device_s: float | None = None     # the same, over every launch of the case (device_time.py)
    launches: int | None = None       # kernels phase 2 launched, where the backend can count them
    launches_note: str = ""           # why an empty case's launches could not be counted
    timings: dict = field(default_factory=dict)     # seconds: golden, inputs, run (phase1, phase2), compare, ...
    problems: list = field(default_factory=list)    # what the backend's health check found after the case
    backend: Target | None = None     # what ran it; None: the target its worker announced
    worker: str = ""                  # the case worker that ran it (or tried to)
    device_resets: int = 0            # device resets and worker replacements of that worker so far
    diagnostics: dict = field(default_factory=dict)  # DIAGNOSTIC_KEYS, where there is something to say
    dump: dict | str | None = None    # --dump-failures: the arrays file the worker wrote; its path once complete
    perf: dict | None = None          # --perf: the timing distribution (harness/judge/perf.py)
    determinism: dict | None = None   # the determinism level it was held to and what was checked (batch_slice.py)

    def fail(self, reason: str) -> "Outcome":
        self.raw, self.reason = Status.FAIL, reason
        return self

    @property
    def needs_recovery(self) -> bool:
        """A runtime error (phase 2, stream sync) or an exception leaves the device in an unknown state."""
        return bool(self.phase2_status) or bool(self.sync_status) or "traceback" in self.diagnostics

    @classmethod
    def not_judged(cls, case, raw: Status, reason: str, **diagnostics) -> "Outcome":
        """A case its worker could not judge: CRASH, TIMEOUT, or MISSING when its device is lost."""
        return cls(case.id, case.op.name, raw, reason, diagnostics={k: v for k, v in diagnostics.items()
                                                                   if v not in (None, "")})
