"""Which aclrtGetSocName() strings belong to a family, as fnmatch(3) patterns a C program can test.

The generated program checks that the SoC it runs on is of the family its expectation was
written for (a 910B status judged on a 950 would be a wrong verdict, not a finding). POSIX
fnmatch is in every libc, so the program needs no regex engine; the patterns say what
harness.core.families._SOC_PATTERNS says, and tests/test_c_repro.py holds the two together.
"""
from __future__ import annotations

from ..core.families import FAMILIES

PATTERNS: dict[str, tuple[str, ...]] = {
    "ascend910b": ("Ascend910B[1-4]*",),
    "ascend910_93": ("Ascend910_93*",),
    # the earlier name of the 950 family, still a prefix in opbase's kernel-directory map
    "ascend950": ("Ascend950*", "Ascend910_95*"),
    # "Ascend910B" with no digit is the old training series, not Atlas A2
    "ascend910": ("Ascend910", "Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA"),
    "ascend310p": ("Ascend310P[0-9]*",),
    "ascend310b": ("Ascend310B[0-9]*",),
}

assert set(PATTERNS) == set(FAMILIES), "every family needs its SoC name patterns"


def patterns(family: str) -> tuple[str, ...]:
    return PATTERNS[family]
