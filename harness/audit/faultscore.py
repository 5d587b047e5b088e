"""Fault-detection score: does the suite catch a misbehaving library, and does it say what it was?

Every named fault of the software CANN (`SWCANN_FAULTS`, swcann/README.md) is one realistic
library bug. For each, the score runs a small subset of the suite (a `-k` selection that reaches
the buggy code path) with only that fault switched on, reads the records in `results.jsonl` and
classifies every case that did not pass:

    CRASH        the case worker died (record `signal`: SIGSEGV, SIGABRT)
    TIMEOUT      no result before the case deadline
    LEAK         the library reported live objects or allocations after the case
    STATUS       phase-1 status differs from the case file's; detail = the check (`[B9]`, or the
                 check the library's message names)
    WRONG_CHECK  the expected status, raised by another check; detail = the expected check
    RUNTIME      phase 2 or the stream sync failed; detail = the status code (507015)
    OUTSIDE_VIEW the library wrote into the gaps of a strided output
    INPUT_WRITTEN the library changed an input's device buffer (aclnn inputs are const); detail =
                 the input's name
    WORKSPACE_OVERRUN the library stored past the workspace phase 1 asked for (guard bytes changed)
    RELAUNCH     the second launch of a repeatable executor (a `relaunch` group, or --relaunch) failed
                 where its first passed
    NONDETERMINISTIC  two runs of a case with the same inputs gave different bits where
                 determinism is promised (--deterministic, or an op documented deterministic)
    BATCH_SLICE  a slice of a case's batch run alone gave other bits than the same slice of the
                 full batch (--determinism-level 3, harness/judge/batch_slice.py)
    LAUNCH       an empty input made phase 2 launch a kernel (it must return early); read from
                 the library's launch counter (`launches` in the record)
    NUMERIC      the comparison against the golden failed; evidence = the comparator's metrics
    SLOW         passed, but phase 2 + sync took >= SLOW_RATIO times as long as in the clean
                 baseline run (and at least SLOW_FLOOR_S): the one class a single suite run does
                 not flag by itself; records carry `launch_s`, the score compares runs

A fault is *detected* when at least one case of its subset is classified, and *correctly
classified* when every classified case has the class (and detail) declared in FAULTS. Before
that, one clean run per SoC family over all the subsets must pass completely, so a detection
is never a case that fails anyway.

    python -m harness.audit.faultscore [--only NAME,...] [--jobs N] [--work-dir DIR] [--json FILE]

prints the table and exits 0 only when every fault is detected and correctly classified.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..judge import reasons
from ..core.status import Status
from ..core.paths import REPO_ROOT

ROOT = REPO_ROOT
SLOW_RATIO = 5.0        # a 10x slowdown must show as at least 5x in wall time on a busy machine
SLOW_FLOOR_S = 0.02     # below this, launch times are noise, never a slowdown (small cases: ~10 us;
                        # a 2-core machine's scheduler once stretched one to 5.9 ms)
RUN_TIMEOUT_S = 300     # one pytest run; a hang of the harness itself must not hang the score

_CHECK_IN_MESSAGE = re.compile(r"check (B[\w.]+) failed")
_CHECK_IN_REASON = re.compile(r"\[(B[\w.]+)\]")
_LAUNCHED_ON_EMPTY = re.compile(r"^empty .*: phase 2 launched \d+ kernel")
_WROTE_INTO_INPUT = re.compile(re.escape(reasons.WROTE_INTO_INPUT) + r" ([\w, ]+?):")


@dataclass(frozen=True)
class Fault:
    name: str           # SWCANN_FAULTS name (swcann/src/core/faults.c)
    kind: str           # numeric | check | resource | run-level
    op: str             # trigger: the fault hits launches of this operator only
    select: str         # pytest -k: the cases that reach the buggy path
    expect: str         # class every failing case must have
    detail: str | None  # required detail of that class (check id, signal, status code); None: any
    what: str           # the bug, in one line
    family: str = "ascend910b"
    options: tuple[str, ...] = ()      # more pytest arguments (--tier all, --case-timeout S)

    @property
    def env_value(self) -> str:
        return f"{self.name}@op={self.op}"

    @property
    def key(self) -> str:
        """One scored entry: a fault shared by several ops' kernels is scored once per op."""
        return self.env_value


