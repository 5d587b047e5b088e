/* aclnnAdaptiveMaxPool2dBackward -- spec ops/adaptive_max_pool2d_backward.md.
 * Phase 1 = section B (B1 covers the four null checks; B2..B12; B16 = the
 * AdaptiveMaxPool3DGrad launcher/tiling failure surfacing as 561103), then the generic
 * L0 label rules L0.R1, L0.R2 (shared/spec/l0_format_rules.md 2.1). */
#include "aclnnop/aclnn_adaptive_max_pool2d_backward.h"
#include "pool_kernels.h"
#include <stdio.h>
#include <stdlib.h>

#define API "aclnnAdaptiveMaxPool2dBackward"

/* L0.R1 (A2D:184-187, P3U:71-82): the result, squeezed to 4-D, is relabelled with gradOutput's
 * label after the input step, i.e. the user's label for 4-D input; a 3-D input's gradOutput was
 * relabelled NCHW on the way in, which fits */
static int l0_result_reformat(opctx *x, const aclTensor *gradOutput)
{
    if (rk(gradOutput) != 4) return 0;
    char who[96];
    snprintf(who, sizeof who, "gradOutput labelled %s, view rank 4", swc_format_name(gradOutput->format));
    return chk_l0_reformat(x, "L0.R1", "ReFormat of the 4-D result to gradOutput's label",
                           gradOutput->format, 4, who);
}

/* L0.R2 (A2D:189-194): a 3-D result is relabelled NCL (A2D:103-117), and the final ViewCopy
 * refuses a gradInput labelled anything else (ND included) */
