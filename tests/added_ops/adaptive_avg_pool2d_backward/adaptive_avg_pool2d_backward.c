/* aclnnAdaptiveAvgPool2dBackward -- CANN's public aclnn API, semantics of PyTorch's
 * aten._adaptive_avg_pool2d_backward(grad, self).
 * Phase 1: B1 null (gradOutput, self, out); B2 gradOutput dtype in the family's list; B3 self
 * and out dtype == gradOutput's; B4 self rank in {3, 4}; B5 gradOutput rank == self's; B6
 * gradOutput's leading dims (N, C) == self's; B7 out shape == self shape; B8 self H, W > 0 and
 * gradOutput Ho, Wo > 0; B9 an empty self (N or C == 0): success, workspace 0, no launch.
 * Phase 2: output cell (i, j) averages rows [floor(i*H/Ho), ceil((i+1)*H/Ho)) and columns
 * [floor(j*W/Wo), ceil((j+1)*W/Wo)); every input element of the window gets gradOutput[i, j] /
 * (window height * window width), summed over the (overlapping) windows in an fp32 accumulator
 * (in the caller's workspace for fp16/bf16) and rounded once at the store. */
#include "common.h"
#include <stdlib.h>

#define API "aclnnAdaptiveAvgPool2dBackward"

typedef struct {
    job_head h;
    int ax[5]; /* logical (N,C,D,H,W) -> view dim, the same for the three tensors */
} aap_job;

/* [*lo, *hi) of adaptive window o along an axis of `in` elements pooled to `out` */
static void window(int64_t o, int64_t in, int64_t out, int64_t *lo, int64_t *hi)
{
    *lo = o * in / out;
    *hi = ((o + 1) * in + out - 1) / out;
}

static int aap_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    aap_job *j = (aap_job *)h;
    lt5 go = lt_job(h, &h->t[0], j->ax), gi = lt_job(h, &h->t[1], j->ax);
    int64_t N = gi.n[0], C = gi.n[1], H = gi.n[3], W = gi.n[4], Ho = go.n[3], Wo = go.n[4];
    int64_t vol = H * W;
    int heap;
    float *acc = acc_get(h, ws, N * C * vol, &heap);
    if (!acc) {
        raise_exc(stream, e->api, "simulator out of host memory");
        return ACLNN_SUCCESS;
    }
    uint64_t loads = 0, adds = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            float *pl = acc + (n * C + c) * vol;
            for (int64_t i = 0; i < Ho; i++) {
                int64_t h0, h1;
                window(i, H, Ho, &h0, &h1);
                for (int64_t jj = 0; jj < Wo; jj++) {
                    int64_t w0, w1;
                    window(jj, W, Wo, &w0, &w1);
                    float g = ld_f(&go, lt_at(&go, n, c, 0, i, jj));
                    float v = g / (float)((h1 - h0) * (w1 - w0));
                    loads++;
                    adds += (uint64_t)((h1 - h0) * (w1 - w0));
                    for (int64_t y = h0; y < h1; y++)
                        for (int64_t x = w0; x < w1; x++) pl[y * W + x] += v;
                }
            }
        }
    job_traffic(h, loads * go.es + (h->acc_ws_off ? adds * 8u : 0u));
    store_planes(h, &gi, acc, -1);
    if (heap) free(acc);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    opctx x;
    char b1[128], b2[128];
    int st = op_begin(&x, API);
    if (st) return st;
    const op_param params[3] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_TENSOR(out)};
    if ((st = op_params(&x, 3, params, "B1"))) return st;
    static const int dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    int nl = (is_regbase(&x) || x.soc->socv == SOCV_ASCEND910B || x.soc->socv == SOCV_ASCEND910_93) ? 3 : 0;
    if ((st = chk_dtype_in(&x, "B2", NT(gradOutput), dtypes, nl, SOC_NOTE_SOC)) ||
        (st = chk_same_dtype(&x, "B3", NT(self), NT(gradOutput))) ||
        (st = chk_same_dtype(&x, "B3", NT(out), NT(gradOutput))) ||
        (st = chk_rank_in(&x, "B4", NT(self), 3, 4)))
        return st;
    int r = (int)rk(self);
    if (rk(gradOutput) != r)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B5", "gradOutput rank %lld != self rank %d",
                       (long long)rk(gradOutput), r);
    for (int i = 0; i < r - 2; i++)
        if (dm(gradOutput, i) != dm(self, i))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B6", "gradOutput %s and self %s differ in dim %d",
                           shp(gradOutput, b1, sizeof b1), shp(self, b2, sizeof b2), i);
    if ((st = chk_same_shape(&x, "B7", NT(out), NT(self)))) return st;
    int64_t H = dm(self, r - 2), W = dm(self, r - 1), Ho = dm(gradOutput, r - 2), Wo = dm(gradOutput, r - 1);
    if (H <= 0 || W <= 0 || Ho <= 0 || Wo <= 0)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B8", "self H, W (%lld, %lld) and gradOutput Ho, Wo "
                       "(%lld, %lld) must be > 0", (long long)H, (long long)W, (long long)Ho, (long long)Wo);
    /* B9: an empty self (N or C == 0) returns success, workspace 0, nothing launched */
    int empty = numel(self) == 0;
    int ax[5];
    lt_axes(r, 2, 0, ax);
    /* fp16/bf16: the fp32 accumulator lives in the caller's workspace */
    uint64_t acc = self->dtype != ACL_FLOAT && !has_neg_dim(self) ? (uint64_t)numel(self) : 0;
    const named_tensor ts[3] = {NT(gradOutput), NT(out), NT(self)};
    aap_job *j = job_new(&x, sizeof *j, aap_kernel, empty, acc, 3, ts);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    memcpy(j->ax, ax, sizeof j->ax);
    if (!empty && (has_neg_dim(self) || has_neg_dim(gradOutput)))
        set_reject(&j->h, "negative dimension");
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveAvgPool2dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
