"""Hypothesis strategies built from an op's own facts: no op is named here.

Valid configurations come from two sources. One is a configuration of one of the family's valid
groups (its shape, with a dimension or two sometimes changed, and its attributes): the paths the
case file was written for (a global pool, a tile boundary, a repeated index). The other is the op's
generator (INFO.gen_config), driven through a random object whose every call is a Hypothesis draw,
so that the shrinker minimises the generator's own choices; its integers may stretch far past the
generator's ranges (bigger kernels, strides, pads, batches, widths of a few hundred), and a leading
dimension may be 0. Its envelope (dtype, formats, layouts, values, standard) is one of the family's
valid groups that takes the config's rank; scalar attributes keep the values that group uses (a
standard was chosen for them), an int64 one the group varies may also take a value near a C type's
limit, and an array element every valid case holds at one value keeps it.

Invalid examples are a valid base with 1-3 defects (defects.py), each refused by the op's model on
the family when applied alone; the model then says which check the combination must fail first. A
defect is one argument's change (a label among them: the L0 rules refuse labels of another rank),
the changes of one of the case file's scenarios, or one shape change of two tensors that share it.
A config is labelled as callers label its rank where its envelope's group does so.
"""
from __future__ import annotations

from dataclasses import replace

from hypothesis import assume, strategies as st

from . import facts as facts_mod
from .defects import defect_choices, frozen, paired_shape_defects, refused_alone, scenario_defects, whole_call_dtypes
from .example import Config, Example
from .oracle import Oracle, elements

MAX_SHAPE_ELEMENTS = 400_000
INT64_NEAR_LIMITS = (2**31 - 1, 2**31, -(2**31), 65520, 2**40)


# Tile and block boundaries: kernels split rows and planes in powers of two, and their tails are
# where bugs live (a width of 2^k + 1 leaves a tail of one element)
BOUNDARIES = tuple(sorted({2**k + d for k in range(3, 11) for d in (-1, 0, 1)}))


class DrawnRandom:
    """The methods of random.Random the generators call, each answered by a Hypothesis draw.
    `randint` stretches: mostly the generator's own range, sometimes up to 4x, sometimes a tile
    boundary (2^k - 1, 2^k, 2^k + 1), rarely up to 64x. Shrinking returns to the plain range."""

    def __init__(self, draw, widen: bool = True):
        self.draw, self.widen = draw, widen

    def randint(self, a: int, b: int) -> int:
        if b <= a:
            return a
        mode = self.draw(st.integers(0, 15)) if self.widen else 0
        if mode in (13, 14):
            edges = [v for v in BOUNDARIES if v >= a]
            if edges:
                return self.draw(st.sampled_from(edges))
        hi = b if mode < 11 else (4 * b + 8 if mode < 15 else 64 * b + 256)
        return self.draw(st.integers(a, hi))

    def random(self) -> float:
        return self.draw(st.floats(0.0, 1.0, exclude_max=True))

    def choice(self, seq):
        return self.draw(st.sampled_from(list(seq)))


def configs(facts: facts_mod.OpFacts, family: str, widen: bool = True):
    """Configurations the family should run, from one of two sources: a configuration of one of the
    family's valid groups (its shape, perhaps changed in a dimension or two, and its attributes), or
    the op's generator's shape and window attributes in an envelope that takes the shape's rank.
    (Closures, not arguments: Hypothesis prints a strategy with its arguments, and an op's facts
    hold every case of its file.)"""
    def build(draw):
        if draw(st.sampled_from(SOURCES)) == "group":
            return _group_config(draw, facts, family, widen)
        return _config(draw, facts, family, widen)
    return st.composite(build)()


# where a valid configuration comes from; shrinking goes towards the first: the case file's own
SOURCES = ("group", "generator")


def _envelope(draw, envelopes):
    """A dtype first, then a group that runs it, then one of that group's envelopes with the dtype:
    each dtype and each group as likely as any other, however many formats, layouts and value
    classes a group multiplies into (a group is one path the case file was written for)."""
    dtype = draw(st.sampled_from(list(dict.fromkeys(e.dtype for e in envelopes))))
    mine = [e for e in envelopes if e.dtype == dtype]
    group = draw(st.sampled_from(list(dict.fromkeys(e.group for e in mine))))
    return draw(st.sampled_from([e for e in mine if e.group == group]))


def _group_config(draw, facts: facts_mod.OpFacts, family: str, widen: bool) -> Config:
    env = _envelope(draw, [e for e in facts.envelopes_on(family) if e.configs])
    shape, attrs = draw(st.sampled_from(env.configs))
    if widen:
        shape = _changed_shape(draw, shape)
    assume(elements(shape) <= MAX_SHAPE_ELEMENTS)
    return Config(env, shape, attrs)


