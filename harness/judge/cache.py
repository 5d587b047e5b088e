"""A case's inputs and golden, computed once: an on-disk cache keyed by all they depend on.

The key is a hash of the expanded case (everything that shapes its inputs: op, signature,
shape, dtypes, attributes, distribution, scenario changes, the case id its seeds come
from), the sources of its golden module and of the input drawing code, and the torch and
numpy versions. A changed case, golden or library therefore never reuses old data.
Each entry is `<key>.bin` (a JSON header and the tensors' raw bytes, no pickle: a cache filled
on another host can hold data, never code) plus `<key>.json` (the data's size and CRC-32, what it
holds);
`manifest.jsonl` lists every entry written. An entry whose data does not match its
size and CRC-32, or that does not load, is reported, recomputed and replaced, never used. The
checksum is there for damage (a torn copy, a bad disk, an edited byte): it sits beside the data,
so like any checksum stored there it proves nothing against someone who rewrites both. CRC-32
rather than SHA-256: a warm run reads every entry, and hashing was most of its time.

TTK's prepare/replay has no such manifest; this is the same two-stage workflow done
safely: `--prepare-only` fills the cache on a host without a device, a device host only
runs and compares.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import golden as golden_pkg

from .. import dtypes, inputs as inputs_mod
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


def case_key(case: Case) -> str:
    spec = {
        "id": case.id, "op": case.op.name, "golden": case.op.golden, "output_like": case.op.output_like,
        "params": [[p.name, p.type, p.dtype, p.output] for p in case.op.params],
        "shape": list(case.shape), "dtype": case.dtype, "index_dtype": case.index_dtype, "attrs": case.attrs,
        "values": _distribution(case.values),
        "mutation": None if case.mutation is None else
        {"null": case.mutation.null, "tensors": case.mutation.tensors, "attrs": case.mutation.attrs},
        "code": _code_digest(case.op.golden),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def _atomic_write(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class GoldenCache:
    """Materials by case key. Safe for several processes at once (xdist workers): every
    file is written under a temporary name and renamed into place."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.hits = self.misses = 0
        self.rejected: list[str] = []       # "case id: why" for entries found unusable

    def paths(self, key: str) -> tuple[Path, Path]:
        sub = self.dir / key[:2]
        return sub / f"{key}.bin", sub / f"{key}.json"

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
        data, meta = self.paths(key)
        if not meta.is_file():
            return None
        try:
            info = json.loads(meta.read_text())
            if info.get("key") != key:
                raise ValueError("entry names another key")
            if info.get("format") != _FORMAT:
                raise ValueError(f"entry format {info.get('format')!r}, this harness reads {_FORMAT!r}")
            raw = _read_whole(data)
            if len(raw) != info.get("bytes") or zlib.crc32(raw) != info.get("crc32"):
                raise ValueError("data does not match its size and CRC-32")
            return _decode(raw)
        except Exception as e:   # any damage: recompute, never use
            self.rejected.append(f"{case.id}: cache entry {data.name} unusable ({type(e).__name__}: {e}); recomputed")
            return None

    def _store(self, key: str, case: Case, materials: Materials) -> None:
        data, meta = self.paths(key)
        data.parent.mkdir(exist_ok=True)
        raw = _encode(materials)
        _atomic_write(data, lambda f: f.write(raw))
        info = {"key": key, "case_id": case.id, "format": _FORMAT,
                "crc32": zlib.crc32(raw), "bytes": len(raw),
                "golden": case.op.golden, "numerics": materials.expected is not None, "created": time.time(),
                "torch": torch.__version__, "numpy": np.__version__}
        _atomic_write(meta, lambda f: f.write(json.dumps(info).encode()))
        with (self.dir / "manifest.jsonl").open("a") as f:   # one short line per write: appends do not interleave
            f.write(json.dumps(info) + "\n")


_FORMAT = "raw-1"
_PARTS = ("prepared", "expected")
_ALIGN = 64
_LEN = struct.Struct("<Q")


def _encode(materials: Materials) -> bytes:
    """One file: the length of a JSON header, the header (per tensor: part, name, torch dtype,
    shape, byte offset), then every tensor's bytes. bfloat16, which numpy lacks, is stored as
    its int16 bit pattern. No pickle: an entry from another host can hold data, never code."""
    entries, blobs, offset = [], [], 0
    for part in _PARTS:
        for name, t in (getattr(materials, part) or {}).items():
            t = t.detach().cpu().contiguous()
            raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
            entries.append({"part": part, "name": name, "dtype": str(t.dtype).removeprefix("torch."),
                            "shape": list(t.shape), "offset": offset, "nbytes": len(raw)})
            pad = -len(raw) % _ALIGN
            blobs.append(raw + b"\0" * pad)
            offset += len(raw) + pad
    header = json.dumps({"tensors": entries, "expected": materials.expected is not None}).encode()
    header += b" " * (-(len(header) + _LEN.size) % _ALIGN)
    return _LEN.pack(len(header)) + header + b"".join(blobs)


def _read_whole(path: Path) -> bytearray:
    """The file in one writable buffer (the tensors are views of it: no second copy)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = bytearray(size)
        if f.readinto(buf) != size:
            raise ValueError("short read")
    return buf


def _decode(raw: bytearray) -> Materials:
    (n,) = _LEN.unpack_from(raw)
    header = json.loads(bytes(raw[_LEN.size:_LEN.size + n]))
    body = memoryview(raw)[_LEN.size + n:]
    out: dict = {part: {} for part in _PARTS}
    for e in header["tensors"]:
        dtype = dtypes.lookup(e["dtype"])
        stored = torch.int16 if e["dtype"] == "bfloat16" else dtype.torch
        if e["part"] not in out or e["offset"] + e["nbytes"] > len(body):
            raise ValueError(f"tensor {e['part']}.{e['name']} lies outside the entry")
        t = torch.frombuffer(body[e["offset"]:e["offset"] + e["nbytes"]], dtype=stored) if e["nbytes"] else \
            torch.empty(0, dtype=stored)
        out[e["part"]][e["name"]] = t.reshape(e["shape"]).view(dtype.torch)
    return Materials(out["prepared"], out["expected"] if header["expected"] else None)


def materials(case: Case, numerics: bool, cache: GoldenCache | None) -> Materials:
    return cache.get(case, numerics) if cache is not None else compute(case, numerics)
