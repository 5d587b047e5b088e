"""The supervising side of a case worker (harness/execution/child.py).

A CaseExecutor keeps one long-lived worker process, so isolation costs a pipe round trip
per case, not a process start. A pytest process has one executor per case worker
(harness/execution/pool.py); run_on schedules cases over them. The worker is replaced only
when it dies (CRASH), passes a case's deadline (TIMEOUT: its stacks are dumped, then it is
killed), or cannot reset its device; a replacement is forked from the executor's zygote
(child.py), so it costs milliseconds.
The deadline is kept by this process, which is never blocked in the library.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import HarnessConfigError
from ..core.status import Status
from ..judge.outcome import Outcome
from . import scratch
from .channel import Channel, ChannelClosed, wait_any

START_TIMEOUT_S = 300.0      # building the software CANN on first use can take a while
DUMP_WAIT_S = 1.0            # how long a hung worker gets to write its stacks before SIGKILL

_STACK_STARTS = ("Fatal Python error", "Current thread 0x", "Thread 0x")


@dataclass
class CacheUse:
    """How a case worker used the golden cache (harness/judge/cache.py)."""
    hits: int
    misses: int
    rejected: list

    @staticmethod
    def total(parts: list["CacheUse"]) -> "CacheUse | None":
        if not parts:
            return None
        return CacheUse(sum(p.hits for p in parts), sum(p.misses for p in parts), [r for p in parts for r in p.rejected])


@dataclass
class _Sent:
    """A case sent to the worker. It starts when the worker has answered every case sent before it:
    its deadline and its share of the worker's log count from then."""
    case: object
    deadline_s: float
    started: float | None = None         # time.monotonic() when the worker began it
    log_offset: int = 0
    nbytes: int = 0                      # what sending it wrote into the pipe (the case, its operator)


LOOKAHEAD = 4      # cases sent ahead of the one pytest is running (see CaseExecutor.run): a few,
                   # so a run of short cases (invalid ones take ~0.2 ms) does not leave the worker idle
AHEAD_BYTES = 32 * 1024   # ... and never more unanswered bytes than half a pipe holds (64 KB on Linux):
                          # a send ahead then cannot block, so a hung worker's deadline is always kept


class DeviceLost(Exception):
    """The worker's device could not be brought back (neither reset nor a fresh process)."""


def _import_roots() -> list[str]:
    """Directories holding the harness and golden packages, for the worker's sys.path."""
    import golden
    import harness
    return list(dict.fromkeys(str(Path(m.__file__).resolve().parent.parent) for m in (harness, golden)))


