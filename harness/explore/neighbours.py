"""The new cases a triage cause is tested with (confirm.py): a run's case as an explore Example, its
neighbours one change away, and which atoms of a predicate a planned case breaks, read by the
triage's own features from the record the case will make."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from ..core import formats as formats_mod
from ..model import Case
from ..reporting import records as rec_mod
from ..triage import features
from ..triage.search import Cause
from . import facts as facts_mod
from .example import Config, Defect, Example, invalid_case, valid_case
from .oracle import Plan


def example_of(case: Case, family: str, facts) -> Example:
    """The case as an explore Example on `family`: an envelope made of the case's own dtype, labels,
    layouts and values (so that nothing but what a neighbour changes differs), its shape and
    attributes, and its invalid scenario's changes as defects."""
    rank = len(case.shape)
    env = facts_mod.Envelope(case.group, family, case.dtype, case.index_dtype, tuple(sorted(case.formats.items())),
                             tuple(sorted(case.layouts.items())), case.values, case.standard, frozenset({rank}), (),
                             case.deviations, case.deterministic, case.relaunch,
                             all(f == formats_mod.caller_label(rank) for f in case.formats.values()))
    attrs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in case.attrs.items())
    defects: list[Defect] = []
    m = case.mutation
    if m is not None:
        if m.null:
            defects.append(Defect("null", m.null))
        for tensor, changes in m.tensors.items():
            defects += [Defect(kind, tensor, tuple(v) if isinstance(v, list) else v) for kind, v in changes.items()]
        defects += [Defect("attr", k, tuple(v) if isinstance(v, list) else v) for k, v in m.attrs.items()]
    return Example(facts, family, Config(env, tuple(case.shape), attrs), tuple(defects))


def _dims(d: int) -> list[int]:
    return [v for v in dict.fromkeys([d - 1, d + 1, d + 2, d * 2, d // 2, d + 16, d - 16, d + 3]) if v >= 1 and v != d]


def _attr_values(value, seen: list) -> list:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [v for v in dict.fromkeys([value - 1, value + 1, *seen]) if v != value and isinstance(v, int)]
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        out = []
        for i, v in enumerate(value):
            out += [value[:i] + (w,) + value[i + 1:] for w in (v - 1, v + 1) if w >= 0]
        return out + [v for v in seen if isinstance(v, tuple) and v != value]
    return [v for v in seen if v != value]


def neighbours(ex: Example, families: list[str]) -> list[Example]:
    """Every example one change away from `ex`: a dim, an attribute, the rank (the batch dim dropped
    or a batch of one added, where the op takes that rank), another valid group's
    dtype/labels/layouts/values on the same rank, another family, a defect removed."""
    facts, cfg = ex.facts, ex.config
    out: list[Example] = []
    for i, d in enumerate(cfg.shape):
        out += [replace(ex, config=replace(cfg, shape=cfg.shape[:i] + (v,) + cfg.shape[i + 1:])) for v in _dims(d)]
    seen_attrs: dict[str, list] = {}
    for e in facts.envelopes:
        for shape, attrs in e.configs:
            for k, v in attrs:
                if v not in seen_attrs.setdefault(k, []) and len(seen_attrs[k]) < 6:
                    seen_attrs[k].append(v)
    for name, value in cfg.attrs:
        out += [replace(ex, config=cfg.with_attr(name, v)) for v in _attr_values(value, seen_attrs.get(name, []))]
    rank = len(cfg.shape)
    ranks = {r for e in facts.envelopes_on(ex.family) for r in e.ranks}
    if rank - 1 in ranks and len(cfg.shape) > 1:          # without the batch dim (a 3-D call of a 2-D pool)
        out.append(replace(ex, config=replace(cfg, shape=cfg.shape[1:])))
    if rank + 1 in ranks:                                  # with a batch of one
        out.append(replace(ex, config=replace(cfg, shape=(1,) + cfg.shape)))
    for env in facts.envelopes_on(ex.family):
        if rank in env.ranks and (env.dtype, env.index_dtype, env.formats, env.layouts, env.values.name) != \
                (cfg.envelope.dtype, cfg.envelope.index_dtype, cfg.envelope.formats, cfg.envelope.layouts,
                 cfg.envelope.values.name):
            out.append(replace(ex, config=replace(cfg, envelope=env)))
    for fam in families:
        if fam != ex.family:
            out.append(replace(ex, family=fam, config=replace(cfg, envelope=replace(cfg.envelope, family=fam))))
    out += [ex.without(i) for i in range(len(ex.defects))]
    return out


def facts_of_plan(plan: Plan) -> set[tuple[str, str]]:
    """The triage features of the case a plan runs: the record it will make, as far as features read it."""
    case = plan.case
    rec = dict(rec_mod.facts_of(case, ""), family=plan.example.family)
    return {(name, value) for name, value, _cx in features.of(rec)}


# facts a run may hold constant: a new case changing one of them leaves what the triage learned from
# (a run of one family says nothing of another family; a predicate learned on valid cases says
# nothing of a call phase 1 refuses)
CONSTANT_FACTS = ("op", "family", "kind", "dtype", "index_dtype", "rank", "format", "layout", "values")


def constants(records: list[dict]) -> dict[str, str]:
    """The CONSTANT_FACTS that every record of the run has, with one value (a fact only some records
    carry, such as the value class of valid cases, is not a constant of the run)."""
    seen: dict[str, set] = {}
    carried: dict[str, int] = {}
    for rec in records:
        names = set()
        for name, value, _cx in features.of(rec):
            if name in CONSTANT_FACTS:
                seen.setdefault(name, set()).add(value)
                names.add(name)
        for name in names:
            carried[name] = carried.get(name, 0) + 1
    return {name: next(iter(v)) for name, v in seen.items() if len(v) == 1 and carried[name] == len(records)}


def broken_atoms(cause: Cause, present: set[tuple[str, str]]) -> list[str]:
    return [text for text, t in zip(cause.predicate, cause.terms) if (t["feature"], t["value"]) not in present]


def simplest(examples: list[Example]) -> list[Example]:
    """Smallest first: fewest elements, then fewest defects, then the plainest envelope."""
    def size(ex):
        n = 1
        for d in ex.config.shape:
            n *= max(d, 0)
        return (n, len(ex.defects), ex.config.envelope.simplicity)
    return sorted(examples, key=size)


def _probe_facts(ex: Example) -> set[tuple[str, str]]:
    """The triage facts of the case an example would become, without asking the oracle (whose golden
    costs milliseconds an example): the expected check of an invalid one is left out."""
    case = invalid_case(ex, 0, None) if ex.defects else valid_case(ex)
    return facts_of_plan(SimpleNamespace(case=case, example=ex))


def candidates_of(failing: list[Example], families: list[str], seeds: int = 3) -> list[tuple[Example, set]]:
    """(example, its facts as far as known before planning) of every neighbour of the cause's
    simplest failures."""
    known = {ex.key for ex in failing}
    out = []
    for seed_ex in simplest(failing)[:seeds]:
        for nb in neighbours(seed_ex, families):
            if nb.key not in known:
                known.add(nb.key)
                out.append((nb, _probe_facts(nb)))
    return out