MP2, MP3, AMP, AVG, UNP = ("MaxPool2dWithIndicesBackward", "MaxPool3dWithArgmaxBackward",
                           "AdaptiveMaxPool2dBackward", "AvgPool2dBackward", "MaxUnpool3dBackward")
_HANG = ("--case-timeout", "4")     # the hung cases' deadline; the healthy ones take milliseconds

# The expected classification of every fault is data: change a line here and the score says
# whether the suite really reports the fault that way (tests/test_faultscore.py does, on purpose).
FAULTS: tuple[Fault, ...] = (
    # ---- numeric
    # one library bug in the shared scatter kernel, scored on each op whose kernel sums fp16/bf16 in fp32
    Fault("acc_storage_dtype", "numeric", AMP, "adaptive and overlapping_half and os12x11 and int32",
          "NUMERIC", None, "fp16/bf16 overlapping windows summed in the storage dtype, not the fp32 workspace"),
    Fault("acc_storage_dtype", "numeric", MP2, "max_pool2d and cov_accumulation_950",
          "NUMERIC", None, "fp16/bf16 coinciding argmaxes summed in the storage dtype, not the fp32 buffer",
          family="ascend950"),
    Fault("acc_storage_dtype", "numeric", MP3, "max_pool3d and cov_accumulation",
          "NUMERIC", None, "fp16/bf16 coinciding argmaxes summed in the storage dtype, not the fp32 workspace"),
    Fault("ceil_drop_last", "numeric", AVG, "avg_pool2d and windows and cm1 and float32 and contiguous-uniform",
          "NUMERIC", None, "ceil mode: the partial last window is dropped (off by one in the window count)"),
    Fault("cip_divisor", "numeric", AVG, "avg_pool2d and windows and p1x1 and cip1 and float32 and contiguous-uniform",
          "NUMERIC", None, "countIncludePad: the divisor leaves the padding out"),
    Fault("global_avg_ignores_pad", "numeric", AVG, "avg_pool2d and dev_global_padding",
          "NUMERIC", None, "global-average-pool path ignores padding"),
    Fault("grad_contiguous_strides", "numeric", AVG, "avg_pool2d and layouts and (strided or channels_last)",
          "NUMERIC", None, "non-contiguous gradOutput read with contiguous strides"),
    Fault("tail_unwritten", "numeric", MP2, "max_pool2d and fp32_windows and 2x3x9x9 and contiguous-uniform",
          "NUMERIC", None, "the last partial 32-byte block of gradInput is never stored"),
    Fault("scatter_drops_nan", "numeric", AMP, "adaptive and values and specials",
          "NUMERIC", None, "NaN gradients dropped by the scatter"),
    Fault("unpool_hw_swap", "numeric", UNP, "max_unpool3d and gather_all_dtypes and os5x7x6 and (float or int8)",
          "NUMERIC", None, "flat index split into (h, w) with the H and W extents swapped"),
    Fault("unpool_first_reader_only", "numeric", UNP, "max_unpool3d and repeated_indices and float32",
          "NUMERIC", None, "a repeated index reads zero after its first use (a scatter-style inverse of the gather)"),
    # a non-atomic scatter: with overlapping windows (k3 s1) one input is the argmax of several outputs
    Fault("scatter_overwrites", "numeric", MP2, "max_pool2d and fp32_windows and 2x3x9x9 and ks3x3_s1x1 and contiguous-uniform",
          "NUMERIC", None, "coinciding argmaxes stored, not summed (a plain store where an atomic add is due)"),
    Fault("scatter_overwrites", "numeric", AMP, "adaptive and overlapping and float32-int32-2x3x9x9",
          "NUMERIC", None, "coinciding argmaxes stored, not summed (a plain store where an atomic add is due)"),
    # seen because the harness fills every output buffer with NaN before phase 2 (inputs/preparation.py)
    Fault("grad_input_not_zeroed", "numeric", MP3, "max_pool3d and windows_exact and float32 and contiguous-uniform",
          "NUMERIC", None, "gradInput is not cleared before the kernel adds into it (old bytes + gradient)"),
    # only the single_bm high-precision max error sees it: truncation toward zero has no signed
    # bias on gradients of both signs, and its mean is under the EB threshold anyway
    Fault("half_store_truncates", "numeric", AVG, "avg_pool2d and windows and bfloat16-2x3x9x9",
          "NUMERIC", None, "fp16/bf16 results rounded toward zero (mantissa cut) instead of to nearest even"),
    # only a relative standard tells an fp16 subnormal from zero: the subnormal_half groups (MERE/MARE)
    Fault("half_subnormal_ftz", "numeric", AMP, "adaptive and subnormal_half",
          "NUMERIC", None, "fp16/bf16 subnormal results flushed to zero"),
    Fault("half_subnormal_ftz", "numeric", AVG, "avg_pool2d and subnormal_half",
          "NUMERIC", None, "fp16/bf16 subnormal results flushed to zero"),
    Fault("half_subnormal_ftz", "numeric", MP2, "max_pool2d and subnormal_half_950",
          "NUMERIC", None, "fp16/bf16 subnormal results flushed to zero", family="ascend950"),
    Fault("divisor_override_ignored", "numeric", AVG, "avg_pool2d and windows and float32-2x3x9x9 and (do4 or do-4)",
          "NUMERIC", None, "divisorOverride never replaces the window size in the divisor"),
    Fault("cip_ceil_full_kernel", "numeric", AVG, "avg_pool2d and windows and float32-3x8x10 and cm1_cip1",
          "NUMERIC", None, "countIncludePad: divisor kH*kW even where a ceil-mode window reaches past input + padding"),
    Fault("cip_far_pad_dropped", "numeric", AVG, "avg_pool2d and windows and float32-2x3x9x9 and p1x1_cm1_cip1",
          "NUMERIC", None, "countIncludePad: the divisor counts the top/left padding but not the bottom/right"),
    Fault("indices_padded", "numeric", MP2, "max_pool2d and fp32_windows and 2x3x9x9 and p1x1 and contiguous-uniform",
          "NUMERIC", None, "argmax decoded as a flat index of the padded plane (off by the padding)"),
    Fault("batch_plane_zero", "numeric", MP3, "max_pool3d and windows_exact and float32 and contiguous-uniform",
          "NUMERIC", None, "every batch reads batch 0's gradOutput and indices (batch stride dropped)"),
    Fault("batch_plane_zero", "numeric", AVG, "avg_pool2d and windows and float32-2x3x9x9-ks4x4",
          "NUMERIC", None, "every batch reads batch 0's gradOutput (batch stride dropped)"),
    # seen on any allocator: the harness fills the workspace with 0xFF (NaN) before phase 2
    Fault("acc_workspace_not_zeroed", "numeric", AMP, "adaptive and overlapping_half and os4x4 and int32",
          "NUMERIC", None, "the fp32 accumulator in the caller's workspace is used without being cleared"),
    # NHWC read as NCHW on the 950: the argmax indices then fall outside the (wrongly read) plane,
    # which the device reports as an AI Core exception at sync, not as wrong numbers
    Fault("nhwc_as_nchw", "numeric", MP2, "max_pool2d and nhwc_layouts_950 and float32 and uniform",
          "RUNTIME", "507015", "950 kernel reads NHWC tensors as NCHW", family="ascend950"),
    # ---- check-level
    Fault("dtype_check_skipped", "check", MP2, "max_pool2d and bad_params and B9",
          "STATUS", "B9", "phase-1 check B9 (self dtype per arch) skipped"),
    Fault("nullptr_as_invalid", "check", AMP, "adaptive and bad_params and B1-",
          "STATUS", "B1", "a null parameter returns 161002 where 161001 is due"),
    Fault("dilation_check_on_950", "check", MP2, "max_pool2d and dilation_950 and float32-int32-2x3x11x11 and contiguous-uniform",
          "STATUS", "B26b", "the A2/A3 dilation == 1 check applied to the 950 family", family="ascend950"),
    Fault("index_dtype_skipped", "check", UNP, "max_unpool3d and bad_params and B9",
          "STATUS", "B9", "phase-1 check B9 (indices INT64) skipped"),
    Fault("rank_ids_swapped", "check", MP3, "max_pool3d and bad_params and (B15 or B16 or B17 or B18)",
          "WRONG_CHECK", None, "rank checks B15..B18 report each other's ids"),
    # ---- resource-level
    Fault("leak_cast_tensor", "resource", AMP, "adaptive and divisible and int64 and float32 and 2x3x8x12",
          "LEAK", None, "the INT32 cast view of INT64 indices (an aclTensor) is never destroyed"),
    Fault("use_after_free", "resource", MP2, "max_pool2d and fp32_windows and 2x3x9x9 and ks3x3 and contiguous-uniform",
          "RUNTIME", "507015", "the kernel's scratch block is freed before the kernel reads it"),
    # read back after phase 2: every input's device buffer must hold the bytes uploaded
    Fault("input_as_scratch", "resource", AVG, "avg_pool2d and windows and cm1 and float32 and contiguous-uniform",
          "INPUT_WRITTEN", "gradOutput", "the kernel keeps scratch data in gradOutput's first 32 bytes"),
    Fault("input_as_scratch", "resource", UNP, "max_unpool3d and values and float32 and normal",
          "INPUT_WRITTEN", "gradOutput", "the kernel keeps scratch data in gradOutput's first 32 bytes"),
    # guard bytes after the workspace, read back after phase 2
    Fault("workspace_undersized", "resource", AMP, "adaptive and overlapping_half and os4x4 and int32",
          "WORKSPACE_OVERRUN", None, "phase 1 asks for 64 bytes less workspace than the kernel's accumulator uses"),
    Fault("write_past_end", "resource", AVG, "avg_pool2d and layouts and strided",
          "OUTSIDE_VIEW", None, "every row of gradInput is stored one element too long"),
    Fault("empty_launches", "resource", MP3, "max_pool3d and empty_batch",
          "LAUNCH", None, "an empty input still launches a kernel (the early return is missing)"),
    # ---- run-level
    Fault("phase2_segv", "run-level", MP3, "max_pool3d and windows_exact and float32 and contiguous-uniform",
          "CRASH", "SIGSEGV", "phase 2 touches an invalid address"),
    Fault("phase2_abort", "run-level", UNP, "max_unpool3d and values and float32 and normal",
          "CRASH", "SIGABRT", "phase 2 fails an internal assertion"),
    Fault("phase2_hang", "run-level", AMP, "adaptive and divisible and float32-int32-2x3x8x12-os4x6 and contiguous",
          "TIMEOUT", None, "phase 2 never returns", options=_HANG),
    Fault("sync_hang", "run-level", AVG, "avg_pool2d and windows and float32-2x3x9x9-ks4x4_s2x2_p1x1_cm0_cip1",
          "TIMEOUT", None, "the stream sync after the launch never returns", options=_HANG),
    Fault("sync_507015", "run-level", MP2, "max_pool2d and fp32_values and ks2x2 and contiguous-small_int",
          "RUNTIME", "507015", "AI Core exception: sync returns 507015, device stays in error state"),
    # the determinism groups run their cases in deterministic mode, twice, and compare the bits
    Fault("deterministic_ignored", "run-level", MP3, "max_pool3d and determinism",
          "NONDETERMINISTIC", None, "atomic adds over overlapping windows ignore deterministic mode"),
    # at determinism level 3 each batched case runs again on a slice of its batch, whose bits must repeat
    Fault("batch_order_varies", "run-level", MP3, "max_pool3d and determinism",
          "BATCH_SLICE", None, "batch n > 0 sums its overlapping windows in another order than batch 0",
          options=("--determinism-level", "3")),
    # the repeatable_executor groups launch one repeatable executor twice, outputs refilled between
    Fault("relaunch_not_zeroed", "run-level", MP3, "max_pool3d and repeatable_executor",
          "RELAUNCH", None, "gradInput is cleared on a repeatable executor's first launch only"),
    Fault("relaunch_no_kernel", "run-level", UNP, "max_unpool3d and repeatable_executor",
          "RELAUNCH", None, "a repeatable executor's later launches run no kernel and report success"),
    Fault("relaunch_stale_workspace", "run-level", AMP, "adaptive and repeatable_executor_half and os4x4",
          "RELAUNCH", None, "a repeatable executor's later launches use the first launch's workspace"),
    Fault("phase2_slow", "run-level", UNP, "max_unpool3d and atk_like_big and float32",
          "SLOW", None, "phase 2 runs its kernel 10 times", options=("--tier", "all")),
)


