"""Every ABI constant the harness passes to CANN equals the value recorded in the spec.

The spec (shared/spec/acl_abi.md, beside the repository) is re-read here: the
markdown tables of sections 3.1, 3.2, 4.1, 4.3 and the enumerations written out
in the prose of sections 3.3 and 4.2.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.core import dtypes, formats
from harness.acl import abi

SPEC = Path(__file__).resolve().parents[1].parent / "shared" / "spec" / "acl_abi.md"

pytestmark = pytest.mark.skipif(not SPEC.is_file(), reason=f"spec not found at {SPEC} (CI puts shared/ beside the repo)")


def _section(text: str, heading: str) -> str:
    """Body of the markdown section whose heading starts with `heading` (up to the next heading)."""
    m = re.search(rf"^#+ {re.escape(heading)}.*?$(.*?)(?=^#+ )", text, re.M | re.S)
    assert m, f"section {heading!r} not found in {SPEC}"
    return m.group(1)


def _table_rows(section: str):
    for line in section.splitlines():
        if line.startswith("|") and not re.match(r"^\|\s*-", line):
            yield [c.strip() for c in line.strip().strip("|").split("|")]


def _expand(names: str, values: str) -> dict[str, int]:
    """'ACL_FLOAT6_E3M2 / E2M3' + '38 / 39' -> two entries; short forms share the first name's prefix."""
    names = re.sub(r"\(.*?\)", "", names).strip()
    parts = [n.strip() for n in names.split("/")]
    nums = [int(v.strip(), 0) for v in values.split("/")]
    full = [parts[0]]
    for short in parts[1:]:
        full.append(parts[0].rsplit("_", 1)[0] + (short if short.startswith("_") else "_" + short))
    assert len(full) == len(nums), (names, values)
    return dict(zip(full, nums))


def _pair_table(section: str) -> dict[str, int]:
    """Tables with two (name, value) column pairs per row, as in 3.1 and 3.2."""
    out = {}
    for row in _table_rows(section):
        for name, value in zip(row[0::2], row[1::2]):
            if name and re.match(r"^-?(0x)?[\dA-Fa-f]+(\s*/\s*-?\d+)*$", value):
                out.update(_expand(name, value))
    return out


def _prose_enum(paragraph: str, prefix: str) -> dict[str, int]:
    """'ACL_MEM_MALLOC_HUGE_FIRST 0, HUGE_ONLY 1, ...': bare names take `prefix`."""
    out = {}
    for name, value in re.findall(r"\b([A-Z][A-Z0-9_]+) (0x[0-9A-Fa-f]+|\d+)\b", paragraph):
        out[name if name.startswith("ACL_") else prefix + name] = int(value, 0)
    return out


@pytest.fixture(scope="module")
def spec() -> str:
    return SPEC.read_text()


@pytest.fixture(scope="module")
def doc_dtypes(spec):
    return _pair_table(_section(spec, "3.1 aclDataType"))


@pytest.fixture(scope="module")
def doc_formats(spec):
    return _pair_table(_section(spec, "3.2 aclFormat"))


def _bullet(section: str, title: str) -> str:
    m = re.search(rf"^\* \*\*{re.escape(title)}\*\*(.*?)(?=^\* |\Z)", section, re.M | re.S)
    assert m, f"bullet {title!r} not found"
    return m.group(1)


def test_parsers_read_enough(doc_dtypes, doc_formats):
    # guards against a spec edit that silently makes the parsers read nothing
    assert len(doc_dtypes) >= 28 and doc_dtypes["ACL_FLOAT4_E1M2"] == 41
    assert len(doc_formats) >= 20 and doc_formats["ACL_FORMAT_FRACTAL_NZ_C0_8"] == 54


def test_data_types(doc_dtypes):
    assert abi.DATA_TYPES == doc_dtypes


def test_formats(doc_formats):
    assert abi.FORMATS == doc_formats


def test_memcpy_kinds_malloc_policies_sysparam(spec):
    other = _section(spec, "3.3 Other enums")
    assert abi.MEMCPY_KINDS == _prose_enum(_bullet(other, "aclrtMemcpyKind"), "ACL_MEMCPY_")
    assert abi.MALLOC_POLICIES == _prose_enum(_bullet(other, "aclrtMemMallocPolicy").split("HUGE_FIRST:")[0],
                                              "ACL_MEM_MALLOC_")
    opts = {k: v for k, v in _prose_enum(_bullet(other, "aclSysParamOpt"), "").items() if k.startswith("ACL_OPT_")}
    assert abi.SYS_PARAM_OPTS == opts


