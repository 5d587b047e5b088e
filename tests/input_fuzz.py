"""Mutation fuzzer for the inputs other than case files: baseline files and command-line values.

    python -m tests.input_fuzz [--seed N] [--scale F]

The case files have their fuzzer (tests/casefile_fuzz.py); this holds every other input a user
gives to the same discipline, in process (fast) and seeded (the same mutants every time):

* Baselines. Mutants of a valid functional baseline (YAML: fails/flakes/skips entries) and of
  valid perf baselines (JSON, version 1 and 2, some written as YAML), given to
  `python -m harness.reporting gate RUN BASELINE` and, for every third one,
  `merge -o OUT RUN --gate BASELINE` (harness.reporting.__main__.main); a quarter of them sit in a
  --gate directory beside a valid file of the other kind.
* Command lines. Every numeric or enumerated option of `python -m harness.reporting` (merge,
  compare, baseline, triage, sweep, history), of `./run explore` and of the pytest plugin (read as
  pytest reads it: its option parser, then Settings.from_config), given seeded nonsense (nan, inf,
  1e309, '', `1_000`, Arabic-Indic and full-width digits, spaces, hex, huge integers, words) and
  legitimate values.

Each mutant's verdict comes from the rules stated here, apart from the readers: a refusal is
exit status 4 with exactly one `ERROR:` line on stderr (printable, bounded), nothing on stdout,
naming the file and the field (or the option), and nothing written; an acceptance is the command
running as usual. Anything else (a traceback, another exit status, several lines, a file written,
nonsense accepted, a legitimate value refused, a call that burns CPU_LIMIT_S of CPU time or
hangs for HANG_LIMIT_S) is a failure.

Prints one JSON object: per class the mutants, refusals, acceptances and failures (with the
first few failures described), and the slowest call: its CPU time, which a loaded machine does
not stretch much, and its wall time, which it does (3.4 s beside two CPU hogs for a call that
takes well under a second on a quiet machine).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

import yaml

from tests import call_limits
from tests.reporting_fixtures import perf_rec, rec, write_run

MAX_ERROR_LEN = 1200           # "ERROR: " + a baseline error (at most 1000) or a usage error
# Limits of one call. Slowness (a reader gone quadratic on a huge mutant) is judged on the CPU time
# the call used, which other processes on the machine do not eat; the wall limit only catches a
# call that blocks, and is far above anything load does.
CPU_LIMIT_S = 10.0             # the test asserts a much lower bound on the slowest call
HANG_LIMIT_S = 120.0
ERROR_LINE = re.compile(r"ERROR: [^\n]*\n\Z")


# ---------------------------------------------------------------- calling a command in process

class Outcome:
    def __init__(self, code, out: str, err: str, crash: str | None, seconds: float, wall_seconds: float):
        self.code, self.out, self.err, self.crash = code, out, err, crash
        self.seconds, self.wall_seconds = seconds, wall_seconds      # CPU time of this process, wall time


def call(main, argv: list[str]) -> Outcome:
    """main(argv) with stdout and stderr captured: its return value or SystemExit code, or the
    exception that escaped it (the finding)."""
    out, err = io.StringIO(), io.StringIO()
    code, crash = None, None
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        # the limits are read at each call: a test lowers CPU_LIMIT_S to catch a spinning reader
        with call_limits.limited(CPU_LIMIT_S, HANG_LIMIT_S), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:
        code = e.code
    except call_limits.Stopped as e:
        # The kernel's interval timer and process_time() sample the CPU clock differently, so the
        # measured time may sit a little under the limit; the message names the timer that fired.
        crash = (f"no answer: stopped at {e.limit} ({time.process_time() - c0:.1f} s of CPU time, "
                 f"{time.perf_counter() - t0:.1f} s of wall time)")
    except KeyboardInterrupt:
        raise
    except BaseException as e:         # noqa: BLE001 - every other outcome is the finding
        frame = traceback.extract_tb(e.__traceback__)[-1]
        crash = f"{type(e).__name__}: {str(e)[:200]} at {Path(frame.filename).name}:{frame.lineno}"
    return Outcome(code, out.getvalue(), err.getvalue(), crash, time.process_time() - c0, time.perf_counter() - t0)


def judge_refusal(o: Outcome, words: list) -> str | None:
    """None when `o` is a clean refusal saying every one of `words` (a tuple: any one of its
    words), else what is wrong."""
    if o.crash:
        return o.crash
    if o.code != 4:
        return f"exit status {o.code!r}, not 4 (stderr {o.err[-300:]!r})"
    if not ERROR_LINE.match(o.err):
        return f"stderr is not one ERROR: line: {o.err[:400]!r}"
    if o.out:
        return f"a refusal printed on stdout: {o.out[:300]!r}"
    line = o.err[:-1]
    if not line.isprintable():
        return f"error holds non-printable characters: {ascii(line[:300])}"
    if len(line) > MAX_ERROR_LEN:
        return f"error is {len(line)} characters long"
    missing = [w for w in words if not (any(x in line for x in w) if isinstance(w, tuple) else w in line)]
    return f"error lacks {missing}: {line[:400]}" if missing else None


def judge_acceptance(o: Outcome, codes=(0, 1)) -> str | None:
    if o.crash:
        return o.crash
    if o.code == 4 or "ERROR:" in o.err:
        return f"refused: {o.err.strip()[:400]}"
    if o.code not in codes:
        return f"exit status {o.code!r} (stderr {o.err[-300:]!r})"
    return None


class Stats:
    def __init__(self):
        self.classes: dict[str, dict] = {}
        self.slowest = (0.0, "", 0.0)          # CPU seconds, which call, its wall seconds

    def add(self, cls: str, name: str, verdict: str, problem: str | None, o: Outcome):
        s = self.classes.setdefault(cls, {"mutants": 0, "refused": 0, "accepted": 0, "failures": 0,
                                          "examples": []})
        s["mutants"] += 1
        if problem:
            s["failures"] += 1
            if len(s["examples"]) < 5:
                s["examples"].append(f"{name}: {problem}")
        else:
            s[verdict] += 1
        if o.seconds > self.slowest[0]:
            self.slowest = (o.seconds, f"{cls}:{name}", o.wall_seconds)


# ---------------------------------------------------------------- the run the baselines gate

OK_CASE, FAILING_CASE = "Op.g[1]", "Op.g[2]"
PERF_CASES = ("Op.p[1]", "Op.p[2]")


def _times(k: int, n: int = 12) -> list[float]:
    return [round(1.0 + 0.1 * k + 0.01 * ((i * 7) % 5), 4) for i in range(n)]


def make_run(directory: Path) -> Path:
    records = [rec(OK_CASE), rec(FAILING_CASE, "FAIL", reason="gradInput: FAIL"),
               *(perf_rec(c, _times(k)) for k, c in enumerate(PERF_CASES))]
    return write_run(directory, records)


def functional_doc() -> dict:
    return {"target": {"backend": "aclnn", "family": "ascend910b"},
            "fails": [{"case": FAILING_CASE, "reason": "known: the tail is not written",
                       "link": "https://issues.example/1", "status": "FAIL"}],
            "flakes": [{"case": "Op.f*", "reason": "flaky on the shared machine", "link": "https://issues.example/2"}],
            "skips": [{"case": "Op.s[1]", "reason": "slow", "link": "https://issues.example/3"}]}


SHA = "b" * 64


def perf_doc(version: int) -> dict:
    cases = {}
    for k, c in enumerate(PERF_CASES):
        samples = _times(k, 16)
        e = {"timing": "events", "samples_ms": samples, "median_ms": sorted(samples)[8], "n": len(samples),
             "tolerance": 0.2}
        if version == 2:
            e["run_medians_ms"] = [sorted(samples)[8], sorted(samples)[7]]
        cases[c] = e
    measured = {"backend": "aclnn", "family": "ascend910b", "cann_version": None, "library_sha256": SHA,
                "timings": ["events"], "run": "reports/a", "started": "2026-11-23T01:00:00+00:00",
                "suite_commit": "deadbeef", "library_root": None, "libraries": {"opapi": "/lib/libopapi.so"},
                "switches": {"SWCANN_DEVIATIONS": "1"}}
    doc = {"kind": "perf", "target": {"backend": "aclnn", "family": "ascend910b"}, "note": "fuzz",
           "measured": measured, "benchmark": False, "tolerance": 0.1, "cases": cases}
    if version == 2:
        doc["version"] = 2
        measured["runs"] = [{"run": "reports/a", "started": None, "library_sha256": SHA, "cases": 2},
                            {"run": "reports/b", "started": None, "library_sha256": None, "cases": 2}]
    return doc


# ---------------------------------------------------------------- the rules, stated apart from the readers

def _number(v) -> bool:
    """A finite number, an integer within a float's range too; not a boolean."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= sys.float_info.max    # nan: False


