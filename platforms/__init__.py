"""The platform, typed: platform.yaml loaded once into frozen Family and DType records.

The bottom layer: the harness, the goldens and the phase-1 models import these records and
restate none of their facts; the software CANN and the C reproducer include the C header that
cheader.py generates from the same file. A malformed platform.yaml stops the import with one
line naming the file, the entry and the field (PlatformError), since nothing can run without it.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

PLATFORM_FILE = Path(__file__).with_name("platform.yaml")

KINDS = ("float", "int", "uint", "bool", "complex", "string", "none")
_ARCH = re.compile(r"^DAV_\d{4}$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class PlatformError(ValueError):
    """platform.yaml is malformed: the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Bandwidth:
    soc_prefix: str             # "" for every SoC of the family; the longest matching prefix wins
    peak_gbps: float | None     # 1e9 bytes/s on hardware; None: no published figure
    modelled_gbps: float        # the software CANN's modelled bandwidth (SWCANN_DEVICE_TIME=1)
    source: str


class _Named:
    """What Family and DType share: a record is its name, the way a StrEnum member is its value.
    Equal to (and hashed as) its canonical name and ordered by it, so --soc ascend910b, a record's
    "dtype": "float16" and a case's record meet in one set or dict; never equal to an alias ("fp16":
    harness.core.dtypes.lookup first). Pickled by name: every process holds one record per name,
    the one its own platform file loaded (a case worker, the case cache)."""
    __slots__ = ()
    name: str

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return self.name == other
        if type(other) is not type(self):
            return NotImplemented
        return dataclasses.astuple(self) == dataclasses.astuple(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __lt__(self, other) -> bool:
        return self.name < str(other) if isinstance(other, (str, type(self))) else NotImplemented

    def __reduce__(self):
        return _named, (type(self).__name__, self.name)


@dataclass(frozen=True, eq=False, repr=False)   # eq, hash and repr: _Named's
class Family(_Named):
    name: str
    arch: str | None                    # "DAV_2201"; None for a family no op supports
    soc_patterns: tuple[str, ...]       # fnmatch patterns of its aclrtGetSocName() strings
    soc_versions: tuple[str, ...] = ()  # fnmatch patterns of its platform configs' SoC versions
    default_soc: str = ""               # what the software CANN reports for the family name
    bandwidth: tuple[Bandwidth, ...] = ()
    supported: bool = True              # False: a platform config none of the ops supports

    @property
    def arch_number(self) -> int:
        return int(self.arch.split("_")[1]) if self.arch else 0

    def matches(self, soc_name: str) -> bool:
        return any(fnmatch.fnmatchcase(soc_name, p) for p in self.soc_patterns)

    def bandwidth_of(self, soc_name: str = "") -> Bandwidth | None:
        rows = [b for b in self.bandwidth if soc_name.startswith(b.soc_prefix)]
        return max(rows, key=lambda b: len(b.soc_prefix)) if rows else None



@dataclass(frozen=True, eq=False, repr=False)
class DType(_Named):
    name: str                   # the case-file name (torch's spelling)
    acl_name: str               # the aclDataType constant
    acl: int                    # its enum value
    ge_name: str                # the name aclnn error texts print
    bits: int                   # per element; 0: not a tensor dtype
    kind: str                   # one of KINDS
    torch_name: str | None      # the torch dtype's attribute name; None: the harness cannot compute with it
    numpy_name: str | None      # the numpy dtype that holds it; None: numpy has none
    c_type: str | None          # C type of one element in the reproducer; None: only digested there
    aliases: tuple[str, ...] = ()

    @property
    def itemsize(self) -> int:
        """Bytes per element as aclDataTypeSize counts them: 1 for sub-byte types, 0 when not a tensor dtype."""
        return (self.bits + 7) // 8

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        """int, uint or bool: compared exactly under every precision standard (spec "any integer output")."""
        return self.kind in ("int", "uint", "bool")



class _Bad(Exception):
    """A fault of one entry; load() prefixes the file's path."""


def _fail(where: str, message: str):
    raise _Bad(f"{where}: {message}")


def _field(entry: dict, key: str, kind, where: str, *, optional: bool = False):
    if key not in entry:
        if optional:
            return None
        _fail(where, f"field {key!r} is missing")
    value = entry[key]
    if value is None and optional:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        _fail(where, f"field {key!r} is {value!r}, not a {kind.__name__}")
    return value


def _strings(entry: dict, key: str, where: str, *, optional: bool = False) -> tuple[str, ...]:
    value = entry.get(key, [] if optional else None)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value) \
            or (not value and not optional):
        _fail(where, f"field {key!r} must be a list of non-empty strings, not {value!r}")
    return tuple(value)


