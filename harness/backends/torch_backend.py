"""The torch backend: the device under test is PyTorch itself on --device.

It runs the same case, in the case's dtype and memory layout, through the
op's `torch_op` (the aten backward) so the whole pipeline works without a
CANN, and so the cases can validate CUDA or torch_npu devices too.
"""
from __future__ import annotations

import time

import torch

import golden as golden_pkg

from ..core.errors import HarnessConfigError
from ..inputs import Arg, attrs_of
from ..model import OpDescriptor
from ..target.settings import BackendSettings
from .base import BackendInfo, RunResult


class TorchBackend:
    reports_status = False      # PyTorch has no equivalent of aclnn phase-1 status codes

    def __init__(self, config):
        config = BackendSettings.from_wire(config)
        device = config.device or "cpu"
        try:
            self.device = torch.device(device)
            torch.empty(1, device=self.device)
        except (RuntimeError, AssertionError) as e:
            raise HarnessConfigError(f"--device: torch cannot use device {device!r}: {str(e).splitlines()[0]}") from None
        self.perf_all = config.perf     # --perf: every passing case timed
        self.timing = timing_of(self.device)
        self.info = BackendInfo("torch", f"torch {torch.__version__}", str(self.device), None,
                                config.family, simulated=True, version=torch.__version__,
                                details={"timing": self.timing, "perf": self.perf_all})

    def _on_device(self, arg) -> torch.Tensor:
        storage = arg.storage.to(self.device)
        view = torch.as_strided(storage, arg.dims, arg.strides, arg.offset)
        if arg.perm is None:
            return view
        return view.permute(*[arg.perm.index(i) for i in range(len(arg.perm))])

    def run(self, op: OpDescriptor, args: list[Arg]) -> RunResult:
        tensors = {a.name: self._on_device(a.value) for a in args if a.kind == "tensor" and not a.is_output}
        result = golden_pkg.load(op.golden).torch_op(tensors, attrs_of(args))
        outputs = {}
        for a in args:
            if a.is_output:
                a.value.logical.copy_(result[a.name].to("cpu"))
                outputs[a.name] = a.value
        return RunResult(status=0, phase2_status=0, sync_status=0, outputs=outputs)

    def measure(self, op: OpDescriptor, args: list[Arg], loop) -> dict:
        """Perf mode: the op launched and timed as often as loop(launch) decides, on the case's
        inputs on the device: device events on an accelerator (a GPU as ATK's benchmark device),
        the host's clock on the CPU. Launch i's outputs are new tensors each time, as the aten op
        allocates them; nothing is copied back."""
        tensors = {a.name: self._on_device(a.value) for a in args if a.kind == "tensor" and not a.is_output}
        fn, attrs = golden_pkg.load(op.golden).torch_op, attrs_of(args)
        events = getattr(torch, self.device.type, None) if self.device.type != "cpu" else None
        launch = (event_timer(events, lambda: fn(tensors, attrs)) if events is not None
                  else host_timer(lambda: fn(tensors, attrs)))
        result = loop(launch)
        return {**result, "timing": self.timing, "timing_source": TIMING_SOURCES.get(self.timing, self.timing),
                "phase1_ms": None}

    def after_case(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


TIMING_SOURCES = {"perf_counter": "the host's clock around each call (torch on the CPU)",
                  "cuda_events": "CUDA events around each call on the current stream"}


def timing_of(device: torch.device) -> str:
    """The label of what a launch time means on `device` (perf_baseline compares equal labels only)."""
    return "perf_counter" if device.type == "cpu" else f"{device.type}_events"


def host_timer(work):
    """launch() -> milliseconds of one call of work() by the host's monotonic clock."""
    def launch() -> float:
        t0 = time.perf_counter()
        work()
        return (time.perf_counter() - t0) * 1e3
    return launch


def event_timer(module, work):
    """launch() -> milliseconds between two timing events of `module` (torch.cuda; torch.npu has the
    same Event API) recorded around work() on the current stream, read once the end event is done.
    Not yet run on a GPU here: tests/test_perf_mode.py drives it with a stand-in module."""
    start, end = module.Event(enable_timing=True), module.Event(enable_timing=True)

    def launch() -> float:
        start.record()
        work()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    return launch
