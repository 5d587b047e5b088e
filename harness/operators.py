"""The operators of this checkout: their case files, read with this harness's vocabulary.

An operator is three files (README "Adding an operator"): `cases/<op>.yaml` (its signature, checks,
cases and op-level facts), `golden/<op>.py` (its reference math and INFO) and its software-CANN
source. This module reads the case files (and ATK lists) into OpSpec + Cases; everything else about
an op is asked of its OpSpec or its INFO, never of its name.
"""
from __future__ import annotations

import functools
from pathlib import Path

import golden

from . import backends, model
from .core.errors import CaseFileError
from .judge import casecache, compare
from .model import atk


def vocabulary() -> model.Vocabulary:
    """The goldens, precision standards and backends a case file may name."""
    def gap(standard: str, dtype: str) -> str | None:
        try:
            compare.thresholds(standard, dtype)
        except ValueError as e:
            return str(e)
        return None
    return model.Vocabulary(tuple(golden.available()), compare.STANDARDS, backends.NAMES, gap)


def load_case_file(path):
    """model.load with this harness's vocabulary: (OpSpec, [Case]) or CaseFileError. Expanded
    files are kept between runs (casecache.py): every pytest process collects every file."""
    vocab = vocabulary()
    facts = repr((vocab.goldens, tuple(vocab.standards), vocab.backends))
    return casecache.load(path, facts, lambda p: model.load(p, vocab))


@functools.lru_cache(maxsize=None)
def _case_files(cases_dir: str) -> dict:
    """op name -> (OpSpec, [Case]) of every readable case file in `cases_dir`."""
    out = {}
    for path in sorted(Path(cases_dir).glob("*.y*ml")):
        try:
            op, cases = load_case_file(path)
        except CaseFileError:
            continue        # reported where that file itself is collected
        out[op.name] = (op, cases)
    return out


def load_atk_file(path, cases_dir) -> list[model.Case]:
    """The Cases of an ATK case list, judged as valid cases of the operator's own case file."""
    doc = atk.read(path)
    name = atk.op_name(path, doc)
    known = _case_files(str(cases_dir))
    if name not in known:
        raise CaseFileError(path, f"aclnn_name {name!r} has no readable case file in {cases_dir} "
                                  f"(operators there: {', '.join(known) or 'none'})", None, "aclnn_name")
    op, cases = known[name]
    return atk.load(path, op, cases, vocabulary(), doc)
