"""How fast `./run explore` finds what the fixed cases miss, and the software CANN's named faults.

    python benchmarks/bench_explore.py [--bugs NAME,...] [--faults NAME,...] [--budget 10m] [--seed 0]
                                       [--skip-default-tier] [--json FILE]
    python benchmarks/bench_explore.py --coverage DIR [DIR ...]

Planted bugs (tests/planted_bugs.py): for each, a copy of the repository gets the bug in its
software CANN; the default tier of the op's case file runs on the bug's family and must pass (the
fixed cases miss it); then `./run explore OP --soc F --budget B --seed S --first` must find it. It
prints, per bug, the time to the first disagreement and until its minimal case was certified, checks
that minimality (the last pass tried every single reduction of the case and none failed the same
way), prints the emitted YAML, pastes it into the copy's case file and runs it: it must fail on the
bug and pass once the bug is taken out.

Named faults (SWCANN_FAULTS, the check-level and numeric ones of harness/audit/faults.py): the
same exploration on this checkout with only that fault on (on the op and family faultscore scores it
on). It prints the time to find each and to its minimal case.

--coverage: the phase-1 model branches that none of the given explorations took (their explore.json;
e.g. the fault-free runs on two families), each with the families that missed it.

Each exploration is a whole process (its start-up included in the wall time printed beside it); the
load average is printed first: times taken while other work shares the cores are not comparable.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.audit.faultscore import FAULTS  # noqa: E402
from tests import planted_bugs, swenv  # noqa: E402

KINDS = ("check", "numeric")


def explore(root: Path, op: str, family: str, budget: str, seed: int, report: Path, env: dict,
            kinds: tuple[str, ...] = ()) -> dict:
    """One `python -m harness.explore ... --first` in `root`; its explore.json plus the wall time."""
    argv = [sys.executable, "-m", "harness.explore", op, "--soc", family, "--budget", budget, "--seed", str(seed),
            "--first", "--no-coverage", "--report-dir", str(report), *kinds]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.monotonic() - start
    try:
        doc = json.loads((report / "explore.json").read_text())
    except OSError:
        raise SystemExit(f"explore failed in {root}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}") from None
    return {"wall_s": wall, "doc": doc, "rc": proc.returncode}


def default_tier(root: Path, op: str, family: str, env: dict) -> tuple[int, str]:
    """Run the op's default tier on `family` in `root`; (exit status, pytest's last line)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:cacheprovider",
                           f"cases/{op}.yaml", "--backend", "aclnn", "--soc", family, "-q", "-n", "0", "--no-html",
                           "--report-dir", str(root / "reports" / f"default-{family}")],
                          cwd=root, capture_output=True, text=True, env=env, timeout=3600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode, (lines[-1] if lines else proc.stderr[-300:])


def found(doc: dict) -> dict | None:
    return doc["findings"][0] if doc.get("findings") else None


def minimal_checked(root: Path, bug, hit: dict) -> str:
    """'yes (N reductions tried, none fails the same way)', or what is wrong: every single reduction of
    the case must appear in the finding's last pass with another outcome."""
    from harness.explore import facts as facts_mod
    from harness.explore.example import from_canonical
    from harness.explore.search import reductions
    facts = facts_mod.load(str(root / "cases" / f"{bug.op}.yaml"))
    tried = {json.dumps(r["example"], sort_keys=True): r for r in hit["reductions"]}
    smaller = reductions(from_canonical(facts, hit["example"]))
    missing = [s for s in smaller if json.dumps(s.canonical(), sort_keys=True) not in tried]
    same = [r for r in tried.values() if r["signature"] == hit["signature"]]
    if missing or same or not hit["minimal"]:
        return f"NO ({len(missing)} reductions not tried, {len(same)} still fail the same way)"
    return f"yes ({len(smaller)} reductions tried, none fails the same way)"


def bench_bugs(names, budget: str, seed: int, check_default: bool) -> list[dict]:
    rows = []
    for bug in planted_bugs.BUGS:
        if names and bug.name not in names:
            continue
        with tempfile.TemporaryDirectory(prefix=f"bench-explore-{bug.name}-") as tmp:
            root = planted_bugs.copy_repo(Path(tmp) / "repo")
            planted_bugs.plant(root, bug)
            env = swenv.bare_env()
            row = {"bug": bug.name, "op": bug.op, "family": bug.family, "what": bug.what}
            if check_default:
                rc, last = default_tier(root, bug.op, bug.family, env)
                row["default_tier"] = "passes" if rc == 0 else f"FAILS ({last})"
            run = explore(root, bug.op, bug.family, budget, seed, root / "reports" / "explore", env)
            hit = found(run["doc"])
            row.update(wall_s=round(run["wall_s"], 1), examples=run["doc"]["run"]["examples"])
            if hit:
                row.update(found_s=hit["found_after_s"], minimal_s=hit["shrunk_after_s"], minimal=hit["minimal"],
                           reproduced=hit.get("reproduced"), case_id=hit["case_id"], signature=hit["signature"],
                           minimal_checked=minimal_checked(root, bug, hit), example=hit["example"],
                           yaml=Path(hit["yaml"]).read_text())
                buggy, fixed = planted_bugs.paste_and_run(root, bug, hit, env)
                row["pasted"] = {"on the bug": _outcome(buggy), "on the fixed library": _outcome(fixed)}
        rows.append(row)
        print(_line(row), flush=True)
        if "yaml" in row:
            print(f"    minimal: {row['minimal_checked']}; pasted into cases/{bug.op}.yaml: {row['pasted']}")
            print("    " + row["yaml"].rstrip().replace("\n", "\n    "), flush=True)
    return rows


