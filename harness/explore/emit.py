"""A finding, written so that a person can keep it: a case-file group, a repro line, a C program.

The group (a matrix group for a valid example, an invalid group with one scenario otherwise) is
named `explore_<hash>` like the case the search ran, so the pasted case has the same id and draws
the same input values. It carries the expected status and check (or the standard) and a `note:`
saying how it was found. Before it is reported, the group is loaded by the case-file loader itself
(in a copy of the op's case file whose groups are only this one) and its case run again: a finding
is `reproduced` when that case fails the same way.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from .. import operators
from ..core import dtypes, families
from ..model import Case
from ..repro import lookup as repro_lookup, write_c_repro


def _per_tensor(pairs) -> object:
    """One label for every tensor, or {default: most common, tensor: other}."""
    values = dict(pairs)
    labels = list(values.values())
    if len(set(labels)) == 1:
        return labels[0]
    common = max(set(labels), key=labels.count)
    return {"default": common, **{t: v for t, v in values.items() if v != common}}


def _plain(v):
    """A value as the case file spells it: a list for a tuple, a platform record's name for a
    DType or Family."""
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v.name if isinstance(v, (dtypes.DType, families.Family)) else v


def group_of(finding, note: str, how: str = "found by ./run explore") -> dict:
    """The case-file group of a finding's (minimal) example."""
    plan = finding.plan
    ex, case = plan.example, plan.case
    env = ex.config.envelope
    group: dict = {"name": ex.group, "description": f"{how}: {finding.signature}",
                   "note": note, "families": [_plain(ex.family)]}
    if case.kind == "valid":
        if case.standard != ex.facts.op.standard:
            group["standard"] = case.standard
        if env.deterministic:
            group["deterministic"] = True
        if env.relaunch:
            group["relaunch"] = True
        if env.deviations:
            group["deviations"] = [{"backend": d.backend, **({"dtype": _plain(d.dtypes)} if d.dtypes else {}),
                                    **({"families": _plain(d.families)} if d.families else {}), "reason": d.reason}
                                   for d in env.deviations]
        matrix = {"shape": [list(ex.config.shape)], "dtype": [_plain(env.dtype)]}
        if env.index_dtype:
            matrix["index_dtype"] = [_plain(env.index_dtype)]
        matrix.update({"format": [_per_tensor(case.formats)], "layout": [_per_tensor(env.layouts)],
                       "values": [env.values.name], "attrs": [ex.config.attr_dict]})
        group["matrix"] = matrix
        return group
    base = {"shape": list(ex.config.shape), "dtype": _plain(env.dtype)}
    if env.index_dtype:
        base["index_dtype"] = _plain(env.index_dtype)
    base.update({"format": _per_tensor(case.formats), "layout": _per_tensor(env.layouts), "values": env.values.name,
                 "attrs": ex.config.attr_dict})
    scenario: dict = {"name": ex.label}
    if case.check:
        scenario["check"] = case.check
    scenario["status"] = case.status[ex.family]
    mutation = case.mutation
    if mutation.null:
        scenario["null"] = mutation.null
    if mutation.tensors:
        scenario["tensors"] = {t: {k: _plain(v) for k, v in ch.items()} for t, ch in mutation.tensors.items()}
    if mutation.attrs:
        scenario["attrs"] = {k: _plain(v) for k, v in mutation.attrs.items()}
    group["invalid"] = {"base": base, "scenarios": [scenario]}
    return group


def dump_group(group: dict) -> str:
    """The group as YAML to paste under the `groups:` of its op's case file."""
    text = yaml.safe_dump([group], sort_keys=False, default_flow_style=None, width=110)
    return "".join("  " + line if line.strip() else line for line in text.splitlines(True))


def load_group(case_file: Path, group: dict, directory: Path) -> list[Case]:
    """The cases the group expands to, read by the case-file loader from a copy of `case_file`
    whose groups are only this one."""
    doc = yaml.safe_load(Path(case_file).read_text())
    doc["groups"] = [group]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{Path(case_file).stem}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    _op, cases = operators.load_case_file(path)
    return cases


def write(finding, search, directory: Path, note: str, how: str = "found by ./run explore") -> dict:
    """Write the finding's YAML, repro line and C reproducer under `directory`; check that the
    emitted case loads and fails the same way. Returns what was written (finding.emitted)."""
    from .search import signature
    ex = finding.plan.example
    out = Path(directory) / ex.group
    out.mkdir(parents=True, exist_ok=True)
    group = group_of(finding, note, how)
    text = dump_group(group)
    (out / "case.yaml").write_text(text)
    emitted: dict = {"yaml": str(out / "case.yaml"), "group": ex.group, "case_id": finding.plan.case.id,
                     "text": text, "repro": search.session.repro(finding.plan.case)}
    try:
        cases = load_group(ex.facts.path, group, out / "check")
    except Exception as e:          # a finding whose YAML the loader refuses must say so, not vanish
        emitted.update(loads=False, reproduced=False, problem=f"the loader refuses the emitted group: {e}")
        return emitted
    emitted["loads"] = True
    case = next((c for c in cases if c.id == finding.plan.case.id), None)
    if case is None:
        emitted.update(reproduced=False, problem=f"the group expands to {[c.id for c in cases]}, not the case run")
        return emitted
    record = search.session.run(case)
    emitted["reproduced"] = signature(ex.op, record) == finding.signature and record.get("status") != "PASS"
    emitted["reproduced_status"] = record.get("status")
    try:
        args, golden = repro_lookup.materials(case, ex.family)
        write_c_repro(case, args, golden, out / "c", ex.family)
        emitted["c_repro"] = str(out / "c")
    except Exception as e:          # the YAML and repro line stand without it
        emitted["c_repro_problem"] = f"{type(e).__name__}: {e}"
    return emitted
