"""The platform layer: platforms/platform.yaml is the one table of families and dtypes.

Its loader refuses a malformed file with one line naming the entry and the field; the families'
SoC-name patterns say what the spec says of the traps; and no other source file of the project
holds a table of these facts (a grep over the Python and C sources, shown to catch a planted one).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import platforms
from harness.core import dtypes, families
from platforms import cheader

REPO = Path(__file__).resolve().parents[1]
# where facts may be restated: the platform itself, and the tests, which state what they expect
EXEMPT = ("platforms/", "tests/")
SOURCES = ("harness", "golden", "swcann", "benchmarks", "conftest.py", "run", ".ci")

FAMILY_NAMES = {f.name for f in platforms.FAMILIES + platforms.OTHER_FAMILIES}
DTYPE_NAMES = {a for d in platforms.DTYPES for a in (d.name, *d.aliases)}
DTYPE_ENUMS = {d.acl_name for d in platforms.DTYPES} | {d.ge_name for d in platforms.DTYPES}


# ------------------------------------------------------------------ the loader

def _load(tmp_path: Path, edit) -> str:
    """The PlatformError text of a platform file edited by `edit(data)`."""
    data = yaml.safe_load(platforms.PLATFORM_FILE.read_text())
    edit(data)
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(platforms.PlatformError) as e:
        platforms.load(path)
    text = str(e.value)
    assert "\n" not in text and text.startswith(str(path))
    return text


def test_the_loaded_records_are_frozen_and_complete():
    assert [f.name for f in platforms.FAMILIES] == list(families.FAMILIES)
    f = platforms.FAMILY["ascend950"]
    with pytest.raises(AttributeError):
        f.arch = "DAV_2201"                  # frozen: a record cannot be edited by a module that reads it
    assert f.arch_number == 3510 and f.bandwidth_of("Ascend950DT_9591").peak_gbps == 4000.0
    assert platforms.FAMILY["ascend310b"].bandwidth_of("Ascend310B1").peak_gbps is None
    bf16 = dtypes.lookup("bf16")
    assert (bf16.acl, bf16.bits, bf16.itemsize, bf16.kind, bf16.numpy_name) == (27, 16, 2, "float", None)
    assert dtypes.lookup("int4").itemsize == 1 and dtypes.lookup("string").itemsize == 0


def _family(data: dict, name: str) -> dict:
    """The platform file's entry of `name`, wherever the file lists it (a contributor may insert one)."""
    return next(f for f in data["families"] if f["name"] == name)


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["families"][1].pop("arch"), "families[1] (ascend910_93): field 'arch' is missing"),
    (lambda d: d["families"][0].update(arch="2201"), "arch '2201' is not DAV_<4 digits>"),
    (lambda d: _family(d, "ascend950").update(default_soc="Ascend950XX"), "default_soc 'Ascend950XX' matches none"),
    (lambda d: d["families"][0]["bandwidth"][0].update(peak_gbps="fast"), "peak_gbps' is 'fast', not a float"),
    (lambda d: d["families"][0]["bandwidth"][0].update(modelled_gbps=-1.0), "modelled_gbps -1.0 is not a bandwidth"),
    (lambda d: d["families"][0].update(colour="red"), "unknown field(s) colour"),
    (lambda d: d["dtypes"][1].update(kind="real"), "dtypes[1] (float32): kind 'real' is not one of"),
    (lambda d: d["dtypes"][2].update(acl=0), "dtypes (acl values): 0 is given twice"),
    (lambda d: d["dtypes"][3].update(aliases=["fp16"]), "dtypes (names and aliases): 'fp16' is given twice"),
    (lambda d: d["families"].append(dict(d["families"][0])), "families: 'ascend910b' is given twice"),
    (lambda d: d.update(software_cann_default="ascend999"), "software_cann_default: 'ascend999' is not one"),
    (lambda d: d["families"].append({**_family(d, "ascend950"), "name": "ascend950x", "soc_patterns": ["Ascend950X*"],
                                     "soc_versions": ["Ascend950X_1"], "default_soc": "Ascend950X_1"}),
     f"families[{len(platforms.FAMILIES)}] (ascend950x): SoC name 'Ascend950X_1' is read as ascend950 "
     "(soc_patterns, first match wins)"),
    # inserted above the 950 with a pattern that takes the 950's older names (acl_abi.md 1.8)
    (lambda d: d["families"].insert(0, {**_family(d, "ascend910_93"), "name": "ascend910_95", "soc_patterns":
                                        ["Ascend910_95*"], "soc_versions": ["Ascend910_9591"], "default_soc": "Ascend910_9591"}),
     "(ascend950): SoC name 'Ascend910_95' is read as ascend910_95 (soc_patterns, first match wins)"),
])
def test_a_malformed_platform_file_is_one_line_naming_the_field(tmp_path, edit, words):
    assert words in _load(tmp_path, edit)


