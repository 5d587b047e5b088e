"""Triage: turn a run's failures into a few named causes (issue 33, without --confirm).

1. Signatures (signature.py): the failing records (FAIL, CRASH, TIMEOUT, MISSING, perf REGRESSION)
   grouped by what failed: phase 1's status against the expected one and its check, the check that
   fired instead of the expected one, the failed metric and output, the guard region, the crash
   signal, the timeout.
2. Explanations: per group, the shortest conjunction of atoms `feature = value` (features.py) that
   separates its failures from the run's passing cases (PASS, UNEXPECTED_PASS: the case itself
   passed), with its precision (failures matched / all records matched) and recall (failures
   matched / failures of the group).

Why an exact search and not a decision-tree or rule learner (scikit-learn, wittgenstein, ...):
  * interpretable: a tree's path is a conjunction too, but chosen greedily by impurity, one split
    at a time; it names `W <= 16.5` where the bug is `W mod 16 = 1`, and needs threshold atoms to
    say an equality. Here every atom is a typed fact the reader can check on one case.
  * minimal: breadth-first, so the first size with an answer is the smallest conjunction that
    explains the group; a greedy learner gives no such guarantee.
  * deterministic: no random state, no tie broken by feature order in memory: ties go to higher
    precision, then recall, then simpler features (op, family, dtype before dims and remainders),
    then the text.
  * no new dependency, and fast: each atom is a bitmask over the records (a Python int), a
    conjunction is an AND, its counts are popcounts; the candidate atoms are capped (CANDIDATES,
    best first) and a branch is pruned as soon as it matches too few failures to be a cause or
    no passing case is left to cut. 10,000 records triage in well under a second.

The search, per group with n failures F and the passing cases P:
  * atoms matching fewer than max(MIN_SUPPORT, PARTIAL share of n) failures, or every passing case,
    are dropped; atoms with the same matches over F and P are one candidate (the simplest named;
    the others are its equivalents);
  * levels 1..max_terms: each level extends the previous level's survivors by one later atom;
    a conjunction whose precision is already 1 is not extended (a term more can only lose recall);
  * the first level holding a conjunction with precision >= PRECISION and recall >= RECALL is the
    answer; else the partial conjunction matching the most failures (precision >= PRECISION)
    becomes a cause, and the search runs again on the failures it left (at most PER_GROUP causes);
  * a predicate may not have as many terms as the failures it explains (two failures are not
    "explained" by a 2-term description of them): fewer than MIN_SUPPORT failures, or no conjunction
    good enough, leaves them *unexplained*, never forced into a cause.

Not done here yet: `--confirm` (new cases inside and outside each predicate, run to test it), and
digest drift, which records do not carry (a comparison with a previous run does).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from . import features as feat, signature as sig

PRECISION = 0.9        # at most 1 in 10 of the records a cause matches may have passed
RECALL = 0.9           # a cause that explains its whole group (within noise)
PARTIAL = 0.25         # a partial cause explains at least this share of what is left of its group
MIN_SUPPORT = 2        # failures a cause must explain
PER_GROUP = 3          # causes sought per signature group
CANDIDATES = 40        # atoms kept per search, best first
MAX_TERMS = 4          # the longest conjunction (the example has 4: op, family, a remainder, an attribute)
SHOWN_EQUIVALENTS = 4


@dataclass
class Cause:
    signature: str
    predicate: list[str]            # the atoms, as they read
    terms: list[dict]               # the atoms, typed: {feature, value}
    explained: int                  # failures of the group the predicate matches
    failures: int                   # failures of the group
    passing_matched: int            # passing cases the predicate matches
    passing: int                    # passing cases of the run
    precision: float
    recall: float
    families: list[str]             # the families of the failures it explains
    equivalents: list[str] = field(default_factory=list)   # other predicates matching exactly the same records
    cases: list[dict] = field(default_factory=list)        # {case_id, family, status, reason, repro}
    # the equivalents' atoms, typed as `terms` (the run's records cannot tell them apart; an experiment can)
    alternatives: list[list[dict]] = field(default_factory=list)
    failed_metrics: dict[str, int] = field(default_factory=dict)   # metric -> failures of the cause past it

    @property
    def text(self) -> str:
        return " ∧ ".join(self.predicate)


@dataclass
class Unexplained:
    signature: str
    failures: int                   # of the group, unexplained
    why: str
    cases: list[dict] = field(default_factory=list)


@dataclass
class Triage:
    failures: int
    passing: int
    causes: list[Cause]
    unexplained: list[Unexplained]

    def to_dict(self) -> dict:
        return {"failures": self.failures, "passing": self.passing,
                "causes": [dict(asdict(c), text=c.text) for c in self.causes],
                "unexplained": [asdict(u) for u in self.unexplained]}

    def lines(self, cases: int = 0) -> list[str]:
        """The causes as text (the terminal, `python -m harness.reporting triage`); `cases`: how many
        case ids to list under each."""
        if not self.failures:
            return []
        out = [f"Causes: {self.failures} failure(s) against {self.passing:,} passing case(s)"]
        for i, c in enumerate(self.causes, 1):
            fams = f" on {', '.join(c.families)}" if len(c.families) > 1 else ""
            out += [f"cause {i} — {c.explained} {c.signature}{fams}", f"    {c.text}",
                    f"    explains {c.explained}/{c.failures} of these failures; {c.passing_matched} of "
                    f"{c.passing:,} passing cases match (precision {c.precision:.2f}, recall {c.recall:.2f})"]
            if c.equivalents:
                out.append("    equally: " + "; ".join(c.equivalents))
            if c.failed_metrics:
                out.append("    past their threshold: " + ", ".join(f"{k} {n}" for k, n in c.failed_metrics.items()))
            out += [f"      {x['case_id']} ({x['family'] or 'any'})" for x in c.cases[:cases]]
            if cases and len(c.cases) > cases:
                out.append(f"      … and {len(c.cases) - cases} more")
        for u in self.unexplained:
            out.append(f"unexplained — {u.failures} {u.signature}: {u.why}")
            out += [f"      {x['case_id']} ({x['family'] or 'any'})" for x in u.cases[:cases]]
        return out


@dataclass(frozen=True)
class _Atom:
    mask: int
    name: str
    value: str
    cx: int

    @property
    def text(self) -> str:
        return feat.atom_text(self.name, self.value)

    @property
    def key(self) -> tuple:
        return (self.cx, self.text)


def _masks(records: list[dict]) -> list[_Atom]:
    """One atom per (feature, value) seen, its bitmask over the records."""
    where: dict[tuple[str, str], list[int]] = {}
    cx: dict[tuple[str, str], int] = {}
    for i, rec in enumerate(records):
        for name, value, c in feat.of(rec):
            where.setdefault((name, value), []).append(i)
            cx[(name, value)] = c
    nbytes = (len(records) + 7) // 8
    atoms = []
    for (name, value), idx in where.items():
        buf = bytearray(nbytes)
        for i in idx:
            buf[i >> 3] |= 1 << (i & 7)
        atoms.append(_Atom(int.from_bytes(buf, "little"), name, value, cx[(name, value)]))
    return atoms


def _case(rec: dict) -> dict:
    return {"case_id": rec.get("case_id", "?"), "family": rec.get("family") or "", "status": rec.get("status"),
            "reason": str(rec.get("reason") or "")[:300], "repro": rec.get("repro") or ""}


@dataclass
class _Found:
    atoms: tuple
    f: int
    p: int

    def rank(self) -> tuple:
        """A full explanation's order: higher precision, then recall, then simpler atoms, then the text."""
        return (-self.f / (self.f + self.p), -self.f, sum(a.cx for a in self.atoms), [a.text for a in self.atoms])

    def partial_rank(self) -> tuple:
        """A partial one's: more failures explained first, then shorter, then as rank()."""
        return (-self.f, len(self.atoms), *self.rank())


