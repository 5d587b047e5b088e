"""How far a search reached: the model checks that fired, the dtypes, layouts, formats, shapes and
attribute ranges its examples had, and the branches of the phase-1 models it never took.

The models (golden/_models/*.py) are pure Python that runs in the exploring process, so the
`coverage` package measures them while the search runs (branch coverage). Each model module ends
with its own examples (the corner cases its tests pin); those lines are not rules and are left out
of the report: a model module is measured up to the first section comment after its `MODEL`.
"""
from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import golden._models as models_pkg

MODELS_DIR = Path(models_pkg.__file__).resolve().parent


class Reach:
    def __init__(self):
        self.kinds: Counter = Counter()             # (op, valid|invalid|skipped) -> examples
        self.skips: Counter = Counter()             # (op, why) -> examples skipped
        self.decided: Counter = Counter()           # (op, check or "passed") -> examples the model decided there
        self.evaluated: dict[str, set] = defaultdict(set)    # op -> every rule id evaluated at least once
        self.dtypes: Counter = Counter()            # (op, dtype, index dtype)
        self.layouts: Counter = Counter()           # (op, layout)
        self.formats: Counter = Counter()           # (op, format)
        self.values: Counter = Counter()            # (op, value class)
        self.defects: Counter = Counter()           # (op, defect kind)
        self.ndefects: Counter = Counter()          # (op, number of defects)
        self.statuses: Counter = Counter()          # (op, record status)
        self.attrs: dict = defaultdict(lambda: [None, None])   # (op, attr) -> [min, max] element seen
        self.flags: dict = defaultdict(set)         # (op, attr) -> bool values seen
        self.elements: dict = defaultdict(lambda: [None, None])  # op -> [min, max] elements of self's shape
        self.widths: dict = defaultdict(set)        # op -> last dimensions seen

    def add(self, plan) -> None:
        ex, op = plan.example, plan.example.op
        if plan.case is None:
            self.kinds[(op, "skipped")] += 1
            self.skips[(op, plan.skip.split(":")[0][:80])] += 1
        else:
            self.kinds[(op, plan.case.kind)] += 1
        if plan.answer is not None:
            self.decided[(op, plan.answer.check or "passed")] += 1
            self.evaluated[op].update(plan.fired)
        env = ex.config.envelope
        self.dtypes[(op, env.dtype, env.index_dtype)] += 1
        self.values[(op, env.values.name)] += 1
        for _, lay in env.layouts:
            self.layouts[(op, lay)] += 1
        for _, fmt in env.formats:
            self.formats[(op, fmt)] += 1
        self.ndefects[(op, len(ex.defects))] += 1
        for d in ex.defects:
            self.defects[(op, d.kind)] += 1
        n = 1
        for d in ex.config.shape:
            n *= d
        self._range(self.elements[op], n)
        if ex.config.shape:
            self.widths[op].add(ex.config.shape[-1])
        for name, value in ex.config.attrs:
            if isinstance(value, bool):
                self.flags[(op, name)].add(value)
            elif isinstance(value, (int, float)):
                self._range(self.attrs[(op, name)], value)
            elif isinstance(value, tuple):
                for v in value:
                    self._range(self.attrs[(op, name)], v)

    @staticmethod
    def _range(slot: list, v) -> None:
        slot[0] = v if slot[0] is None else min(slot[0], v)
        slot[1] = v if slot[1] is None else max(slot[1], v)

    def ran(self, plan, record: dict) -> None:
        self.statuses[(plan.example.op, record.get("status"))] += 1

    def summary(self, facts_by_op: dict) -> dict:
        """Per op: what the examples reached, and the model rules never decided or never evaluated."""
        out = {}
        for op, facts in facts_by_op.items():
            rules = [r.id for r in facts.model.rules]
            decided = {c: n for (o, c), n in self.decided.items() if o == op}
            out[op] = {
                "examples": {k: n for (o, k), n in self.kinds.items() if o == op},
                "skipped": {k: n for (o, k), n in self.skips.items() if o == op},
                "statuses": {k: n for (o, k), n in self.statuses.items() if o == op},
                "checks_decided": decided,
                "checks_never_decided": [r for r in rules if r not in decided],
                "checks_never_evaluated": [r for r in rules if r not in self.evaluated.get(op, set())],
                "dtypes": {f"{d}" + (f"/{i}" if i else ""): n for (o, d, i), n in self.dtypes.items() if o == op},
                "layouts": {k: n for (o, k), n in self.layouts.items() if o == op},
                "formats": {k: n for (o, k), n in self.formats.items() if o == op},
                "values": {k: n for (o, k), n in self.values.items() if o == op},
                "defects": {k: n for (o, k), n in self.defects.items() if o == op},
                "defect_counts": {str(k): n for (o, k), n in self.ndefects.items() if o == op},
                "attr_ranges": {a: list(r) for (o, a), r in self.attrs.items() if o == op},
                "flags": {a: sorted(v) for (o, a), v in self.flags.items() if o == op},
                "elements": list(self.elements[op]),
                "widths": _spans(sorted(self.widths[op])),
            }
        return out


