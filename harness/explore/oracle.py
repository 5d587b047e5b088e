"""What an example must do, before it runs: the op's phase-1 model read on the very call the case
makes, and the Case that holds the library to it.

The Call is built the way the runner builds the backend's arguments (inputs.prepare, mutate,
build_args), so the model sees exactly the descriptors the library will be given. Then:

* model answers UNDEFINED: the spec gives phase 1 no result; never asserted, the example is skipped;
* an example without defects that the model passes: a valid case, judged by the golden under the
  envelope's standard (and its early return, e.g. an empty input, keeps the status-0 promise);
* a refusal (status != 0): an invalid case expecting that status, raised by that check;
* defects that end in an early successful return (status 0 at a check): an invalid case whose
  status-0 promise is held (phase 2 and sync succeed, workspace 0, nothing launched);
* defects that pass every check: what the kernel does with a call no valid configuration makes is
  undefined (spec B.2 "kernel-level", policy 2): skipped.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace

import torch

from golden._phase1 import UNDEFINED, Phase1

from .. import inputs
from ..judge.phase1_model import call_of
from ..model import Case
from .example import Example, invalid_case, valid_case

MAX_ELEMENTS = 1_500_000      # all prepared tensors of one example together (a few hundred thousand each)


@dataclass
class Plan:
    example: Example
    case: Case | None           # None: skipped (see `skip`)
    answer: Phase1 | None       # the model's answer on the example's family
    fired: tuple[str, ...] = ()  # the model's rules evaluated, in order (the last one decided)
    skip: str = ""              # why the example is not run

    @property
    def kind(self) -> str:
        return self.case.kind if self.case is not None else "skipped"


class Oracle:
    def __init__(self, facts, cache_size: int = 48):
        self.facts = facts
        self._prepared: OrderedDict = OrderedDict()
        self._size = cache_size

    def __repr__(self) -> str:
        return f"Oracle({self.facts.name})"

    def prepared(self, ex: Example) -> dict[str, torch.Tensor]:
        """The example's base inputs (its config prepared as a valid call); ValueError when the
        golden refuses the config (a window entirely in the padding, a shape no valid call has)."""
        key = (ex.config, ex.op)
        hit = self._prepared.get(key)
        if hit is None:
            base = valid_case(replace(ex, defects=()))
            try:
                hit = inputs.prepare(base)
            except (ValueError, RuntimeError, IndexError) as e:
                hit = ValueError(f"the golden cannot prepare the configuration: {e}")
            if not isinstance(hit, ValueError):
                total = sum(t.numel() for t in hit.values())
                if total > MAX_ELEMENTS:
                    hit = ValueError(f"{total} elements in the prepared inputs, more than {MAX_ELEMENTS}")
            self._prepared[key] = hit
            if len(self._prepared) > self._size:
                self._prepared.popitem(last=False)
        else:
            self._prepared.move_to_end(key)
        if isinstance(hit, ValueError):
            raise hit
        return hit

    def tensor_shapes(self, ex: Example) -> dict[str, tuple[int, ...]]:
        """Every tensor's logical shape in the example's base call (outputs take output_like's)."""
        prepared = self.prepared(ex)
        out_shape = tuple(prepared[self.facts.op.output_like].shape)
        return {p.name: (out_shape if p.output else tuple(prepared[p.name].shape)) for p in self.facts.op.tensor_params}

    def call(self, ex: Example, case: Case):
        prepared = self.prepared(ex)
        mutated = inputs.mutate(case, prepared)
        return call_of(inputs.build_args(case, mutated, tuple(prepared[case.op.output_like].shape)))

    def answer(self, ex: Example) -> tuple[Phase1, tuple[str, ...]]:
        """The model's answer for the example on its family, and the rules it evaluated."""
        probe = invalid_case(ex, 0, None) if ex.defects else valid_case(ex)
        call = self.call(ex, probe)
        model = self.facts.model
        return model(call, ex.family), tuple(model.fired(call, ex.family))

    def plan(self, ex: Example, note: str | None = None) -> Plan:
        try:
            answer, fired = self.answer(ex)
        except ValueError as e:
            return Plan(ex, None, None, skip=str(e))
        if answer.status == UNDEFINED:
            return Plan(ex, None, answer, fired, f"the spec gives phase 1 no result here ({answer.check}): "
                                                 "never asserted (policy 2)")
        if not ex.defects and answer.status == 0:
            return Plan(ex, valid_case(ex, note), answer, fired)
        if ex.defects and answer == Phase1(0, None):
            return Plan(ex, None, answer, fired, "passes every phase-1 check: what a kernel does with a call "
                                                 "no valid configuration makes is undefined (policy 2)")
        return Plan(ex, invalid_case(ex, answer.status, answer.check, note), answer, fired)


def elements(shape) -> int:
    return math.prod(shape) if shape else 1