# ---------------------------------------------------------------- classification

@dataclass
class Finding:
    case_id: str
    cls: str                 # PASS, SKIP, or one of the classes in the module docstring (or FAIL: unknown)
    detail: str | None = None
    evidence: str = ""


def _check_of(record: dict) -> str | None:
    """The check a status mismatch is about: the case's own, else the one the message names."""
    if record.get("check") not in (None, "None", ""):
        return str(record["check"])
    message = (record.get("phase1") or {}).get("message")
    named = _CHECK_IN_REASON.search(record.get("reason") or "") or \
        _CHECK_IN_MESSAGE.search(message or record.get("reason") or "")
    return named.group(1) if named else None


def classify(record: dict, baseline: dict | None = None) -> Finding:
    """What one results.jsonl record says happened; `baseline`: the same case's clean record."""
    cid, reason = record["case_id"], record.get("reason") or ""
    status = Status(record["status"])
    if status in (Status.CRASH, Status.TIMEOUT, Status.MISSING):
        detail = record.get("signal") if status is Status.CRASH else None
        return Finding(cid, status.value, detail, reason)
    if status in (Status.SKIP,):
        return Finding(cid, "SKIP", None, reason)
    if status is Status.PASS:
        return _timing(record, baseline) or Finding(cid, "PASS")
    problems = "; ".join(record.get("problems") or [])
    if "live object" in problems or "live device allocation" in problems:
        return Finding(cid, "LEAK", None, problems)
    if reason.startswith("phase-1 status"):
        return Finding(cid, "STATUS", _check_of(record), reason[:300])
    if "but raised by" in reason:
        return Finding(cid, "WRONG_CHECK", _check_of(record), reason[:300])
    if _LAUNCHED_ON_EMPTY.search(reason):
        return Finding(cid, "LAUNCH", None, reason[:300])
    if reason.startswith(reasons.RELAUNCH):     # whatever that launch got wrong; the first one passed
        return Finding(cid, "RELAUNCH", None, reason[:300])
    code = record.get("sync_status") or record.get("phase2_status")
    if code:        # a runtime error of phase 2 or the sync, whatever words the reason uses
        return Finding(cid, "RUNTIME", str(code), reason[:300])
    if reasons.OUTSIDE_VIEW in reason:
        return Finding(cid, "OUTSIDE_VIEW", None, reason)
    if reason.startswith(reasons.BATCH_SLICE):
        return Finding(cid, "BATCH_SLICE", None, reason[:300])
    if reasons.NONDETERMINISTIC in reason:
        return Finding(cid, "NONDETERMINISTIC", None, reason[:300])
    if reason.startswith(reasons.WORKSPACE_OVERRUN):
        return Finding(cid, "WORKSPACE_OVERRUN", None, reason[:300])
    written = _WROTE_INTO_INPUT.search(reason)
    if written:
        return Finding(cid, "INPUT_WRITTEN", written.group(1), reason[:300])
    verdict = record.get("verdict") or {}
    if verdict and not verdict.get("passed", True):
        return Finding(cid, "NUMERIC", verdict.get("standard"), verdict.get("summary") or reason)
    return Finding(cid, "FAIL", None, reason[:300])


