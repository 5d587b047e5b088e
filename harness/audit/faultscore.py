"""Fault-detection score: does the suite catch a misbehaving library, and does it say what it was?

Every named fault of the software CANN (`SWCANN_FAULTS`, swcann/README.md) is one realistic
library bug. For each, the score runs a small subset of the suite (a `-k` selection that reaches
the buggy code path) with only that fault switched on, reads the records in `results.jsonl` and
classifies every case that did not pass:

    CRASH        the case worker died (record `signal`: SIGSEGV, SIGABRT)
    TIMEOUT      no result before the case deadline
    LEAK         the library reported live objects or allocations after the case, or the device had
                 less free memory after it than before (aclrtGetMemInfo)
    STATUS       phase-1 status differs from the case file's; detail = the check (`[B9]`, or the
                 check the library's message names)
    WRONG_CHECK  the expected status, raised by another check; detail = the expected check
    RUNTIME      phase 2 or the stream sync failed; detail = the status code (507015)
    OUTSIDE_VIEW the library wrote into the gaps of a strided output
    INPUT_WRITTEN the library changed an input's device buffer (aclnn inputs are const); detail =
                 the input's name
    WORKSPACE_OVERRUN the library stored past the workspace phase 1 asked for (guard bytes changed)
    RELAUNCH     the second launch of a repeatable executor (a `relaunch` group, or --relaunch) failed
                 where its first passed
    BATCH_SLICE  a slice of a case's batch run alone gave other bits than the same slice of the
                 full batch (--determinism-level 3, harness/judge/batch_slice.py)
    NONDETERMINISTIC  two runs of a case with the same inputs gave different bits where
                 determinism is promised (--deterministic, or an op documented deterministic)
    LAUNCH       an empty input made phase 2 launch a kernel (it must return early); read from
                 the library's launch counter (`launches` in the record)
    NUMERIC      the comparison against the golden failed; evidence = the comparator's metrics
    SLOW         passed, but phase 2 + sync took >= SLOW_RATIO times as long as in the clean
                 baseline run (and at least SLOW_FLOOR_S): a class a single suite run does not
                 flag by itself; records carry `launch_s`, the score compares runs
    PERF         passed, and the run's perf gate calls the case a regression against a perf
                 baseline of the fault-free library (re-measured, so repeated): the perf faults
                 (faults.PERF_FAULTS, harness/audit/perf_score.py); evidence = ratio and interval

A timed launch that fails under --perf (it ran no kernel, or returned an error) is a later launch of
a repeatable executor gone wrong: RELAUNCH.

A fault is *detected* when at least one case of its subset is classified, and *correctly
classified* when every classified case has the class (and detail) declared in FAULTS. Before
that, one clean run per SoC family over all the subsets must pass completely, so a detection
is never a case that fails anyway.

    python -m harness.audit.faultscore [--only NAME,...] [--jobs N] [--work-dir DIR] [--json FILE]

The faults and their expected classes are data: harness/audit/faults.py.

prints the table and exits 0 only when every fault is detected and correctly classified.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..judge import perf, reasons
from ..core.argv import Parser, fail, number
from ..core.status import Status
from ..core.paths import REPO_ROOT
from ..target import Target
from . import perf_score
from .faults import FAULTS, PERF_FAULTS, Fault  # noqa: F401  (FAULTS: read by tests and tools from here)

ROOT = REPO_ROOT
SLOW_RATIO = 5.0        # a 10x slowdown must show as at least 5x in wall time on a busy machine
SLOW_FLOOR_S = 0.02     # below this, launch times are noise, never a slowdown (small cases: ~10 us;
                        # a 2-core machine's scheduler once stretched one to 5.9 ms)
RUN_TIMEOUT_S = 300     # one pytest run; a hang of the harness itself must not hang the score

_CHECK_IN_MESSAGE = re.compile(r"check ((?:B|L0\.)[\w.]+) failed")
_CHECK_IN_REASON = re.compile(r"\[((?:B|L0\.)[\w.]+)\]")
_LAUNCHED_ON_EMPTY = re.compile(r"^empty .*: phase 2 launched \d+ kernel")
_WROTE_INTO_INPUT = re.compile(re.escape(reasons.WROTE_INTO_INPUT) + r" ([\w, ]+?):")


# ---------------------------------------------------------------- classification

@dataclass
class Finding:
    case_id: str
    cls: str                 # PASS, SKIP, or one of the classes in the module docstring (or FAIL: unknown)
    detail: str | None = None
    evidence: str = ""


def _check_of(record: dict) -> str | None:
    """The check a status mismatch is about: the case's own, else the one the message names."""
    if record.get("check") not in (None, "None", ""):
        return str(record["check"])
    message = (record.get("phase1") or {}).get("message")
    named = _CHECK_IN_REASON.search(record.get("reason") or "") or \
        _CHECK_IN_MESSAGE.search(message or record.get("reason") or "")
    return named.group(1) if named else None


