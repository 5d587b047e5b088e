"""Flake rates over a window of runs, the baseline `flakes:` entries they propose, and the entries
that no longer flake.

A case flakes on a family when, within the window, it failed and passed again more than once, or
failed once between passes, or was a FLAKE (failed, then passed on a rerun). A case that failed
from some run on and still fails is a status change (timeline.py), not a flake; one that failed
for a stretch and was fixed is neither. Its rate is its failures (and FLAKEs) over the runs that
judged it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import runs as runs_mod
from .schema import FAILING, cases, results
from .timeline import BAD, GOOD

FLAKE = "FLAKE"


@dataclass
class Flaky:
    case_id: str
    family: str
    failures: int             # failing runs, FLAKE included
    judged: int               # runs that judged the case (passed or failed) in the window
    transitions: int          # failed -> passed changes
    first: runs_mod.RunRow
    last: runs_mod.RunRow
    failed_runs: list[str] = field(default_factory=list)      # their run ids, oldest first
    reason: str = ""          # the latest failure's reason
    covered_by: str | None = None     # the baseline entry that already lists it

    @property
    def rate(self) -> float:
        return self.failures / self.judged if self.judged else 0.0

    def to_dict(self) -> dict:
        return {"case_id": self.case_id, "family": self.family, "rate": round(self.rate, 4),
                "failures": self.failures, "judged": self.judged, "transitions": self.transitions,
                "first_failure": self.first.brief(), "last_failure": self.last.brief(),
                "failed_runs": self.failed_runs, "reason": self.reason, "covered_by": self.covered_by}


@dataclass
class Flakes:
    window: int
    families: dict[str, int]               # family -> runs in its window
    flaky: list[Flaky]
    stale: list[dict]                      # baseline entries whose cases did not flake in the window

    def proposed(self) -> list[dict]:
        """Baseline `flakes:` entries for the flaky cases no entry lists yet, with their evidence."""
        return [{"case": f.case_id, "reason": f"failed {f.failures} of {f.judged} run(s) on {f.family} "
                 f"({100 * f.rate:.0f} %) between {f.first.started} and {f.last.started}: {f.reason}"[:400],
                 "link": "TODO: link the issue that tracks this flake"} for f in self.flaky if not f.covered_by]

    def to_dict(self) -> dict:
        return {"window": self.window, "families": self.families, "flaky": [f.to_dict() for f in self.flaky],
                "proposed": self.proposed(), "stale": self.stale}

    def lines(self) -> list[str]:
        runs = ", ".join(f"{fam} {n}" for fam, n in sorted(self.families.items()))
        out = [f"flake rates over the last {self.window} run(s) of each family ({runs}; with shards, over the runs "
               "that ran each case)"]
        if not self.flaky:
            out.append("  no case flaked")
        for f in self.flaky:
            out.append(f"  {100 * f.rate:5.1f} %  {f.case_id} on {f.family}: failed {f.failures} of {f.judged} run(s), "
                       f"{f.transitions} recovery(ies), first {f.first.started}, last {f.last.started}"
                       + (f" (baseline: {f.covered_by})" if f.covered_by else ""))
        proposed = self.proposed()
        if proposed:
            out.append("proposed baseline entries (review the reason, give a link):")
            out.append("flakes:")
            for e in proposed:
                out.append(f"  - {{case: {_yaml(e['case'])}, reason: {_yaml(e['reason'])}, link: {_yaml(e['link'])}}}")
        for s in self.stale:
            out.append(f"stale baseline entry {s['source']} ({s['case']}): {s['why']}")
        return out


def _yaml(text: str) -> str:
    """A YAML flow scalar: single-quoted, quotes doubled (case ids hold [ ] , : and *)."""
    return "'" + str(text).replace("'", "''") + "'"


def flakes(conn, family: str | None = None, window: int = 60, entries: list[tuple] = (),
           min_rate: float = 0.0, min_failures: int = 1, most: int | None = None) -> Flakes:
    """entries: the baseline's `flakes:` entries as (case text, source, matches(case_id) -> bool: the
    baseline's own matching, where only '*' is a wildcard), to mark cases already listed and to find
    the stale ones. min_failures: only cases that failed at least this often in the window (a
    report's section lists those failing twice or more; the command lists all). most: look only at
    the `most` cases of each family that failed most often (a report lists the first few)."""
    from sqlalchemy import func, select, text
    c = results.c
    flaky: list[Flaky] = []
    sizes: dict[str, int] = {}
    fams = [family] if family else runs_mod.families(conn)
    for fam in fams:
        fam_runs = runs_mod.window(runs_mod.of_family(conn, fam), window)
        if not fam_runs:
            continue
        sizes[fam] = len(fam_runs)
        order = {r.id: i for i, r in enumerate(fam_runs)}
        by_id = {r.id: r for r in fam_runs}
        ids = [r.id for r in fam_runs]
        q = (select(c.case).where(c.run.in_(ids), text(FAILING)).group_by(c.case)
             .having(func.count() >= min_failures).order_by(func.count().desc(), c.case))
        failing = set(conn.execute(q.limit(most) if most else q).scalars())
        if not failing:
            continue
        names = dict(conn.execute(select(cases.c.id, cases.c.case_id).where(cases.c.id.in_(sorted(failing)))).all())
        seq: dict[int, list] = {}
        for case, run, status, reason in conn.execute(select(c.case, c.run, c.status, c.reason)
                                                      .where(c.case.in_(sorted(failing)), c.run.in_(ids))).all():
            seq.setdefault(case, []).append((order[run], run, status, reason))
        for case, items in seq.items():
            items.sort()
            judged = [(i, run, s, why) for i, run, s, why in items if s in GOOD or s in BAD]
            marks = ["F" if s in BAD or s == FLAKE else "P" for _, _, s, _ in judged]
            fails = [x for x, m in zip(judged, marks) if m == "F"]
            recoveries = sum(1 for a, b in zip(marks, marks[1:]) if a == "F" and b == "P")
            isolated = recoveries == 1 and "FF" not in "".join(marks) and marks[0] == "P"
            if not (any(s == FLAKE for _, _, s, _ in judged) or recoveries >= 2 or isolated):
                continue
            f = Flaky(names[case], fam, len(fails), len(judged), recoveries, by_id[fails[0][1]], by_id[fails[-1][1]],
                      [by_id[x[1]].run_id for x in fails], fails[-1][3])
            if f.rate >= min_rate:
                flaky.append(f)
    for f in flaky:
        f.covered_by = next((src for _, src, matches in entries if matches(f.case_id)), None)
    stale = []
    if entries:
        judged_ids = _judged_cases(conn, fams, window)
        flaky_ids = {f.case_id for f in flaky}
        for pattern, src, matches in entries:
            matched = [cid for cid in judged_ids if matches(cid)]
            if not matched:
                stale.append({"case": pattern, "source": src, "why": "matches no case judged in the window"})
            elif not any(cid in flaky_ids for cid in matched):
                stale.append({"case": pattern, "source": src,
                              "why": f"{len(matched)} matching case(s) judged in the window, none flaked"})
    flaky.sort(key=lambda f: (-f.rate, f.family, f.case_id))
    return Flakes(window, sizes, flaky, stale)


def _judged_cases(conn, fams: list[str], window: int) -> set[str]:
    """Case ids judged (passed or failed) in each family's window."""
    from sqlalchemy import select
    c = results.c
    out: set[str] = set()
    for fam in fams:
        ids = [r.id for r in runs_mod.window(runs_mod.of_family(conn, fam), window)]
        if not ids:
            continue
        keys = set(conn.execute(select(c.case).where(c.run.in_(ids), c.status.in_(sorted(GOOD | BAD))).distinct())
                   .scalars())
        if keys:
            out.update(conn.execute(select(cases.c.case_id).where(cases.c.id.in_(sorted(keys)))).scalars())
    return out
