#include "common.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const swc_core *core(void)
{
    static const swc_core *c;
    if (!c) c = swcannCoreApi(SWC_CORE_ABI);
    return c;
}

int op_begin(opctx *x, const char *api)
{
    x->api = api;
    x->c = core();
    x->soc = NULL;
    if (!x->c->nn_ready()) {
        swc_msgf(x->c, "EZ1001", "[%s] aclnn is not initialized: call aclInit or aclnnInit first",
                 api);
        return ACLNN_ERR_INNER;
    }
    x->soc = x->c->soc();
    if (!x->soc) {
        swc_msgf(x->c, "EZ1001", "[%s] SoC unknown: env SWCANN_SOC is invalid", api);
        return ACLNN_ERR_INNER;
    }
    return 0;
}

/* Every phase-1 failure: "EZ1001: ... [aclnnXxx] check <ID> failed: <detail>" */
int op_fail(opctx *x, int status, const char *id, const char *fmt, ...)
{
    char d[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d, sizeof d, fmt, ap);
    va_end(ap);
    swc_msgf(x->c, "EZ1001", "[%s] check %s failed: %s", x->api, id, d);
    return status;
}

int op_nonnull(opctx *x, int n, const void *const *h, const char *const *names, const char *id)
{
    for (int i = 0; i < n; i++) {
        if (h[i]) continue;
        char own[16];
        snprintf(own, sizeof own, "B%d", i + 1);
        return op_fail(x, ACLNN_ERR_PARAM_NULLPTR, id ? id : own, "%s is nullptr", names[i]);
    }
    return 0;
}

/* Not a CANN check: a non-null handle that is not a live object would crash the
 * real library; swcann reports it (561103) so harness bugs surface. */
int op_live(opctx *x, int n, const void *const *h, const int *kinds, const char *const *names)
{
    static const char *kn[] = {"", "aclTensor", "aclIntArray", "aclBoolArray", "aclFloatArray",
                               "aclScalar", "aclOpExecutor"};
    for (int i = 0; i < n; i++) {
        if (h[i] && x->c->obj_kind(h[i]) != kinds[i]) {
            swc_msgf(x->c, "EZ1001", "[%s] check ABI failed: %s (%p) is not a live %s "
                     "(destroyed or foreign pointer; real CANN would crash)",
                     x->api, names[i], h[i], kn[kinds[i]]);
            return ACLNN_ERR_INNER_NULLPTR;
        }
    }
    return 0;
}

int64_t numel(const aclTensor *t)
{
    int64_t n = 1;
    for (uint64_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] == 0) return 0;
        n *= t->dims[i];
    }
    return n;
}

int has_neg_dim(const aclTensor *t)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] < 0) return 1;
    return 0;
}

int shape_eq(const aclTensor *a, const aclTensor *b)
{
    if (a->ndim != b->ndim) return 0;
    for (uint64_t i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

const char *shp(const aclTensor *t, char *buf, size_t n)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (uint64_t i = 0; i < t->ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
    return buf;
}

const char *fmt_name(int f)
{
    switch (f) {
    case 0: return "NCHW"; case 1: return "NHWC"; case 2: return "ND"; case 3: return "NC1HWC0";
    case 4: return "FRACTAL_Z"; case 12: return "NC1HWC0_C04"; case 16: return "HWCN";
    case 27: return "NDHWC"; case 29: return "FRACTAL_NZ"; case 30: return "NCDHW";
    case 32: return "NDC1HWC0"; case 33: return "FRACTAL_Z_3D"; case 35: return "NC";
    case 47: return "NCL"; case 50: return "FRACTAL_NZ_C0_16"; case 51: return "FRACTAL_NZ_C0_32";
    case 52: return "FRACTAL_NZ_C0_2"; case 53: return "FRACTAL_NZ_C0_4";
    case 54: return "FRACTAL_NZ_C0_8"; default: return "UNKNOWN";
    }
}

/* opbase op::IsPrivateFormat list (MaxPool2d spec #14) */
int is_private_format(int f)
{
    switch (f) {
    case 3: case 4: case 32: case 33: case 29: case 12: case 50: case 51: case 52: case 53: case 54:
        return 1;
    default:
        return 0;
    }
}

int dt_in(int dt, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == dt) return 1;
    return 0;
}

const char *dt_list(const int *list, int n, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ", %s" : "%s", swc_dtype_name(list[i]));
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* opbase IsContiguous: row-major strides, size-1 dims ignored, offset irrelevant */
int is_contiguous(const aclTensor *t)
{
    int64_t expect = 1;
    for (uint64_t i = t->ndim; i-- > 0;) {
        if (t->dims[i] == 0) return 1;
        if (t->dims[i] != 1 && t->strides[i] != expect) return 0;
        expect *= t->dims[i];
    }
    return 1;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

/* PyTorch pooling_output_shape (MaxPool2d spec B notes / AvgPool C.1) */
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode)
{
    int64_t o = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--; /* last window must start inside input/left pad */
    return o;
}

void snap(tview *v, const aclTensor *t, const char *name)
{
    memset(v, 0, sizeof *v);
    v->name = name;
    v->dtype = t->dtype;
    v->format = t->format;
    v->rank = (int)t->ndim;
    v->es = swc_dtype_size(t->dtype);
    v->data = t->data;
    v->offset = t->offset;
    for (int i = 0; i < v->rank && i < MAXR; i++) {
        v->dims[i] = t->dims[i];
        v->strides[i] = t->strides[i];
    }
}

void set_reject(job_head *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->reject, sizeof h->reject, fmt, ap);
    va_end(ap);
}