def _text(v) -> bool:
    return isinstance(v, str) and len(v) > 0


def _sha(v) -> bool:
    return v is None or (isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None)


def _positive_list(v) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(_number(x) and x > 0 for x in v)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# kind -> whether a value of that field is acceptable (the doc: for rules across fields)
RULES = {
    "object": lambda v, d: False,         # only objects replaced by non-objects are generated
    "entries": lambda v, d: v is None or v == [],
    "text": lambda v, d: _text(v),
    "string": lambda v, d: isinstance(v, str),            # any text, the empty one too
    "opt_text": lambda v, d: v is None or isinstance(v, str),
    "status": lambda v, d: v in ("FAIL", "CRASH", "TIMEOUT", "MISSING"),
    "same": lambda v, d: False,           # target fields: any other value is another target (or none)
    "cann_version": lambda v, d: v is None,      # a pinned version: the run has none, so not its baseline
    "sha": lambda v, d: _sha(v),
    "bool": lambda v, d: isinstance(v, bool),
    "tolerance": lambda v, d: _number(v) and v >= 0,
    "positive": lambda v, d: _number(v) and v > 0,
    "n": lambda v, d: _int(v) and v >= 1,         # its sample list is made as long (below)
    "run_cases": lambda v, d: _int(v) and v >= 0,
    "version": lambda v, d: _int(v) and v in (1, 2),
    "samples": lambda v, d: _positive_list(v),
    "medians": lambda v, d: _positive_list(v) and len(v) <= max(1, len(d["measured"].get("runs") or [])),
    "str_list": lambda v, d: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "str_map": lambda v, d: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "runs": lambda v, d: False,           # run_medians_ms name two runs: any other list breaks them
}


def fields_of(doc: dict) -> list[tuple[tuple, str, bool]]:
    """(path, kind, required) of every field of a baseline document."""
    out = [(("target",), "object", True), (("target", "backend"), "same", True), (("target", "family"), "same", True),
           (("target", "cann_version"), "cann_version", False)]
    if doc.get("kind") != "perf":
        for kind in ("fails", "flakes", "skips"):
            out.append(((kind,), "entries", False))
            for i, e in enumerate(doc.get(kind) or []):
                out.append(((kind, i), "object", True))
                out += [((kind, i, k), "text", True) for k in ("case", "reason", "link")]
                out.append(((kind, i, "status"), "status", False))
        return out
    runs = doc["measured"].get("runs")
    out += [(("kind",), "same", True), (("version",), "version", False), (("note",), "string", False),
            (("measured",), "object", True), (("benchmark",), "bool", False), (("tolerance",), "tolerance", False),
            (("cases",), "object", True)]
    m = ("measured",)
    out += [(m + (k,), "opt_text" if k not in ("backend", "family") else "string", False)
            for k in ("backend", "family", "cann_version", "run", "started", "suite_commit", "library_root")]
    out += [(m + ("library_sha256",), "sha", False), (m + ("timings",), "str_list", False),
            (m + ("libraries",), "str_map", False), (m + ("switches",), "str_map", False)]
    if runs:
        out.append((m + ("runs",), "runs", False))
        for i in range(len(runs)):
            r = m + ("runs", i)
            out += [(r, "object", True), (r + ("run",), "text", True), (r + ("started",), "opt_text", False),
                    (r + ("library_sha256",), "sha", False), (r + ("cases",), "run_cases", False)]
    for cid, e in doc["cases"].items():
        c = ("cases", cid)
        out += [(c, "object", True), (c + ("timing",), "text", True), (c + ("samples_ms",), "samples", True),
                (c + ("median_ms",), "positive", False), (c + ("n",), "n", False),
                (c + ("tolerance",), "tolerance", False)]
        if "run_medians_ms" in e:
            out.append((c + ("run_medians_ms",), "medians", False))
    return out


