"""Executable models of an operator's phase-1 checks (spec section B), as plain data and code.

A model sees exactly what the library's GetWorkspaceSize sees: every tensor as the descriptor
`aclCreateTensor` received (view dims in the tensor's format order, dtype, format, strides,
offset), every attribute as passed (None for a NULL pointer), and which of phase 1's two output
pointers were NULL. It runs the op's section-B checks in the spec's code order for one SoC
family and says which check fires first and with which status (0 and no check: phase 1 ran to its
end; 0 and a check: the early successful return of that check, e.g. an empty input).

A model is an ordered tuple of Rules, so a test can break one on purpose (swap two rules, drop
one) and see the case files catch it. Models are written from `shared/spec/ops/*.md` alone and
import nothing of the harness or the software CANN.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class TensorDesc:
    """One aclTensor as phase 1 receives it."""
    dims: tuple[int, ...]              # view dims, in the order of `format` (NHWC: N, H, W, C)
    dtype: str                         # dtype name as case files spell it: float32, float16, int64, ...
    format: str                        # ACL format label: ND, NCHW, NHWC, NCDHW, NDHWC, NCL, NC1HWC0, ...
    strides: tuple[int, ...]           # element strides of the view dims
    offset: int = 0                    # element offset of the first element

    @property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class Call:
    """Every phase-1 argument of one call. tensors/attrs hold None for a NULL pointer."""
    tensors: Mapping[str, TensorDesc | None]
    attrs: Mapping[str, Any] = field(default_factory=dict)    # int arrays as tuples; bool, int, float by value
    null_out: frozenset[str] = frozenset()                      # 'workspaceSize' and/or 'executor' passed as NULL


@dataclass(frozen=True)
class Phase1:
    """What phase 1 returns: the status, and the check that returned it (None when phase 1 passed
    every check and ran to its end; a check with status 0 is an early successful return, which
    leaves the workspace at 0 and launches nothing)."""
    status: int
    check: str | None = None


# A rule's answer: None to go on with the next rule; the status phase 1 returns here (0: an early
# successful return, e.g. an empty input); or PASSED: the call took a path that ends in success here
# (a fast path, a route between kernels), with no check failing and no later rule run.
PASSED = "passed"
RuleFn = Callable[[Call, str, dict], "int | str | None"]


@dataclass(frozen=True)
class Rule:
    id: str              # the section-B check id the case files use (B9, B26a, B1.14, ...)
    run: RuleFn          # (call, family, scratch) -> status or None; scratch carries values later rules need


@dataclass(frozen=True)
class Phase1Model:
    """Section B of one operator: its rules in code order, for every family the spec covers."""
    rules: tuple[Rule, ...]

    def __call__(self, call: Call, family: str) -> Phase1:
        scratch: dict = {}
        for rule in self.rules:
            status = rule.run(call, family, scratch)
            if status is PASSED:
                return Phase1(0, None)
            if status is not None:
                return Phase1(status, rule.id)
        return Phase1(0, None)

    def fired(self, call: Call, family: str) -> list[str]:
        """The ids of the rules evaluated for this call, in order (the last one decided, if any)."""
        scratch: dict = {}
        seen = []
        for rule in self.rules:
            seen.append(rule.id)
            if rule.run(call, family, scratch) is not None:
                break
        return seen

    def without(self, rule_id: str) -> "Phase1Model":
        return Phase1Model(tuple(r for r in self.rules if r.id != rule_id))

    def swapped(self, first: str, second: str) -> "Phase1Model":
        ids = [r.id for r in self.rules]
        i, j = ids.index(first), ids.index(second)
        rules = list(self.rules)
        rules[i], rules[j] = rules[j], rules[i]
        return Phase1Model(tuple(rules))


# Status codes (spec README "Status codes", acl_abi.md 4.1)
SUCCESS = 0
NULLPTR = 161001
INVALID = 161002
INNER_NULLPTR = 561103
# Not an aclnn status: the spec gives phase 1 no result for the call (it writes through a NULL
# out-pointer it never checks, dereferences a NULL array, or computes from a shape no check
# rejects). Policy 2: never asserted; an explorer skips such a call instead of judging it.
UNDEFINED = -1


INT64 = range(-(1 << 63), 1 << 63)


def int64_product(values) -> int | None:
    """A product as C code computes it in int64 (an element count, a volume); None once a partial
    product leaves int64, where the C result is undefined (a model answers UNDEFINED there)."""
    n = 1
    for v in values:
        n *= v
        if n not in INT64:
            return None
    return n