def _timing(record: dict, baseline: dict | None) -> Finding | None:
    now, then = record.get("launch_s"), (baseline or {}).get("launch_s")
    if not now or not then or now < SLOW_FLOOR_S or now < SLOW_RATIO * then:
        return None
    return Finding(record["case_id"], "SLOW", None,
                   f"phase 2 + sync {now * 1e3:.1f} ms, {now / then:.1f}x the clean run's {then * 1e3:.1f} ms")


@dataclass
class Score:
    fault: Fault
    findings: list[Finding] = field(default_factory=list)   # one per case of the subset
    error: str = ""                                          # the run itself failed

    @property
    def flagged(self) -> list[Finding]:
        return [f for f in self.findings if f.cls not in ("PASS", "SKIP")]

    @property
    def detected(self) -> bool:
        return bool(self.flagged)

    def _matches(self, f: Finding) -> bool:
        return f.cls == self.fault.expect and (self.fault.detail is None or f.detail == self.fault.detail)

    @property
    def correct(self) -> bool:
        return not self.error and self.detected and all(self._matches(f) for f in self.flagged)

    @property
    def wrong(self) -> list[Finding]:
        return [f for f in self.flagged if not self._matches(f)]


# ---------------------------------------------------------------- running the subsets

def _pytest(family: str, select: str, report_dir: Path, faults: str | None, options=()) -> tuple[int, str]:
    # only this fault, documented semantics, the family asked for
    env = {k: v for k, v in os.environ.items() if k not in ("SWCANN_FAULTS", "SWCANN_DEVIATIONS", "SWCANN_SOC")}
    if faults:
        env["SWCANN_FAULTS"] = faults
    cmd = [sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "-n", "0", "-q",
           "-p", "no:cacheprovider", "--soc", family, "-k", select, "--report-dir", str(report_dir), *options]
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, f"pytest did not finish within {RUN_TIMEOUT_S} s"
    return done.returncode, (done.stdout + done.stderr)[-3000:]


