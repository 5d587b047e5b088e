"""The fixed C of a reproducer: the files of harness/repro/csrc/ (package data), read here and copied
into repro.c in a fixed order, so a vendor still builds one file.

csrc/repro.h         headers, the meta-API declarations, the Tensor record
csrc/support.c       files, device buffers, the workspace, descriptors
csrc/session.c       the session, the SoC check, the verdict
csrc/elements.c      reading elements by aclDataType; the guard bytes outside an output's view
csrc/digest.c        SHA-256 of an output view (harness/judge/digest.py)
csrc/compare.c       harness/judge/compare.py's shared part          } only where the case
csrc/standards/*.c   one precision standard each (judge_standard)    } compares numerics
csrc/report.c        one output against its golden, the summary line }

What differs from build to build is #defined before the included text (`defines`), never
formatted into it; what differs from case to case is c_decls.py's and c_program.py's.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from ..acl.objects import MIN_ALLOC
from ..backends.aclnn import WORKSPACE_FILL, WORKSPACE_GUARD

CSRC = Path(__file__).with_name("csrc")
HEAD = "repro.h"
SUPPORT = ("support.c", "session.c", "elements.c", "digest.c")
# one C function serves both single benchmark variants (only their thresholds differ)
ALIASES = {"single_bm_high_precision": "single_bm", "single_bm_high_performance": "single_bm"}


@functools.lru_cache(maxsize=None)
def text(name: str) -> str:
    """One file of csrc/, by its path there."""
    return (CSRC / name).read_text()


def standards() -> tuple[str, ...]:
    """The standards with a C comparator: a file in csrc/standards/, and the aliases of one."""
    files = tuple(sorted(p.stem for p in (CSRC / "standards").glob("*.c")))
    return tuple(sorted(files + tuple(a for a, s in ALIASES.items() if s in files)))


def standard_file(standard: str) -> str:
    name = ALIASES.get(standard, standard)
    if not re.fullmatch(r"[a-z0-9_]+", name) or not (CSRC / "standards" / f"{name}.c").is_file():
        raise ValueError(f"no C comparator for precision standard {standard!r} (have: {', '.join(standards())})")
    return f"standards/{name}.c"


def headline(standard: str) -> tuple[str, ...]:
    """The metrics a PASS summary shows (compare.py's `headline`): the HEADLINE of the standard's file."""
    m = re.search(r"HEADLINE\[\]\s*=\s*\{([^}]*)\}", text(standard_file(standard)))
    if m is None:
        raise ValueError(f"csrc/{standard_file(standard)} defines no HEADLINE")
    return tuple(re.findall(r'"([^"]*)"', m.group(1)))


def files(standard: str | None) -> tuple[str, ...]:
    """The files after the head and the #defines, in order; the comparison only with a standard."""
    compare = ("compare.c", standard_file(standard), "report.c") if standard is not None else ()
    return SUPPORT + compare


def defines(max_rank: int) -> str:
    """The build's values, before the support code: the largest rank of the case's tensors and the
    harness's own device sizes (harness/acl/objects.py, harness/backends/aclnn.py)."""
    return (f"#define MAX_RANK {max_rank}\n"
            f"#define REPRO_MIN_ALLOC {MIN_ALLOC}\n"
            f"#define REPRO_WORKSPACE_FILL 0x{WORKSPACE_FILL:02X}\n"
            f"#define REPRO_WORKSPACE_GUARD {WORKSPACE_GUARD}\n")


def included(name: str) -> str:
    """One file as repro.c carries it: a line naming where it comes from, then its text."""
    return f"\n/* ================================================ harness/repro/csrc/{name} */\n" + text(name)


def fixed(max_rank: int, standard: str | None) -> str:
    """All the fixed C of a program, its build's #defines included."""
    return (included(HEAD) + "\n" + defines(max_rank) + "".join(included(f) for f in files(standard)))
