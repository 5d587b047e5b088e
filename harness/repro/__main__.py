"""python -m harness.repro c CASE_ID -o DIR [--soc FAMILY] [--cases DIR]

Writes a standalone C reproducer of one case into DIR (repro.c, the input and golden bytes,
README.txt) and prints the one-line build command.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..core.argv import Parser, fail, run as run_cli
from ..core.errors import CaseFileError
from ..core.families import FAMILIES
from ..core.paths import CASES_DIR
from . import lookup, plan as plan_mod
from .commands import BUILD_COMMAND, RUN_COMMAND
from .writer import write_plan


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m harness.repro", description=__doc__.split("\n\n")[1])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("c", help="a standalone C program for one case")
    c.add_argument("case_id", metavar="CASE_ID", help="e.g. 'AvgPool2dBackward.windows[float32-2x3x9x9-...]', "
                                                     "or its pytest node id 'cases/avg_pool2d_backward.yaml::windows[...]'")
    c.add_argument("-o", "--out", required=True, metavar="DIR", help="directory to write (created if missing)")
    c.add_argument("--soc", choices=FAMILIES, metavar="FAMILY",
                   help="the family whose expected status the program holds the library to "
                        "(default: ascend910b where the case has one, else its first family)")
    c.add_argument("--cases", default=str(CASES_DIR), metavar="DIR", help="case files (default: cases/)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():      # checked first: no case is prepared for a directory never written
        return fail(f"-o {out}: exists and is not a directory (the reproducer is a directory of files)")
    try:
        case = lookup.find(args.case_id, args.cases)
        family = args.soc or plan_mod.default_family(case)
    except (lookup.UnknownCase, CaseFileError, ValueError) as e:
        return fail(str(e))
    try:
        made_args, golden = lookup.materials(case, family)
    except Exception as e:                      # noqa: BLE001 - the suite FAILs such a case with this reason
        # a golden's own checks (ValueError), or torch lacking a kernel for the dtype (NotImplementedError)
        return fail(f"{case.id}: its inputs and golden cannot be made on {family}: {type(e).__name__}: {e}")
    try:
        out = write_plan(plan_mod.make(case, made_args, golden, family), out)
    except ValueError as e:
        return fail(str(e))
    except OSError as e:                        # a directory that cannot be made or written
        return fail(f"-o {args.out}: cannot write the reproducer: {e.strerror or e}")
    print(f"wrote {out}/ (repro.c, data files, README.txt) for {case.id} on {family}")
    print(f"build: cd {out} && {BUILD_COMMAND}")
    print(f"run:   {RUN_COMMAND}")
    return 0


if __name__ == "__main__":
    run_cli(main)
