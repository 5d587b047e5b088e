"""A case's inputs and golden, computed once: an on-disk cache keyed by all they depend on.

The key is a hash of the expanded case (everything that shapes its inputs: op, signature,
shape, dtypes, attributes, distribution, scenario changes, the case id its seeds come
from), the sources of its golden module and of the input drawing code, and the torch and
numpy versions. A changed case, golden or library therefore never reuses old data.
Each entry is one file, `<key>.bin`: a fixed prefix (magic, header length, XXH3-128 of
everything after the prefix), a JSON header (its key and case, what it holds, where each
tensor lies) and the tensors' raw bytes. No pickle: a cache filled on another host can hold
data, never code. `manifest.jsonl` lists every entry written. An entry that does not match
its checksum, names another key, or does not load is reported, recomputed and replaced,
never used. The checksum is there for damage (a torn copy, a bad disk, an edited byte): it
sits beside the data, so like any checksum stored there it proves nothing against someone
who rewrites both. XXH3 rather than SHA-256 or CRC-32, and the file mapped rather than
copied: a warm run checks every byte of every entry, and hashing and copying were most of
its time (benchmarks/bench_suite.py, step 3).

TTK's prepare/replay has no such manifest; this is the same two-stage workflow done
safely: `--prepare-only` fills the cache on a host without a device, a device host only
runs and compares.
"""
from __future__ import annotations

import functools
import hashlib
import json
import mmap
import os
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import xxhash

import golden as golden_pkg

from ..core import atomic, dtypes
from .. import inputs as inputs_mod
from ..inputs import preparation as prepare_mod, values as values_mod
from ..model import Case


@dataclass
class Materials:
    prepared: dict            # logical input tensors before an invalid scenario's changes
    expected: dict | None     # golden outputs (float64), when numerics are compared


def compute(case: Case, numerics: bool) -> Materials:
    prepared = inputs_mod.prepare(case)
    expected = None
    if numerics:
        inputs = inputs_mod.mutate(case, prepared)
        expected = golden_pkg.load(case.op.golden).golden(inputs, case.call_attrs)
    return Materials(prepared, expected)


@functools.lru_cache(maxsize=None)
def _code_digest(golden_name: str) -> str:
    """Sources the materials depend on: the op's golden module, the golden package's
    helpers, and the harness code that draws and prepares inputs."""
    h = hashlib.sha256()
    module = golden_pkg.load(golden_name)
    helpers = sorted(p for p in Path(module.__file__).parent.glob("_*.py"))
    for path in [Path(module.__file__), *helpers, Path(values_mod.__file__), Path(prepare_mod.__file__)]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(f"torch {torch.__version__} numpy {np.__version__} python {sys.version_info[:2]}".encode())
    return h.hexdigest()


def _distribution(d) -> dict:
    return {"name": d.name, "kind": d.kind, "params": d.params, "special": [d.special_fraction, list(d.special_values)],
            "tensors": {k: _distribution(v) for k, v in sorted(d.per_tensor.items())}}


_KEY_PARTS: dict[int, tuple[object, str]] = {}     # id(op or distribution) -> (it, its canonical JSON)


def _json_of(thing, make) -> str:
    """Canonical JSON of an operator's or a distribution's part of a key, made once per object
    (thousands of cases share a few of each; encoding them per case was a third of a warm run)."""
    hit = _KEY_PARTS.get(id(thing))
    if hit is None or hit[0] is not thing:      # the object is kept, so its id is not reused meanwhile
        hit = _KEY_PARTS[id(thing)] = (thing, json.dumps(make(thing), sort_keys=True, default=str))
    return hit[1]


def _op_spec(op) -> dict:
    return {"op": op.name, "golden": op.golden, "output_like": op.output_like,
            "params": [[p.name, p.type, p.dtype, p.output] for p in op.params]}


def case_key(case: Case) -> str:
    spec = {
        "id": case.id, "shape": list(case.shape), "dtype": case.dtype, "index_dtype": case.index_dtype,
        "attrs": case.attrs,
        "mutation": None if case.mutation is None else
        {"null": case.mutation.null, "tensors": case.mutation.tensors, "attrs": case.mutation.attrs},
    }
    text = "\0".join((_json_of(case.op, _op_spec), _json_of(case.values, _distribution),
                      json.dumps(spec, sort_keys=True, default=str), _code_digest(case.op.golden)))
    return hashlib.sha256(text.encode()).hexdigest()


