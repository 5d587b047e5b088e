"""Gating: apply a baseline to a run's records and decide whether the gate passes.

The gate fails only on what is new: FAIL, CRASH, TIMEOUT or MISSING not covered by the baseline,
and UNEXPECTED_PASS of a baseline entry (a stale waiver must be removed, or it hides the next
regression). A case file's `deviations:` say a backend *may* deviate; one that did not deviate is
an UNEXPECTED_PASS too, shown in every report, but it does not fail the gate.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import classify
from .baseline import Baseline, Entry
from .records import raw_status_of, regated, status_of
from ..core.status import Status

def apply(records: list[dict], baseline: Baseline) -> list[dict]:
    """New records with the baseline's verdicts (classify.py decides); the input records are left as they were."""
    return [regated(rec, baseline) for rec in records]


def is_gate_failure(rec: dict) -> bool:
    return classify.is_gate_failure(status_of(rec), rec.get("waiver"))


@dataclass
class GateResult:
    failures: list[dict] = field(default_factory=list)          # what turns the gate red, worst first
    expected: list[dict] = field(default_factory=list)
    flakes: list[dict] = field(default_factory=list)
    deviation_passes: list[dict] = field(default_factory=list)  # case-file deviations that did not deviate
    unused: list[Entry] = field(default_factory=list)           # baseline entries no case of the run matched
    warnings: list[str] = field(default_factory=list)           # what is wrong with the baseline itself
    no_baseline: str = ""       # a directory held no baseline for the run's target: the verdict rests on none

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def lines(self, limit: int = 50) -> list[str]:
        """The gate's verdict, new problems first, each with its repro command."""
        head = ("GATE PASSED" if self.passed else f"GATE FAILED: {len(self.failures)} new problem(s)") + \
            f" ({len(self.expected)} expected failure(s), {len(self.flakes)} flake(s))"
        out = [head] + ([f"  warning: {self.no_baseline}"] if self.no_baseline else [])   # it explains the verdict
        for rec in self.failures[:limit]:
            why = rec.get("reason") or ""
            if status_of(rec) == Status.UNEXPECTED_PASS:
                w = rec.get("waiver") or {}
                why = f"passes, but {w.get('source')} lists it as failing ({w.get('reason')}); remove the entry"
            out.append(f"  {status_of(rec).value:<15} {rec['case_id']}: {why}")
            if rec.get("repro"):
                out.append(f"  {'':<15} repro: {rec['repro']}")
        if len(self.failures) > limit:
            out.append(f"  ... and {len(self.failures) - limit} more (results.jsonl)")
        for rec in self.flakes[:limit]:
            out.append(f"  FLAKE           {rec['case_id']}: attempts {' '.join(rec.get('attempts') or [])}".rstrip())
        if self.deviation_passes:
            out.append(f"  note: {len(self.deviation_passes)} case(s) with a known deviation in their case file "
                       "passed (UNEXPECTED_PASS, not gating): the deviation may no longer hold")
        out += [f"  warning: {w}" for w in self.warnings[:limit]]
        if len(self.warnings) > limit:
            out.append(f"  ... and {len(self.warnings) - limit} more warning(s) about the baseline")
        for e in self.unused[:limit]:
            out.append(f"  warning: baseline entry {e.source} ({e.case}) matched no case in this run")
        if len(self.unused) > limit:
            out.append(f"  ... and {len(self.unused) - limit} more baseline entries that matched no case")
        return out


_RANK = {s: i for i, s in enumerate((Status.CRASH, Status.TIMEOUT, Status.MISSING, Status.FAIL, Status.UNEXPECTED_PASS))}


def _baseline_checks(baseline: Baseline, ids: list[str]) -> tuple[list[Entry], list[str]]:
    """(entries that match none of `ids`, warnings about the baseline): duplicated entries, and a
    case both skipped and expected to fail (the skip wins, so the expectation is never checked).
    Said in the gate's lines: a gate that passes because its baseline is not what its author
    thinks is a pass nobody earned."""
    warnings = baseline.duplicates()
    hits = [[c for c in ids if pattern.fullmatch(c)] for pattern in (e.pattern for e in baseline.entries)]
    unused = [e for e, h in zip(baseline.entries, hits) if not h]
    skipped = {c: e for e, h in zip(baseline.entries, hits) if e.kind == "skips" for c in h}
    for e, h in zip(baseline.entries, hits):
        both = [c for c in h if e.kind != "skips" and c in skipped and skipped[c].case != e.case]
        if both:                 # the same text under both kinds is already a duplicate above
            s = skipped[both[0]]
            warnings.append(f"{e.source} ({e.case}) and {s.source} ({s.case}) both match {both[0]}"
                            + (f" and {len(both) - 1} more case(s)" if len(both) > 1 else "")
                            + f": the case is skipped, so the {e.kind} entry is never checked")
    return unused, warnings


def evaluate(records: list[dict], baseline: Baseline | None = None, selected: list[str] = ()) -> GateResult:
    """Judge gated records (apply() first when there is a baseline). selected: case ids the run
    selected beyond its records (a shard's manifest lists the other shards' cases too): a
    baseline entry for one of those is not unused."""
    result = GateResult()
    for rec in records:
        status = status_of(rec)
        if is_gate_failure(rec):
            result.failures.append(rec)
        elif status == Status.EXPECTED_FAIL:
            result.expected.append(rec)
        elif status == Status.FLAKE:
            result.flakes.append(rec)
        elif status == Status.UNEXPECTED_PASS:
            result.deviation_passes.append(rec)
    result.failures.sort(key=lambda r: (_RANK.get(status_of(r), 9), r["case_id"]))
    if baseline is not None:
        ids = sorted({r["case_id"] for r in records} | set(selected))
        result.unused, result.warnings = _baseline_checks(baseline, ids)
        if baseline.searched is not None and not baseline.files:
            result.no_baseline = (f"no baseline for {baseline.target} found in {baseline.searched}: "
                                  "no failure is expected, so any failure fails the gate")
    return result


def baseline_entries_from(records: list[dict], link: str, reason_prefix: str = "") -> list[Entry]:
    """Entries for a fresh baseline: every case that failed goes to fails (its reason is the failure
    text), every flake to flakes. Cases that passed or were skipped are not listed, nor failures a
    case file already declares as a known deviation of the backend (the case file is their waiver)."""
    entries = []
    for rec in sorted(records, key=lambda r: r["case_id"]):
        raw, status = raw_status_of(rec), status_of(rec)
        if (rec.get("waiver") or {}).get("kind") == "deviation":
            continue
        reason = (reason_prefix + (rec.get("reason") or str(raw))).replace("\n", " ")[:300]
        if status == Status.FLAKE:
            entries.append(Entry("flakes", rec["case_id"], reason, link, "(new)"))
        elif raw.is_failure or status == Status.EXPECTED_FAIL:
            entries.append(Entry("fails", rec["case_id"], reason, link, "(new)",
                                 raw if raw in (Status.CRASH, Status.TIMEOUT) else None))
    return entries
