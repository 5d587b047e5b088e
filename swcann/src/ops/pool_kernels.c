#include "pool_kernels.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "acl/acl.h"

static int scatter_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream);
static int avg_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream);

int max_pool_begin(opctx *x, const char *api, const aclTensor *gradOutput, const aclTensor *self,
                   const aclTensor *indices, const aclIntArray *kernelSize, const aclIntArray *stride,
                   const aclIntArray *padding, const aclIntArray *dilation,
                   const aclTensor *gradInput)
{
    const op_param params[8] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_TENSOR(indices),
                                PARAM_INTS(kernelSize), PARAM_INTS(stride), PARAM_INTS(padding),
                                PARAM_INTS(dilation), PARAM_TENSOR(gradInput)};
    int st = op_begin(x, api);
    return st ? st : op_params(x, 8, params, NULL);
}

scatter_job *scatter_job_new(opctx *x, int empty, uint64_t acc_elems, const int ax[5],
                             const aclTensor *gradOutput, const aclTensor *indices,
                             const aclTensor *gradInput, const aclTensor *self)
{
    const named_tensor ts[4] = {NT(gradOutput), NT(indices), NT(gradInput), NT(self)};
    scatter_job *j = job_new(x, sizeof *j, scatter_kernel, empty, acc_elems, 4, ts);
    if (j) memcpy(j->ax, ax, sizeof j->ax);
    return j;
}

/* fault use_after_free: the kernel's scratch block is released by the launch path before
 * the kernel reads it; the access is an AI Core exception (0 when it was raised) */
