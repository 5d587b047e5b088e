"""A case's timeline on a family, and its first bad run: for a status change, a perf REGRESSION
and a change of its output's bits, the last good run and the first bad one (library sha256, CANN
version, and whatever else of the identity changed between the two).

Good and bad are read from the final status: PASS, UNEXPECTED_PASS and FLAKE passed (a FLAKE
passed on a rerun); FAIL, CRASH and TIMEOUT failed; SKIP, MISSING and EXPECTED_FAIL judged nothing
new (not run, or a waiver decided) and are stepped over. A digest change is read from passing runs
only (a failing output's bits say nothing new), and one that changes more than once in the window
is listed as varying, not as a first bad run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import runs as runs_mod
from .rows import digest_hex
from .schema import cases, results

GOOD = frozenset({"PASS", "UNEXPECTED_PASS", "FLAKE"})
BAD = frozenset({"FAIL", "CRASH", "TIMEOUT"})
REGRESSION = "REGRESSION"


@dataclass
class Point:
    run: runs_mod.RunRow
    status: str
    reason: str
    digest: str | None
    perf_median_ms: float | None
    perf_ci: tuple | None
    perf_verdict: str | None
    perf_ratio: float | None
    phase1_status: int | None
    phase1_check: str | None
    worst_share: float | None

    def line(self) -> str:
        perf = f" {self.perf_median_ms:.4g} ms" if self.perf_median_ms is not None else ""
        verdict = f" {self.perf_verdict}" if self.perf_verdict else ""
        run = self.run
        return (f"  {run.started} {self.status:<8}{perf}{verdict} digest {self.digest or '-'}"
                f" lib {(run.library_sha256 or '?')[:12]} CANN {run.cann_version or '?'} {run.directory}"
                + (f": {self.reason}" if self.reason else ""))

    def to_dict(self) -> dict:
        return {**self.run.brief(), "status": self.status, "reason": self.reason, "digest": self.digest,
                "perf_median_ms": self.perf_median_ms, "perf_ci_ms": list(self.perf_ci) if self.perf_ci else None,
                "perf_verdict": self.perf_verdict, "perf_ratio": self.perf_ratio,
                "phase1_status": self.phase1_status, "phase1_check": self.phase1_check,
                "worst_share": self.worst_share}


@dataclass
class FirstBad:
    case_id: str
    family: str
    kind: str                 # status | regression | digest | digest_varies
    now: str                  # the latest status, verdict or digest
    first_bad: runs_mod.RunRow | None
    last_good: runs_mod.RunRow | None
    bad_runs: int             # runs since the first bad one that are bad (status, regression) or new (digest)
    changed: list[str] = field(default_factory=list)      # identity differences last good -> first bad
    detail: str = ""

    def to_dict(self) -> dict:
        return {"case_id": self.case_id, "family": self.family, "kind": self.kind, "now": self.now,
                "first_bad": self.first_bad.brief() if self.first_bad else None,
                "last_good": self.last_good.brief() if self.last_good else None,
                "bad_runs": self.bad_runs, "changed": self.changed, "detail": self.detail}

    def lines(self) -> list[str]:
        what = {"status": f"{self.now} since", "regression": "perf REGRESSION since",
                "digest": "output bits changed at", "digest_varies": "output bits vary"}[self.kind]
        out = [f"{self.case_id} on {self.family}: {what}" + (f" {self.first_bad.text()}" if self.first_bad else "")
               + (f" ({self.bad_runs} run(s))" if self.kind != "digest_varies" else f": {self.detail}")]
        if self.kind != "digest_varies":
            out.append("    last good: " + (self.last_good.text() if self.last_good else "none in the store"))
        if self.changed:
            out.append("    changed: " + "; ".join(self.changed))
        if self.detail and self.kind != "digest_varies":
            out.append(f"    {self.detail}")
        return out


def case_key(conn, case_id: str) -> int | None:
    from sqlalchemy import select
    return conn.execute(select(cases.c.id).where(cases.c.case_id == case_id)).scalar()


RUNS_PER_QUERY = 5000        # run ids per IN (...): under SQLite's 32,766 parameters with room to spare


def points(conn, case: int, family_runs: dict[int, runs_mod.RunRow], family: str | None = None) -> list[Point]:
    """Every result of case (store id) in the given runs (of `family`), oldest first: one primary-key
    probe (run, case) per run (schema.py says why there is no index by case)."""
    from sqlalchemy import select
    c = results.c
    ids = sorted(family_runs)
    found = []
    for i in range(0, len(ids), RUNS_PER_QUERY):
        q = select(c.run, c.status, c.reason, c.digest, c.perf_median_ms, c.perf_ci_low_ms, c.perf_ci_high_ms,
                   c.perf_verdict, c.perf_ratio, c.phase1_status, c.phase1_check,
                   c.worst_share).where(c.run.in_(ids[i:i + RUNS_PER_QUERY]), c.case == case)
        if family is not None:
            q = q.where(c.family == family)
        found += conn.execute(q).all()
    out = []
    for row in found:
        run = family_runs.get(row.run)
        if run is None:
            continue
        ci = (row.perf_ci_low_ms, row.perf_ci_high_ms) if row.perf_ci_low_ms is not None else None
        out.append(Point(run, row.status, row.reason or "", digest_hex(row.digest), row.perf_median_ms, ci, row.perf_verdict,
                         row.perf_ratio, row.phase1_status, row.phase1_check, row.worst_share))
    out.sort(key=lambda p: (p.run.started, p.run.id))
    return out


def timeline(conn, case_id: str, family: str | None = None, last: int | None = None) -> dict[str, list[Point]]:
    """family -> the case's points (the last `last` of each family), oldest first."""
    case = case_key(conn, case_id)
    if case is None:
        return {}
    all_runs = {r.id: r for r in runs_mod.of_family(conn, family)}
    out: dict[str, list[Point]] = {}
    for p in points(conn, case, all_runs, family):
        out.setdefault(p.run.family, []).append(p)
    return {f: (ps[-last:] if last else ps) for f, ps in sorted(out.items())}


