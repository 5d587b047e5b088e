"""./run explore [OPS...] --soc F --budget 10m --seed S [--valid-only|--invalid-only]

Property-based search for library bugs that no case names: random configurations of each op
(valid ones judged by the golden, invalid ones by the op's phase-1 model), run through the suite's
case workers; every disagreement is shrunk to a minimal case and written as a case-file group,
a repro line and a C reproducer. Exit status: 0 no disagreement, 1 at least one, 4 a usage or
configuration error (one `ERROR:` line).
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..core import families
from ..core.argv import Parser, fail, number, plain_int, run as run_cli
from ..core.errors import HarnessConfigError
from ..core.paths import CASES_DIR, REPO_ROOT
from .run import KINDS, explore, parse_budget
from .session import prepare_environment


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="./run explore", description=__doc__.split("\n\n")[1])
    p.add_argument("ops", nargs="*", metavar="OP", help="operators (name or case-file stem; default: all)")
    p.add_argument("--soc", default="ascend910b", choices=families.FAMILIES, help="SoC family (default ascend910b)")
    p.add_argument("--budget", default="10m", help="time for the whole exploration, shared by the ops (e.g. 90s, "
                                                    "10m; default 10m); a disagreement still gets its shrinking time")
    # plain_int, not int: int() also reads `1_0`, `١` and 4,000-digit numbers (core/argv.py)
    p.add_argument("--seed", type=plain_int, default=0, help="Hypothesis seed (default 0)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--valid-only", action="store_true", help="valid configurations only")
    only.add_argument("--invalid-only", action="store_true", help="invalid calls (1-3 defects) only")
    p.add_argument("--report-dir", default=None, help="default: reports/explore-<family>")
    p.add_argument("--cases", default=str(CASES_DIR), help="case files (default: cases/)")
    p.add_argument("--case-timeout", type=number(above=0), default=None, metavar="S",
                   help="deadline of every case: a finite number of seconds > 0, as the suite's "
                        "(default 15 s + 20 s per million elements)")
    p.add_argument("--first", action="store_true", help="stop at the first disagreement (once it is shrunk)")
    p.add_argument("--no-coverage", action="store_true", help="do not measure the models' branch coverage")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        budget = parse_budget(args.budget)
    except ValueError as e:
        return fail(str(e))
    kinds = ("valid",) if args.valid_only else ("invalid",) if args.invalid_only else KINDS
    report_dir = Path(args.report_dir or REPO_ROOT / "reports" / f"explore-{args.soc}").resolve()
    try:
        prepare_environment(args.soc)
        doc = explore(args.ops, args.soc, budget, args.seed, kinds=kinds, report_dir=report_dir, root=REPO_ROOT,
                      cases_dir=Path(args.cases), argv=["./run", "explore", *(sys.argv[1:] if argv is None else argv)],
                      measure_coverage=not args.no_coverage, timeout_s=args.case_timeout, first=args.first,
                      log=_log)
    except (HarnessConfigError, ValueError) as e:
        return fail(str(e))
    _log(f"{doc['run']['banner']}")
    _log(f"{doc['run']['examples']} examples, {len(doc['findings'])} disagreement(s); "
         f"reports: {report_dir}/explore.md, explore.json")
    return 1 if doc["findings"] else 0


def _log(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    run_cli(main)
