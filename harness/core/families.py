"""SoC families, by name and by aclrtGetSocName() string: the families of platforms/platform.yaml.

The platform file holds each family's SoC-name patterns (and says why the traps are traps:
"Ascend910B" with no digit is the old training series, "Ascend910_95..." the earlier name of
the 950 family); this module answers the two questions a run asks of them.
"""
from __future__ import annotations

from platforms import FAMILIES as _RECORDS, FAMILY as BY_NAME, OTHER_FAMILIES as _OTHERS, Family  # noqa: F401

# Families the case files target.
FAMILIES = tuple(f.name for f in _RECORDS)
# Families of the platform configs that none of the ops supports: a run on one starts and
# selects no case, rather than refusing to start.
OTHER_FAMILIES = tuple(f.name for f in _OTHERS)
KNOWN_PREFIXES = tuple(p for f in _RECORDS + _OTHERS for p in f.soc_patterns)


class UnknownSocError(ValueError):
    pass


def check_family(name: str, where: str = "--soc") -> str:
    if name not in FAMILIES:
        raise UnknownSocError(f"{where}: unknown SoC family {name!r}; valid: {', '.join(FAMILIES)}")
    return name


def family_of_soc_name(soc_name: str) -> str:
    """Map an aclrtGetSocName() string to its family, or raise UnknownSocError (one line). The
    families are tried in the platform file's order: the first whose pattern matches wins."""
    for family in _RECORDS + _OTHERS:
        if family.matches(soc_name):
            return family.name
    raise UnknownSocError(f"SoC name {soc_name!r} matches no known SoC version; known patterns: "
                          f"{', '.join(KNOWN_PREFIXES)}")