def _first_bad_of(pts: list[Point], is_bad, is_good) -> tuple | None:
    """(first bad index, last good index or None, bad count) when the latest judged point is bad."""
    judged = [i for i, p in enumerate(pts) if is_bad(p) or is_good(p)]
    if not judged or not is_bad(pts[judged[-1]]):
        return None
    first = judged[-1]
    for i in reversed(judged):
        if is_good(pts[i]):
            break
        first = i
    good = [i for i in judged if i < first]
    return first, (good[-1] if good else None), sum(1 for i in judged if i >= first and is_bad(pts[i]))


def analyse(case_id: str, family: str, pts: list[Point]) -> list[FirstBad]:
    """The first bad runs the case's points show: a status change, a REGRESSION, a digest change."""
    out = []
    status = _first_bad_of(pts, lambda p: p.status in BAD, lambda p: p.status in GOOD)
    if status:
        first, good, n = status
        last = pts[-1] if pts[-1].status in BAD else next(p for p in reversed(pts) if p.status in BAD)
        out.append(_found(case_id, family, "status", last.status, pts, first, good, n,
                          (f"phase 1 {last.phase1_status} ({last.phase1_check}); " if last.phase1_check else "")
                          + (last.reason or "")))
    regression = _first_bad_of(pts, lambda p: p.perf_verdict == REGRESSION,
                               lambda p: p.perf_verdict is not None and p.perf_verdict != REGRESSION)
    if regression:
        first, good, n = regression
        ratio = next((p.perf_ratio for p in reversed(pts) if p.perf_verdict == REGRESSION), None)
        out.append(_found(case_id, family, "regression", REGRESSION, pts, first, good, n,
                          f"latest ratio to its baseline {ratio:.3f}" if ratio else ""))
    passing = [i for i, p in enumerate(pts) if p.status in GOOD and p.digest]
    changes = [i for a, i in zip(passing, passing[1:]) if pts[i].digest != pts[a].digest]
    if len(changes) == 1:
        first = changes[0]
        good = max(i for i in passing if i < first)
        new = pts[first].digest
        out.append(_found(case_id, family, "digest", new, pts, first, good,
                          sum(1 for i in passing if i >= first and pts[i].digest == new),
                          f"digest {pts[good].digest} -> {new}"))
    elif len(changes) > 1:
        out.append(FirstBad(case_id, family, "digest_varies", pts[passing[-1]].digest, None, None, len(changes),
                            detail=f"{len(changes)} changes in {len(passing)} passing runs "
                                   f"({len({pts[i].digest for i in passing})} distinct digests)"))
    return out


