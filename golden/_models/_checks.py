"""The rule shapes that recur in the ops' section B, as Rule factories, and the facts they share.

A rule answers None (go on), a status, or SUCCESS for an early return. Rules read only the Call,
never another rule's result, so a test may drop or swap any of them and the model still answers:
a rule that reads a NULL tensor or array answers UNDEFINED (the C code would dereference it),
and one that meets a list of the wrong length reads the values there are.
"""
from __future__ import annotations

from typing import Callable, Iterable

from platforms import FAMILIES as PLATFORM_FAMILIES

from .._phase1 import INNER_NULLPTR, INVALID, NULLPTR, SUCCESS, UNDEFINED, Call, Rule, TensorDesc, int64_product

# SoC family -> the NpuArch the code switches on (platforms/platform.yaml). A name not in the
# table is an arch the ops' switches do not list: their "any other arch" branch.
ARCH = {f.name: f.arch for f in PLATFORM_FAMILIES}
FAMILIES = tuple(ARCH)

# opbase's IsPrivateFormat list, as the ops' private-format checks quote it
PRIVATE_FORMATS = frozenset({
    "NC1HWC0", "FRACTAL_Z", "NDC1HWC0", "FRACTAL_Z_3D", "FRACTAL_NZ", "NC1HWC0_C04",
    "FRACTAL_NZ_C0_2", "FRACTAL_NZ_C0_4", "FRACTAL_NZ_C0_8", "FRACTAL_NZ_C0_16", "FRACTAL_NZ_C0_32"})

INT32_MAX = 2**31 - 1

STATUSES = frozenset({SUCCESS, NULLPTR, INVALID, INNER_NULLPTR, UNDEFINED})     # every answer a model gives


def is_regbase(family: str) -> bool:
    """aclnn_util.h's IsRegbase: true for DAV_3510 (the 950 family) only."""
    return ARCH.get(family) == "DAV_3510"


# ------------------------------------------------------------------ reading a Call

class NullRead(Exception):
    """A rule read a tensor or array passed as NULL (or absent from the Call)."""


def tensor(call: Call, name: str) -> TensorDesc:
    t = call.tensors.get(name)
    if t is None:
        raise NullRead(name)
    return t


def int_array(call: Call, name: str) -> tuple[int, ...]:
    """An aclIntArray attribute as a tuple of ints."""
    value = call.attrs.get(name)
    if value is None:
        raise NullRead(name)
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)


def is_null(call: Call, name: str) -> bool:
    """A tensor or array argument passed as NULL (an argument the Call lacks counts as NULL)."""
    if name in call.tensors:
        return call.tensors[name] is None
    return call.attrs.get(name) is None


def is_empty(desc: TensorDesc) -> bool:
    """opbase's IsEmpty: the element count is 0, i.e. some view dim is 0."""
    return any(d == 0 for d in desc.dims)


def per_axis(values: tuple[int, ...], n: int) -> tuple[int, ...]:
    """An attribute list expanded to n axes the way the ops read it: one value for every axis,
    else its first n values. A shorter list (which its length check rejects) gives only the
    values there are, so a rule run before that check still sees them."""
    return values * n if len(values) == 1 else values[:n]


def pool_attr(call: Call, name: str, n: int) -> tuple[int, ...]:
    """A pooling attribute's per-axis values (per_axis); the max pools read an empty stride as the
    kernel."""
    values = int_array(call, name)
    if name == "stride" and values == ():
        return pool_attr(call, "kernelSize", n)
    return per_axis(values, n)


# ------------------------------------------------------------------ rule factories

def rule(rule_id: str, check: Callable[[Call, str], "int | None"]) -> Rule:
    """The Rule of `check(call, family)`; a NULL it reads makes the answer UNDEFINED."""
    def run(call, family, scratch):
        try:
            return check(call, family)
        except NullRead:
            return UNDEFINED
    return Rule(rule_id, run)


def invalid_if(rule_id: str, fails: Callable[[Call, str], bool]) -> Rule:
    """161002 when `fails(call, family)`."""
    return rule(rule_id, lambda call, family: INVALID if fails(call, family) else None)


def inner_nullptr_if(rule_id: str, fails: Callable[[Call, str], bool]) -> Rule:
    """561103 when `fails(call, family)`: an L0 step that returns nullptr (l0_format_rules.md)."""
    return rule(rule_id, lambda call, family: INNER_NULLPTR if fails(call, family) else None)