def test_aclnn_status_codes(spec):
    doc = {}
    for row in _table_rows(_section(spec, "4.1 aclnn status codes")):
        if len(row) >= 2 and row[1].isdigit():
            doc[re.sub(r"\(.*?\)", "", row[0]).strip()] = int(row[1])
    assert len(doc) >= 20
    for name, value in abi.ACLNN_STATUS.items():
        assert doc.get(name) == value, name


def test_acl_error_codes(spec):
    doc = {"ACL_SUCCESS": 0}
    for value, name in re.findall(r"(\d{6}) \**([A-Z_]+)\**", _section(spec, "4.2 ACL (aclError) codes")):
        doc[f"ACL_ERROR_{name}"] = int(value)
    for row in _table_rows(_section(spec, "4.3 Runtime codes")):
        codes, names = row[0].replace("*", ""), row[1].replace("*", "") if len(row) > 1 else ""
        if not re.fullmatch(r"\d+( / \d+)*", codes):      # header, or a range like 507042–507045
            continue
        for value, name in zip(codes.split(" / "), names.split(" / ")):
            name = name.strip()
            doc[name if name.startswith("ACL_") else f"ACL_ERROR_RT_{name}"] = int(value)
    for name, value in abi.ACL_ERRORS.items():
        assert doc.get(name) == value, name


def test_module_attributes_match_tables():
    for table in (abi.DATA_TYPES, abi.FORMATS, abi.MEMCPY_KINDS, abi.MALLOC_POLICIES, abi.SYS_PARAM_OPTS,
                  abi.ACLNN_STATUS, abi.ACL_ERRORS):
        for name, value in table.items():
            assert getattr(abi, name) == value, name


def test_harness_dtypes_match_torch_npu_mapping(spec, doc_dtypes):
    """harness/core/dtypes.py maps torch dtypes the way torch_npu does (spec 3.1, CalcuOpUtil.cpp)."""
    mapping = _torch_npu_mapping(spec, doc_dtypes)
    # every way the spec writes a target: a number, a slash list, an ACL_ name
    assert mapping["float8_e5m2"] == 35 and mapping["uint32"] == 8 and mapping["float32"] == doc_dtypes["ACL_FLOAT"]
    for d in (d for d in dtypes.ALL if d.torch_name):   # the ones the harness computes with
        torch_name = d.torch_name
        assert torch_name in mapping, f"spec has no torch_npu mapping for {torch_name}"
        assert d.acl == mapping[torch_name], d.name


def _torch_npu_mapping(spec, doc_dtypes) -> dict[str, int]:
    """torch dtype -> ACL enum value, as spec 3.1 writes torch_npu's mapping: `name→ACL_NAME`,
    `name→35`, or `uint16/32/64→7/8/10` (a slash list of names against one of values)."""
    out = {}
    for names, target in re.findall(r"([\w/]+)→(ACL_\w+|[\d/]+)", _section(spec, "3.1 aclDataType")):
        values = [doc_dtypes[target]] if target.startswith("ACL_") else [int(v) for v in target.split("/")]
        first, *more = names.split("/")
        stem = first.rstrip("0123456789")
        for name, value in zip([first] + [stem + m for m in more], values):
            out[name] = value
    return out


def test_harness_formats(doc_formats):
    for label, value in formats.FORMATS.items():
        name = f"ACL_FORMAT_{label}" if f"ACL_FORMAT_{label}" in doc_formats else f"ACL_{label}"
        assert doc_formats.get(name) == value, label


def test_pointer_returning_functions_have_pointer_restype():
    """A pointer returned through ctypes' default c_int would be truncated to 32 bits."""
    import ctypes
    pointer_types = (ctypes.c_void_p, ctypes.c_char_p)
    for group, protos in abi.PROTOTYPES.items():
        for name, proto in protos.items():
            if name.startswith("aclCreate") or name in ("aclGetRecentErrMsg", "aclrtGetSocName", "swcannVersion"):
                assert proto["restype"] in pointer_types, name
            assert proto["restype"] is not None, name
