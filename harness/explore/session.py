"""Where explored cases run: the suite's own machinery, not a second runner.

One exploration is one run: a report directory held by a RunDir (its lock, its run id, the previous
run archived), case workers (execution/pool.py: crash and hang isolation, deadlines, device resets)
opened on the family under test, and a journal that gets a `start` line before each case and its
whole record after. Every record is made by reporting/records.build, so it carries the run's
identity and the backend's `simulated` flag like any case of the suite; `results.jsonl` is rebuilt
from the journal at the end, as a suite run does it.
"""
from __future__ import annotations

from pathlib import Path

from ..core import jsonsafe
from ..core.status import Status
from ..execution import journal as journal_mod
from ..execution.deadline import deadline_for
from ..execution.pool import CasePool
from ..execution.rundir import RunDir
from ..model import Case
from ..reporting import identity, records, repro_line
from ..target import discovery
from ..target.settings import BackendSettings

FAILURES = (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.MISSING)
# A hang found while exploring costs its deadline: much shorter than the suite's 60 s base
BASE_TIMEOUT_S = 15.0
PER_MILLION_S = 20.0


def settings_for(family: str) -> BackendSettings:
    """What a case worker needs to open the aclnn backend on `family` (as plugin/options.py makes it)."""
    return BackendSettings(backend="aclnn", family=family)


def prepare_environment(family: str) -> None:
    """Before any worker starts: the CANN found (the software CANN built if there is none), this
    process re-executed with its set_env.sh applied if needed, and the software CANN told its SoC."""
    discovery.prepare_process(no_sw_fallback=False)
    discovery.hand_over_soc(family)


class Session:
    """One exploration run in `directory` on `family`."""

    def __init__(self, directory: Path, family: str, root: Path, argv: list[str], timeout_s: float | None = None):
        self.dir, self.family, self.root, self.argv = Path(directory), family, Path(root), argv
        self.timeout_s = timeout_s
        self.started = identity.now()
        self.rundir = RunDir.acquire(self.dir, False, argv, keep_previous=3)
        self.pool = CasePool(settings_for(family), "explore", 1)
        try:
            self.target = self.pool.start()
        except Exception:
            self.pool.close()
            self.rundir.release()
            raise
        if self.target.family != family:
            self.close()
            raise RuntimeError(f"the library reports family {self.target.family!r}, not {family!r}")
        self.journal = journal_mod.Journal(self.dir, self.rundir.run_id, "explore")
        self.switches = identity.switches()
        self.hashes = identity.library_hashes(self.target)
        self.count = 0
        self.records: list[dict] = []       # every case run, in order: what the findings' causes are read from

    @property
    def simulated(self) -> bool:
        return self.target.simulated

    @property
    def label(self) -> str:
        """What every line of an exploration's output starts with: never mistake a simulation for hardware."""
        kind = "SIMULATED" if self.simulated else "HARDWARE"
        return f"[{kind} {self.target.backend} {self.family}]"

    def nodeid(self, case: Case) -> str:
        """The case's node id once pasted into its op's case file (cases/<file>.yaml::<name>)."""
        path = Path(case.op.path)
        try:
            rel = path.resolve().relative_to(self.root.resolve())
        except ValueError:
            rel = path
        return f"{rel}::{case.name}"

    def repro(self, case: Case) -> str:
        return repro_line.command(self.nodeid(case), self.target, self.switches, self.root)

    def run(self, case: Case) -> dict:
        """Run one case in the case workers, journalled before and after; its record."""
        nodeid = self.nodeid(case)
        self.journal.started(case.id, nodeid, case.op.name)
        deadline = self.timeout_s or deadline_for(case, BASE_TIMEOUT_S + PER_MILLION_S * _elements(case) / 1e6)
        outcome = self.pool.run(case, deadline)
        deviation = case.deviation_on(self.target.backend, self.family)
        ctx = records.Context(self.target, self.hashes, self.repro(case))
        record = records.build(outcome, records.facts_of(case, nodeid, deviation.reason if deviation else None), ctx)
        self.journal.finished(record)
        self.records.append(record)
        self.count += 1
        return record

    def close(self) -> None:
        """End the workers, write results.jsonl from the journal (one record per case id) and release the
        report directory."""
        try:
            self.pool.close()
            if getattr(self, "journal", None) is not None:
                self.journal.close()
                state = journal_mod.scan(self.dir, own=(self.journal,), run_id=self.rundir.run_id)
                text = "".join(jsonsafe.dumps(r) + "\n" for r in state.records())
                (self.dir / records.RESULTS).write_text(text, encoding="utf-8")
        finally:
            self.rundir.release()

    def identity(self) -> dict:
        return identity.collect(self.target, root=self.root, case_files=[], argv=self.argv, started=self.started,
                                ended=identity.now(), extra={"run_id": self.rundir.run_id})


def disagrees(record: dict) -> bool:
    """The library did not do what the case asks (a waived deviation is not a disagreement)."""
    return records.status_of(record) in FAILURES


def _elements(case: Case) -> int:
    n = 1
    for d in case.shape:
        n *= max(int(d), 0)
    return n