def _changed_shape(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape with 0-2 dimensions changed: one more or less, doubled, halved, a tile boundary
    (2^k - 1, 2^k, 2^k + 1) or, rarely, 0 (an empty tensor); the last dimension (a row, where a
    kernel's tail lives) as often as all the others. Shrinking returns to the group's."""
    shape = list(shape)
    for _ in range(draw(st.sampled_from((0, 0, 1, 1, 2)))):
        i = len(shape) - 1 if draw(st.booleans()) else draw(st.integers(0, len(shape) - 1))
        d = shape[i]
        how = draw(st.integers(0, 15))
        shape[i] = (d + 1 if how < 3 else max(1, d - 1) if how < 6 else 2 * d if how < 8 else max(1, d // 2)
                    if how < 10 else draw(st.sampled_from(BOUNDARIES)) if how < 15 else 0)
    return tuple(shape)


def _config(draw, facts: facts_mod.OpFacts, family: str, widen: bool) -> Config:
    p, _ = facts.gen_config(DrawnRandom(draw, widen))
    shape = tuple(int(d) for d in p.shape)
    if widen and draw(st.integers(0, 3)) == 3:       # a row at a tile boundary (wider than its windows)
        shape = shape[:-1] + (max(shape[-1], draw(st.sampled_from(BOUNDARIES))),)
    if widen and draw(st.integers(0, 19)) == 19:
        shape = (0,) + shape[1:]                      # an empty leading dimension
    assume(elements(shape) <= MAX_SHAPE_ELEMENTS)
    fitting = [e for e in facts.envelopes_on(family) if len(shape) in e.ranks]
    assume(fitting)
    env = _envelope(draw, fitting)
    attrs, scalars, held = [], dict(env.scalars), facts.held_elements(family)
    for param in facts.op.attr_params:
        if param.type in facts_mod.SCALAR:
            values = scalars.get(param.name) or ()
            assume(values)
            value = draw(st.sampled_from(values))
            if param.type == "int64" and len(values) > 1 and draw(st.integers(0, 9)) == 9:
                value = draw(st.sampled_from(INT64_NEAR_LIMITS))
        else:
            assume(param.name in p.attrs)
            value = frozen(p.attrs[param.name])
            if isinstance(value, tuple) and param.name in held:
                value = (held[param.name],) * len(value)
            # a NULL array no valid case passes is the invalid strategy's business (a defect)
            assume(value is not None or param.name in facts.null_arrays)
            # an array that multiplies into a tensor's size (an output volume) must keep it preparable
            if isinstance(value, tuple) and len(value) > 1:
                assume(elements(shape[:2]) * elements(tuple(abs(v) for v in value)) <= MAX_SHAPE_ELEMENTS)
        attrs.append((param.name, value))
    return Config(env, shape, tuple(attrs))


def examples(facts: facts_mod.OpFacts, family: str, oracle: Oracle, invalid: bool):
    """Examples of the op on `family`: valid configurations, or a valid base with 1-3 defects."""
    def build(draw):
        return _example(draw, facts, family, oracle, invalid)
    return st.composite(build)()


def _example(draw, facts: facts_mod.OpFacts, family: str, oracle: Oracle, invalid: bool) -> Example:
    config = draw(configs(facts, family, widen=not invalid or draw(st.booleans())))
    ex = Example(facts, family, config)
    if not invalid:
        return ex
    try:
        base, _ = oracle.answer(ex)
        shapes = oracle.tensor_shapes(ex)
    except ValueError:
        assume(False)
    assume(base.status == 0)                          # defects on a base the model accepts
    choices = defect_choices(facts, ex, shapes)
    # a kind first, then an argument, then its new value: each kind is as likely as any other, and the
    # dtypes the op's case file knows come before the rest of the ABI's table
    by_kind: dict = {}
    for d in choices:
        by_kind.setdefault(d.kind, {}).setdefault(d.target, []).append(d)
    known = {e.dtype for e in facts.envelopes} | {e.index_dtype for e in facts.envelopes}
    for targets in by_kind.values():
        for values in targets.values():
            values.sort(key=lambda d: d.kind == "dtype" and d.value not in known)
    attrs = dict(ex.config.attrs)
    written = [s for s in scenario_defects(facts) if all(d.kind != "attr" or d.target in attrs for d in s)]
    pairs = paired_shape_defects(facts, shapes)
    whole = whole_call_dtypes(facts)
    picked: list = []
    for _ in range(draw(st.integers(1, 3))):
        for _attempt in range(4):
            if written and draw(st.booleans()):             # the changes of one of the case file's scenarios
                new = draw(st.sampled_from(written))
            elif pairs and draw(st.integers(0, 3)) == 0:    # two tensors changed alike
                new = draw(st.sampled_from(pairs))
            elif whole and draw(st.integers(0, 3)) == 0:    # every data (or index) tensor in one dtype
                new = draw(st.sampled_from(whole))
            else:
                targets = by_kind[draw(st.sampled_from(sorted(by_kind)))]
                values = targets[draw(st.sampled_from(sorted(targets)))]
                new = (draw(st.sampled_from(values[:len(known)] if draw(st.booleans()) else values)),)
            clash = any((d.kind, d.target) == (q.kind, q.target) or d.kind == q.kind == "null"
                        for d in new for q in picked)
            if not clash and refused_alone(oracle, ex, new):
                picked += new
                break
    assume(picked)
    return replace(ex, defects=tuple(picked))