def _outcome(proc) -> str:
    """pytest's summary of one case: '1 failed', '1 passed' (and its exit status)."""
    last = [ln for ln in proc.stdout.splitlines() if " in " in ln and ("passed" in ln or "failed" in ln)]
    return f"{last[-1].strip(' =') if last else proc.stdout[-200:]} (exit {proc.returncode})"


def bench_faults(names, budget: str, seed: int) -> list[dict]:
    rows = []
    for fault in FAULTS:
        if fault.kind not in KINDS or (names and fault.name not in names):
            continue
        env = {**os.environ, "SWCANN_FAULTS": fault.env_value}
        env.pop("SWCANN_SOC", None)
        with tempfile.TemporaryDirectory(prefix=f"bench-explore-{fault.name}-") as tmp:
            run = explore(REPO, fault.op, fault.family, budget, seed, Path(tmp), env)
        hit = found(run["doc"])
        row = {"fault": fault.name, "op": fault.op, "family": fault.family, "kind": fault.kind,
               "wall_s": round(run["wall_s"], 1), "examples": run["doc"]["run"]["examples"]}
        if hit:
            row.update(found_s=hit["found_after_s"], minimal_s=hit["shrunk_after_s"], minimal=hit["minimal"],
                       signature=hit["signature"], case_id=hit["case_id"])
            row["class_as_expected"] = as_expected(fault, hit["signature"])
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def coverage_union(dirs: list[str]) -> int:
    """Print the model branches that no exploration of `dirs` took, with the families that missed them."""
    missed: dict[tuple[str, str], list[str]] = {}
    for d in dirs:
        doc = json.loads((Path(d) / "explore.json").read_text())
        for model, cov in (doc.get("model_coverage") or {}).items():
            for branch in cov["missing_branches"]:
                missed.setdefault((model, branch), []).append(doc["run"]["family"])
    totals: dict[str, int] = {}
    for d in dirs[:1]:
        for model, cov in json.loads((Path(d) / "explore.json").read_text())["model_coverage"].items():
            totals[model] = cov["branches"]
    everywhere = {k: v for k, v in missed.items() if len(v) == len(dirs)}
    for model, n in totals.items():
        left = sorted(b for m, b in everywhere if m == model)
        print(f"{model}: {n - len(left)}/{n} branches taken by some exploration; never: {len(left)}")
        for b in left:
            print(f"    {b}")
    return 0


def as_expected(fault, signature: str) -> bool:
    """The finding is of the class faultscore expects of the fault (NUMERIC, RUNTIME:507015, ...). For a
    check-level fault, a status the check got wrong (STATUS:B9) and a call refused by another check
    than the one due (WRONG_CHECK:B9, what a skipped check gives when a later one refuses the call)
    are both that check failing."""
    parts = signature.split(":")                      # op:kind:CLASS[:detail]
    cls, detail = parts[2], (parts[3] if len(parts) > 3 else None)
    same_class = cls == fault.expect or (fault.kind == "check" and {cls, fault.expect} <= {"STATUS", "WRONG_CHECK"})
    return same_class and (fault.detail is None or detail == fault.detail)


def _line(row: dict) -> str:
    name = row.get("bug") or row.get("fault")
    where = f"{row['op']} on {row['family']}"
    if "found_s" not in row:
        return f"{name:26s} {where:45s} NOT FOUND in {row['examples']} examples ({row['wall_s']} s)"
    extra = f" default tier {row['default_tier']};" if "default_tier" in row else ""
    return (f"{name:26s} {where:45s} found in {row['found_s']:7.1f} s, minimal after {row['minimal_s'] or 0:7.1f} s "
            f"(certified {row['minimal']}; {row['examples']} examples, wall {row['wall_s']} s);{extra} "
            f"{row['signature']}" + (f"; YAML reproduces it: {row.get('reproduced')}" if "reproduced" in row else "")
            + (f"; the class faultscore expects: {row['class_as_expected']}" if "class_as_expected" in row else ""))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bugs", default=None, help="planted bugs to run (default: all; 'none' for none)")
    p.add_argument("--faults", default=None, help="named faults to run (default: all check/numeric; 'none')")
    p.add_argument("--budget", default="10m")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-default-tier", action="store_true")
    p.add_argument("--json", default=None)
    p.add_argument("--coverage", nargs="+", metavar="DIR", help="only print the model branches no exploration took")
    args = p.parse_args()
    if args.coverage:
        return coverage_union(args.coverage)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; budget {args.budget}, seed {args.seed}")
    names = lambda s: None if s is None else ([] if s == "none" else s.split(","))  # noqa: E731
    out = {}
    if names(args.bugs) != []:
        print("== planted bugs (a copy of the repository each)")
        out["bugs"] = bench_bugs(names(args.bugs), args.budget, args.seed, not args.skip_default_tier)
    if names(args.faults) != []:
        print("== named faults (SWCANN_FAULTS)")
        out["faults"] = bench_faults(names(args.faults), args.budget, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    missed = [r for rows in out.values() for r in rows if "found_s" not in r or r.get("default_tier", "passes") != "passes"]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