def classify(record: dict, baseline: dict | None = None) -> Finding:
    """What one results.jsonl record says happened; `baseline`: the same case's clean record."""
    cid, reason = record["case_id"], record.get("reason") or ""
    status = Status(record["status"])
    if status in (Status.CRASH, Status.TIMEOUT, Status.MISSING):
        detail = record.get("signal") if status is Status.CRASH else None
        return Finding(cid, status.value, detail, reason)
    if status in (Status.SKIP,):
        return Finding(cid, "SKIP", None, reason)
    if status is Status.PASS:
        slower = perf_score.regression_of(record)
        if slower:
            return Finding(cid, "PERF", None, slower)
        return _timing(record, baseline) or Finding(cid, "PASS")
    problems = "; ".join(record.get("problems") or [])
    if "live object" in problems or "live device allocation" in problems or reasons.MEMORY_NOT_RETURNED in problems:
        return Finding(cid, "LEAK", None, problems)
    if reason.startswith("phase-1 status"):
        return Finding(cid, "STATUS", _check_of(record), reason[:300])
    if "but raised by" in reason:
        return Finding(cid, "WRONG_CHECK", _check_of(record), reason[:300])
    if _LAUNCHED_ON_EMPTY.search(reason):
        return Finding(cid, "LAUNCH", None, reason[:300])
    if reason.startswith(reasons.RELAUNCH) or reason.startswith(perf.FAILED):   # a later launch; the first passed
        return Finding(cid, "RELAUNCH", None, reason[:300])
    code = record.get("sync_status") or record.get("phase2_status")
    if code:        # a runtime error of phase 2 or the sync, whatever words the reason uses
        return Finding(cid, "RUNTIME", str(code), reason[:300])
    if reasons.OUTSIDE_VIEW in reason:
        return Finding(cid, "OUTSIDE_VIEW", None, reason)
    if reason.startswith(reasons.BATCH_SLICE):
        return Finding(cid, "BATCH_SLICE", None, reason[:300])
    if reasons.NONDETERMINISTIC in reason:
        return Finding(cid, "NONDETERMINISTIC", None, reason[:300])
    if reason.startswith(reasons.WORKSPACE_OVERRUN):
        return Finding(cid, "WORKSPACE_OVERRUN", None, reason[:300])
    written = _WROTE_INTO_INPUT.search(reason)
    if written:
        return Finding(cid, "INPUT_WRITTEN", written.group(1), reason[:300])
    verdict = record.get("verdict") or {}
    if verdict and not verdict.get("passed", True):
        return Finding(cid, "NUMERIC", verdict.get("standard"), verdict.get("summary") or reason)
    return Finding(cid, "FAIL", None, reason[:300])


def _timing(record: dict, baseline: dict | None) -> Finding | None:
    now, then = record.get("launch_s"), (baseline or {}).get("launch_s")
    if not now or not then or now < SLOW_FLOOR_S or now < SLOW_RATIO * then:
        return None
    return Finding(record["case_id"], "SLOW", None,
                   f"phase 2 + sync {now * 1e3:.1f} ms, {now / then:.1f}x the clean run's {then * 1e3:.1f} ms")


