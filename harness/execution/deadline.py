"""How long a case may take before it is a TIMEOUT.

Precedence: --case-timeout on the command line, then the case file's `timeout_s`
(per group), then a default sized from the case: a fixed allowance for the harness's
own work plus time proportional to the number of elements of the case's main input
(the software CANN is the slowest device it runs on).
"""
from __future__ import annotations

import math

BASE_S = 60.0
PER_MILLION_ELEMENTS_S = 20.0


def deadline_for(case, command_line: float | None = None) -> float:
    if command_line is not None:
        return float(command_line)
    if getattr(case, "timeout_s", None) is not None:
        return float(case.timeout_s)
    elements = math.prod(case.shape) if case.shape else 1
    return BASE_S + PER_MILLION_ELEMENTS_S * elements / 1e6