def _known(entry: dict, keys: set[str], where: str) -> None:
    unknown = sorted(set(entry) - keys)
    if unknown:
        _fail(where, f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(keys))})")


def _family(entry, i: int) -> Family:
    where = f"families[{i}]"
    if not isinstance(entry, dict):
        _fail(where, "must be a mapping")
    _known(entry, {"name", "arch", "soc_patterns", "soc_versions", "default_soc", "bandwidth"}, where)
    name = _field(entry, "name", str, where)
    where = f"families[{i}] ({name})"
    if not _NAME.match(name):
        _fail(where, f"name {name!r} must be lower case letters, digits and _")
    arch = _field(entry, "arch", str, where)
    if not _ARCH.match(arch):
        _fail(where, f"arch {arch!r} is not DAV_<4 digits>")
    versions = _strings(entry, "soc_versions", where)
    default = _field(entry, "default_soc", str, where)
    if not any(fnmatch.fnmatchcase(default, p) for p in versions):
        _fail(where, f"default_soc {default!r} matches none of its soc_versions")
    rows = entry.get("bandwidth")
    if not isinstance(rows, list) or not rows:
        _fail(where, "field 'bandwidth' must be a non-empty list")
    bandwidth = []
    for j, row in enumerate(rows):
        at = f"{where}.bandwidth[{j}]"
        if not isinstance(row, dict):
            _fail(at, "must be a mapping")
        _known(row, {"soc_prefix", "peak_gbps", "modelled_gbps", "source"}, at)
        peak = _field(row, "peak_gbps", float, at, optional=True)
        modelled = _field(row, "modelled_gbps", float, at)
        for key, v in (("peak_gbps", peak), ("modelled_gbps", modelled)):
            if v is not None and not (0 < v < 1e6):
                _fail(at, f"{key} {v!r} is not a bandwidth in GB/s")
        bandwidth.append(Bandwidth(_field(row, "soc_prefix", str, at), peak, modelled,
                                   " ".join(_field(row, "source", str, at).split())))
    if not any(b.soc_prefix == "" for b in bandwidth):
        _fail(where, "bandwidth needs a row with soc_prefix \"\" (every SoC of the family)")
    return Family(name, arch, _strings(entry, "soc_patterns", where), versions, default, tuple(bandwidth))


def _other_family(entry, i: int) -> Family:
    where = f"other_families[{i}]"
    if not isinstance(entry, dict):
        _fail(where, "must be a mapping")
    _known(entry, {"name", "soc_patterns"}, where)
    return Family(_field(entry, "name", str, where), None, _strings(entry, "soc_patterns", where), supported=False)


