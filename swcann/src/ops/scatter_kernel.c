#include "scatter_kernel.h"
#include <stdlib.h>

scatter_job *scatter_job_new(opctx *x, int empty, uint64_t acc_elems, const aclTensor *gradOutput,
                             const aclTensor *indices, const aclTensor *gradInput,
                             const aclTensor *self, struct aclOpExecutor **executor)
{
    uint64_t accws = empty ? 0 : acc_elems * 4u;
    struct aclOpExecutor *e = exec_new(x, sizeof(scatter_job), scatter_kernel,
                                       empty ? 0 : SYS_WORKSPACE + accws);
    if (!e) return NULL;
    scatter_job *j = e->payload;
    j->h.empty = empty;
    j->h.acc_ws_off = accws ? SYS_WORKSPACE : 0;
    j->h.nt = 4;
    snap(&j->h.t[0], gradOutput, "gradOutput");
    snap(&j->h.t[1], indices, "indices");
    snap(&j->h.t[2], gradInput, "gradInput");
    snap(&j->h.t[3], self, "self");
    *executor = e;
    return j;
}

int scatter_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    scatter_job *j = (scatter_job *)h;
    lt5 go = lt_make(&h->t[0], j->ax_go), ix = lt_make(&h->t[1], j->ax_ix),
        gi = lt_make(&h->t[2], j->ax_gi);
    int64_t N = gi.n[0], C = gi.n[1], P = gi.n[2] * gi.n[3] * gi.n[4];
    int64_t on = go.n[0] < N ? go.n[0] : N, oc = go.n[1] < C ? go.n[1] : C;
    /* pass 1: an index outside its plane would make the real kernel access memory
     * out of bounds -> AI Core exception, and nothing is written */
    for (int64_t n = 0; n < on; n++)
        for (int64_t c = 0; c < oc; c++)
            for (int64_t d = 0; d < go.n[2]; d++)
                for (int64_t y = 0; y < go.n[3]; y++)
                    for (int64_t x = 0; x < go.n[4]; x++) {
                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                        if (j->idx_cast_i32) v = (int32_t)v;
                        if (v < 0 || v >= P) {
                            raise_exc(stream, e->api, "tensor indices value %lld at [n=%lld, c=%lld, "
                                      "d=%lld, h=%lld, w=%lld] is outside its input plane [0, %lld): "
                                      "out-of-bounds access", (long long)v, (long long)n,
                                      (long long)c, (long long)d, (long long)y, (long long)x,
                                      (long long)P);
                            return ACLNN_SUCCESS;
                        }
                    }
    int heap;
    float *acc = acc_get(h, ws, N * C * P, &heap);
    if (!acc) {
        raise_exc(stream, e->api, "simulator out of host memory");
        return ACLNN_SUCCESS;
    }
    int dt = gi.dtype;
    for (int64_t n = 0; n < on; n++)
        for (int64_t c = 0; c < oc; c++) {
            float *plane = acc + (n * C + c) * P;
            for (int64_t d = 0; d < go.n[2]; d++)
                for (int64_t y = 0; y < go.n[3]; y++)
                    for (int64_t x = 0; x < go.n[4]; x++) {
                        int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                        if (j->idx_cast_i32) v = (int32_t)v;
                        float g = ld_f(&go, lt_at(&go, n, c, d, y, x));
                        if (j->mode == ACC_LWW) plane[v] = g;
                        else if (j->mode == ACC_DTYPE) plane[v] = round_dt(plane[v] + g, dt);
                        else plane[v] += g;
                    }
        }
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            const float *plane = acc + (n * C + c) * P;
            int64_t p = 0;
            for (int64_t d = 0; d < gi.n[2]; d++)
                for (int64_t y = 0; y < gi.n[3]; y++)
                    for (int64_t x = 0; x < gi.n[4]; x++, p++)
                        st_f(&gi, lt_at(&gi, n, c, d, y, x), plane[p]);
        }
    if (heap) free(acc);
    return ACLNN_SUCCESS;
}
