"""The case workers' scratch directories: a process killed outright leaves its directory behind,
and the next one made (or the end of a run) removes it (harness/execution/scratch.py)."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from harness.execution import scratch

REPO = Path(__file__).resolve().parent.parent
# a process that makes a scratch directory, says where, and waits to be killed
_OWNER = ("import sys; from harness.execution import scratch; print(scratch.make('worker-x'), flush=True); "
          "sys.stdin.read()")


def _owner(tmp: Path) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", _OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=REPO, env={"PYTHONPATH": str(REPO), "TMPDIR": str(tmp)})
    return proc, Path(proc.stdout.readline().strip())


def test_only_the_directories_of_dead_owners_are_swept(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    alive, alive_dir = _owner(tmp_path)
    killed, killed_dir = _owner(tmp_path)
    killed.kill()                                                   # SIGKILL: no clean-up of its own
    killed.wait()
    legacy = tmp_path / "aclnn-worker-old"                          # no owner file: not ours to judge
    legacy.mkdir()
    foreign = tmp_path / "other-tool"
    foreign.mkdir()
    try:
        assert killed_dir.is_dir() and alive_dir.is_dir()
        mine = scratch.make("worker-y")                             # making one sweeps
        assert not killed_dir.exists()
        assert alive_dir.is_dir() and legacy.is_dir() and foreign.is_dir() and mine.is_dir()
        assert scratch.sweep() == []                                # its own, held by this process, stays
        scratch.remove(mine)
        assert not mine.exists()
    finally:
        alive.kill()
        alive.wait()
    assert scratch.sweep(tmp_path) == [alive_dir]
