"""What a run runs on, and how that is found out before any library loads.

`Target` is the one description of a run's device under test: backend, SoC family and name, whether
it is simulated, the library and its version. The backend that a case worker opens says it
(BackendInfo.target); it crosses processes in its wire form of plain strings, turned back into a
Target where it arrives (`to_wire`/`from_wire`), and everything above reads the typed fields: the
report directory's name, which family's cases a run selects, what a banner and a record's identity say.
`discovery` finds the CANN a run uses, builds the software CANN when there is none, and hands the
software CANN its SoC.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path


# The typed fields' wire keys. Every other key of the wire form (library paths, how set_env.sh was
# applied, why the software CANN was built, ...) is a detail: kept, in order, and written back as it came.
_WIRE_KEYS = ("backend", "family", "soc_name", "simulated", "library", "backend_version", "timing", "device",
              "software_cann", "determinism_level", "relaunch")


@dataclass(frozen=True)
class Target:
    backend: str                 # aclnn | torch; "" where nothing said (a record of before, a bare manifest)
    family: str | None           # the SoC family the results are for (None: torch on any family)
    soc_name: str                # aclrtGetSocName(); "" for torch
    provenance: str              # hardware | simulated | unknown (nothing said: never read as hardware)
    library: str                 # the operator library (aclnn) or "torch <version>"
    version: str                 # the CANN (or torch) version
    timing: str = ""             # what device times mean on it (events, modelled, ...); "" unknown
    device: str = ""             # npu:<id>, or torch's device
    software_cann: bool = False  # the software CANN of this project (simulated, and says so)
    determinism_level: int = 0   # what the backend set: 1 --deterministic, 2 strong consistency too
    relaunch: bool = False       # every case's executor launched twice
    details: tuple[tuple[str, str], ...] = ()   # the other wire keys, as (key, wire string)

    # ------------------------------------------------------------ the wire form, at process boundaries

    @classmethod
    def from_wire(cls, props: Mapping) -> "Target":
        """The target of its wire form: the str-to-str properties in which it crosses from a case worker
        (child.serve's "ready"), to xdist workers (RunInfo), into records, summaries, JUnit properties and
        back. Missing provenance is never read as hardware; a key this type does not know is a detail."""
        level = props.get("determinism_level", "")
        said = str(props.get("simulated", "")).lower()
        return cls(str(props.get("backend") or ""), str(props.get("family") or "") or None,
                   str(props.get("soc_name") or ""),
                   {"true": "simulated", "false": "hardware"}.get(said, "unknown"),
                   str(props.get("library") or ""), str(props.get("backend_version") or ""),
                   str(props.get("timing") or ""), str(props.get("device") or ""),
                   _flag(props, "software_cann"),
                   int(level) if str(level).isdigit() else int(_flag(props, "deterministic")),
                   _flag(props, "relaunch"),
                   tuple((str(k), wire(v)) for k, v in props.items() if k not in _WIRE_KEYS))

    def to_wire(self) -> dict[str, str]:
        """Plain strings, one spelling of true: what xdist, JSON and JUnit carry. from_wire(to_wire()) == self."""
        typed = {"backend": self.backend, "family": self.family or "", "soc_name": self.soc_name,
                 "simulated": {"simulated": True, "hardware": False}.get(self.provenance), "library": self.library,
                 "backend_version": self.version, "timing": self.timing, "device": self.device,
                 "software_cann": self.software_cann, "determinism_level": self.determinism_level,
                 "relaunch": self.relaunch}
        out = {k: wire(v) for k, v in typed.items() if not (k == "simulated" and v is None)}
        out.update(self.details)
        return out

    def detail(self, key: str) -> str:
        """A detail's wire string ("" when the backend did not say it)."""
        return dict(self.details).get(key, "")

    def requested(self, backend: str, family: str | None) -> "Target":
        """This target, with what a run asked for where the backend said nothing (a run that stopped
        before its backend opened still names its backend and family)."""
        return replace(self, backend=self.backend or backend, family=self.family or family or None)

    # ------------------------------------------------------------ what it means

    @property
    def simulated(self) -> bool:
        """The software CANN, torch, or nothing said: everything but a backend that said hardware."""
        return self.provenance != "hardware"

    @property
    def deterministic(self) -> bool:
        return self.determinism_level >= 1

    @property
    def banner(self) -> str:
        """One line saying what produced the results, the same in every process of a run."""
        kind = {"simulated": "SIMULATED (not hardware)", "hardware": "HARDWARE"}.get(self.provenance,
                                                                                  "UNKNOWN PROVENANCE")
        shown = {"backend": self.backend, "device": self.device, "library": self.library,
                 "soc_name": self.soc_name, "family": self.family, "backend_version": self.version}
        return f"{kind}: " + " ".join(f"{k}={v}" for k, v in shown.items() if v)

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


def _flag(props: Mapping, key: str, default: bool = False) -> bool:
    """A truth value of the properties: "true"/"false" as wire() writes them; "True"/"False" as records
    written before it did (str(bool)) still say."""
    value = str(props.get(key, "")).lower()
    return {"true": True, "false": False}.get(value, default)


UNKNOWN = Target.from_wire({})      # nothing said yet: no backend, unknown provenance
