"""Realistic library bugs that the default tier does not catch, planted by hand into a copy of the
repository's software CANN: each one edits one spot of the C source (a string replaced), so the
copy builds a library with exactly that bug (swcann/build.py hashes the sources: the copy's build
is its own). tests/test_explore.py and benchmarks/bench_explore.py use them.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests import repo_copy


@dataclass(frozen=True)
class Bug:
    name: str
    op: str              # the case file's stem
    family: str
    file: str            # the C file, relative to the repository
    old: str             # the exact text replaced
    new: str
    what: str
    kind: str            # valid | invalid: the kind of example that can show it


BUGS = (
    Bug("tail_w257", "max_pool2d_with_indices_backward", "ascend910b", "swcann/src/ops/common.c",
        "                        if (i == stop) return;\n",
        "                        if (i == stop) return;\n"
        "                        if (t->n[4] == 257 && x == 256) continue; /* PLANTED: tail mask of 256 lanes */\n",
        "a tail bug only at a width of 257: the last element of every output row is never stored", "valid"),
    Bug("w17_s3", "avg_pool2d_backward", "ascend910b", "swcann/src/ops/pool_kernels.c",
        "                    float g = ld_f(&go, at);\n",
        "                    float g = ld_f(&go, at);\n"
        "                    if (W == 17 && j->s[2] == 3 && ow == go.n[4] - 1) g = 0.0f; /* PLANTED */\n",
        "a wrong result only when W is 17 and the W stride is 3: the last window's gradient is lost", "valid"),
    Bug("int8_bf16_950", "max_pool3d_with_argmax_backward", "ascend950",
        "swcann/src/ops/max_pool3d_with_argmax_backward.c",
        "        (st = chk_dtype_in(&x, \"B10\", NT(indices), il, nil, SOC_NOTE_FAMILY)) ||\n",
        "        (!(is_regbase(&x) && indices->dtype == ACL_INT8 && self->dtype == ACL_BF16) && /* PLANTED */\n"
        "         (st = chk_dtype_in(&x, \"B10\", NT(indices), il, nil, SOC_NOTE_FAMILY))) ||\n",
        "a check skipped only for int8 indices on one family: B10 passes int8 indices of a bf16 self on the 950",
        "invalid"),
    Bug("rank_first_5d", "max_pool3d_with_argmax_backward", "ascend910b",
        "swcann/src/ops/max_pool3d_with_argmax_backward.c",
        "    if ((st = chk_dtype_in(&x, \"B9\", NT(self), fl, nl, SOC_NOTE_ARCH)) ||\n",
        "    if (gradOutput->ndim == 5 && (st = chk_rank_in(&x, \"B16\", NT(gradInput), 4, 5))) return st; /* PLANTED */\n"
        "    if ((st = chk_dtype_in(&x, \"B9\", NT(self), fl, nl, SOC_NOTE_ARCH)) ||\n",
        "a check order swapped only for 5-D input: gradInput's rank (B16) is checked before B9..B14", "invalid"),
    Bug("unpool_index_u16", "max_unpool3d_backward", "ascend910b", "swcann/src/ops/max_unpool3d_backward.c",
        "                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));\n",
        "                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));\n"
        "                        if (OV > 65535) v &= 0xFFFF; /* PLANTED: 16-bit index arithmetic */\n",
        "an index kept in 16 bits: a gradOutput volume over 65535 elements gathers from the wrong place", "valid"),
)


def by_name(name: str) -> Bug:
    return next(b for b in BUGS if b.name == name)


def copy_repo(target: Path) -> Path:
    """The repository's files (their working-tree versions, untracked ones git does not ignore too:
    a change under way is what is tested) under `target`."""
    target.mkdir(parents=True, exist_ok=True)
    repo_copy.make(target)
    return target


def plant(root: Path, bug: Bug) -> None:
    """Put `bug` into the copy at `root` (its source must hold the text exactly once)."""
    path = root / bug.file
    text = path.read_text()
    if text.count(bug.old) != 1:
        raise AssertionError(f"{bug.name}: the text to replace occurs {text.count(bug.old)} times in {bug.file}")
    path.write_text(text.replace(bug.old, bug.new))


def unplant(root: Path, bug: Bug) -> None:
    path = root / bug.file
    path.write_text(path.read_text().replace(bug.new, bug.old))


def run_suite(root: Path, nodeid: str, family: str, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    """`./run suite NODEID --soc F` in the copy (one process: no xdist, no report.html)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:cacheprovider", nodeid,
                           "--backend", "aclnn", "--soc", family, "-n", "0", "--no-html",
                           "--report-dir", str(root / "reports" / "pasted")],
                          cwd=root, capture_output=True, text=True, timeout=timeout, env=env)


def paste_and_run(root: Path, bug: Bug, finding: dict, env: dict) -> tuple[subprocess.CompletedProcess,
                                                                           subprocess.CompletedProcess]:
    """Paste the finding's emitted YAML under `groups:` of the bug's case file in the copy and run
    the pasted case on the buggy library, then on the fixed one (the bug taken out); the copy is
    left as it was (bug planted, case file unchanged). (buggy run, fixed run)."""
    case_file = root / "cases" / f"{bug.op}.yaml"
    original = case_file.read_text()
    case_file.write_text(original + Path(finding["yaml"]).read_text())
    nodeid = f"cases/{bug.op}.yaml::{finding['case_id'].split('.', 1)[1]}"
    try:
        buggy = run_suite(root, nodeid, bug.family, env)
        unplant(root, bug)
        try:
            fixed = run_suite(root, nodeid, bug.family, env)
        finally:
            plant(root, bug)
    finally:
        case_file.write_text(original)
    return buggy, fixed
