"""Mutation score of the suite: does it notice when the software CANN's op code is wrong?

    .venv/bin/python -m harness.audit.mutate [--limit N] [--seed S] [--out FILE] [--families a,b]

Each mutant changes one operator (`<=` -> `<`, `&&` -> `||`, `+ 1` dropped, `*` -> `+`, ...) on
one line of `swcann/src/ops/*.c`, in a scratch copy of the repository (a git worktree of HEAD
with the working tree's changes left out). The copy's software CANN is rebuilt and the default
tier runs on each family in turn, stopping at the first failure: the mutant is *killed* when a case
fails, or when every family passes but the C smoke driver (swcann/tests/smoke.c, on an ASan build
with the leak check on) fails on it (`"by": "smoke"`); *survived* otherwise. Lines
that only fault injection (`SWCANN_FAULTS`) or the deviation model (`SWCANN_DEVIATIONS`) run, and
message text, are left alone: a default run never executes them, so their mutants would survive by
construction.

A survivor is either equivalent (the change cannot show: a path choice between two kernels that
compute the same documented result, a workspace size nobody asserts, undefined behaviour the case
policy keeps out of pass/fail cases) or a gap in the case files; each one needs reading, and one
read and found equivalent goes into swcann/mutants_equivalent.yaml with its reason, after which a
run reports it as *equivalent* (still running it: an edited line stops matching). Slow: a
killed mutant costs a build and a few seconds, a survivor a full default tier per family (about
15 s per mutant on 2 cores); `--limit` samples in a fixed random order (`--seed`). One JSON line
per mutant goes to `--out`, and a run resumes where that file stops.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from platforms import FAMILIES as PLATFORM_FAMILIES

from ..core.argv import Parser, number
from ..core.paths import REPO_ROOT, SWCANN_DIR

REPO = REPO_ROOT
OPS_DIR = Path("swcann/src/ops")
EQUIVALENT = SWCANN_DIR / "mutants_equivalent.yaml"
WHY_CLASSES = ("fault-only", "deviation-only", "message", "unreachable", "never-run", "policy", "no-op", "internal")
# one family of each NpuArch: the ops' code tells families apart by arch (and A2/A3 by SocVersion, one arch)
_FIRST_OF_ARCH: dict[str, str] = {}
for _family in PLATFORM_FAMILIES:
    _FIRST_OF_ARCH.setdefault(_family.arch, _family.name)
FAMILIES = tuple(_FIRST_OF_ARCH.values())
# (pattern, replacement): one operator of one line each
OPERATORS = ((r"<=", "<"), (r"(?<![<-])<(?![<=])", "<="), (r">=", ">"), (r"(?<![->])>(?![>=])", ">="),
             (r"==", "!="), (r"!=", "=="), (r"&&", "||"), (r"\|\|", "&&"), (r" \+ 1\b", ""), (r" - 1\b", ""),
             (r"(?<=[\w\)\]]) \+ (?=[\w\(])", " - "), (r"(?<=[\w\)\]]) \* (?=[\w\(])", " + "))
# code a default run never executes (fault injection, the deviation model) and message text
SKIPPED = ("bug(", "fault", "deviations", "dev_", "swc_msgf", "printf", "scribble", "past_end", "trunc", "ftz")


def sites(root: Path) -> list[tuple[str, int, int, int, str]]:
    """(file, line index, start, end, replacement) of every mutation in the op sources."""
    found = []
    for path in sorted((root / OPS_DIR).glob("*.c")):
        in_comment = False
        for i, line in enumerate(path.read_text().splitlines()):
            text = line.strip()
            if in_comment:
                in_comment = "*/" not in text
                continue
            if text.startswith("/*") and "*/" not in text:
                in_comment = True
                continue
            if not text or text.startswith(("#", "//", "*", "/*")) or any(w in text for w in SKIPPED):
                continue
            code = re.sub(r'"[^"]*"', lambda m: "\0" * len(m.group()), line.split("//")[0].split("/*")[0])
            for pattern, replacement in OPERATORS:
                found += [(str(path.relative_to(root)), i, m.start(), m.end(), replacement)
                          for m in re.finditer(pattern, code)]
    return found


def known_equivalents(path: Path = EQUIVALENT) -> dict[tuple[str, str, str], str]:
    """(file, line before, line after) -> why, for survivors already read and found equivalent."""
    import yaml
    entries = yaml.safe_load(path.read_text()) or []
    known = {}
    for n, e in enumerate(entries):
        missing = {"file", "before", "after", "why"} - set(e)
        if missing:
            raise SystemExit(f"{path}: entry {n + 1} lacks {', '.join(sorted(missing))}")
        if str(e["why"]).split(":")[0] not in WHY_CLASSES:
            raise SystemExit(f"{path}: entry {n + 1}: why must start with one of {', '.join(WHY_CLASSES)} and ':'")
        known[(e["file"], e["before"], e["after"])] = e["why"]
    return known


def _run(cmd, cwd: Path, env: dict, timeout: float) -> int | str:
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return "timeout"


def _environment(copy: Path, root: str) -> dict:
    """The environment after `source <root>/set_env.sh`, without the caller's CANN or swcann settings."""
    from ..acl import setenv
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SWCANN_", "ASCEND_")) and k != "LD_LIBRARY_PATH"}
    return setenv.sourced_environment(Path(root) / "set_env.sh", base)


