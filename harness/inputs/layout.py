"""How a logical tensor is laid out in memory and described to the device.

A case gives each tensor a logical value (channel-first, e.g. NCHW) plus a
format label and a memory layout. `materialize` turns that into a TensorArg:
one flat storage buffer and the view (dims, element strides, offset) that
aclCreateTensor receives, plus a torch view onto the same storage so the torch
backend computes on exactly the same memory arrangement.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core import dtypes, formats
from ..model.spec import LAYOUTS

# Extra elements before the first element for the layouts that use an offset:
# odd on purpose, so that an offset in bytes vs elements confusion shows up.
_OFFSET = 3


@dataclass
class TensorArg:
    name: str
    format: str                  # ACL format label
    dims: tuple[int, ...]        # view dims as the device sees them (format order)
    strides: tuple[int, ...]     # element strides of those dims
    offset: int                  # element offset of the first element in storage
    storage: torch.Tensor        # flat, contiguous buffer holding the view
    perm: tuple[int, ...] | None  # logical dim i = device dim perm.index(i); None = identity
    is_output: bool = False
    unbacked: bool = False       # a descriptor over a tiny storage: phase 1 only, never a kernel
    # outputs: the guard.Pattern every storage byte outside the view holds (guard.lay; guard.py
    # reads TensorArgs, so it is not imported here)
    guard: object | None = None

    @property
    def device_view(self) -> torch.Tensor:
        return torch.as_strided(self.storage, self.dims, self.strides, self.offset)

    @property
    def logical(self) -> torch.Tensor:
        """The tensor in logical (channel-first) dim order, sharing storage."""
        view = self.device_view
        if self.perm is None:
            return view
        inverse = [self.perm.index(i) for i in range(len(self.perm))]
        return view.permute(*inverse)

    def extent(self) -> tuple[int, int] | None:
        """(first, last) storage element the view covers, or None when it has no element. The
        layouts here never use a negative stride, so the view starts at its offset."""
        if any(int(d) == 0 for d in self.dims):
            return None
        return self.offset, self.offset + sum((int(d) - 1) * int(s) for d, s in zip(self.dims, self.strides))

    @property
    def dense(self) -> bool:
        """No storage element between the view's first and last is left out (no stride gaps)."""
        span = self.extent()
        n = 1
        for d in self.dims:
            n *= int(d)
        return span is None or span[1] - span[0] + 1 == n

    def covered(self) -> torch.Tensor:
        """Bool mask over storage: True where the view has an element."""
        mask = torch.zeros(self.storage.numel(), dtype=torch.bool)
        torch.as_strided(mask, self.dims, self.strides, self.offset).fill_(True)
        return mask


def _channels_last_strides(dims) -> tuple[int, ...]:
    """Strides of a channel-first view whose memory is channel-last (torch channels_last)."""
    rank = len(dims)
    if rank < 3:
        return torch.empty(dims).stride()
    order = formats.channel_last_perm(rank)          # memory order, outermost first
    strides = [0] * rank
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= max(int(dims[axis]), 1)
    return tuple(strides)


def _contiguous_strides(dims) -> tuple[int, ...]:
    """Row-major element strides, computed without allocating (dims may be huge or negative)."""
    strides, step = [0] * len(dims), 1
    for axis in reversed(range(len(dims))):
        strides[axis] = step
        step *= max(int(dims[axis]), 1)
    return tuple(strides)


def _geometry(dims: tuple, layout: str) -> tuple[tuple, int, int]:
    """(element strides, offset, storage elements) of `layout` for device-order `dims`."""
    n = 1
    for d in dims:
        n *= max(int(d), 0)
    if layout == "contiguous":
        return _contiguous_strides(dims), 0, n
    if layout == "offset":
        return _contiguous_strides(dims), _OFFSET, n + _OFFSET
    if layout == "channels_last":
        return _channels_last_strides(dims), 0, n
    if layout == "strided":
        # every dim gets a gap: innermost stride 2, outer strides leave a spare row
        strides, step = [0] * len(dims), 2
        for axis in reversed(range(len(dims))):
            strides[axis] = step
            step = step * max(int(dims[axis]), 1) + 1
        size = _OFFSET + (sum((d - 1) * s for d, s in zip(dims, strides)) + 1 if n else 0)
        return tuple(strides), _OFFSET, size
    raise ValueError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")


