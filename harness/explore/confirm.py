"""Confirmation by experiment (`python -m harness.reporting triage RUN --confirm`).

A cause from harness/triage is a hypothesis: "the cases where this predicate holds fail this way, and
the others do not". This module tests it by running new cases that the run did not hold:

* every cause's failing cases become explore Examples (the case from its case file, its family;
  neighbours.py);
* their neighbours: one thing changed at a time (a dim, an attribute, the dtype/labels/layout/values
  of another valid group of the op, the family, a defect removed), each planned by the op's phase-1
  model or golden (explore's Oracle) so that it carries its own expectation;
* each neighbour's case facts are read by the triage's own features and sorted into *inside* the
  predicate and *outside* it; outside ones that break exactly one atom come first, one atom after
  another, since a near miss is what tells a predicate that is too wide;
* they run in the suite's case workers (explore's Session, one per family) on the library of this
  process, which must be the library the run used (same sha256, same SWCANN_* fault switches);
* a prediction holds where an inside case fails with the cause's signature and an outside case does
  not; the cause is `confirmed` when both shares reach the triage's precision and recall bounds;
* a refuted predicate gives way to each one the run could not tell from it (the cause's
  equivalents), until one is confirmed;
* one failure per cause is shrunk (explore's reductions, values and labels included) while it still
  fails with that signature, and written as a case-file group and a C reproducer (explore's emit).

It lives in harness/explore because it runs cases; harness/triage stays a reader of records.
"""
from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

from ..reporting import identity
from ..target import Target, discovery
from ..triage import features, signature as sig
from ..triage.search import PRECISION, RECALL, Cause, Triage
from . import emit, facts as facts_mod
from .example import Example
from .neighbours import broken_atoms, candidates_of, constants, example_of, facts_of_plan, simplest
from .oracle import Oracle, Plan
from .search import Finding, reductions, signature as explore_signature
from .session import Session, prepare_environment

PER_SIDE = 8            # new cases run inside, and outside, each predicate
SEEDS_PER_CAUSE = 3     # failing cases whose neighbourhoods are drawn from
SHRINK_TRIES = 80       # cases run to shrink one failure of a cause
# switches that change what the software CANN computes: a confirmation under others tests another library
BEHAVIOUR_SWITCHES = ("SWCANN_FAULTS", "SWCANN_DEVIATIONS")


class ConfirmError(ValueError):
    """The confirmation cannot be an experiment on the run's library (one line, for ERROR:)."""


@dataclass
class Trial:
    side: str                   # inside | outside
    case_id: str
    family: str
    broken: str | None          # outside: the predicate's atom(s) the case does not meet
    status: str
    signature: str | None       # the triage signature of its failure, None where it did not fail
    as_predicted: bool
    reason: str = ""


@dataclass
class Confirmation:
    cause: int                  # 1-based, as triage lists them
    signature: str
    predicate: str
    trials: list[Trial] = field(default_factory=list)
    verdict: str = "untested"   # confirmed | refuted | untested
    why: str = ""
    minimal: dict | None = None  # the shrunk failure: case_id, yaml, c_repro, reproduced, steps

    # where the cause's own predicate was refuted and one the run could not tell from it was confirmed
    confirmed_as: str | None = None
    tried: list[dict] = field(default_factory=list)     # every predicate put to the test, in order

    def share(self, name: str) -> str:
        return _share(self.trials, name)

    def to_dict(self) -> dict:
        return dict(asdict(self), inside=self.share("inside"), outside=self.share("outside"))


# ------------------------------------------------------------------ the run's library, again

def prepare() -> None:
    """Find the CANN (building the software CANN where there is none) before anything is printed:
    a CANN whose libraries need set_env.sh re-executes this process with it applied."""
    discovery.prepare_process(no_sw_fallback=False)


def check_library(identity_doc: dict, target: Target, environ: dict) -> None:
    """Refuse to confirm on a library other than the run's: its files' sha256 (by file name, since
    a copy may sit elsewhere) and the SWCANN_* switches that change its behaviour must agree."""
    check_switches(identity_doc, environ)
    then = {Path(p).name: h for p, h in (identity_doc.get("library_sha256") or {}).items() if h}
    now = {Path(p).name: h for p, h in identity.library_hashes(target).items() if h}
    changed = sorted(n for n in then if n in now and then[n] != now[n])
    if changed:
        raise ConfirmError(f"the library this process loads is not the run's ({', '.join(changed)} differ by sha256): "
                           f"confirm with the CANN the run used")