def _smoke_passes(copy: Path) -> bool:
    """The C smoke driver on an ASan build of the mutant (what tests/test_swcann.py runs), leak
    check on: it sees what no case can, such as an object phase 2 forgets to free or a
    live-allocation check that stopped checking."""
    from swcann import build as swbuild
    built = subprocess.run([sys.executable, "-m", "swcann.build", "--asan"], cwd=copy, capture_output=True, text=True)
    if built.returncode:
        return False
    root = Path(built.stdout.strip().splitlines()[-1])
    try:
        exe = swbuild.compile_smoke(root, root / "smoke-mutant", tuple(swbuild.ASAN_FLAGS))
        env = {**_environment(copy, str(root)), "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"}
        return _run([str(exe)], copy, env, 300) == 0
    except swbuild.BuildError:
        return False
    finally:
        shutil.rmtree(root, ignore_errors=True)


def judge(copy: Path, site, families) -> dict:
    """Apply one mutation in `copy`, rebuild, run the default tier family by family; undo it."""
    path, i, start, end, replacement = site
    source = copy / path
    original = source.read_text()
    lines = original.splitlines(keepends=True)
    before = lines[i]
    lines[i] = before[:start] + replacement + before[end:]
    record = {"file": path, "line": i + 1, "before": before.strip(), "after": lines[i].strip()}
    try:
        source.write_text("".join(lines))
        built = subprocess.run([sys.executable, "-m", "swcann.build"], cwd=copy, capture_output=True, text=True)
        if built.returncode:
            return {**record, "result": "does not compile"}
        root = built.stdout.strip().splitlines()[-1]
        env = _environment(copy, root)
        for family in families:
            code = _run([sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "--soc", family, "-q", "-x",
                         "-n", "0", "--case-workers", "1", "-p", "no:cacheprovider", "--case-timeout", "20",
                         "--report-dir", str(copy / "reports" / "mutant")], copy, env, 600)
            if code != 0:
                return {**record, "result": "killed", "by": family}
        if not _smoke_passes(copy):
            return {**record, "result": "killed", "by": "smoke"}
        shutil.rmtree(root, ignore_errors=True)
        return {**record, "result": "survived"}
    finally:
        source.write_text(original)


def main(argv=None) -> int:
    ap = Parser(prog="python -m harness.audit.mutate", description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=number(minimum=1, integer=True), default=None,
                    help="judge at most N mutants, N >= 1 (a sample, --seed's order)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="reports/mutants.jsonl", help="one JSON line per mutant; resumed if present")
    ap.add_argument("--families", default=",".join(FAMILIES))
    args = ap.parse_args(argv)
    # a SIGTERM (a CI timeout, kill) unwinds like Ctrl-C, so the scratch worktree is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    known = known_equivalents()
    done = {(r["file"], r["line"], r["after"]) for r in map(json.loads, out.read_text().splitlines())} \
        if out.exists() else set()
    with tempfile.TemporaryDirectory(prefix="swcann-mutants-") as scratch:
        copy = Path(scratch) / "repo"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(copy), "HEAD"], cwd=REPO, check=True)
        try:
            todo = sites(copy)
            random.Random(args.seed).shuffle(todo)
            counts: dict[str, int] = {}
            for site in todo[:args.limit]:
                path, i, start, end, replacement = site
                line = (copy / path).read_text().splitlines()[i]
                if (path, i + 1, (line[:start] + replacement + line[end:]).strip()) in done:
                    continue
                record = judge(copy, site, args.families.split(","))
                why = known.get((record["file"], record["before"], record["after"]))
                if record["result"] == "survived" and why:
                    record.update(result="equivalent", why=why)
                counts[record["result"]] = counts.get(record["result"], 0) + 1
                with out.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                print(f"{record['result']:<17} {path}:{record['line']}  {record['after'][:90]}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(copy)], cwd=REPO)
    print(f"{sum(counts.values())} mutants of {len(todo)} sites: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