# a required key deleted is refused, an optional one is not, but where the deletion breaks a rule across fields
_DELETION_BREAKS = {("measured", "runs")}      # run_medians_ms then name more runs than the file has

VALUES = [None, True, False, 0, 1, -1, 2, 0.0, 0.5, -0.5, 2.0, 1e308, -1e-300, 5e-324, 10 ** 400, 2 ** 63,
          float("nan"), float("inf"), float("-inf"), "", "text", "yes", "FAIL", "CRASH", "PASS", "1.5", "nan",
          SHA, SHA.upper(), "g" * 64, SHA[:63], SHA + "b", SHA + "\n", "sha256:" + SHA, [], [1.0], [1, 2],
          [0.5, 0.25, 0.125], ["x"], [None], [float("nan")], [-1.0], [0], [[1]], {}, {"a": 1}, {"a": "b"}]


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _set(doc, path, value):
    _get(doc, path[:-1])[path[-1]] = value


def _deepest_key(path) -> str:
    return next((k for k in reversed(path) if isinstance(k, str)), "(top level)")


def _docs():
    return [("functional", functional_doc()), ("perf1", perf_doc(1)), ("perf2", perf_doc(2))]


def _dump(name: str, doc, rng, as_yaml=None) -> tuple[str, str]:
    """(text, suffix): a functional baseline as YAML, a perf one as JSON (a few as YAML)."""
    if as_yaml is None:
        as_yaml = name == "functional" or rng.random() < 0.15
    if as_yaml:
        return yaml.safe_dump(doc, sort_keys=False, width=10 ** 6, allow_unicode=True), ".yaml"
    return json.dumps(doc), ".json"


# ---------------------------------------------------------------- baseline mutation classes
# Each returns (name, text-or-bytes, suffix, expectation): ("reject", words), ("accept",) or ("any",).

def wrong_values(rng):
    """A field given a value from VALUES: refused unless the field's rule accepts it."""
    name, doc = rng.choice(_docs())
    path, kind, _ = rng.choice(fields_of(doc))
    value = rng.choice([v for v in VALUES if not isinstance(v, dict)] if kind == "object" else VALUES)
    _set(doc, path, value)
    if kind == "samples" and isinstance(value, list):
        _get(doc, path[:-1])["n"] = len(value)      # a consistent count: only the launch times are judged
    if kind == "n":
        _get(doc, path[:-1])["samples_ms"] = [1.0] * value if _int(value) and 1 <= value <= 1000 else [1.0]
        if _int(value) and value > 1000:
            return (name, doc, ("reject", ["n"]))       # samples_ms holds fewer launch times than n
    ok = RULES[kind](value, doc)
    words = [_deepest_key(path)] if kind not in ("same", "cann_version") else \
        [("baseline is for", "unknown backend", "unknown family", _deepest_key(path))]
    return name, doc, ("accept",) if ok else ("reject", words)


def missing_keys(rng):
    name, doc = rng.choice(_docs())
    path, kind, required = rng.choice([f for f in fields_of(doc) if not isinstance(f[0][-1], int)])
    parent = _get(doc, path[:-1])
    if path[-1] not in parent:
        return name, doc, ("accept",)
    del parent[path[-1]]
    if path in _DELETION_BREAKS and any("run_medians_ms" in e for e in doc["cases"].values()):
        return name, doc, ("reject", ["run_medians_ms"])
    if kind == "object" and path[0] == "cases" and len(path) == 2:
        return name, doc, ("accept",)                   # a case with no launch times: not gated
    if path == ("kind",):
        return name, doc, ("reject", [])                # then a correctness baseline, with perf's keys
    return name, doc, ("reject", [_deepest_key(path)]) if required else ("accept",)


def non_finite(rng):
    """NaN, +-Infinity (JSON's words; YAML's .nan and .inf) and integers past a float's range."""
    name, doc = rng.choice(_docs()[1:])
    numeric = [(p, k) for p, k, _ in fields_of(doc) if k in ("tolerance", "positive", "samples", "medians")]
    path, kind = rng.choice(numeric)
    bad = rng.choice([float("nan"), float("inf"), float("-inf"), 10 ** 400, -(10 ** 309)])
    if kind in ("samples", "medians"):
        values = list(_get(doc, path))
        values[rng.randrange(len(values))] = bad
        _set(doc, path, values)
    else:
        _set(doc, path, bad)
    return name, doc, ("reject", [_deepest_key(path), ("finite", "greater than", "less than")])


def ranges(rng):
    """Zero, negative, tiny and huge numbers where a range applies."""
    name, doc = rng.choice(_docs()[1:])
    choices = [(p, k) for p, k, _ in fields_of(doc) if k in ("tolerance", "positive", "n", "run_cases", "samples")]
    path, kind = rng.choice(choices)
    value = rng.choice([0, 0.0, -0.0, -1, -1e-9, 1e-320, 1e308, 1.7976931348623157e308, 2 ** 63, 10 ** 30])
    if kind == "samples":
        value = [abs(value) if rng.random() < 0.5 else value] * 3
        _get(doc, path[:-1])["n"] = 3
    elif kind == "n":
        value = int(value)
    _set(doc, path, value)
    ok = RULES[kind](value, doc) and not (kind == "n" and value != len(_get(doc, path[:-1])["samples_ms"]))
    return name, doc, ("accept",) if ok else ("reject", [_deepest_key(path)])


def sha_forms(rng):
    name, doc = rng.choice(_docs()[1:])
    path = rng.choice([p for p, k, _ in fields_of(doc) if k == "sha"])
    value = rng.choice([SHA.upper(), SHA[:63], SHA + "0", "sha256:" + SHA, "g" * 64, SHA + "\n", " " + SHA, "",
                        SHA[:32], 1234, ["x"], SHA.replace("b", "B", 1), "0x" + SHA[2:], SHA + "\x00", "\uff10" * 64])
    _set(doc, path, value)
    return name, doc, ("accept",) if _sha(value) else ("reject", ["library_sha256"])


