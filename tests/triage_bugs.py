"""Bugs planted to test the triage (python -m harness.reporting triage RUN --confirm): each one a slice
of the library's behaviour that a short predicate of case facts names, with the tier that shows it.

A bug is a planted_bugs.Bug (one C text replaced in a copy of the software CANN); next to it:
  * its tier: case files, a -k expression and the families run (two where the slice names a family,
    so that the family is something the run varies);
  * its slice: the atoms the top cause must state, as sets; more than one set only where the tier
    makes two atoms equivalent (they match the same records);
  * `hits`: the ground truth, the bug's own condition read from a record's facts, so that a test can
    compare the predicate's matches with the cases the bug really hit.
tests/test_triage_planted.py runs them.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.triage import features, signature as sig
from tests import planted_bugs, swenv
from tests.planted_bugs import Bug

PER_SIDE = 4            # --confirm-cases: new cases run on each side of a predicate (near misses first)


@dataclass(frozen=True)
class Tier:
    case_files: tuple[str, ...]     # stems under cases/
    k: str                          # pytest -k expression
    families: tuple[str, ...]


@dataclass(frozen=True)
class Planted:
    bug: Bug
    tier: Tier
    slice: tuple[frozenset[str], ...]   # the atoms the top cause must state (alternatives)
    hits: Callable[[dict], bool]        # does the bug act on this record's case?

    @property
    def name(self) -> str:
        return self.bug.name


def _dims(rec: dict) -> list[int]:
    return list(rec.get("shape") or [])


def _attr(rec: dict, name: str):
    return (rec.get("attrs") or {}).get(name)


# 4-D cases only (a 3-D call's last dim is labelled L and its first N, while the kernel's W is that
# last dim and its N is 1), labelled NCHW and ND (features.py names an ND tensor's dims as NCHW):
# W in {1, 5, 8, 16, 19, 33, 65, 127}, N in {1, 2, 4, 7}, H = 17 where W = 19 (no H atom stands for
# a W one)
WIDTHS_4D = Tier(("max_pool2d_with_indices_backward",),
                 "op_plugin or (cov_tiles_fp32 and 7x7x17x19 and NCHW) or (ceil_rescues_B30 and 1x2x5x1)",
                 ("ascend910b",))

PLANTED = (
    Planted(
        Bug("tail_w_mod16", "max_pool2d_with_indices_backward", "ascend910b", "swcann/src/ops/common.c",
            "                        if (i == stop) return;\n",
            "                        if (i == stop) return;\n"
            "                        /* PLANTED: the row's tail mask is one lane short when W = 16k + 1 */\n"
            "                        if (t->n[4] % 16 == 1 && x == t->n[4] - 1) continue;\n",
            "a tail bug at one width remainder: where W mod 16 = 1 the last element of every gradInput row "
            "is never stored", "valid"),
        WIDTHS_4D,
        # W in {1, 33, 65} is also W mod 32 = 1: the tier holds no W = 17 or 49 to tell them apart
        (frozenset({"W mod 16 = 1"}), frozenset({"W mod 32 = 1"})),
        lambda rec: len(_dims(rec)) == 4 and _dims(rec)[-1] % 16 == 1),
    Planted(
        Bug("bf16_as_fp16_950", "adaptive_max_pool2d_backward", "ascend950",
            "swcann/src/ops/adaptive_max_pool2d_backward.c",
            "    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;\n"
            "    j->idx_cast_i32 = indices->dtype == ACL_INT64;",
            "    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;\n"
            "    /* PLANTED: the 950 tiling's dtype key maps BF16 onto the FP16 kernel: its results are\n"
            "     * stored with the FP16 encoding */\n"
            "    if (is_regbase(&x) && gradInput->dtype == ACL_BF16) j->h.t[2].dtype = ACL_FLOAT16;\n"
            "    j->idx_cast_i32 = indices->dtype == ACL_INT64;",
            "one dtype on one family: bfloat16 results are stored as float16 bits on the 950 only", "valid"),
        Tier(("adaptive_max_pool2d_backward",), "divisible and not 3d and not cov", ("ascend910b", "ascend950")),
        (frozenset({"family=ascend950", "dtype=bfloat16"}),),
        lambda rec: rec.get("family") == "ascend950" and rec.get("dtype") == "bfloat16"),
    Planted(
        Bug("b30_id_4d", "max_pool3d_with_argmax_backward", "ascend910b",
            "swcann/src/ops/max_pool3d_with_argmax_backward.c",
            "        (st = chk_same_shape(&x, \"B30\", NT(self), NT(gradInput))))\n",
            "        /* PLANTED: the 4-D (C, D, H, W) branch reports its 2nd shape check with the 1st one's id */\n"
            "        (st = chk_same_shape(&x, r == 4 ? \"B29\" : \"B30\", NT(self), NT(gradInput))))\n",
            "a phase-1 check reported under another id on one rank: on a 4-D call a gradInput shape that "
            "is not self's is refused as B29 (indices vs gradOutput) instead of B30", "invalid"),
        # the only 4-D B30 scenarios (bad_params_half fp16, l0_labels fp32) beside the 5-D ones
        Tier(("max_pool3d_with_argmax_backward",), "bad_params or l0_labels", ("ascend910b", "ascend950")),
        (frozenset({"rank=4", "check=B30"}),),
        lambda rec: len(_dims(rec)) == 4 and rec.get("check") == "B30"),
    Planted(
        Bug("nhwc_rank_unknown", "max_pool2d_with_indices_backward", "ascend910b", "swcann/src/ops/common.c",
            "    case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_HWCN: case ACL_FORMAT_FRACTAL_Z:\n",
            "    case ACL_FORMAT_NCHW: case ACL_FORMAT_HWCN: case ACL_FORMAT_FRACTAL_Z: /* PLANTED: no NHWC */\n",
            "a label rule: ReFormat's table of fixed ranks lost NHWC, so an NHWC label on a view of another "
            "rank is accepted where 561103 is due (the generic rule R1, l0_format_rules.md)", "invalid"),
        # l0_accepted: valid calls, 4-D NHWC among them, so that the label alone is not the slice (a new
        # call labelled NHWC that an earlier check refuses, or of a rank that fits, is no failure)
        Tier(("max_pool2d_with_indices_backward", "max_pool3d_with_argmax_backward"), "l0_labels or l0_accepted",
             ("ascend910b", "ascend950")),
        (frozenset({"format=NHWC"}),),
        lambda rec: (rec.get("formats") or {}).get("self") == "NHWC" and rec.get("check") == "L0.R1"),
    Planted(
        Bug("avg_nan_dropped", "avg_pool2d_backward", "ascend910b", "swcann/src/ops/pool_kernels.c",
            "                    float g = ld_f(&go, at);\n",
            "                    float g = ld_f(&go, at);\n"
            "                    if (!(g == g)) continue; /* PLANTED: the lane-mask compare drops NaN windows */\n",
            "a NaN slip in one kernel: the average kernel skips windows whose gradient is NaN", "valid"),
        # g_specials_sum_safe puts NaN in about 0.8 % of gradOutput: every one of these 4-D cases
        # (gradOutput 7x7x9x10) holds some, while a small case of a `specials` class may hold none
        Tier(("avg_pool2d_backward",), "cov_values and 7x7x17x19", ("ascend910b",)),
        (frozenset({"values=g_specials_sum_safe"}),),
        lambda rec: features.value_class(rec) == "g_specials_sum_safe"),
    Planted(
        Bug("ceil_cip_undivided", "avg_pool2d_backward", "ascend910b", "swcann/src/ops/avg_pool2d_backward.c",
            "    a->divisor_override = divisorOverride;\n",
            "    /* PLANTED: the ceil-mode tiling with countIncludePad passes a divisor of 1 where 0 (none) is due */\n"
            "    a->divisor_override = divisorOverride ? divisorOverride : ceilMode && countIncludePad;\n",
            "a divisor wrong on one attribute combination: with ceilMode and countIncludePad and no "
            "divisorOverride, the gradients are never divided", "valid"),
        # `windows` has ceil + countIncludePad windows without a divisorOverride only; cov_attr_forms'
        # do9 one (ceil, countIncludePad, divisorOverride 9) is what the divisor of 1 does not reach
        Tier(("avg_pool2d_backward",), "(windows and float32) or (cov_attr_forms and float32 and do9)",
             ("ascend910b",)),
        (frozenset({"ceilMode=true", "countIncludePad=true", "divisorOverride=0"}),),
        lambda rec: _attr(rec, "ceilMode") is True and _attr(rec, "countIncludePad") is True
        and _attr(rec, "divisorOverride") == 0),
    Planted(
        Bug("segv_batch_of_one", "max_pool2d_with_indices_backward", "ascend910b", "swcann/src/ops/pool_kernels.c",
            "    const int64_t ext[5] = {on, oc, go.n[2], go.n[3], go.n[4]};\n",
            "    const int64_t ext[5] = {on, oc, go.n[2], go.n[3], go.n[4]};\n"
            "    float *volatile one_batch = NULL; /* PLANTED: the N = 1 fast path's staging buffer is never made */\n"
            "    if (on == 1) one_batch[0] = 0.0f;\n",
            "a crash on one shape: the scatter kernel writes through a null pointer when N is 1 (SIGSEGV)",
            "valid"),
        WIDTHS_4D,
        (frozenset({"N=1"}),),
        lambda rec: len(_dims(rec)) == 4 and _dims(rec)[0] == 1),
    Planted(
        Bug("stride_gap_store", "adaptive_max_pool2d_backward", "ascend910b", "swcann/src/ops/common.c",
            "                        else st_f(t, at, v);\n",
            "                        else st_f(t, at, v);\n"
            "                        /* PLANTED: a pair store where W has a stride: it fills each gap */\n"
            "                        if (t->s[4] > 1 && !lt_channel_last(t)) st_f(t, at + 1, v);\n",
            "a write into stride gaps: on a gradInput view whose W stride is not 1 (and not channels-last) "
            "each element is stored as a pair, the second one landing in the gap", "valid"),
        Tier(("adaptive_max_pool2d_backward",), "cov_tiles_fp32 and not 3d and int32 and NCHW", ("ascend910b",)),
        (frozenset({"layout(gradInput)=strided"}),),
        lambda rec: (rec.get("layouts") or {}).get("gradInput") == "strided"),
)


def by_name(name: str) -> Planted:
    return next(p for p in PLANTED if p.name == name)


# ------------------------------------------------------------------ running a tier in a copy

def make_copy(target: Path, bugs: tuple[Bug, ...] = ()) -> Path:
    """A copy of the repository at `target` with `bugs` planted (none: the fault-free library)."""
    root = planted_bugs.copy_repo(target)
    for bug in bugs:
        planted_bugs.plant(root, bug)
    return root


def _run(root: Path, args: list[str], env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, timeout=timeout,
                          env=env)


def run_tier(root: Path, tiers: tuple[Tier, ...], out: Path) -> Path:
    """Every tier's cases on the copy's library, one report directory per family, merged when there
    are several; the run's directory (what triage reads)."""
    per_family: dict[str, list[Tier]] = {}
    for tier in tiers:
        for family in tier.families:
            per_family.setdefault(family, []).append(tier)
    runs = []
    for family, on in sorted(per_family.items()):
        report = out / family
        files = sorted({f"cases/{stem}.yaml" for t in on for stem in t.case_files})
        # one -k for all: each tier's expression limited to its own case files (pytest matches the
        # file's name among a case's keywords)
        k = " or ".join(f"(({' or '.join(stem for stem in t.case_files)}) and ({t.k}))" for t in on)
        proc = _run(root, ["-m", "pytest", *files, "--backend", "aclnn", "--soc", family, "-q", "-n", "0",
                           "-k", k, "--report-dir", str(report), "--no-html", "-p", "no:cacheprovider"],
                    dict(swenv.bare_env(), SWCANN_SOC=family))
        if not (report / "results.jsonl").exists():
            raise AssertionError(f"the tier on {family} wrote no results:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        runs.append(report)
    if len(runs) == 1:
        return runs[0]
    merged = out / "merged"
    proc = _run(root, ["-m", "harness.reporting", "merge", "-o", str(merged), *map(str, runs), "--no-html"],
                swenv.bare_env())
    if not (merged / "results.jsonl").exists():
        raise AssertionError(f"merge failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return merged


def triage(root: Path, run: Path, confirm: bool = True) -> tuple[dict, subprocess.CompletedProcess]:
    """`python -m harness.reporting triage RUN [--confirm]` in the copy, with the tier's environment
    (confirm refuses another library or other fault switches); (its JSON, the process)."""
    out = run / "causes.json"
    args = ["-m", "harness.reporting", "triage", str(run), "--json", str(out)]
    if confirm:
        args += ["--confirm", "--confirm-cases", str(PER_SIDE)]
    proc = _run(root, args, swenv.bare_env())
    if proc.returncode != 0 or not out.exists():
        raise AssertionError(f"triage exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return json.loads(out.read_text()), proc


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]


def top_cause(doc: dict) -> tuple[int, dict]:
    """(1-based number, as --confirm names it; cause) of the cause explaining the most failures."""
    return max(enumerate(doc["causes"], 1), key=lambda nc: nc[1]["explained"])


def states_slice(predicate: list[str], planted: Planted) -> bool:
    """Whether a predicate (its atoms as they read) states the planted slice."""
    return any(atoms <= set(predicate) for atoms in planted.slice)


def _key(rec: dict) -> tuple[str, str]:
    return rec.get("case_id") or "", rec.get("family") or ""


def matches(cause: dict, rec: dict) -> bool:
    """Whether a record meets every atom of a cause's predicate (read by the triage's own features)."""
    present = {(name, value) for name, value, _cx in features.of(rec)}
    return all((t["feature"], t["value"]) in present for t in cause["terms"])


@dataclass
class Truth:
    """A predicate against the ground truth of one run: the cases the bug acts on (its own condition,
    `Planted.hits`), the cases that failed, and the cases the predicate matches."""
    hit: set
    failed: set
    said: set

    @classmethod
    def of(cls, recs: list[dict], cause: dict, planted: Planted) -> "Truth":
        judged = [r for r in recs if sig.is_failing(r) or sig.is_passing(r)]
        return cls({_key(r) for r in judged if planted.hits(r)}, {_key(r) for r in judged if sig.is_failing(r)},
                   {_key(r) for r in judged if matches(cause, r)})

    @property
    def precision(self) -> float:
        return len(self.hit & self.said) / len(self.said) if self.said else 0.0

    @property
    def recall(self) -> float:
        return len(self.hit & self.said) / len(self.hit) if self.hit else 0.0

    def __str__(self) -> str:
        return (f"{len(self.hit)} case(s) hit, {len(self.failed)} failed, {len(self.said)} matched; hit but passed: "
                f"{sorted(self.hit - self.failed)[:3]}; failed but not hit: {sorted(self.failed - self.hit)[:3]}; "
                f"predicate precision {self.precision:.2f}, recall {self.recall:.2f}")
