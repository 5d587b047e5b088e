"""Was a SIGKILLed case worker killed by the kernel's OOM killer?

A worker that dies of SIGKILL was killed from outside: by a person, a CI runner, or, most often, the
OOM killer (a slow-tier case peaks at 2.4 GB). The kernel counts its kills: per memory cgroup
(`oom_kill` in cgroup v2's memory.events and in cgroup v1's memory.oom_control) and system-wide
(`oom_kill` in /proc/vmstat). The counter is read when a worker starts and again when it is found
dead; together with the worker's last peak RSS against the cgroup's limit that says whether the
OOM killer was the likely cause.
"""
from __future__ import annotations

import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cgroup_dirs(pid: int) -> list[tuple[Path, str]]:
    """(memory cgroup directory, the file holding its oom_kill count) of process `pid`, v2 first."""
    out = []
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            out.append((CGROUP_ROOT / path.lstrip("/"), "memory.events"))
            out.append((CGROUP_ROOT / "unified" / path.lstrip("/"), "memory.events"))
        elif "memory" in controllers.split(","):
            out.append((CGROUP_ROOT / "memory" / path.lstrip("/"), "memory.oom_control"))
    return out


def counter_files(pid: int) -> list[Path]:
    """Files that may count OOM kills for `pid`, most specific first: its cgroup's, then the system's."""
    return [d / name for d, name in _cgroup_dirs(pid)] + [Path("/proc/vmstat")]


def read_counter(files: list[Path]) -> tuple[str, int] | None:
    """(file, its oom_kill count) of the first file that has one; None when none can be read."""
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return str(path), int(value)
    return None


def memory_limit(pid: int) -> int | None:
    """The memory limit of `pid`'s cgroup in bytes; None when unlimited or unknown."""
    for directory, name in _cgroup_dirs(pid):
        limit_file = directory / ("memory.max" if name == "memory.events" else "memory.limit_in_bytes")
        try:
            text = limit_file.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:        # v1 says "unlimited" with a huge number
            return int(text)
        if text == "max" or text.isdigit():
            return None
    return None


class Watch:
    """The OOM-kill count when a worker started; verdict() when it was found SIGKILLed."""

    def __init__(self, pid: int | None = None):
        self.files = counter_files(pid or os.getpid())
        self.before = read_counter(self.files)

    def verdict(self, peak_rss_kb: int | None, limit: int | None) -> str:
        """One clause for a SIGKILLed worker's reason: the likely cause."""
        after = read_counter(self.files)
        rss = f"its peak RSS was {_mib(peak_rss_kb * 1024)}" if peak_rss_kb else "its peak RSS is unknown"
        rss += f" of the {_mib(limit)} memory limit" if limit and peak_rss_kb else ""
        if self.before is None or after is None or after[0] != self.before[0]:
            near = bool(limit and peak_rss_kb and peak_rss_kb * 1024 > 0.8 * limit)
            return (f"{'likely' if near else 'maybe'} the kernel's OOM killer (no OOM-kill counter could be "
                    f"read; {rss})")
        if after[1] > self.before[1]:
            return (f"likely the kernel's OOM killer: {after[0]} oom_kill went from {self.before[1]} to "
                    f"{after[1]} while this worker ran; {rss}")
        return f"not the OOM killer ({after[0]} oom_kill stayed at {after[1]}; {rss}): killed from outside?"


def _mib(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.0f} MiB"
