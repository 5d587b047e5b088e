"""swcann.mutate picks only code a default run executes (its mutants could be killed)."""
from __future__ import annotations

from pathlib import Path

from swcann import mutate

REPO = Path(__file__).resolve().parents[1]


def test_sites_are_op_code_a_default_run_executes():
    found = mutate.sites(REPO)
    assert len(found) > 300
    for path, i, start, end, replacement in found:
        line = (REPO / path).read_text().splitlines()[i]
        assert not any(word in line for word in mutate.SKIPPED), line      # fault injection, deviations, messages
        assert line[start:end] != replacement                                # a real change
    assert {Path(p).name for p, *_ in found} >= {"pool_kernels.c", "common.c", "max_unpool3d_backward.c"}


def test_a_check_written_with_the_wrong_comparison_is_a_site():
    """The B28 size check of MaxPool3d (D*H*W <= INT32_MAX): `>` to `>=` is one of its mutants."""
    hits = [(p, i, r) for p, i, s, e, r in mutate.sites(REPO) if p.endswith("max_pool3d_with_argmax_backward.c")
            and "dhw > INT32_MAX" in (REPO / p).read_text().splitlines()[i] and r == ">="]
    assert hits
