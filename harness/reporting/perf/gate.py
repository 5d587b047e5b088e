"""The perf gate: is a case slower than its baseline, for real?

A case is a REGRESSION only when (a) its median launch time exceeds the baseline entry's by more
than the tolerance, (b) the difference is significant (harness/core/perfstats.py: rank test and
the ratio's interval), and (c) both hold again on a re-measurement. The runner re-measures a case
once when its first sample set is flagged (needs_remeasurement()) and records the second set in
`perf.remeasured_ms`. A case flagged by one set only is "noise (not repeated)". A case flagged with
no second set (the offline `python -m harness.reporting gate RUN BASELINE`, which has only the
run's records and the baseline file at hand, or a re-measurement that failed) keeps its first
verdict: a REGRESSION still fails, as the live gate's would, and says plainly that it was not
re-measured, so machine noise is not ruled out (`unconfirmed` in its verdict). IMPROVEMENT is judged
the same way, and reported, never gating.

A case is flagged for re-measurement against the center of the baseline's runs (runs.py).
Where the baseline's library is at hand to the live run (ab.py), the re-measurement is an
interleaved A/B: this run's library and the baseline's, in perf_ab.ROUNDS pairs of short rounds
(ABBA order, both case workers pinned to one CPU), each A round compared with the B round beside it
(harness/core/paired.py: the median of the round ratios, a sign test and its interval), so that a
competing process slows both alike. That comparison decides: beside the library every case whose
change the baseline's runs cannot rule out is re-measured, flagged or not (on a shared 2-core
machine runs of one library move 1.4x, and a run in a fast phase shows a 1.3x slower library at
the runs' center), a case the A/B flags takes its verdict, and a case flagged first that the A/B
does not confirm is noise. Without the library the re-measurement repeats this run's side
only, (a) and (b) are then against the slowest plausible baseline run (the spread between the
baseline's runs, when it was built from several), for both sets, and a flagged case says that
machine noise is not ruled out (`noise` in its verdict); a one-run baseline says in its verdict
(`between_runs`) that it cannot rule out between-run noise.

The tolerance of a case: its baseline entry's, else its case file group's (`perf_tolerance` in the
record), else the baseline file's, else 10 %.

ATK's `standard.perf` (the record's `atk_perf`) is a ratio against a benchmark device: read here
as the least share of the benchmark's speed the device must reach (0.95: at most 1/0.95 = 1.053x
the benchmark's time; a list gives several such ratios and the strictest holds; "not_key" sets
none). It is the case's tolerance (1/ratio - 1) against a benchmark perf baseline (`"benchmark":
true`, measured on the benchmark device), judged with the same statistics and re-measurement. A
ratio above 1 (the device must beat the benchmark) cannot be a tolerance: the benchmark's times
are scaled by 1/ratio and compared with none. The spec's ATK lists all say "not_key" (spec
ops/*.md section E), so none of their cases has one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import baseline as bl
from . import runs as perf_runs
from .baseline import PerfBaseline, PerfEntry, pick
from ...core import paired, perfstats
from ...core.perfstats import IMPROVEMENT, REGRESSION, SAME

DEFAULT_TOLERANCE = 0.10
ALPHA = 0.01
NOISE, NOT_REMEASURED, INCOMPARABLE = "NOISE", "NOT_REMEASURED", "INCOMPARABLE"   # NOT_REMEASURED: older records
LABELS = {REGRESSION: "regression", IMPROVEMENT: "improvement", NOISE: "noise (not repeated)",
          NOT_REMEASURED: "flagged once, not re-measured", INCOMPARABLE: "not comparable", SAME: "same"}


def atk_ratio(value) -> float | None:
    """The strictest ratio of an ATK `standard.perf` value (a number or a list of numbers), or
    None ("not_key", absent, or no positive number)."""
    values = value if isinstance(value, list) else [value]
    nums = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) and v > 0]
    return max(nums) if nums and len(nums) == len(values) else None


@dataclass(frozen=True)
class _Check:
    """One comparison a measured case is due: against its own baseline entry, or the benchmark."""
    against: str                 # "baseline" | "benchmark"
    entry: PerfEntry
    tolerance: float
    tolerance_from: str
    scale: float = 1.0           # the entry's times are multiplied by this first (an ATK ratio above 1)

    def judge(self, samples) -> tuple[perfstats.Comparison, perfstats.Comparison, dict]:
        """(against the baseline runs' center, against the slowest / fastest plausible run, the
        between-run facts): perf_runs.judge()."""
        base = [x * self.scale for x in self.entry.samples_ms] if self.scale != 1.0 else self.entry.samples_ms
        return perf_runs.judge(base, samples, self.tolerance, ALPHA, [m * self.scale for m in self.entry.run_medians_ms])

    def compare(self, samples) -> perfstats.Comparison:
        """Whether the samples are flagged: against the center (a re-measurement may confirm it)."""
        return self.judge(samples)[0]

    def not_ruled_out(self, samples) -> bool:
        """Whether a change past the tolerance is possible as far as the baseline's runs can tell:
        the median past 1 + tolerance of the fastest plausible run, or below 1 / (1 + tolerance)
        of the slowest. On a machine whose runs move 1.4x, a run in a fast phase shows a 1.3x
        slower library at 1.02x the runs' center: only a measurement beside the baseline's
        library (A/B) tells, so where that library is at hand every such case gets one."""
        center, _, facts = self.judge(samples)
        faster_base = facts.get("ratio_to_fastest", center.ratio)
        slower_base = facts.get("ratio_to_slowest", center.ratio)
        return faster_base > 1 + self.tolerance or slower_base < 1 / (1 + self.tolerance)

    def interleaved(self, perf: dict) -> perfstats.Comparison | None:
        """The A/B re-measurement (ab.py): this run's library against the baseline's, launched
        in turn in the same time window, so that a machine slower then is slower for both."""
        if self.against != "baseline" or not perf.get("remeasured_base_ms") or not perf.get("remeasured_ms"):
            return None
        rounds = (perf.get("remeasured_ab") or {}).get("medians_ms")
        if rounds is not None:      # each A round against the B round beside it (ab.py)
            try:
                pairs = [(float(a), float(b)) for a, b in rounds]
            except (TypeError, ValueError):
                raise ValueError("perf.remeasured_ab.medians_ms is not a list of [A, B] round medians") from None
            design = (perf.get("remeasured_ab") or {}).get("rounds")
            design = design if isinstance(design, int) and not isinstance(design, bool) and 0 < design <= 1000 \
                else len(pairs)
            return paired.compare_design([b for _, b in pairs], [a for a, _ in pairs], design, self.tolerance, ALPHA)
        # records of before the rounds were kept (two rounds a side): the pooled launches
        return perfstats.compare(perf["remeasured_base_ms"], perf["remeasured_ms"], self.tolerance, ALPHA)

    def flagged(self, c: perfstats.Comparison) -> str:
        """The comparison's verdict as this check counts it (a benchmark only gates slowness)."""
        return SAME if (self.against == "benchmark" and c.verdict == IMPROVEMENT) else c.verdict