class GoldenCache:
    """Materials by case key. Safe for several processes at once (xdist workers): every
    file is written under a temporary name and renamed into place."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._dir = os.fspath(self.dir)
        self.hits = self.misses = 0
        self.rejected: list[str] = []       # "case id: why" for entries found unusable

    def path(self, key: str) -> Path:
        return Path(self._path(key))

    def _path(self, key: str) -> str:
        # a string, not a Path: a warm run asks for a path per case, and pathlib's joins showed in its
        # profile (benchmarks/NOTES.md)
        return f"{self._dir}/{key[:2]}/{key}.bin"

    def get(self, case: Case, numerics: bool) -> Materials:
        """An entry without a golden serves only callers that need none (a status-only run);
        one that needs the golden recomputes and replaces it."""
        key = case_key(case)
        found = self._load(key, case)
        if found is not None and (found.expected is not None or not numerics):
            self.hits += 1
            return found
        self.misses += 1
        materials = compute(case, numerics)
        self._store(key, case, materials)
        return materials

    def _load(self, key: str, case: Case) -> Materials | None:
        try:
            raw = _map(self._path(key))
        except FileNotFoundError:
            return None
        try:
            return _decode(raw, key)
        except Exception as e:   # any damage: recompute, never use
            self.rejected.append(f"{case.id}: cache entry {key}.bin unusable ({type(e).__name__}: {e}); recomputed")
            return None

    def _store(self, key: str, case: Case, materials: Materials) -> None:
        path = self.path(key)
        path.parent.mkdir(exist_ok=True)
        info = {"key": key, "case_id": case.id, "format": _FORMAT, "golden": case.op.golden,
                "numerics": materials.expected is not None, "created": time.time(),
                "torch": torch.__version__, "numpy": np.__version__}
        raw = _encode(materials, info)
        atomic.write_bytes(path, raw)
        with (self.dir / "manifest.jsonl").open("a") as f:   # one short line per write: appends do not interleave
            f.write(json.dumps({**info, "bytes": len(raw)}) + "\n")


_FORMAT = "raw-2"
_MAGIC = b"ACLNNGC2"
_PREFIX = struct.Struct("<8sQ16s")     # magic, header length, XXH3-128 of header + body
_PARTS = ("prepared", "expected")
_ALIGN = 64


def _encode(materials: Materials, info: dict) -> bytes:
    """The prefix, a JSON header (info, then per tensor: part, name, torch dtype, shape, byte
    offset), then every tensor's bytes, 64-byte aligned. A dtype numpy lacks (bfloat16) is
    stored as the bit pattern of a signed integer of its width."""
    entries, blobs, offset = [], [], 0
    for part in _PARTS:
        for name, t in (getattr(materials, part) or {}).items():
            t = t.detach().cpu().contiguous()
            d = dtypes.from_torch(t.dtype)
            raw = (t if d.numpy_name else t.view(getattr(torch, f"int{d.bits}"))).numpy().tobytes()
            entries.append({"part": part, "name": name, "dtype": str(t.dtype).removeprefix("torch."),
                            "shape": list(t.shape), "offset": offset, "nbytes": len(raw)})
            pad = -len(raw) % _ALIGN
            blobs.append(raw + b"\0" * pad)
            offset += len(raw) + pad
    header = json.dumps({**info, "tensors": entries}).encode()
    header += b" " * (-(len(header) + _PREFIX.size) % _ALIGN)
    rest = header + b"".join(blobs)
    return _PREFIX.pack(_MAGIC, len(header), xxhash.xxh3_128_digest(rest)) + rest


def _map(path: str) -> memoryview:
    """The file mapped copy-on-write: the tensors are views of the page cache, writable
    without touching the file, and nothing is copied or zeroed first (for the slow tier's
    gigabytes that was most of a warm read)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY))


def _decode(raw: memoryview, key: str) -> Materials:
    if len(raw) < _PREFIX.size:
        raise ValueError(f"{len(raw)} bytes, shorter than the entry prefix")
    magic, n, digest = _PREFIX.unpack_from(raw)
    if magic != _MAGIC:
        raise ValueError(f"not an entry of format {_FORMAT!r}")
    if xxhash.xxh3_128_digest(raw[_PREFIX.size:]) != digest:
        raise ValueError("data does not match its checksum")
    header = json.loads(bytes(raw[_PREFIX.size:_PREFIX.size + n]))
    if header.get("key") != key:
        raise ValueError("entry names another key")
    body = raw[_PREFIX.size + n:]
    out: dict = {part: {} for part in _PARTS}
    for e in header["tensors"]:
        dtype = dtypes.lookup(e["dtype"])
        computed = dtypes.torch_of(dtype.name)
        # a dtype numpy lacks (bfloat16) was written as the bits of a signed integer of its width
        stored = computed if dtype.numpy_name else getattr(torch, f"int{dtype.bits}")
        if e["part"] not in out or e["offset"] + e["nbytes"] > len(body):
            raise ValueError(f"tensor {e['part']}.{e['name']} lies outside the entry")
        t = torch.frombuffer(body[e["offset"]:e["offset"] + e["nbytes"]], dtype=stored) if e["nbytes"] else \
            torch.empty(0, dtype=stored)
        t = t.reshape(e["shape"])
        out[e["part"]][e["name"]] = t if stored is computed else t.view(computed)
    return Materials(out["prepared"], out["expected"] if header["numerics"] else None)


def materials(case: Case, numerics: bool, cache: GoldenCache | None) -> Materials:
    return cache.get(case, numerics) if cache is not None else compute(case, numerics)
