/* aclnnMaxPool3dWithArgmaxBackward -- spec ops/max_pool3d_with_argmax_backward.md.
 * Phase 1 = section B (ids B1..B31; spec row "1-8" -> B1..B8 in parameter order). */
#include "aclnnop/aclnn_max_pool3d_with_argmax_backward.h"
#include "pool_kernels.h"

#define API "aclnnMaxPool3dWithArgmaxBackward"

/* expand a length-1/3 list (len 0 -> dflt, used for stride = kernel) */
static void expand3(const aclIntArray *a, const int64_t *dflt, int64_t o[3])
{
    for (int i = 0; i < 3; i++)
        o[i] = a->n == 0 ? dflt[i] : a->v[a->n == 1 ? 0 : i];
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxPool3dWithArgmaxBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    const aclIntArray *kernelSize, const aclIntArray *stride, const aclIntArray *padding,
    const aclIntArray *dilation, bool ceilMode, aclTensor *gradInput, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    opctx x;
    char b1[128], b2[128];
    int st = op_begin(&x, API);
    if (st) return st;
    const op_param params[8] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_TENSOR(indices),
                                PARAM_INTS(kernelSize), PARAM_INTS(stride), PARAM_INTS(padding),
                                PARAM_INTS(dilation), PARAM_TENSOR(gradInput)};
    if ((st = op_params(&x, 8, params, NULL))) return st;
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
    for (int i = 0; i < 4; i++)
        if ((st = chk_rank_in(&x, rank_ids[i], rt[i], 4, 5))) return st;
    if (alen(kernelSize) != 1 && alen(kernelSize) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B19", "kernelSize length %llu not in {1, 3}",
                       (unsigned long long)alen(kernelSize));
    int64_t k[3], s[3], p[3], d[3];
    expand3(kernelSize, NULL, k);
    if (k[0] <= 0 || k[1] <= 0 || k[2] <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B20", "kernelSize (%lld, %lld, %lld) must be > 0",
                       (long long)k[0], (long long)k[1], (long long)k[2]);
    if (alen(stride) != 0 && alen(stride) != 1 && alen(stride) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B21", "stride length %llu not in {0, 1, 3}",
                       (unsigned long long)alen(stride));
    expand3(stride, k, s);
    if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B22", "stride (%lld, %lld, %lld) must be > 0",
                       (long long)s[0], (long long)s[1], (long long)s[2]);
    if (alen(padding) != 1 && alen(padding) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B23", "padding length %llu not in {1, 3}",
                       (unsigned long long)alen(padding));
    expand3(padding, NULL, p);
    if (p[0] < 0 || p[1] < 0 || p[2] < 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B24", "padding (%lld, %lld, %lld) must be >= 0",
                       (long long)p[0], (long long)p[1], (long long)p[2]);
    for (int i = 0; i < 3; i++)
        if (p[i] > k[i] / 2)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B25", "padding[%d]=%lld > kernelSize[%d]/2=%lld",
                           i, (long long)p[i], i, (long long)(k[i] / 2));
    if (alen(dilation) != 1 && alen(dilation) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B26", "dilation length %llu not in {1, 3}",
                       (unsigned long long)alen(dilation));
    expand3(dilation, NULL, d);
    if (d[0] <= 0 || d[1] <= 0 || d[2] <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B27", "dilation (%lld, %lld, %lld) must be > 0",
                       (long long)d[0], (long long)d[1], (long long)d[2]);
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
