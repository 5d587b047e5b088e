"""One scalar, two YAML versions: where YAML 1.1 and YAML 1.2 read a case file differently.

PyYAML's SafeLoader, which this reader builds on, resolves plain scalars by YAML 1.1: `011` is
9 (octal), `1:30` is 90 (base 60), `yes`/`no`/`on`/`off` are booleans, `1e3` is text. YAML
1.2's core schema (what current YAML libraries and most other tools read) makes `011` 11, `1:30`
and `yes` text, and `1e3` the number 1000.0.

We refuse those forms rather than load with a YAML 1.2 resolver. A 1.2 reader would make this
loader unambiguous, but the file would still mean something else to every YAML 1.1 reader that
opens it: PyYAML's own safe_load (the plugin reads a case file's `op` with it, the tests and the
fuzzer load the files with it, and so do most scripts users write against them). A file the
loader accepts means the same under both versions; the refusal says what each one would make of
the value, so the author can write what was meant. Integers are also written in plain decimal
only (`0x10` is 16 under both versions, but no case file means hexadecimal), and text that only
looks like one of these forms stays text when quoted.

Two YAML 1.1 forms stay accepted. The merge key `<<` is not in the 1.2 core schema, but the YAML
1.2 libraries in use (go-yaml v3, js-yaml, ruamel.yaml) still merge with it, and
the case files use it to share an attribute set and override one entry. `y`/`n` (booleans in the
YAML 1.1 spec's list) are text to PyYAML and to YAML 1.2 alike, and the case files use `N` as an
axis name; where a boolean is meant they are refused as text, with a hint (messages.py).
"""
from __future__ import annotations

import math
import re

from yaml.nodes import ScalarNode

_TAG = "tag:yaml.org,2002:"
DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")

# the YAML 1.2 core schema (YAML 1.2.2, section 10.3.2), in its resolution order
_CORE_NULL = re.compile(r"(?:null|Null|NULL|~|)\Z")
_CORE_TRUE = re.compile(r"(?:true|True|TRUE)\Z")
_CORE_FALSE = re.compile(r"(?:false|False|FALSE)\Z")
_CORE_INT = re.compile(r"[-+]?[0-9]+\Z")
_CORE_OCT = re.compile(r"0o[0-7]+\Z")
_CORE_HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
_CORE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_CORE_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z")
_CORE_NAN = re.compile(r"\.(?:nan|NaN|NAN)\Z")

_CORE_FIRST = set("-+.0123456789nNtTfF~")      # what a non-text core scalar can start with ('' is null)
_CORE_FIRST.add("")

_INVALID = object()       # an explicit tag YAML 1.2 cannot apply to the text (!!bool yes)


def _core(text: str, tag: str | None = None):
    """The YAML 1.2 core-schema value of `text`: resolved when `tag` is None (a plain scalar),
    else constructed as that tag (_INVALID where the core schema has no such form)."""
    kind = None if tag is None else tag[len(_TAG):]
    if kind in (None, "null") and _CORE_NULL.match(text):
        return None
    if kind in (None, "bool") and (_CORE_TRUE.match(text) or _CORE_FALSE.match(text)):
        return bool(_CORE_TRUE.match(text))
    if kind in (None, "int", "float"):
        number = None
        if _CORE_INT.match(text):
            number = int(text, 10)
        elif _CORE_OCT.match(text):
            number = int(text[2:], 8)
        elif _CORE_HEX.match(text):
            number = int(text[2:], 16)
        if number is not None:
            return float(number) if kind == "float" else number
    if kind in (None, "float"):
        if _CORE_FLOAT.match(text):
            return float(text)
        if _CORE_INF.match(text):
            return -math.inf if text.startswith("-") else math.inf
        if _CORE_NAN.match(text):
            return math.nan
    if kind in (None, "str"):
        return text
    return _INVALID


def _same(a, b) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)         # repr: nan equals nan, 0.0 is not -0.0


def _shown(value) -> str:
    if value is _INVALID:
        return "no value (it is not of that type)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    return f"the text {value!r}"


def _advice(*values) -> str:
    if any(isinstance(v, bool) for v in values):
        return "write true or false"
    numbers = [_yaml_number(v) for v in values if isinstance(v, (int, float))]
    if numbers:
        return "write " + " or ".join(dict.fromkeys(numbers))
    return "write what is meant"


def _yaml_number(v) -> str:
    """A number as both versions write it: plain decimal, .inf, .nan."""
    if isinstance(v, float) and not math.isfinite(v):
        return ".nan" if math.isnan(v) else ("-.inf" if v < 0 else ".inf")
    return repr(v)


def problem(loader, tag: str, text: str, explicit: bool) -> str | None:
    """Why the scalar `text` (resolved or explicitly tagged as `tag` by `loader`, a PyYAML
    constructor) is refused, or None when YAML 1.1 and 1.2 read it alike."""
    if tag == _TAG + "merge":
        return None
    if tag == _TAG + "int" and DECIMAL.match(text):
        return None                        # most scalars: a decimal integer or plain text to both
    if tag == _TAG + "str" and text[:1] not in _CORE_FIRST:
        return None
    try:
        yaml11 = text if tag == _TAG + "str" else loader.yaml_constructors[tag](loader, ScalarNode(tag, text))
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        # an explicit tag on text that is not of that type (!!int abc, !!bool maybe) or an
        # integer with more digits than Python converts
        return f"a value cannot be converted: {type(e).__name__}: {e}"
    yaml12 = _core(text, tag if explicit else None)
    written = f"{'!!' + tag[len(_TAG):] + ' ' if explicit else ''}{text!r}"
    if not _same(yaml11, yaml12):
        return (f"{written} is {_shown(yaml11)} under YAML 1.1 (PyYAML) but {_shown(yaml12)} under YAML 1.2: "
                f"{_advice(yaml11, yaml12)}, or quote it if it is text")
    if isinstance(yaml11, int) and not isinstance(yaml11, bool) and not DECIMAL.match(text):
        return f"{written} is the integer {yaml11}: write integers in plain decimal ({yaml11})"
    return None