def versions(rng):
    doc = perf_doc(rng.choice([1, 2]))
    # (version 1 with version 2's fields is still read: the version decides nothing else)
    value = rng.choice([0, 3, -1, 99, "2", "1", 2.0, 1.0, True, False, None, 10 ** 400, 2.5, [2], {}, 1, 2])
    doc["version"] = value
    return "perf", doc, ("accept",) if RULES["version"](value, doc) else ("reject", ["version"])


def yaml11_words(rng):
    """yes/no/on/off (and kin): text to YAML 1.2, booleans to PyYAML's YAML 1.1. Where a boolean is
    meant they are refused with the hint; where text is meant they are the text."""
    word = rng.choice(["yes", "no", "on", "off", "Yes", "NO", "On", "OFF", "y", "n"])
    if rng.random() < 0.5:
        doc = perf_doc(rng.choice([1, 2]))
        text = yaml.safe_dump(doc, sort_keys=False, width=10 ** 6).replace("benchmark: false", f"benchmark: {word}")
        hint = [] if word in ("y", "n") else ["YAML 1.1 reads"]
        return "perf", text, ".yaml", ("reject", ["benchmark", *hint])
    doc = functional_doc()
    kind = rng.choice(["fails", "flakes", "skips"])
    key = rng.choice(["reason", "link"])
    doc[kind][0][key] = "ZZSENTINELZZ"
    text = yaml.safe_dump(doc, sort_keys=False, width=10 ** 6).replace("ZZSENTINELZZ", word)
    return "functional", text, ".yaml", ("accept",)


def yaml11_numbers(rng):
    """Numbers YAML 1.1 and 1.2 read differently (octal, base 60, underscores, 1e3 without a dot):
    any clean verdict (the baseline reader resolves by YAML 1.1, as PyYAML does)."""
    doc = perf_doc(1)
    form = rng.choice(["0x1", "010", "1_0.5", "1:30", "1e3", "0o7", "+.5", ".5", "1_000"])
    doc["tolerance"] = "ZZSENTINELZZ"
    text = yaml.safe_dump(doc, sort_keys=False, width=10 ** 6).replace("ZZSENTINELZZ", form)
    return "perf", text, ".yaml", ("any",)


def empty_files(rng):
    text = rng.choice(["", " ", "\n\n", "# only a comment\n", "---\n", "...\n", "null\n", "~", "[]", "{}", "0", "''",
                       "\ufeff", "--- !!str\n", "- target\n", "target\n", "target:\n", "{\"kind\": \"perf\"}",
                       "kind: perf\n", "fails: []\n", "\t\n"])
    return "empty", text, rng.choice([".yaml", ".json"]), ("reject", [])


def binary(rng):
    variant = rng.randrange(4)
    if variant == 0:
        data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
    elif variant == 1:          # a valid file with bytes that are not UTF-8 inside
        text = bytearray(yaml.safe_dump(functional_doc()).encode())
        pos = rng.randrange(len(text))
        text[pos:pos] = rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80\x80", b"\xfe\xff"])
        data = bytes(text)
    elif variant == 2:          # UTF-16 or UTF-32
        data = json.dumps(perf_doc(2)).encode(rng.choice(["utf-16", "utf-32", "utf-16-be"]))
    else:                       # NULs and control characters in text
        text = json.dumps(perf_doc(1))
        pos = rng.randrange(len(text))
        data = (text[:pos] + rng.choice(["\x00", "\x1b[2J", "\x07\x00\x00", "\x85"]) + text[pos:]).encode()
    return "binary", data, rng.choice([".yaml", ".json"]), ("any",) if variant == 3 else ("reject", [])


def deep_nesting(rng):
    depth = rng.choice([33, 40, 100, 1000, 5000, 100_000])
    kind = rng.randrange(4)
    if kind == 0:               # JSON
        doc = perf_doc(2)
        doc["note"] = "ZZSENTINELZZ"
        return "perf", json.dumps(doc).replace('"ZZSENTINELZZ"', "[" * depth + "]" * depth), ".json", \
            ("reject", ["nested more than"])
    if kind == 1:               # YAML flow
        doc = functional_doc()
        doc["fails"][0]["reason"] = "ZZSENTINELZZ"
        raw = rng.choice(["[" * depth + "1" + "]" * depth, "{a: " * depth + "1" + "}" * depth])
        return "functional", yaml.safe_dump(doc, sort_keys=False).replace("ZZSENTINELZZ", raw), ".yaml", \
            ("reject", ["nested more than"])
    if kind == 2:               # YAML block
        depth = min(depth, 400)
        text = yaml.safe_dump(functional_doc(), sort_keys=False) + "x_deep:\n" + \
            "".join("  " * (i + 1) + "k:\n" for i in range(depth)) + "  " * (depth + 1) + "v\n"
        return "functional", text, ".yaml", ("reject", ["nested more than"])
    text = "{\"kind\": \"perf\", \"x\": " + "{\"a\": " * depth + "1" + "}" * depth + "}"    # JSON objects
    return "perf", text, ".json", ("reject", ["nested more than"])


def _bomb(rng) -> str:
    width = rng.randint(3, 12)
    depth = 1
    while width ** depth <= 600_000:
        depth += 1
    layers = ["&l0 [" + ", ".join(["lol"] * width) + "]"]
    layers += [f"&l{d} [" + ", ".join([f"*l{d - 1}"] * width) + "]" for d in range(1, depth + 1)]
    return "[" + ", ".join(layers) + "]"


