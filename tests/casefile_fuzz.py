"""Mutation fuzzer for case files; tests/test_casefile_fuzz.py runs it in a subprocess.

    python -m tests.casefile_fuzz [--seed N] [--scale F]

Mutants are made from the real case files (cases/*.yaml): either from a file's
text or bytes as a whole, or from one of its groups cut out with the file's
header (a "piece": op, signature, the checks the group names, one group),
which keeps each load short. Each mutant is loaded with the harness's loader
under a time limit; the outcome must be a CaseFileError whose text is one
bounded line naming the file (and, where the fuzzer knows it, the group and
the offending word), or, for the mutations that are legitimate, an acceptance
that really carries the mutated value. Anything else (another exception, a
time-out, MemoryError, nonsense accepted) is a failure.

Prints one JSON object: per class the number of mutants, rejections,
acceptances and failures (with the first few failures described), the peak
RSS before and after, and the slowest load (in CPU time).
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

import yaml

from harness.core.errors import CaseFileError
from harness.operators import load_case_file
from harness.model import fields, source
from tests import call_limits

ROOT = Path(__file__).resolve().parents[1]
SENTINEL = "ZZSENTINELZZ"
MAX_ERROR_LEN = 1100          # path 300 + group 80 + field 160 + message 400 + separators
CPU_LIMIT_S = 10.0            # CPU time of one load; the bound asserted by the test is much lower
HANG_LIMIT_S = 120.0          # wall time of one load: only a load that blocks gets near it
HEADER = ("op", "golden", "standard", "families", "output_like", "spatial_rank", "channel_last_formats", "signature",
          "input_attrs", "distributions")

# Each mutant: (class, text-or-bytes, expectation). expectation: "reject" with optional group and
# words the message must contain, "accept" with a check of the loaded cases, or "any".


def _copy(doc):
    return json.loads(json.dumps(doc))


def _dump(doc) -> str:
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                     default_flow_style=None, width=100000, allow_unicode=True)


def _walk(node, path=()):
    """(path, value) of every node below `node`."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, path + (i,))


def _set(doc, path, value):
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


class Pieces:
    """The real files and, per group, the file's header with that group alone."""

    def __init__(self):
        self.files = []            # (name, text, doc)
        self.pieces = []           # (name, doc, group name)
        self.known_words = {"others", "default"}
        for path in sorted((ROOT / "cases").glob("*.yaml")):
            text = path.read_text()
            doc = yaml.safe_load(text)
            self.files.append((path.stem, text, doc))
            for _, node in _walk(doc):
                if isinstance(node, dict):
                    self.known_words.update(str(k) for k in node)
                elif isinstance(node, str):
                    self.known_words.add(node)
            for g in doc["groups"]:
                named = {sc.get("check") for sc in (g.get("invalid") or {}).get("scenarios", [])}
                piece = {k: doc[k] for k in HEADER if k in doc}
                piece["checks"] = [c for c in doc.get("checks", []) if c["id"] in named]
                piece["groups"] = [g]
                self.pieces.append((f"{path.stem}.{g['name']}", piece, g["name"]))
        schema = yaml.safe_load((ROOT / "harness" / "model" / "schema.yaml").read_text())
        for _, node in _walk(schema):
            if isinstance(node, dict):
                self.known_words.update(str(k) for k in node.get("properties") or {})


# ---------------------------------------------------------------- mutation classes

def _leaf_paths(doc, in_groups=True):
    """Leaves to replace; not a group's name, which the error is expected to quote."""
    return [p for p, v in _walk(doc) if not isinstance(v, (dict, list)) and p and
            (not in_groups or p[0] == "groups") and p[2:] != ("name",)]


def _with_sentinel(rng, piece, raw: str, in_groups=True):
    """The piece's text with a random leaf replaced by raw YAML text."""
    doc = _copy(piece)
    path = rng.choice(_leaf_paths(doc, in_groups))
    _set(doc, path, SENTINEL)
    return _dump(doc).replace(SENTINEL, raw, 1)


