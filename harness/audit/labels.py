"""Labels as real callers set them: no valid case may depend on a format label the real code refuses.

torch_npu, op-plugin and MindSpore tag a tensor by its rank (3-D NCL, 4-D NCHW, 5-D NCDHW), and the
generic L0 operators every pooling API calls after its own checks refuse a label that does not fit
the tensor (shared/spec/l0_format_rules.md). A valid case whose labels stray from that passes on a
library that skips those rules and fails on a correct one. So a valid (case, family) pair that
expects status 0 is a gap when

* a tensor carries a label whose fixed rank is not the tensor's (formats.fits_rank: 3-D NCHW, 4-D
  NCL or NCDHW, 5-D NCHW, ...), or
* a label is not the callers' and the op's phase-1 model refuses the call with one of its L0 rules
  (AdaptiveMaxPool2d's 3-D ND: ND has no fixed rank, yet its final copy wants NCL),

unless the case belongs to a group that tests labels on purpose: an L0-rule group (`l0_*`: labels
the rules accept at the boundary, with the evidence in its description) or a deviation group
(`dev_*`). `tests/test_labels.py` fails on a gap; `python -m harness.audit.coverage` prints the count.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import formats
from ..judge import phase1_model
from ..model import Case
from . import traceability

EXEMPT_PREFIXES = ("l0_", "dev_")


@dataclass(frozen=True)
class LabelGap:
    case_id: str
    family: str
    what: str

    def __str__(self) -> str:
        return f"{self.case_id} on {self.family}: {self.what}"


def exempt(case: Case) -> bool:
    return case.group.startswith(EXEMPT_PREFIXES)


def off_rank(case: Case) -> list[str]:
    """The tensors whose label has another fixed rank than theirs, as 'name LABEL/rank'."""
    rank = len(case.shape)
    return [f"{t} {label}/{rank}" for t, label in sorted(case.formats.items()) if not formats.fits_rank(label, rank)]


def gaps(loaded: traceability.Loaded, with_model: bool = True) -> list[LabelGap]:
    """Every valid pair outside the exempt groups that depends on a label the real code refuses.
    with_model: also ask each op's phase-1 model (prepares every case's inputs: a few seconds)."""
    found = []
    for op, cases in loaded:
        model = phase1_model.model_of(op) if with_model else None
        for case in cases:
            if case.kind != "valid" or case.skip or exempt(case):
                continue
            families = [f for f in case.families if case.expected_status(f) == 0]
            if not families:
                continue
            static = off_rank(case)
            if static:
                found += [LabelGap(case.id, f, "label of another rank: " + ", ".join(static)) for f in families]
                continue
            if model is None or callers_labels(case):
                continue            # real callers pass exactly these labels: what the rules are built for
            call = phase1_model.call_for(case)
            for fam in families:
                verdict = model(call, fam)
                if verdict.check and verdict.check.startswith("L0."):
                    found.append(LabelGap(case.id, fam, f"refused by {verdict.check} with {verdict.status} "
                                                        f"(labels {formats_id(case)})"))
    return found


def callers_labels(case: Case) -> bool:
    rank = len(case.shape)
    return all(label == formats.caller_label(rank) for label in case.formats.values())


def formats_id(case: Case) -> str:
    return ", ".join(f"{t} {label}" for t, label in sorted(case.formats.items()))


def render(found: list[LabelGap]) -> str:
    head = (f"{len(found)} valid (case, family) pair(s) outside the l0_/dev_ groups carry a label the real "
            "code refuses for their rank")
    return "\n".join([head, ""] + [f"- {g}" for g in found[:50]] + ([f"- ... {len(found) - 50} more"]
                                                                    if len(found) > 50 else []))
