"""The torch backend: the device under test is PyTorch itself on --device.

It runs the same case, in the case's dtype and memory layout, through the
op's `torch_op` (the aten backward) so the whole pipeline works without a
CANN, and so the cases can validate CUDA or torch_npu devices too.
"""
from __future__ import annotations

import torch

import golden as golden_pkg

from ..core.errors import HarnessConfigError
from ..inputs import Arg, attrs_of
from ..model import OpDescriptor
from .base import BackendInfo, RunResult


class TorchBackend:
    reports_status = False      # PyTorch has no equivalent of aclnn phase-1 status codes

    def __init__(self, config):
        device = config.device or "cpu"
        try:
            self.device = torch.device(device)
            torch.empty(1, device=self.device)
        except (RuntimeError, AssertionError) as e:
            raise HarnessConfigError(f"--device: torch cannot use device {device!r}: {str(e).splitlines()[0]}") from None
        self.info = BackendInfo("torch", f"torch {torch.__version__}", str(self.device), None,
                                config.family, simulated=True, version=torch.__version__)

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

    def after_case(self) -> list[str]:
        return []

    def close(self) -> None:
        pass
