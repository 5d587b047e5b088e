"""Pass rate per family over time: each run's passed / judged, read from the runs table alone (the
counts are written when a run is ingested: migration 0002), so a year of nights is 2,190 rows, not
8.8 M. `by="day"` adds up a day's runs (the shards of a night) per family."""
from __future__ import annotations

from dataclasses import dataclass

from . import runs as runs_mod


@dataclass
class RatePoint:
    family: str
    label: str            # the run's start, or the day
    runs: int
    total: int
    passed: int
    failed: int
    run: str | None = None

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def line(self) -> str:
        rate = f"{100 * self.rate:6.2f} %" if self.rate is not None else "     - "
        more = f" ({self.runs} runs)" if self.runs > 1 else f" (run {self.run})" if self.run else ""
        return f"  {self.label}  {rate}  {self.passed}/{self.total} passed, {self.failed} failed{more}"

    def to_dict(self) -> dict:
        return {"family": self.family, "when": self.label, "runs": self.runs, "total": self.total,
                "passed": self.passed, "failed": self.failed, "rate": self.rate, "run": self.run}


def pass_rates(conn, family: str | None = None, last: int | None = None, by: str = "run") -> dict[str, list[RatePoint]]:
    out: dict[str, list[RatePoint]] = {}
    for r in runs_mod.of_family(conn, family):
        points = out.setdefault(r.family, [])
        if by == "day":
            day = r.started[:10]
            if points and points[-1].label == day:
                p = points[-1]
                p.runs, p.total, p.passed, p.failed = p.runs + 1, p.total + r.total, p.passed + r.passed, p.failed + r.failed
                continue
            points.append(RatePoint(r.family, day, 1, r.total, r.passed, r.failed))
        else:
            points.append(RatePoint(r.family, r.started, 1, r.total, r.passed, r.failed, r.run_id))
    return {f: (ps[-last:] if last else ps) for f, ps in sorted(out.items())}


def lines(rates: dict[str, list[RatePoint]]) -> list[str]:
    return [line for fam, points in rates.items()
            for line in (f"{fam or 'any'}: {len(points)} point(s)", *(p.line() for p in points))]
