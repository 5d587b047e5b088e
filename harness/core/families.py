"""SoC families and the mapping from aclrtGetSocName() strings to families.

Facts from spec README "SoC families" and acl_abi.md sections 5.1 and 1.8: every
SoC_version of CANN's platform configs maps to its Short_SoC_version family.
The traps worth a comment: "Ascend910B" with no digit is the old Atlas training
series (ascend910), while "Ascend910B1".."Ascend910B4" are Atlas A2 (ascend910b);
"Ascend910_95…" is the earlier name of the 950 family (still a prefix in opbase's
kernel-directory map), not an A3 part like "Ascend910_93…".
"""
from __future__ import annotations

import re

# Families the case files target.
FAMILIES = ("ascend910b", "ascend910_93", "ascend950", "ascend910", "ascend310p", "ascend310b")
# Families of the platform configs that none of the five ops supports: a run on one starts and
# selects no case, rather than refusing to start.
OTHER_FAMILIES = ("ascend031", "ascend035", "ascend350")

# Ordered: the first matching pattern wins, so the specific ones come first.
# (pattern, family, the prefix as a person reads it)
_SOC_PATTERNS = (
    (re.compile(r"^Ascend910B[1-4]"), "ascend910b", "Ascend910B<1-4>…"),
    (re.compile(r"^Ascend910_93"), "ascend910_93", "Ascend910_93…"),
    (re.compile(r"^Ascend910_95"), "ascend950", "Ascend910_95…"),
    (re.compile(r"^Ascend950"), "ascend950", "Ascend950…"),
    (re.compile(r"^Ascend910(A|B|ProA|ProB|PremiumA)?$"), "ascend910", "Ascend910[A|B|ProA|ProB|PremiumA]"),
    (re.compile(r"^Ascend310P\d"), "ascend310p", "Ascend310P<digit>…"),
    (re.compile(r"^Ascend310B\d"), "ascend310b", "Ascend310B<digit>…"),
    (re.compile(r"^Ascend031$"), "ascend031", "Ascend031"),
    (re.compile(r"^Ascend035[AB]?$"), "ascend035", "Ascend035[A|B]"),
    (re.compile(r"^Ascend350_"), "ascend350", "Ascend350_…"),
)
KNOWN_PREFIXES = tuple(text for _, _, text in _SOC_PATTERNS)


class UnknownSocError(ValueError):
    pass


def check_family(name: str, where: str = "--soc") -> str:
    if name not in FAMILIES:
        raise UnknownSocError(f"{where}: unknown SoC family {name!r}; valid: {', '.join(FAMILIES)}")
    return name


def family_of_soc_name(soc_name: str) -> str:
    """Map an aclrtGetSocName() string to its family, or raise UnknownSocError (one line)."""
    for pattern, family, _ in _SOC_PATTERNS:
        if pattern.match(soc_name):
            return family
    raise UnknownSocError(f"SoC name {soc_name!r} matches no known SoC version; known prefixes: "
                          f"{', '.join(KNOWN_PREFIXES)}")