static int run_adapter(struct aclOpExecutor *e, void *ws, uint64_t wsSize, void *stream);
static void destroy_exec(struct aclOpExecutor *e)
{
    free(e->payload);
    free(e);
}

struct aclOpExecutor *exec_new(opctx *x, size_t size, run_fn run, uint64_t ws)
{
    struct aclOpExecutor *e = calloc(1, sizeof *e);
    job_head *h = calloc(1, size);
    if (!e || !h) { free(e); free(h); return NULL; }
    h->kernel = run;
    h->deviations = x->c->deviations();
    h->deterministic = (int)x->c->deterministic();
    e->api = x->api;
    e->workspace = ws;
    e->run = run_adapter;
    e->destroy = destroy_exec;
    e->payload = h;
    return e;
}

int finish(opctx *x, struct aclOpExecutor *e, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (x->c->obj_add(e, SWC_K_EXECUTOR) != 0) { destroy_exec(e); return ACLNN_ERR_INNER_CREATE_EXECUTOR; }
    *workspaceSize = e->workspace;
    *executor = e;
    return ACLNN_SUCCESS;
}

void raise_exc(void *stream, const char *api, const char *fmt, ...)
{
    char d[1024], m[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d, sizeof d, fmt, ap);
    va_end(ap);
    snprintf(m, sizeof m, "AI Core exception (simulated by swcann), aicore exception fault kernel of "
             "%s, ret=507015: %s", api, d);
    core()->stream_fail(stream, ACL_ERROR_RT_AICORE_EXCEPTION, m);
}

/* byte extent [lo, hi) of a view; -1 on negative dims/strides overflow */
static int view_extent(const tview *v, int64_t *lo_el, int64_t *hi_el)
{
    int64_t lo = v->offset, hi = v->offset;
    for (int i = 0; i < v->rank; i++) {
        if (v->dims[i] == 0) { *lo_el = *hi_el = 0; return 1; } /* empty: touches nothing */
        if (v->dims[i] < 0) return -1;
        int64_t span;
        if (__builtin_mul_overflow(v->dims[i] - 1, v->strides[i], &span)) return -1;
        if (span < 0) lo += span; else hi += span;
    }
    *lo_el = lo;
    *hi_el = hi + 1;
    return 0;
}

static int check_tensors(job_head *h, const char *api, void *stream)
{
    char why[512];
    for (int i = 0; i < h->nt; i++) {
        const tview *v = &h->t[i];
        int64_t lo, hi;
        int r = view_extent(v, &lo, &hi);
        if (r == 1) continue;
        int64_t blo, bytes;
        if (r < 0 || lo < 0 || __builtin_mul_overflow(lo, (int64_t)v->es, &blo) ||
            __builtin_mul_overflow(hi - lo, (int64_t)v->es, &bytes)) {
            raise_exc(stream, api, "tensor %s: view (offset %lld, rank %d) addresses memory before "
                      "its data pointer or overflows", v->name, (long long)v->offset, v->rank);
            return -1;
        }
        if (core()->mem_check(v->data + blo, (uint64_t)bytes, why, sizeof why) != 0) {
            raise_exc(stream, api, "tensor %s address %p (view bytes [%lld, %lld)) not inside a live "
                      "device allocation: %s", v->name, (void *)v->data, (long long)blo,
                      (long long)(blo + bytes), why);
            return -1;
        }
    }
    return 0;
}

static int run_adapter(struct aclOpExecutor *e, void *ws, uint64_t wsSize, void *stream)
{
    (void)wsSize;
    job_head *h = e->payload;
    if (h->empty) return ACLNN_SUCCESS;
    if (h->reject[0]) {
        /* tiling rejected the config but the L0 wrapper discarded the status at
         * phase 1 (spec B.2 "kernel-level"): undefined on hardware; modelled as an
         * inner error of the launch */
        swc_msgf(core(), "EZ9999", "[%s] kernel launch failed: kernel-level (tiling) check "
                 "rejected this configuration, status was discarded at phase 1 (undefined on real "
                 "CANN; simulated): %s", e->api, h->reject);
        return ACLNN_ERR_INNER;
    }
    if (e->workspace > 0) {
        char why[512];
        if (core()->mem_check(ws, e->workspace, why, sizeof why) != 0) {
            raise_exc(stream, e->api, "workspace %p (%llu bytes) not inside a live device "
                      "allocation: %s", ws, (unsigned long long)e->workspace, why);
            return ACLNN_SUCCESS;
        }
        memset(ws, 0x5A, e->workspace < 64 ? e->workspace : 64); /* the kernel uses it */
    }
    if (check_tensors(h, e->api, stream) != 0) return ACLNN_SUCCESS;
    return h->kernel(e, h, ws, stream);
}

