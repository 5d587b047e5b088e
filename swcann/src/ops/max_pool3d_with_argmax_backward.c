/* aclnnMaxPool3dWithArgmaxBackward -- spec ops/max_pool3d_with_argmax_backward.md.
 * Phase 1 = section B (ids B1..B31; spec row "1-8" -> B1..B8 in parameter order). */
#include "scatter_kernel.h"

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
    const void *hs[8] = {gradOutput, self, indices, kernelSize, stride, padding, dilation, gradInput};
    static const char *const nm[8] = {"gradOutput", "self", "indices", "kernelSize", "stride",
                                      "padding", "dilation", "gradInput"};
    static const int kinds[8] = {SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_INTARRAY,
                                 SWC_K_INTARRAY, SWC_K_INTARRAY, SWC_K_INTARRAY, SWC_K_TENSOR};
    if ((st = op_nonnull(&x, 8, hs, nm, NULL)) || (st = op_live(&x, 8, hs, kinds, nm))) return st;
    static const int fl[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT};
    int nl = (x.soc->arch == DAV_3510 || x.soc->arch == DAV_2201) ? 3 : 0; /* #9 */
    if (!dt_in(self->dtype, fl, nl))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B9", "self dtype %s not in supported list %s "
                       "for %s (%s, NpuArch DAV_%d)", swc_dtype_name(self->dtype),
                       dt_list(fl, nl, b1, sizeof b1), x.soc->family, x.soc->soc_name, x.soc->arch);
    static const int il[] = {ACL_INT32, ACL_INT64};
    int nil = is_regbase(&x) ? 2 : 1; /* #10 */
    if (!dt_in(indices->dtype, il, nil))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B10", "indices dtype %s not in %s for %s",
                       swc_dtype_name(indices->dtype), dt_list(il, nil, b1, sizeof b1), x.soc->family);
    if (gradOutput->dtype != self->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B11", "gradOutput dtype %s != self dtype %s",
                       swc_dtype_name(gradOutput->dtype), swc_dtype_name(self->dtype));
    if (gradInput->dtype != self->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B12", "gradInput dtype %s != self dtype %s",
                       swc_dtype_name(gradInput->dtype), swc_dtype_name(self->dtype));
    if (self->format != gradOutput->format || self->format != gradInput->format)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B13", "storage formats differ: self %s, "
                       "gradOutput %s, gradInput %s", fmt_name(self->format),
                       fmt_name(gradOutput->format), fmt_name(gradInput->format));
    const aclTensor *pf[4] = {self, gradInput, gradOutput, indices};
    static const char *const pfn[4] = {"self", "gradInput", "gradOutput", "indices"};
    for (int i = 0; i < 4; i++)
        if (is_private_format(pf[i]->format))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B14", "%s has private format %s", pfn[i],
                           fmt_name(pf[i]->format));
    const aclTensor *rt[4] = {gradOutput, gradInput, indices, self}; /* #15-18 order */
    static const char *const rtn[4] = {"gradOutput", "gradInput", "indices", "self"};
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "B%d", 15 + i);
        if (rk(rt[i]) != 4 && rk(rt[i]) != 5)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, id, "%s rank %lld not in {4, 5}", rtn[i],
                           (long long)rk(rt[i]));
    }
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
    if (!shape_eq(indices, gradOutput))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B29", "indices shape %s != gradOutput shape %s",
                       shp(indices, b1, sizeof b1), shp(gradOutput, b2, sizeof b2));
    if (!shape_eq(self, gradInput))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B30", "self shape %s != gradInput shape %s",
                       shp(self, b1, sizeof b1), shp(gradInput, b2, sizeof b2));
    /* B31: any of gradOutput/self/indices empty -> success, nothing written */
    int empty = numel(gradOutput) == 0 || numel(self) == 0 || numel(indices) == 0;
    int64_t N = r == 5 ? dm(self, 0) : 1, C = dm(self, r - 4);
    int overlap = 0;
    for (int i = 0; i < 3; i++) overlap |= (k[i] - 1) * d[i] + 1 > s[i];
    uint64_t acc = (!is_regbase(&x) && self->dtype != ACL_FLOAT && overlap)
                       ? (uint64_t)(N * C * D * H * W) : 0; /* spec C: N*C*D*H*W*4 bytes */
    struct aclOpExecutor *e;
    scatter_job *j = scatter_job_new(&x, empty, acc, gradOutput, indices, gradInput, self, &e);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    /* data always NCDHW (data_format hard-coded); 4-D = (C,D,H,W), chosen by self's rank */
    static const int a5[5] = {0, 1, 2, 3, 4}, a4[5] = {-1, 0, 1, 2, 3};
    memcpy(j->ax_gi, r == 5 ? a5 : a4, sizeof a5);
    memcpy(j->ax_go, j->ax_gi, sizeof a5);
    memcpy(j->ax_ix, j->ax_gi, sizeof a5);
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
    return finish(&x, e, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxPool3dWithArgmaxBackward(void *workspace,
    uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
