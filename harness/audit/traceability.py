"""Traceability: which case covers which phase-1 check, per SoC family.

Every case file lists the checks of its operator's spec section B (`checks:`). An invalid case
names the check it triggers (`check:`) and its expected status per family. A check is *covered*
on a family when at least one invalid case names it, applies to that family and expects there
exactly the check's status. Checks marked `untestable` are listed with their reason instead.

    python -m harness.audit.traceability [--out FILE] [--cases DIR] [--family F ...]

prints (or writes) the markdown table; `gaps()` is what tests/test_traceability.py asserts on.
"""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..core.argv import Parser
from ..core.families import FAMILIES
from ..operators import load_case_file
from ..model import Case, Check, OpSpec
from ..core.paths import CASES_DIR


# The families every testable check must be covered on (where the check applies): all of them.
REQUIRED_FAMILIES = FAMILIES


@dataclass(frozen=True)
class Gap:
    op: str
    check: str
    family: str
    status: int | None
    what: str

    def __str__(self) -> str:
        return (f"{self.op} {self.check} on {self.family}: no invalid case expects status "
                f"{self.status} there ({self.what})")


Loaded = list[tuple[OpSpec, list[Case]]]


def load_all(cases_dir: Path | str = CASES_DIR) -> Loaded:
    """Every cases/*.yaml, loaded with the harness's vocabulary (raises CaseFileError)."""
    return [load_case_file(p) for p in sorted(Path(cases_dir).glob("*.yaml"))]


def cases_for(check: Check, cases: list[Case], family: str) -> list[Case]:
    """Invalid cases that name `check` and apply to `family` (any expected status)."""
    return [c for c in cases if c.kind == "invalid" and c.check == check.id and family in c.families]


def covering(check: Check, cases: list[Case], family: str) -> list[Case]:
    """Invalid cases that trigger `check` on `family` with exactly the check's status."""
    return [c for c in cases_for(check, cases, family) if c.expected_status(family) == check.status]


def table(op: OpSpec, cases: list[Case], families=None) -> dict[str, dict[str, list[Case]]]:
    """check id -> family -> invalid cases naming the check there (families the check applies to)."""
    out = {}
    for chk in op.checks:
        fams = [f for f in chk.families if families is None or f in families]
        out[chk.id] = {f: cases_for(chk, cases, f) for f in fams}
    return out


def gaps(loaded: Loaded, families=REQUIRED_FAMILIES) -> list[Gap]:
    """Testable checks with no covering case on a family (of `families`) the check applies to."""
    found = []
    for op, cases in loaded:
        for chk in op.checks:
            if chk.untestable:
                continue
            for fam in chk.families:
                if families is not None and fam not in families:
                    continue
                if not covering(chk, cases, fam):
                    found.append(Gap(op.name, chk.id, fam, chk.status, chk.what))
    return found


def untestable(loaded: Loaded) -> list[tuple[str, Check]]:
    return [(op.name, chk) for op, cases in loaded for chk in op.checks if chk.untestable]


def counts(loaded: Loaded, tier: str | None = "default") -> dict[str, dict[str, Counter]]:
    """op -> family -> Counter(valid=..., invalid=...) for cases of `tier` (None: every tier)."""
    out = {}
    for op, cases in loaded:
        per = {}
        for c in cases:
            if tier is not None and c.tier != tier:
                continue
            for f in c.families:
                per.setdefault(f, Counter())[c.kind] += 1
        out[op.name] = per
    return out


# ------------------------------------------------------------------ markdown

def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _status(v) -> str:
    return "-" if v is None else str(v)


def render(loaded: Loaded, families=None) -> str:
    """The traceability report as markdown: counts, check -> cases per family, gaps, untestable."""
    fams = [f for f in FAMILIES if families is None or f in families]
    lines = ["# Phase-1 check traceability", "",
             "A case covers a check on a family when it names the check and expects the check's status "
             "there; other cases naming the check are shown with their expected status (e.g. `0`: the "
             "family accepts that input).", ""]

    lines += ["## Case counts (default tier; valid / invalid)", "",
              "| operator | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for name, per in counts(loaded).items():
        row = [f"{per.get(f, Counter())['valid']} / {per.get(f, Counter())['invalid']}" for f in fams]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    lines.append("")

    for op, cases in loaded:
        lines += [f"## aclnn{op.name}", "", "| check | what | status | family | cases |", "|---|---|---|---|---|"]
        per_check = table(op, cases, fams)
        for chk in op.checks:
            if chk.untestable:
                lines.append(f"| {chk.id} | {_cell(chk.what)} | {_status(chk.status)} | all | "
                             f"*untestable*: {_cell(chk.untestable)} |")
                continue
            for fam, found in per_check[chk.id].items():
                items = []
                for c in found:
                    st = c.expected_status(fam)
                    label = f"`{c.name}`"
                    items.append(label if st == chk.status else f"{label} (expects {st})")
                covered = any(c.expected_status(fam) == chk.status for c in found)
                text = ", ".join(items) if items else ""
                if not covered:
                    text = "**NO CASE**" + (f" ({text})" if text else "")
                lines.append(f"| {chk.id} | {_cell(chk.what)} | {_status(chk.status)} | {fam} | {text} |")
        lines.append("")

    missing = gaps(loaded, families=fams)
    lines += ["## Checks without a covering case", ""]
    lines += [f"- {g}" for g in missing] or ["- none"]
    lines += ["", "## Untestable checks", ""]
    lines += [f"- {name} {chk.id} ({chk.what}, status {_status(chk.status)}): {chk.untestable}"
              for name, chk in untestable(loaded)] or ["- none"]
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = Parser(prog="python -m harness.audit.traceability",
                                 description="Check -> case traceability of the case files, as markdown.")
    ap.add_argument("--out", help="write the markdown here instead of stdout")
    ap.add_argument("--cases", default=str(CASES_DIR), help="directory of case files (default: cases/)")
    ap.add_argument("--family", action="append", choices=FAMILIES,
                    help="only these SoC families (repeatable; default: all)")
    args = ap.parse_args(argv)
    text = render(load_all(args.cases), args.family)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