def not_null(rule_id: str, *names: str) -> Rule:
    """161001 when any of the named tensors or arrays is NULL (checked in the order given)."""
    return rule(rule_id, lambda call, family: NULLPTR if any(is_null(call, n) for n in names) else None)


def not_null_each(first: int, *names: str) -> tuple[Rule, ...]:
    """One NULL check per parameter, numbered B<first>, B<first+1>, ... in the order given (the
    per-parameter NULL checks at the head of the max pools' section B)."""
    return tuple(not_null(f"B{first + i}", name) for i, name in enumerate(names))


def dtype_in(rule_id: str, name: str, allowed: Callable[[str], Iterable[str]]) -> Rule:
    """161002 when the tensor's dtype is not in the family's list `allowed(family)`."""
    return invalid_if(rule_id, lambda call, family: tensor(call, name).dtype not in allowed(family))


def same_dtype(rule_id: str, ref: str, *others: str) -> Rule:
    """161002 when one of `others` has another dtype than `ref`."""
    return invalid_if(rule_id, lambda call, family: any(tensor(call, o).dtype != tensor(call, ref).dtype
                                                        for o in others))


def same_format(rule_id: str, ref: str, *others: str) -> Rule:
    """161002 when one of `others` has another storage format than `ref`."""
    return invalid_if(rule_id, lambda call, family: any(tensor(call, o).format != tensor(call, ref).format
                                                        for o in others))


def no_private_format(rule_id: str, *names: str) -> Rule:
    """161002 when any of the named tensors has a private storage format."""
    return invalid_if(rule_id, lambda call, family: any(tensor(call, n).format in PRIVATE_FORMATS for n in names))


def rank_in(rule_id: str, ranks: frozenset[int], *names: str) -> Rule:
    """161002 when any of the named tensors has a view rank outside `ranks`."""
    return invalid_if(rule_id, lambda call, family: any(tensor(call, n).rank not in ranks for n in names))


def rank_in_each(first: int, ranks: frozenset[int], *names: str) -> tuple[Rule, ...]:
    """One rank check per tensor, numbered B<first>, B<first+1>, ... in the order given."""
    return tuple(rank_in(f"B{first + i}", ranks, name) for i, name in enumerate(names))


def length_in(rule_id: str, name: str, lengths: frozenset[int]) -> Rule:
    """161002 when the int array's length is outside `lengths`."""
    return invalid_if(rule_id, lambda call, family: len(int_array(call, name)) not in lengths)


def same_dims(rule_id: str, ref: str, other: str) -> Rule:
    """161002 when two tensors' view shapes differ (rank included)."""
    return invalid_if(rule_id, lambda call, family: tensor(call, ref).dims != tensor(call, other).dims)


def success_if_empty(rule_id: str, *names: str) -> Rule:
    """The early return of an empty input: status 0 with workspace 0 when any of the named tensors
    is empty. It writes *workspaceSize (and hands out the executor), so a NULL out-pointer there
    is UNDEFINED rather than a status. opbase's IsEmpty multiplies the dims in int64: a view whose
    element count leaves int64 has no defined answer there (found by ./run explore: N = 2^62 with
    W = 4 wraps to 0, and the library took the early return)."""
    def check(call, family):
        if any(int64_product(tensor(call, n).dims) is None for n in names):
            return UNDEFINED
        if not any(is_empty(tensor(call, n)) for n in names):
            return None
        return UNDEFINED if call.null_out else SUCCESS
    return rule(rule_id, check)


def out_pointers_written(rule_id: str) -> Rule:
    """The end of a phase 1 that passed every check: it writes *workspaceSize and *executor, which
    these ops never checked for NULL."""
    return rule(rule_id, lambda call, family: UNDEFINED if call.null_out else None)


def per_axis_fails(rule_id: str, n: int, names: tuple[str, ...], bad: Callable[..., bool]) -> Rule:
    """161002 when `bad(*values)` holds on one of the n spatial axes of the named pooling
    attributes (pool_attr), the values of one axis passed in the order of `names`."""
    return invalid_if(rule_id, lambda call, family: any(bad(*axis) for axis in
                                                        zip(*(pool_attr(call, name, n) for name in names))))


# ------------------------------------------------------------------ building calls (the models' own examples)

def contiguous(dims: tuple[int, ...], dtype: str, fmt: str) -> TensorDesc:
    """A contiguous descriptor of `dims` (row-major strides, offset 0)."""
    strides, step = [], 1
    for d in reversed(dims):
        strides.insert(0, step)
        step *= max(d, 1)
    return TensorDesc(tuple(dims), dtype, fmt, tuple(strides))
