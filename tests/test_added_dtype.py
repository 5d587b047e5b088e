"""A dtype the harness computes with is one platform entry plus the per-op rules of the ops that accept it.

Each directory of tests/added_dtypes/ holds one: `platform.yaml` (its entry for platforms/platform.yaml's
`dtypes:` list, in place of the entry of the same name) and `rules.yaml` (the edits that state the per-op
rules: an op's phase-1 model, its software-CANN source, its golden where torch lacks a kernel, its case
file). In a copy of the repository they are made as a contributor following the README makes them, and then:
at most 4 files outside the case files changed; the dtype's cases run on the software CANN built from the
copy, on two families of different architectures and on torch, and all pass; the C reproducer of one
reads it, passes the correct library and fails a broken one; every test that reads the platform's set of
dtypes (found by reading the tests) and the gates of the op (`./run tests --op`) pass on the copy.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.repro.commands import BUILD_COMMAND
from tests import repo_copy, set_readers, swenv

REPO = repo_copy.REPO
ADDED = Path(__file__).resolve().parent / "added_dtypes"
DTYPES = sorted(p.name for p in ADDED.iterdir() if (p / "platform.yaml").is_file()) if ADDED.is_dir() else []
# what the acceptance allows a dtype to touch outside the case files
MAX_FILES = 4
RUNS = ("ascend910b", "ascend950", "torch")       # 910B's DAV_2201 and 950's DAV_3510 paths, and the golden's twin


def replace_entry(platform_text: str, entry_text: str) -> str:
    """platform.yaml with the dtype entry of the same name replaced by `entry_text` (one flow mapping)."""
    entry = yaml.safe_load(entry_text)
    lines = [line.strip() for line in entry_text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    block = "".join(("  - " if i == 0 else "     ") + line + "\n" for i, line in enumerate(lines))
    pattern = re.compile(r"^  - \{name: " + re.escape(entry["name"]) + r",[^}]*\}\n", re.MULTILINE)
    assert len(pattern.findall(platform_text)) == 1, f"no single entry named {entry['name']}"
    text = pattern.sub(lambda _: block, platform_text)
    assert entry in yaml.safe_load(text)["dtypes"]
    return text


def apply_edits(root: Path, edits: list[dict]) -> set[str]:
    """Each edit replaces every occurrence of `old` in `file` (there must be one) with `new`."""
    touched = set()
    for edit in edits:
        path = root / edit["file"]
        text = path.read_text()
        assert edit["old"] in text, f"{edit['file']}: {edit['old']!r} not found (the rule is out of date)"
        path.write_text(text.replace(edit["old"], edit["new"]))
        touched.add(edit["file"])
    return touched


@pytest.fixture(scope="module", params=DTYPES)
def copy(request, tmp_path_factory) -> repo_copy.Copy:
    name = request.param
    root = repo_copy.fresh(tmp_path_factory.mktemp(f"repo-{name}"))
    platform = root / "platforms" / "platform.yaml"
    platform.write_text(replace_entry(platform.read_text(), (ADDED / name / "platform.yaml").read_text()))
    rules = yaml.safe_load((ADDED / name / "rules.yaml").read_text())
    root.touched = {"platforms/platform.yaml"} | apply_edits(root, rules["edits"])
    root.dtype = name
    return root


def test_replace_entry_swaps_one_entry():
    text = ("dtypes:\n  - {name: int8, acl: 2,\n     torch: int8}\n  - {name: uint16, acl: 7,\n     torch: null}\n"
            "  - {name: uint32, acl: 8, torch: null}\n")
    out = replace_entry(text, "# made computable\n{name: uint16, acl: 7,\n torch: uint16}\n")
    assert out == ("dtypes:\n  - {name: int8, acl: 2,\n     torch: int8}\n  - {name: uint16, acl: 7,\n     torch: uint16}\n"
                   "  - {name: uint32, acl: 8, torch: null}\n")
    with pytest.raises(AssertionError, match="no single entry named int4"):
        replace_entry(text, "{name: int4, acl: 29}")


def test_an_edit_that_no_longer_applies_says_so(tmp_path):
    (tmp_path / "a.c").write_text("static const int dl[] = {ACL_FLOAT};\n")
    with pytest.raises(AssertionError, match=r"a\.c: 'ACL_INT64' not found"):
        apply_edits(tmp_path, [{"file": "a.c", "old": "ACL_INT64", "new": "ACL_INT64, ACL_UINT16"}])


def test_it_touches_at_most_four_files_outside_the_case_files(copy):
    changed = repo_copy.changed(copy, copy.before)
    assert changed == copy.touched, changed ^ copy.touched
    outside = sorted(p for p in changed if not p.startswith("cases/"))
    assert "platforms/platform.yaml" in outside and len(outside) <= MAX_FILES, outside


@pytest.mark.parametrize("where", RUNS)
def test_its_cases_run_and_pass(copy, where):
    backend = ["--backend", "torch"] if where == "torch" else ["--backend", "aclnn", "--soc", where]
    report = copy / "reports" / f"{copy.dtype}-{where}"
    proc = repo_copy.pytest_in(copy, "cases/", *backend, "-k", copy.dtype, f"--report-dir={report}", "-q",
                               jobs="2")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (report / "results.jsonl").read_text().splitlines()]
    computed = [r for r in records if r["dtype"] == copy.dtype and r["kind"] == "valid"]
    assert len(computed) >= 10, (len(computed), len(records))
    assert {r["status"] for r in records} == {"PASS"}, {r["case_id"]: r["reason"] for r in records if r["status"] != "PASS"}


def _swcann(root: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "swcann.build"], cwd=root, capture_output=True, text=True,
                         timeout=600, env=swenv.bare_env())
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_its_reproducer_reads_it(copy, tmp_path):
    # the C program a vendor is handed: it must read the dtype's elements (a missing reader read
    # them as 0 and FAILed the correct library), pass the correct library and fail a broken one
    # outputSize 5x7x6: H != W, so the fault (H and W extents swapped) moves elements
    listed = repo_copy.pytest_in(copy, "cases/", "--backend", "aclnn", "--soc", "ascend910b", "-k",
                                 f"gather_all_dtypes and {copy.dtype} and os5x7x6", "--collect-only", "-q")
    case_id = next(line for line in listed.stdout.splitlines() if "::" in line)     # its pytest node id
    out = tmp_path / "repro"
    made = subprocess.run([sys.executable, "-m", "harness.repro", "c", case_id, "-o", str(out), "--soc", "ascend910b"],
                          cwd=copy, capture_output=True, text=True, timeout=300, env=swenv.bare_env())
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    env = {**swenv.env_for(_swcann(copy)), "SWCANN_SOC": "ascend910b"}
    built = subprocess.run(["bash", "-c", BUILD_COMMAND], cwd=out, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr[-2000:]
    good = subprocess.run(["./repro"], cwd=out, env=env, capture_output=True, text=True, timeout=120)
    assert good.returncode == 0 and "verdict: PASS" in good.stdout, good.stdout[-2000:]
    bad = subprocess.run(["./repro"], cwd=out, env={**env, "SWCANN_FAULTS": "unpool_hw_swap"},
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "verdict: FAIL" in bad.stdout, bad.stdout[-2000:]


def test_every_test_that_reads_the_dtypes_and_the_ops_gates_pass_with_it(copy):
    tests = [t for p in sorted((REPO / "tests").glob("test_*.py")) if p.name != Path(__file__).name
             for t in set_readers.DTYPES.readers(p, REPO)]
    assert len(tests) >= 8, tests
    proc = repo_copy.pytest_in(copy, *tests, "-q", jobs="2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    ops = {Path(e["file"]).stem for e in yaml.safe_load((ADDED / copy.dtype / "rules.yaml").read_text())["edits"]
           if e["file"].startswith("cases/")}
    for op in sorted(ops):
        # the contributor's own command, with this process's environment as its .venv
        gates = subprocess.run(["./run", "tests", "--op", op, "-q", "-p", "no:cacheprovider"], cwd=copy,
                               capture_output=True, text=True, timeout=1800,
                               env={**swenv.bare_env(), "VENV": sys.prefix, "JOBS": "2"})
        assert gates.returncode == 0, gates.stdout[-4000:] + gates.stderr[-2000:]
        assert " failed" not in gates.stdout and re.search(r"\b\d+ passed", gates.stdout), gates.stdout[-2000:]