def _tolerance(rec: dict, entry: PerfEntry, own: PerfBaseline) -> tuple[float, str]:
    if entry.tolerance is not None:
        return float(entry.tolerance), f"baseline entry {entry.source}"
    group = rec.get("perf_tolerance")
    if isinstance(group, (int, float)) and not isinstance(group, bool) and group >= 0:
        return float(group), f"case file group {rec.get('group') or '?'}"
    if own.tolerance is not None:
        return float(own.tolerance), f"baseline {own.name}"
    return DEFAULT_TOLERANCE, "default"


def _checks(rec: dict, own: PerfBaseline | None, bench: PerfBaseline | None) -> list[_Check]:
    out = []
    entry = own.entry(rec["case_id"]) if own else None
    if entry is not None:
        out.append(_Check("baseline", entry, *_tolerance(rec, entry, own)))
    ratio = atk_ratio(rec.get("atk_perf"))
    entry = bench.entry(rec["case_id"]) if bench and ratio else None
    if entry is not None:
        out.append(_Check("benchmark", entry, max(0.0, 1 / ratio - 1), f"ATK standard.perf {rec.get('atk_perf')}",
                          min(1.0, 1 / ratio)))
    return out


def needs_remeasurement(rec: dict, own: PerfBaseline | None, bench: PerfBaseline | None = None,
                        ab: bool = False) -> bool:
    """For the runner, once a case's first sample set is in rec["perf"]["samples_ms"]: whether
    any comparison flags it (REGRESSION or IMPROVEMENT), so that it is measured once more. With
    `ab` (the baseline's library is at hand for an A/B re-measurement) also every case whose change
    past the tolerance the baseline's runs cannot rule out (_Check.not_ruled_out): the A/B decides."""
    samples = (rec.get("perf") or {}).get("samples_ms") or []
    timing = str((rec.get("perf") or {}).get("timing"))
    try:
        return any(c.flagged(c.compare(samples)) != SAME or (ab and c.against == "baseline" and c.not_ruled_out(samples))
                   for c in _checks(rec, own, bench) if c.entry.comparable(timing, c.against == "benchmark"))
    except ValueError:              # unusable samples: the gate says so; a second set would not help
        return False


def ab_tolerance(rec: dict, own: PerfBaseline | None) -> float | None:
    """The tolerance the A/B re-measurement of `rec` is judged at (its own baseline's check), for
    stopping the rounds once the verdict is settled (paired.settled); None without that check."""
    return next((c.tolerance for c in _checks(rec, own, None) if c.against == "baseline"), None)


