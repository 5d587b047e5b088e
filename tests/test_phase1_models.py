"""Each operator's executable spec model (its golden INFO's `model`, golden/_phase1.py) against its
case file: for every default-tier case and every family the case names, the model must predict the
status the case expects there, and for an invalid case the check it names; a status 0 is an early
return exactly when an input is empty. A model broken on purpose (a rule dropped, a status
changed, two checks an order-pin scenario names swapped) must disagree with some case, and every
model answers arbitrary calls (what random exploration will feed it) without raising.

The tests loop over the operators that declare a model and never name one."""
from __future__ import annotations

import contextlib
import functools
import random
import re

import pytest

import golden
from golden._phase1 import UNDEFINED, Call, Phase1, Phase1Model, Rule, TensorDesc
from harness.core import dtypes, families, formats
from harness.judge import phase1_model

pytestmark = pytest.mark.loops_over_ops

OPS = [name for name in golden.available() if getattr(getattr(golden.load(name), "INFO", None), "model", None)]


@functools.lru_cache(maxsize=None)
def _cases(loaded_key: str):
    from harness.audit import traceability
    for op, cases in traceability.load_all():
        if op.golden == loaded_key:
            return op, [c for c in cases if c.tier == "default" and not c.skip]
    raise LookupError(loaded_key)


@contextlib.contextmanager
def _one_torch_thread():
    """Preparing a case draws small tensors, where a second intra-op thread only spins: on two
    busy cores it made building the Calls several times slower."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@functools.lru_cache(maxsize=None)
def _calls(name: str) -> list:
    """(case, its Call) for every default-tier case of the op, built once per test process."""
    _, cases = _cases(name)
    with _one_torch_thread():
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


# ------------------------------------------------------------------ order pins
# An order-pin scenario names the two checks it breaks at once: "<A>-before-<B>" (or "<B>-after-<A>"),
# A being the one the spec's code order runs first and the case expects. A check id is a section-B
# one (B8, B26a, B1.14) or a generic L0 label rule (L0.R1, L0.R1.inputs, L0.R2.cube).
_ID = r"(?:B\d+[a-z]?(?:\.\d+)?|L0\.R\d+(?:\.[a-z]\w*)?)"
_PIN = re.compile(rf"\[({_ID})\b.*?-(before|after)-({_ID})")


def _pins(name: str):
    """(case, call, first check, second check) of every scenario that pins two checks' order."""
    for case, call in _calls(name):
        m = _PIN.search(case.name) if case.kind == "invalid" else None
        if m:
            a, how, b = m.groups()
            yield (case, call) + ((a, b) if how == "before" else (b, a))


def unpinned(name: str, model: Phase1Model) -> list[str]:
    """The pin scenarios that do not catch `model` with their two checks in the other order on any
    family they run on with a non-zero status: a check the model lacks, or a second defect the
    model does not see (such a pin pins nothing). A family where the second check does not exist
    (e.g. a non-950 size limit on 950) only asserts the first."""
    ids = {r.id for r in model.rules}
    missed = []
    for case, call, first, second in _pins(name):
        if not {first, second} <= ids:
            missed.append(f"{case.id}: pins {first}/{second}, the model has no rule {({first, second} - ids)}")
            continue
        swapped = model.swapped(first, second)
        if all(swapped(call, f) == Phase1(case.expected_status(f), first) for f in case.families
               if case.expected_status(f) is not None):
            missed.append(f"{case.id}: with {first} and {second} swapped the model still says {first} "
                          f"on {', '.join(map(str, case.families))}")
    return missed


@pytest.mark.parametrize("name", OPS)
def test_swapping_pinned_checks_is_caught(name):
    model = golden.load(name).INFO.model
    assert any(_pins(name)), f"{name}: its case file has no order-pin scenario (<A>-before-<B>)"
    missed = unpinned(name, model)
    assert not missed, "\n".join(missed)


@pytest.mark.parametrize("name", OPS)
def test_a_pin_the_model_cannot_see_is_reported(name):
    """Break the model on purpose: with a pin's second check never failing, the pin pins nothing."""
    model = golden.load(name).INFO.model
    _, _, first, second = next(_pins(name))
    blind = Phase1Model(tuple(Rule(r.id, lambda call, family, scratch: None) if r.id == second else r
                              for r in model.rules))
    assert any(f"{first} and {second} swapped" in m for m in unpinned(name, blind))


