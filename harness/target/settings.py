"""What a case worker needs to open its backend: one typed, frozen record, and its wire form.

The pytest process builds it from the options (plugin/options.py), a case worker receives it over
its pipe as plain data (`to_wire`) and rebuilds it (`from_wire`), and the backends read its fields.
An unknown key is an error at the boundary, so a misspelt setting never silently takes its default.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass(frozen=True)
class BackendSettings:
    backend: str = "aclnn"                  # aclnn | torch
    device: str | None = None               # --device (torch), or a device id (aclnn); None: the default
    family: str | None = None               # --soc: the family the run asks for
    no_sw_fallback: bool = False            # refuse the software CANN
    deterministic: bool = False             # --deterministic (determinism level 1)
    determinism_level: int | None = None    # --determinism-level; None: from `deterministic`
    worker: str | None = None               # the xdist worker ("gw0"), None without xdist
    slot: int | None = None                 # the case worker's device slot in its pool (execution/pool.py)
    golden_cache: str | None = None         # --golden-cache directory
    relaunch: bool = False                  # --relaunch: every case's executor twice
    perf: bool = False                      # --perf: every passing case timed
    malloc_check: bool = False              # --malloc-check: glibc heap checking in the case workers

    @property
    def level(self) -> int:
        """The determinism level in force: --determinism-level, else 1 with --deterministic."""
        return self.determinism_level if self.determinism_level is not None else int(self.deterministic)

    def with_(self, **changes) -> "BackendSettings":
        return replace(self, **changes)

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data) -> "BackendSettings":
        """The settings of plain data (a dict from the pipe, or a namespace of a script's); ValueError
        naming an unknown key."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            data = vars(data)
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"backend settings: unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")
        return cls(**data)
