"""What Linux says about a case worker process: its signal masks and state (/proc/PID/status), its
children, and how to take down every process a library under test left behind.

A library may fork (a helper daemon, a compiler it runs, a test of its own) and leave children that
hold the case worker's pipes and log open: a run then waited 30 s at its end for a pipe that never
closed, and the children outlived the run. Case workers and their zygote are child subreapers
(PR_SET_CHILD_SUBREAPER): an orphan, even one that left the worker's process group with setsid(),
is re-parented to the nearest of them instead of to init, where kill_children() finds it.
"""
from __future__ import annotations

import ctypes
import os
import signal

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphaned descendants of this process become its children (Linux 3.4+); False where refused."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid`, from /proc (no /proc/PID/task/TID/children on every kernel)."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: the fields after it start at its last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(name))
    return out


def has_children() -> bool:
    """One system call: does this process have any child, running or not yet reaped?"""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def kill_children(spare=frozenset()) -> int:
    """SIGKILL every child of this process (and its process group, if it leads one) except `spare`,
    reap them, and repeat for the grandchildren a subreaper inherits as they die; the number killed.
    Only the killed are reaped, by pid (a zombie is listed and reaped the same way): a spared child's
    exit status stays for whoever waits for it."""
    killed = 0
    for _ in range(64):                          # each round takes one generation of descendants
        victims = [pid for pid in children_of(os.getpid()) if pid not in spare]
        if not victims:
            break
        for pid in victims:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            killed += 1
        for pid in victims:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return killed


def status_fields(pid: int, tid: int | None = None) -> dict[str, str]:
    """/proc/PID/status (or a thread's, /proc/PID/task/TID/status) as {field: value}; {} when gone."""
    path = f"/proc/{pid}/status" if tid is None else f"/proc/{pid}/task/{tid}/status"
    try:
        with open(path) as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except (OSError, ValueError):
        return {}


def _has(mask: str, sig: int) -> bool:
    try:
        return bool(int(mask, 16) >> (sig - 1) & 1)
    except ValueError:
        return False


def signal_state(pid: int, sig: int = signal.SIGUSR1) -> dict:
    """How process `pid` stands towards `sig`: ignored (process-wide), blocked in every thread (then
    nothing can take it), its state and threads. {} when the process is gone."""
    main = status_fields(pid)
    if not main:
        return {}
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    masks = [status_fields(pid, t).get("SigBlk", "") for t in tids]
    masks = [m for m in masks if m] or [main.get("SigBlk", "0")]
    return {"signal": signal.Signals(sig).name, "state": main.get("State", "?"), "threads": len(tids),
            "ignored": _has(main.get("SigIgn", "0"), sig), "blocked": all(_has(m, sig) for m in masks),
            "blocked_in_threads": sum(_has(m, sig) for m in masks), "SigIgn": main.get("SigIgn", ""),
            "SigBlk": sorted(set(masks))}


def why_no_answer(state: dict) -> str:
    """Why a process did not run its handler of the signal `state` describes (signal_state)."""
    if not state:
        return "the process was already gone"
    name = state["signal"]
    if state["ignored"]:
        return f"it ignored {name} (SigIgn; state {state['state']})"
    if state["blocked"]:
        return f"it blocked {name} in all {state['threads']} of its threads (SigBlk; state {state['state']})"
    return (f"{name} was neither ignored nor blocked (in {state['blocked_in_threads']} of {state['threads']} "
            f"threads blocked); state {state['state']}: stuck where no handler runs (uninterruptible sleep "
            "in the kernel or a driver?)")