def _signal_name(returncode: int | None) -> str:
    if returncode is None or returncode >= 0:
        return f"exit code {returncode}"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def split_log(text: str) -> tuple[str, str]:
    """(what the library and the worker printed, the stacks faulthandler dumped)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(_STACK_STARTS):
            return "\n".join(lines[:i]), "\n".join(lines[i:])
    return text, ""


def last_message(printed: str) -> str:
    lines = [ln.strip() for ln in printed.splitlines() if ln.strip()]
    return lines[-1][:1000] if lines else ""


class _Zygote:
    """The process the workers are forked from (child.zygote)."""

    def __init__(self, log: Path, preload: bool = True):
        self.log = log
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(_import_roots() + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        ours, theirs = socket.socketpair()
        with open(log, "ab") as out:
            argv = [sys.executable, "-m", "harness.execution.child", str(theirs.fileno()), str(os.getpid())]
            self.proc = subprocess.Popen(argv + ([] if preload else ["--no-preload"]), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT, env=env, pass_fds=(theirs.fileno(),))
        theirs.close()
        self.sock = ours

    def _ask(self, message: bytes, fds=()) -> int:
        try:
            socket.send_fds(self.sock, [message], list(fds))
            answer = self.sock.recv(64)
        except OSError as e:
            raise ChannelClosed(f"the zygote is gone ({e})") from None
        if not answer:
            raise ChannelClosed(f"the zygote is gone ({_signal_name(self.proc.poll())})")
        return int(answer)

    def fork(self, read_fd: int, write_fd: int, log_fd: int) -> int:
        return self._ask(b"fork", (read_fd, write_fd, log_fd))

    def wait(self, pid: int) -> int:
        return self._ask(f"wait {pid}".encode())

    def close(self) -> None:
        self.sock.close()                    # the zygote exits at the end of its socket
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Worker:
    """A forked worker: not our child, so its exit code comes from the zygote."""

    def __init__(self, zygote: _Zygote, pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait(self) -> int:
        if self.returncode is None:
            try:
                self.returncode = self.zygote.wait(self.pid)
            except (ChannelClosed, ValueError):
                self.returncode = -signal.SIGKILL
        return self.returncode


class CaseExecutor:
    def __init__(self, settings: dict, label: str = "main"):
        self.settings, self.label = dict(settings), label
        self.properties: dict[str, str] | None = None
        self.resets = 0                 # device resets and worker replacements so far
        self.pending_recovery: dict | None = None   # told to the next case's outcome
        self.lost: str | None = None
        self._cache_done = self._cache_current = None   # golden-cache use: replaced workers, current one
        self._proc: _Worker | None = None
        self._chan: Channel | None = None
        self._log_dir = scratch.make(f"worker-{label}")
        self._log: Path | None = None
        self._starts = 0
        self._zygote: _Zygote | None = None
        self._owns_zygote = True
        self._queue: list[_Sent] = []       # cases sent to the worker, in its order; the head is running
        self._early: dict[str, Outcome] = {}   # outcomes of cases that finished before they were asked for

    # ------------------------------------------------------------ worker process

    def warm_up(self) -> None:
        """Start the zygote now, without waiting: it imports torch and the goldens while the
        caller does other work (an xdist worker collects), instead of when the first case comes."""
        if self._zygote is None:
            self._zygote = _Zygote(self._log_dir / "zygote.log", preload=self.label != "probe")

    def share_zygote(self, zygote: _Zygote) -> None:
        """Fork workers from `zygote`, which its owner (harness/execution/pool.py) closes."""
        self._zygote, self._owns_zygote = zygote, False

    def start(self) -> dict[str, str]:
        """Start a worker and open the backend in it; its BackendInfo properties.
        A configuration error is a HarnessConfigError with the backend's one line."""
        self._starts += 1
        self._log = self._log_dir / f"worker-{self._starts}.log"
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        try:
            self.warm_up()       # a probe (the xdist controller's start-up check) runs no case: no preload
            with open(self._log, "wb") as log:
                self._proc = _Worker(self._zygote, self._zygote.fork(to_child, from_child, log.fileno()))
        except ChannelClosed as e:
            for fd in (to_child, from_parent, to_parent, from_child):
                os.close(fd)
            said = last_message(split_log(self._read_log_file(self._zygote.log))[0])
            raise HarnessConfigError(f"cannot start a case worker: {e}: {said or 'no message'}") from None
        os.close(to_child)
        os.close(from_child)
        self._chan = Channel(to_parent, from_parent)
        try:
            self._chan.send(("open", self.settings))
            if not self._chan.ready(START_TIMEOUT_S):
                raise ChannelClosed(f"no answer in {START_TIMEOUT_S:.0f} s")
            reply = self._chan.recv()
        except ChannelClosed as e:
            self._kill()
            printed, stack = split_log(self._read_log(0))
            raise HarnessConfigError(f"the case worker died while opening the {self.settings['backend']} backend "
                                     f"({_signal_name(self._proc.wait())}; {e}): "
                                     f"{last_message(printed) or 'no message'}") from None
        if reply[0] == "config_error":
            self._reap()
            raise HarnessConfigError(reply[1])
        self.properties = reply[1]
        return self.properties

    def close(self, abandon: bool = False) -> None:
        """End the worker: it closes the backend (aclFinalize) and exits. abandon: the run was
        interrupted, so a case still running is not waited for (up to its deadline: a hang's
        is a minute); its worker is killed, as Ctrl-C's default would have done."""
        if abandon and self._queue:
            self._reap()
        while self._queue and self._alive():     # a case sent ahead that pytest never asked for
            self._await_head()
        if self._alive():
            try:
                self._chan.send(("close",))      # the worker closes the backend (aclFinalize) and exits
                if self._chan.ready(30):
                    self._proc.wait()
            except ChannelClosed:
                pass
            self._kill()
        if self._chan is not None:
            self._chan.close()
        self._proc = self._chan = None
        if self._zygote is not None and self._owns_zygote:
            self._zygote.close()
        self._zygote = None
        scratch.remove(self._log_dir)

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()

    def _reap(self) -> None:
        if self._cache_current is not None:       # fold the dying worker's cache use into the total
            self._cache_done, self._cache_current = vars(self.cache_stats), None
        self._kill()
        self._queue.clear()          # what was sent to this worker and not answered never ran
        if self._chan is not None:
            self._chan.close()
            self._chan = None

    def _read_log(self, offset: int) -> str:
        return self._read_log_file(self._log, offset)

    @staticmethod
    def _read_log_file(path: Path, offset: int = 0) -> str:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def _log_size(self) -> int:
        try:
            return self._log.stat().st_size
        except OSError:
            return 0

    def _replace(self, cause: str) -> None:
        """A fresh worker after a crash, a hang or a device it could not reset."""
        self._reap()
        try:
            self.start()
        except HarnessConfigError as e:
            self.lost = f"device not usable after {cause}: {e}"
            raise DeviceLost(self.lost) from None

    # ------------------------------------------------------------ one case

    def run(self, case, deadline_s: float, ahead=()) -> Outcome:
        """Run `case` in the worker; its Outcome (every one carries its raw status).

        `ahead` [(case, deadline)] are the cases pytest will ask for next: up to LOOKAHEAD are sent
        now (run_on), so the worker starts the next the moment it answers `case` and works while this
        process reports `case` (pytest's per-test machinery and the worker's cases then overlap
        instead of taking turns)."""
        return run_on([self], case, deadline_s, ahead)

    # ------------------------------------------------------------ what run_on schedules with

    def take(self, case_id: str) -> Outcome | None:
        """The Outcome of a case this executor finished before it was asked for (or None)."""
        return self._early.pop(case_id, None)

    def holds(self, case) -> bool:
        """`case` was sent to the worker and is not answered yet."""
        return any(s.case.id == case.id for s in self._queue)

    def case_ids(self) -> set[str]:
        """The cases this executor has: sent and unanswered, or answered and not yet asked for."""
        return {s.case.id for s in self._queue} | set(self._early)

    @property
    def channel(self) -> Channel | None:
        return self._chan

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def has_room(self) -> bool:
        """Fewer cases queued than the one running plus LOOKAHEAD sent ahead."""
        return len(self._queue) <= LOOKAHEAD

    @property
    def usable(self) -> bool:
        """Can take a case: not lost (a dead worker is replaced when it is given one)."""
        return not self.lost

    def submit(self, case, deadline_s: float) -> Outcome | None:
        """Queue `case` (in a fresh worker if the last one died); a MISSING outcome when the device is lost."""
        if not self._ensure_worker():
            return self._not_judged(case, Status.MISSING, f"not run: {self.lost}")
        self._send(case, deadline_s)
        return None

    def offer(self, case, deadline_s: float) -> bool:
        """Send `case` ahead if the worker has room for it (LOOKAHEAD cases, AHEAD_BYTES bytes)."""
        if not self.has_room or not self._ensure_worker():
            return False
        return self._send(case, deadline_s, AHEAD_BYTES - sum(s.nbytes for s in self._queue))

    def _ensure_worker(self) -> bool:
        """A live worker, replacing one that died (CRASH, TIMEOUT, a failed reset); False when the
        device is lost (no replacement could open it)."""
        if self.lost:
            return False
        if not self._alive():
            try:
                self._replace(self.pending_recovery["cause"] if self.pending_recovery else "a worker exit")
            except DeviceLost:
                return False
        return True

    def time_left(self) -> float:
        """Seconds until the running case's deadline (the queue is not empty)."""
        head = self._queue[0]
        return max(0.0, head.deadline_s - (time.monotonic() - head.started))

    def collect(self) -> None:
        """Take the running case's answer (call when its channel is ready or its deadline passed):
        its Outcome waits in take() like any case finished early."""
        head = self._queue[0]
        self._early[head.case.id] = self._await_head()

    def _send(self, case, deadline_s: float, limit: int | None = None) -> bool:
        """Queue `case` in the worker (False: it would write more than `limit` bytes; not sent).
        A closed pipe (the worker died) is found out when the queue's head is awaited: a CRASH
        of the case the worker was running."""
        nbytes = 0
        try:
            shared = self._chan.share(case.op, limit)   # once per operator and worker, not with every case
            if shared is None:
                return False
            # per case, not per worker: the dump directory is known only once the run has its report dir
            sent = self._chan.send(("run", case, self.settings.get("dump_dir")),
                                   None if limit is None else limit - shared)
            if sent is None:
                return False
            nbytes = shared + sent
        except ChannelClosed:
            pass
        now = None if self._queue else time.monotonic()
        self._queue.append(_Sent(case, deadline_s, now, self._log_size() if now else 0, nbytes))
        return True

    def _await_head(self) -> Outcome:
        """Wait for the case at the head of the queue: its Outcome (done, CRASH or TIMEOUT)."""
        head = self._queue[0]
        try:
            answered = self._chan.ready(max(0.0, head.deadline_s - (time.monotonic() - head.started)))
            reply = self._chan.recv() if answered else None
        except ChannelClosed:
            reply, answered = None, True
        now = time.monotonic()
        duration = now - head.started
        if reply is None:
            outcome = (self._timed_out(head.case, head.deadline_s, head.log_offset, duration) if not answered
                      else self._crashed(head.case, head.log_offset, duration))
            return outcome                          # _reap emptied the queue with its worker
        _, outcome, recovery, self._cache_current, log_end = reply
        self._queue.pop(0)
        if self._queue:             # the worker went on with the next case; its output starts at log_end
            self._queue[0].started, self._queue[0].log_offset = now, log_end
        return self._finished(head.case, outcome, recovery)

    @property
    def cache_stats(self) -> "CacheUse | None":
        """Golden-cache use of every worker of this executor (None without a cache)."""
        return CacheUse.total([CacheUse(**p) for p in (self._cache_done, self._cache_current) if p is not None])

    def _finished(self, case, outcome: Outcome, recovery: dict | None) -> Outcome:
        if outcome.backend is None:                  # the worker left out what it announced (child.serve)
            outcome.backend = dict(self.properties or {})
        self._stamp(outcome)
        if recovery:
            outcome.diagnostics["recovery"] = recovery
            self.resets += 1
            self.pending_recovery = {"case_id": case.id, **recovery}
            if not recovery["ok"]:
                self._reap()          # the worker exits; the next case starts a fresh one
                self.pending_recovery["action"] = "new worker process"
        return outcome

    def _timed_out(self, case, deadline_s: float, offset: int, duration: float) -> Outcome:
        before = self._log_size()
        try:
            os.kill(self._proc.pid, signal.SIGUSR1)      # faulthandler: every thread's stack
        except ProcessLookupError:
            pass
        waited = 0.0
        while waited < DUMP_WAIT_S:               # until the dump stops growing
            time.sleep(0.1)
            waited += 0.1
            size = self._log_size()
            if size > before and waited >= 0.3:
                break
        self._reap()
        printed, stack = split_log(self._read_log(offset))
        reason = f"TIMEOUT: no result after the {deadline_s:g} s deadline; the case worker was killed"
        outcome = self._not_judged(case, Status.TIMEOUT, reason, duration, deadline_s=deadline_s,
                                   stack=stack[-8000:], last_error=last_message(printed), output=printed[-4000:])
        self._after_lost_worker(case, "TIMEOUT")
        return outcome

    def _crashed(self, case, offset: int, duration: float) -> Outcome:
        how = _signal_name(self._proc.wait())
        self._reap()
        printed, stack = split_log(self._read_log(offset))
        said = last_message(printed)
        reason = f"CRASH: the case worker died ({how})" + (f"; last library message: {said}" if said else "")
        outcome = self._not_judged(case, Status.CRASH, reason, duration, signal=how, stack=stack[-8000:],
                                   last_error=said, output=printed[-4000:])
        self._after_lost_worker(case, "CRASH")
        return outcome

    def _after_lost_worker(self, case, what: str) -> None:
        self.resets += 1
        self.pending_recovery = {"case_id": case.id, "cause": what, "action": "new worker process", "ok": True}

    def _stamp(self, outcome: Outcome) -> None:
        """What every outcome says about the worker: its device resets, and the reset just before it."""
        outcome.worker = self.label
        outcome.device_resets = self.resets
        if self.pending_recovery and self.pending_recovery.get("case_id") != outcome.case_id:
            outcome.diagnostics["recovered_from"], self.pending_recovery = self.pending_recovery, None

    def _not_judged(self, case, raw: Status, reason: str, duration: float = 0.0, **diagnostics) -> Outcome:
        outcome = Outcome.not_judged(case, raw, reason, **diagnostics)
        outcome.family = (self.properties or {}).get("family") or None
        outcome.backend, outcome.duration_s = dict(self.properties or {}), duration
        self._stamp(outcome)
        return outcome


