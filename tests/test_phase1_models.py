"""Each operator's executable spec model (its golden INFO's `model`, golden/_phase1.py) against its
case file: for every default-tier case and every family the case names, the model must predict the
status the case expects there, and for an invalid case the check it names. A model broken on
purpose (a rule dropped, a status changed) must disagree with some case.

The tests loop over the operators that declare a model and never name one."""
from __future__ import annotations

import functools

import pytest

import golden
from golden._phase1 import Phase1Model, Rule
from harness.judge import phase1_model

OPS = [name for name in golden.available() if getattr(getattr(golden.load(name), "INFO", None), "model", None)]


@functools.lru_cache(maxsize=None)
def _cases(loaded_key: str):
    from harness.audit import traceability
    for op, cases in traceability.load_all():
        if op.golden == loaded_key:
            return op, [c for c in cases if c.tier == "default" and not c.skip]
    raise LookupError(loaded_key)


@functools.lru_cache(maxsize=None)
def _calls(name: str) -> list:
    """(case, its Call) for every default-tier case of the op, built once per test process."""
    _, cases = _cases(name)
    return [(case, phase1_model.call_for(case)) for case in cases]


def _empty_input(case, call) -> bool:
    """Whether an input tensor of the call is empty: a status 0 then promises an early return
    (workspace 0, nothing launched), which the suite asserts of the library (judge.runner)."""
    inputs = [p.name for p in case.op.params if p.type == "tensor" and not p.output]
    return any((t := call.tensors.get(n)) is not None and t.numel == 0 for n in inputs)


def disagreements(name: str, model: Phase1Model, limit: int = 20) -> list[str]:
    out = []
    for case, call in _calls(name):
        for family in case.families:
            expected = case.expected_status(family)
            if expected is None:
                continue
            got = model(call, family)
            want_check = case.check if expected and case.kind == "invalid" else None
            # status 0: an early return (the model names the check that returned) exactly when an
            # input is empty; a model without its empty-input return would say phase 1 ran on
            early = expected == 0 and _empty_input(case, call)
            if (got.status != expected or (want_check and got.check != want_check)
                    or (expected == 0 and (got.check is not None) != early)):
                out.append(f"{case.id} on {family}: model says {got.status} [{got.check}], the case file "
                           f"{expected}" + (f" [{want_check}]" if want_check else "")
                           + (" (early return: an input is empty)" if early else ""))
                if len(out) >= limit:
                    return out
    return out


@pytest.mark.parametrize("name", OPS)
def test_model_agrees_with_the_case_file(name):
    model = golden.load(name).INFO.model
    bad = disagreements(name, model)
    assert not bad, "\n".join(bad)


def _named_rules(name: str, model: Phase1Model) -> list[Rule]:
    """The rules some default-tier invalid case names (dropping one of them must be noticed)."""
    named = {case.check for case, _ in _calls(name) if case.kind == "invalid" and case.check}
    return [r for r in model.rules if r.id in named]


@pytest.mark.parametrize("name", OPS)
def test_a_dropped_rule_is_caught(name):
    model = golden.load(name).INFO.model
    survivors = [r.id for r in _named_rules(name, model) if not disagreements(name, model.without(r.id), limit=1)]
    assert not survivors, f"dropping these rules of {name}'s model changed no prediction: {survivors}"


@pytest.mark.parametrize("name", OPS)
def test_a_changed_status_is_caught(name):
    model = golden.load(name).INFO.model
    rule = _named_rules(name, model)[0]

    def wrong(call, family, scratch, run=rule.run):
        status = run(call, family, scratch)
        return 161001 if status == 161002 else (161002 if status else status)
    broken = Phase1Model(tuple(Rule(r.id, wrong) if r is rule else r for r in model.rules))
    assert disagreements(name, broken, limit=1), f"{name}: {rule.id} returning another status went unnoticed"