def _bomb(rng) -> str:
    width = rng.randint(2, 12)
    depth = 1
    while width ** depth <= 2 * source.MAX_NODES:
        depth += 1
    depth += rng.randint(0, 3)
    style = rng.choice(["seq", "map"])
    if style == "seq":
        layers = [f"&l0 [{', '.join(['lol'] * width)}]"]
        layers += [f"&l{d} [{', '.join([f'*l{d - 1}'] * width)}]" for d in range(1, depth + 1)]
    else:
        layers = ["&l0 {" + ", ".join(f"k{i}: lol" for i in range(width)) + "}"]
        layers += ["&l%d {" % d + ", ".join(f"k{i}: *l{d - 1}" for i in range(width)) + "}"
                   for d in range(1, depth + 1)]
    return "[" + ", ".join(layers) + "]"


def alias_bomb(rng, P):
    name, piece, group = rng.choice(P.pieces)
    variant = rng.random()
    if variant < 0.75:           # inside a group: the group is named
        return _with_sentinel(rng, piece, _bomb(rng)), ("reject", group, ["expands to more than"])
    if variant < 0.9:            # an alias to its own parent
        raw = rng.choice(["&r [1, *r]", "&r {a: [*r]}", "&r [[[*r]]]"])
        return _with_sentinel(rng, piece, raw), ("reject", group, ["contains it"])
    text = "x_anchors: " + _bomb(rng) + "\n" + _dump(piece)     # before everything: file level
    return text, ("reject", None, ["expands to more than"])


def non_utf8(rng, P):
    name, text, _ = rng.choice(P.files)
    data = bytearray(text.encode())
    variant = rng.randrange(6)
    if variant == 0:             # one stray byte
        pos = rng.randrange(len(data))
        bad = bytes([rng.randrange(0x80, 0x100)])
    elif variant == 1:           # overlong, surrogate, out-of-range, truncated sequences
        pos = rng.randrange(len(data))
        bad = rng.choice([b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
                          b"\xf8\x88\x80\x80\x80", b"\xff\xfe"])
    elif variant == 2:           # the end cut inside a multi-byte character
        return bytes(data) + "—".encode()[:2], ("reject", None, ["not UTF-8"])
    elif variant == 3:           # the whole file in a legacy 8-bit encoding
        return (text + "# naïve café — 10 µs\n").encode("cp1252"), ("reject", None, ["not UTF-8"])
    elif variant == 4:           # UTF-16/32: with a byte-order mark it is not UTF-8, without one it has NULs
        encoding = rng.choice(["utf-16", "utf-16-be", "utf-32"])
        return text.encode(encoding), ("reject", None, ["not UTF-8" if encoding != "utf-16-be" else
                                                        "control characters"])
    else:                        # a byte replaced
        pos = rng.randrange(len(data))
        data[pos:pos + 1] = b""
        bad = bytes([rng.choice([0xc0, 0xc1, 0xf5, 0xfe, 0xff, 0x80, 0xbf])])
    line = data.count(b"\n", 0, pos) + 1
    return bytes(data[:pos]) + bad + bytes(data[pos:]), ("reject", None, ["not UTF-8", f"line {line}"])


