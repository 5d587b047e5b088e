"""The one status model for case results, shared by the runner's records, the gate and the reports.

A run produces the raw statuses (PASS, FAIL, CRASH, TIMEOUT, SKIP, MISSING). Gating against a
baseline, a case file's known deviation, or an automatic rerun turns some of them into the
gating statuses (EXPECTED_FAIL, UNEXPECTED_PASS, FLAKE). Records keep both: `raw_status` is what
the case did, `status` what it means for the gate.
"""
from __future__ import annotations

import enum


class Status(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    CRASH = "CRASH"                      # the process running the case died (segfault, abort)
    TIMEOUT = "TIMEOUT"
    SKIP = "SKIP"                        # always carries a reason
    MISSING = "MISSING"                  # selected (in the manifest) but no result came back
    EXPECTED_FAIL = "EXPECTED_FAIL"      # failed, and a baseline entry or known deviation says so
    UNEXPECTED_PASS = "UNEXPECTED_PASS"  # passed although waived: the waiver is stale
    FLAKE = "FLAKE"                      # failed, then passed on an automatic rerun (or a listed flake)

    def __str__(self) -> str:        # f-strings and JSON show the bare name
        return self.value

    @property
    def is_failure(self) -> bool:
        """The case did not produce a correct result (before any waiver is applied)."""
        return self in _FAILURES

    @property
    def css(self) -> str:
        return self.value.lower().replace("_", "-")


_FAILURES = frozenset({Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.MISSING})

# The order tables and reports list statuses in: worst first.
ORDER: tuple[Status, ...] = (Status.CRASH, Status.TIMEOUT, Status.MISSING, Status.FAIL,
                             Status.UNEXPECTED_PASS, Status.FLAKE, Status.EXPECTED_FAIL,
                             Status.PASS, Status.SKIP)

_BY_NAME = {s.value: s for s in Status}


def parse(value) -> Status:
    """A Status from a Status or its name; ValueError names the bad value."""
    if isinstance(value, Status):
        return value
    text = str(value)
    if text in _BY_NAME:
        return _BY_NAME[text]
    raise ValueError(f"unknown status {text!r}; valid: {', '.join(Status.__members__)}")