static int scratch_alive(job_head *h, struct aclOpExecutor *e, void *stream)
{
    if (!job_bug(h, "use_after_free")) return 1;
    void *blk = NULL;
    char why[512];
    if (aclrtMalloc(&blk, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS) aclrtFree(blk);
    if (blk && dev_mem_ok(blk, 64, why, sizeof why)) return 1;
    raise_exc(stream, e->api, "scratch %p (64 bytes) not inside a live device allocation: %s", blk,
              blk ? why : "never allocated");
    return 0;
}

/* fault indices_padded: flat index v read as (z, y, x) of the padded volume, minus the
 * padding; -1 where that lands in the padding */
static int64_t unpad(int64_t v, const int64_t n[5], const int64_t pad[3])
{
    int64_t hp = n[3] + 2 * pad[1], wp = n[4] + 2 * pad[2];
    int64_t z = v / (hp * wp) - pad[0], y = v / wp % hp - pad[1], x = v % wp - pad[2];
    if (z < 0 || z >= n[2] || y < 0 || y >= n[3] || x < 0 || x >= n[4]) return -1;
    return (z * n[3] + y) * n[4] + x;
}

int atomic_order(const opctx *x, const job_head *h, int overlap, int honours_flag, const aclTensor *first)
{
    if (!overlap) return 0;
    return !h->deterministic || !honours_flag || op_bug(x, "deterministic_ignored", first);
}

/* Atomic adds from several cores land in an order that changes from launch to launch. Modelled
 * as every other atomic launch of the process walking its windows backwards: two runs of one
 * case in a row always take opposite orders, so three or more fp32 addends to one element
 * usually differ in their last bits, as on hardware. */
static int atomic_reversed(int atomic)
{
    static unsigned launches;
    return atomic && (launches++ & 1u);
}

/* the i-th of n steps along an axis, walked backwards when `rev` */
static inline int64_t walk(int rev, int64_t n, int64_t i) { return rev ? n - 1 - i : i; }

/* Fault perf_channel_last_recompute (channel-last views only): the kernel derives every
 * element's offsets from its flat index by division, and splits the argmax into its (d, h, w)
 * in the input plane and joins it again, instead of stepping through the view. */
static int recomputes(const job_head *h, const lt5 *go)
{
    return lt_channel_last(go) && job_bug(h, "perf_channel_last_recompute");
}

static int64_t replane(int64_t v, const int64_t n[5])
{
    int64_t hw = n[3] * n[4], z = v / hw, y = v % hw / n[4], x = v % n[4];
    return (z * n[3] + y) * n[4] + x;
}

static int scatter_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    scatter_job *j = (scatter_job *)h;
    if (!scratch_alive(h, e, stream)) return ACLNN_SUCCESS;
    /* fault acc_storage_dtype: the fp16/bf16 overlap path sums in the tensor dtype although
     * phase 1 sized the fp32 workspace for it (or the kernel has an fp32 buffer for it) */
    int mode = (h->acc_ws_off || j->fp32_acc) && job_bug(h, "acc_storage_dtype") ? ACC_DTYPE : j->mode;
    if (mode == ACC_FP32 && job_bug(h, "scatter_overwrites"))
        mode = ACC_LWW; /* fault scatter_overwrites: a plain store where an atomic add is due */
    int drop_nan = job_bug(h, "scatter_drops_nan"); /* a max-style compare that loses NaN */
    /* fault indices_padded: the argmax is decoded as a flat index into the padded plane
     * (D+2pD, H+2pH, W+2pW) and shifted back by the padding; positions that land in the
     * padding are masked off by the kernel */
    int padded = job_bug(h, "indices_padded") && (j->pad[0] || j->pad[1] || j->pad[2]);
    int batch0 = job_bug(h, "batch_plane_zero"); /* fault: every n reads batch 0's planes */
    lt5 go = lt_job(h, &h->t[0], j->ax), ix = lt_make(&h->t[1], j->ax), gi = lt_job(h, &h->t[2], j->ax);
    int64_t N = gi.n[0], C = gi.n[1], P = gi.n[2] * gi.n[3] * gi.n[4];
    int64_t on = go.n[0] < N ? go.n[0] : N, oc = go.n[1] < C ? go.n[1] : C;
    const int64_t ext[5] = {on, oc, go.n[2], go.n[3], go.n[4]};
    if (!indices_in_range(&ix, ext, j->idx_cast_i32, P, stream, e->api, "its input plane",
                          "out-of-bounds access"))
        return ACLNN_SUCCESS;
    int recompute = recomputes(h, &go);
    /* gradOutput and indices read once; each gradient added to a workspace accumulator
     * reads and writes its element */
    uint64_t walked = (uint64_t)(on * oc * go.n[2] * go.n[3] * go.n[4]);
    job_traffic(h, walked * (go.es + ix.es + (h->acc_ws_off ? 8u : 0u)));
    int heap;
    float *acc = acc_get(h, ws, N * C * P, &heap);
    if (!acc) {
        raise_exc(stream, e->api, "simulator out of host memory");
        return ACLNN_SUCCESS;
    }
    int dt = gi.dtype;
    int rev0 = atomic_reversed(j->atomic);
    int by_batch = job_bug(h, "batch_order_varies");
    for (int64_t n = 0; n < on; n++)
        for (int64_t c = 0; c < oc; c++) {
            float *plane = acc + (n * C + c) * P;
            int64_t rn = batch0 ? 0 : n;
            int rev = rev0 ^ (by_batch && n > 0); /* fault: batch n > 0 walks its windows backwards */
            for (int64_t d0 = 0; d0 < go.n[2]; d0++)
                for (int64_t y0 = 0; y0 < go.n[3]; y0++)
                    for (int64_t x0 = 0; x0 < go.n[4]; x0++) {
                        int64_t d = walk(rev, go.n[2], d0), y = walk(rev, go.n[3], y0),
                                x = walk(rev, go.n[4], x0);
                        int64_t at_ix = lt_at(&ix, rn, c, d, y, x), at_go = lt_at(&go, rn, c, d, y, x);
                        if (recompute) {
                            int64_t i[5];
                            lt_split(&go, (((rn * go.n[1] + c) * go.n[2] + d) * go.n[3] + y) * go.n[4] + x, i);
                            at_ix = lt_at(&ix, i[0], i[1], i[2], i[3], i[4]);
                            at_go = lt_at(&go, i[0], i[1], i[2], i[3], i[4]);
                        }
                        int64_t v = ld_i(&ix, at_ix);
                        if (j->idx_cast_i32) v = (int32_t)v;
                        if (recompute) v = replane(v, gi.n);
                        float g = ld_f(&go, at_go);
                        if (drop_nan && isnan(g)) continue;
                        if (padded && (v = unpad(v, gi.n, j->pad)) < 0) continue;
                        if (mode == ACC_LWW) plane[v] = g;
                        else if (mode == ACC_DTYPE) plane[v] = round_dt(plane[v] + g, dt);
                        else plane[v] += g;
                    }
        }
    store_planes(h, &gi, acc, -1);
    if (heap) free(acc);
    return ACLNN_SUCCESS;
}

avg_job *avg_job_new(opctx *x, size_t size, int empty, uint64_t acc_elems, const int ax[5],
                     const aclTensor *gradOutput, const aclTensor *gradInput,
                     const aclTensor *self)
{
    const named_tensor ts[3] = {NT(gradOutput), NT(gradInput), NT(self)};
    avg_job *j = job_new(x, size, avg_kernel, empty, acc_elems, 3, ts);
    if (j) memcpy(j->ax, ax, sizeof j->ax);
    return j;
}

float avg_divisor(const avg_job *j, int64_t pool, int64_t area)
{
    if (j->divisor_override != 0 && !j->bug_no_override) return (float)j->divisor_override;
    /* fault cip_divisor: countIncludePad honoured in the window clip but not in the divisor */
    return (float)(j->count_include_pad && !j->bug_cip ? pool : area);
}

/* fault grad_contiguous_strides: the view's strides replaced by row-major ones of its dims */
static void contiguous_strides(lt5 *t, const tview *v, const int ax[5])
{
    int64_t s[MAXR], run = 1;
    for (int i = v->rank; i-- > 0;) {
        s[i] = run;
        run *= v->dims[i];
    }
    for (int i = 0; i < 5; i++) t->s[i] = ax[i] >= 0 ? s[ax[i]] : 0;
}