@dataclass
class Score:
    fault: Fault
    findings: list[Finding] = field(default_factory=list)   # one per case of the subset
    error: str = ""                                          # the run itself failed

    @property
    def flagged(self) -> list[Finding]:
        return [f for f in self.findings if f.cls not in ("PASS", "SKIP")]

    @property
    def detected(self) -> bool:
        return bool(self.flagged)

    def _matches(self, f: Finding) -> bool:
        return f.cls == self.fault.expect and (self.fault.detail is None or f.detail == self.fault.detail)

    @property
    def correct(self) -> bool:
        return not self.error and self.detected and all(self._matches(f) for f in self.flagged)

    @property
    def wrong(self) -> list[Finding]:
        return [f for f in self.flagged if not self._matches(f)]


# ---------------------------------------------------------------- running the subsets

def _pytest(family: str, select: str, report_dir: Path, faults: str | None, options=()) -> tuple[int, str]:
    # only this fault, documented semantics, the family asked for
    env = {k: v for k, v in os.environ.items() if k not in ("SWCANN_FAULTS", "SWCANN_DEVIATIONS", "SWCANN_SOC")}
    if faults:
        env["SWCANN_FAULTS"] = faults
    cmd = [sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "-n", "0", "-q",
           "-p", "no:cacheprovider", "--soc", family, "-k", select, "--report-dir", str(report_dir), *options]
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, f"pytest did not finish within {RUN_TIMEOUT_S} s"
    return done.returncode, (done.stdout + done.stderr)[-3000:]


def _records(report_dir: Path) -> list[dict]:
    path = report_dir / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _baseline(faults: list[Fault], work: Path, jobs: int) -> tuple[dict[str, dict], list[str]]:
    """One clean run per family over the union of the subsets: every case must pass."""
    by_family: dict[str, list[Fault]] = {}
    for f in faults:
        by_family.setdefault(f.family, []).append(f)

    def run(family):
        group = by_family[family]
        select = " or ".join(f"({f.select})" for f in group)
        options = ("--tier", "all") if any("--tier" in f.options for f in group) else ()
        d = work / f"clean-{family}"
        code, out = _pytest(family, select, d, None, options)
        return family, code, out, _records(d)

    clean, problems = {}, []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for family, code, out, records in pool.map(run, by_family):
            if not records:
                problems.append(f"clean run on {family} produced no records (exit {code}): {out[-500:]}")
            for r in records:
                clean[r["case_id"]] = r
                if not Target.from_wire(r.get("backend") or {}).software_cann:
                    problems.append(f"clean run on {family}: {r['case_id']} did not run on the software CANN "
                                    f"(SWCANN_FAULTS needs it): {(r.get('backend') or {}).get('library')}")
                    break
                if r["status"] not in (Status.PASS.value, Status.SKIP.value):
                    problems.append(f"clean run on {family}: {r['case_id']} is {r['status']}: {r.get('reason', '')[:200]}")
    return clean, problems


def _score_one(fault: Fault, work: Path, clean: dict[str, dict]) -> Score:
    if fault.kind == "perf":            # through the suite's own perf gate
        records, error = perf_score.run(fault, work, _pytest)
        return Score(fault, [classify(r) for r in records], error)
    d = work / fault.key.replace("@op=", "-")
    code, out = _pytest(fault.family, fault.select, d, fault.env_value, fault.options)
    records = _records(d)
    score = Score(fault, [classify(r, clean.get(r["case_id"])) for r in records])
    if not records:
        score.error = f"no records (pytest exit {code}): {out[-400:]}"
    return score


def run_score(faults=FAULTS, work_dir: Path | None = None, jobs: int = 2) -> tuple[list[Score], list[str]]:
    """Score `faults`; returns the scores and the problems of the clean baseline runs."""
    work = Path(work_dir or ROOT / "reports" / "faultscore")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    faults = list(faults)
    clean, problems = _baseline(faults, work, jobs)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        scores = list(pool.map(lambda f: _score_one(f, work, clean), faults))
    return scores, problems


