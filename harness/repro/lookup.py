"""Finding a case by its id in the case files, and making what its reproducer is written from:
the inputs and golden as the case worker makes them, and the backend's argument list."""
from __future__ import annotations

import difflib
from pathlib import Path

from .. import inputs as inputs_mod
from ..core.paths import CASES_DIR
from ..judge import cache as cache_mod
from ..operators import load_case_file
from ..model import Case
from ..inputs import Arg


class UnknownCase(LookupError):
    """One line: the id, and the ids closest to it."""


def find(case_id: str, cases_dir=CASES_DIR) -> Case:
    """The case of `case_id`: its id (`Op.group[...]`, as records and reports name it) or its pytest
    node id (`cases/<file>.yaml::group[...]`, as `--collect-only` and a FAILED line print it)."""
    known: dict[str, Case] = {}
    by_node: dict[str, Case] = {}
    for path in sorted(Path(cases_dir).glob("*.y*ml")):
        _op, cases = load_case_file(path)
        known.update((c.id, c) for c in cases)
        by_node.update((f"{path.name}::{c.id.partition('.')[2]}", c) for c in cases)
    if case_id in known:
        return known[case_id]
    file, sep, node = case_id.rpartition("::")
    if sep and (case := by_node.get(f"{Path(file).name}::{node}")):
        return case
    close = difflib.get_close_matches(case_id, list(known), n=3, cutoff=0.6)
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise UnknownCase(f"unknown case id {case_id!r} in {cases_dir}{hint}")


def materials(case: Case, family: str) -> tuple[list[Arg], dict | None]:
    """(the backend's argument list, the golden outputs or None) for `case` on `family`, made as
    harness/judge/runner.py makes them."""
    made = cache_mod.materials(case, case.runs_numerics(family), None)
    inputs = inputs_mod.mutate(case, made.prepared)
    args = inputs_mod.build_args(case, inputs, tuple(made.prepared[case.op.output_like].shape))
    return args, made.expected
