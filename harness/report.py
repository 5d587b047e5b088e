"""Results on disk and the end-of-run summary.

Each finished case is appended to results.jsonl as soon as its report
arrives (in the xdist controller too), so a crash or a Ctrl-C later in the run
loses nothing already obtained. summary.json / summary.txt are written at the end.
"""
from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from .jsonsafe import jsonable


class Recorder:
    def __init__(self, directory: Path, banner: str, properties: dict):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.banner, self.properties = banner, properties
        self.results_path = self.dir / "results.jsonl"
        self.results_path.write_text("")
        self.counts: dict[str, Counter] = defaultdict(Counter)
        self.notes: list[tuple[str, str]] = []
        self.failures: list[tuple[str, str]] = []
        self.started = time.time()

    def add(self, record: dict) -> None:
        op = record.get("op", "?")
        outcome = record.get("outcome", "?")
        self.counts[op][outcome] += 1
        if record.get("note"):
            self.notes.append((record["case_id"], record["note"]))
        if outcome in ("failed", "error"):
            self.failures.append((record["case_id"], record.get("reason", "")))
        with self.results_path.open("a") as f:
            f.write(json.dumps(jsonable(record)) + "\n")

    def table(self) -> list[str]:
        cols = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
        width = max([len(op) for op in self.counts] + [8])
        lines = [f"{'operator':<{width}}  " + "  ".join(f"{c:>7}" for c in cols) + "    total"]
        total = Counter()
        for op in sorted(self.counts):
            c = self.counts[op]
            total.update(c)
            lines.append(f"{op:<{width}}  " + "  ".join(f"{c[k]:>7}" for k in cols) + f"  {sum(c.values()):>7}")
        lines.append(f"{'all':<{width}}  " + "  ".join(f"{total[k]:>7}" for k in cols) + f"  {sum(total.values()):>7}")
        return lines

    def finish(self) -> Path:
        summary = {"banner": self.banner, "properties": self.properties,
                   "duration_s": round(time.time() - self.started, 3),
                   "per_operator": {op: dict(c) for op, c in self.counts.items()},
                   "failures": [{"case_id": c, "reason": r} for c, r in self.failures],
                   "notes": [{"case_id": c, "note": n} for c, n in self.notes]}
        (self.dir / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
        text = [self.banner, *self.table()]
        if self.notes:
            text.append(f"{len(self.notes)} case(s) carry a note: a documented claim the code does not follow, or a deviation they target (summary.json)")
        (self.dir / "summary.txt").write_text("\n".join(text) + "\n")
        return self.dir
