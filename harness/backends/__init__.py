"""Backends: the device under test. `create(name, settings)` returns one;
`preview(name, settings)` says what a run would use without opening anything."""
from __future__ import annotations

from ..core.errors import HarnessConfigError

NAMES = ("torch", "aclnn")


def create(name: str, settings):
    if name == "torch":
        from .torch_backend import TorchBackend
        return TorchBackend(settings)
    if name == "aclnn":
        from .aclnn import AclnnBackend
        return AclnnBackend(settings)
    raise HarnessConfigError(f"--backend: unknown backend {name!r}; valid: {', '.join(NAMES)}")


def preview(name: str, settings) -> str:
    """One line from library discovery alone: no device session, no CUDA init (the xdist
    controller prints it while the workers open the real backends)."""
    family = f" family={settings.family}" if settings.family else ""
    if name == "torch":
        return f"SIMULATED (not hardware): backend=torch device={settings.device or 'cpu'}{family}"
    from ..acl import loader
    found = loader.discover()
    if found.root is None:
        return (f"SIMULATED (not hardware): backend=aclnn on the software CANN (no CANN found: "
                f"{found.describe_search()}){family}")
    if (found.root / "swcann.info").is_file():
        return f"SIMULATED (not hardware): backend=aclnn software CANN at {found.root}{family}"
    return f"HARDWARE: backend=aclnn CANN at {found.root} ({found.source}){family}"
