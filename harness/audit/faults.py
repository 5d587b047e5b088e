"""The named faults of the software CANN (`SWCANN_FAULTS`, swcann/README.md) that
harness.audit.faultscore scores, each with the suite subset that reaches it and the class the
score must find: FAULTS are the ones a suite run reports by itself (the C table's `k_names`),
PERF_FAULTS the performance faults (`k_perf_names`), which only the perf gate sees: the kernel
does more work, never a changed bit.

The expected classification of every fault is data: change a line here and the score says
whether the suite really reports the fault that way (tests/test_faultscore.py does, on purpose).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    name: str           # SWCANN_FAULTS name (swcann/src/core/faults.c)
    kind: str           # numeric | check | resource | run-level | perf
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
    # device memory: seen by the software CANN's counters and by aclrtGetMemInfo, as on hardware
    Fault("leak_cast_buffer", "resource", AMP, "adaptive and divisible and int64 and float32 and 2x3x8x12",
          "LEAK", None, "the device buffer of the INT32 cast of INT64 indices is never freed"),
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

# The perf faults, scored through the suite's own perf gate (harness/audit/perf_score.py): a clean
# --perf run of the subset, a perf baseline from it, the subset again with the fault on under
# --perf --gate; every case the gate calls a regression is PERF. Each subset holds cases the
# fault's condition hits (swcann/README.md, "Performance faults").
PERF_FAULTS: tuple[Fault, ...] = (
    Fault("perf_channel_last_recompute", "perf", MP2,
          "max_pool2d_with_indices and nhwc_layouts_950 and float32-int32 and uniform", "PERF", None,
          "channel-last views: every element's offsets derived from its flat index by division", family="ascend950"),
    # fp32 W=9: 36-byte rows, so every row ends in a partial 32-byte block
    Fault("perf_tail_scalar", "perf", MP2,
          "max_pool2d_with_indices and fp32_windows and 2x3x9x9 and contiguous-uniform and "
          "(ks2x2_s2x2_p0x0 or ks3x3_s2x2)",
          "PERF", None, "each row's last partial 32-byte block stored element by element, its line flushed"),
    # the half_950 group's fp16 cases ("half_950" and "float16" alone match other groups and bf16 too)
    Fault("perf_fp16_double", "perf", MP2, "max_pool2d_with_indices and half_950 and float16-int32 and NCHW and "
          "not bfloat16 and not cov and not subnormal and not overlap",
          "PERF", None, "fp16 loads and stores converted through double", family="ascend950"),
    # A2/A3 fp16 with overlapping windows (kernel > stride): the fp32 accumulator is in the workspace
    Fault("perf_workspace_rezero", "perf", AVG,
          "avg_pool2d and windows and float16-2x3x9x9 and (ks3x3_s2x2_p1x1_cm1_cip1 or ks4x4_s2x2)",
          "PERF", None, "every core clears the whole workspace on every launch"),
    Fault("perf_grad_input_extra_pass", "perf", MP3, "max_pool3d and windows_exact and float32-int32-2x2x6x7x8 and "
          "contiguous", "PERF", None, "gradInput cleared in a pass of its own before the store"),
    # W=12: not a multiple of 16
    Fault("perf_unaligned_width", "perf", AMP, "adaptive and divisible and float32-int32-2x3x8x12 and contiguous",
          "PERF", None, "every gradInput element's address derived by division (no stepped rows)"),
)
