"""The digest of an output: what records carry, what a nightly compare diffs, and what a standalone C
reproducer prints, so all three can be matched byte for byte.

SHA-256 over the output view's elements in the order of the view dims as described to
aclCreateTensor (device order: an NHWC tensor's elements in N, H, W, C order), each element's raw bytes
as stored (little endian). Strides, the offset and the bytes in stride gaps do not count: two libraries
that write the same values into the view have the same digest whatever the layout.
"""
from __future__ import annotations

import hashlib

import torch

PREFIX = "sha256:"


def of_view(storage: torch.Tensor, dims, strides, offset: int) -> str:
    # flattened first: torch calls a view contiguous whatever the strides of its size-1 dims, and
    # keeps them, so a channels-last view with a last dim of 1 would refuse the byte view
    view = torch.as_strided(storage, tuple(dims), tuple(strides), int(offset)).contiguous().reshape(-1)
    if view.numel() == 1:       # one element is contiguous whatever its stride: give it stride 1
        view = view.clone(memory_format=torch.contiguous_format)
    data = view.view(torch.uint8) if view.numel() else view
    return PREFIX + hashlib.sha256(data.numpy().tobytes() if view.numel() else b"").hexdigest()


def of_arg(arg) -> str:
    """The digest of a TensorArg's view (harness/inputs/layout.py)."""
    return of_view(arg.storage, arg.dims, arg.strides, arg.offset)