def test_an_entry_above_a_family_may_claim_only_its_own_names(tmp_path):
    data = yaml.safe_load(platforms.PLATFORM_FILE.read_text())
    data["families"].insert(0, {**_family(data, "ascend910_93"), "name": "ascend910_95x",
                                "soc_patterns": ["Ascend910_9591*"], "soc_versions": ["Ascend910_9591"],
                                "default_soc": "Ascend910_9591"})
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data))
    fams = {f.name: f for f in platforms.load(path)[0]}
    first = lambda name: next(f.name for f in fams.values() if f.matches(name))   # noqa: E731
    assert (first("Ascend910_9591"), first("Ascend910_9599"), first("Ascend950DT_9591")) == \
        ("ascend910_95x", "ascend950", "ascend950")


def test_a_broken_platform_file_stops_an_import_with_one_line(tmp_path):
    bad = tmp_path / "platforms"
    bad.mkdir()
    for p in platforms.PLATFORM_FILE.parent.glob("*.py"):
        (bad / p.name).write_text(p.read_text())
    (bad / "platform.yaml").write_text(platforms.PLATFORM_FILE.read_text().replace("bits: 16", "bits: sixteen", 1))
    proc = subprocess.run([sys.executable, "-c", "import platforms"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "PlatformError" in proc.stderr and "(float16): field 'bits' is 'sixteen', not a int" in proc.stderr


# ------------------------------------------------------------------ what the patterns say

# spec acl_abi.md 1.8 and 5.1: the traps of the SoC names, stated here independently of the file
SOC_NAMES = {
    "Ascend910B1": "ascend910b", "Ascend910B4": "ascend910b", "Ascend910B5": None, "Ascend910B": "ascend910",
    "Ascend910": "ascend910", "Ascend910A": "ascend910", "Ascend910ProA": "ascend910", "Ascend910ProB": "ascend910",
    "Ascend910PremiumA": "ascend910", "Ascend910_9391": "ascend910_93", "Ascend910_9392": "ascend910_93",
    "Ascend910_9599": "ascend950", "Ascend950PR_9579": "ascend950", "Ascend950DT_9591": "ascend950",
    "Ascend310P1": "ascend310p", "Ascend310P3": "ascend310p", "Ascend310B1": "ascend310b", "Ascend310B4": "ascend310b",
    "Ascend310B": None, "Ascend031": "ascend031", "Ascend035A": "ascend035", "Ascend350_x": "ascend350",
    "Ascend910C": None, "ascend910b1": None,
}


@pytest.mark.parametrize("name", SOC_NAMES)
def test_soc_names_map_to_their_families(name):
    try:
        got = families.family_of_soc_name(name)
    except families.UnknownSocError:
        got = None
    assert got == SOC_NAMES[name]


def test_the_generated_header_carries_every_family_and_dtype():
    text = cheader.header()
    for f in platforms.FAMILIES:
        assert f'{{"{f.name}", "{f.default_soc}", {cheader.socv(f)}, {f.arch},' in text
    for d in platforms.DTYPES:
        assert f'{{{d.acl_name}, "{d.ge_name}", {d.itemsize}}}' in text
        assert f"{d.acl_name} = {d.acl}" in cheader.acl_data_types()


# ------------------------------------------------------------------ no table elsewhere

def _literal_strings(node: ast.AST) -> list[str]:
    elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


# dtype names that are also the names of scalar argument types (bool, int64, int8, double): a table of
# those is a table of argument kinds, unless a name only a dtype has is among its keys
_SCALAR_KINDS = {"bool", "int64", "int8", "double", "float"}


def python_tables(path: Path, text: str) -> list[str]:
    """Literal tables of platform facts in one Python source: a dict keyed by two or more family names
    or by three or more dtype names (one of them no scalar kind), a tuple/list/set of four or more
    families (an op's rule names the few it applies to), or three or more ACL/GE dtype constants."""
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if not isinstance(node, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
            continue
        strings = set(_literal_strings(node))
        fams = len(FAMILY_NAMES & strings)
        dtype_keys = DTYPE_NAMES & strings if isinstance(node, ast.Dict) else set()
        enums = len(DTYPE_ENUMS & strings)
        if (isinstance(node, ast.Dict) and fams >= 2) or fams >= 4 or enums >= 3 \
                or (len(dtype_keys) >= 3 and dtype_keys - _SCALAR_KINDS):
            found.append(f"{path}:{node.lineno}: {sorted(strings)[:4]}")
    return found


_C_FAMILY = re.compile(r'"(%s)"' % "|".join(sorted(map(re.escape, FAMILY_NAMES))))
_C_GE_NAME = re.compile(r'"(%s)"' % "|".join(sorted(re.escape(d.ge_name) for d in platforms.DTYPES)))
_C_DEFINED = re.compile(r"\b(?:%s|SOCV_\w+|DAV_\d+)\s*=\s*-?\d"
                        % "|".join(sorted(re.escape(d.acl_name) for d in platforms.DTYPES)))


def c_tables(path: Path, text: str) -> list[str]:
    """Tables of platform facts in one C source: two or more family names, or two or more GE dtype
    names, as string literals within five lines; or a dtype, SocVersion or NpuArch enumerator being
    given its value. (An op's list of the dtypes it accepts is a rule, not a table.)"""
    lines = text.splitlines()
    found = []
    for i in range(len(lines)):
        window = "\n".join(lines[i:i + 5])
        if len(set(_C_FAMILY.findall(window))) >= 2 or len(set(_C_GE_NAME.findall(window))) >= 2 \
                or _C_DEFINED.search(lines[i]):
            found.append(f"{path}:{i + 1}: {lines[i].strip()[:80]}")
    return found


def _project_files() -> list[Path]:
    """The project's sources: git's files (ignored outputs left out), or every file below SOURCES in a
    copy that is no git checkout (tests/test_added_family.py runs this test in one)."""
    if (REPO / ".git").exists():
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *SOURCES], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    else:
        out = [str(p.relative_to(REPO)) for s in SOURCES for p in ([REPO / s] if (REPO / s).is_file()
                                                                  else (REPO / s).rglob("*"))]
    return [REPO / p for p in out if not p.startswith(EXEMPT) and (REPO / p).is_file()]


def _tables(paths) -> list[str]:
    found = []
    for p in paths:
        if p.suffix == ".py":
            found += python_tables(p.relative_to(REPO) if p.is_relative_to(REPO) else p, p.read_text())
        elif p.suffix in (".c", ".h"):
            found += c_tables(p.relative_to(REPO) if p.is_relative_to(REPO) else p, p.read_text())
    return found


def test_no_family_or_dtype_table_outside_the_platform_file():
    assert _tables(_project_files()) == []


@pytest.mark.parametrize("name, text", [
    ("tables.py", 'PEAKS = {"ascend910b": 1600.0, "ascend950": 1600.0}\n'),
    ("tables.py", 'FAMILIES = ("ascend910b", "ascend950", "ascend910", "ascend310p")\n'),
    ("tables.py", 'ENUM = {"ACL_FLOAT": 0, "ACL_FLOAT16": 1, "ACL_INT8": 2}\n'),
    ("tables.py", 'WIDTH = {"float16": 2, "bfloat16": 2, "float32": 4}\n'),
    ("tables.c", 'static const char *k[] = {\n    "ascend910b",\n    "ascend310p",\n};\n'),
    ("tables.h", "enum { ACL_FLOAT = 0, ACL_FLOAT16 = 1,\n ACL_INT8 = 2 };\n"),
    ("tables.c", '{ACL_FLOAT, "DT_FLOAT", 4},\n{ACL_FLOAT16, "DT_FLOAT16", 2},\n'),
    ("tables.h", "enum swc_socv { SOCV_ASCEND910B = 1 };\n"),
])
def test_the_grep_finds_a_planted_table(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert len(_tables([path])) >= 1


def test_the_grep_lets_rules_be(tmp_path):
    """An op's rule naming the families it applies to, or a dtype set it accepts, is not a table."""
    path = tmp_path / "rule.py"
    path.write_text('A2A3 = ("ascend910b", "ascend910_93")\nOK = frozenset({"float16", "float32", "bfloat16"})\n'
                    'if family == "ascend950": pass\nC_TYPES = {"bool": "bool", "int64": "int64_t", "double": "double"}\n')
    c = tmp_path / "rule.c"
    c.write_text("static const int fl[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT}, il[] = {ACL_INT32, ACL_INT64};\n")
    assert _tables([path, c]) == []


def test_cases_carry_the_platform_records_and_write_their_names():
    """A case's dtypes and families are the platform's records, not names each room parses again;
    each meets its name in a dict or set (what --soc and a record carry), and leaves the process
    as that name."""
    from harness import operators
    from harness.core.jsonsafe import jsonable
    from harness.reporting.records import facts_of
    seen = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "cases").glob("*.yaml")):
        op, cases = operators.load_case_file(path)
        assert all(isinstance(f, platforms.Family) for f in op.families), path
        for c in cases:
            assert isinstance(c.dtype, platforms.DType) and c.dtype is dtypes.lookup(c.dtype.name), c.id
            assert c.index_dtype is None or isinstance(c.index_dtype, platforms.DType), c.id
            assert all(isinstance(f, platforms.Family) for f in (*c.families, *c.status)), c.id
            assert all(c.status[f.name] == c.status[f] for f in c.families if f in c.status), c.id
            seen += 1
        facts = facts_of(cases[0], "node")
        assert type(facts["dtype"]) is str and facts["dtype"] == cases[0].dtype.name
    assert seen > 1000
    f16, fam = dtypes.lookup("fp16"), families.BY_NAME["ascend910b"]
    assert f16 == "float16" and f16 != "fp16" and {"float16": 1}[f16] == 1 and "float16" in {f16}
    assert fam == "ascend910b" and fam != families.BY_NAME["ascend950"] and sorted([families.BY_NAME["ascend950"], fam])[0] is fam
    assert jsonable({"d": f16, "f": [fam]}) == {"d": "float16", "f": ["ascend910b"]}