def check_switches(identity_doc: dict, environ: dict) -> None:
    """What can be told before any library is loaded: the backend, and the switches that change what
    the software CANN computes."""
    if identity_doc.get("backend") not in (None, "", "aclnn"):
        raise ConfirmError(f"--confirm runs cases on the aclnn backend; the run used {identity_doc.get('backend')!r}")
    was = identity_doc.get("switches") or {}
    for name in BEHAVIOUR_SWITCHES:
        if (was.get(name) or "") != (environ.get(name) or ""):
            raise ConfirmError(f"the run was made with {name}={was.get(name) or '(unset)'}, this process has "
                               f"{name}={environ.get(name) or '(unset)'}: confirm in the run's environment")


# ------------------------------------------------------------------ the experiment

class _Sessions:
    """One Session per family, opened when first needed (prepare_environment hands each its SoC)."""

    def __init__(self, directory: Path, root: Path, argv: list[str], identities: dict[str, dict], log):
        self.dir, self.root, self.argv, self.identities, self.log = directory, root, argv, identities, log
        self.open: dict[str, Session] = {}

    def get(self, family: str) -> Session:
        if family not in self.open:
            # the SoC the run's library was for that family (a full SoC name keeps its variant);
            # one handed over for the previous family must not be taken for this one's
            soc = (self.identities.get(family) or {}).get("soc_name")
            if soc:
                os.environ[discovery.SOC_VARIABLE] = soc
            else:
                os.environ.pop(discovery.SOC_VARIABLE, None)
            prepare_environment(family)
            session = Session(self.dir / family, family, self.root, self.argv)
            try:
                # a family the run did not test has no library to agree with: any run's will do
                ident = self.identities.get(family) or next(iter(self.identities.values()), {})
                check_library(ident, session.target, dict(os.environ))
            except ConfirmError:
                session.close()
                raise
            self.open[family] = session
            self.log(f"{session.label} confirming causes on {family}")
        return self.open[family]

    def close(self) -> None:
        for s in self.open.values():
            s.close()


def _fails_as(record: dict, signature: str) -> bool:
    return sig.is_failing(record) and sig.of(record) == signature


def _ordered(cands: list[tuple], rng: random.Random, spread: bool) -> list[tuple]:
    """The candidates in the order they are tried, drawn by the seed; with `spread`, near misses
    first, one broken atom after another (round robin), then the rest."""
    cands = cands[:]
    rng.shuffle(cands)
    if not spread:
        return cands
    by_atom: dict[str, list] = {}
    rest = []
    for c in cands:
        (by_atom.setdefault(c[1][0], []) if len(c[1]) == 1 else rest).append(c)
    out: list = []
    while any(by_atom.values()):
        for atom in sorted(by_atom):
            if by_atom[atom]:
                out.append(by_atom[atom].pop())
    return out + rest


def _test(signature: str, texts: list[str], terms: list[dict], candidates: list[tuple], planned, kept: dict,
          run, per_side: int, seed: int) -> tuple[list[Trial], str, str]:
    """One predicate put to the test: (its trials, verdict, why). Candidates are planned lazily, in
    the order their probe facts put them (inside, outside near misses first), and sorted again by
    their planned case's facts, until each side has `per_side`."""
    probe = SimpleNamespace(predicate=texts, terms=terms)
    rng = random.Random(f"{seed}:{signature}:{' ∧ '.join(texts)}")
    first = [(ex, broken_atoms(probe, present)) for ex, present in candidates]
    order = _ordered([c for c in first if not c[1]], rng, False) + _ordered([c for c in first if c[1]], rng, True)
    sides: dict[str, list] = {"inside": [], "outside": []}
    for ex, _guess in order:
        if all(len(v) >= per_side for v in sides.values()):
            break
        plan = planned(ex)
        if plan.case is None:
            continue
        present = facts_of_plan(plan)
        if any((name, value) not in present for name, value in kept.items()):
            continue            # it left what the whole run held constant (a call phase 1 refuses)
        broken = broken_atoms(probe, present)
        side = sides["outside" if broken else "inside"]
        if len(side) < per_side:
            side.append((plan, broken))
    trials = []
    for side, chosen in sides.items():
        for plan, broken in chosen:
            record = run(plan)
            got = sig.of(record) if sig.is_failing(record) else None
            hit = got == signature
            trials.append(Trial(side, plan.case.id, plan.example.family, " ∧ ".join(broken) or None,
                                str(record.get("status")), got, hit if side == "inside" else not hit,
                                str(record.get("reason") or "")[:240]))
    verdict, why = _verdict([t for t in trials if t.side == "inside"], [t for t in trials if t.side == "outside"])
    return trials, verdict, why


