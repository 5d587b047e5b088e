"""A perf fault scored through the suite's own perf gate, as a user would find one.

A perf fault changes no bit (swcann/README.md, "Performance faults"), so no suite run reports it
by itself. For each one (faults.PERF_FAULTS) the score runs: the fault's subset with --perf on the
fault-free library, a perf baseline written from that run (perf_baseline.from_run, what
`python -m harness.reporting baseline --perf` writes), then the subset with the fault on under
--perf --gate <that baseline>. The gate re-measures every case it flags and calls a regression
only when both sample sets agree; each record it calls one is classified PERF, with its ratio
and interval (regression_of).
"""
from __future__ import annotations

from pathlib import Path

from ..core.perfstats import REGRESSION
from ..reporting import baseline as bl, records as rec_mod
from ..reporting.perf import baseline as perf_baseline, gate as perf_gate
from ..reporting.runs import load_run


def regression_of(record: dict) -> str | None:
    """The gate's words for a perf regression of `record` (ratio, interval, re-measurement), or None."""
    for v in record.get("perf_gate") or []:
        if v.get("verdict") == REGRESSION:
            return perf_gate.describe(v)
    return None


def write_baseline(run_dir: Path, out: Path) -> tuple[Path | None, str]:
    """(the perf baseline of a finished --perf run, or None and why not)."""
    run = load_run(run_dir)
    ident = run.identity
    target = bl.Target(ident.get("backend", ""), ident.get("family", ""))
    doc = perf_baseline.from_run(run.records, ident, target, str(run_dir))
    if not doc["cases"]:
        return None, f"the clean --perf run in {run_dir} measured no case"
    return perf_baseline.write(out, doc), ""


def run(fault, work: Path, pytest_run) -> tuple[list[dict], str]:
    """The records of the fault's gated run, and what went wrong before it ('' when nothing).
    pytest_run(family, select, report_dir, faults, options) -> (exit status, output tail)."""
    d = work / fault.key.replace("@op=", "-")
    clean, faulty = d / "clean-perf", d / "fault"
    code, out = pytest_run(fault.family, fault.select, clean, None, ("--perf", *fault.options))
    if code != 0:
        return [], f"the clean --perf run failed (exit {code}): {out[-400:]}"
    baseline, why = write_baseline(clean, d / "perf-baseline.json")
    if baseline is None:
        return [], why
    code, out = pytest_run(fault.family, fault.select, faulty, fault.env_value,
                           ("--perf", "--gate", str(baseline), *fault.options))
    if code not in (0, 1):          # 1: the gate failed, which a detected perf fault does
        return [], f"the gated run failed (exit {code}): {out[-400:]}"
    try:
        return rec_mod.load_results(faulty), ""
    except rec_mod.ResultsError as e:
        return [], str(e)