def deep_nesting(rng, P):
    name, piece, group = rng.choice(P.pieces)
    depth = rng.choice([source.MAX_DEPTH + 1, 40, 100, 1000, 2000, 10_000, 100_000])
    kind = rng.randrange(4)
    if kind == 0:
        raw = "[" * depth + "1" + "]" * depth
    elif kind == 1:
        raw = "{a: " * depth + "1" + "}" * depth
    elif kind == 2:
        raw = "[{a: " * (depth // 2) + "1" + "}]" * (depth // 2)
    else:                        # block style, appended at file level
        depth = min(depth, 300)
        text = _dump(piece) + "x_deep:\n" + "".join("  " * (i + 1) + "k:\n" for i in range(depth)) \
            + "  " * (depth + 1) + "v\n"
        return text, ("reject", None, ["nested more than"])
    return _with_sentinel(rng, piece, raw), ("reject", group, ["nested more than"])


def _mappings(doc):
    return [(p, v) for p, v in _walk(doc) if isinstance(v, dict) and v]


def duplicate_keys(rng, P):
    if rng.random() < 0.25:      # a whole line of a real file written twice (e.g. a second `shape:`)
        name, text, _ = rng.choice(P.files)
        lines = text.splitlines(keepends=True)
        while True:
            i = rng.randrange(len(lines) - 1)
            ln = lines[i]
            body = ln.split(" #")[0].rstrip()
            indent = len(ln) - len(ln.lstrip())
            nxt = lines[i + 1]
            if (ln.lstrip().startswith(("-", "#")) or ": " not in body or body.endswith((":", "|", ">", ">-"))
                    or _in_block_scalar(lines, i)
                    or any(body.count(a) != body.count(b) for a, b in ("[]", "{}")) or body.count('"') % 2
                    or (nxt.strip() and len(nxt) - len(nxt.lstrip()) > indent)):
                continue
            key = body.strip().split(":")[0].strip('"')
            return "".join(lines[:i + 1] + [ln] + lines[i + 1:]), ("reject", None, ["duplicate key", repr(key)])
    name, piece, group = rng.choice(P.pieces)
    doc = _copy(piece)
    path, mapping = rng.choice(_mappings(doc))
    key = rng.choice(list(mapping))
    value = mapping[key] if rng.random() < 0.5 else rng.choice(list(mapping.values()))
    mapping[SENTINEL] = value
    text = _dump(doc).replace(SENTINEL, key if _plain(key) else repr(key), 1)
    in_group = path[:1] == ("groups",)
    return text, ("reject", group if in_group else None, ["duplicate key", repr(key)])


def _in_block_scalar(lines: list[str], i: int) -> bool:
    """True when line i continues a `>`/`|` block scalar (text that only looks like `key: value`)."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    for ln in reversed(lines[:i]):
        if not ln.strip():
            continue
        own = len(ln) - len(ln.lstrip())
        if own < indent:
            return ln.split(" #")[0].rstrip().endswith(("|", ">", ">-", "|-", ">+", "|+"))
    return False


def _plain(key: str) -> bool:
    return key.isidentifier() and key not in ("null", "true", "false", "yes", "no", "on", "off", "y", "n")


def _typo(rng, word: str) -> str:
    if len(word) > 2 and rng.random() < 0.7:
        i = rng.randrange(len(word) - 1)
        op = rng.randrange(4)
        if op == 0:
            return word[:i] + word[i + 1:]
        if op == 1:
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        if op == 2:
            return word[:i] + word[i] + word[i:]
        return word[:i] + word[i].swapcase() + word[i + 1:]
    return rng.choice(["dtyp", "shpae", "comment", "x", "Status", "familes", "attr", "notes", "tensor"])


def unknown_keys(rng, P):
    while True:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        candidates = [(p, m) for p, m in _mappings(doc) if p != ("distributions",)]
        path, mapping = rng.choice(candidates)
        key = rng.choice(list(mapping))
        typo = _typo(rng, key)
        if typo in P.known_words or not _plain(typo):
            continue
        mapping[typo] = mapping[key]
        in_group = path[:1] == ("groups",)
        return _dump(doc), ("reject", group if in_group else None, [typo])


# absurd values for integers, by where the integer is (the rules stated independently of the loader)
_BEYOND_INT64 = [1 << 63, -(1 << 63) - 1, 10 ** 30, -(10 ** 30), 1 << 64]
_BAD_STATUS = [-1, 1 << 40, 7, 99_999, 162_000, 560_999, 1 << 63]
_ALLOCATED_DIM = [-1, -(1 << 40), 1 << 40, 1 << 28, 10 ** 30]


def _int_kind(piece, path):
    """What the integer at `path` is: status, allocated dim, described dim, attr:<type>, distribution."""
    if "status" in path:
        return "status"
    if path[0] == "distributions":
        return "distribution"
    if "shape" in path:
        return "described_dim" if "tensors" in path else "allocated_dim"
    if "attrs" in path:
        name = next(k for k in reversed(path) if isinstance(k, str) and k != "attrs")
        types = {p["name"]: p["type"] for p in piece["signature"] + piece.get("input_attrs", [])}
        return "attr:" + types.get(name, "?")
    return None


def absurd_numbers(rng, P):
    while True:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        ints = [p for p, v in _walk(doc) if isinstance(v, int) and not isinstance(v, bool) and p]
        if not ints:
            continue
        path = rng.choice(ints)
        kind = _int_kind(doc, path)
        in_group = path[:1] == ("groups",)
        where = group if in_group else None
        if kind == "status":
            value, expect = rng.choice(_BAD_STATUS), ("reject", where, [])
        elif kind == "allocated_dim":
            value, expect = rng.choice(_ALLOCATED_DIM), ("reject", where, [])
        elif kind == "described_dim":           # an invalid scenario may describe any int64 shape
            value = rng.choice(_BEYOND_INT64 + [-1, -(1 << 40), 1 << 40, (1 << 63) - 1])
            expect = ("reject", where, ["int64"]) if value in _BEYOND_INT64 else \
                ("accept", ("tensor_dim", value))
        elif kind in ("attr:int64", "attr:int_array"):
            value = rng.choice(_BEYOND_INT64 + [-1, 1 << 40])
            expect = ("reject", where, ["int64"]) if value in _BEYOND_INT64 else ("accept", ("attr", value))
        elif kind == "attr:int8":
            value = rng.choice([128, -129, 1 << 40, 10 ** 30])
            expect = ("reject", where, ["int8"])
        elif kind == "distribution":
            value, expect = 10 ** 400, ("reject", None, ["finite"])
        else:
            continue
        _set(doc, path, value)
        return _dump(doc), expect


def huge(rng, P):
    name, piece, group = rng.choice(P.pieces)
    variant = rng.randrange(5)
    doc = _copy(piece)
    g = doc["groups"][0]
    if variant == 0:
        text = _dump(doc) + "#" + "x" * source.MAX_BYTES + "\n"
        return text, ("reject", None, ["larger than"])
    if variant == 1:             # a flat list wider than the node cap, no alias
        return _with_sentinel(rng, piece, "[" + "1," * (source.MAX_NODES + 10) + "1]"), \
            ("reject", group, ["expands to more than"])
    if variant == 2 and "matrix" in g:     # a product of short lists: few nodes, many cases
        m = g["matrix"]
        m["shape"] = [[1, 1, 1, i + 1] for i in range(101)]
        m["attrs"] = m["attrs"] * (fields.MAX_CASES // 101 // len(m["attrs"]) + 1)
        return _dump(doc), ("reject", group, ["the matrix expands to", "cases"])
    if variant == 2:             # more scenarios than the node cap allows (it comes before the case cap)
        g["invalid"]["scenarios"] = [{"status": 161002}] * (source.MAX_NODES // 3 + 1)
        return _dump(doc), ("reject", group, ["expands to more than"])
    if variant == 3:             # a long int_array: int arrays are bounded
        # int arrays only: `matrix.attrs` itself is a list of mappings, not an int_array
        arrays = [p for p, v in _walk(doc) if "attrs" in p and isinstance(v, list) and p[0] == "groups"
                  and all(isinstance(x, int) for x in v)]
        if arrays:
            _set(doc, rng.choice(arrays), [1] * (fields.MAX_ARRAY_LEN + rng.randint(1, 1000)))
            return _dump(doc), ("reject", group, ["entries"])
    # a long text where text is allowed: accepted, and an error elsewhere still stays short
    g["description"] = "y" * rng.randint(10_000, 100_000)
    return _dump(doc), ("accept", ("count", None))


# ---------------------------------------------------------------- YAML that means one thing

# where an integer is meant: the rules, stated apart from the loader
_INT_KINDS = ("status", "allocated_dim", "described_dim", "attr:int64", "attr:int8", "attr:int_array", "check_int",
              "rank")


def _int_kind_of(doc, path):
    if path[0] == "signature" and "ranks" in path:
        return "rank"
    if path[0] == "checks":
        return "check_int"               # a check's status, limit or boundary
    return _int_kind(doc, path)


def _int_leaves(doc):
    """(path, value, kind) of every integer leaf that must stay an integer."""
    return [(p, v, k) for p, v in _walk(doc) if isinstance(v, int) and not isinstance(v, bool) and p
            for k in [_int_kind_of(doc, p)] if k in _INT_KINDS]


def _refusal(path, group, words):
    return ("reject", group if path[:1] == ("groups",) else None, words)


def integral_floats(rng, P):
    """2.0, 3., !!float 9, 4.0e+0 where an integer is meant: a float, whatever its value."""
    while True:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        leaves = _int_leaves(doc)
        if leaves:
            break
    path, value, _ = rng.choice(leaves)
    raw = rng.choice([f"{value}.0", f"{value}.", f"!!float {value}", f"{value}.0e+0", f"{value}.000"])
    _set(doc, path, SENTINEL)
    return _dump(doc).replace(SENTINEL, raw, 1), _refusal(path, group, [("integer", f"(write {value})")])


def _yaml11_int(rng, v: int) -> str:
    """v written in a form YAML 1.1 reads as v and YAML 1.2 does not (or in another base)."""
    forms = [f"0{v:o}" if v >= 0 else f"-0{-v:o}", f"0x{v:x}" if v >= 0 else f"-0x{-v:x}",
             f"0o{v:o}" if v >= 0 else f"{v}_0", str(v)[:1] + "_" + str(v)[1:] if abs(v) >= 10 else f"0{v}"]
    if v >= 60:
        forms.append(f"{v // 60}:{v % 60:02d}")                  # base 60
    return rng.choice(forms)


_YAML11_BOOLS = ["yes", "no", "on", "off", "Yes", "NO", "On", "OFF"]
_YAML11_FLOATS = ["1e3", "-.5", "1_0.5", "1:30.0", "2E-3", "1e400", "+.5e1", "6e0"]
_READINGS = ("YAML 1.2", "plain decimal")


def yaml11_forms(rng, P):
    """Forms YAML 1.1 and 1.2 read differently (octal, base 60, hex, 0o, underscores, yes/no/on/
    off, exponent-only floats): refused; the same text quoted is text and is kept."""
    name, piece, group = rng.choice(P.pieces)
    doc = _copy(piece)
    variant = rng.randrange(5)
    if variant == 0:
        leaves = _int_leaves(doc) or [(p, v, None) for p, v in _walk(doc) if isinstance(v, int) and p]
        if leaves:
            path, value, _ = rng.choice(leaves)
            _set(doc, path, SENTINEL)
            return _dump(doc).replace(SENTINEL, _yaml11_int(rng, value), 1), _refusal(path, group, [_READINGS])
    if variant == 1:                         # a boolean, or any text, written as yes/no/on/off
        leaves = [p for p, v in _walk(doc) if isinstance(v, (bool, str)) and p and p[-1] != "name"]
        path = rng.choice(leaves)
        _set(doc, path, SENTINEL)
        return _dump(doc).replace(SENTINEL, rng.choice(_YAML11_BOOLS), 1), _refusal(path, group, [_READINGS])
    if variant == 2:                         # a number written as only YAML 1.2 reads it
        leaves = [p for p, v in _walk(doc) if isinstance(v, (int, float)) and not isinstance(v, bool) and p]
        if leaves:
            path = rng.choice(leaves)
            _set(doc, path, SENTINEL)
            return _dump(doc).replace(SENTINEL, rng.choice(_YAML11_FLOATS), 1), _refusal(path, group, [_READINGS])
    if variant == 3:                         # a key YAML 1.1 reads as a boolean
        path, mapping = rng.choice(_mappings(doc))
        mapping[SENTINEL] = 1
        return _dump(doc).replace(SENTINEL, rng.choice(_YAML11_BOOLS), 1), \
            _refusal(path, group, [_READINGS])
    # quoted, each of them is text: a note keeps it as written
    text = rng.choice(_YAML11_BOOLS + _YAML11_FLOATS + ["011", "1:30", "0x10", "0o10", "y", "N", "~"])
    _note_holder(rng, doc)["note"] = SENTINEL
    quote = rng.choice(["'", '"'])
    return _dump(doc).replace(SENTINEL, quote + text + quote, 1), ("accept", ("note", text))


def _note_holder(rng, doc) -> dict:
    """Where a note reaches a case: a matrix group, or one scenario of an invalid group."""
    g = doc["groups"][0]
    return g if "matrix" in g else rng.choice(g["invalid"]["scenarios"])


def _statuses(doc):
    return [p for p, v in _walk(doc) if p[:1] == ("groups",) and "status" in p
            and (p[-1] == "status" or p[-2:-1] == ("status",))]


def status_types(rng, P):
    """A status that is text, a list, a boolean, a float, null or a mapping of anything but codes."""
    while True:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        paths = _statuses(doc) or ([("groups", 0, "status")] if "matrix" in doc["groups"][0] else [])
        if paths:
            break
    path = rng.choice(paths)
    bad = rng.choice(["161002", [161002], True, False, 161002.0, 0.0, None, [], {}, {"others": "0"},
                      {"others": [0]}, {"others": 1.5}, {"others": None}, {"others": {"a": 1}}, "0x10"])
    _set(doc, path, bad)
    return _dump(doc), ("reject", group, ["status"])


def _family_lists(doc):
    return [p for p, v in _walk(doc) if isinstance(v, list) and p and p[-1] == "families" and v]


def duplicate_families(rng, P):
    """A family listed twice: top level, group, scenario, deviation, check; or twice in a status map."""
    while True:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        lists, maps = _family_lists(doc), [p for p in _statuses(doc) if isinstance(_get(doc, p), dict)]
        if lists or maps:
            break
    if lists and (not maps or rng.random() < 0.8):
        path = rng.choice(lists)
        families = _get(doc, path)
        families.insert(rng.randrange(len(families) + 1), rng.choice(families))
        return _dump(doc), _refusal(path, group, ["listed twice"])
    path = rng.choice(maps)
    mapping = _get(doc, path)
    key = rng.choice(list(mapping))
    mapping[SENTINEL] = mapping[key]
    return _dump(doc).replace(SENTINEL, key, 1), _refusal(path, group, ["duplicate key", repr(key)])


def _ranks(doc, tensor: str) -> list[int]:
    return next(p["ranks"] for p in doc["signature"] if p["name"] == tensor)


def _wrong_rank(rng, ranks: list[int]) -> list[int]:
    rank = rng.choice([r for r in (0, 1, 2, 3, 4, 5, 6, 9, 16) if r not in ranks])
    return [rng.choice([1, 2, 3]) for _ in range(rank)]


def ranks_out_of_range(rng, P):
    """A prepared shape (matrix row, invalid base) of a rank the op cannot take: refused. A wrong
    rank described in a scenario's tensors: accepted, unless the scenario expects it to pass."""
    name, piece, group = rng.choice(P.pieces)
    doc = _copy(piece)
    g = doc["groups"][0]
    ranks = _ranks(doc, doc["output_like"])
    variant = rng.randrange(4)
    if "matrix" in g and variant < 2:
        i = rng.randrange(len(g["matrix"]["shape"]))
        g["matrix"]["shape"][i] = _wrong_rank(rng, ranks)
        return _dump(doc), ("reject", group, ["has rank", f"matrix.shape.{i}"])
    if "matrix" in g:
        return _dump(doc), ("accept", ("count", None))
    sc = rng.choice(g["invalid"]["scenarios"])
    if variant == 0:
        g["invalid"]["base"]["shape"] = _wrong_rank(rng, ranks)
        return _dump(doc), ("reject", group, ["has rank"])
    tensor = rng.choice([p["name"] for p in doc["signature"] if p["type"] == "tensor"])
    shape = _wrong_rank(rng, _ranks(doc, tensor))
    sc.setdefault("tensors", {}).setdefault(tensor, {})["shape"] = shape
    if variant == 1:                       # (its tensors may also contradict a status 0: either is said)
        sc["base"] = dict(sc.get("base") or {}, shape=_wrong_rank(rng, ranks))
        return _dump(doc), ("reject", group, [("has rank", "expected to pass")])
    if variant == 2:                       # described only: any rank, but it cannot pass
        sc.pop("check", None)
        sc.pop("families", None)
        sc["status"] = 0
        return _dump(doc), ("reject", group, ["expected to pass"])
    if sc.get("status") == 0 or (isinstance(sc.get("status"), dict) and 0 in sc["status"].values()):
        sc["status"] = 161002
        sc.pop("check", None)
    return _dump(doc), ("accept", ("tensor_shape", (tensor, shape)))


_UNSEEN = ["\\x07", "\\x1b[2J", "\\x00", "\\u202e", "\\u200b", "\\x85", "\\u2028", "\\x7f", "\\t", "\\r", "\\ufeff"]


def control_chars(rng, P):
    """Control and invisible characters (YAML double-quoted escapes): kept as they are in free text,
    refused in names; either way the error line itself is printable (_judge)."""
    name, piece, group = rng.choice(P.pieces)
    doc = _copy(piece)
    escapes = "".join(rng.choice(_UNSEEN) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.5:                 # a note: free text, kept
        _note_holder(rng, doc)["note"] = SENTINEL
        text = "before " + escapes + " after"
        value = text.encode().decode("unicode_escape")
        return _dump(doc).replace(SENTINEL, f'"{text}"', 1), ("accept", ("note", value))
    names = [p for p, v in _walk(doc) if isinstance(v, str) and p[:1] == ("groups",) and
             p[-1] in ("dtype", "index_dtype", "format", "layout", "values", "check", "null", "name") or
             (isinstance(v, str) and len(p) > 1 and p[-2] in ("dtype", "families", "format", "layout", "values"))]
    path = rng.choice(names)
    value = _get(doc, path)
    _set(doc, path, SENTINEL)
    renamed = path[-1] == "name" and len(path) == 3       # the error then names the group as renamed
    return _dump(doc).replace(SENTINEL, f'"{value}{escapes}"', 1), _refusal(path, None if renamed else group, [])


_OTHER_VALUES = [None, True, False, "text", 1.5, -0.0, float("nan"), float("inf"), [], {}, [1, 2], "float16",
                 "NCHW", "", "null", {"a": 1}, [[1]], 2 ** 31]


def other(rng, P):
    """Generic damage; no verdict is required except a clean one."""
    variant = rng.randrange(5)
    if variant == 0:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        path = rng.choice([p for p, _ in _walk(doc) if p])
        parent = _get(doc, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        return _dump(doc), ("any",)
    if variant == 1:
        name, piece, group = rng.choice(P.pieces)
        doc = _copy(piece)
        _set(doc, rng.choice([p for p, _ in _walk(doc) if p]), rng.choice(_OTHER_VALUES))
        return _dump(doc), ("any",)
    name, text, _ = rng.choice(P.files if rng.random() < 0.2 else
                                [(n, _dump(p), p) for n, p, _g in [rng.choice(P.pieces)]])
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(chars))
        if variant == 2:
            chars[pos] = rng.choice(":-[]{}#&*!|>'\"%@`, \t\n?0123456789")
        elif variant == 3:
            del chars[pos]
        else:
            chars.insert(pos, rng.choice(["&a ", "*a", "!!str ", "!!python/none ", "<<: ", "? ", "---\n",
                                          "\\u0000", "\x00", "\x1b", "\ufeff", "\r"]))
    return "".join(chars), ("any",)


CLASSES = {               # class -> (generator, mutants at scale 1)
    "alias_bomb": (alias_bomb, 110),
    "non_utf8": (non_utf8, 150),
    "deep_nesting": (deep_nesting, 110),
    "duplicate_keys": (duplicate_keys, 150),
    "unknown_keys": (unknown_keys, 170),
    "absurd_numbers": (absurd_numbers, 170),
    "huge": (huge, 20),
    "other": (other, 170),
    "integral_floats": (integral_floats, 120),
    "yaml11_forms": (yaml11_forms, 140),
    "status_types": (status_types, 110),
    "duplicate_families": (duplicate_families, 110),
    "ranks_out_of_range": (ranks_out_of_range, 120),
    "control_chars": (control_chars, 110),
}


# ---------------------------------------------------------------- running

def _check_accept(spec, cases) -> str | None:
    what, value = spec
    if what == "count":
        return None if cases else "no cases"
    if what == "tensor_dim":
        found = any(value in (ch.get("shape") or []) for c in cases if c.mutation
                    for ch in c.mutation.tensors.values())
    elif what == "tensor_shape":
        tensor, shape = value
        found = any(c.mutation and (c.mutation.tensors.get(tensor) or {}).get("shape") == shape for c in cases)
    elif what == "note":
        found = any(c.note == value for c in cases)
    else:
        found = any(value in (v if isinstance(v, list) else [v]) for c in cases for v in c.call_attrs.values())
    return None if found else f"accepted, but no case carries {value!r}"


def _judge(path: Path, expect, outcome) -> str | None:
    """None when the outcome is right, else what is wrong."""
    kind, value = outcome
    if kind == "crash":
        return value
    if kind == "rejected":
        err = value
        text = str(err)
        if "\n" in text or "\r" in text:
            return "error spans several lines"
        if not text.isprintable():
            return f"error holds non-printable characters: {ascii(text[:300])}"
        if len(text) > MAX_ERROR_LEN:
            return f"error is {len(text)} characters long"
        if not text.startswith(str(path)):
            return "error does not start with the file"
        if expect[0] == "accept":
            return f"legitimate mutant rejected: {text[:300]}"
        if expect[0] == "reject":
            _, group, words = expect
            if group is not None and err.group != group:
                return f"error names group {err.group!r}, not {group!r}: {text[:300]}"
            # a tuple of words: any one of them will do
            missing = [w for w in words if not (any(x in text for x in w) if isinstance(w, tuple) else w in text)]
            if missing:
                return f"error lacks {missing}: {text[:300]}"
        return None
    if expect[0] == "reject":
        return "nonsense accepted"
    if expect[0] == "accept":
        return _check_accept(expect[1], value)
    return None


def _load(path: Path):
    try:
        with call_limits.limited(CPU_LIMIT_S, HANG_LIMIT_S):
            _, cases = load_case_file(path)
        return "accepted", cases
    except CaseFileError as e:
        return "rejected", e
    except call_limits.Stopped as e:
        return "crash", f"no answer: stopped at {e.limit}"
    except BaseException as e:          # noqa: BLE001 - every other outcome is the finding
        if isinstance(e, KeyboardInterrupt):
            raise
        frame = traceback.extract_tb(e.__traceback__)[-1]
        return "crash", f"{type(e).__name__}: {str(e)[:200]} at {Path(frame.filename).name}:{frame.lineno}"


def _limit_address_space(extra_bytes: int) -> None:
    """Let a blow-up end as MemoryError in this process instead of starving the machine."""
    vm = next(int(ln.split()[1]) * 1024 for ln in Path("/proc/self/status").read_text().splitlines()
              if ln.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, resource.RLIM_INFINITY))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="casefuzz-") as tmp:
        work = Path(tmp) / "cases"
        work.mkdir()
        return fuzz(random.Random(args.seed), args.scale, work) | {"seed": args.seed}


