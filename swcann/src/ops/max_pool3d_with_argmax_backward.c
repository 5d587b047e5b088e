/* aclnnMaxPool3dWithArgmaxBackward -- spec ops/max_pool3d_with_argmax_backward.md.
 * Phase 1 = section B (ids B1..B31; spec row "1-8" -> B1..B8 in parameter order), then the
 * generic L0 label rules L0.R1.inputs, L0.R1 (shared/spec/l0_format_rules.md 2.3). */
#include "aclnnop/aclnn_max_pool3d_with_argmax_backward.h"
#include "pool_kernels.h"
#include <stdio.h>

#define API "aclnnMaxPool3dWithArgmaxBackward"

/* One attribute list (B19..B27): its length must be 1 or 3, or 0 where empty_as is given
 * (stride: empty = kernelSize); then each expanded value must be >= min. */
static int attr3(opctx *x, const aclIntArray *a, const char *name, const char *len_id,
                 const int64_t *empty_as, const char *val_id, int64_t min, int64_t o[3])
{
    uint64_t n = alen(a);
    if (n != 1 && n != 3 && !(n == 0 && empty_as))
        return op_fail(x, ACLNN_ERR_PARAM_INVALID, len_id, "%s length %llu not in {%s1, 3}", name,
                       (unsigned long long)n, empty_as ? "0, " : "");
    for (int i = 0; i < 3; i++) o[i] = n == 0 ? empty_as[i] : a->v[n == 1 ? 0 : i];
    if (o[0] < min || o[1] < min || o[2] < min)
        return op_fail(x, ACLNN_ERR_PARAM_INVALID, val_id, "%s (%lld, %lld, %lld) must be %s", name,
                       (long long)o[0], (long long)o[1], (long long)o[2], min ? "> 0" : ">= 0");
    return 0;
}

/* The ReFormat steps after #31 (l0_format_rules.md 2.3), in code order.
 * L0.R1.inputs (MP3:294-306; P3U:100-112): a 4-D self's inputs are unsqueezed to 5-D, a 5-D
 * self's are not, then every input is relabelled NCDHW: a gradOutput or indices of another rank
 * than self's lands on the wrong rank (gradOutput first, then indices).
 * L0.R1 (MP3:313-316; P3U:114-126): the result, squeezed to 4-D for a 4-D self, is relabelled
 * with gradInput's label. */
