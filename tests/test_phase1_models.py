"""Each operator's executable spec model (its golden INFO's `model`, golden/_phase1.py) against its
case file: for every default-tier case and every family the case names, the model must predict the
status the case expects there, and for an invalid case the check it names. A model broken on
purpose (a rule dropped, a status changed) must disagree with some case.

The tests loop over the operators that declare a model and never name one."""
from __future__ import annotations

import contextlib
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


def disagreements(name: str, model: Phase1Model, limit: int = 20) -> list[str]:
    out = []
    for case, call in _calls(name):
        for family in case.families:
            expected = case.expected_status(family)
            if expected is None:
                continue
            got = model(call, family)
            want_check = case.check if expected and case.kind == "invalid" else None
            if got.status != expected or (want_check and got.check != want_check):
                out.append(f"{case.id} on {family}: model says {got.status} [{got.check}], the case file "
                           f"{expected}" + (f" [{want_check}]" if want_check else ""))
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


# ------------------------------------------------------------------ any Call, not only the cases'
# Random exploration will hand a model configurations no case file has. Each random Call starts
# from a case's Call (so that it reaches the deep rules too) with one to three arguments changed
# to anything the C ABI can carry: NULLs, any rank, negative, zero and huge dims, dtype and
# format names a check must refuse, odd strides, int arrays of any length, extreme scalars.

# (imported here, with the tests that use them, so that additions of other branches merge cleanly)
import random
import zlib
from dataclasses import replace

from golden._phase1 import UNDEFINED, Call, Phase1, TensorDesc
from harness.core.families import FAMILIES

RANDOM_CALLS = 300
ODD_FAMILY = "ascend999"            # a family no spec row names: the model must still answer
DIMS = (-3, -1, 0, 1, 2, 3, 5, 9, 16, 255, 256, 65536, 2**31, 2**40, 2**63 - 1)
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "uint16",
          "uint32", "uint64", "bool", "complex32", "complex64", "complex128", "float8_e5m2", "int4", "undefined")
FORMATS = ("ND", "NCHW", "NHWC", "NCL", "NCDHW", "NDHWC", "HWCN", "NC", "NC1HWC0", "FRACTAL_Z", "NDC1HWC0",
           "FRACTAL_Z_3D", "FRACTAL_NZ", "FRACTAL_NZ_C0_16", "UNDEFINED")
ARRAY_VALUES = (-(2**63), -256, -2, -1, 0, 1, 2, 3, 10, 20, 21, 255, 256, 300, 2**31, 2**63 - 1)
SCALARS = {"bool": (False, True), "int8": (-128, -1, 0, 1, 2, 3, 4, 127),
           "int64": (-(2**63), -256, -255, -1, 0, 1, 2, 255, 256, 2**31, 2**63 - 1), "double": (-1.5, 0.0, 2.0)}


def _random_tensor(rng: random.Random, t: TensorDesc | None) -> TensorDesc | None:
    if t is None or rng.random() < 0.1:
        return None if rng.random() < 0.5 else TensorDesc((2, 3, 4, 4), "float32", "NCHW", (48, 16, 4, 1))
    what = rng.choice(("dims", "dim", "dtype", "format", "strides", "offset"))
    if what == "dims":
        dims = tuple(rng.choice(DIMS) for _ in range(rng.randint(0, 6)))
        return replace(t, dims=dims, strides=tuple(rng.choice((0, 1, 7)) for _ in dims))
    if what == "dim" and t.dims:
        i = rng.randrange(t.rank)
        return replace(t, dims=t.dims[:i] + (rng.choice(DIMS),) + t.dims[i + 1:])
    if what == "dtype":
        return replace(t, dtype=rng.choice(DTYPES))
    if what == "format":
        return replace(t, format=rng.choice(FORMATS))
    if what == "strides":
        return replace(t, strides=tuple(rng.choice((-1, 0, 1, 2, 3, 1000)) for _ in range(rng.choice((t.rank, 2)))))
    return replace(t, offset=rng.choice((0, 1, 2**40)))


