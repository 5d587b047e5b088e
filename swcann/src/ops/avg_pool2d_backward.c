/* aclnnAvgPool2dBackward -- spec ops/avg_pool2d_backward.md.
 * Phase 1: table B.1 (ids B1.1..B1.18), then B.2 on 950 (B2.x) or B.3 elsewhere (B3.x), then
 * the generic L0 label rules of the path taken (L0.R3.cube, L0.R2.<path>; shared/spec/
 * l0_format_rules.md 2.4).
 * Phase 2: PyTorch avg_pool2d_backward semantics (C.2); with SWCANN_DEVIATIONS=1 the
 * global-pool and cube paths reproduce the deviations of C.3/C.4 (spec G.8, G.9). */
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "pool_kernels.h"

#define API "aclnnAvgPool2dBackward"

enum { P_V2 = 0, P_3D, P_CUBE, P_GLOBAL }; /* 950 AvgPoolV2Grad, 910B/93 AvgPool3DGrad, ... */
static const char *const k_path[] = {"AvgPoolV2Grad", "AvgPool3DGrad", "cube (Conv2DBackpropInput)",
                                     "global-avg-pool"};

/* the shared average kernel plus what this op's deviation models need */
typedef struct {
    avg_job a;
    int path;
    int fp16c;      /* deviation: gradOutput and 1/divisor cast to FP16 (cube/global paths) */
    int dev_global; /* deviation: global-avg-pool path (C.4) */
    int half_div;   /* deviation: ... which also stores H*W as an FP16 constant */
} avg2d_job;

static float deviation_value(const avg_job *a, float g, int64_t pool, int64_t area);

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

/* The generic L0 label rules on `path` (l0_format_rules.md 2.4), in code order; transdata /
 * viewcopy: whether R3 / R2 are applied. Only two label situations get past B1.4/B1.5: a 4-D self
 * labelled NCL and a 3-D gradInput labelled NCHW. */
