"""What a run runs on, and how that is found out before any library loads.

`Target` is the one description of a run's device under test: backend, SoC family and name, whether
it is simulated, the library and its version. The backend that a case worker opens says it (its
properties, BackendInfo.as_properties); everything above reads it from here: the report directory's
name, which family's cases a run selects, what a report's banner and a record's identity say.
`discovery` finds the CANN a run uses, builds the software CANN when there is none, and hands the
software CANN its SoC.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    backend: str                 # aclnn | torch
    family: str | None           # the SoC family the results are for (None: torch on any family)
    soc_name: str                # aclrtGetSocName(); "" for torch
    simulated: bool              # the software CANN or torch: never hardware
    library: str                 # the operator library (aclnn) or "torch <version>"
    version: str                 # the CANN (or torch) version
    timing: str = ""             # what device times mean on it (events, modelled, ...); "" unknown
    device: str = ""             # npu:<id>, or torch's device
    software_cann: bool = False  # the software CANN of this project (simulated, and says so)
    determinism_level: int = 0   # what the backend set: 1 --deterministic, 2 strong consistency too
    relaunch: bool = False       # every case's executor launched twice

    @classmethod
    def from_properties(cls, props: dict) -> "Target":
        """The target of a backend's properties: the wire form (BackendInfo.as_properties) in which it
        crosses from a case worker, into records and reports, and back. Missing provenance is never
        read as hardware."""
        level = props.get("determinism_level", "")
        return cls(props.get("backend", ""), props.get("family") or None, props.get("soc_name", ""),
                   _flag(props, "simulated", default=True), props.get("library", ""),
                   props.get("backend_version", ""), props.get("timing", ""), props.get("device", ""),
                   _flag(props, "software_cann"),
                   int(level) if str(level).isdigit() else int(_flag(props, "deterministic")),
                   _flag(props, "relaunch"))

    @property
    def deterministic(self) -> bool:
        return self.determinism_level >= 1

    @property
    def label(self) -> str:
        """backend-family: the name of the run's default report directory and of its baseline files."""
        return f"{self.backend or 'unknown'}-{self.family or 'any'}"

    def report_dir(self, root: Path) -> Path:
        """The default report directory of a run on this target (--report-dir overrides it)."""
        return Path(root) / "reports" / self.label

    def selected_family(self, requested: str | None) -> str | None:
        """Whose cases a run selects: on aclnn the family of the SoC the library reports (a real CANN's
        is its hardware's, whatever --soc said; --soc was checked against it when it opened), on torch
        the one --soc asked for (None: any family)."""
        if self.backend == "aclnn" and self.family:
            return self.family
        return requested


def wire(value) -> str:
    """A property's wire form: one spelling of a truth value ("true"/"false"), "" for None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _flag(props: dict, key: str, default: bool = False) -> bool:
    """A truth value of the properties: "true"/"false" as wire() writes them; "True"/"False" as records
    written before it did (str(bool)) still say."""
    value = str(props.get(key, "")).lower()
    return {"true": True, "false": False}.get(value, default)