# ------------------------------------------------------------------ arbitrary calls
DTYPES = [d.name for d in dtypes.ALL] + ["no_such_dtype"]
FORMATS = list(formats.TABLE) + ["NO_SUCH_FORMAT"]
DIMS = [0, 1, 2, 3, 4, 5, 7, 9, 16, -1, -5, 2**31 - 1, 2**31, 46341, 2**40, 2**62]
INTS = [-3, -2, -1, 0, 1, 2, 3, 4, 5, 2**31, -2**40, 2**62]
FAMILIES = [*families.FAMILIES, "ascend_unknown"]     # and a family no switch of the ops names
# ACLNN status codes (acl_abi.md 4.1) and _checks.UNDEFINED (no status: a NULL out-pointer written)
VALID = frozenset({0, 161001, 161002, 361001, UNDEFINED}) | frozenset(range(561000, 561120))


def _random_tensor(rng: random.Random) -> TensorDesc | None:
    if rng.random() < 0.05:
        return None
    dims = tuple(rng.choice(DIMS) if rng.random() < 0.3 else rng.randint(0, 9) for _ in range(rng.randint(0, 7)))
    strides = tuple(rng.choice(INTS) for _ in dims)
    return TensorDesc(dims, rng.choice(DTYPES), rng.choice(FORMATS), strides, rng.choice([0, 0, 3, -1]))


