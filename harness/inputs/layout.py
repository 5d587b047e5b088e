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

from .. import formats
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


def _place(values: torch.Tensor, layout: str) -> tuple[torch.Tensor, tuple, int]:
    """Lay `values` (device-order dims) out in a fresh flat storage; return (storage, strides, offset)."""
    dims = tuple(values.shape)
    n = values.numel()
    if layout == "contiguous":
        strides, offset, size = torch.empty(dims).stride() if dims else (), 0, n
    elif layout == "offset":
        strides, offset, size = torch.empty(dims).stride() if dims else (), _OFFSET, n + _OFFSET
    elif layout == "channels_last":
        strides, offset, size = _channels_last_strides(dims), 0, n
    elif layout == "strided":
        # every dim gets a gap: innermost stride 2, outer strides leave a spare row
        strides, step = [0] * len(dims), 2
        for axis in reversed(range(len(dims))):
            strides[axis] = step
            step = step * max(dims[axis], 1) + 1
        strides, offset = tuple(strides), _OFFSET
        size = offset + (sum((d - 1) * s for d, s in zip(dims, strides)) + 1 if n else 0)
    else:
        raise ValueError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    storage = torch.zeros(max(size, 1) if n else size, dtype=values.dtype)
    if n:
        torch.as_strided(storage, dims, strides, offset).copy_(values)
    return storage, tuple(strides), offset


def materialize(name: str, logical: torch.Tensor, fmt: str, layout: str,
                channel_last: bool = False, is_output: bool = False) -> TensorArg:
    """Build the TensorArg for a logical tensor.

    `channel_last` says the op reads this format's dims in channel-last order
    (e.g. MaxPool2dWithIndicesBackward with NHWC on Ascend950): then the device
    dims are the permuted logical dims.
    """
    perm = formats.channel_last_perm(logical.dim()) if channel_last else None
    device_order = logical.permute(*perm) if perm else logical
    storage, strides, offset = _place(device_order, layout)
    return TensorArg(name, fmt, tuple(device_order.shape), strides, offset, storage, perm, is_output)