def _random_attr(rng: random.Random, kind: str, value):
    if kind == "int_array":
        return None if rng.random() < 0.15 else tuple(rng.choice(ARRAY_VALUES) for _ in range(rng.randint(0, 5)))
    return rng.choice(SCALARS.get(kind, (value,)))


def random_call(rng: random.Random, base: Call, kinds: dict[str, str]) -> Call:
    """`base` with one to three of its arguments (or its out-pointers) changed."""
    tensors, attrs, null_out = dict(base.tensors), dict(base.attrs), set(base.null_out)
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(sorted(kinds) + ["null_out"])
        if name == "null_out":
            null_out = set(rng.sample(["workspaceSize", "executor"], rng.randint(0, 2)))
        elif kinds[name] == "tensor":
            tensors[name] = _random_tensor(rng, tensors.get(name))
        else:
            attrs[name] = _random_attr(rng, kinds[name], attrs.get(name))
    return Call(tensors, attrs, frozenset(null_out))


def _random_calls(name: str) -> list[Call]:
    op, _ = _cases(name)
    kinds = {p.name: p.type for p in op.params}
    bases = [call for _, call in _calls(name)]
    rng = random.Random(zlib.crc32(name.encode()))      # the same Calls on every run
    return [random_call(rng, rng.choice(bases), kinds) for _ in range(RANDOM_CALLS)]


@pytest.mark.parametrize("name", OPS)
def test_model_answers_any_call(name):
    """Never an exception; always a Phase1 whose check is one the case file declares, with the
    status it declares for it (or UNDEFINED, where the spec gives phase 1 no result); the same
    answer twice (a model is a pure function)."""
    op, _ = _cases(name)
    declared = {c.id: c.status for c in op.checks}
    model = golden.load(name).INFO.model
    decided = set()
    for call in _random_calls(name):
        for family in FAMILIES + (ODD_FAMILY,):
            got = model(call, family)
            where = f"{name} on {family}: {call}"
            assert isinstance(got, Phase1) and isinstance(got.status, int), where
            assert (got.check is None) == (got.status == 0), f"{got} {where}"
            if got.status:
                assert got.check in declared, f"{got.check} is no check of the case file; {where}"
                assert got.status in (UNDEFINED, declared[got.check]) or declared[got.check] is None, \
                    f"{got} while the case file declares {declared[got.check]}; {where}"
            assert model(call, family) == got, where
            decided.add(model.fired(call, family)[-1])
    # the Calls reach past the first checks: at least a third of the rules decide some call
    assert len(decided) * 3 >= len(model.rules), f"{name}: only {sorted(decided)} ever decided"


@pytest.mark.parametrize("name", OPS)
def test_random_calls_vary_every_kind_of_argument(name):
    """The generator really changes what a model must judge: NULL tensors, arrays and out-pointers,
    negative dims, dtypes and formats no op accepts."""
    seen = set()
    for call in _random_calls(name):
        tensors = [t for t in call.tensors.values() if t is not None]
        seen |= {"null tensor"} if None in call.tensors.values() else set()
        seen |= {"null array"} if None in call.attrs.values() else set()
        seen |= {"null out-pointer"} if call.null_out else set()
        seen |= {"negative dim" for t in tensors if any(d < 0 for d in t.dims)}
        seen |= {"odd dtype" for t in tensors if t.dtype in ("uint16", "complex64")}
        seen |= {"private format" for t in tensors if t.format == "NC1HWC0"}
    assert seen == {"null tensor", "null array", "null out-pointer", "negative dim", "odd dtype", "private format"}


@pytest.mark.parametrize("name", OPS)
def test_rule_ids_are_declared_checks(name):
    """Each rule is a check of the op's case file (`checks:`), once and in the spec's order, so that a
    report can name it, including a rule no random Call reaches."""
    op, _ = _cases(name)
    order = [c.id for c in op.checks]
    ids = [r.id for r in golden.load(name).INFO.model.rules]
    assert not set(ids) - set(order), f"{name}: rules that are no check of the case file: {set(ids) - set(order)}"
    assert len(ids) == len(set(ids)), f"{name}: a check modelled twice: {ids}"
    assert ids == sorted(ids, key=order.index), f"{name}: rules out of the case file's order: {ids}"
