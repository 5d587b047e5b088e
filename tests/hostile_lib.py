"""Running case workers on the hostile library of tests/hostile/sitecustomize.py."""
from __future__ import annotations

import os
from pathlib import Path

SHIM_DIR = Path(__file__).resolve().parent / "hostile"


def hostile_env(spec: str, state_dir: Path, **more) -> dict[str, str]:
    """Environment changes that give every case worker started afterwards the hostile library
    `spec` (HOSTILE, sitecustomize.py's grammar); its counters and pid files go to `state_dir`."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(p for p in (str(SHIM_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return {"HOSTILE": spec, "HOSTILE_DIR": str(state_dir), "PYTHONPATH": path, **{k: str(v) for k, v in more.items()}}


def use_hostile(monkeypatch, spec: str, state_dir: Path, **more) -> None:
    """The same, for executors started in this process (their zygote copies os.environ)."""
    for key, value in hostile_env(spec, state_dir, **more).items():
        monkeypatch.setenv(key, value)


def alive(pid: int) -> bool:
    """Is `pid` a live process (not a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
