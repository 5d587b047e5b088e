"""The one table of aclFormat names and enum values (spec acl_abi.md section 3.2)."""
from __future__ import annotations

# case-file name -> (aclFormat constant, enum value).
# ACL_FRACTAL_Z_3D really has no FORMAT_ in its name.
TABLE = {
    "UNDEFINED": ("ACL_FORMAT_UNDEFINED", -1), "NCHW": ("ACL_FORMAT_NCHW", 0),
    "NHWC": ("ACL_FORMAT_NHWC", 1), "ND": ("ACL_FORMAT_ND", 2),
    "NC1HWC0": ("ACL_FORMAT_NC1HWC0", 3), "FRACTAL_Z": ("ACL_FORMAT_FRACTAL_Z", 4),
    "NC1HWC0_C04": ("ACL_FORMAT_NC1HWC0_C04", 12), "HWCN": ("ACL_FORMAT_HWCN", 16),
    "NDHWC": ("ACL_FORMAT_NDHWC", 27), "FRACTAL_NZ": ("ACL_FORMAT_FRACTAL_NZ", 29),
    "NCDHW": ("ACL_FORMAT_NCDHW", 30), "NDC1HWC0": ("ACL_FORMAT_NDC1HWC0", 32),
    "FRACTAL_Z_3D": ("ACL_FRACTAL_Z_3D", 33), "NC": ("ACL_FORMAT_NC", 35), "NCL": ("ACL_FORMAT_NCL", 47),
    "FRACTAL_NZ_C0_16": ("ACL_FORMAT_FRACTAL_NZ_C0_16", 50), "FRACTAL_NZ_C0_32": ("ACL_FORMAT_FRACTAL_NZ_C0_32", 51),
    "FRACTAL_NZ_C0_2": ("ACL_FORMAT_FRACTAL_NZ_C0_2", 52), "FRACTAL_NZ_C0_4": ("ACL_FORMAT_FRACTAL_NZ_C0_4", 53),
    "FRACTAL_NZ_C0_8": ("ACL_FORMAT_FRACTAL_NZ_C0_8", 54),
}

FORMATS = {name: value for name, (_, value) in TABLE.items()}

# The label real callers give a tensor in a base format: torch_npu / op-plugin's ConvertType tags it
# by its rank alone (op_api_common.cpp:918-929; shared/spec/l0_format_rules.md section 3), ND for any
# other rank. A case file that names no format gets these labels, tensor by tensor.
CALLER_LABELS = {3: "NCL", 4: "NCHW", 5: "NCDHW"}
CALLER = "CALLER"       # a case file's word for "the label callers give this tensor's rank"

# ReFormat's fixed-rank formats (l0_format_rules.md R1, TD:48): a label here on a view of another
# rank is refused by the generic L0 operators; ND and the rest have no fixed rank.
FIXED_RANK = {"NCL": 3, "NCHW": 4, "NHWC": 4, "HWCN": 4, "FRACTAL_Z": 4, "NCDHW": 5, "NDHWC": 5, "DHWCN": 5,
              "NC1HWC0": 5, "NDC1HWC0": 6}


def caller_label(rank: int) -> str:
    """The label torch_npu / op-plugin / MindSpore pass for a tensor of `rank`."""
    return CALLER_LABELS.get(rank, "ND")


def fits_rank(label: str, rank: int) -> bool:
    """Whether the L0 ReFormat takes `label` on a view of `rank` (a label without a fixed rank fits any)."""
    return FIXED_RANK.get(label, rank) == rank


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
