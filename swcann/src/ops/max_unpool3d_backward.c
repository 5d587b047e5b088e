/* aclnnMaxUnpool3dBackward -- spec ops/max_unpool3d_backward.md.
 * Phase 1 = section B (ids B0..B24, no SoC-dependent checks).  Phase 2 is a pure
 * gather, bit-exact for every dtype: out[n,c,p] = gradOutput[n,c,indices[n,c,p]]. */
#include <stdlib.h>
#include "common.h"

#define API "aclnnMaxUnpool3dBackward"

typedef struct { job_head h; int ax[5]; } unpool_job;

static int unpool_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    (void)ws;
    unpool_job *j = (unpool_job *)h;
    lt5 go = lt_make(&h->t[0], j->ax), ix = lt_make(&h->t[1], j->ax), out = lt_make(&h->t[2], j->ax);
    int64_t N = out.n[0], C = out.n[1], OV = go.n[2] * go.n[3] * go.n[4];
    /* pass 1: out-of-range indices would fault the real gather -> AI Core exception */
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t d = 0; d < out.n[2]; d++)
                for (int64_t y = 0; y < out.n[3]; y++)
                    for (int64_t x = 0; x < out.n[4]; x++) {
                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                        if (v < 0 || v >= OV) {
                            raise_exc(stream, e->api, "tensor indices value %lld at [n=%lld, c=%lld, "
                                      "d=%lld, h=%lld, w=%lld] is outside the gradOutput volume "
                                      "[0, %lld): out-of-bounds gather", (long long)v, (long long)n,
                                      (long long)c, (long long)d, (long long)y, (long long)x,
                                      (long long)OV);
                            return ACLNN_SUCCESS;
                        }
                    }
    size_t es = out.es;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t d = 0; d < out.n[2]; d++)
                for (int64_t y = 0; y < out.n[3]; y++)
                    for (int64_t x = 0; x < out.n[4]; x++) {
                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                        int64_t od = v / (go.n[3] * go.n[4]), rem = v % (go.n[3] * go.n[4]);
                        const char *src = go.data + lt_at(&go, n, c, od, rem / go.n[4], rem % go.n[4]) * (int64_t)es;
                        memcpy(out.data + lt_at(&out, n, c, d, y, x) * (int64_t)es, src, es);
                    }
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxUnpool3dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    const aclIntArray *outputSize, const aclIntArray *stride, const aclIntArray *padding,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    opctx x;
    char b1[128], b2[128];
    int st = op_begin(&x, API);
    if (st) return st;
    if (!workspaceSize || !executor) /* B0 runs before everything else */
        return op_fail(&x, ACLNN_ERR_PARAM_NULLPTR, "B0", "%s is nullptr",
                       !workspaceSize ? "workspaceSize" : "executor");
    const void *hs[7] = {gradOutput, self, indices, outputSize, stride, padding, out};
    static const char *const nm[7] = {"gradOutput", "self", "indices", "outputSize", "stride",
                                      "padding", "out"};
    static const int kinds[7] = {SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_INTARRAY,
                                 SWC_K_INTARRAY, SWC_K_INTARRAY, SWC_K_TENSOR};
    if ((st = op_nonnull(&x, 7, hs, nm, "B2")) || (st = op_live(&x, 7, hs, kinds, nm))) return st;
    if (!is_contiguous(out))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B3", "out must be contiguous (shape %s)",
                       shp(out, b1, sizeof b1));
    static const int dl[] = {ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_UINT8, ACL_INT16, ACL_INT32,
                             ACL_INT64, ACL_DOUBLE};
    const aclTensor *t3[3] = {gradOutput, self, out};
    static const char *const n3[3] = {"gradOutput", "self", "out"};
    for (int i = 0; i < 3; i++)
        if (!dt_in(t3[i]->dtype, dl, 8)) {
            char id[8];
            snprintf(id, sizeof id, "B%d", 4 + i);
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, id, "%s dtype %s not in %s", n3[i],
                           swc_dtype_name(t3[i]->dtype), dt_list(dl, 8, b1, sizeof b1));
        }
    if (self->dtype != gradOutput->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B7", "self dtype %s != gradOutput dtype %s",
                       swc_dtype_name(self->dtype), swc_dtype_name(gradOutput->dtype));
    if (out->dtype != gradOutput->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B8", "out dtype %s != gradOutput dtype %s",
                       swc_dtype_name(out->dtype), swc_dtype_name(gradOutput->dtype));
    if (indices->dtype != ACL_INT64)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B9", "indices dtype %s must be DT_INT64",
                       swc_dtype_name(indices->dtype));
    int r = (int)rk(self);
    if (r != 4 && r != 5)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B10", "self rank %d not in {4, 5}", r);
    if (rk(indices) != r)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B11", "indices rank %lld != self rank %d",
                       (long long)rk(indices), r);
    if (rk(out) != r)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B12", "out rank %lld != self rank %d",
                       (long long)rk(out), r);
    if (!shape_eq(self, indices))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B13", "self shape %s != indices shape %s",
                       shp(self, b1, sizeof b1), shp(indices, b2, sizeof b2));
    if (!shape_eq(self, out))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B14", "self shape %s != out shape %s",
                       shp(self, b1, sizeof b1), shp(out, b2, sizeof b2));
    for (int i = 1; i < r; i++)
        if (dm(self, i) <= 0)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B15", "self dim %d is %lld; every dim but "
                           "dim 0 must be > 0", i, (long long)dm(self, i));
    if (alen(outputSize) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B16", "outputSize size %llu != 3",
                       (unsigned long long)alen(outputSize));
    if (alen(stride) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B17", "stride size %llu != 3",
                       (unsigned long long)alen(stride));
    if (alen(padding) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B18", "padding size %llu != 3",
                       (unsigned long long)alen(padding));
    for (int i = 0; i < 3; i++) { /* stride[i] then outputSize[i], interleaved */
        if (stride->v[i] <= 0)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B19", "stride[%d]=%lld must be > 0", i,
                           (long long)stride->v[i]);
        if (outputSize->v[i] <= 0)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B19", "outputSize[%d]=%lld must be > 0", i,
                           (long long)outputSize->v[i]);
    }
    const int64_t *os = outputSize->v;
    int64_t ovol, ivol;
    int ovf = __builtin_mul_overflow(os[0], os[1], &ovol) || __builtin_mul_overflow(ovol, os[2], &ovol);
    ivol = dm(self, r - 3) * dm(self, r - 2) * dm(self, r - 1);
    if (!ovf && ovol < ivol)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B20", "outputSize volume %lld < self D*H*W %lld",
                       (long long)ovol, (long long)ivol);
    if (rk(gradOutput) != r)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B21", "gradOutput rank %lld != self rank %d",
                       (long long)rk(gradOutput), r);
    for (int i = 0; i < 3; i++)
        if (dm(gradOutput, r - 3 + i) != os[i])
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B22", "gradOutput spatial dims %s != "
                           "outputSize (%lld, %lld, %lld)", shp(gradOutput, b1, sizeof b1),
                           (long long)os[0], (long long)os[1], (long long)os[2]);
    if (dm(gradOutput, 0) != dm(self, 0) || (r == 5 && dm(gradOutput, 1) != dm(self, 1)))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B23", "gradOutput N%s %s != self %s",
                       r == 5 ? "/C" : "", shp(gradOutput, b1, sizeof b1), shp(self, b2, sizeof b2));
    int empty = numel(gradOutput) == 0; /* B24 */
    struct aclOpExecutor *e = exec_new(&x, sizeof(unpool_job), unpool_kernel, empty ? 0 : SYS_WORKSPACE);
    if (!e) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    unpool_job *j = e->payload;
    j->h.empty = empty;
    j->h.nt = 4;
    snap(&j->h.t[0], gradOutput, "gradOutput");
    snap(&j->h.t[1], indices, "indices");
    snap(&j->h.t[2], out, "out");
    snap(&j->h.t[3], self, "self");
    static const int a5[5] = {0, 1, 2, 3, 4}, a4[5] = {0, -1, 1, 2, 3}; /* 4-D = (N,D,H,W) */
    memcpy(j->ax, r == 5 ? a5 : a4, sizeof a5);
    if (!empty && (has_neg_dim(self) || has_neg_dim(gradOutput)))
        set_reject(&j->h, "negative dimension");
    return finish(&x, e, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxUnpool3dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
