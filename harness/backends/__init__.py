"""Backends: the device under test. `create(name, config)` returns one."""
from __future__ import annotations

from ..errors import HarnessConfigError

NAMES = ("torch", "aclnn")


def create(name: str, config):
    if name == "torch":
        from .torch_backend import TorchBackend
        return TorchBackend(config)
    if name == "aclnn":
        from .aclnn import AclnnBackend
        return AclnnBackend(config)
    raise HarnessConfigError(f"--backend: unknown backend {name!r}; valid: {', '.join(NAMES)}")