/* [lo, hi) of window o along one axis, clipped to the input; *padded: its extent with padding */
static int64_t window(const avg_job *j, int axis, int64_t o, int64_t in, int64_t *hi,
                      int64_t *padded)
{
    int64_t lo = o * j->s[axis] - j->p[axis], end = lo + j->k[axis];
    if (end > in + j->p[axis]) end = in + j->p[axis];
    /* fault cip_far_pad_dropped: the padded extent is clipped at the input's end, so a window
     * counts its top/left padding but never its bottom/right padding */
    *padded = (j->bug_far_pad && end > in ? in : end) - lo;
    *hi = end < in ? end : in;
    return lo < 0 ? 0 : lo;
}

static int avg_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    avg_job *j = (avg_job *)h;
    lt5 go = lt_job(h, &h->t[0], j->ax), gi = lt_job(h, &h->t[1], j->ax);
    if (job_bug(h, "grad_contiguous_strides")) contiguous_strides(&go, &h->t[0], j->ax);
    int recompute = recomputes(h, &go);
    uint64_t loads = 0, adds = 0; /* gradOutput elements read, accumulator elements added to */
    j->bug_cip = job_bug(h, "cip_divisor");
    j->bug_no_override = job_bug(h, "divisor_override_ignored");
    j->bug_far_pad = job_bug(h, "cip_far_pad_dropped");
    /* fault cip_ceil_full_kernel: with countIncludePad the divisor is the whole kernel, even for
     * a ceil-mode window that reaches past input + padding (PyTorch clips it there) */
    int full_kernel = j->count_include_pad && job_bug(h, "cip_ceil_full_kernel");
    int batch0 = job_bug(h, "batch_plane_zero"); /* fault: every n reads batch 0's planes */
    int drop_partial = job_bug(h, "ceil_drop_last"); /* windows past input + padding skipped */
    int64_t C = gi.n[1], D = gi.n[2], H = gi.n[3], W = gi.n[4], gC = go.n[1];
    int64_t planes = gi.n[0] * C, vol = D * H * W;
    int heap;
    float *acc = acc_get(h, ws, planes * vol, &heap);
    if (!acc) {
        raise_exc(stream, e->api, "simulator out of host memory");
        return ACLNN_SUCCESS;
    }
    int rev0 = atomic_reversed(j->atomic);
    int by_batch = job_bug(h, "batch_order_varies");
    for (int64_t p = 0; p < planes; p++) {
        int64_t gn = batch0 ? 0 : p / gC, gc = p % gC; /* flat plane index (AvgPool3DGrad reshapes to N*C) */
        float *pl = acc + p * vol;
        int rev = rev0 ^ (by_batch && p >= C); /* fault: batch n > 0 walks its windows backwards */
        for (int64_t od0 = 0; od0 < go.n[2]; od0++)
            for (int64_t oh0 = 0; oh0 < go.n[3]; oh0++)
                for (int64_t ow0 = 0; ow0 < go.n[4]; ow0++) {
                    int64_t od = walk(rev, go.n[2], od0), oh = walk(rev, go.n[3], oh0),
                            ow = walk(rev, go.n[4], ow0);
                    int64_t de, he, we, pd, ph, pw;
                    int64_t ds = window(j, 0, od, D, &de, &pd), hs = window(j, 1, oh, H, &he, &ph),
                            ws0 = window(j, 2, ow, W, &we, &pw);
                    if (de <= ds || he <= hs || we <= ws0) continue;
                    if (drop_partial && (oh * j->s[1] - j->p[1] + j->k[1] > H + j->p[1] ||
                                         ow * j->s[2] - j->p[2] + j->k[2] > W + j->p[2]))
                        continue;
                    int64_t at = recompute ? lt_at_flat(&go, ((gn * gC + gc) * go.n[2] + od) * go.n[3] * go.n[4] +
                                                        oh * go.n[4] + ow)
                                           : lt_at(&go, gn, gc, od, oh, ow);
                    float g = ld_f(&go, at);
                    int64_t pool = pd * ph * pw, area = (de - ds) * (he - hs) * (we - ws0);
                    if (full_kernel) pool = j->k[0] * j->k[1] * j->k[2];
                    float v = j->value ? j->value(j, g, pool, area) : g / avg_divisor(j, pool, area);
                    loads++;
                    adds += (uint64_t)area;
                    if (recompute) { /* the window walked as one flat loop, split by division */
                        int64_t wy = he - hs, wx = we - ws0;
                        for (int64_t k = 0; k < area; k++)
                            pl[((ds + k / (wy * wx)) * H + hs + k / wx % wy) * W + ws0 + k % wx] += v;
                        continue;
                    }
                    for (int64_t z = ds; z < de; z++)
                        for (int64_t y = hs; y < he; y++)
                            for (int64_t x = ws0; x < we; x++) pl[(z * H + y) * W + x] += v;
                }
    }
    job_traffic(h, loads * go.es + (h->acc_ws_off ? adds * 8u : 0u));
    store_planes(h, &gi, acc, j->store_fp16 ? ACL_FLOAT16 : -1);
    if (heap) free(acc);
    return ACLNN_SUCCESS;
}
