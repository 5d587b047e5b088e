/* aclnnMaxPool2dWithIndicesBackward -- spec ops/max_pool2d_with_indices_backward.md.
 * Phase 1 = section B table in code order (ids B1..B33), then the generic L0 label rules
 * L0.R1.inputs, L0.R1 inside #34 (shared/spec/l0_format_rules.md 2.2); phase 2 = section C. */
#include "aclnnop/aclnn_max_pool2d_with_indices_backward.h"
#include "pool_kernels.h"
#include <stdio.h>

#define API "aclnnMaxPool2dWithIndicesBackward"

/* #9: self dtypes on regbase (DAV_3510) and DAV_2201; DAV_1001 explicitly empty, any other
 * arch empty. #12: indices dtypes. */
static const int k_dt_regbase[] = {ACL_FLOAT16, ACL_FLOAT, ACL_BF16}, k_dt_2201[] = {ACL_FLOAT};
static const int k_idx_regbase[] = {ACL_INT32, ACL_INT64}, k_idx_other[] = {ACL_INT32, ACL_INT8};

/* The ReFormat steps of #34 (l0_format_rules.md 2.2), in code order.
 * L0.R1.inputs: the inputs are unsqueezed as self is and relabelled, to 5-D NCDHW on 910B/910_93
 * (MP2:831-844; P3U:26-53), a 3-D input to 4-D NCHW on 950 (MP2:763-774); an indices rank other
 * than self's (B32 does not enforce it) lands on the wrong rank.
 * L0.R1: the result, squeezed back, is relabelled with gradInput's label (MP2:856-859; on 950
 * MP2:785-787, for 3-D input only: at rank 4 the result already has self's label). */
