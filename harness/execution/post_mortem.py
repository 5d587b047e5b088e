"""What a case worker that died or hung leaves to say, read before and after it is killed: every
thread's stack (or why it gave none), the library's last words, whether the OOM killer took it,
and, for a crash in the allocator, which earlier case corrupted the heap (blame.py).

A mixin of CaseExecutor (supervisor.py): it works on the executor's worker, logs and history.
"""
from __future__ import annotations

import os
import signal
import time

from ..core.errors import HarnessConfigError
from ..core.status import Status
from ..judge import reasons
from ..judge.outcome import Outcome
from . import blame, logs, oom, procfs
from .schedule import LOOKAHEAD, deal
from .zygote import signal_name

DUMP_WAIT_S = 1.0            # how long a hung worker gets to write its stacks before SIGKILL
# a case's guard bytes changed: its own bug, or an earlier case's (searched like a heap corruption)
GUARD_REASONS = (reasons.WORKSPACE_OVERRUN, reasons.OUTSIDE_VIEW, reasons.WROTE_INTO_INPUT)
GUARD_SEARCHES = 3           # per executor: a library whose every case overruns must not rerun each alone


class PostMortem:
    blames = True          # a crash in the allocator starts a search for the culprit (not in a search's own workers)
    _guard_searches = 0

    def _start_timed_out(self, timeout_s: float, why: str) -> None:
        """A start-up that hangs (in aclInit, say) is a TIMEOUT of its own: stacks dumped, worker killed."""
        stack, no_stack, state = self._dump_stacks()
        self._reap()
        printed = logs.tail(self._log)
        said = logs.last_message(printed)
        self.lost_diagnostics = {"stack": stack[-8000:], "last_error": said, "output": printed[-4000:],
                                 "blocked_signals": state if not stack else None}
        raise HarnessConfigError(
            f"TIMEOUT of start-up: the case worker did not finish opening the {self.settings.backend} backend "
            f"within {timeout_s:g} s{f' ({why})' if why else ''}; it was killed"
            + (f"; last library message: {said}" if said else "") + (f"; no stack: {no_stack}" if no_stack else ""))

    # ------------------------------------------------------------ a worker that died or hung

    def _dump_stacks(self) -> tuple[str, str, dict]:
        """Ask the live worker for every thread's stack (SIGUSR1: faulthandler, which works while it is
        blocked in C). (the stacks, why there are none, its signal state read before the kill)."""
        before = logs.size(self._hlog)
        try:
            os.kill(self._proc.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass
        waited = 0.0
        while waited < DUMP_WAIT_S:               # until the dump stops growing
            time.sleep(0.1)
            waited += 0.1
            if logs.size(self._hlog) > before and waited >= 0.3:
                break
        state = procfs.signal_state(self._proc.pid)
        stack = logs.stacks(logs.tail(self._hlog, before, logs.STACK_BYTES))
        no_stack = "" if stack else (f"the worker did not answer SIGUSR1 (the stack-dump signal) in "
                                     f"{DUMP_WAIT_S:g} s: {procfs.why_no_answer(state)}")
        return stack, no_stack, state

    def _timed_out(self, head, duration: float) -> Outcome:
        stack, no_stack, state = self._dump_stacks()
        self._reap()
        printed = logs.tail(self._log, head.log_offset)
        reason = (f"TIMEOUT: no result after the {head.deadline_s:g} s deadline; the case worker was killed"
                  + (f"; no stack: {no_stack}" if no_stack else ""))
        outcome = self._not_judged(head.case, Status.TIMEOUT, reason, duration, deadline_s=head.deadline_s,
                                   stack=stack[-8000:], last_error=logs.last_message(printed),
                                   output=printed[-4000:], blocked_signals=None if stack else state)
        self._after_lost_worker(head.case, "TIMEOUT")
        return outcome

    def _crashed(self, head, duration: float) -> Outcome:
        how = signal_name(self._proc.wait())
        history, ran = list(self._history), self._ran
        self._reap()
        printed = logs.tail(self._log, head.log_offset)
        stack = logs.stacks(logs.tail(self._hlog, 0, logs.STACK_BYTES))
        said = logs.last_message(printed)
        clauses = [f"CRASH: the case worker died ({how})"]
        extra = {}
        if how == "SIGKILL":
            extra["oom"] = self._oom.verdict(self._peak_rss_kb, oom.memory_limit(os.getpid()))
            clauses.append(extra["oom"])
        signature = logs.heap_corruption(printed)
        if signature and self.blames:
            found = self._blame((head.case, head.deadline_s), history, ran, signature, "heap corruption",
                                lambda outcome, is_victim: outcome.raw is Status.CRASH)
            extra["blame"] = found.as_dict("victim")
            clauses.append(found.for_victim())
        reason = "; ".join(clauses) + (f"; last library message: {said}" if said else "")
        outcome = self._not_judged(head.case, Status.CRASH, reason, duration, signal=how, stack=stack[-8000:],
                                   last_error=said, output=printed[-4000:], **extra)
        self._after_lost_worker(head.case, "CRASH")
        return outcome

    def _guard_blame(self, head, outcome: Outcome) -> None:
        """A FAIL whose guard bytes changed may be an earlier case's doing (a library that kept an
        address and wrote through it later): searched like a heap corruption, a few times per executor
        (a library bug that fails alone costs one fresh worker each time)."""
        if outcome.raw is not Status.FAIL or not self.blames or self._guard_searches >= GUARD_SEARCHES:
            return
        guard = next((g for g in GUARD_REASONS if g in outcome.reason), None)
        if guard is None:
            return
        self._guard_searches += 1
        history, ran = list(self._history)[:-1], self._ran - 1      # the cases before this one

        def again(got: Outcome, is_victim: bool) -> bool:
            return got.raw is Status.CRASH or (is_victim and got.raw is Status.FAIL and guard in got.reason)
        found = self._blame((head.case, head.deadline_s), history, ran, outcome.reason[:300], "guard violation", again)
        if found.culprit != found.victim:        # not its own bug: the record says whose it is
            outcome.reason = f"{outcome.reason}; {found.for_victim()}"
            outcome.diagnostics["blame"] = found.as_dict("victim")

    def _blame(self, victim, history: list, ran: int, signature: str, kind: str, failed) -> blame.Blame:
        """Find the case that damaged what a later one uses (blame.py), each step in a fresh worker of
        this executor's zygote on its device slot; failed(outcome, is_victim) says whether a step's
        case failed that way again. The culprit's outcome is told through `amended`."""
        helper = type(self)(self.settings, f"{self.label}-blame")
        helper.share_zygote(self._zygote)
        helper.target, helper.blames = self.target, False     # a search step's failure is only counted

        # the evidence step of a heap corruption: a fresh worker of a zygote of its own under glibc's
        # heap checking (MALLOC_CHECK_=3), where a damaging case dies at its own free
        checker = None
        if kind == "heap corruption":
            checker = type(self)(self.settings.with_(malloc_check=True), f"{self.label}-evidence")
            checker.target, checker.blames = self.target, False

        def on(executor, sequence) -> bool:
            executor._reap()
            executor.start()
            for i, (case, deadline) in enumerate(sequence):
                got = deal([executor], case, deadline, sequence[i + 1:i + 1 + LOOKAHEAD])
                if failed(got, i == len(sequence) - 1):
                    return True
            return False
        try:
            found = blame.find(victim, history, signature, lambda seq: on(helper, seq), ran=ran, kind=kind,
                               confirm=None if checker is None else (lambda seq: on(checker, seq)))
        except HarnessConfigError as e:
            found = blame.Blame(victim[0].id, signature, note=f"no fresh worker for the search: {e}", kind=kind)
        finally:
            helper.close()
            if checker is not None:
                checker.close()
        culprit = next((c for c, _ in history if c.id == found.culprit and c.id != found.victim), None)
        if culprit is not None:
            amended = self._not_judged(culprit, Status.FAIL, found.for_culprit(),
                                       blame=found.as_dict("culprit"))
            if culprit.id in self._early:         # answered, not yet asked for: its record is still to come
                self._early[culprit.id] = amended
            else:
                self.amended.append((culprit, amended))
        return found

    def take_amendments(self) -> list[tuple[object, Outcome]]:
        """(case, Outcome) of earlier cases whose record must change (a culprit found by blame)."""
        out, self.amended = self.amended, []
        return out