def _found(case_id, family, kind, now, pts, first, good, n, detail) -> FirstBad:
    bad_run = pts[first].run
    good_run = pts[good].run if good is not None else None
    changed = runs_mod.differences(good_run, bad_run) if good_run else []
    return FirstBad(case_id, family, kind, now, bad_run, good_run, n, changed, detail)


def candidates(conn, window_runs: list[runs_mod.RunRow]) -> set[int]:
    """Cases whose timelines can show a first bad run (a year's cases are not each read): those that
    failed or regressed in the latest run of each shard of the window (what fails now), and those
    whose bits while passing were not all alike over the window."""
    from sqlalchemy import func, or_, select
    c = results.c
    latest: dict = {}
    for r in window_runs:             # oldest first: the last one of each shard stays
        latest[r.shard] = r.id
    found = set(conn.execute(select(c.case).where(c.run.in_(sorted(latest.values())),
                                                  or_(c.status.in_(sorted(BAD)), c.perf_verdict == REGRESSION))
                             .distinct()).scalars())
    found.update(conn.execute(select(c.case).where(c.run.in_([r.id for r in window_runs]), c.status.in_(sorted(GOOD)),
                                                   c.digest.is_not(None))
                              .group_by(c.case).having(func.min(c.digest) != func.max(c.digest))).scalars())
    return found


def first_bad_runs(conn, family: str | None = None, window: int = 30, case_id: str | None = None) -> list[FirstBad]:
    """Per family: every case whose latest status or perf verdict is bad, or whose bits changed in the
    family's last `window` runs, with its first bad run (over its whole timeline in the store)."""
    from sqlalchemy import select
    out: list[FirstBad] = []
    for fam in ([family] if family else runs_mod.families(conn)):
        fam_runs = runs_mod.of_family(conn, fam)
        if not fam_runs:
            continue
        by_id = {r.id: r for r in fam_runs}
        if case_id is not None:
            key = case_key(conn, case_id)
            keys = {key} if key is not None else set()
        else:
            keys = candidates(conn, runs_mod.window(fam_runs, window))
        names = dict(conn.execute(select(cases.c.id, cases.c.case_id).where(cases.c.id.in_(sorted(keys)))).all()) \
            if keys else {}
        recent = runs_mod.window(fam_runs, window)
        cutoff, recent_ids = recent[0].started, {r.id: r for r in recent}
        for key in sorted(keys, key=lambda k: names.get(k, "")):
            # the window first: a case that was good in it needs no older run; one bad all through the
            # window (or asked for by name) is read back to its first result
            found = analyse(names[key], fam, points(conn, key, recent_ids, fam)) \
                if case_id is None and len(recent) < len(fam_runs) else None
            if found is None or any(f.last_good is None and f.kind in ("status", "regression") for f in found):
                found = analyse(names[key], fam, points(conn, key, by_id, fam))
            # a digest change is news within the window; a failure is news as long as it lasts
            out += [f for f in found if f.kind in ("status", "regression") or case_id is not None
                    or (f.first_bad is not None and f.first_bad.started >= cutoff) or f.kind == "digest_varies"]
    order = {"status": 0, "regression": 1, "digest": 2, "digest_varies": 3}
    return sorted(out, key=lambda f: (order[f.kind], f.family, f.first_bad.started if f.first_bad else "", f.case_id))
