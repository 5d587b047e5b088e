"""Malformed case files never cost results, time or memory: a mutation fuzzer over the real files.

tests/casefile_fuzz.py makes about 1,800 mutants of cases/*.yaml (alias bombs,
non-UTF-8 bytes, deep nesting, duplicate keys, unknown keys, absurd numbers, huge
inputs, random damage; and YAML that must mean one thing: integers written as floats,
forms YAML 1.1 and 1.2 read differently, statuses of the wrong type, a family listed
twice, shapes of a rank the op cannot take, control characters) and loads each one in a
subprocess, so that its peak RSS is its own. Run it by hand for the full report:
python -m tests.casefile_fuzz
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MIN_MUTANTS = {"alias_bomb": 100, "non_utf8": 100, "deep_nesting": 100, "duplicate_keys": 100,
               "unknown_keys": 100, "absurd_numbers": 100, "huge": 15, "other": 100,
               "integral_floats": 100, "yaml11_forms": 100, "status_types": 100, "duplicate_families": 100,
               "ranks_out_of_range": 100, "control_chars": 100}
# classes whose every mutant is a mistake (the others also make legitimate mutants, checked when accepted)
REFUSED_ONLY = ("alias_bomb", "non_utf8", "deep_nesting", "duplicate_keys", "unknown_keys", "integral_floats",
                "status_types", "duplicate_families")
MAX_RSS_GROWTH_MB = 150        # above the process's peak after loading the real files once
MAX_LOAD_CPU_S = 5.0           # CPU time of one mutant's load (the largest take well under a second)


def test_fuzzed_case_files_fail_cleanly_and_cheaply():
    proc = subprocess.run([sys.executable, "-m", "tests.casefile_fuzz"], cwd=ROOT, capture_output=True,
                          text=True, timeout=1200)    # a hang guard: ~45 s quiet, 99 s beside two CPU hogs
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    classes = report["classes"]
    print("\ncase-file fuzzer:", {c: {k: s[k] for k in ("mutants", "rejected", "accepted", "failures")}
                                  for c, s in classes.items()},
          f"peak RSS {report['peak_rss_mb_before']} -> {report['peak_rss_mb_after']} MB,",
          f"slowest load {report['slowest_load_cpu_s']} s of CPU time")
    problems = {c: s["examples"] for c, s in classes.items() if s["failures"]}
    assert not problems, json.dumps(problems, indent=1)
    assert report["mutants"] >= 1700
    for cls, least in MIN_MUTANTS.items():
        assert classes[cls]["mutants"] >= least, cls
        # every mutant ended in a clean rejection or a checked acceptance
        assert classes[cls]["rejected"] + classes[cls]["accepted"] == classes[cls]["mutants"], cls
    for cls in REFUSED_ONLY:
        assert classes[cls]["accepted"] == 0, cls
    for cls in ("yaml11_forms", "ranks_out_of_range", "control_chars"):    # both verdicts were exercised
        assert classes[cls]["accepted"] > 10 and classes[cls]["rejected"] > 10, (cls, classes[cls])
    assert classes["original"]["accepted"] == classes["original"]["mutants"] > 5
    assert report["peak_rss_mb_after"] - report["peak_rss_mb_before"] < MAX_RSS_GROWTH_MB, report
    assert report["slowest_load_cpu_s"] < MAX_LOAD_CPU_S, report