def _search(F: int, P: int, atoms: list[_Atom], max_terms: int) -> tuple[_Found | None, dict]:
    """The best conjunction for the failures F against the passing P (or None), and each chosen
    atom's equivalents."""
    n, n_p = F.bit_count(), P.bit_count()
    need = max(MIN_SUPPORT, math.ceil(PARTIAL * n))
    max_terms = min(max_terms, n - 1)          # fewer terms than the failures explained
    if n < MIN_SUPPORT or max_terms < 1:
        return None, {}
    groups: dict[tuple[int, int], list[_Atom]] = {}
    for a in atoms:
        f = (a.mask & F).bit_count()
        if f < need:
            continue
        pm = a.mask & P
        if n_p and pm == P:                     # cuts no passing case
            continue
        groups.setdefault((a.mask & F, pm), []).append(a)
    cands, equivalents = [], {}
    for same in groups.values():
        same.sort(key=lambda a: a.key)
        cands.append(same[0])
        equivalents[same[0]] = same[1:]
    cands.sort(key=lambda a: (-(a.mask & F).bit_count(), (a.mask & P).bit_count(), a.key))
    cands = cands[:CANDIDATES]
    best_partial: _Found | None = None
    level = [((i,), c.mask) for i, c in enumerate(cands)]
    for size in range(1, max_terms + 1):
        full, survivors = [], []
        for idx, m in level:
            f, p = (m & F).bit_count(), (m & P).bit_count()
            found = _Found(tuple(cands[i] for i in idx), f, p)
            if f / (f + p) >= PRECISION:
                if f >= RECALL * n:
                    full.append(found)
                elif best_partial is None or found.partial_rank() < best_partial.partial_rank():
                    best_partial = found
            if p:                               # precision 1 cannot improve
                survivors.append((idx, m))
        if full:
            return min(full, key=_Found.rank), equivalents
        if size == max_terms:
            break
        nxt = []
        for idx, m in survivors:
            for j in range(idx[-1] + 1, len(cands)):
                m2 = m & cands[j].mask
                if (m2 & F).bit_count() >= need and m2 & (F | P) != m & (F | P):
                    nxt.append((idx + (j,), m2))
        level = nxt
    return best_partial, equivalents