def _dtype(entry, i: int) -> DType:
    where = f"dtypes[{i}]"
    if not isinstance(entry, dict):
        _fail(where, "must be a mapping")
    keys = {"name", "aliases", "acl_name", "acl", "ge_name", "bits", "kind", "torch", "numpy", "c_type"}
    _known(entry, keys, where)
    name = _field(entry, "name", str, where)
    where = f"dtypes[{i}] ({name})"
    kind = _field(entry, "kind", str, where)
    if kind not in KINDS:
        _fail(where, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    bits = _field(entry, "bits", int, where)
    if not 0 <= bits <= 128:
        _fail(where, f"bits {bits} is not 0..128")
    acl_name = _field(entry, "acl_name", str, where)
    if not acl_name.startswith("ACL_"):
        _fail(where, f"acl_name {acl_name!r} does not start with ACL_")
    return DType(name, acl_name, _field(entry, "acl", int, where), _field(entry, "ge_name", str, where), bits,
                 kind, _field(entry, "torch", str, where, optional=True),
                 _field(entry, "numpy", str, where, optional=True), _field(entry, "c_type", str, where, optional=True),
                 _strings(entry, "aliases", where, optional=True))


def _unique(items, key, what: str) -> None:
    seen: dict = {}
    for item in items:
        for k in key(item):
            if k in seen:
                _fail(what, f"{k!r} is given twice")
            seen[k] = item


def _example(pattern: str) -> str | None:
    """The shortest name `pattern` matches (`*` empty, `?` and a class their first choice), or None
    where that is not simple to say (a negated class)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            end = pattern.find("]", i + 2)
            if end < 0 or pattern[i + 1] in "!^":
                return None
            out.append(pattern[i + 1])
            i = end + 1
            continue
        out.append({"*": "", "?": "0"}.get(c, c))
        i += 1
    name = "".join(out)
    return name if fnmatch.fnmatchcase(name, pattern) else None


def _own_names(families: tuple[Family, ...]) -> None:
    """Each family's default SoC, literal SoC versions and an example of each of its patterns are
    read as that family: the first family whose pattern matches a name wins, so an entry must not
    claim an earlier family's names, nor an inserted one a later family's (an `Ascend910_95*` entry
    above the 950, whose older chips are named so)."""
    for i, f in enumerate(families):
        names = [f.default_soc] if f.default_soc else []
        names += [v for v in f.soc_versions if not any(c in v for c in "*?[")]
        names += [e for e in map(_example, f.soc_patterns) if e]
        for name in names:
            first = next((g for g in families if g.matches(name)), None)
            if first is not f:
                _fail(f"families[{i}] ({f.name})", f"SoC name {name!r} is read as "
                      f"{first.name if first else 'no family'} (soc_patterns, first match wins)")


def load(path: Path = PLATFORM_FILE) -> tuple[tuple[Family, ...], tuple[Family, ...], tuple[DType, ...], str]:
    """(families, other families, dtypes, the software CANN's default family) of a platform file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise PlatformError(f"{path}: cannot be read as YAML: {' '.join(str(e).split())}") from None
    try:
        return _records(data)
    except _Bad as e:
        raise PlatformError(f"{path}: {e}") from None


def _records(data) -> tuple[tuple[Family, ...], tuple[Family, ...], tuple[DType, ...], str]:
    if not isinstance(data, dict):
        _fail("top level", "must be a mapping")
    _known(data, {"families", "other_families", "dtypes", "software_cann_default"}, "top level")
    for key in ("families", "dtypes"):
        if not isinstance(data.get(key), list) or not data[key]:
            _fail(key, "must be a non-empty list")
    families = tuple(_family(e, i) for i, e in enumerate(data["families"]))
    others = tuple(_other_family(e, i) for i, e in enumerate(data.get("other_families") or []))
    dtypes = tuple(_dtype(e, i) for i, e in enumerate(data["dtypes"]))
    _unique(families + others, lambda f: (f.name,), "families")
    _unique(dtypes, lambda d: (d.name, *d.aliases), "dtypes (names and aliases)")
    _unique(dtypes, lambda d: (d.acl,), "dtypes (acl values)")
    _own_names(families + others)
    default = data.get("software_cann_default")
    if default not in {f.name for f in families}:
        _fail("software_cann_default", f"{default!r} is not one of the families")
    return families, others, dtypes, default


FAMILIES, OTHER_FAMILIES, DTYPES, SOFTWARE_CANN_DEFAULT = load()
FAMILY = {f.name: f for f in FAMILIES}
DTYPE = {d.name: d for d in DTYPES}


def _named(kind: str, name: str) -> _Named:
    """The record a pickle names (_Named.__reduce__), as this process loaded it."""
    if kind == "DType":
        return DTYPE[name]
    return FAMILY.get(name) or next(f for f in OTHER_FAMILIES if f.name == name)
