"""The rule shapes that recur in the ops' section B, as Rule factories, and the facts they share.

Each factory returns a `Rule` whose function answers None (go on), a status, or SUCCESS for an
early return. Rules read only the Call, never another rule's result, so a test may drop or swap
any of them; a rule that meets a value an earlier check would have rejected (a NULL tensor, a list
of the wrong length) lets the call go on rather than raise.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .._phase1 import INNER_NULLPTR, INVALID, NULLPTR, SUCCESS, Call, Rule, TensorDesc

# SoC family -> the NpuArch the code switches on (spec README "SoC families"). A name not in the
# table is an arch the ops' switches do not list: their "any other arch" branch.
ARCH = {"ascend910b": "DAV_2201", "ascend910_93": "DAV_2201", "ascend950": "DAV_3510",
        "ascend910": "DAV_1001", "ascend310p": "DAV_2002", "ascend310b": "DAV_3002"}
FAMILIES = tuple(ARCH)

# opbase's IsPrivateFormat list, as the ops' private-format checks quote it
PRIVATE_FORMATS = frozenset({
    "NC1HWC0", "FRACTAL_Z", "NDC1HWC0", "FRACTAL_Z_3D", "FRACTAL_NZ", "NC1HWC0_C04",
    "FRACTAL_NZ_C0_2", "FRACTAL_NZ_C0_4", "FRACTAL_NZ_C0_8", "FRACTAL_NZ_C0_16", "FRACTAL_NZ_C0_32"})

INT32_MAX = 2**31 - 1

# Not a status: phase 1 writes through a NULL workspaceSize/executor pointer the op never checks
# (MaxPool2d, MaxPool3d, AdaptiveMaxPool2d: "not null-checked; passing nullptr would crash"). The
# spec gives no status to assert there (policy 2); a caller compares nothing but "no status".
UNDEFINED = -1
STATUSES = frozenset({SUCCESS, NULLPTR, INVALID, INNER_NULLPTR, UNDEFINED})     # every answer a model gives


def is_regbase(family: str) -> bool:
    """aclnn_util.h's IsRegbase: true for DAV_3510 (the 950 family) only."""
    return ARCH.get(family) == "DAV_3510"


# ------------------------------------------------------------------ reading a Call

def tensor(call: Call, name: str) -> TensorDesc | None:
    return call.tensors.get(name)


def int_array(call: Call, name: str) -> tuple[int, ...] | None:
    """An aclIntArray attribute as a tuple of ints; None for a NULL (or absent) pointer."""
    value = call.attrs.get(name)
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return (int(value),)


def is_null(call: Call, name: str) -> bool:
    """A tensor or array argument passed as NULL (an argument the Call lacks counts as NULL)."""
    if name in call.tensors:
        return call.tensors[name] is None
    return call.attrs.get(name) is None


def is_empty(desc: TensorDesc) -> bool:
    """opbase's IsEmpty: the element count is 0, i.e. some view dim is 0."""
    return any(d == 0 for d in desc.dims)


def per_axis(values: tuple[int, ...] | None, n: int) -> tuple[int, ...] | None:
    """An attribute list expanded to n axes the way the ops read it: one value for every axis,
    else its first n values. A shorter list (which its length check rejects) gives only the
    values there are, so a rule run before that check still sees them."""
    if values is None:
        return None
    return values * n if len(values) == 1 else values[:n]


# ------------------------------------------------------------------ rule factories

def not_null(rule_id: str, *names: str) -> Rule:
    """161001 when any of the named tensors or arrays is NULL (checked in the order given)."""
    def run(call, family, scratch):
        return NULLPTR if any(is_null(call, n) for n in names) else None
    return Rule(rule_id, run)


def dtype_in(rule_id: str, name: str, allowed: Callable[[str], Iterable[str]]) -> Rule:
    """161002 when the tensor's dtype is not in the family's list `allowed(family)`."""
    def run(call, family, scratch):
        t = tensor(call, name)
        return INVALID if t is not None and t.dtype not in allowed(family) else None
    return Rule(rule_id, run)


def same_dtype(rule_id: str, ref: str, *others: str) -> Rule:
    """161002 when one of `others` has another dtype than `ref`."""
    def run(call, family, scratch):
        r = tensor(call, ref)
        if r is None:
            return None
        return INVALID if any((t := tensor(call, o)) is not None and t.dtype != r.dtype for o in others) else None
    return Rule(rule_id, run)


def same_format(rule_id: str, ref: str, *others: str) -> Rule:
    """161002 when one of `others` has another storage format than `ref`."""
    def run(call, family, scratch):
        r = tensor(call, ref)
        if r is None:
            return None
        return INVALID if any((t := tensor(call, o)) is not None and t.format != r.format for o in others) else None
    return Rule(rule_id, run)


def no_private_format(rule_id: str, *names: str) -> Rule:
    """161002 when any of the named tensors has a private storage format."""
    def run(call, family, scratch):
        return INVALID if any((t := tensor(call, n)) is not None and t.format in PRIVATE_FORMATS
                              for n in names) else None
    return Rule(rule_id, run)


def rank_in(rule_id: str, ranks: frozenset[int], *names: str) -> Rule:
    """161002 when any of the named tensors has a view rank outside `ranks`."""
    def run(call, family, scratch):
        return INVALID if any((t := tensor(call, n)) is not None and t.rank not in ranks for n in names) else None
    return Rule(rule_id, run)


def length_in(rule_id: str, name: str, lengths: frozenset[int]) -> Rule:
    """161002 when the int array's length is outside `lengths`."""
    def run(call, family, scratch):
        v = int_array(call, name)
        return INVALID if v is not None and len(v) not in lengths else None
    return Rule(rule_id, run)


def same_dims(rule_id: str, ref: str, other: str) -> Rule:
    """161002 when two tensors' view shapes differ (rank included)."""
    def run(call, family, scratch):
        a, b = tensor(call, ref), tensor(call, other)
        return INVALID if a is not None and b is not None and a.dims != b.dims else None
    return Rule(rule_id, run)


def success_if_empty(rule_id: str, *names: str) -> Rule:
    """The early return of an empty input: status 0 with workspace 0 when any of the named tensors
    is empty. It writes *workspaceSize (and hands out the executor), so a NULL out-pointer there
    is UNDEFINED rather than a status."""
    def run(call, family, scratch):
        if not any((t := tensor(call, n)) is not None and is_empty(t) for n in names):
            return None
        return UNDEFINED if call.null_out else SUCCESS
    return Rule(rule_id, run)


def out_pointers_written(rule_id: str) -> Rule:
    """The end of a phase 1 that passed every check: it writes *workspaceSize and *executor, which
    these ops never checked for NULL."""
    def run(call, family, scratch):
        return UNDEFINED if call.null_out else None
    return Rule(rule_id, run)