def _random_attr(rng: random.Random, kind: str):
    if kind == "int_array":
        return None if rng.random() < 0.05 else tuple(rng.choice(INTS) for _ in range(rng.randint(0, 5)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "double":
        return rng.choice([0.0, -1.5, 2.0, float("nan"), float("inf"), 1e308])
    return rng.choice(INTS)


def _changed(t: TensorDesc, field: str, value, at: int) -> TensorDesc:
    """t with one field changed: dim `at` or a dim appended/dropped (rank), its dtype or format."""
    dims = list(t.dims)
    if field == "dim" and dims:
        dims[at % len(dims)] = value
    elif field == "rank":
        dims = dims[:-1] if value is None else dims + [value]
    return TensorDesc(tuple(dims), value if field == "dtype" else t.dtype, value if field == "format" else t.format,
                      tuple(1 for _ in dims), t.offset)


def _mutated(rng: random.Random, call: Call, kinds: dict[str, str]) -> Call:
    """A case's call with one to three changes: an argument replaced by an arbitrary one, one field
    of a tensor changed, or the same field changed on every tensor (which keeps tensors that must
    agree in agreement, so the call gets past the pairwise checks to the later rules)."""
    tensors, attrs = dict(call.tensors), dict(call.attrs)
    for _ in range(rng.choice([1, 1, 2, 3])):
        field = rng.choice(["dim", "rank", "dtype", "format"])
        value = {"dim": rng.choice(DIMS), "rank": rng.choice(DIMS + [None]), "dtype": rng.choice(DTYPES),
                 "format": rng.choice(FORMATS)}[field]
        at, name = rng.randrange(8), rng.choice(list(tensors) + list(attrs))
        if rng.random() < 0.3:
            tensors = {n: t if t is None else _changed(t, field, value, at) for n, t in tensors.items()}
        elif name in attrs:
            attrs[name] = _random_attr(rng, kinds[name])      # what the C ABI can carry there
        elif tensors[name] is not None and rng.random() < 0.8:
            tensors[name] = _changed(tensors[name], field, value, at)
        else:
            tensors[name] = _random_tensor(rng)
    null_out = frozenset(o for o in ("workspaceSize", "executor") if rng.random() < 0.05)
    return Call(tensors, attrs, null_out)


def random_calls(name: str, count: int, seed: int):
    """`count` (Call, family) pairs of the op's signature: half wholly arbitrary (any rank, dims
    negative, zero or huge, any dtype and format name, NULL tensors, arrays and out-pointers), half
    a case's call with a few arguments replaced."""
    op, _ = _cases(name)
    bases = [(call, case.families) for case, call in _calls(name) if case.kind == "valid"]
    rng = random.Random(f"{name}:{seed}")
    for i in range(count):
        if i % 2:
            base, families = rng.choice(bases)
            yield _mutated(rng, base, {p.name: p.type for p in op.params}), rng.choice(families)
        else:
            tensors = {p.name: _random_tensor(rng) for p in op.params if p.type == "tensor"}
            attrs = {p.name: _random_attr(rng, p.type) for p in op.params if p.type != "tensor"}
            call = Call(tensors, attrs, frozenset(o for o in ("workspaceSize", "executor") if rng.random() < 0.1))
            yield call, rng.choice(FAMILIES)


def unanswered(name: str, model: Phase1Model, count: int = 400) -> tuple[list[str], set]:
    """What is wrong with the model's answers to `count` seeded arbitrary calls (an exception, an
    unknown status, no deciding rule, two answers to one call, an exception with its rules in
    reverse order), and the checks that decided them."""
    ids = {r.id for r in model.rules}
    declared = {c.id: c.status for c in _cases(name)[0].checks}
    reversed_model = Phase1Model(tuple(reversed(model.rules)))
    problems, seen = [], set()
    for call, family in random_calls(name, count, seed=0):
        try:
            got, again, backwards = model(call, family), model(call, family), reversed_model(call, family)
        except Exception as e:     # noqa: BLE001 -- any exception is the finding
            problems.append(f"{family} {call}: raised {e!r}")
            continue
        if got.status not in VALID or backwards.status not in VALID:
            problems.append(f"{family} {call}: status {got.status} (reversed rules: {backwards.status})")
        elif got.status and got.check not in ids or got.check not in ids | {None}:
            problems.append(f"{family} {call}: status {got.status} decided by no rule ({got.check})")
        elif again != got:
            problems.append(f"{family} {call}: {got}, then {again}")
        elif got.status not in (0, UNDEFINED) and declared.get(got.check, got.status) not in (None, got.status):
            problems.append(f"{family} {call}: {got}, but the case file declares {declared[got.check]} for it")
        seen.add(got.check)
    return problems, seen


@pytest.mark.parametrize("name", OPS)
def test_any_call_gets_an_answer(name):
    """A model answers every Call (random exploration feeds it anything) with a known status, the
    rule that decided it, and the same answer twice; its rules read only the Call, so they answer
    in any order too (the dropped- and swapped-rule tests rely on it)."""
    model = golden.load(name).INFO.model
    problems, seen = unanswered(name, model)
    assert not problems, "\n".join(problems[:10])
    # the calls reach well past the NULL and dtype checks
    assert len(seen) >= len(model.rules) // 2, f"{name}: 400 calls were decided by only {sorted(map(str, seen))}"


@pytest.mark.parametrize("name", OPS)
def test_a_model_that_raises_or_invents_a_status_is_caught(name):
    """Break the model on purpose: a rule that divides by a dim (zero dims are among the calls)
    and one that answers a status no aclnn API returns."""
    model = golden.load(name).INFO.model

    def divides(call, family, scratch):
        for t in call.tensors.values():
            if t is not None and t.dims:
                _ = 1 // t.dims[-1]
        return None
    raising = Phase1Model((Rule("divides", divides),) + model.rules)
    assert any("ZeroDivisionError" in p for p in unanswered(name, raising)[0])
    inventing = Phase1Model((Rule("invents", lambda call, family, scratch: 12345),) + model.rules)
    assert any("status 12345" in p for p in unanswered(name, inventing, count=5)[0])

@pytest.mark.parametrize("name", OPS)
def test_rule_ids_are_declared_checks(name):
    """Each rule is a check of the op's case file (`checks:`), once and in the spec's order, so that a
    report can name it, including a rule no random Call reaches. A rule that is no check of the spec
    (e.g. where a NULL out-pointer is written) may only ever answer UNDEFINED."""
    op, _ = _cases(name)
    order = [c.id for c in op.checks]
    model = golden.load(name).INFO.model
    ids = [r.id for r in model.rules]
    assert len(ids) == len(set(ids)), f"{name}: a check modelled twice: {ids}"
    declared = [i for i in ids if i in order]
    assert declared == sorted(declared, key=order.index), f"{name}: rules out of the case file's order: {ids}"
    extra = {r.id: r for r in model.rules if r.id not in order}
    answers = {(rid, model.fired(call, family)[-1] == rid and model(call, family).status)
               for call, family in random_calls(name, 400, seed=1) for rid in extra}
    wrong = {(rid, status) for rid, status in answers if status not in (False, UNDEFINED)}
    assert not wrong, f"{name}: rules that are no check of the case file decided statuses: {wrong}"


# the ops whose code tells families apart by NpuArch only (spec B of each): a family of a known arch
# needs no model edit. (AdaptiveMaxPool2d's #4 and AvgPool2d's A2/A3 paths also name SocVersions.)
ARCH_ONLY = ("max_pool2d_with_indices_backward", "max_pool3d_with_argmax_backward", "max_unpool3d_backward")


@pytest.mark.parametrize("name", [n for n in OPS if n in ARCH_ONLY])
def test_a_new_family_of_a_known_arch_is_answered_as_its_twin(name, monkeypatch):
    from golden._models import _checks
    twin = "ascend910b"
    monkeypatch.setitem(_checks.ARCH, "ascend910_9x", _checks.ARCH[twin])
    model = golden.load(name).INFO.model
    differ = [case.id for case, call in _calls(name) if twin in case.families
              and model(call, "ascend910_9x") != model(call, twin)]
    assert not differ, differ[:5]
