"""Which aclrtGetSocName() strings belong to a family, as fnmatch(3) patterns a C program can test.

The generated program checks that the SoC it runs on is of the family its expectation was
written for (a 910B status judged on a 950 would be a wrong verdict, not a finding). POSIX
fnmatch is in every libc, so the program needs no regex engine; the patterns are the platform
file's own (platforms/platform.yaml), the ones harness.core.families maps names with.
"""
from __future__ import annotations

from ..core.families import BY_NAME


def patterns(family: str) -> tuple[str, ...]:
    return BY_NAME[family].soc_patterns
