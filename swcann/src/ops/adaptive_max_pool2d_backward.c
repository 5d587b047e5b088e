/* aclnnAdaptiveMaxPool2dBackward -- spec ops/adaptive_max_pool2d_backward.md.
 * Phase 1 = section B (B1 covers the four null checks; B2..B12; B16 = the
 * AdaptiveMaxPool3DGrad launcher/tiling failure surfacing as 561103). */
#include "scatter_kernel.h"

#define API "aclnnAdaptiveMaxPool2dBackward"

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    opctx x;
    char b1[128], b2[128], b3[128], b4[128];
    int st = op_begin(&x, API);
    if (st) return st;
    const void *hs[4] = {gradOutput, self, indices, gradInput};
    static const char *const nm[4] = {"gradOutput", "self", "indices", "gradInput"};
    static const int kinds[4] = {SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_TENSOR};
    /* B1 (161001 since upstream fix defaa3f97; 161002 before) */
    if ((st = op_nonnull(&x, 4, hs, nm, "B1")) || (st = op_live(&x, 4, hs, kinds, nm))) return st;
    if (self->dtype != gradOutput->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B2", "self dtype %s != gradOutput dtype %s",
                       swc_dtype_name(self->dtype), swc_dtype_name(gradOutput->dtype));
    if (self->dtype != gradInput->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B3", "self dtype %s != gradInput dtype %s",
                       swc_dtype_name(self->dtype), swc_dtype_name(gradInput->dtype));
    /* #4 keys on SocVersion (910B / 910_93) or regbase */
    static const int fl[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT};
    int nl = (is_regbase(&x) || x.soc->socv == SOCV_ASCEND910B || x.soc->socv == SOCV_ASCEND910_93) ? 3 : 0;
    if (!dt_in(self->dtype, fl, nl))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B4", "self dtype %s not in supported list %s "
                       "for %s (%s)", swc_dtype_name(self->dtype), dt_list(fl, nl, b1, sizeof b1),
                       x.soc->family, x.soc->soc_name);
    if (indices->dtype != ACL_INT32 && indices->dtype != ACL_INT64)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B5", "indices dtype %s not in [DT_INT32, "
                       "DT_INT64]", swc_dtype_name(indices->dtype));
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
    if (self->format != gradOutput->format || self->format != gradInput->format ||
        self->format != indices->format)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B8", "storage formats differ: self %s, "
                       "gradOutput %s, gradInput %s, indices %s", fmt_name(self->format),
                       fmt_name(gradOutput->format), fmt_name(gradInput->format),
                       fmt_name(indices->format));
    const aclTensor *t4[4] = {self, gradInput, gradOutput, indices};
    static const char *const n4[4] = {"self", "gradInput", "gradOutput", "indices"};
    for (int i = 0; i < 4; i++)
        if (is_private_format(t4[i]->format))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B9", "%s has private format %s (Format only "
                           "support NCHW or NCL)", n4[i], fmt_name(t4[i]->format));
    for (int i = 0; i < 4; i++)
        if (rk(t4[i]) != 3 && rk(t4[i]) != 4)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B10", "%s rank %lld not in {3, 4}", n4[i],
                           (long long)rk(t4[i]));
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
    if (!empty && !via_maxpool3d && !nc_ok && !has_neg_dim(self) && !has_neg_dim(gradOutput))
        /* B16: AdaptiveMaxPool3DGrad tiling rejects grad N,C != x N,C; its L0 wrapper
         * returns nullptr -> 561103 (spec B #16; an inference upstream, see caveat) */
        return op_fail(&x, ACLNN_ERR_INNER_NULLPTR, "B16", "AdaptiveMaxPool3DGrad tiling failed: "
                       "grad N,C of %s != x N,C of %s", shp(gradOutput, b1, sizeof b1),
                       shp(self, b2, sizeof b2));
    int64_t N = r == 4 ? dm(self, 0) : 1, C = dm(self, r - 3);
    /* 910B/93 normal kernel: fp16/bf16 with overlap (non-divisible) uses an fp32 workspace */
    uint64_t acc = (!is_regbase(&x) && !divisible && self->dtype != ACL_FLOAT) ? (uint64_t)(N * C * H * W) : 0;
    struct aclOpExecutor *e;
    scatter_job *j = scatter_job_new(&x, empty, acc, gradOutput, indices, gradInput, self, &e);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    static const int a4[5] = {0, 1, -1, 2, 3}, a3[5] = {-1, 0, -1, 1, 2}; /* 3-D = (C,H,W) */
    memcpy(j->ax_gi, r == 4 ? a4 : a3, sizeof a4);
    memcpy(j->ax_go, j->ax_gi, sizeof a4);
    memcpy(j->ax_ix, j->ax_gi, sizeof a4);
    j->idx_cast_i32 = indices->dtype == ACL_INT64; /* aclnn casts INT64 indices to INT32 */
    if (is_regbase(&x)) j->mode = ACC_DTYPE; /* 950 SIMT: atomic adds in the tensor dtype (spec C) */
    else if (via_maxpool3d && j->h.deviations) j->mode = ACC_LWW; /* k == s: non-overlap scatter */
    else j->mode = ACC_FP32;
    if (!empty) {
        if (has_neg_dim(self) || has_neg_dim(gradOutput))
            set_reject(&j->h, "negative dimension");
        else if (!nc_ok) /* divisible A2/A3 path: MaxPool3DGradWithArgmax ignores the status */
            set_reject(&j->h, "MaxPool3DGradWithArgmax tiling: grad N,C of %s != x N,C of %s",
                       shp(gradOutput, b1, sizeof b1), shp(self, b2, sizeof b2));
    }
    return finish(&x, e, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveMaxPool2dBackward(void *workspace,
    uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
