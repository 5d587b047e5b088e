"""What produced a result, carried by every report: never inferred from a missing record.

A case that errors before it is judged (in setup, or before the backend call)
records no outcome, and under xdist the controller that writes the reports has
no backend of its own. So each case report of a process that runs cases gets
the facts of the backend that process loaded, whatever happened to the case,
and the controller labels the run from those facts.
"""
from __future__ import annotations

import pytest

CASE_KEYS = ("case_id", "op", "outcome")


def attach(report, get_backend) -> None:
    """Add the backend's properties to a case report that does not carry them yet
    (get_backend loads the backend if this process has none; a backend that cannot
    load is reported by the case itself, so nothing is added then)."""
    if "simulated" in dict(report.user_properties):
        return
    try:
        backend = get_backend()
    except pytest.UsageError:
        return
    report.user_properties.extend(backend.info.as_properties().items())


def properties_of(props: dict) -> dict:
    """The backend facts among a report's properties."""
    return {k: v for k, v in props.items() if k not in CASE_KEYS}


def lacks_backend(properties: dict) -> bool:
    return "simulated" not in properties
