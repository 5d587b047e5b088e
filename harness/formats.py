"""aclFormat names and enum values (spec acl_abi.md section 3.2)."""
from __future__ import annotations

FORMATS = {
    "UNDEFINED": -1, "NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4,
    "NC1HWC0_C04": 12, "HWCN": 16, "NDHWC": 27, "FRACTAL_NZ": 29, "NCDHW": 30,
    "NDC1HWC0": 32, "FRACTAL_Z_3D": 33, "NC": 35, "NCL": 47,
    "FRACTAL_NZ_C0_16": 50, "FRACTAL_NZ_C0_32": 51, "FRACTAL_NZ_C0_2": 52,
    "FRACTAL_NZ_C0_4": 53, "FRACTAL_NZ_C0_8": 54,
}

# Formats whose view dims put the channel last; an op opts in per case file
# (`channel_last_formats`) because only some ops read the dims in that order.
CHANNEL_LAST = {"NHWC": True, "NDHWC": True}


def lookup(name: str) -> int:
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"unknown format {name!r} (known: {', '.join(FORMATS)})") from None


def channel_last_perm(rank: int) -> tuple[int, ...]:
    """Permutation from logical channel-first dims to channel-last view dims.

    4-D (N,C,H,W) -> (N,H,W,C); 3-D (C,H,W) -> (H,W,C); 5-D (N,C,D,H,W) -> (N,D,H,W,C).
    """
    if rank == 3:
        return (1, 2, 0)
    if rank >= 4:
        return (0, *range(2, rank), 1)
    raise ValueError(f"no channel-last order for rank {rank}")
