"""The golden/input cache: reuse only what is provably the same, recompute anything damaged."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.judge import cache as cache_mod
from harness.operators import load_case_file

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "cases" / "avg_pool2d_backward.yaml"


@pytest.fixture(scope="module")
def cases():
    _, loaded = load_case_file(CASES)
    valid = [c for c in loaded if c.kind == "valid"][:3]
    return valid


def _same(a: cache_mod.Materials, b: cache_mod.Materials) -> bool:
    return all(torch.equal(a.prepared[k], b.prepared[k]) for k in a.prepared) and \
        all(torch.equal(a.expected[k], b.expected[k]) for k in a.expected)


def test_second_get_is_a_hit_with_identical_data(tmp_path, cases):
    c = cache_mod.GoldenCache(tmp_path)
    first = [c.get(case, True) for case in cases]
    again = cache_mod.GoldenCache(tmp_path)
    second = [again.get(case, True) for case in cases]
    assert (c.misses, c.hits) == (3, 0) and (again.misses, again.hits) == (0, 3)
    assert all(_same(a, b) for a, b in zip(first, second))
    assert all(_same(a, cache_mod.compute(case, True)) for a, case in zip(second, cases))
    manifest = [json.loads(x) for x in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert [m["case_id"] for m in manifest] == [case.id for case in cases]


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "empty", "swap with another entry", "edit the header",
                                    "another format"])
def test_a_damaged_entry_is_detected_and_recomputed(tmp_path, cases, damage):
    c = cache_mod.GoldenCache(tmp_path)
    c.get(cases[0], True)
    c.get(cases[1], True)
    data = c.path(cache_mod.case_key(cases[0]))
    raw = bytearray(data.read_bytes())
    if damage == "flip a byte":
        raw[len(raw) // 2] ^= 0x40
    elif damage == "truncate":
        raw = raw[:100]
    elif damage == "empty":
        raw = b""
    elif damage == "swap with another entry":       # intact, checksum and all, but for another case
        raw = c.path(cache_mod.case_key(cases[1])).read_bytes()
    elif damage == "edit the header":               # a shape edited in place, as a hand fix might
        at = raw.index(b'"shape": [') + len(b'"shape": [')
        raw[at:at + 1] = b"9" if raw[at:at + 1] != b"9" else b"8"
    else:                                           # an entry written by an older harness
        raw[:8] = b"ACLNNGC1"
    data.write_bytes(bytes(raw))
    again = cache_mod.GoldenCache(tmp_path)
    got = again.get(cases[0], True)
    assert again.misses == 1 and again.hits == 0 and len(again.rejected) == 1, again.rejected
    assert cases[0].id in again.rejected[0]
    assert _same(got, cache_mod.compute(cases[0], True))
    fresh = cache_mod.GoldenCache(tmp_path)          # the replacement is sound
    fresh.get(cases[0], True)
    assert fresh.hits == 1 and not fresh.rejected


def test_key_follows_everything_the_data_depends_on(cases, monkeypatch):
    a, b = cases[0], cases[1]
    assert cache_mod.case_key(a) != cache_mod.case_key(b)       # another case
    before = cache_mod.case_key(a)
    monkeypatch.setattr(cache_mod, "_code_digest", lambda name: "a changed golden source")
    assert cache_mod.case_key(a) != before


def test_an_entry_without_golden_is_completed_when_a_golden_is_needed(tmp_path, cases):
    c = cache_mod.GoldenCache(tmp_path)
    assert c.get(cases[0], False).expected is None
    assert c.get(cases[0], False).expected is None and c.hits == 1
    full = c.get(cases[0], True)
    assert full.expected is not None and c.misses == 2
    assert c.get(cases[0], False).expected is not None and c.hits == 2


def test_code_digest_covers_the_golden_source(tmp_path):
    """The digest reads the golden module's file, so an edit there changes every key of that op."""
    cache_mod._code_digest.cache_clear()
    digest = cache_mod._code_digest("avg_pool2d_backward")
    assert digest != cache_mod._code_digest("max_pool2d_with_indices_backward")


def _pytest(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_prepare_only_then_run_uses_the_cache(tmp_path):
    sel = [str(CASES), "-k", "windows and float32", "-n", "0", "--backend", "torch", "--report-dir", str(tmp_path / "r")]
    prep = _pytest(*sel, "--golden-cache", str(tmp_path / "gc"), "--prepare-only")
    assert prep.returncode == 0, prep.stdout[-2000:]
    assert " skipped" in prep.stdout and " passed" not in prep.stdout, prep.stdout[-1500:]   # nothing was judged
    m = [ln for ln in prep.stdout.splitlines() if "golden cache" in ln]
    assert m and " 0 hits" in m[0], prep.stdout[-1500:]
    computed = int(m[0].split("hits, ")[1].split(" computed")[0])
    assert computed > 0
    run = _pytest(*sel, "--golden-cache", str(tmp_path / "gc"))
    assert run.returncode == 0, run.stdout[-2000:]
    line = next(ln for ln in run.stdout.splitlines() if "golden cache" in ln)
    assert f"{computed} hits, 0 computed, 0 damaged" in line, line
