"""Coverage of the case files: what the default tier exercises, and where it falls short.

For every operator, SoC family and data dtype the family accepts (a valid case expects status 0
there), the default tier must hold a case in every memory layout, in every value class, and a
case whose planes span several kernel tiles while their count exceeds the AI cores of a chip
(tail-tile and last-core bugs). Together with the phase-1 check traceability of every family
(harness/audit/traceability.py) these are the gaps `tests/test_coverage.py` fails on; the report and
its exit status also take the size-limit (harness/audit/size_limits.py) and per-axis
(harness/audit/per_axis.py) gaps, which tests/test_size_limits.py and tests/test_per_axis.py fail on, and
the valid cases that depend on a format label the real code refuses (harness/audit/labels.py).

    python -m harness.audit.coverage [--out FILE] [--cases DIR]

prints the counts (op x family x dtype x layout x value class) and the traceability table.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import labels, order_free, per_axis, size_limits, traceability
from ..core.argv import run as run_cli
from ..core.dtypes import DType
from ..core.errors import CaseFileError
from ..core.families import FAMILIES
from ..model import LAYOUTS, Case
from .requirements import AI_CORES, FLOAT_CLASSES, INT_CLASSES, TILE_ELEMENTS

@dataclass(frozen=True)
class Gap:
    op: str
    family: str
    dtype: DType
    what: str

    def __str__(self) -> str:
        return f"{self.op} on {self.family}, {self.dtype}: no default-tier case {self.what}"


def planes(case: Case) -> tuple[int, int]:
    """(number of planes, elements per plane) of the case's self shape."""
    k = case.op.spatial_rank
    plane = math.prod(case.shape[-k:])
    return (math.prod(case.shape[:-k]) if plane else 0), plane


def spans_tiles_and_cores(case: Case) -> bool:
    """Planes over one tile with a partial last tile (odd width), more of them than AI cores
    and a partial last round: where tail-tile and last-core bugs show."""
    count, plane = planes(case)
    return (count > AI_CORES and count % AI_CORES != 0 and plane > TILE_ELEMENTS
            and plane % TILE_ELEMENTS != 0 and case.shape[-1] % 2 == 1)


def _layouts(case: Case) -> set[str]:
    return set(case.layouts.values())


def _is_int(dtype: DType) -> bool:
    return dtype.kind in ("int", "uint", "bool")


def runnable(cases: list[Case], family: str) -> list[Case]:
    """Default-tier valid cases that expect success on `family`."""
    return [c for c in cases if c.kind == "valid" and c.tier == "default" and c.status.get(family) == 0]


def gaps(loaded: traceability.Loaded) -> list[Gap]:
    found = []
    for op, cases in loaded:
        for fam in op.families:
            run = runnable(cases, fam)
            for dt in sorted({c.dtype for c in run}):
                mine = [c for c in run if c.dtype == dt]
                found += _dtype_gaps(op, fam, dt, mine)
    return found


def _dtype_gaps(spec, fam: str, dt: DType, cases: list[Case]) -> list[Gap]:
    op, out = spec.name, []
    seen_layouts = set().union(*(_layouts(c) for c in cases))
    for lay in LAYOUTS:
        if lay not in seen_layouts:
            out.append(Gap(op, fam, dt, f"with a tensor in {lay} memory"))
    if not any(spans_tiles_and_cores(c) for c in cases):
        out.append(Gap(op, fam, dt, f"with more than {AI_CORES} planes (not a multiple of {AI_CORES}) of more "
                                    f"than {TILE_ELEMENTS} elements (not a multiple of it, odd width)"))
    if not spec.exempt(fam, dt, "values"):
        names = {c.values.name for c in cases}
        for cls, dists in (INT_CLASSES if _is_int(dt) else FLOAT_CLASSES).items():
            if not names & set(dists):
                out.append(Gap(op, fam, dt, f"in value class '{cls}' ({' or '.join(dists)})"))
    return out


def counts(loaded: traceability.Loaded) -> Counter:
    """(op, family, dtype, layout, value class) -> default-tier valid cases expecting success."""
    out = Counter()
    for op, cases in loaded:
        for fam in op.families:
            for c in runnable(cases, fam):
                out[(op.name, fam, c.dtype, "+".join(sorted(_layouts(c))), c.values.name)] += 1
    return out


