"""Expanded case files kept between runs, so collection does not parse, validate and expand
every case file again in every pytest process (each xdist worker collects everything).

An entry is used only when its key matches: the file's path and bytes, the source of the case
model (harness/model, the dtype/format/family tables and the platform layer they read:
platforms/__init__.py and platform.yaml) and of what the vocabulary is made of
(the standards table, the golden module names, the backend names), and the Python version.
Anything unreadable or mismatched is recomputed and rewritten, never used. A file that does not
load is never cached: its error is raised again from the source each time.

The entries are pickles under build/casefiles/ (like build/swcann/, output of this checkout:
trusted as much as the checkout's own bytecode). ACLNN_CASE_CACHE=0 turns the cache off.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import stat
import sys
from pathlib import Path

import platforms

from ..core import atomic
from ..model import source

_HARNESS = Path(__file__).resolve().parents[1]
_ROOT = _HARNESS.parent
DIRECTORY = _ROOT / "build" / "casefiles"
_FORMAT = 2          # bump when the entry layout changes (2: DType and Family records, pickled by name)


@functools.lru_cache(maxsize=1)
def _code_key(vocabulary_facts: str) -> bytes:
    h = hashlib.sha256(f"{_FORMAT} {sys.version} {vocabulary_facts}".encode())
    sources = sorted((_HARNESS / "model").glob("*.py")) + sorted((_HARNESS / "model").glob("*.yaml"))
    sources += [_HARNESS / "core" / n for n in ("dtypes.py", "formats.py", "families.py", "errors.py")]
    sources += [_HARNESS / "judge" / "standards.yaml", platforms.PLATFORM_FILE, Path(platforms.__file__)]
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.digest()


def _entry(path: Path, vocabulary_facts: str) -> tuple[Path, bytes] | None:
    """The entry's file and key; None for what only the bounded reader may open (a FIFO would
    block a read here, a huge file would be read whole before the reader refuses it)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_size > source.MAX_BYTES:
        return None
    h = hashlib.sha256(_code_key(vocabulary_facts))
    h.update(str(path).encode() + b"\0" + path.read_bytes())
    key = h.digest()
    return DIRECTORY / f"{path.stem}-{key.hex()[:24]}.pickle", key


def load(path, vocabulary_facts: str, compute):
    """compute(path) -> (OpSpec, [Case]), or the entry a previous process stored for the same key."""
    path = Path(path).resolve()
    if os.environ.get("ACLNN_CASE_CACHE") == "0":
        return compute(path)
    try:
        found = _entry(path, vocabulary_facts)
    except OSError:
        found = None
    if found is None:
        return compute(path)                  # compute() refuses it in its own words
    entry, key = found
    try:
        with open(entry, "rb") as f:
            stored_key, value = pickle.load(f)
        if stored_key == key:
            return value
    except Exception:                          # absent, truncated, damaged, or from another layout
        pass
    value = compute(path)
    _store(entry, key, value)
    return value


def _store(entry: Path, key: bytes, value) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        for old in entry.parent.glob(f"{entry.name.rsplit('-', 1)[0]}-*.pickle"):
            if old != entry:
                old.unlink(missing_ok=True)   # this file's entries for older contents or code
        atomic.write_bytes(entry, pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass                                  # a read-only checkout: collection just is not cached