def _records(report_dir: Path) -> list[dict]:
    path = report_dir / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _baseline(faults: list[Fault], work: Path, jobs: int) -> tuple[dict[str, dict], list[str]]:
    """One clean run per family over the union of the subsets: every case must pass."""
    by_family: dict[str, list[Fault]] = {}
    for f in faults:
        by_family.setdefault(f.family, []).append(f)

    def run(family):
        group = by_family[family]
        select = " or ".join(f"({f.select})" for f in group)
        options = ("--tier", "all") if any("--tier" in f.options for f in group) else ()
        d = work / f"clean-{family}"
        code, out = _pytest(family, select, d, None, options)
        return family, code, out, _records(d)

    clean, problems = {}, []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for family, code, out, records in pool.map(run, by_family):
            if not records:
                problems.append(f"clean run on {family} produced no records (exit {code}): {out[-500:]}")
            for r in records:
                clean[r["case_id"]] = r
                if (r.get("backend") or {}).get("software_cann") != "True":
                    problems.append(f"clean run on {family}: {r['case_id']} did not run on the software CANN "
                                    f"(SWCANN_FAULTS needs it): {(r.get('backend') or {}).get('library')}")
                    break
                if r["status"] not in (Status.PASS.value, Status.SKIP.value):
                    problems.append(f"clean run on {family}: {r['case_id']} is {r['status']}: {r.get('reason', '')[:200]}")
    return clean, problems


