"""C from platform.yaml: the software CANN's swc_platform.h and the aclDataType enumerators of its acl.h.

swcann/build.py writes both at build time (so a tree always matches the platform file its hash
covers); the C reproducer takes its SoC-name patterns from the same records. Nothing here is a
fact: every value comes from the loaded Family and DType records.
"""
from __future__ import annotations

import json

from . import DTYPES, FAMILIES, SOFTWARE_CANN_DEFAULT, DType, Family

# the marker line of swcann/include/acl/acl.h that the build replaces with the enumerators
ACL_DATA_TYPES_MARKER = "@ACL_DATA_TYPES@"


def _c(text: str) -> str:
    """A C string literal (JSON's escapes are C's for the characters a platform file holds)."""
    return json.dumps(text)


def socv(family: Family) -> str:
    """The SocVersion enumerator the ops' code compares with: SOCV_ASCEND910B for ascend910b."""
    return f"SOCV_{family.name.upper()}"


def acl_data_types(dtypes: tuple[DType, ...] = DTYPES) -> str:
    """The body of acl.h's aclDataType enum, in enum-value order."""
    items = [f"{d.acl_name} = {d.acl}" for d in sorted(dtypes, key=lambda d: d.acl)]
    lines, line = [], "   "
    for i, item in enumerate(items):
        piece = f" {item}{',' if i < len(items) - 1 else ''}"
        if len(line) + len(piece) > 100:
            lines.append(line.rstrip())
            line = "   "
        line += piece
    return "\n".join(lines + [line.rstrip()])


def render_acl_h(template: str) -> str:
    """acl.h with its marker line replaced by the aclDataType enumerators."""
    lines = template.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if ACL_DATA_TYPES_MARKER in line]
    if len(hits) != 1:
        raise ValueError(f"acl.h must hold the marker {ACL_DATA_TYPES_MARKER} on exactly one line, found {len(hits)}")
    lines[hits[0]] = acl_data_types() + "\n"
    return "".join(lines)


def _rows(rows: list[str]) -> str:
    return " \\\n".join(f"    {r}," for r in rows)


def header(families: tuple[Family, ...] = FAMILIES, dtypes: tuple[DType, ...] = DTYPES,
           default: str = SOFTWARE_CANN_DEFAULT) -> str:
    """swc_platform.h: the software CANN's tables of families, bandwidths and dtypes."""
    archs = sorted({f.arch_number for f in families})
    fam_rows, bw_rows = [], []
    for f in families:
        versions = ", ".join(_c(v) for v in f.soc_versions)
        fam_rows.append(f"{{{_c(f.name)}, {_c(f.default_soc)}, {socv(f)}, {f.arch}, "
                        f"(const char *const[]){{{versions}, NULL}}}}")
        # a longer prefix first: the first matching row wins in C
        for b in sorted(f.bandwidth, key=lambda b: -len(b.soc_prefix)):
            bw_rows.append(f"{{{_c(f.name)}, {_c(b.soc_prefix)}, {b.modelled_gbps!r}e9}}")
    dt_rows = [f"{{{d.acl_name}, {_c(d.ge_name)}, {d.itemsize}}}" for d in dtypes]
    allowed = (", ".join(f.name for f in families) + ", or a full SoC name such as "
               + ", ".join(f.default_soc for f in families))
    return f"""/* Generated from platforms/platform.yaml by platforms/cheader.py at build time: do not edit. */
#ifndef SWC_PLATFORM_H_
#define SWC_PLATFORM_H_

/* NpuArch and SocVersion as the ops' code switches on them */
enum swc_arch {{ {", ".join(f"DAV_{a} = {a}" for a in archs)} }};
enum swc_socv {{ {", ".join(f"{socv(f)} = {i + 1}" for i, f in enumerate(families))} }};

/* {{family, default SoC name, socv, arch, NULL-terminated fnmatch patterns of its SoC versions}} */
#define SWC_FAMILY_ROWS \\
{_rows(fam_rows)}

/* {{family, SoC-name prefix, modelled bytes/s}}: the longest prefix of a family first */
#define SWC_BANDWIDTH_ROWS \\
{_rows(bw_rows)}

/* {{aclDataType, GE name, bytes per element (1 for sub-byte types, 0: not a tensor dtype)}} */
#define SWC_DTYPE_ROWS \\
{_rows(dt_rows)}

#define SWC_DEFAULT_FAMILY {_c(default)}
#define SWC_SOC_ALLOWED_TEXT {_c(allowed)}

#endif
"""
