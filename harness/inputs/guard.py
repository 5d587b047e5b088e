"""Guard bytes: what every byte of a buffer the library does not own holds before phase 2, and
the first place where phase 2 changed one.

An output's storage holds more than its view: elements before the view (a storage offset), the
gaps between the elements of a strided view, and spare elements after its last one. A kernel must
leave them alone. They are filled with an exact byte pattern and compared byte for byte after each
launch; a test for NaN (the view's own poison) would pass a kernel that stores NaN, or 0xFF garbage,
into memory it does not own. The workspace's tail guard (harness/backends/aclnn.py) uses the same.

The pattern is keyed by a hash of a seed (the case id and the buffer's name), so it differs from
case to case and from buffer to buffer: a kernel that copies a neighbour's fill is caught too.
Byte i of a buffer holds block[i % PERIOD]; with a prime period a copy shifted by any whole number
of elements, fewer than PERIOD, is compared with another part of the block. Every byte is 0x30-0x3F
or 0xB0-0xBF (bits 5 and 4 set, bit 6 clear), which makes the pattern unlike what a kernel stores
by accident:
  * no byte is 0x00 or 0xFF (cleared memory, an all-ones fill) or 0x7F/0x80;
  * whatever the width and alignment of a float element, its top byte has the exponent's top bit
    clear and the next one set: every fp16, bf16, fp32 and fp64 element is a finite normal number
    (never NaN, Inf, zero or subnormal), so a NaN anywhere outside the view is a change;
  * an integer element of 2 bytes or more is at least 12288 in magnitude (never 0, 1, -1 or an
    index), and a 1-byte one is 48..63 or -80..-65.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .layout import TensorArg

PERIOD = 4093       # prime
SHOWN = 8           # bytes of a damaged run a report quotes

from ..core.regions import AFTER_TAIL, BEFORE_VIEW, STRIDE_GAP, WORKSPACE_TAIL  # noqa: E402,F401 (re-exported)


_BASE = (np.frombuffer(hashlib.shake_256(b"aclnn guard bytes").digest(PERIOD), dtype=np.uint8) & 0x8F) | 0x30


class Pattern:
    """The guard bytes of one buffer, drawn from `seed`."""
    __slots__ = ("seed", "block", "_twice")

    def __init__(self, seed: str):
        # a fixed random block of PERIOD bytes keyed by the seed's 64-byte hash: one short hash per
        # buffer (a hash of all PERIOD bytes took half of a small case's guard time)
        key = np.frombuffer(hashlib.blake2b(seed.encode("utf-8")).digest(), dtype=np.uint8) & 0x8F
        self.seed = seed
        self.block = _BASE ^ np.tile(key, -(-PERIOD // len(key)))[:PERIOD]     # bits 6, 5, 4 stay as _BASE has them
        self._twice = np.concatenate((self.block, self.block))     # any PERIOD bytes are one slice of it
        self._twice.flags.writeable = False

    def at(self, start: int, count: int) -> np.ndarray:
        """The pattern's bytes for buffer bytes [start, start + count) (read-only for short spans)."""
        first = start % PERIOD
        if count <= PERIOD:
            return self._twice[first:first + count]
        return np.resize(self._twice[first:first + PERIOD], count)

    def sibling(self, name: str) -> Pattern:
        """The pattern of another buffer of the same case (its workspace)."""
        return Pattern(f"{self.seed}#{name}")

    def __repr__(self) -> str:
        return f"Pattern({self.seed!r})"


@dataclass(frozen=True)
class Damage:
    """The first guard byte a launch changed, and how many it changed in all."""
    region: str          # BEFORE_VIEW, STRIDE_GAP, AFTER_TAIL, WORKSPACE_TAIL
    offset: int          # of the first changed byte, from the start of the buffer
    found: bytes         # the run of changed bytes from there, at most SHOWN of them
    expected: bytes
    changed: int         # guard bytes changed, in every region of the buffer
    more: bool = False   # the run of changed bytes goes on after the bytes quoted

    def __str__(self) -> str:
        more = " ..." if self.more else ""
        return (f"{self.region} at byte {self.offset}: found {self.found.hex(' ')}{more}, expected "
                f"{self.expected.hex(' ')}{more} ({self.changed} guard byte{'s' if self.changed != 1 else ''} changed)")