def fuzz(rng: random.Random, scale: float, work: Path) -> dict:
    P = Pieces()
    stats = {"original": {"mutants": 0, "rejected": 0, "accepted": 0, "failures": 0, "examples": []}}
    slowest = (0.0, "")

    def run(cls, name, content, expect):
        nonlocal slowest
        s = stats.setdefault(cls, {"mutants": 0, "rejected": 0, "accepted": 0, "failures": 0, "seconds": 0.0,
                                   "examples": []})
        path = work / f"{name}.yaml"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        t0 = time.process_time()
        outcome = _load(path)
        dt = time.process_time() - t0
        s["seconds"] = round(s.get("seconds", 0) + dt, 3)
        if dt > slowest[0]:
            slowest = (dt, f"{cls}:{name}")
        s["mutants"] += 1
        problem = _judge(path, expect, outcome)
        if problem:
            s["failures"] += 1
            if len(s["examples"]) < 5:
                s["examples"].append(f"{name}: {problem}")
        elif outcome[0] in ("rejected", "accepted"):
            s[outcome[0]] += 1

    # every unmutated file and piece loads (and warms the caches before the baseline)
    for name, text, _ in P.files:
        run("original", name, text, ("accept", ("count", None)))
    for name, piece, _ in P.pieces:
        run("original", name, _dump(piece), ("accept", ("count", None)))
    _limit_address_space(2 << 30)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t_start = time.perf_counter()
    for cls, (make, count) in CLASSES.items():
        for i in range(max(1, round(count * scale))):
            content, expect = make(rng, P)
            run(cls, f"{cls}-{i}", content, expect)
    return {"classes": stats,
            "mutants": sum(s["mutants"] for c, s in stats.items() if c != "original"),
            "failures": sum(s["failures"] for s in stats.values()),
            "seconds": round(time.perf_counter() - t_start, 2),
            "slowest_load_cpu_s": round(slowest[0], 3), "slowest": slowest[1],
            "peak_rss_mb_before": rss_before // 1024,
            "peak_rss_mb_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1))