def combine(first: str, second: str | None) -> str:
    """The gate's verdict from the first and the re-measured sample sets' verdicts. Without a second
    set the first stands: the offline gate must give the verdict the live one gives, and a
    slowdown it cannot re-measure is still a slowdown (verdict() says it was not re-measured)."""
    if first == SAME or second is None:
        return first
    return first if second == first else NOISE


def _unconfirmed(perf: dict) -> str:
    """What a flagged case without a second sample set says about it."""
    why = perf.get("remeasured_why")
    how = (f"its re-measurement failed ({why})" if why else
           "not re-measured: this gate has only the run's records and the baseline file at hand")
    return f"{how}, so machine noise is not ruled out"


def _alone(perf: dict) -> str:
    """What a case re-measured on this run's library only says about it."""
    why = perf.get("remeasured_alone") or "only the baseline file was at hand"
    return (f"re-measured on this run's library only ({why}), so a machine slower throughout both "
            "measurements (machine noise) is not ruled out")


def _numbers(c: perfstats.Comparison, scale: float) -> dict:
    """ratio and interval against the entry's own times (a benchmark check compared scaled ones)."""
    p = c.p_slower if c.ratio >= 1 else c.p_faster
    return {"ratio": c.ratio * scale, "estimate": c.estimate * scale, "ci": [c.ci[0] * scale, c.ci[1] * scale],
            "ci_level": c.ci_level, "p": p, "n": c.n_new}


def verdict(check: _Check, perf: dict) -> dict:
    """One check of one measured case, as plain data for the record: {against, baseline, verdict,
    ratio, estimate, ci, ci_level, p, n, n_base, tolerance, tolerance_from, limit, remeasured, why}."""
    out = {"against": check.against, "baseline": check.entry.source, "tolerance": check.tolerance,
           "tolerance_from": check.tolerance_from, "limit": check.scale * (1 + check.tolerance),
           "n_base": len(check.entry.samples_ms)}
    timing = str(perf.get("timing"))
    if not check.entry.comparable(timing, check.against == "benchmark"):
        return {**out, "verdict": INCOMPARABLE,
                "why": f"timed by {timing}, the baseline by {check.entry.timing}"}
    try:
        center, plausible, between = check.judge(perf.get("samples_ms") or [])
        ab = check.interleaved(perf)
        # the A/B comparison has no between-run noise: the first set counts against the runs' center;
        # against the baseline file alone, both sets against the slowest (fastest) plausible run
        first = center if ab else plausible
        again = ab or (check.judge(perf["remeasured_ms"])[1] if perf.get("remeasured_ms") else None)
    except ValueError as e:
        return {**out, "verdict": INCOMPARABLE, "why": str(e)}
    second = check.flagged(again) if again else None
    out |= _numbers(first, check.scale) | {"between_runs": between}
    how = ({"against": "baseline library", "rounds": (perf.get("remeasured_ab") or {}).get("rounds"),
            "n_base": len(perf["remeasured_base_ms"])} if ab else {"against": "baseline file"})
    # beside the baseline's library the A/B decides (the first set only chose the case for it, and
    # a first set flagged that the A/B does not confirm is noise); else both sets must agree
    verdict = (second if second != SAME else NOISE if check.flagged(first) != SAME else SAME) if ab \
        else combine(check.flagged(first), second)
    out |= {"verdict": verdict,
            "remeasured": {**_numbers(again, 1.0 if ab else check.scale), **how, "verdict": second} if again else None}
    if again is None and out["verdict"] != SAME:
        out["unconfirmed"] = _unconfirmed(perf)
    elif again is not None and ab is None and out["verdict"] != SAME:
        out["noise"] = _alone(perf)
    return out


def apply(records: list[dict], own: PerfBaseline | None, bench: PerfBaseline | None = None) -> list[dict]:
    """New records, each measured one with `perf_gate`: its verdicts (verdict()); the input
    records are left as they were."""
    out = []
    for rec in records:
        perf = rec.get("perf")
        if perf:
            rec = dict(rec, perf_gate=[verdict(c, perf) for c in _checks(rec, own, bench)])
        out.append(rec)
    return out