static int l0_reformats(opctx *x, const aclTensor *gradOutput, const aclTensor *self,
                        const aclTensor *indices, const aclTensor *gradInput)
{
    char who[128];
    int st, rs = (int)rk(self), ro = (int)rk(gradInput);
    const named_tensor in[2] = {NT(gradOutput), NT(indices)};
    for (int i = 0; i < 2; i++) {
        int r = (int)rk(in[i].t);
        snprintf(who, sizeof who, "%s of rank %d, unsqueezed as the %d-D self is, has rank %d",
                 in[i].name, r, rs, r + 5 - rs);
        if ((st = chk_l0_reformat(x, "L0.R1.inputs", "ReFormat of the inputs to NCDHW",
                                  ACL_FORMAT_NCDHW, r + 5 - rs, who)))
            return st;
    }
    snprintf(who, sizeof who, "gradInput labelled %s, view rank %d", swc_format_name(gradInput->format), ro);
    return chk_l0_reformat(x, "L0.R1", "ReFormat of the result to gradInput's label", gradInput->format,
                           ro, who);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxPool3dWithArgmaxBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    const aclIntArray *kernelSize, const aclIntArray *stride, const aclIntArray *padding,
    const aclIntArray *dilation, bool ceilMode, aclTensor *gradInput, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    opctx x;
    int st = max_pool_begin(&x, API, gradOutput, self, indices, kernelSize, stride, padding, dilation,
                            gradInput);
    if (st) return st;
    /* fault l0_reformat_first: the ReFormat steps run right after the null checks, before the
     * L2 checks (and the empty return), instead of after #31 */
    int r1_first = op_bug(&x, "l0_reformat_first", gradOutput);
    if (r1_first && (st = l0_reformats(&x, gradOutput, self, indices, gradInput))) return st;
    static const int fl[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT}, il[] = {ACL_INT32, ACL_INT64};
    int nl = (x.soc->arch == DAV_3510 || x.soc->arch == DAV_2201) ? 3 : 0; /* #9 */
    int nil = is_regbase(&x) ? 2 : 1;                                      /* #10 */
    const named_tensor fmts[3] = {NT(self), NT(gradOutput), NT(gradInput)};
    const named_tensor pf[4] = {NT(self), NT(gradInput), NT(gradOutput), NT(indices)};
    if ((st = chk_dtype_in(&x, "B9", NT(self), fl, nl, SOC_NOTE_ARCH)) ||
        (st = chk_dtype_in(&x, "B10", NT(indices), il, nil, SOC_NOTE_FAMILY)) ||
        (st = chk_same_dtype(&x, "B11", NT(gradOutput), NT(self))) ||
        (st = chk_same_dtype(&x, "B12", NT(gradInput), NT(self))) ||
        (st = chk_same_format(&x, "B13", 3, fmts)) ||
        (st = chk_no_private_format(&x, "B14", 4, pf, "")))
        return st;
    const named_tensor rt[4] = {NT(gradOutput), NT(gradInput), NT(indices), NT(self)}; /* #15-18 */
    static const char *const rank_ids[4] = {"B15", "B16", "B17", "B18"};
    static const char *const reversed[4] = {"B18", "B17", "B16", "B15"}; /* fault rank_ids_swapped */
    const char *const *ids = op_bug(&x, "rank_ids_swapped", gradOutput) ? reversed : rank_ids;
    for (int i = 0; i < 4; i++)
        if ((st = chk_rank_in(&x, ids[i], rt[i], 4, 5))) return st;
    int64_t k[3], s[3], p[3], d[3];
    if ((st = attr3(&x, kernelSize, "kernelSize", "B19", NULL, "B20", 1, k)) ||
        (st = attr3(&x, stride, "stride", "B21", k, "B22", 1, s)) ||
        (st = attr3(&x, padding, "padding", "B23", NULL, "B24", 0, p)))
        return st;
    for (int i = 0; i < 3; i++)
        if (p[i] > k[i] / 2)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B25", "padding[%d]=%lld > kernelSize[%d]/2=%lld",
                           i, (long long)p[i], i, (long long)(k[i] / 2));
    if ((st = attr3(&x, dilation, "dilation", "B26", NULL, "B27", 1, d))) return st;
    int r = (int)rk(self);
    int64_t D = dm(self, r - 3), H = dm(self, r - 2), W = dm(self, r - 1);
    if (!is_regbase(&x)) { /* #28 (log text says 2^32-1, constant is INT32_MAX) */
        int64_t dhw;
        if (__builtin_mul_overflow(D, H, &dhw) || __builtin_mul_overflow(dhw, W, &dhw) || dhw > INT32_MAX)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B28", "self D*H*W (%lld*%lld*%lld) exceeds "
                           "2147483647", (long long)D, (long long)H, (long long)W);
    }
    if ((st = chk_same_shape(&x, "B29", NT(indices), NT(gradOutput))) ||
        (st = chk_same_shape(&x, "B30", NT(self), NT(gradInput))))
        return st;
    /* B31: any of gradOutput/self/indices empty -> success, nothing written */
    int empty = numel(gradOutput) == 0 || numel(self) == 0 || numel(indices) == 0;
    /* the generic L0 label rules (l0_format_rules.md 2.3), after the empty return; fault
     * l0_reformat_skipped: the ReFormat rank check is never applied */
    if (!empty && !r1_first && !op_bug(&x, "l0_reformat_skipped", gradOutput) &&
        (st = l0_reformats(&x, gradOutput, self, indices, gradInput)))
        return st;
    int64_t N = r == 5 ? dm(self, 0) : 1, C = dm(self, r - 4);
    int overlap = 0;
    for (int i = 0; i < 3; i++) overlap |= (k[i] - 1) * d[i] + 1 > s[i];
    uint64_t acc = (!is_regbase(&x) && self->dtype != ACL_FLOAT && overlap)
                       ? (uint64_t)(N * C * D * H * W) : 0; /* spec C: N*C*D*H*W*4 bytes */
    int ax[5]; /* data always NCDHW (data_format hard-coded); 4-D = (C,D,H,W) */
    lt_axes(r, 3, 0, ax);
    scatter_job *j = scatter_job_new(&x, empty, acc, ax, gradOutput, indices, gradInput, self);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    j->mode = (j->h.deviations && !is_regbase(&x) && !overlap) ? ACC_LWW : ACC_FP32;
    /* 950: fp16/bf16 overlap summed in the kernel's fp32 computeType buffer (spec C) */
    j->fp32_acc = is_regbase(&x) && self->dtype != ACL_FLOAT && overlap;
    /* A2/A3 Normal tiling: atomic adds over overlapping windows unless GetDeterministic() (spec C) */
    j->atomic = !is_regbase(&x) && atomic_order(&x, &j->h, overlap, 1, gradOutput);
    memcpy(j->pad, p, sizeof j->pad);
    char b1[128], b2[128];
    if (!empty) { /* kernel tiling checks, status discarded (spec B.2) */
        if (has_neg_dim(self) || has_neg_dim(gradOutput))
            set_reject(&j->h, "negative dimension");
        else if (rk(gradOutput) != r)
            set_reject(&j->h, "x rank %d and grad rank %lld differ after the view transform", r,
                       (long long)rk(gradOutput));
        else if (dm(gradOutput, 0) != dm(self, 0) || (r == 5 && dm(gradOutput, 1) != C))
            set_reject(&j->h, "grad N/C %s differ from x %s", shp(gradOutput, b1, sizeof b1),
                       shp(self, b2, sizeof b2));
        else {
            const int64_t in[3] = {D, H, W};
            for (int i = 0; i < 3; i++) {
                int64_t o = pool_out(in[i], k[i], s[i], p[i], d[i], ceilMode);
                if (2 * p[i] > (k[i] - 1) * d[i] + 1 || o <= 0 || dm(gradOutput, r - 3 + i) != o) {
                    set_reject(&j->h, "grad spatial dim %d is %lld, pooling formula gives %lld "
                               "(ceilMode=%d)", i, (long long)dm(gradOutput, r - 3 + i),
                               (long long)o, (int)ceilMode);
                    break;
                }
            }
        }
    }
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxPool3dWithArgmaxBackward(void *workspace,
    uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