def _spans(values: list[int]) -> str:
    """3,4,5,9 -> '3-5,9' (the last dimensions reached)."""
    out, start, prev = [], None, None
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = v
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(out)


# ------------------------------------------------------------------ branch coverage of the models

def _rules_end(path: Path) -> int:
    """The last line of a model module's rules: before the first section comment after `MODEL =`, or
    before the section its own examples' helpers start (_checks.py)."""
    lines = path.read_text().splitlines()
    after_model = False
    for n, line in enumerate(lines, 1):
        if line.startswith("MODEL"):
            after_model = True
        if line.startswith("# ---") and (after_model or "examples" in line):
            return n - 1
    return len(lines)


class ModelCoverage:
    """Line and branch coverage of golden/_models/*.py while it is started."""

    def __init__(self):
        import coverage
        self.cov = coverage.Coverage(data_file=None, branch=True, include=[str(MODELS_DIR / "*.py")])

    def start(self) -> None:
        self.cov.start()

    def stop(self) -> None:
        self.cov.stop()

    def report(self, models=None) -> dict:
        """{file: {lines, lines_missed, branches, branches_missed, missing_branches, missing_lines}} of the
        model modules of `models` (Phase1Model objects; None: every module) and the shared _checks.py."""
        wanted = None if models is None else {"_checks.py"} | {
            Path(m.__file__).name for m in list(sys.modules.values())
            if getattr(m, "__name__", "").startswith(models_pkg.__name__ + ".")
            and any(getattr(m, "MODEL", None) is model for model in models)}
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "cov.json"
            self.cov.json_report(outfile=str(out))
            data = json.loads(out.read_text())
        report = {}
        for name, info in sorted(data.get("files", {}).items()):
            path = Path(name)
            if not path.is_absolute():
                path = Path.cwd() / path
            if wanted is not None and path.name not in wanted:
                continue
            end = _rules_end(path)
            executed = set(info.get("executed_lines", []))
            missing = [n for n in info.get("missing_lines", []) if n <= end]
            statements = [n for n in executed | set(info.get("missing_lines", [])) if n <= end]
            arcs = [tuple(a) for a in info.get("executed_branches", []) if a[0] <= end]
            missed = [tuple(a) for a in info.get("missing_branches", []) if a[0] <= end]
            report[path.name] = {"lines": len(statements), "lines_missed": len(missing),
                                 "branches": len(arcs) + len(missed), "branches_missed": len(missed),
                                 "missing_branches": [_describe(path, a) for a in missed],
                                 "missing_lines": missing}
        return report


def _describe(path: Path, arc: tuple[int, int]) -> str:
    """'line 57 -> 58: if t.rank not in RANKS:' (a negative target is the function's exit)."""
    src = path.read_text().splitlines()
    start, end = arc
    text = src[start - 1].strip() if 0 < start <= len(src) else ""
    target = "exit" if end < 0 else str(end)
    return f"line {start} -> {target}: {text[:90]}"