# ---------------------------------------------------------------- the table

def _short(case_id: str) -> str:
    return case_id if len(case_id) <= 70 else case_id[:67] + "..."


def _expected(f: Fault) -> str:
    return f.expect + (f"({f.detail})" if f.detail else "")


def table(scores: list[Score]) -> list[str]:
    lines = ["| fault | kind | op | detected | by cases | classification | expected | ok |",
             "|---|---|---|---|---|---|---|---|"]
    for s in scores:
        f = s.fault
        flagged = s.flagged
        seen = sorted({c.cls + (f"({c.detail})" if c.detail else "") for c in flagged})
        by = f"{len(flagged)}/{len(s.findings)}: " + ", ".join(_short(c.case_id) for c in flagged[:2]) if flagged else \
            f"0/{len(s.findings)}"
        evidence = (flagged[0].evidence[:110] if flagged else s.error[:110]).replace("|", "/").replace("\n", " ")
        lines.append(f"| {f.name} | {f.kind} | {f.op.replace('Backward', '')} | {'yes' if s.detected else 'NO'} "
                     f"| {by} | {', '.join(seen) or '-'}: {evidence} | {_expected(f)} | "
                     f"{'ok' if s.correct else 'MISCLASSIFIED' if s.detected else 'UNDETECTED'} |")
    return lines


def summary(scores: list[Score], problems: list[str]) -> tuple[bool, list[str]]:
    good = sum(s.correct for s in scores)
    lines = [f"{good}/{len(scores)} faults detected and correctly classified "
             f"({sum(s.detected for s in scores)} detected)"]
    for s in scores:
        for w in s.wrong[:3]:
            lines.append(f"MISCLASSIFIED {s.fault.name}: {w.case_id} is {w.cls}"
                         + (f"({w.detail})" if w.detail else "") + f", expected {_expected(s.fault)}: {w.evidence[:200]}")
        if not s.detected:
            lines.append(f"UNDETECTED {s.fault.name}: {len(s.findings)} case(s) passed" + (f"; {s.error}" if s.error else ""))
    lines += [f"BASELINE {p}" for p in problems]
    return good == len(scores) and not problems, lines


def main(argv=None) -> int:
    ap = Parser(prog="python -m harness.audit.faultscore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated fault names (default: all)")
    ap.add_argument("--jobs", type=number(minimum=1, maximum=64, integer=True), default=2,
                    help="pytest runs at a time (1-64, default 2)")
    ap.add_argument("--work-dir", type=Path, help="report directories (default reports/faultscore; emptied first)")
    ap.add_argument("--json", type=Path, help="also write the scores as JSON here")
    ap.add_argument("--list", action="store_true", help="print the faults and their expected classification")
    a = ap.parse_args(argv)
    faults = list(FAULTS + PERF_FAULTS)
    if a.only:
        names = [n.strip() for n in a.only.split(",") if n.strip()]
        known = {f.name for f in faults}
        unknown = [n for n in names if n not in known]
        if unknown:
            return fail(f"--only: unknown fault(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        faults = [f for f in faults if f.name in names]
    if a.list:
        for f in faults:
            print(f"{f.name:26} {f.kind:9} {f.op:30} {_expected(f):22} {f.what}")
        return 0
    started = time.time()
    scores, problems = run_score(faults, a.work_dir, max(1, a.jobs))
    ok, lines = summary(scores, problems)
    print("\n".join(table(scores)))
    print("\n".join(lines))
    print(f"({time.time() - started:.0f} s, SIMULATED: software CANN with SWCANN_FAULTS)")
    if a.json:
        a.json.write_text(json.dumps([{"fault": s.fault.name, "kind": s.fault.kind, "op": s.fault.op,
                                       "expected": _expected(s.fault), "detected": s.detected, "correct": s.correct,
                                       "error": s.error,
                                       "findings": [f.__dict__ for f in s.findings]} for s in scores], indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