static int l0_rules(opctx *x, int path, const aclTensor *self, const aclTensor *gradInput,
                    int transdata, int viewcopy)
{
    int st;
    /* L0.R3.cube (AP:939-940): on the cube path self (after a Cast that keeps its label) goes to
     * NC1HWC0; the cube builder's 561103 becomes the caller's 161002 (AP:1100/1111) */
    if (transdata && path == P_CUBE && rk(self) == 4 &&
        (st = chk_l0_transdata(x, "L0.R3.cube", ACLNN_ERR_PARAM_INVALID, NT(self), ACL_FORMAT_NC1HWC0)))
        return st;
    /* L0.R2.<path>: a 3-D result is relabelled NCL before HandleGradInput's copy (AP:476-490,
     * 817-829); its 161001 is returned as 161002 on the cube path (AP:1097-1111), 561103 on the
     * global path (AP:1080, 1187) and 561000 on 950's AvgPoolV2Grad path (AP:1205-1206). The
     * AvgPool3DGrad path copies an ND result (Reshape, RS:80-82), which fits any label. */
    if (!viewcopy || path == P_3D || rk(gradInput) != 3 || !reformat_refuses(gradInput->format, 3))
        return 0;
    static const char *const ids[] = {"L0.R2.v2", "", "L0.R2.cube", "L0.R2.global"};
    static const int status[] = {ACLNN_ERR_INNER, 0, ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_INNER_NULLPTR};
    return chk_l0_viewcopy(x, ids[path], status[path], ACL_FORMAT_NCL, NT(gradInput));
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclIntArray *kernelSize,
    const aclIntArray *stride, const aclIntArray *padding, bool ceilMode, bool countIncludePad,
    int64_t divisorOverride, int8_t cubeMathType, aclTensor *gradInput, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    opctx x;
    char b1[128];
    int st = op_begin(&x, API);
    if (st) return st;
    /* B1.1: stride is NOT null-checked */
    const op_param params[6] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_INTS(kernelSize),
                                PARAM_INTS_NULLABLE(stride), PARAM_INTS(padding),
                                PARAM_TENSOR(gradInput)};
    if ((st = op_params(&x, 6, params, "B1.1"))) return st;
    /* faults l0_transdata_first / l0_viewcopy_first: the L0 label rule runs right after the null
     * checks, before the L2 checks (and the empty return), on the path the family takes when the
     * call is not a global average pool: AvgPoolV2Grad on 950, the cube path on 910/310P/310B
     * (910B/910_93 choose theirs from the arguments: the fault does not act there) */
    int a2a3 = !is_regbase(&x) && (x.soc->socv == SOCV_ASCEND910B || x.soc->socv == SOCV_ASCEND910_93);
    int r3_first = !a2a3 && op_bug(&x, "l0_transdata_first", gradOutput);
    int r2_first = !a2a3 && op_bug(&x, "l0_viewcopy_first", gradOutput);
    if ((r3_first || r2_first) &&
        (st = l0_rules(&x, is_regbase(&x) ? P_V2 : P_CUBE, self, gradInput, r3_first, r2_first)))
        return st;
    /* B1.2: BF16 only on SocVersion 910B / 910_93 or regbase */
    static const int fl[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    int nl = (is_regbase(&x) || x.soc->socv == SOCV_ASCEND910B || x.soc->socv == SOCV_ASCEND910_93) ? 3 : 2;
    const named_tensor dt3[3] = {NT(gradOutput), NT(self), NT(gradInput)};
    for (int i = 0; i < 3; i++)
        if ((st = chk_dtype_in(&x, "B1.2", dt3[i], fl, nl, SOC_NOTE_SOC))) return st;
    if ((st = chk_same_dtype(&x, "B1.3", NT(gradOutput), NT(gradInput)))) return st;
    for (int i = 0; i < 3; i++)
        if (dt3[i].t->format != ACL_FORMAT_NCHW && dt3[i].t->format != ACL_FORMAT_NCL)
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.4", "%s format %s not in {NCHW, NCL}",
                           dt3[i].name, swc_format_name(dt3[i].t->format));
    if (rk(gradOutput) == 4 && (gradOutput->format != ACL_FORMAT_NCHW || gradInput->format != ACL_FORMAT_NCHW))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.5", "4-D gradOutput needs NCHW gradOutput "
                       "and gradInput (got %s, %s)", swc_format_name(gradOutput->format),
                       swc_format_name(gradInput->format));
    /* B1.6 (private format of gradOutput) is dead code after B1.4 */
    if (!((rk(gradOutput) == 3 && rk(gradInput) == 3) || (rk(gradOutput) == 4 && rk(gradInput) == 4)))
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.7", "ranks (gradOutput %lld, gradInput %lld) "
                       "not in {(3,3), (4,4)}", (long long)rk(gradOutput), (long long)rk(gradInput));
    for (int i = 0; i < 3; i++)
        if (has_neg_dim(dt3[i].t))
            return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B1.8", "%s shape %s has a negative dim",
                           dt3[i].name, shp(dt3[i].t, b1, sizeof b1));
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
    if ((st = chk_same_shape(&x, "B1.16", NT(self), NT(gradInput)))) return st;
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
        /* the generic L0 label rules, after the path's checks and the empty return; faults
         * l0_transdata_skipped / l0_viewcopy_skipped: a rule is never applied */
        if ((st = l0_rules(&x, path, self, gradInput,
                           !r3_first && !op_bug(&x, "l0_transdata_skipped", gradOutput),
                           !r2_first && !op_bug(&x, "l0_viewcopy_skipped", gradOutput))))
            return st;
    }
    int overlap = sH < kH || sW < kW;
    uint64_t acc = (path == P_3D && gradInput->dtype != ACL_FLOAT && overlap)
                       ? (uint64_t)(N * C * H * W) : 0; /* AvgPool3DGrad fp32 workspace */
    int ax[5];
    lt_axes(r, 2, 0, ax);
    avg2d_job *j = (avg2d_job *)avg_job_new(&x, sizeof *j, empty, acc, ax, gradOutput, gradInput, self);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    avg_job *a = &j->a;
    const int64_t k[3] = {1, kH, kW}, s[3] = {1, sH, sW}, p[3] = {0, pH, pW};
    memcpy(a->k, k, sizeof k);
    memcpy(a->s, s, sizeof s);
    memcpy(a->p, p, sizeof p);
    a->count_include_pad = countIncludePad;
    a->divisor_override = divisorOverride;
    if (path == P_V2 && a->h.deviations) a->divisor_override = (int32_t)divisorOverride; /* narrowed to int */
    j->path = path;
    /* AvgPool3DGrad: atomic adds over overlapping windows unless GetDeterministic() (isDetermine,
     * spec C.6); AvgPoolV2Grad gathers and the cube path is a convolution */
    a->atomic = path == P_3D && atomic_order(&x, &a->h, overlap, 1, gradOutput);
    /* Implementation precision, modelled only with SWCANN_DEVIATIONS=1 (default = documented
     * semantics, fp32 accumulation): the cube/global paths cast gradOutput and the kernel
     * matrix 1/divisor to FP16 for cubeMathType 1/2, and the cube path's native FP16 conv
     * uses FP16 weights (spec C.3, C.7; doc claims HF32 for 1 on A2/A3). */
    j->fp16c = a->h.deviations && (path == P_CUBE || path == P_GLOBAL) &&
               (cubeMathType == 1 || cubeMathType == 2 ||
                (path == P_CUBE && gradOutput->dtype == ACL_FLOAT16));
    j->dev_global = a->h.deviations && path == P_GLOBAL;
    j->half_div = j->dev_global && (j->fp16c || gradOutput->dtype == ACL_FLOAT16); /* C.4 */
    /* C.4: padding ignored (a deviation, or fault global_avg_ignores_pad on any family) */
    if (j->dev_global || (path == P_GLOBAL && op_bug(&x, "global_avg_ignores_pad", gradOutput)))
        memset(a->p, 0, sizeof a->p);
    a->store_fp16 = j->fp16c;
    if (a->h.deviations) a->value = deviation_value;
    if (!empty) {
        if (N * C != gN * gC)
            set_reject(&a->h, "%s: gradOutput planes N*C=%lld != self planes %lld", k_path[path],
                       (long long)(gN * gC), (long long)(N * C));
        else if (path == P_CUBE && (pH < 0 || pW < 0))
            set_reject(&a->h, "cube path with negative padding (%lld, %lld) is undefined",
                       (long long)pH, (long long)pW);
    }
    return finish(&x, &a->h, workspaceSize, executor);
}

