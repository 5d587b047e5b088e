"""The supervising side of a case worker (harness/execution/child.py).

A CaseExecutor keeps one long-lived worker process, so isolation costs a pipe round trip
per case, not a process start. A pytest process has one executor per case worker
(harness/execution/pool.py); schedule.deal schedules cases over them. The worker is replaced
only when it dies (CRASH), passes a case's deadline (TIMEOUT: its stacks are dumped, then it is
killed), or cannot reset its device; a replacement is forked from the executor's zygote
(child.py, zygote.py), so it costs milliseconds, and its start-up has the deadline of the case
waiting for it. What a dead or hung worker leaves to say is read by post_mortem.py.
The deadline is kept by this process, which is never blocked in the library.
"""
from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..core.errors import HarnessConfigError
from ..core.status import Status
from ..judge.outcome import Outcome
from ..target import Target
from ..target.settings import BackendSettings
from . import blame, logs, oom, scratch
from .channel import Channel, ChannelClosed
from .post_mortem import PostMortem
from .schedule import AHEAD_BYTES, LOOKAHEAD, deal
from .zygote import Worker, Zygote, malloc_check_env, signal_name

START_TIMEOUT_S = 300.0      # the first start: building the software CANN on first use can take a while;
                             # a replacement's start-up has the deadline of the case waiting for it,
START_FLOOR_S = 10.0         # but never less than this: a loaded machine must not pass for a lost device
# a start-up still waiting is said after this long, then at each interval (no silent minutes in aclInit)
START_SAY_FIRST_S, START_SAY_EVERY_S = 10.0, 30.0


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


class DeviceLost(Exception):
    """The worker's device could not be brought back (neither reset nor a fresh process)."""