def confirm_cause(number: int, cause: Cause, failing: list[Example], oracles: dict, sessions: _Sessions,
                  families: list[str], per_side: int, seed: int, out_dir: Path, log, shrink: bool = True,
                  kept: dict[str, str] | None = None) -> Confirmation:
    """The cause's predicate put to the test; where the experiment refutes it, each predicate the run's
    records could not tell from it (its equivalents) in turn, until one is confirmed."""
    conf = Confirmation(number, cause.signature, cause.text)
    candidates = candidates_of(failing, families, SEEDS_PER_CAUSE)
    if not candidates:
        conf.why = "no new case could be made around its failures"
        return conf
    ran: dict[tuple[str, str], dict] = {}
    plans: dict[str, Plan] = {}

    def planned(ex: Example) -> Plan:        # planned once, whichever predicate asks
        if ex.key not in plans:
            plans[ex.key] = oracles[ex.op].plan(ex)
        return plans[ex.key]

    def run(plan: Plan) -> dict:            # a case already run for another predicate is not run again
        key = (plan.example.family, plan.case.id)
        if key not in ran:
            ran[key] = sessions.get(plan.example.family).run(plan.case)
        return ran[key]

    options = [(cause.predicate, cause.terms)]
    options += [([features.atom_text(t["feature"], t["value"]) for t in alt], alt) for alt in cause.alternatives]
    for texts, terms in options:
        trials, verdict, why = _test(cause.signature, texts, terms, candidates, planned, kept or {}, run, per_side, seed)
        text = " ∧ ".join(texts)
        conf.tried.append({"predicate": text, "verdict": verdict, "why": why,
                           "inside": _share(trials, "inside"), "outside": _share(trials, "outside")})
        log(f"cause {number}: {text}: {verdict}: inside {_share(trials, 'inside')} failed as predicted, "
            f"outside {_share(trials, 'outside')} did not")
        if verdict == "confirmed" or text == cause.text:
            conf.trials, conf.verdict, conf.why = trials, verdict, why
        if verdict == "confirmed":
            conf.confirmed_as = text
            break
    if shrink:
        conf.minimal = _shrink(cause, failing, oracles, sessions, out_dir, log)
    return conf


def _share(trials: list[Trial], side: str) -> str:
    mine = [t for t in trials if t.side == side]
    return f"{sum(t.as_predicted for t in mine)}/{len(mine)}"


def _verdict(ins: list[Trial], outs: list[Trial]) -> tuple[str, str]:
    if not ins or not outs:
        missing = "inside" if not ins else "outside"
        return "untested", f"no new case {missing} the predicate could be made around its failures"
    i_ok = sum(t.as_predicted for t in ins) / len(ins)
    o_ok = sum(t.as_predicted for t in outs) / len(outs)
    if i_ok >= RECALL and o_ok >= PRECISION:
        return "confirmed", ""
    why = []
    if i_ok < RECALL:
        why.append("inside but not failing so: " + ", ".join(t.case_id for t in ins if not t.as_predicted)[:400])
    if o_ok < PRECISION:
        why.append("outside but failing so: " + ", ".join(f"{t.case_id} ({t.broken})" for t in outs
                                                           if not t.as_predicted)[:400])
    return "refuted", "; ".join(why)


def _shrink(cause: Cause, failing: list[Example], oracles: dict, sessions: _Sessions, out_dir: Path, log) -> dict | None:
    """Greedy reductions of the cause's simplest failure while it still fails with the cause's
    signature; then its YAML group and C reproducer."""
    ex = simplest(failing)[0]
    oracle = oracles[ex.op]
    plan = oracle.plan(ex)
    if plan.case is None:
        return {"problem": f"the oracle skips the failure it would shrink: {plan.skip}"}
    session = sessions.get(ex.family)
    record = session.run(plan.case)
    if not _fails_as(record, cause.signature):
        return {"problem": f"{plan.case.id} did not fail again as the cause says (got {record.get('status')})"}
    tries, steps, improved = 0, 0, True
    while improved and tries < SHRINK_TRIES:
        improved = False
        for smaller in reductions(plan.example):
            if tries >= SHRINK_TRIES:
                break
            p = oracle.plan(smaller)
            if p.case is None:
                continue
            tries += 1
            r = session.run(p.case)
            if _fails_as(r, cause.signature):
                plan, record, improved, steps = p, r, True, steps + 1
                break
    finding = Finding(explore_signature(ex.op, record), plan, record, 0.0, 0, minimal=not improved)
    note = f"shrunk by python -m harness.reporting triage --confirm on {ex.family} ({session.label}), {identity.now()[:10]}"
    written = emit.write(finding, SimpleNamespace(session=session), out_dir, note,
                         f"a minimal failure of the triage cause `{cause.text}`")
    log(f"  minimal failure of the cause after {steps} reduction(s), {tries} case(s) run: {plan.case.id}"
        f" ({'minimal' if finding.minimal else 'shrinking stopped at its budget'})")
    return {"case_id": plan.case.id, "example": plan.example.canonical(), "minimal": finding.minimal,
            "reductions": steps, "cases_run": tries, **{k: written.get(k) for k in
                                                         ("yaml", "text", "repro", "c_repro", "reproduced", "problem")}}


