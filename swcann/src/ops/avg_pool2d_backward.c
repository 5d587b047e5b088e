/* aclnnAvgPool2dBackward -- spec ops/avg_pool2d_backward.md.
 * Phase 1: table B.1 (ids B1.1..B1.18), then B.2 on 950 (B2.x) or B.3 elsewhere (B3.x).
 * Phase 2: PyTorch avg_pool2d_backward semantics (C.2); with SWCANN_DEVIATIONS=1 the
 * global-pool and cube paths reproduce the deviations of C.3/C.4 (spec G.8, G.9). */
#include <stdlib.h>
#include "common.h"

#define API "aclnnAvgPool2dBackward"

enum { P_V2 = 0, P_3D, P_CUBE, P_GLOBAL }; /* 950 AvgPoolV2Grad, 910B/93 AvgPool3DGrad, ... */
static const char *const k_path[] = {"AvgPoolV2Grad", "AvgPool3DGrad", "cube (Conv2DBackpropInput)",
                                     "global-avg-pool"};

typedef struct {
    job_head h;
    int path, ceil_mode, cip, fp16c;
    int64_t kH, kW, sH, sW, pH, pW, div;
    int ax[5];
} avg_job;

static int avg_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream);

/* CheckArrayDataAvgPoolBackWard (AP:51-93): k > 0, s > 0, [len(k)==len(p)], p <= k/2, p >= 0 */
static int check_array_data(opctx *x, const char *id, const int64_t *k, const int64_t *s,
                            const int64_t *p, int n)
{
    for (int i = 0; i < n; i++)
        if (k[i] <= 0) return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "kernel[%d]=%lld must be > 0", i, (long long)k[i]);
    for (int i = 0; i < n; i++)
        if (s[i] <= 0) return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "stride[%d]=%lld must be > 0", i, (long long)s[i]);
    for (int i = 0; i < n; i++)
        if (k[i] / 2 < p[i])
            return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "pad[%d]=%lld > kernel[%d]/2=%lld", i,
                           (long long)p[i], i, (long long)(k[i] / 2));
    for (int i = 0; i < n; i++)
        if (p[i] < 0) return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "pad[%d]=%lld must be >= 0", i, (long long)p[i]);
    return 0;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclIntArray *kernelSize,
    const aclIntArray *stride, const aclIntArray *padding, bool ceilMode, bool countIncludePad,
    int64_t divisorOverride, int8_t cubeMathType, aclTensor *gradInput, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    opctx x;
    char b1[128], b2[128];
    int st = op_begin(&x, API);
    if (st) return st;
    /* B1.1: stride is NOT null-checked */
    const void *nh[5] = {gradOutput, self, kernelSize, padding, gradInput};
    static const char *const nn[5] = {"gradOutput", "self", "kernelSize", "padding", "gradInput"};
    if ((st = op_nonnull(&x, 5, nh, nn, "B1.1"))) return st;
    const void *hs[6] = {gradOutput, self, kernelSize, stride, padding, gradInput};
    static const char *const nm[6] = {"gradOutput", "self", "kernelSize", "stride", "padding", "gradInput"};
    static const int kinds[6] = {SWC_K_TENSOR, SWC_K_TENSOR, SWC_K_INTARRAY, SWC_K_INTARRAY,
                                 SWC_K_INTARRAY, SWC_K_TENSOR};
    if ((st = op_live(&x, 6, hs, kinds, nm))) return st;
    /* B1.2: BF16 only on SocVersion 910B / 910_93 or regbase */
    static const int fl[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    int nl = (is_regbase(&x) || x.soc->socv == SOCV_ASCEND910B || x.soc->socv == SOCV_ASCEND910_93) ? 3 : 2;
    const aclTensor *dt3[3] = {gradOutput, self, gradInput};
    static const char *const dn3[3] = {"gradOutput", "self", "gradInput"};
    for (int i = 0; i < 3; i++)
        if (!dt_in(dt3[i]->dtype, fl, nl))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.2", "%s dtype %s not in supported list "
                           "%s for %s (%s)", dn3[i], swc_dtype_name(dt3[i]->dtype),
                           dt_list(fl, nl, b1, sizeof b1), x.soc->family, x.soc->soc_name);
    if (gradOutput->dtype != gradInput->dtype)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.3", "gradOutput dtype %s != gradInput dtype %s",
                       swc_dtype_name(gradOutput->dtype), swc_dtype_name(gradInput->dtype));
    for (int i = 0; i < 3; i++)
        if (dt3[i]->format != ACL_FORMAT_NCHW && dt3[i]->format != ACL_FORMAT_NCL)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.4", "%s format %s not in {NCHW, NCL}",
                           dn3[i], fmt_name(dt3[i]->format));
    if (rk(gradOutput) == 4 && (gradOutput->format != ACL_FORMAT_NCHW || gradInput->format != ACL_FORMAT_NCHW))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.5", "4-D gradOutput needs NCHW gradOutput "
                       "and gradInput (got %s, %s)", fmt_name(gradOutput->format),
                       fmt_name(gradInput->format));
    /* B1.6 (private format of gradOutput) is dead code after B1.4 */
    if (!((rk(gradOutput) == 3 && rk(gradInput) == 3) || (rk(gradOutput) == 4 && rk(gradInput) == 4)))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.7", "ranks (gradOutput %lld, gradInput %lld) "
                       "not in {(3,3), (4,4)}", (long long)rk(gradOutput), (long long)rk(gradInput));
    for (int i = 0; i < 3; i++)
        if (has_neg_dim(dt3[i]))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.8", "%s shape %s has a negative dim",
                           dn3[i], shp(dt3[i], b1, sizeof b1));
    uint64_t lk = alen(kernelSize), lp = alen(padding);
    if (lk == 0 || lk > 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.9", "kernelSize length %llu not in {1, 2}",
                       (unsigned long long)lk);
    for (uint64_t i = 0; i < lk; i++)
        if (kernelSize->v[i] <= 0)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.10", "kernelSize[%llu]=%lld must be > 0",
                           (unsigned long long)i, (long long)kernelSize->v[i]);
    if (stride) {
        int bad = stride->n > 2;
        for (uint64_t i = 0; !bad && i < stride->n; i++) bad = stride->v[i] <= 0;
        if (bad)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.11", "stride (length %llu) must have "
                           "length <= 2 and elements > 0", (unsigned long long)stride->n);
    }
    if (lp > 2)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.12", "padding length %llu > 2", (unsigned long long)lp);
    if (lp == 0) return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.13", "padding is empty");
    int64_t kH = kernelSize->v[0], kW = lk == 2 ? kernelSize->v[1] : kH;
    int64_t pH = padding->v[0], pW = lp == 2 ? padding->v[1] : pH;
    if (kH < 2 * pH || kW < 2 * pW)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.14", "kernel (%lld, %lld) < 2 * padding "
                       "(%lld, %lld)", (long long)kH, (long long)kW, (long long)pH, (long long)pW);
    if (cubeMathType < 0 || cubeMathType > 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.15", "cubeMathType %d not in {0, 1, 2, 3}",
                       (int)cubeMathType);
    if (!shape_eq(self, gradInput))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.16", "self shape %s != gradInput shape %s",
                       shp(self, b1, sizeof b1), shp(gradInput, b2, sizeof b2));
    /* B1.18: empty -> success, workspace 0, gradInput not written */
    int empty = numel(gradOutput) == 0 || numel(self) == 0 || numel(gradInput) == 0;
    int r = (int)rk(gradInput);
    int64_t H = dm(self, r - 2), W = dm(self, r - 1), Ho = dm(gradOutput, r - 2), Wo = dm(gradOutput, r - 1);
    int64_t N = r == 4 ? dm(self, 0) : 1, C = dm(self, r - 3);
    int64_t gN = r == 4 ? dm(gradOutput, 0) : 1, gC = dm(gradOutput, r - 3);
    int has_stride = stride && stride->n > 0;
    int64_t sH = has_stride ? stride->v[0] : kH, sW = has_stride ? (stride->n == 2 ? stride->v[1] : sH) : kW;
    int global = divisorOverride == 0 && kH == H && kW == W && H >= 10 && W >= 10 && Ho == 1 && Wo == 1;
    int path = P_V2;
    int cube_ok = divisorOverride >= -255 && divisorOverride <= 255; /* CheckCubeSupport (AP:662-670) */
    if (!empty) {
        if (global) {
            path = P_GLOBAL; /* B2.2 / B3.1 */
        } else if (is_regbase(&x)) {
            if (!stride) /* real CANN dereferences it: undefined behaviour (spec G.2) */
                return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B2.3", "stride is nullptr (dereferenced "
                               "by CheckArrayDataAvgPoolBackWard on real CANN: undefined behaviour)");
            const int64_t k2[2] = {kH, kW}, s2[2] = {sH, sW}, p2[2] = {pH, pW};
            if ((st = check_array_data(&x, "B2.3", k2, s2, p2, 2))) return st;
            /* B2.4: AvgPoolV2Grad tiling -> launcher failure -> 561103 */
            if (N != gN || C != gC)
                return op_fail(&x, ACLNN_ERR_INNER_NULLPTR, "B2.4", "AvgPoolV2Grad tiling failed: orig "
                               "N,C (%lld, %lld) != grad N,C (%lld, %lld)", (long long)N,
                               (long long)C, (long long)gN, (long long)gC);
            int64_t eh = pool_out(H, kH, sH, pH, 1, ceilMode), ew = pool_out(W, kW, sW, pW, 1, ceilMode);
            if (Ho != eh || Wo != ew)
                return op_fail(&x, ACLNN_ERR_INNER_NULLPTR, "B2.4", "AvgPoolV2Grad tiling failed: grad "
                               "H,W (%lld, %lld) != pooling formula (%lld, %lld) for ceilMode=%d",
                               (long long)Ho, (long long)Wo, (long long)eh, (long long)ew, (int)ceilMode);
            path = P_V2;
        } else if (x.soc->socv != SOCV_ASCEND910B && x.soc->socv != SOCV_ASCEND910_93) {
            if (!cube_ok) /* B3.2: 910 / 310P / 310B only have the cube path */
                return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B3.2", "divisorOverride %lld: "
                               "divisorOverride only support in [-255, 0) && (0, 255]",
                               (long long)divisorOverride);
            path = P_CUBE;
        } else {
            int kern_ok = kH <= 255 && kW <= 255 && (kH * kW <= 255 || (kH <= 20 && kW <= 20));
            int strip = !(W / H < 2 && H / W < 2); /* integer division on self H, W (AP:687-706) */
            if (cube_ok && kern_ok && countIncludePad && !ceilMode && !strip && gC < 65536) {
                path = P_CUBE;
            } else { /* B3.3: FillIntArray + CheckArrayDataAvgPoolBackWard on 3-element arrays */
                if (!stride)
                    return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B3.3", "stride is nullptr "
                                   "(dereferenced by FillIntArray on real CANN: undefined behaviour)");
                const int64_t k3[3] = {1, kH, kW}, s3[3] = {1, sH, sW}, p3[3] = {0, pH, pW};
                if ((st = check_array_data(&x, "B3.3", k3, s3, p3, 3))) return st;
                path = P_3D;
            }
        }
    }
    int overlap = sH < kH || sW < kW;
    uint64_t accws = (path == P_3D && !empty && gradInput->dtype != ACL_FLOAT && overlap)
                         ? (uint64_t)(N * C * H * W) * 4u : 0; /* AvgPool3DGrad fp32 workspace */
    struct aclOpExecutor *e = exec_new(&x, sizeof(avg_job), avg_kernel, empty ? 0 : SYS_WORKSPACE + accws);
    if (!e) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    avg_job *j = e->payload;
    j->h.empty = empty;
    j->h.acc_ws_off = accws ? SYS_WORKSPACE : 0;
    j->h.nt = 3;
    snap(&j->h.t[0], gradOutput, "gradOutput");
    snap(&j->h.t[1], gradInput, "gradInput");
    snap(&j->h.t[2], self, "self");
    static const int a4[5] = {0, 1, -1, 2, 3}, a3[5] = {-1, 0, -1, 1, 2};
    memcpy(j->ax, r == 4 ? a4 : a3, sizeof a4);
    j->path = path;
    j->ceil_mode = ceilMode;
    j->cip = countIncludePad;
    j->kH = kH, j->kW = kW, j->sH = sH, j->sW = sW, j->pH = pH, j->pW = pW;
    j->div = divisorOverride;
    if (path == P_V2 && j->h.deviations) j->div = (int32_t)divisorOverride; /* narrowed to int */
    /* Implementation precision, modelled only with SWCANN_DEVIATIONS=1 (default = documented
     * semantics, fp32 accumulation): the cube/global paths cast gradOutput and the kernel
     * matrix 1/divisor to FP16 for cubeMathType 1/2, and the cube path's native FP16 conv
     * uses FP16 weights (spec C.3, C.7; doc claims HF32 for 1 on A2/A3). */
    j->fp16c = j->h.deviations && (path == P_CUBE || path == P_GLOBAL) &&
               (cubeMathType == 1 || cubeMathType == 2 ||
                (path == P_CUBE && gradOutput->dtype == ACL_FLOAT16));
    if (!empty) {
        if (N * C != gN * gC)
            set_reject(&j->h, "%s: gradOutput planes N*C=%lld != self planes %lld", k_path[path],
                       (long long)(gN * gC), (long long)(N * C));
        else if (path == P_CUBE && (pH < 0 || pW < 0))
            set_reject(&j->h, "cube path with negative padding (%lld, %lld) is undefined",
                       (long long)pH, (long long)pW);
    }
    return finish(&x, e, workspaceSize, executor);
}

