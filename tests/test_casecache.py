"""Expanded case files are reused between processes only while nothing they depend on changed."""
from __future__ import annotations

import pickle

import pytest
import yaml

from harness.judge import casecache
from harness.operators import load_case_file
from tests.test_casefile_errors import BASE


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(casecache, "DIRECTORY", tmp_path / "casefiles")
    monkeypatch.delenv("ACLNN_CASE_CACHE", raising=False)
    return tmp_path / "casefiles"


def _write(path, doc):
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _ids(path):
    return [c.id for c in load_case_file(path)[1]]


def test_a_warm_entry_gives_the_same_cases_and_a_changed_file_is_expanded_again(tmp_path, cache_dir, monkeypatch):
    path = _write(tmp_path / "mp.yaml", BASE)
    first = _ids(path)
    assert len(list(cache_dir.glob("mp-*.pickle"))) == 1
    calls = []
    real = casecache.load
    monkeypatch.setattr(casecache, "load", lambda p, f, compute: real(p, f, lambda q: calls.append(q) or compute(q)))
    assert _ids(path) == first and not calls                      # served from the entry
    changed = dict(BASE, groups=[dict(BASE["groups"][0], name="renamed")])
    _write(path, changed)
    assert _ids(path) != first and len(calls) == 1               # new bytes: expanded again
    assert len(list(cache_dir.glob("mp-*.pickle"))) == 1         # the stale entry was replaced


def test_a_damaged_or_foreign_entry_is_recomputed_never_used(tmp_path, cache_dir):
    path = _write(tmp_path / "mp.yaml", BASE)
    truth = _ids(path)
    (entry,) = cache_dir.glob("mp-*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])                    # truncated
    assert _ids(path) == truth
    key, (op, cases) = pickle.loads(entry.read_bytes())
    entry.write_bytes(pickle.dumps((b"another key", (op, cases[:1]))))  # right name, wrong key
    assert _ids(path) == truth


def test_other_code_or_vocabulary_is_another_key(tmp_path, cache_dir):
    path = _write(tmp_path / "mp.yaml", BASE)
    a, _ = casecache._entry(path.resolve(), "goldens=('x',)")
    b, _ = casecache._entry(path.resolve(), "goldens=('y',)")
    assert a != b


def test_a_broken_file_is_never_cached(tmp_path, cache_dir):
    from harness.core.errors import CaseFileError
    path = _write(tmp_path / "mp.yaml", dict(BASE, op=7))
    for _ in range(2):
        with pytest.raises(CaseFileError):
            load_case_file(path)
    assert not list(cache_dir.glob("*.pickle"))


def test_a_special_or_huge_file_goes_straight_to_the_bounded_reader(tmp_path, cache_dir):
    """Hashing reads the whole file: a FIFO would block that read forever, an oversized file would
    be read whole. Both are left to the reader, which refuses them without reading."""
    import os
    import threading
    from harness.core.errors import CaseFileError
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(CaseFileError, load_case_file, fifo)), daemon=True)
    t.start()
    t.join(10)
    assert done, "collecting a FIFO blocked"
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (2 << 20))
    with pytest.raises(CaseFileError):
        load_case_file(big)
    assert not list(cache_dir.glob("*.pickle"))