def _facts_of_causes(result: Triage, by_key: dict, cases_dir: Path) -> list:
    """The facts of the ops the causes' failures belong to, each case file read once: the file a
    record's node id names, where it lies in `cases_dir` (reading all of them costs seconds)."""
    files = set()
    for cause in result.causes:
        for x in cause.cases:
            nodeid = str((by_key.get((x["case_id"], x["family"])) or {}).get("nodeid") or "")
            path = cases_dir / Path(nodeid.partition("::")[0]).name
            if not nodeid or not path.is_file():
                return facts_mod.find(cases_dir, None)      # a record that does not say: every case file
            files.add(path)
    return [facts_mod.load(str(p)) for p in sorted(files)]


def confirm(records: list[dict], result: Triage, identities: dict[str, dict], *, cases_dir: Path, root: Path,
            out_dir: Path, argv: list[str], per_side: int = PER_SIDE, seed: int = 0, log=print) -> list[Confirmation]:
    """Test every cause of `result` (the triage of `records`) by experiment; `identities`: family ->
    the identity of the run that tested it (its library and switches must be this process's)."""
    by_key = {(r.get("case_id"), r.get("family") or ""): r for r in records if isinstance(r, dict)}
    all_facts = {f.name: f for f in _facts_of_causes(result, by_key, Path(cases_dir))}
    oracles = {name: Oracle(f) for name, f in all_facts.items()}
    cases = {name: {c.id: c for c in f.cases} for name, f in all_facts.items()}
    sessions = _Sessions(Path(out_dir) / "sessions", root, argv, identities, log)
    out: list[Confirmation] = []
    kept = constants([r for r in records if isinstance(r, dict) and (sig.is_failing(r) or sig.is_passing(r))])
    try:
        for number, cause in enumerate(result.causes, 1):
            failing = []
            for x in cause.cases:
                rec = by_key.get((x["case_id"], x["family"]))
                op = rec and rec.get("op")
                case = cases.get(op, {}).get(x["case_id"]) if op else None
                if case is not None and x["family"]:
                    failing.append(example_of(case, x["family"], all_facts[op]))
            if not failing:
                out.append(Confirmation(number, cause.signature, cause.text,
                                        why="none of its failing cases is in the case files of this checkout"))
                continue
            families = sorted({e.family for f in all_facts.values() for e in f.envelopes})
            out.append(confirm_cause(number, cause, failing, oracles, sessions, families, per_side, seed,
                                     Path(out_dir) / "minimal", log, kept=kept))
    finally:
        sessions.close()
    return out


def lines(confirmations: list[Confirmation]) -> list[str]:
    """The confirmations as text (after the causes)."""
    out = []
    for c in confirmations:
        first = c.tried[0]["verdict"] if c.tried else c.verdict
        said = f" as `{c.confirmed_as}` (the run could not tell it from `{c.predicate}`: {first})" \
            if c.confirmed_as and c.confirmed_as != c.predicate else ""
        out.append(f"cause {c.cause} — {c.verdict}{said}" + (f": inside {c.share('inside')} failed as predicted, "
                                                              f"outside {c.share('outside')} did not" if c.trials else "")
                   + (f"; {c.why}" if c.why else ""))
        m = c.minimal or {}
        if m.get("case_id"):
            out.append(f"    minimal failure: {m['case_id']} ({'reproduced' if m.get('reproduced') else 'NOT reproduced'}"
                       f" from its YAML {m.get('yaml')}; C reproducer: {m.get('c_repro') or 'none'})")
        elif m.get("problem"):
            out.append(f"    no minimal failure: {m['problem']}")
    return out