/* divisor of one window; hs..we are the clipped bounds, pool the padded size */
static float window_div(const avg_job *j, int64_t pool, int64_t area)
{
    int dev = j->h.deviations;
    if (dev && j->path == P_CUBE) {
        /* cube path (C.3): isNoNeedMul -> uniform 1/divisor or 1/(kH*kW); else mean matrix
         * 1/(real elements), ignoring divisorOverride (+-255 case) */
        int no_mul = (j->div > -255 && j->div < 255 && j->div != 0) || j->cip;
        if (no_mul) return (float)(j->div != 0 ? j->div : j->kH * j->kW);
        return (float)area;
    }
    if (j->div != 0) return (float)j->div;
    return (float)(j->cip ? pool : area);
}

static int avg_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    avg_job *j = (avg_job *)h;
    lt5 go = lt_make(&h->t[0], j->ax), gi = lt_make(&h->t[1], j->ax);
    int64_t C = gi.n[1], H = gi.n[3], W = gi.n[4], gC = go.n[1], Ho = go.n[3], Wo = go.n[4];
    int64_t planes = gi.n[0] * C;
    int heap;
    float *acc = acc_get(h, ws, planes * H * W, &heap);
    if (!acc) {
        raise_exc(stream, e->api, "simulator out of host memory");
        return ACLNN_SUCCESS;
    }
    int dev_global = h->deviations && j->path == P_GLOBAL;
    int half_div = dev_global && (j->fp16c || go.dtype == ACL_FLOAT16); /* C.4 FP16 divisor */
    for (int64_t p = 0; p < planes; p++) {
        int64_t gn = p / gC, gc = p % gC; /* flat plane index (3-D path reshapes to N*C) */
        float *pl = acc + p * H * W;
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t q = 0; q < Wo; q++) {
                float g = ld_f(&go, lt_at(&go, gn, gc, 0, i, q));
                if (j->fp16c) g = round_dt(g, ACL_FLOAT16);
                if (dev_global) { /* C.4: ignores padding, stride and countIncludePad */
                    float d = (float)(j->kH * j->kW);
                    if (half_div) d = swc_half_to_float(swc_float_to_half(d)); /* inf at >= 65520 */
                    float v = g / d;
                    if (half_div) v = round_dt(v, ACL_FLOAT16);
                    for (int64_t t = 0; t < H * W; t++) pl[t] += v;
                    continue;
                }
                int64_t hs = i * j->sH - j->pH, ws0 = q * j->sW - j->pW;
                int64_t he = hs + j->kH < H + j->pH ? hs + j->kH : H + j->pH;
                int64_t we = ws0 + j->kW < W + j->pW ? ws0 + j->kW : W + j->pW;
                int64_t pool = (he - hs) * (we - ws0);
                if (hs < 0) hs = 0;
                if (ws0 < 0) ws0 = 0;
                if (he > H) he = H;
                if (we > W) we = W;
                if (he <= hs || we <= ws0) continue;
                float d = window_div(j, pool, (he - hs) * (we - ws0));
                float v = j->fp16c ? g * round_dt(1.0f / d, ACL_FLOAT16) : g / d;
                for (int64_t y = hs; y < he; y++)
                    for (int64_t x = ws0; x < we; x++) pl[y * W + x] += v;
            }
    }
    for (int64_t p = 0; p < planes; p++) {
        int64_t n = p / C, c = p % C;
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                float v = acc[(p * H + y) * W + x];
                if (j->fp16c) v = round_dt(v, ACL_FLOAT16);
                st_f(&gi, lt_at(&gi, n, c, 0, y, x), v);
            }
    }
    if (heap) free(acc);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAvgPool2dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