def _score_one(fault: Fault, work: Path, clean: dict[str, dict]) -> Score:
    d = work / fault.key.replace("@op=", "-")
    code, out = _pytest(fault.family, fault.select, d, fault.env_value, fault.options)
    records = _records(d)
    score = Score(fault, [classify(r, clean.get(r["case_id"])) for r in records])
    if not records:
        score.error = f"no records (pytest exit {code}): {out[-400:]}"
    return score


def run_score(faults=FAULTS, work_dir: Path | None = None, jobs: int = 2) -> tuple[list[Score], list[str]]:
    """Score `faults`; returns the scores and the problems of the clean baseline runs."""
    work = Path(work_dir or ROOT / "reports" / "faultscore")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    faults = list(faults)
    clean, problems = _baseline(faults, work, jobs)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        scores = list(pool.map(lambda f: _score_one(f, work, clean), faults))
    return scores, problems


# ---------------------------------------------------------------- the table

def _short(case_id: str) -> str:
    return case_id if len(case_id) <= 70 else case_id[:67] + "..."


def _expected(f: Fault) -> str:
    return f.expect + (f"({f.detail})" if f.detail else "")


def table(scores: list[Score]) -> list[str]:
    lines = ["| fault | kind | op | detected | by cases | classification | expected | ok |",
             "|---|---|---|---|---|---|---|---|"]
    for s in scores:
        f = s.fault
        flagged = s.flagged
        seen = sorted({c.cls + (f"({c.detail})" if c.detail else "") for c in flagged})
        by = f"{len(flagged)}/{len(s.findings)}: " + ", ".join(_short(c.case_id) for c in flagged[:2]) if flagged else \
            f"0/{len(s.findings)}"
        evidence = (flagged[0].evidence[:110] if flagged else s.error[:110]).replace("|", "/").replace("\n", " ")
        lines.append(f"| {f.name} | {f.kind} | {f.op.replace('Backward', '')} | {'yes' if s.detected else 'NO'} "
                     f"| {by} | {', '.join(seen) or '-'}: {evidence} | {_expected(f)} | "
                     f"{'ok' if s.correct else 'MISCLASSIFIED' if s.detected else 'UNDETECTED'} |")
    return lines