def aliases(rng):
    doc = functional_doc()
    variant = rng.randrange(4)
    if variant == 0:            # a bomb in a field
        doc["fails"][0]["reason"] = "ZZSENTINELZZ"
        return "functional", yaml.safe_dump(doc, sort_keys=False).replace("ZZSENTINELZZ", _bomb(rng)), ".yaml", \
            ("reject", ["expands to more than"])
    if variant == 1:            # a bomb before everything
        return "functional", "x_anchors: " + _bomb(rng) + "\n" + yaml.safe_dump(doc, sort_keys=False), ".yaml", \
            ("reject", ["expands to more than"])
    if variant == 2:            # an alias to its own parent
        doc["fails"][0]["reason"] = "ZZSENTINELZZ"
        raw = rng.choice(["&r [1, *r]", "&r {a: [*r]}", "&r [[[*r]]]"])
        return "functional", yaml.safe_dump(doc, sort_keys=False).replace("ZZSENTINELZZ", raw), ".yaml", \
            ("reject", ["inside the collection"])
    # legitimate: one reason shared by two entries
    text = yaml.safe_dump(doc, sort_keys=False).replace("reason: flaky on the shared machine", "reason: &why shared")
    text = text.replace("reason: slow", "reason: *why")
    return "functional", text, ".yaml", ("accept",)


def duplicate_keys(rng):
    if rng.random() < 0.5:      # YAML: a line written twice, or a key repeated in a flow mapping
        text = yaml.safe_dump(functional_doc(), sort_keys=False, width=10 ** 6)
        lines = text.splitlines(keepends=True)
        candidates = [i for i, ln in enumerate(lines) if ": " in ln and not ln.rstrip().endswith(":")]
        i = rng.choice(candidates)
        key = lines[i].strip().lstrip("- ").split(":")[0]
        dup = lines[i].replace("- ", "  ", 1) if lines[i].lstrip().startswith("- ") else lines[i]
        return "functional", "".join(lines[:i + 1] + [dup] + lines[i + 1:]), ".yaml", \
            ("reject", ["duplicate key", repr(key)])
    doc = perf_doc(rng.choice([1, 2]))
    mapping = rng.choice([doc, doc["target"], doc["measured"], doc["cases"], doc["cases"][PERF_CASES[0]]])
    key = rng.choice(list(mapping))
    text = json.dumps(doc)
    first = json.dumps(key) + ": " + json.dumps(mapping[key])
    assert first in text
    again = json.dumps(rng.choice(list(mapping.values())))
    return "perf", text.replace(first, first + ", " + json.dumps(key) + ": " + again, 1), ".json", \
        ("reject", ["duplicate key", repr(key)])


def unknown_keys(rng):
    name, doc = rng.choice(_docs())
    if name == "functional":
        mapping = rng.choice([doc, doc["target"], doc["fails"][0], doc["flakes"][0]])
    else:
        mapping = rng.choice([doc, doc["target"], doc["cases"][PERF_CASES[1]], doc["measured"]] +
                             (doc["measured"].get("runs") or [])[:1])
    key = rng.choice(list(mapping))
    typo = rng.choice([key[:-1], key + "s", key.upper(), "x_" + key, "comment", "Status", "tolerence"])
    if typo in mapping:
        typo = "zz_" + typo
    mapping[typo] = mapping[key]
    if mapping is doc.get("measured"):       # measured: what the file was built from, open to more
        return name, doc, ("accept",)
    return name, doc, ("reject", [typo])


def huge(rng):
    variant = rng.randrange(4)
    doc = perf_doc(2)
    if variant == 0:            # many launch times: accepted
        n = rng.choice([10_000, 100_000])
        doc["cases"][PERF_CASES[0]].update(samples_ms=[1.0 + (i % 7) * 0.01 for i in range(n)], n=n)
        return "perf", doc, ("accept",)
    if variant == 1:            # a long text: accepted, and an error elsewhere stays short
        doc["note"] = "y" * rng.randint(10_000, 1_000_000)
        if rng.random() < 0.5:
            doc["note"] = list(range(200_000))      # the schema's message quotes the whole value
            return "perf", doc, ("reject", ["note"])
        return "perf", doc, ("accept",)
    if variant == 2:            # many entries in a functional baseline
        f = functional_doc()
        f["skips"] += [{"case": f"Op.s[{i}]", "reason": "slow", "link": "x"} for i in range(rng.choice([500, 3000]))]
        return "functional", f, ("accept",)
    f = functional_doc()         # a huge case id
    f["fails"][0]["case"] = "Op." + "x" * rng.choice([10_000, 100_000])
    return "functional", f, ("accept",)


def other_damage(rng):
    """Random characters changed, deleted or inserted: any clean verdict."""
    name, doc = rng.choice(_docs())
    text, suffix = _dump(name, doc, rng)
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[pos] = rng.choice(":-[]{}#&*!|>'\"%@`, \t\n?0123456789")
        elif op == 1:
            del chars[pos]
        else:
            chars.insert(pos, rng.choice(["&a ", "*a", "!!str ", "!!python/none ", "<<: ", "? ", "---\n", "\ufeff",
                                          "!!binary ", "!!set ", "!!timestamp ", "2001-01-01", "NaN", "1e999"]))
    return name, "".join(chars), suffix, ("any",)


BASELINE_CLASSES = {          # class -> (generator, mutants at scale 1)
    "wrong_values": (wrong_values, 70),
    "missing_keys": (missing_keys, 30),
    "non_finite": (non_finite, 20),
    "ranges": (ranges, 20),
    "sha_forms": (sha_forms, 15),
    "versions": (versions, 15),
    "yaml11_words": (yaml11_words, 15),
    "yaml11_numbers": (yaml11_numbers, 8),
    "empty_files": (empty_files, 15),
    "binary": (binary, 15),
    "deep_nesting": (deep_nesting, 15),
    "aliases": (aliases, 12),
    "duplicate_keys": (duplicate_keys, 20),
    "unknown_keys": (unknown_keys, 20),
    "huge": (huge, 8),
    "other_damage": (other_damage, 30),
}


def _render(made, rng):
    """A generator's result as (name, data, suffix, expectation)."""
    if len(made) == 4:
        return made
    name, doc, expect = made
    text, suffix = _dump(name, doc, rng)
    return name, text, suffix, expect


def _snapshot(directory: Path) -> dict:
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*"))}