static int l0_reformats(opctx *x, const aclTensor *self, const aclTensor *indices,
                        const aclTensor *gradInput)
{
    char who[128];
    int st, rs = (int)rk(self), ri = (int)rk(indices), ro = (int)rk(gradInput);
    if (!is_regbase(x) || rs == 3) {
        int to = is_regbase(x) ? 4 : 5;
        snprintf(who, sizeof who, "indices of rank %d, unsqueezed as the %d-D self is, has rank %d",
                 ri, rs, ri + to - rs);
        if ((st = chk_l0_reformat(x, "L0.R1.inputs", is_regbase(x)
                                  ? "ReFormat of the inputs to NCHW after the unsqueeze to 4-D"
                                  : "ReFormat of the inputs to NCDHW after the unsqueeze to 5-D",
                                  is_regbase(x) ? ACL_FORMAT_NCHW : ACL_FORMAT_NCDHW, ri + to - rs, who)))
            return st;
    }
    if (is_regbase(x) && ro != 3) return 0;
    snprintf(who, sizeof who, "gradInput labelled %s, view rank %d", swc_format_name(gradInput->format), ro);
    return chk_l0_reformat(x, "L0.R1", "ReFormat of the result, squeezed back, to gradInput's label",
                           gradInput->format, ro, who);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    const aclIntArray *kernelSize, const aclIntArray *stride, const aclIntArray *padding,
    const aclIntArray *dilation, bool ceilMode, aclTensor *gradInput, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    char b1[128], b2[128];
    opctx x;
    int st = max_pool_begin(&x, API, gradOutput, self, indices, kernelSize, stride, padding, dilation,
                            gradInput); /* B1..B8 */
    if (st) return st;
    /* fault l0_reformat_first: the ReFormat steps run right after the null checks, before the
     * L2 checks (and the empty return), instead of inside #34 */
    int r1_first = op_bug(&x, "l0_reformat_first", gradOutput);
    if (r1_first && (st = l0_reformats(&x, self, indices, gradInput))) return st;
    int arch = x.soc->arch, nl = arch == DAV_3510 ? 3 : arch == DAV_2201 ? 1 : 0;
    /* fault dtype_check_skipped: B9 is never evaluated */
    if ((!op_bug(&x, "dtype_check_skipped", gradOutput) &&
         (st = chk_dtype_in(&x, "B9", NT(self), arch == DAV_3510 ? k_dt_regbase : k_dt_2201, nl,
                            SOC_NOTE_ARCH))) ||
        (st = chk_same_dtype(&x, "B10", NT(gradOutput), NT(self))) ||
        (st = chk_same_dtype(&x, "B11", NT(gradInput), NT(self))))
        return st;
    const named_tensor fmts[3] = {NT(self), NT(gradOutput), NT(gradInput)};
    const named_tensor all[4] = {NT(self), NT(gradInput), NT(gradOutput), NT(indices)};
    if ((st = chk_dtype_in(&x, "B12", NT(indices), is_regbase(&x) ? k_idx_regbase : k_idx_other, 2,
                           SOC_NOTE_FAMILY)) ||
        (st = chk_same_format(&x, "B13", 3, fmts)) ||
        (st = chk_no_private_format(&x, "B14", 4, all, is_regbase(&x)
                                    ? "; only ND, NCHW or NHWC supported" : "; only ND, NCHW supported")))
        return st;
    static const char *const rank_ids[4] = {"B15", "B16", "B17", "B18"};
    for (int i = 0; i < 4; i++)
        if ((st = chk_rank_in(&x, rank_ids[i], all[i], 3, 4))) return st;
    uint64_t lk = alen(kernelSize), ls = alen(stride), lp = alen(padding), ld = alen(dilation);
    if (lk != 1 && lk != 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B19", "kernelSize length %llu not in {1, 2}",
                       (unsigned long long)lk);
    if (ls > 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B20", "stride length %llu not in {0, 1, 2}",
                       (unsigned long long)ls);
    if (lp != 1 && lp != 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B21", "padding length %llu not in {1, 2}",
                       (unsigned long long)lp);
    if (ld != 1 && ld != 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B22", "dilation length %llu not in {1, 2}",
                       (unsigned long long)ld);
    int64_t kH = kernelSize->v[0], kW = lk == 2 ? kernelSize->v[1] : kH;
    if (kH <= 0 || kW <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B23", "kernelSize (%lld, %lld) must be > 0",
                       (long long)kH, (long long)kW);
    int64_t sH = ls == 0 ? kH : stride->v[0], sW = ls == 0 ? kW : (ls == 2 ? stride->v[1] : sH);
    if (sH <= 0 || sW <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B24", "stride (%lld, %lld) must be > 0",
                       (long long)sH, (long long)sW);
    int64_t pH = padding->v[0], pW = lp == 2 ? padding->v[1] : pH;
    if (pH < 0 || pW < 0 || pH > kH / 2 || pW > kW / 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B25", "padding (%lld, %lld) must be >= 0 and "
                       "<= kernelSize/2 (%lld, %lld)", (long long)pH, (long long)pW,
                       (long long)(kH / 2), (long long)(kW / 2));
    int64_t dH = dilation->v[0], dW = ld == 2 ? dilation->v[1] : dH;
    if (is_regbase(&x) && (dH <= 0 || dW <= 0))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B26a", "dilation (%lld, %lld) must be > 0",
                       (long long)dH, (long long)dW);
    /* fault dilation_check_on_950: the A2/A3 restriction applied to every family */
    if ((!is_regbase(&x) || op_bug(&x, "dilation_check_on_950", gradOutput)) && (dH != 1 || dW != 1))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B26b", "dilation (%lld, %lld) must be (1, 1) "
                       "on NpuArch DAV_%d", (long long)dH, (long long)dW, x.soc->arch);
    if ((st = chk_same_shape(&x, "B27", NT(gradInput), NT(self)))) return st;
    /* #28: the dims are read per self's storage format (NHWC -> N,H,W,C / H,W,C) */
    int nhwc = self->format == ACL_FORMAT_NHWC, r = (int)rk(self);
    int ax[5];
    lt_axes(r, 2, nhwc, ax);
    int64_t N = ax[0] >= 0 ? dm(self, ax[0]) : 1, C = dm(self, ax[1]), H = dm(self, ax[3]),
            W = dm(self, ax[4]);
    if (C == 0 || H == 0 || W == 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B28", "self %s has C=%lld, H=%lld, W=%lld; "
                       "C, H and W must be non-zero", shp(self, b1, sizeof b1), (long long)C,
                       (long long)H, (long long)W);
    if (pH > ((kH - 1) * dH + 1) / 2 || pW > ((kW - 1) * dW + 1) / 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B29", "padding (%lld, %lld) exceeds half the "
                       "effective kernel", (long long)pH, (long long)pW);
    int64_t Ho = pool_out(H, kH, sH, pH, dH, ceilMode), Wo = pool_out(W, kW, sW, pW, dW, ceilMode);
    if (Ho <= 0 || Wo <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B30", "output size (Ho=%lld, Wo=%lld) must be "
                       "> 0 for input H=%lld, W=%lld", (long long)Ho, (long long)Wo, (long long)H,
                       (long long)W);
    int64_t exp[4];
    exp[ax[1]] = C;
    exp[ax[3]] = Ho;
    exp[ax[4]] = Wo;
    if (ax[0] >= 0) exp[ax[0]] = N;
    int ok = rk(gradOutput) == r;
    for (int i = 0; ok && i < r; i++) ok = dm(gradOutput, i) == exp[i];
    if (!ok) {
        char e[96];
        size_t o = (size_t)snprintf(e, sizeof e, "[");
        for (int i = 0; i < r; i++) o += (size_t)snprintf(e + o, sizeof e - o, i ? ",%lld" : "%lld", (long long)exp[i]);
        snprintf(e + o, sizeof e - o, "]");
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B31", "gradOutput shape %s != expected %s "
                       "(%s, ceilMode=%d)", shp(gradOutput, b1, sizeof b1), e,
                       nhwc ? "NHWC" : "NCHW", (int)ceilMode);
    }
    /* B32 (indices shape == gradOutput shape) is logged but NOT enforced upstream */
    int empty = numel(self) == 0; /* B33: only N == 0 gets here */
    /* #34: the generic L0 label rules (l0_format_rules.md 2.2), after the empty return;
     * fault l0_reformat_skipped: the ReFormat rank check is never applied */
    if (!empty && !r1_first && !op_bug(&x, "l0_reformat_skipped", gradOutput) &&
        (st = l0_reformats(&x, self, indices, gradInput)))
        return st;
    int64_t P = H * W;
    int overlap = kH > sH || kW > sW || dH != 1 || dW != 1;
    /* A2/A3 fp32 workspace for fp16/bf16 overlap (spec C "Workspace"; unreachable for fp32-only) */
    uint64_t acc = (!is_regbase(&x) && self->dtype != ACL_FLOAT && overlap) ? (uint64_t)(N * C * P) : 0;
    /* A2/A3 kernel is NCDHW-only: NHWC data is processed as if NCHW (spec G.4) */
    int kax[5];
    lt_axes(r, 2, is_regbase(&x) && !op_bug(&x, "nhwc_as_nchw", gradOutput) ? nhwc : 0, kax);
    scatter_job *j = scatter_job_new(&x, empty, acc, kax, gradOutput, indices, gradInput, self);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    j->mode = (j->h.deviations && !is_regbase(&x) && !overlap) ? ACC_LWW : ACC_FP32;
    /* 950: fp16/bf16 overlap summed in the kernel's fp32 computeType buffer (spec C) */
    j->fp32_acc = is_regbase(&x) && self->dtype != ACL_FLOAT && overlap;
    /* A2/A3 Normal tiling: atomic adds over overlapping windows unless GetDeterministic() (spec C) */
    j->atomic = !is_regbase(&x) && atomic_order(&x, &j->h, overlap, 1, gradOutput);
    j->pad[1] = pH;
    j->pad[2] = pW;
    /* kernel-level (tiling) checks whose status the L0 wrapper discards (spec B.2) */
    if (!empty) {
        if (has_neg_dim(self) || has_neg_dim(gradOutput) || has_neg_dim(indices))
            set_reject(&j->h, "negative dimension");
        else if (!shape_eq(indices, gradOutput))
            set_reject(&j->h, "grad shape %s != argmax shape %s", shp(gradOutput, b1, sizeof b1),
                       shp(indices, b2, sizeof b2));
        else if (!is_regbase(&x) && indices->dtype != ACL_INT32)
            set_reject(&j->h, "MaxPool3DGradWithArgmax has no %s argmax kernel",
                       swc_dtype_name(indices->dtype));
        else if (!is_regbase(&x) && P > INT32_MAX)
            set_reject(&j->h, "D*H*W %lld > INT32_MAX", (long long)P);
        else if (!is_regbase(&x) && nhwc) {
            /* NCHW reading of NHWC dims must still satisfy the kernel's shape check */
            int a2[5];
            lt_axes(r, 2, 0, a2);
            int64_t h2 = dm(self, a2[3]), w2 = dm(self, a2[4]);
            if (dm(gradOutput, a2[3]) != pool_out(h2, kH, sH, pH, 1, ceilMode) ||
                dm(gradOutput, a2[4]) != pool_out(w2, kW, sW, pW, 1, ceilMode) ||
                dm(gradOutput, a2[1]) != dm(self, a2[1]))
                set_reject(&j->h, "NHWC tensors are read as NCHW by the A2/A3 kernel and the grad "
                           "shape %s does not match the pooling formula for that reading",
                           shp(gradOutput, b1, sizeof b1));
        }
    }
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxPool2dWithIndicesBackward(void *workspace,
    uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