/* elements of the launch's first tensor (gradOutput in every op), -1 if none: fault triggers */
static int64_t launch_numel(const aclOpExecutor *e)
{
    const job_head *h = e->payload;
    if (!h || h->nt < 1) return -1;
    int64_t n = 1;
    for (int i = 0; i < h->t[0].rank; i++) n *= h->t[0].dims[i];
    return n;
}

int exec_phase2(const char *api, void *ws, uint64_t wsSize, aclOpExecutor *e, void *stream)
{
    const swc_core *c = core();
    char why[256];
    void *rs = NULL;
    if (!e) {
        swc_msgf(c, "EZ1001", "[%s] executor is nullptr", api);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (c->obj_kind(e) != SWC_K_EXECUTOR) {
        swc_msgf(c, "EZ9999", "[%s] executor %p is not live: a non-repeatable executor can run "
                 "only once (call aclSetAclOpExecutorRepeatable after phase 1), or it was destroyed",
                 api, (void *)e);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    int st;
    int32_t f = c->take_fault(SWC_FAULT_PHASE2);
    if (f) {
        swc_msgf(c, "EZ9999", "[%s] injected fault (swcann): phase 2 returns %d", api, f);
        st = f;
    } else if (e->workspace > 0 && !ws) {
        swc_msgf(c, "EZ1001", "[%s] workspace is nullptr but workspaceSize is %llu", api,
                 (unsigned long long)e->workspace);
        st = ACLNN_ERR_PARAM_NULLPTR;
    } else if (wsSize < e->workspace) {
        swc_msgf(c, "EZ1001", "[%s] workspaceSize %llu is smaller than the %llu bytes phase 1 "
                 "reported", api, (unsigned long long)wsSize, (unsigned long long)e->workspace);
        st = ACLNN_ERR_PARAM_INVALID;
    } else if ((st = c->stream_get(stream, &rs, why, sizeof why)) != 0) {
        swc_msgf(c, "EZ9999", "[%s] launch failed, runtime error %d: %s", api, st, why);
        st = ACLNN_ERR_RUNTIME_ERROR;
    } else if (!c->fault_phase2(api, launch_numel(e), rs)) { /* SWCANN_FAULTS */
        st = e->run(e, ws, wsSize, rs);
    } else {
        st = ACLNN_SUCCESS; /* the launch is accepted; the device reports the failure at sync */
    }
    /* a non-repeatable executor is consumed by its (first) phase-2 call */
    if (!e->repeatable && c->obj_del(e, SWC_K_EXECUTOR) == 0) e->destroy(e);
    return st;
}

lt5 lt_make(const tview *v, const int axes[5])
{
    lt5 t;
    t.data = v->data;
    t.dtype = v->dtype;
    t.es = v->es;
    t.off = v->offset;
    for (int i = 0; i < 5; i++) {
        t.n[i] = axes[i] >= 0 ? v->dims[axes[i]] : 1;
        t.s[i] = axes[i] >= 0 ? v->strides[axes[i]] : 0;
    }
    return t;
}

float ld_f(const lt5 *t, int64_t el)
{
    const char *p = t->data + el * (int64_t)t->es;
    switch (t->dtype) {
    case ACL_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case ACL_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return swc_half_to_float(v); }
    case ACL_BF16: { uint16_t v; memcpy(&v, p, 2); return swc_bf16_to_float(v); }
    case ACL_DOUBLE: { double v; memcpy(&v, p, 8); return (float)v; }
    default: return 0.0f;
    }
}

void st_f(const lt5 *t, int64_t el, float v)
{
    char *p = t->data + el * (int64_t)t->es;
    switch (t->dtype) {
    case ACL_FLOAT: memcpy(p, &v, 4); break;
    case ACL_FLOAT16: { uint16_t h = swc_float_to_half(v); memcpy(p, &h, 2); break; }
    case ACL_BF16: { uint16_t b = swc_float_to_bf16(v); memcpy(p, &b, 2); break; }
    case ACL_DOUBLE: { double d = v; memcpy(p, &d, 8); break; }
    default: break;
    }
}

int64_t ld_i(const lt5 *t, int64_t el)
{
    const char *p = t->data + el * (int64_t)t->es;
    switch (t->dtype) {
    case ACL_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case ACL_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ACL_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ACL_INT8: { int8_t v; memcpy(&v, p, 1); return v; }
    case ACL_UINT8: { uint8_t v; memcpy(&v, p, 1); return v; }
    default: return -1;
    }
}

float *acc_get(job_head *h, void *ws, int64_t n, int *heap)
{
    float *a;
    if (h->acc_ws_off) {
        a = (float *)((char *)ws + h->acc_ws_off);
        *heap = 0;
    } else {
        a = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        *heap = 1;
    }
    if (a) memset(a, 0, (size_t)(n > 0 ? n : 0) * sizeof(float));
    return a;
}
