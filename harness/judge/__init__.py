"""Judging layer: comparators, the case runner, and the vocabulary case files are checked against."""
from __future__ import annotations

import golden

from .. import backends, model
from . import compare


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
    """model.load with this harness's vocabulary: (OpSpec, [Case]) or CaseFileError."""
    return model.load(path, vocabulary())