@dataclass
class PerfGate:
    """The perf verdicts of one run against its perf baselines."""
    own: PerfBaseline | None
    bench: PerfBaseline | None
    records: list[dict]
    run_library: str | None = None
    by_verdict: dict[str, list[tuple[dict, dict]]] = field(default_factory=dict)

    def __post_init__(self):
        for rec in self.records:
            for v in rec.get("perf_gate") or []:
                self.by_verdict.setdefault(v["verdict"], []).append((rec, v))

    def of(self, verdict_name: str) -> list[tuple[dict, dict]]:
        return self.by_verdict.get(verdict_name, [])

    @property
    def measured(self) -> list[dict]:
        return [r for r in self.records if r.get("perf")]

    @property
    def regressions(self) -> int:
        return len(self.of(REGRESSION))

    @property
    def passed(self) -> bool:
        return not self.regressions

    def unmeasured(self) -> list[str]:
        """The cases of baseline entries this run did not measure (no record, or one without times)."""
        measured = {r["case_id"] for r in self.measured}
        return sorted(set(self.own.entries) - measured) if self.own else []

    def lines(self, limit: int = 50) -> list[str]:
        if not self.own and not self.bench:
            return [f"perf: {len(self.measured)} measured case(s), no perf baseline for this run: "
                    "nothing gated on time"] if self.measured else []
        files = ", ".join(p.path for p in (self.own, self.bench) if p)
        if not self.measured:
            return [f"perf: baseline {files} given, but no case of this run was measured (not a perf run)"]
        counts = ", ".join(f"{len(self.of(v))} {LABELS[v]}" for v in (IMPROVEMENT, NOISE, NOT_REMEASURED, INCOMPARABLE)
                           if v != NOT_REMEASURED or self.of(v))      # NOT_REMEASURED: only an older record's
        compared = sum(len(r.get("perf_gate") or []) for r in self.measured)
        unconfirmed = sum(1 for _, v in self.of(REGRESSION) if v.get("unconfirmed"))
        alone = sum(1 for _, v in self.of(REGRESSION) if v.get("noise"))
        head = "PERF GATE PASSED" if self.passed else f"PERF GATE FAILED: {self.regressions} regression(s)" + (
            f", {unconfirmed} of them not re-measured, so machine noise is not ruled out" if unconfirmed else "") + (
            f", {alone} of them re-measured without the baseline library, so machine noise is not ruled out"
            if alone else "")
        out = [f"{head} ({compared} comparison(s) against {files}: {counts})"]
        for name in (REGRESSION, IMPROVEMENT, NOISE, NOT_REMEASURED, INCOMPARABLE):
            for rec, v in self.of(name)[:limit]:
                out.append(f"  {LABELS[name]:<12} {rec['case_id']} ({rec.get('family') or 'any'}): {describe(v)}")
            if len(self.of(name)) > limit:
                out.append(f"  ... and {len(self.of(name)) - limit} more {LABELS[name]} (results.jsonl: perf_gate)")
        without = [r["case_id"] for r in self.measured if not r.get("perf_gate")]
        if without:
            out.append(f"  note: {len(without)} measured case(s) have no baseline entry (new cases?), "
                       f"e.g. {without[0]}")
        unmeasured = self.unmeasured()
        if unmeasured:
            out.append(f"  warning: baseline entries not measured in this run: {len(unmeasured)}, e.g. {unmeasured[0]}")
        lib = (self.own.measured if self.own else {}).get("library_sha256")
        if lib and self.run_library and lib != self.run_library:
            out.append(f"  note: baseline measured with library sha256 {lib[:12]}, this run {self.run_library[:12]}")
        return out


def p_text(p: float) -> str:
    """A p-value as shown: the normal approximation's tail is not meaningful below 1e-12."""
    return "<1e-12" if p < 1e-12 else f"{p:.2g}"


def describe(v: dict) -> str:
    """One verdict in a line: the ratio, its interval and p, the tolerance and the re-measurement."""
    if v["verdict"] == INCOMPARABLE:
        return f"against {v['against']} {v['baseline']}: {v.get('why')}"
    lo, hi = v["ci"]
    text = (f"{v['ratio']:.3f}x {'the benchmark' if v['against'] == 'benchmark' else 'the baseline'} "
            f"({v['ci_level']:.0%} CI [{lo:.3f}, {hi:.3f}], p {p_text(v['p'])}, n {v['n_base']}/{v['n']}); "
            f"allowed {v['limit']:.3f}x ({v['tolerance_from']})")
    again = v.get("remeasured")
    text += perf_runs.describe(v.get("between_runs"))
    if again:
        ab = " against the baseline library, interleaved" if again.get("against") == "baseline library" else ""
        text += (f"; re-measured{ab} {again['ratio']:.3f}x [{again['ci'][0]:.3f}, {again['ci'][1]:.3f}]: "
                 f"{again['verdict']}")
    if v.get("unconfirmed") or v.get("noise"):
        text += f"; {v.get('unconfirmed') or v.get('noise')}"
    return text


def gate(records: list[dict], base: bl.Baseline | None, run_library: str | None = None) -> tuple[list[dict], PerfGate]:
    """The records with their perf verdicts against the perf baselines `base` picked for the run."""
    own, bench = pick(base)
    gated = apply(records, own, bench)
    return gated, PerfGate(own, bench, gated, run_library)