/* SWCANN_DEVIATIONS=1: what one window adds to each element it covers */
static float deviation_value(const avg_job *a, float g, int64_t pool, int64_t area)
{
    const avg2d_job *j = (const avg2d_job *)a;
    if (j->fp16c) g = round_dt(g, ACL_FLOAT16);
    if (j->dev_global) { /* C.4: ignores padding, stride and countIncludePad */
        float d = (float)(a->k[1] * a->k[2]);
        if (j->half_div) d = round_dt(d, ACL_FLOAT16); /* inf at >= 65520 */
        float v = g / d;
        return j->half_div ? round_dt(v, ACL_FLOAT16) : v;
    }
    float d = avg_divisor(a, pool, area);
    if (j->path == P_CUBE) {
        /* cube path (C.3): isNoNeedMul -> uniform 1/divisor or 1/(kH*kW); else mean matrix
         * 1/(real elements), ignoring divisorOverride (+-255 case) */
        int64_t div = a->divisor_override;
        int no_mul = (div > -255 && div < 255 && div != 0) || a->count_include_pad;
        d = no_mul ? (float)(div != 0 ? div : a->k[1] * a->k[2]) : (float)area;
    }
    return j->fp16c ? g * round_dt(1.0f / d, ACL_FLOAT16) : g / d;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnAvgPool2dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
