"""The format-label rules of the generic L0 operators every pooling API calls after its own checks
(shared/spec/l0_format_rules.md): ReFormat (R1), ViewCopy (R2) and TransData (R3).

They read only a tensor's format label against its view rank, and run after the API's L2 checks
and its empty-tensor return (so each op places them after those rules). Rule ids are `L0.R<n>`,
with a suffix where one rule is reached on several code paths with different statuses
(AvgPool2d), or on another tensor (`.inputs`: the relabel of the inputs before the kernel).
"""
from __future__ import annotations

from .._phase1 import Call

# TD:48 -- the formats with a fixed rank; ND, FRACTAL_NZ and any other label have none and are
# never refused by ReFormat
FIXED_RANK = {"NCL": 3, "NCHW": 4, "NHWC": 4, "HWCN": 4, "FRACTAL_Z": 4, "NCDHW": 5, "NDHWC": 5, "DHWCN": 5,
              "NC1HWC0": 5, "NDC1HWC0": 6}

# These two tables restate harness/core/formats.py's FIXED_RANK and CALLER_LABELS on purpose: the
# models are written from the spec alone and import nothing of the harness (an import contract).
# What torch_npu / op-plugin pass for a tensor in a base format: the label of its rank, ND for any
# other rank (op_api_common.cpp:918-929, l0_format_rules.md section 3)
RANK_LABEL = {3: "NCL", 4: "NCHW", 5: "NCDHW"}


def caller_label(rank: int) -> str:
    """The label a real caller (torch_npu, op-plugin, MindSpore) gives a tensor of `rank`."""
    return RANK_LABEL.get(rank, "ND")


def reformat_refuses(label: str, rank: int) -> bool:
    """R1 (TD:141-161): ReFormat to `label` of a view of `rank` returns nullptr when the label
    has a fixed rank and the view's rank differs."""
    fixed = FIXED_RANK.get(label)
    return fixed is not None and fixed != rank


def viewcopy_refuses(result_label: str, out_label: str) -> bool:
    """R2 (CT:647-653): the final copy refuses a result whose label differs from the output's,
    unless the result is ND."""
    return result_label != "ND" and result_label != out_label


def rank(call: Call, name: str) -> int | None:
    t = call.tensors.get(name)
    return None if t is None else t.rank


def result_relabel_refused(call: Call, name: str) -> bool:
    """R1(b): the kernel result, squeezed back, is relabelled with `name`'s own label; refused when
    that label does not fit `name`'s rank. A NULL tensor is no refusal here."""
    t = call.tensors.get(name)
    return t is not None and reformat_refuses(t.format, t.rank)


def ranks_differ_from(call: Call, ref: str, *others: str) -> bool:
    """R1(a) after an unsqueeze: an input relabelled to the rank of `ref`'s layout fails when its
    rank differs from `ref`'s (NULL tensors are left to the NULL checks)."""
    r = rank(call, ref)
    return r is not None and any((o := rank(call, n)) is not None and o != r for n in others)