def fuzz_baselines(rng, scale: float, work: Path, stats: Stats, classes=None) -> None:
    from harness.reporting.__main__ import main
    run = make_run(work / "run")
    before = _snapshot(run)
    companions = {"functional": ("perf.json", json.dumps(perf_doc(2))),
                  "perf": ("functional.yaml", yaml.safe_dump(functional_doc(), sort_keys=False))}
    # the unmutated files pass the gate (exit 0: the failing case is expected, the launch times as before)
    for name, doc in _docs():
        text, suffix = _dump(name, doc, rng, as_yaml=name == "functional")
        path = work / f"original-{name}{suffix}"
        path.write_text(text)
        o = call(main, ["gate", str(run), str(path)])
        problem = judge_acceptance(o, codes=(0,) if name == "functional" else (0, 1))
        stats.add("original", name, "accepted", problem, o)
    k = 0
    for cls, (make, count) in BASELINE_CLASSES.items():
        if classes and cls not in classes:
            continue
        for i in range(max(1, round(count * scale))):
            name, data, suffix, expect = _render(make(rng), rng)
            k += 1
            in_dir = rng.random() < 0.25
            where = work / f"m{k}"
            where.mkdir()
            path = where / f"baseline{suffix}"
            path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
            gate_arg = path
            if in_dir:
                other_name, other_text = companions["functional" if name == "functional" else "perf"]
                (where / other_name).write_text(other_text)
                gate_arg = where
            argv = ["gate", str(run), str(gate_arg)]
            merge = k % 3 == 0
            out = where / "merged"
            if merge:
                argv = ["merge", "-o", str(out), str(run), "--gate", str(gate_arg), "--no-html"]
            o = call(main, argv)
            if expect[0] == "reject":
                problem = judge_refusal(o, [str(path), *expect[1]])
                if not problem and merge and out.exists():
                    problem = "the merge wrote its directory although the baseline was refused"
                verdict = "refused"
            elif expect[0] == "accept":
                problem = judge_acceptance(o)
                if not problem and not in_dir and str(path) not in o.out:
                    problem = f"the gate's lines do not name the baseline: {o.out[:300]!r}"
                if not problem and merge and not (out / "results.jsonl").is_file():
                    problem = "the merge wrote no results.jsonl"
                verdict = "accepted"
            else:
                problem = judge_refusal(o, [str(path)]) if o.code == 4 or o.crash else judge_acceptance(o)
                verdict = "refused" if o.code == 4 else "accepted"
            if not problem and _snapshot(run) != before:
                problem = "the run directory changed"
            stats.add(cls, f"{cls}-{i}({name}{suffix}{', dir' if in_dir else ''}{', merge' if merge else ''})",
                      verdict, problem, o)


# ---------------------------------------------------------------- command-line values

NONSENSE = ["nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e309", "-1e309", "", " ", "١٢", "１２",
            "٣.٥", "1_000", "1_0.5", " 3", "3 ", "0x10", "0b1", "0o7", "text", "1,5", "1.5.2", "3e", "e3", ".",
            "+", "-", "9" * 25, "9" * 5000, "-" + "9" * 25, "1e400", "010", "1/2", "²", "½", "true", "None",
            "9223372036854775808", "-9223372036854775809", "\u20073"]
LEGIT = ["-1", "0", "1", "2", "0.5", "1.5", "3.", ".5", "+5", "7", "8", "30", "64", "1000", "1e3", "1e-3", "-0", "2.0",
         "1e308", "0.01", "9223372036854775807", "1e-320"]

_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_INT = re.compile(r"[-+]?(0|[1-9]\d*)")


def as_float(text: str):
    """The value of a float option's text by the rule (ASCII decimal, finite), else None."""
    if not text.isascii() or not _FLOAT.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def as_int(text: str):
    if not text.isascii() or not _INT.fullmatch(text) or len(text) > 20 or not -2 ** 63 <= int(text) < 2 ** 63:
        return None
    return int(text)


def floats(lo=None, above=None, hi=None):
    def domain(text):
        v = as_float(text)
        return v is not None and (lo is None or v >= lo) and (above is None or v > above) and (hi is None or v <= hi)
    return domain


def ints(lo=None, hi=None):
    def domain(text):
        v = as_int(text)
        return v is not None and (lo is None or v >= lo) and (hi is None or v <= hi)
    return domain


def one_of(*words):
    return lambda text: text in words


def budget(text: str) -> bool:
    """90, 90s, 10m, 1.5h (spaces around and the letter's case do not matter): finite, > 0."""
    t = text.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(t[-1:])
    v = as_float(t[:-1] if scale else t)
    return v is not None and 0 < v * (scale or 1) < math.inf


# (label, argv with {v} for the value, domain); {R} the run, {O} a fresh output path, {DB} the store
REPORTING = [
    ("merge --drift", ["merge", "-o", "{O}", "{R}", "--no-html", "--drift", "{v}"], floats(above=1)),
    ("compare --drift", ["compare", "{R}", "{R}", "--drift", "{v}"], floats(above=1)),
    ("compare --floor", ["compare", "{R}", "{R}", "--floor", "{v}"], floats(lo=0)),
    ("baseline --tolerance", ["baseline", "{R}", "-o", "{O}", "--perf", "--tolerance", "{v}"], floats(lo=0)),
    ("triage --cases", ["triage", "{R}", "--cases", "{v}"], ints(lo=0)),
    ("triage --confirm-cases", ["triage", "{R}", "--confirm-cases", "{v}"], ints(lo=1)),
    ("triage --seed", ["triage", "{R}", "--seed", "{v}"], ints(lo=0)),
    ("sweep --shards", ["sweep", "-o", "{O}", "--families", "ascend910b", "--shards", "{v}"], ints(lo=1, hi=1000)),
    ("sweep --parallel", ["sweep", "-o", "{O}", "--families", "ascend910b", "--parallel", "{v}"], ints(lo=1)),
    ("history runs --last", ["history", "runs", "--db", "{DB}", "--last", "{v}"], ints(lo=1)),
    ("history timeline --last", ["history", "timeline", OK_CASE, "--db", "{DB}", "--last", "{v}"], ints(lo=1)),
    ("history first-bad --window", ["history", "first-bad", "--db", "{DB}", "--window", "{v}"], ints(lo=1)),
    ("history flakes --window", ["history", "flakes", "--db", "{DB}", "--window", "{v}"], ints(lo=1)),
    ("history flakes --min-rate", ["history", "flakes", "--db", "{DB}", "--min-rate", "{v}"], floats(lo=0, hi=1)),
    ("history perf --window", ["history", "perf", "--db", "{DB}", "--window", "{v}"], ints(lo=8)),
    ("history perf --alpha", ["history", "perf", "--db", "{DB}", "--alpha", "{v}"], floats(above=0, hi=0.5)),
    ("history perf --min-change", ["history", "perf", "--db", "{DB}", "--min-change", "{v}"], floats(lo=0)),
    ("history perf --tolerance", ["history", "perf", "--db", "{DB}", "--tolerance", "{v}"], floats(lo=0)),
    ("history pass-rate --last", ["history", "pass-rate", "--db", "{DB}", "--last", "{v}"], ints(lo=1)),
    ("history pass-rate --by", ["history", "pass-rate", "--db", "{DB}", "--by", "{v}"], one_of("run", "day")),
]
# the words of an enumeration, and values at the edge of a range, given besides the pools
EDGES = {"history pass-rate --by": ("run", "day", "Run", "days", "run "), "history perf --window": ("8", "7", "30"),
         "history perf --alpha": ("0.5", "0", "0.500001"), "history flakes --min-rate": ("1", "1.0001", "0"),
         "sweep --shards": ("1000", "1001", "1"), "merge --drift": ("1", "1.000001", "2"),
         "compare --drift": ("1", "1.5"), "triage --confirm-cases": ("1", "0")}