def triage(records: list[dict], max_terms: int = MAX_TERMS) -> Triage:
    """The causes of a run's failures (records: results.jsonl's, one run or a merge)."""
    records = [r for r in records if isinstance(r, dict)]
    atoms = _masks(records)
    F_all, P, groups = 0, 0, {}
    for i, rec in enumerate(records):
        if sig.is_failing(rec):
            groups.setdefault(sig.of(rec), []).append(i)
            F_all |= 1 << i
        elif sig.is_passing(rec):
            P |= 1 << i
    n_p = P.bit_count()
    causes, unexplained = [], []
    # biggest groups first; equal sizes by their text
    for signature, idx in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        F = 0
        for i in idx:
            F |= 1 << i
        n, left = len(idx), F
        for _ in range(PER_GROUP):
            if left.bit_count() < MIN_SUPPORT:
                break
            found, equivalents = _search(left, P, atoms, max_terms)
            if found is None:
                break
            atoms_read = tuple(sorted(found.atoms, key=lambda a: (feat.reading_order(a.name), a.text)))
            found = _Found(atoms_read, found.f, found.p)
            m = F
            for a in found.atoms:
                m &= a.mask
            f_all = m.bit_count()
            cases = [records[i] for i in _bits(m)]
            alts = _equivalent_predicates(found.atoms, equivalents)[:SHOWN_EQUIVALENTS]
            causes.append(Cause(signature, [a.text for a in found.atoms],
                                [{"feature": a.name, "value": a.value} for a in found.atoms],
                                f_all, n, found.p, n_p, round(f_all / (f_all + found.p), 4), round(f_all / n, 4),
                                sorted({r.get("family") or "" for r in cases} - {""}),
                                [" ∧ ".join(a.text for a in alt) for alt in alts], [_case(r) for r in cases],
                                [[{"feature": a.name, "value": a.value} for a in alt] for alt in alts],
                                _metric_counts(records[i] for i in _bits(m & F))))
            left &= ~m
        if left:
            k = left.bit_count()
            why = (f"{k} failure(s): too few to generalise" if k < MIN_SUPPORT and k == n else
                   f"no conjunction of at most {max_terms} facts matches them with precision >= {PRECISION}"
                   if k == n else "left after the causes above; no short conjunction separates them")
            unexplained.append(Unexplained(signature, k, why, [_case(records[i]) for i in _bits(left)]))
    causes.sort(key=lambda c: (-c.explained, c.signature, c.text))
    return Triage(F_all.bit_count(), n_p, causes, unexplained)


def _metric_counts(failures) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rec in failures:
        for name in sig.metrics(rec):
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _bits(mask: int) -> list[int]:
    out, i = [], 0
    while mask:
        low = mask & -mask
        i = low.bit_length() - 1
        out.append(i)
        mask ^= low
    return out


def _equivalent_predicates(atoms: tuple, equivalents: dict) -> list[list[_Atom]]:
    """Predicates matching the same records: one atom of the answer swapped for an equivalent of it."""
    out = []
    for k, a in enumerate(atoms):
        for alt in equivalents.get(a, []):
            out.append([alt if j == k else b for j, b in enumerate(atoms)])
    return out


__all__ = ["Cause", "Triage", "Unexplained", "triage"]