def _least_busy(executors: list[CaseExecutor]) -> CaseExecutor:
    """Where a case goes: the usable executor with the shortest queue (the first when all are lost:
    its submit() then says why the case was not run)."""
    usable = [ex for ex in executors if ex.usable]
    return min(usable, key=lambda ex: ex.queued) if usable else executors[0]


def run_on(executors: list[CaseExecutor], case, deadline_s: float, ahead=()) -> Outcome:
    """Run `case` on one of `executors` and return its Outcome, meanwhile sending the `ahead` cases
    to whichever has room and collecting every answer that comes in (kept until asked for).

    While it waits for `case`, every worker's running case keeps its own deadline: the wait
    ends at the earliest one, so a hang in one worker is a TIMEOUT on time while another
    worker's case is awaited."""
    for ex in executors:
        outcome = ex.take(case.id)
        if outcome is not None:
            return outcome
    owner = next((ex for ex in executors if ex.holds(case)), None)
    while owner is None:
        owner = _least_busy(executors)
        missing = owner.submit(case, deadline_s)
        if missing is not None:
            if not any(ex.usable for ex in executors):
                return missing
            owner = None            # that worker's device is lost now: another one takes the case
    known = set().union(*(ex.case_ids() for ex in executors))
    for nxt, nxt_deadline in ahead:
        if nxt.id in known:
            continue
        target = _least_busy([ex for ex in executors if ex.has_room] or executors)
        if not target.offer(nxt, nxt_deadline):
            break
        known.add(nxt.id)
    while True:
        busy = [ex for ex in executors if ex.queued]
        if owner not in busy:
            # the worker holding `case` died with a case before it (a CRASH, a TIMEOUT): it never ran
            return run_on(executors, case, deadline_s)
        channels = {ex.channel: ex for ex in busy}
        ready = [channels[c] for c in wait_any(list(channels), min(ex.time_left() for ex in busy))]
        for ex in ready or [ex for ex in busy if ex.time_left() <= 0]:
            ex.collect()
        outcome = owner.take(case.id)
        if outcome is not None:
            return outcome