EXPLORE = [
    ("explore --budget", ["--budget", "{v}"], budget),
    ("explore --seed", ["--seed", "{v}"], ints()),
    ("explore --case-timeout", ["--case-timeout", "{v}"], floats(above=0)),
    ("explore --soc", ["--soc", "{v}"], None),               # the families, filled in at run time
]
PLUGIN = [       # (option, its dest, domain, the value Settings must then hold: a function of the text)
    ("--case-timeout", floats(above=0), lambda s, t: s.case_timeout == float(t)),
    ("--determinism-level", one_of("0", "1", "2", "3", "+0", "+1", "+2", "+3", "-0"),
     lambda s, t: s.determinism_level == int(t)),
    ("--keep-previous", ints(lo=0), None),
    ("--reruns", ints(lo=0), lambda s, t: s.report.reruns == int(t)),
    ("--case-workers", lambda t: t == "auto" or ints(lo=1, hi=64)(t),
     lambda s, t: t == "auto" or s.case_workers == int(t)),
    ("--shard", None, None),                                 # i/n, below
    ("--tier", one_of("default", "slow", "all"), lambda s, t: s.tier == t),
    ("--backend", one_of("aclnn", "torch"), lambda s, t: s.backend == t),
    ("--soc", None, None),                                   # the families
]


