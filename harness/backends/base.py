"""The contract between the case runner and a backend (device under test)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..model import OpDescriptor
from ..target import Target

if TYPE_CHECKING:       # annotations only: the pytest process of a run never builds tensors
    from ..inputs import Arg, TensorArg


@dataclass
class RunResult:
    status: int                           # phase-1 status (aclnnStatus)
    message: str = ""                     # aclGetRecentErrMsg() text after a failure
    phase2_status: int | None = None      # None when phase 2 did not run
    sync_status: int | None = None
    outputs: dict[str, TensorArg] = field(default_factory=dict)   # storage copied back to host
    timings: dict[str, float] = field(default_factory=dict)      # seconds per phase, where the backend splits them
    not_run: str = ""                     # why phase 2 was deliberately not run after a successful phase 1
    workspace_size: int | None = None     # phase 1's *workspaceSize when it succeeded
    launch_s: float | None = None         # wall time of phase 2 + stream sync; None when not run
    launches: int | None = None           # kernels launched by phase 2 (+ sync); None: not run, or the
                                          # library offers no launch counter (a real CANN: profiler only)
    inputs_written: tuple[str, ...] = ()  # input tensors whose device buffer phase 2 changed (an
                                          # aclnn input is const: a kernel using it as scratch is a bug)
    workspace_overrun: int = 0            # guard bytes after the workspace that phase 2 changed
    workspace_damage: str = ""            # the first of them: offset, bytes found and expected (guard.Damage)
    second: RunResult | None = None       # run(relaunch=True): the repeatable executor's second launch
    stale_workspace: int = 0              # a second launch: bytes of the first launch's workspace it changed

    @property
    def runtime_failed(self) -> bool:
        return bool(self.phase2_status) or bool(self.sync_status)


@dataclass(frozen=True)
class BackendInfo:
    """What produced a result. Goes into every report line and the JUnit properties."""
    backend: str            # "torch" | "aclnn"
    library: str            # e.g. "torch 2.13.0" or the libopapi path
    device: str
    soc_name: str | None    # aclrtGetSocName(), None for torch
    family: str | None      # SoC family under test, None when not applicable
    simulated: bool         # True: software CANN or torch, never hardware
    version: str = ""
    details: dict = field(default_factory=dict, hash=False, compare=False)

    def target(self) -> Target:
        """What it says of itself, typed: the run's target (its details: every library path, the
        fallback reason, ... ride along)."""
        said = {"backend": self.backend, "library": self.library, "device": self.device,
                "soc_name": self.soc_name or "", "family": self.family or "",
                "simulated": self.simulated, "backend_version": self.version}
        return Target.from_wire({**said, **{k: v for k, v in self.details.items() if k not in said}})

    def banner(self) -> str:
        return self.target().banner


class Backend(Protocol):
    info: BackendInfo
    # False: the backend has no phase-1 status codes, so invalid-parameter cases are skipped
    reports_status: bool

    def run(self, op: OpDescriptor, args: list[Arg]) -> RunResult:
        """Run phase 1 (and phase 2 when phase 1 succeeds); copy outputs back. A backend with
        executors (repeatable_executors = True) also takes relaunch=True: see RunResult.second."""

    def after_case(self) -> list[str]:
        """Post-case health checks (e.g. leaked objects); returns problems found."""

    def recover(self) -> str:
        """Optional: bring the device back after a runtime error; returns what was done.
        Backends without it are recovered by a fresh worker process."""

    def close(self) -> None: ...


class LaunchFailed(Exception):
    """A launch of the perf mode's timing loop failed (a backend's `measure`): the statuses say how,
    and a non-zero one leaves the device in doubt, as a failed phase 2 does."""

    def __init__(self, message: str, phase2_status: int | None = None, sync_status: int | None = None):
        super().__init__(message)
        self.phase2_status, self.sync_status = phase2_status, sync_status
