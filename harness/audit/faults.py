"""The named faults of the software CANN (`SWCANN_FAULTS`, swcann/README.md) that
harness.audit.faultscore scores, each with the suite subset that reaches it and the class the
score must find: FAULTS are the ones a suite run reports by itself (the C table's `k_names`),
PERF_FAULTS the performance faults (`k_perf_names`), which only the perf gate sees: the kernel
does more work, never a changed bit.

The expected classification of every fault is data, kept with the faults in swcann/faults.yaml:
change a line there and the score says whether the suite really reports the fault that way
(tests/test_faultscore.py does, on purpose).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..core.paths import SWCANN_DIR

FAULTS_FILE = SWCANN_DIR / "faults.yaml"


@dataclass(frozen=True)
class Fault:
    name: str           # SWCANN_FAULTS name (swcann/src/core/faults.c)
    kind: str           # numeric | check | resource | run-level | perf
    op: str             # trigger: the fault hits launches of this operator only
    select: str         # pytest -k: the cases that reach the buggy path
    expect: str         # class every failing case must have
    detail: str | None  # required detail of that class (check id, signal, status code); None: any
    what: str           # the bug, in one line
    family: str = "ascend910b"
    options: tuple[str, ...] = ()      # more pytest arguments (--tier all, --case-timeout S)

    @property
    def env_value(self) -> str:
        return f"{self.name}@op={self.op}"

    @property
    def key(self) -> str:
        """One scored entry: a fault shared by several ops' kernels is scored once per op."""
        return self.env_value


def load(path: Path = FAULTS_FILE) -> tuple[tuple[Fault, ...], tuple[Fault, ...]]:
    """(the faults a suite run reports by itself, the perf faults) of the table `path` (swcann/faults.yaml,
    the software CANN's data: which operator each fault hits is named there, never in harness code)."""
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))

    def entries(key: str) -> tuple[Fault, ...]:
        out = []
        for i, e in enumerate(doc[key]):
            try:
                out.append(Fault(**{**e, "options": tuple(e.get("options") or ())}))
            except TypeError as exc:   # a missing or unknown field: name the file and the entry
                raise ValueError(f"{path}: {key}[{i}] ({e.get('name')}): {exc}") from None
        return tuple(out)
    return entries("faults"), entries("perf_faults")


FAULTS, PERF_FAULTS = load()