def _values(rng, n: int, extra=()) -> list[str]:
    """n values: about half nonsense, half numbers in the usual forms, and the option's own words
    (drawn without order: which verdict each gets is the domain's business)."""
    values = rng.sample(NONSENSE, (n + 1) // 2) + rng.sample(LEGIT, n // 2)
    values += rng.sample(list(extra), min(len(extra), 3))
    rng.shuffle(values)
    return values


def _argv(template: list[str], value: str, rng, **paths) -> list[str]:
    """The template with the value; as `--opt=VALUE` at times (the only way argparse takes `-inf`)."""
    out = []
    for i, a in enumerate(template):
        if a == "{v}":
            if rng.random() < 0.3 and out and out[-1].startswith("--"):
                out[-1] = f"{out[-1]}={value}"
            else:
                out.append(value)
        else:
            out.append(a.format(**paths) if "{" in a else a)
    return out


def _option(template: list[str]) -> str:
    return template[template.index("{v}") - 1]


class _Started(Exception):
    """A sweep job or an exploration would start: the command accepted its options."""


@contextlib.contextmanager
def _patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _refused_or_accepted(o: Outcome, ok: bool, option: str, accept_codes=(0, 1)) -> tuple[str, str | None]:
    if ok:
        return "accepted", judge_acceptance(o, accept_codes)
    problem = judge_refusal(o, [option.split("=")[0]])
    if problem and o.code in accept_codes and not o.crash:
        problem = "nonsense accepted"
    return "refused", problem


def fuzz_reporting(rng, scale: float, work: Path, stats: Stats) -> None:
    from harness.reporting import __main__ as cli, sweep
    run = make_run(work / "cli-run")
    db = work / "store.db"
    assert call(cli.main, ["ingest", str(run), "--db", str(db)]).code == 0
    per_option = max(2, round(10 * scale))

    def started(*a, **k):
        raise _Started()

    # a sweep stops at its manifest, written once its options are checked: before the list of its jobs
    # (a sweep of 2**62 shards that got through would fill the memory there) and any job
    with _patched(sweep, "write_manifest", started), _patched(sweep.subprocess, "Popen", started):
        for k, (label, template, domain) in enumerate(REPORTING):
            for j, value in enumerate(_values(rng, per_option, EDGES.get(label, ()))):
                out = work / f"cli-{k}-{j}"
                argv = _argv(template, value, rng, R=run, O=out, DB=db)
                o = call(cli.main, argv)
                if o.crash and o.crash.startswith("_Started"):
                    o.crash, o.code = None, 0
                verdict, problem = _refused_or_accepted(o, domain(value), _option(template))
                if not problem and verdict == "refused" and out.exists():
                    problem = f"{out} written although the command was refused"
                stats.add("reporting:" + label, f"{value!r}", verdict, problem, o)


def fuzz_explore(rng, scale: float, work: Path, stats: Stats) -> None:
    from harness.core import families
    from harness.explore import __main__ as explore_cli
    seen = {}

    def explore(ops, soc, budget_s, seed, **kw):
        seen.update(soc=soc, budget=budget_s, seed=seed, timeout=kw.get("timeout_s"))
        return {"run": {"banner": "stub", "examples": 0}, "findings": []}

    per_option = max(2, round(12 * scale))
    with _patched(explore_cli, "explore", explore), _patched(explore_cli, "prepare_environment", lambda soc: None):
        for label, template, domain in EXPLORE:
            extra = families.FAMILIES + ("ascend999", "ASCEND910B", "ascend910b ") if label.endswith("--soc") else \
                ("90s", "10m", "1.5h", "0s", "-1m", "infm", "nanh", "10 m", " 10m", "10x", "m", "1_0m", "١٠m")
            domain = domain or one_of(*families.FAMILIES)
            for j, value in enumerate(_values(rng, per_option, extra)):
                seen.clear()
                report = work / f"explore-{label.split()[-1]}-{j}"
                o = call(explore_cli.main, [*_argv(template, value, rng), "--report-dir", str(report)])
                verdict, problem = _refused_or_accepted(o, domain(value), _option(template), accept_codes=(0,))
                if not problem and verdict == "accepted":
                    got = {"--seed": "seed", "--case-timeout": "timeout", "--budget": "budget", "--soc": "soc"}
                    held = seen.get(got[_option(template)])
                    if isinstance(held, float) and not math.isfinite(held):
                        problem = f"explore was given {held!r}"
                if not problem and verdict == "refused" and report.exists():
                    problem = "the report directory was written although the command was refused"
                stats.add("explore:" + label.split()[-1], f"{value!r}", verdict, problem, o)


# `--reruns -inf`: argparse takes `-inf` for an option and the value as missing. pytest says such a
# mistake of the command line's syntax (not of a value) in its usage block, as for any pytest option:
# that one is left as pytest words it (the value itself is never read).
_PYTEST_SYNTAX = re.compile(r"argument --[a-z-]+: expected one argument(?=\n?\Z)")


class _Config:
    """What Settings.from_config reads of a pytest config: the options, the arguments."""

    def __init__(self, namespace):
        self.option, self.args = namespace, []

    def getoption(self, name, default=None):
        return getattr(self.option, name, default)


def plugin_settings(args: list[str]):
    """The plugin's command line read as pytest reads it (its option parser, then the checks of
    pytest_configure); Settings, or the pytest.UsageError pytest would print as its ERROR: line."""
    from _pytest.config.argparsing import Parser
    from harness.plugin import arguments, options
    parser = Parser(_ispytest=True)
    options.add_options(parser)
    config = _Config(parser.parse(args))
    arguments.check_values(config)
    return options.Settings.from_config(config)


def _plugin_main(args: list[str]) -> int:
    """plugin_settings() as pytest's main() ends: a UsageError is one `ERROR: ` line and exit 4."""
    import pytest
    try:
        plugin_settings(args)
    except pytest.UsageError as e:
        for msg in e.args:
            print(f"ERROR: {msg}", file=sys.stderr)
        return 4
    return 0


def fuzz_plugin(rng, scale: float, work: Path, stats: Stats) -> None:
    from harness.core import families
    per_option = max(2, round(12 * scale))
    base = ["--report-dir", str(work / "plugin-rep")]
    for option, domain, holds in PLUGIN:
        extra = {"--soc": families.FAMILIES + ("ascend999", "Ascend910B"),
                 "--tier": ("default", "slow", "all", "Slow", "fast"), "--backend": ("aclnn", "torch", "cuda", "Torch"),
                 "--case-workers": ("auto", "AUTO", "65", "64", "4"),
                 "--determinism-level": ("0", "1", "2", "3", "4", "-1", "1.0")}.get(option, ())
        if option == "--shard":
            values = [f"{rng.choice(NONSENSE + LEGIT)}/{rng.choice(NONSENSE + LEGIT)}" for _ in range(per_option)] + \
                     _values(rng, 2) + rng.sample(["1/2", "2/2", "3/2", "0/1", "1/1_0", "١/٢", "1/1"], 3)

            def domain(t):
                i, _, n = t.partition("/")
                return as_int(i) is not None and as_int(n) is not None and 1 <= as_int(i) <= as_int(n)
        else:
            values = _values(rng, per_option, extra)
        if option == "--soc":
            domain = one_of(*families.FAMILIES)
        values = values if option != "--soc" else values + [rng.choice(families.FAMILIES)]
        for value in values:
            args = [*base, f"{option}={value}"] if rng.random() < 0.3 else [*base, option, value]
            if option != "--backend":
                args += ["--backend", "torch"]
            o = call(_plugin_main, args)
            if value.startswith("-") and o.code == 4 and _PYTEST_SYNTAX.search(o.err):
                o.err = "ERROR: " + _PYTEST_SYNTAX.search(o.err).group(0) + "\n"
            verdict, problem = _refused_or_accepted(o, domain(value), option, accept_codes=(0,))
            if not problem and verdict == "accepted" and holds is not None:
                settings = plugin_settings(args)
                if not holds(settings, value):
                    problem = "Settings do not hold the value given"
            stats.add("plugin:" + option, f"{value!r}", verdict, problem, o)


# ---------------------------------------------------------------- running

def fuzz(rng: random.Random, scale: float, work: Path, parts=("baselines", "reporting", "explore", "plugin"),
         classes=None) -> dict:
    stats = Stats()
    t0 = time.perf_counter()
    seconds = {}
    for part, run in (("baselines", lambda: fuzz_baselines(rng, scale, work, stats, classes)),
                      ("reporting", lambda: fuzz_reporting(rng, scale, work, stats)),
                      ("explore", lambda: fuzz_explore(rng, scale, work, stats)),
                      ("plugin", lambda: fuzz_plugin(rng, scale, work, stats))):
        if part in parts:
            t = time.perf_counter()
            run()
            seconds[part] = round(time.perf_counter() - t, 2)
    return {"classes": stats.classes,
            "mutants": sum(s["mutants"] for c, s in stats.classes.items() if c != "original"),
            "failures": sum(s["failures"] for s in stats.classes.values()),
            "seconds": round(time.perf_counter() - t0, 2), "part_seconds": seconds,
            "slowest_call_cpu_s": round(stats.slowest[0], 3), "slowest": stats.slowest[1],
            "slowest_call_wall_s": round(stats.slowest[2], 3)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="inputfuzz-") as tmp:
        return fuzz(random.Random(args.seed), args.scale, Path(tmp)) | {"seed": args.seed}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1))