def found(loaded: traceability.Loaded) -> dict[str, list]:
    """Every gate's gaps, computed once for the report and the exit status."""
    return {"coverage": gaps(loaded), "traceability": traceability.gaps(loaded, families=FAMILIES),
            "limits": size_limits.gaps(loaded) + per_axis.gaps(loaded), "order": order_free.gaps(loaded),
            "labels": labels.gaps(loaded)}


def render(loaded: traceability.Loaded, gaps_found: dict[str, list]) -> str:
    lines = ["# Coverage of the default tier", "",
             "Valid cases expecting success, by operator, family, dtype, memory layouts (of any tensor) "
             "and value distribution.", "",
             "| operator | family | dtype | layouts | values | cases |", "|---|---|---|---|---|---|"]
    for (op, fam, dt, lay, val), n in sorted(counts(loaded).items()):
        lines.append(f"| {op} | {fam} | {dt} | {lay} | {val} | {n} |")
    lines += ["", "## Coverage gaps", ""] + ([f"- {g}" for g in gaps_found["coverage"]] or ["- none"])
    lines += ["", "## Exemptions", ""] + [f"- {op.name} {e.family} {e.dtype} {e.requirement}: {e.why}"
                                          for op, _ in loaded for e in op.coverage_exemptions]
    lines += ["", traceability.render(loaded, FAMILIES)]
    lines += ["", "## Size limits (section B): real-sized cases over and at each limit", "",
              size_limits.render(loaded)]
    lines += ["", "## Each axis on its own: cases offending on one axis only", "", per_axis.render(loaded)]
    lines += ["", "## Size-limit and per-axis gaps", ""] + ([f"- {g}" for g in gaps_found["limits"]] or ["- none"])
    lines += ["", "## Results that depend on the order of the additions (order_free.py)", ""] + \
        ([f"- {g}" for g in gaps_found["order"]] or ["- none"])
    lines += ["", "## Labels as callers set them (labels.py)", "", labels.render(gaps_found["labels"])]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.audit.coverage",
                                 description="Coverage counts, gaps and the traceability table of every family.")
    ap.add_argument("--out", help="write the markdown here instead of stdout")
    ap.add_argument("--cases", default=str(traceability.CASES_DIR), help="directory of case files (default: cases/)")
    ap.add_argument("--scaffold", metavar="CASE_FILE",
                    help="a new operator's case file holding only its header: write the groups the gates demand "
                         "below it (harness/audit/scaffold.py), TODOs where a person must decide")
    ap.add_argument("--dtypes", default="float32,float16", help="with --scaffold: the data dtypes the op accepts")
    ap.add_argument("--index-dtypes", default="", help="with --scaffold: the index dtypes (ops with indices)")
    ap.add_argument("--shape", default="", help="with --scaffold: a valid call's shape, e.g. 2,3,9,9")
    ap.add_argument("--attrs", default="", help="with --scaffold: a valid call's attributes (YAML/JSON mapping)")
    args = ap.parse_args(argv)
    if args.scaffold:
        return _scaffold(args)
    try:
        loaded = traceability.load_all(args.cases)
    except CaseFileError as e:          # one line naming the file, group and field, as a run says it
        print(f"error: {e}", file=sys.stderr)
        return 2
    gaps_found = found(loaded)
    text = render(loaded, gaps_found)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    missing = [g for listed in gaps_found.values() for g in listed]
    if missing:
        print(f"{len(missing)} coverage gap(s); see the report", file=sys.stderr)
    return 1 if missing else 0


def _scaffold(args) -> int:
    from . import scaffold
    try:
        attrs = yaml.safe_load(args.attrs) if args.attrs else None
        if attrs is not None and not isinstance(attrs, dict):
            raise ValueError(f"--attrs: a mapping of attribute names to values, got {args.attrs!r}")
        _, prepared = scaffold.scaffold_file(Path(args.scaffold), [d for d in args.dtypes.split(",") if d],
                                             [d for d in args.index_dtypes.split(",") if d] or None,
                                             [int(d) for d in args.shape.split(",") if d] or None, attrs)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    todo = Path(args.scaffold).read_text(encoding="utf-8").count("# TODO")
    print(f"{args.scaffold}: groups written ({todo} TODO); `python -m harness.audit.coverage --cases "
          f"{Path(args.scaffold).parent}` lists what is still missing")
    if not prepared:
        print("note: the op's golden could not prepare the base call (is golden/<op>.py written, and are "
              "--shape and --attrs a valid call?): shape changes per axis are TODOs; scaffold again once it can")
    return 0


if __name__ == "__main__":
    run_cli(main)
