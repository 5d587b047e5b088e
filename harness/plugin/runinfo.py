"""RunInfo: what every process of a run shares once the controller has opened it.

The controller (or the only process) opens the run: it learns the target from a probe case worker,
takes the report directory and reads what a resumed run already finished. xdist workers receive
it through their workerinput (plain data: `to_wire`/`from_wire`), so every process records into
the same directory, under the same run id, for the same target.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ..target import Target

RUN = pytest.StashKey()        # config.stash[RUN]: the RunInfo of this process, once the run is open


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    report_dir: str                       # absolute
    target: Target                        # what the run runs on (its backend said, BackendInfo.target)
    done: tuple[str, ...] = ()            # --resume: case ids that already have a final record
    missing_before: tuple[str, ...] = ()  # --resume: case ids that will run again
    previous: str | None = None           # where the last run's results were moved, if anywhere
    extra: dict = field(default_factory=dict)

    def to_wire(self) -> dict:
        return {"run_id": self.run_id, "report_dir": self.report_dir, "target": self.target.to_wire(),
                "done": list(self.done), "missing_before": list(self.missing_before), "previous": self.previous}

    @classmethod
    def from_wire(cls, data: dict) -> "RunInfo":
        return cls(data["run_id"], data["report_dir"], Target.from_wire(data["target"]), tuple(data.get("done") or ()),
                   tuple(data.get("missing_before") or ()), data.get("previous"))
