"""A synthetic case file for the robustness tests: many tiny MaxPool2d cases, plus one-case
groups whose gradOutput sizes are unique, so a SWCANN_FAULTS trigger (numel=N) hits exactly them."""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tests.test_casefile_errors import BASE

ATTRS = {"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}
SIDES = (4, 6, 8, 10, 12)
# gradOutput of [1, 1, 2a, 2b] pooled 2x2 has a*b elements: all above the regular cases' 5*6*6
FAULTY = {"f289": (17, 17), "f323": (17, 19), "f361": (19, 19), "f437": (19, 23), "f529": (23, 23)}
# what a CaseExecutor or CasePool is given to run these on the software CANN, as plugin.py builds it
EXECUTOR_SETTINGS = {"backend": "aclnn", "device": None, "family": None, "no_sw_fallback": False,
                     "deterministic": False, "worker": None}


def faulty_numel(group: str) -> int:
    a, b = FAULTY[group]
    return a * b


def _regular(name: str, channels, sides) -> dict:
    return {"name": name, "matrix": {
        "shape": [[1, c, h, w] for c in channels for h in sides for w in sides],
        "dtype": ["float32"], "index_dtype": ["int32"], "format": ["NCHW"], "layout": ["contiguous", "strided"],
        "values": ["uniform", "small_int", "normal", "constant"], "attrs": [ATTRS]}}


def write_cases(directory: Path, channels=range(1, 6), sides=SIDES, hang_timeout_s: float | None = None) -> Path:
    """cases/mp.yaml under `directory`: 8 * len(sides)**2 * len(channels) regular cases (1,000 by default),
    half before and half after the FAULTY groups, so every fault has cases running after it."""
    channels = list(channels)
    half = (len(channels) + 1) // 2
    doc = copy.deepcopy(BASE)
    doc["groups"] = [_regular("before", channels[:half], sides)]
    for name, (a, b) in FAULTY.items():
        group = {"name": name, "matrix": {"shape": [[1, 1, 2 * a, 2 * b]], "dtype": ["float32"],
                                          "index_dtype": ["int32"], "format": ["NCHW"], "attrs": [ATTRS]}}
        if hang_timeout_s is not None:
            group["timeout_s"] = hang_timeout_s
        doc["groups"].append(group)
    if channels[half:]:
        doc["groups"].append(_regular("after", channels[half:], sides))
    cases = Path(directory) / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    path = cases / "mp.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def stop_and_wait(proc, send, timeout: float = 120.0) -> tuple[str, float]:
    """send(proc) a stop signal to a run started in a session of its own; (its output, seconds from
    the signal to its exit). Whatever is still running afterwards is killed, the whole group."""
    import os
    import signal
    import time
    try:
        sent = time.monotonic()
        send(proc)
        out = proc.communicate(timeout=timeout)[0]
        return out, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def flat(outcome) -> dict:
    """An executor's Outcome as the flat dict these tests read: `status` is what the case did (its raw
    status; no case file or baseline decides anything at this level), diagnostics at the top."""
    import dataclasses
    d = {k: v for k, v in dataclasses.asdict(outcome).items() if k not in ("raw", "diagnostics")}
    return {**d, **outcome.diagnostics, "status": outcome.raw.value}


def run_each(*runs) -> list[dict]:
    """Each (case, deadline in s) in turn through one CaseExecutor on EXECUTOR_SETTINGS; their flat
    records. The executor is closed whatever happens."""
    from harness.execution.supervisor import CaseExecutor
    executor = CaseExecutor(EXECUTOR_SETTINGS)
    try:
        executor.start()
        return [flat(executor.run(case, deadline)) for case, deadline in runs]
    finally:
        executor.close()
