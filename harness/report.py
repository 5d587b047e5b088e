"""Results on disk and the end-of-run summary.

Each finished case is appended to results.jsonl as soon as its report arrives
(in the xdist controller too), a live view. At the end results.jsonl is rewritten
from the journals (harness/execution/journal.py: one record per case, a resumed
run's earlier records included), then summary.json / summary.txt are written.
Records are counted by their `status` (harness/reporting/status.py).
"""
from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from .jsonsafe import jsonable
from .reporting.status import ORDER, Status


class Recorder:
    def __init__(self, directory: Path, banner: str, properties: dict):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.banner, self.properties = banner, properties
        self.results_path = self.dir / "results.jsonl"
        self.results_path.write_text("")
        self.records: list[dict] = []
        self.started = time.time()

    def add(self, record: dict) -> None:
        self.records.append(record)
        with self.results_path.open("a") as f:
            f.write(json.dumps(jsonable(record)) + "\n")

    @property
    def counts(self) -> dict[str, Counter]:
        counts: dict[str, Counter] = defaultdict(Counter)
        for r in self.records:
            counts[r.get("op") or "?"][r["status"]] += 1
        return counts

    @property
    def notes(self) -> list[tuple[str, str]]:
        return [(r["case_id"], r["note"]) for r in self.records if r.get("note")]

    def serious(self) -> list[dict]:
        """Cases that crashed, hung or never finished: said on the terminal one by one."""
        bad = (Status.CRASH.value, Status.TIMEOUT.value, Status.MISSING.value)
        return [r for r in self.records if r["status"] in bad]

    def table(self) -> list[str]:
        counts = self.counts
        cols = [s.value for s in ORDER if any(c[s.value] for c in counts.values())] or [Status.PASS.value]
        width = max([len(op) for op in counts] + [8])
        w = {c: max(7, len(c)) for c in cols}
        lines = [f"{'operator':<{width}}  " + "  ".join(f"{c:>{w[c]}}" for c in cols) + "    total"]
        total = Counter()
        for op in sorted(counts):
            c = counts[op]
            total.update(c)
            lines.append(f"{op:<{width}}  " + "  ".join(f"{c[k]:>{w[k]}}" for k in cols) + f"  {sum(c.values()):>7}")
        lines.append(f"{'all':<{width}}  " + "  ".join(f"{total[k]:>{w[k]}}" for k in cols) + f"  {sum(total.values()):>7}")
        return lines

    def finish(self, records: list[dict] | None = None) -> Path:
        """Write the summaries; `records` (one per case, from the journals) replace what arrived live."""
        if records is not None:
            self.records = list(records)
            tmp = self.results_path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(jsonable(r)) + "\n" for r in self.records))
            tmp.replace(self.results_path)
        failing = [r for r in self.records if Status(r["status"]).is_failure]
        summary = {"banner": self.banner, "properties": self.properties,
                   "duration_s": round(time.time() - self.started, 3),
                   "per_operator": {op: dict(c) for op, c in self.counts.items()},
                   "failures": [{"case_id": r["case_id"], "status": r["status"], "reason": r.get("reason", "")}
                                for r in failing],
                   "notes": [{"case_id": c, "note": n} for c, n in self.notes]}
        (self.dir / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
        text = [self.banner, *self.table()]
        if self.notes:
            text.append(f"{len(self.notes)} case(s) carry a note: a documented claim the code does not follow, or a deviation they target (summary.json)")
        (self.dir / "summary.txt").write_text("\n".join(text) + "\n")
        return self.dir