def _bytes(storage) -> np.ndarray:
    """The flat storage's bytes, as a numpy view of the same memory."""
    import torch
    return storage.view(torch.uint8).numpy()


def _gaps(arg: TensorArg, first: int, last: int) -> np.ndarray:
    """One bool per storage element from `first` to `last`: True where the view has none."""
    outside = np.ones(last - first + 1, dtype=bool)
    np.lib.stride_tricks.as_strided(outside, shape=arg.dims, strides=arg.strides, writeable=True)[...] = False
    return outside


def _regions(arg: TensorArg):
    """(region, first byte, end byte, mask or None) of every storage span outside the view; a mask
    (one bool per element of the span, shape (n, 1)) marks the elements outside the view where the
    span holds some of it."""
    item = arg.storage.element_size()
    total = arg.storage.numel() * item
    span = arg.extent()
    if span is None:        # no element: everything before the offset, then everything after it
        cut = min(arg.offset * item, total)
        return [(BEFORE_VIEW, 0, cut, None), (AFTER_TAIL, cut, total, None)]
    first, last = span[0] * item, (span[1] + 1) * item
    regions = [(BEFORE_VIEW, 0, first, None)]
    if not arg.dense:
        regions.append((STRIDE_GAP, first, last, _gaps(arg, *span)[:, None]))
    regions.append((AFTER_TAIL, last, total, None))
    return [r for r in regions if r[2] > r[1]]


def lay(arg: TensorArg, pattern: Pattern) -> None:
    """Write `pattern` into every storage byte of `arg` outside its view (the view's own bytes are
    left as they are) and keep it as `arg.guard`, for damage() after the launch."""
    data = _bytes(arg.storage)
    for _, start, stop, mask in _regions(arg):
        expected = pattern.at(start, stop - start)
        if mask is None:
            data[start:stop] = expected
        else:
            np.copyto(data[start:stop].reshape(len(mask), -1), expected.reshape(len(mask), -1), where=mask)
    arg.guard = pattern


def first_change(region: str, found: np.ndarray, expected: np.ndarray, base: int = 0,
                 mask: np.ndarray | None = None) -> Damage | None:
    """Where `found` (a buffer's bytes from byte `base` on) differs from `expected`, only in the
    elements `mask` (shape (elements, 1)) marks when given; None where every byte is as laid."""
    differs = found != expected
    if mask is not None:
        differs = (differs.reshape(len(mask), -1) & mask).reshape(-1)
    changed = int(np.count_nonzero(differs))
    if not changed:
        return None
    at = int(np.argmax(differs))
    end = min(at + SHOWN, len(found))
    if not differs[at:end].all():       # quote the run of changed bytes (never the view's bytes after it)
        end = at + int(np.argmin(differs[at:end]))
    more = end < len(found) and bool(differs[end])
    return Damage(region, base + at, found[at:end].tobytes(), expected[at:end].tobytes(), changed, more)


def damage(arg: TensorArg) -> Damage | None:
    """The first byte outside `arg`'s view that no longer holds the pattern lay() wrote, by offset
    (`changed` counts every region); None when all are intact."""
    if arg.guard is None:
        raise ValueError(f"{arg.name}: no guard pattern was laid in this buffer (guard.lay)")
    data = _bytes(arg.storage)
    first, changed = None, 0
    for region, start, stop, mask in _regions(arg):
        found = first_change(region, data[start:stop], arg.guard.at(start, stop - start), start, mask)
        if found is not None:
            first = first or found
            changed += found.changed
    return None if first is None else replace(first, changed=changed)
