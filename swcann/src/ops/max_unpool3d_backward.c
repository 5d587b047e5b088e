/* aclnnMaxUnpool3dBackward -- spec ops/max_unpool3d_backward.md.
 * Phase 1 = section B (ids B0..B24, no SoC-dependent checks).  Phase 2 is a pure
 * gather, bit-exact for every dtype: out[n,c,p] = gradOutput[n,c,indices[n,c,p]]. */
#include "aclnnop/aclnn_max_unpool3d_backward.h"
#include "common.h"
#include <stdlib.h>
#include <string.h>

#define API "aclnnMaxUnpool3dBackward"

typedef struct { job_head h; int ax[5]; } unpool_job;

static int unpool_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    (void)ws;
    unpool_job *j = (unpool_job *)h;
    lt5 go = lt_make(&h->t[0], j->ax), ix = lt_make(&h->t[1], j->ax), out = lt_make(&h->t[2], j->ax);
    int64_t N = out.n[0], C = out.n[1], OV = go.n[2] * go.n[3] * go.n[4];
    const int64_t ext[5] = {N, C, out.n[2], out.n[3], out.n[4]};
    if (!indices_in_range(&ix, ext, 0, OV, stream, e->api, "the gradOutput volume",
                          "out-of-bounds gather"))
        return ACLNN_SUCCESS;
    size_t es = out.es;
    /* every output element reads its index and the gradient it gathers, and is written */
    job_traffic(h, (uint64_t)(N * C * out.n[2] * out.n[3] * out.n[4]) * (ix.es + 2 * es));
    /* fault unpool_hw_swap: the flat index is split with the H and W extents swapped */
    int64_t gh = go.n[3], gw = go.n[4];
    if (job_bug(h, "unpool_hw_swap")) gh = go.n[4], gw = go.n[3];
    /* fault unpool_first_reader_only: a source element goes to the first output that reads it,
     * later readers of a repeated index get zero (a scatter-style inverse of the gather) */
    unsigned char *seen = job_bug(h, "unpool_first_reader_only") ? calloc((size_t)OV, 1) : NULL;
    static const char zero[16];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            if (seen) memset(seen, 0, (size_t)OV);
            for (int64_t d = 0; d < out.n[2]; d++)
                for (int64_t y = 0; y < out.n[3]; y++)
                    for (int64_t x = 0; x < out.n[4]; x++) {
                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                        int64_t od = v / (gh * gw), rem = v % (gh * gw);
                        const char *src = go.data + lt_at(&go, n, c, od, rem / gw, rem % gw) * (int64_t)es;
                        if (seen && seen[v]++) src = zero;
                        memcpy(out.data + lt_at(&out, n, c, d, y, x) * (int64_t)es, src, es);
                    }
        }
    free(seen);
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
    const op_param params[7] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_TENSOR(indices),
                                PARAM_INTS(outputSize), PARAM_INTS(stride), PARAM_INTS(padding),
                                PARAM_TENSOR(out)};
    if ((st = op_params(&x, 7, params, "B2")) || (st = chk_contiguous(&x, "B3", NT(out)))) return st;
    static const int dl[] = {ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_UINT8, ACL_INT16, ACL_INT32,
                             ACL_INT64, ACL_DOUBLE};
    const named_tensor t3[3] = {NT(gradOutput), NT(self), NT(out)};
    static const char *const dtype_ids[3] = {"B4", "B5", "B6"};
    for (int i = 0; i < 3; i++)
        if ((st = chk_dtype_in(&x, dtype_ids[i], t3[i], dl, 8, SOC_NOTE_NONE))) return st;
    if ((st = chk_same_dtype(&x, "B7", NT(self), NT(gradOutput))) ||
        (st = chk_same_dtype(&x, "B8", NT(out), NT(gradOutput))))
        return st;
    if (indices->dtype != ACL_INT64 && !op_bug(&x, "index_dtype_skipped", gradOutput)) /* fault */
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B9", "indices dtype %s must be DT_INT64",
                       swc_dtype_name(indices->dtype));
    int r = (int)rk(self);
    if ((st = chk_rank_in(&x, "B10", NT(self), 4, 5))) return st;
    if (rk(indices) != r)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B11", "indices rank %lld != self rank %d",
                       (long long)rk(indices), r);
    if (rk(out) != r)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B12", "out rank %lld != self rank %d",
                       (long long)rk(out), r);
    if ((st = chk_same_shape(&x, "B13", NT(self), NT(indices))) ||
        (st = chk_same_shape(&x, "B14", NT(self), NT(out))))
        return st;
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
    const named_tensor ts[4] = {NT(gradOutput), NT(indices), NT(out), NT(self)};
    unpool_job *j = job_new(&x, sizeof *j, unpool_kernel, empty, 0, 4, ts);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    static const int a5[5] = {0, 1, 2, 3, 4}, a4[5] = {0, -1, 1, 2, 3}; /* 4-D = (N,D,H,W) */
    memcpy(j->ax, r == 5 ? a5 : a4, sizeof a5);
    if (!empty && (has_neg_dim(self) || has_neg_dim(gradOutput)))
        set_reject(&j->h, "negative dimension");
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxUnpool3dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