def _place(values: torch.Tensor, layout: str, guard: int = 0) -> tuple[torch.Tensor, tuple, int]:
    """Lay `values` (device-order dims) out in a fresh flat storage; return (storage, strides, offset).
    `guard` spare elements follow the view's last element (poisoned by the caller for outputs)."""
    dims = tuple(values.shape)
    n = values.numel()
    strides, offset, size = _geometry(dims, layout)
    storage = torch.zeros((max(size, 1) + guard) if n else size + guard, dtype=values.dtype)
    if n:
        torch.as_strided(storage, dims, strides, offset).copy_(values)
    return storage, tuple(strides), offset


def _device_order(shape: tuple, channel_last: bool) -> tuple[tuple, tuple | None]:
    perm = formats.channel_last_perm(len(shape)) if channel_last else None
    return (tuple(shape[i] for i in perm) if perm else tuple(shape)), perm


@dataclass(frozen=True)
class Unbacked:
    """An input that exists only as a descriptor: a shape (possibly huge or negative) and a dtype
    (possibly one torch cannot hold). Phase 1 never reads tensor data, so such a tensor can
    reach a phase-1 check without the memory its shape would need."""
    shape: tuple
    dtype: str                    # case-file dtype name

    @staticmethod
    def needed(shape, dtype: str) -> bool:
        """True when `shape`/`dtype` cannot (or should not) be given real memory."""
        n, strided = 1, 1
        for d in shape:
            n *= int(d)
            strided *= max(int(d), 1)
        # an empty shape whose other dims multiply past int64: torch cannot compute its strides
        return (any(int(d) < 0 for d in shape) or n > UNBACKED_ELEMENTS or strided >= 1 << 63
                or not dtypes.lookup(dtype).torch_name)


# Tensors larger than this are described, never allocated (a phase-1 size-limit check needs the shape only).
UNBACKED_ELEMENTS = 1 << 24
_UNBACKED_STORAGE = 64        # bytes behind an unbacked descriptor: a real, tiny, aligned buffer


def unbacked(name: str, u: Unbacked, fmt: str, layout: str, channel_last: bool = False,
             is_output: bool = False) -> TensorArg:
    """A TensorArg describing `u` over a tiny storage, as CANN's own unit tests create tensors whose
    shape is far beyond memory. Its `unbacked` flag tells backends never to launch a kernel on it."""
    dims, perm = _device_order(tuple(int(d) for d in u.shape), channel_last)
    strides, offset, _ = _geometry(dims, layout)
    storage = torch.zeros(_UNBACKED_STORAGE, dtype=torch.uint8)
    return TensorArg(name, fmt, dims, strides, offset, storage, perm, is_output, unbacked=True)


def materialize(name: str, logical: torch.Tensor, fmt: str, layout: str,
                channel_last: bool = False, is_output: bool = False, guard: int = 0) -> TensorArg:
    """Build the TensorArg for a logical tensor.

    `channel_last` says the op reads this format's dims in channel-last order
    (e.g. MaxPool2dWithIndicesBackward with NHWC on Ascend950): then the device
    dims are the permuted logical dims.
    """
    perm = formats.channel_last_perm(logical.dim()) if channel_last else None
    device_order = logical.permute(*perm) if perm else logical
    storage, strides, offset = _place(device_order, layout, guard)
    return TensorArg(name, fmt, tuple(device_order.shape), strides, offset, storage, perm, is_output)