class CaseExecutor(PostMortem):
    def __init__(self, settings: "BackendSettings | dict", label: str = "main"):
        self.settings, self.label = BackendSettings.from_wire(settings), label
        self.dump: str | None = None      # the run's dump directory, once it has its report dir
        self.target: Target | None = None
        self.resets = 0                 # device resets and worker replacements so far
        self.pending_recovery: dict | None = None   # told to the next case's outcome
        self.lost: str | None = None
        self.lost_diagnostics: dict = {}            # the failed start's stack and output, for the MISSING records
        self._cache_done = self._cache_current = None   # golden-cache use: replaced workers, current one
        self._proc: Worker | None = None
        self._chan: Channel | None = None
        self._log_dir = scratch.make(f"worker-{label}")
        self._log: Path | None = None       # the library log (fd 1 and 2 of the worker)
        self._hlog: Path | None = None      # the harness log (its Python output and stacks)
        self._starts = 0
        self._zygote: Zygote | None = None
        self._owns_zygote = True
        self._queue: list[_Sent] = []       # cases sent to the worker, in its order; the head is running
        self._early: dict[str, Outcome] = {}   # outcomes of cases that finished before they were asked for
        self._history: deque = deque(maxlen=blame.MAX_CASES)   # (case, deadline) this worker answered
        self._ran = 0                       # ... and how many, for a blame's "only the last N" note
        self._oom: oom.Watch | None = None
        self._peak_rss_kb: int | None = None
        self.amended: list[tuple[object, Outcome]] = []   # outcomes that replace an earlier case's (blame)

    # ------------------------------------------------------------ worker process

    def warm_up(self) -> None:
        """Start the zygote now, without waiting: it imports torch and the goldens while the
        caller does other work (an xdist worker collects), instead of when the first case comes."""
        if self._zygote is None:
            env = malloc_check_env() if self.settings.malloc_check else None
            self._zygote = Zygote(self._log_dir / "zygote.log", preload=self.label != "probe", env=env)

    def share_zygote(self, zygote: Zygote) -> None:
        """Fork workers from `zygote`, which its owner (harness/execution/pool.py) closes."""
        self._zygote, self._owns_zygote = zygote, False

    def start(self, timeout_s: float = START_TIMEOUT_S, why: str = "",
              waiting: Callable[[str], None] | None = None) -> Target:
        """Start a worker and open the backend in it; the target its backend says it is. A configuration
        error is a HarnessConfigError with the backend's one line, and so is a start-up that does not
        answer within `timeout_s` (why: what that deadline is) or dies. `waiting` is told, in a
        line, while the start-up keeps it waiting (START_SAY_FIRST_S, then every START_SAY_EVERY_S)."""
        self._starts += 1
        self._log = self._log_dir / f"worker-{self._starts}.log"
        self._hlog = self._log_dir / f"worker-{self._starts}.harness.log"
        self._history.clear()
        self._ran, self._peak_rss_kb, self._oom = 0, None, oom.Watch()
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        try:
            self.warm_up()       # a probe (the xdist controller's start-up check) runs no case: no preload
            with open(self._log, "wb") as log, open(self._hlog, "wb") as hlog:
                pid = self._zygote.fork(to_child, from_child, log.fileno(), hlog.fileno())
            self._proc = Worker(self._zygote, pid)
        except ChannelClosed as e:
            for fd in (to_child, from_parent, to_parent, from_child):
                os.close(fd)
            said = logs.last_message(logs.tail(self._zygote.log))
            raise HarnessConfigError(f"cannot start a case worker: {e}: {said or 'no message'}") from None
        os.close(to_child)
        os.close(from_child)
        self._chan = Channel(to_parent, from_parent)
        backend = self.settings.backend
        try:
            self._chan.send(("open", self.settings.to_wire()))
            if not self._await_start(timeout_s, waiting):
                self._start_timed_out(timeout_s, why)
            reply = self._chan.recv()
        except ChannelClosed as e:
            self._kill()
            said = logs.last_message(logs.tail(self._log)) or logs.last_message(logs.tail(self._hlog))
            raise HarnessConfigError(f"the case worker died while opening the {backend} backend "
                                     f"({signal_name(self._proc.wait())}; {e}): {said or 'no message'}") from None
        if reply[0] == "config_error":
            self._reap()
            raise HarnessConfigError(reply[1])
        self.target = reply[1]
        return self.target

    def _await_start(self, timeout_s: float, waiting: Callable[[str], None] | None) -> bool:
        """Has the start-up answered (or died) within `timeout_s`? Says so to `waiting` meanwhile."""
        waited, step = 0.0, START_SAY_FIRST_S
        while waited < timeout_s:
            wait = min(step, timeout_s - waited)
            if self._chan.ready(wait):
                return True
            waited, step = waited + wait, START_SAY_EVERY_S
            if waiting is not None and waited < timeout_s:
                waiting(f"case worker {self.label} still opening the {self.settings.backend} backend after "
                        f"{waited:.0f} s (aclInit, device set-up); it gives up at {timeout_s:.0f} s")
        return False

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
                self._chan.ready(30)             # its ("closed",), or the end of its pipe
            except ChannelClosed:
                pass
            self._kill()                         # its process group too; the zygote kills what escaped
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

    def _replace(self, cause: str, deadline_s: float | None = None) -> None:
        """A fresh worker after a crash, a hang or a device it could not reset; its start-up has the
        deadline of the case that waits for it."""
        self._reap()
        try:
            if deadline_s is None:
                self.start()
            else:
                floor = f", at least {START_FLOOR_S:g} s" if deadline_s < START_FLOOR_S else ""
                self.start(min(START_TIMEOUT_S, max(START_FLOOR_S, deadline_s)),
                           f"the deadline of the case waiting for it{floor}")
        except HarnessConfigError as e:
            self.lost = f"device not usable after {cause}: {e}"
            raise DeviceLost(self.lost) from None

    # ------------------------------------------------------------ one case

    def run(self, case, deadline_s: float, ahead=()) -> Outcome:
        """Run `case` in the worker; its Outcome (every one carries its raw status).

        `ahead` [(case, deadline)] are the cases pytest will ask for next: up to LOOKAHEAD are sent
        now (schedule.deal), so the worker starts the next the moment it answers `case` and works while this
        process reports `case` (pytest's per-test machinery and the worker's cases then overlap
        instead of taking turns)."""
        return deal([self], case, deadline_s, ahead)

    # ------------------------------------------------------------ what schedule.deal schedules with

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
        if not self._ensure_worker(deadline_s):
            return self._not_judged(case, Status.MISSING, f"not run: {self.lost}", **self.lost_diagnostics)
        self._send(case, deadline_s)
        return None

    def offer(self, case, deadline_s: float) -> bool:
        """Send `case` ahead if the worker has room for it (LOOKAHEAD cases, AHEAD_BYTES bytes)."""
        if not self.has_room or not self._ensure_worker(deadline_s):
            return False
        return self._send(case, deadline_s, AHEAD_BYTES - sum(s.nbytes for s in self._queue))

    def _ensure_worker(self, deadline_s: float | None = None) -> bool:
        """A live worker, replacing one that died (CRASH, TIMEOUT, a failed reset); False when the
        device is lost (no replacement could open it)."""
        if self.lost:
            return False
        if not self._alive():
            try:
                self._replace(self.pending_recovery["cause"] if self.pending_recovery else "a worker exit",
                              deadline_s)
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
            sent = self._chan.send(("run", case, self.dump),
                                   None if limit is None else limit - shared)
            if sent is None:
                return False
            nbytes = shared + sent
        except ChannelClosed:
            pass
        now = None if self._queue else time.monotonic()
        self._queue.append(_Sent(case, deadline_s, now, logs.size(self._log) if now else 0, nbytes))
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
        if reply is None or reply[0] != "done":
            if not answered:
                return self._timed_out(head, duration)
            return self._crashed(head, duration)    # _reap emptied the queue with its worker
        _, outcome, recovery, self._cache_current, log_end, self._peak_rss_kb = reply
        self._queue.pop(0)
        self._history.append((head.case, head.deadline_s))
        self._ran += 1
        if self._queue:             # the worker went on with the next case; its output starts at log_end
            self._queue[0].started, self._queue[0].log_offset = now, log_end
        self._guard_blame(head, outcome)
        return self._finished(head.case, outcome, recovery)

    @property
    def cache_stats(self) -> "CacheUse | None":
        """Golden-cache use of every worker of this executor (None without a cache)."""
        return CacheUse.total([CacheUse(**p) for p in (self._cache_done, self._cache_current) if p is not None])

    def _finished(self, case, outcome: Outcome, recovery: dict | None) -> Outcome:
        if outcome.backend is None:                  # the worker left out what it announced (child.serve)
            outcome.backend = self.target
        self._stamp(outcome)
        if recovery:
            outcome.diagnostics["recovery"] = recovery
            self.resets += 1
            self.pending_recovery = {"case_id": case.id, **recovery}
            if not recovery["ok"]:
                self._reap()          # the worker exits; the next case starts a fresh one
                self.pending_recovery["action"] = "new worker process"
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
        outcome.family = self.target.family if self.target else None
        outcome.backend, outcome.duration_s = self.target, duration
        self._stamp(outcome)
        return outcome