def summary(scores: list[Score], problems: list[str]) -> tuple[bool, list[str]]:
    good = sum(s.correct for s in scores)
    lines = [f"{good}/{len(scores)} faults detected and correctly classified "
             f"({sum(s.detected for s in scores)} detected)"]
    for s in scores:
        for w in s.wrong[:3]:
            lines.append(f"MISCLASSIFIED {s.fault.name}: {w.case_id} is {w.cls}"
                         + (f"({w.detail})" if w.detail else "") + f", expected {_expected(s.fault)}: {w.evidence[:200]}")
        if not s.detected:
            lines.append(f"UNDETECTED {s.fault.name}: {len(s.findings)} case(s) passed" + (f"; {s.error}" if s.error else ""))
    lines += [f"BASELINE {p}" for p in problems]
    return good == len(scores) and not problems, lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.audit.faultscore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated fault names (default: all)")
    ap.add_argument("--jobs", type=int, default=2, help="pytest runs at a time (default 2)")
    ap.add_argument("--work-dir", type=Path, help="report directories (default reports/faultscore; emptied first)")
    ap.add_argument("--json", type=Path, help="also write the scores as JSON here")
    ap.add_argument("--list", action="store_true", help="print the faults and their expected classification")
    a = ap.parse_args(argv)
    faults = list(FAULTS)
    if a.only:
        names = [n.strip() for n in a.only.split(",") if n.strip()]
        known = {f.name for f in FAULTS}
        unknown = [n for n in names if n not in known]
        if unknown:
            print(f"ERROR: --only: unknown fault(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})",
                  file=sys.stderr)
            return 2
        faults = [f for f in FAULTS if f.name in names]
    if a.list:
        for f in faults:
            print(f"{f.name:26} {f.kind:9} {f.op:30} {_expected(f):22} {f.what}")
        return 0
    started = time.time()
    scores, problems = run_score(faults, a.work_dir, max(1, a.jobs))
    ok, lines = summary(scores, problems)
    print("\n".join(table(scores)))
    print("\n".join(lines))
    print(f"({time.time() - started:.0f} s, SIMULATED: software CANN with SWCANN_FAULTS)")
    if a.json:
        a.json.write_text(json.dumps([{"fault": s.fault.name, "kind": s.fault.kind, "op": s.fault.op,
                                       "expected": _expected(s.fault), "detected": s.detected, "correct": s.correct,
                                       "error": s.error,
                                       "findings": [f.__dict__ for f in s.findings]} for s in scores], indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
