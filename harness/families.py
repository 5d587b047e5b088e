"""SoC families and the mapping from aclrtGetSocName() strings to families.

Facts from spec README "SoC families" and acl_abi.md section 5. The trap worth a
comment: "Ascend910B" with no digit is the old Atlas training series (ascend910),
while "Ascend910B1".."Ascend910B4" are Atlas A2 (ascend910b).
"""
from __future__ import annotations

import re

FAMILIES = ("ascend910b", "ascend910_93", "ascend950", "ascend910", "ascend310p", "ascend310b")

# Ordered: the first matching pattern wins, so the specific ones come first.
_SOC_PATTERNS = (
    (re.compile(r"^Ascend910B[1-4]"), "ascend910b"),
    (re.compile(r"^Ascend910_93\d*"), "ascend910_93"),
    (re.compile(r"^Ascend950(PR|DT)"), "ascend950"),
    (re.compile(r"^Ascend910(A|B|ProA|ProB|PremiumA)?$"), "ascend910"),
    (re.compile(r"^Ascend310P\d*"), "ascend310p"),
    (re.compile(r"^Ascend310B\d*"), "ascend310b"),
)


class UnknownSocError(ValueError):
    pass


def check_family(name: str, where: str = "--soc") -> str:
    if name not in FAMILIES:
        raise UnknownSocError(f"{where}: unknown SoC family {name!r}; valid: {', '.join(FAMILIES)}")
    return name


def family_of_soc_name(soc_name: str) -> str:
    """Map an aclrtGetSocName() string to its family, or raise UnknownSocError."""
    for pattern, family in _SOC_PATTERNS:
        if pattern.match(soc_name):
            return family
    raise UnknownSocError(f"SoC name {soc_name!r} does not belong to any known family ({', '.join(FAMILIES)})")