static int l0_copy_into_grad_input(opctx *x, const aclTensor *gradInput)
{
    if (rk(gradInput) != 3) return 0;
    return chk_l0_viewcopy(x, "L0.R2", ACLNN_ERR_INNER_NULLPTR, ACL_FORMAT_NCL, NT(gradInput));
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    opctx x;
    char b1[128], b2[128], b3[128], b4[128];
    int st = op_begin(&x, API);
    if (st) return st;
    const op_param params[4] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_TENSOR(indices),
                                PARAM_TENSOR(gradInput)};
    /* B1 (161001 since upstream fix defaa3f97; 161002 before) */
    if ((st = op_params(&x, 4, params, "B1"))) return st;
    /* faults l0_reformat_first / l0_viewcopy_first: the L0 label rule runs right after the null
     * checks, before the L2 checks (and the empty return), instead of after #16 */
    int r1_first = op_bug(&x, "l0_reformat_first", gradOutput);
    int r2_first = op_bug(&x, "l0_viewcopy_first", gradOutput);
    if ((r1_first && (st = l0_result_reformat(&x, gradOutput))) ||
        (r2_first && (st = l0_copy_into_grad_input(&x, gradInput))))
        return st;
    /* #4 keys on SocVersion (910B / 910_93) or regbase */
    static const int fl[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT}, il[] = {ACL_INT32, ACL_INT64};
    int nl = (is_regbase(&x) || x.soc->socv == SOCV_ASCEND910B || x.soc->socv == SOCV_ASCEND910_93) ? 3 : 0;
    if ((st = chk_same_dtype(&x, "B2", NT(self), NT(gradOutput))) ||
        (st = chk_same_dtype(&x, "B3", NT(self), NT(gradInput))) ||
        (st = chk_dtype_in(&x, "B4", NT(self), fl, nl, SOC_NOTE_SOC)) ||
        (st = chk_dtype_in(&x, "B5", NT(indices), il, 2, SOC_NOTE_NONE)))
        return st;
    if (rk(self) != rk(gradInput) || rk(self) != rk(gradOutput) || rk(self) != rk(indices))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B6", "ranks differ: self %lld, gradInput %lld, "
                       "gradOutput %lld, indices %lld", (long long)rk(self), (long long)rk(gradInput),
                       (long long)rk(gradOutput), (long long)rk(indices));
    for (int i = 0; i < (int)rk(self); i++)
        if (dm(gradOutput, i) != dm(indices, i) || dm(self, i) != dm(gradInput, i))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B7", "dim %d: gradOutput %s vs indices %s, "
                           "self %s vs gradInput %s", i, shp(gradOutput, b1, sizeof b1),
                           shp(indices, b2, sizeof b2), shp(self, b3, sizeof b3),
                           shp(gradInput, b4, sizeof b4));
    const named_tensor fmts[4] = {NT(self), NT(gradOutput), NT(gradInput), NT(indices)};
    const named_tensor t4[4] = {NT(self), NT(gradInput), NT(gradOutput), NT(indices)};
    if ((st = chk_same_format(&x, "B8", 4, fmts)) ||
        (st = chk_no_private_format(&x, "B9", 4, t4, " (Format only support NCHW or NCL)")))
        return st;
    for (int i = 0; i < 4; i++)
        if ((st = chk_rank_in(&x, "B10", t4[i], 3, 4))) return st;
    int r = (int)rk(self);
    int64_t H = dm(self, r - 2), W = dm(self, r - 1);
    if (!is_regbase(&x)) {
        int64_t hw;
        if (__builtin_mul_overflow(H, W, &hw) || hw > INT32_MAX)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B11", "self H*W (%lld*%lld) exceeds "
                           "2147483647", (long long)H, (long long)W);
    }
    /* B12: empty gradOutput/self/indices -> success, gradInput untouched */
    int empty = numel(gradOutput) == 0 || numel(self) == 0 || numel(indices) == 0;
    int64_t Ho = dm(gradOutput, r - 2), Wo = dm(gradOutput, r - 1);
    int divisible = !empty && Ho > 0 && Wo > 0 && H % Ho == 0 && W % Wo == 0;
    int via_maxpool3d = divisible && !is_regbase(&x); /* 950 always AdaptiveMaxPool3DGrad */
    int nc_ok = dm(gradOutput, 0) == dm(self, 0) && (r == 3 || dm(gradOutput, 1) == dm(self, 1));
    /* faults tiling_nc_unchecked / tiling_c_unchecked: the tiling compares neither N nor C, or N only */
    int tiling_sees = op_bug(&x, "tiling_nc_unchecked", gradOutput) ? 0
                      : op_bug(&x, "tiling_c_unchecked", gradOutput) ? dm(gradOutput, 0) != dm(self, 0) : !nc_ok;
    if (!empty && !via_maxpool3d && tiling_sees && !has_neg_dim(self) && !has_neg_dim(gradOutput))
        /* B16: AdaptiveMaxPool3DGrad tiling rejects grad N,C != x N,C; its L0 wrapper
         * returns nullptr -> 561103 (spec B #16; an inference upstream, see caveat) */
        return op_fail(&x, ACLNN_ERR_INNER_NULLPTR, "B16", "AdaptiveMaxPool3DGrad tiling failed: "
                       "grad N,C of %s != x N,C of %s", shp(gradOutput, b1, sizeof b1),
                       shp(self, b2, sizeof b2));
    /* the generic L0 label rules (l0_format_rules.md 2.1), after #16 and the empty return;
     * faults l0_reformat_skipped / l0_viewcopy_skipped: a rule is never applied */
    if (!empty) {
        if (!r1_first && !op_bug(&x, "l0_reformat_skipped", gradOutput) &&
            (st = l0_result_reformat(&x, gradOutput)))
            return st;
        if (!r2_first && !op_bug(&x, "l0_viewcopy_skipped", gradOutput) &&
            (st = l0_copy_into_grad_input(&x, gradInput)))
            return st;
    }
    int64_t N = r == 4 ? dm(self, 0) : 1, C = dm(self, r - 3);
    /* 910B/93 normal kernel: fp16/bf16 with overlap (non-divisible) uses an fp32 workspace */
    uint64_t acc = (!is_regbase(&x) && !divisible && self->dtype != ACL_FLOAT) ? (uint64_t)(N * C * H * W) : 0;
    int ax[5]; /* 3-D = (C,H,W) */
    lt_axes(r, 2, 0, ax);
    scatter_job *j = scatter_job_new(&x, empty, acc, ax, gradOutput, indices, gradInput, self);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    j->idx_cast_i32 = indices->dtype == ACL_INT64; /* aclnn casts INT64 indices to INT32 */
    if (j->idx_cast_i32 && op_bug(&x, "leak_cast_tensor", gradOutput)) {
        /* fault leak_cast_tensor: the INT32 view made for the cast is never destroyed */
        int64_t *strides = NULL;
        uint64_t n = 0;
        if (aclGetViewStrides(indices, &strides, &n) == ACLNN_SUCCESS) {
            (void)aclCreateTensor(indices->dims, indices->ndim, ACL_INT32, strides, indices->offset,
                                  (aclFormat)indices->format, indices->dims, indices->ndim,
                                  indices->data);
            free(strides);
        }
    }
    if (j->idx_cast_i32 && op_bug(&x, "leak_cast_buffer", gradOutput)) {
        /* fault leak_cast_buffer: the device buffer the INT32 copy of the indices is cast into is
         * allocated for every call and never freed (device memory, unlike leak_cast_tensor) */
        void *cast = NULL;
        (void)aclrtMalloc(&cast, (size_t)numel(indices) * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST);
    }
    /* Default = the documented semantics (an exact sum, one rounding). SWCANN_DEVIATIONS=1: the
     * 950 SIMT kernel's atomic adds in the tensor dtype (spec C, "Accumulation"), and the A2/A3
     * divisible path's plain-store scatter (k == s: last writer wins, unobservable with forward
     * indices, which never coincide there) */
    if (is_regbase(&x) && j->h.deviations) j->mode = ACC_DTYPE;
    else if (via_maxpool3d && j->h.deviations) j->mode = ACC_LWW;
    else j->mode = ACC_FP32;
    /* Non-divisible windows overlap and are summed by atomic adds (spec C "Determinism"): the 950
     * SIMT tiling reads GetDeterministic(); the A2/A3 AdaptiveMaxPool3DGrad tiling never does,
     * despite DOC:237 (SWCANN_DEVIATIONS=1; the default is the documented switch) */
    j->atomic = !via_maxpool3d && atomic_order(&x, &j->h, !divisible, is_regbase(&x) || !j->h.deviations, gradOutput);
    if (!empty) {
        if (has_neg_dim(self) || has_neg_dim(gradOutput))
            set_reject(&j->h, "negative dimension");
        else if (!nc_ok) /* divisible A2/A3 path: MaxPool3DGradWithArgmax ignores the status */
            set_reject(&j->h, "MaxPool3DGradWithArgmax tiling: grad N,C of %s != x N,C of %s",
                       shp(gradOutput, b1, sizeof b1), shp(self, b2, sizeof b2));
    }
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveMaxPool2dBackward(void *workspace,
    uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
