#include "common.h"
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define KERNEL_CORES 48 /* the block dimension the modelled tilings spread a launch over */

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

int op_bug(const opctx *x, const char *name, const aclTensor *first)
{
    return x->c->fault_on(name, x->api, first ? numel(first) : -1);
}

int op_params(opctx *x, int n, const op_param *p, const char *null_id)
{
    for (int i = 0; i < n; i++) {
        if (p[i].h || p[i].nullable) continue;
        char own[16];
        snprintf(own, sizeof own, "B%d", i + 1);
        /* fault nullptr_as_invalid: the status of the pre-fix AdaptiveMaxPool2d (defaa3f97) */
        int st = op_bug(x, "nullptr_as_invalid", p[0].kind == SWC_K_TENSOR ? p[0].h : NULL)
                     ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_PARAM_NULLPTR;
        return op_fail(x, st, null_id ? null_id : own, "%s is nullptr", p[i].name);
    }
    /* Not a CANN check: a non-null handle that is not a live object would crash the
     * real library; swcann reports it (561103) so harness bugs surface. */
    static const char *kn[] = {"", "aclTensor", "aclIntArray", "aclBoolArray", "aclFloatArray",
                               "aclScalar", "aclOpExecutor"};
    for (int i = 0; i < n; i++) {
        if (p[i].h && x->c->obj_kind(p[i].h) != p[i].kind) {
            swc_msgf(x->c, "EZ1001", "[%s] check ABI failed: %s (%p) is not a live %s "
                     "(destroyed or foreign pointer; real CANN would crash)",
                     x->api, p[i].name, p[i].h, kn[p[i].kind]);
            return ACLNN_ERR_INNER_NULLPTR;
        }
    }
    return 0;
}

int chk_dtype_in(opctx *x, const char *id, named_tensor a, const int *list, int n, int note)
{
    if (dt_in(a.t->dtype, list, n)) return 0;
    char l[160];
    const char *dt = swc_dtype_name(a.t->dtype), *soc = x->soc->soc_name, *fam = x->soc->family;
    dt_list(list, n, l, sizeof l);
    switch (note) {
    case SOC_NOTE_NONE:
        return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s dtype %s not in %s", a.name, dt, l);
    case SOC_NOTE_FAMILY:
        return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s dtype %s not in %s for %s", a.name, dt,
                       l, fam);
    case SOC_NOTE_SOC:
        return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s dtype %s not in supported list %s for "
                       "%s (%s)", a.name, dt, l, fam, soc);
    default:
        return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s dtype %s not in supported list %s for "
                       "%s (%s, NpuArch DAV_%d)", a.name, dt, l, fam, soc, x->soc->arch);
    }
}

int chk_same_dtype(opctx *x, const char *id, named_tensor a, named_tensor b)
{
    if (a.t->dtype == b.t->dtype) return 0;
    return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s dtype %s != %s dtype %s", a.name,
                   swc_dtype_name(a.t->dtype), b.name, swc_dtype_name(b.t->dtype));
}

int chk_same_format(opctx *x, const char *id, int n, const named_tensor *ts)
{
    int same = 1;
    for (int i = 1; i < n; i++) same = same && ts[i].t->format == ts[0].t->format;
    if (same) return 0;
    char l[256];
    size_t o = 0;
    for (int i = 0; i < n && o < sizeof l; i++)
        o += (size_t)snprintf(l + o, sizeof l - o, "%s%s %s", i ? ", " : "", ts[i].name,
                              swc_format_name(ts[i].t->format));
    return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "storage formats differ: %s", l);
}

int chk_no_private_format(opctx *x, const char *id, int n, const named_tensor *ts, const char *tail)
{
    for (int i = 0; i < n; i++)
        if (swc_format_is_private(ts[i].t->format))
            return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s has private format %s%s", ts[i].name,
                           swc_format_name(ts[i].t->format), tail);
    return 0;
}

int chk_rank_in(opctx *x, const char *id, named_tensor a, int lo, int hi)
{
    if (rk(a.t) >= lo && rk(a.t) <= hi) return 0;
    char l[64];
    size_t o = (size_t)snprintf(l, sizeof l, "{");
    for (int r = lo; r <= hi && o < sizeof l; r++)
        o += (size_t)snprintf(l + o, sizeof l - o, r > lo ? ", %d" : "%d", r);
    if (o < sizeof l) snprintf(l + o, sizeof l - o, "}");
    return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s rank %lld not in %s", a.name,
                   (long long)rk(a.t), l);
}

int chk_same_shape(opctx *x, const char *id, named_tensor a, named_tensor b)
{
    if (shape_eq(a.t, b.t)) return 0;
    char sa[128], sb[128];
    return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s shape %s != %s shape %s", a.name,
                   shp(a.t, sa, sizeof sa), b.name, shp(b.t, sb, sizeof sb));
}

/* opbase op::IsContiguous (hicann/opbase, opdev/tensor_view_utils: its four rules): a private
 * storage format, or a view of 0 or 1 elements, is contiguous whatever its strides; otherwise
 * row-major strides with size-1 dims skipped. The offset does not matter. */
int chk_contiguous(opctx *x, const char *id, named_tensor a)
{
    if (swc_format_is_private(a.t->format)) return 0;
    int64_t size = 1;       /* GetShapeSize(); a described-only view may overflow int64 */
    int ovf = 0;
    for (uint64_t i = 0; i < a.t->ndim; i++) {
        if (a.t->dims[i] == 0) return 0;
        ovf |= __builtin_mul_overflow(size, a.t->dims[i], &size);
    }
    if (!ovf && size == 1) return 0;
    int64_t expect = 1;
    for (uint64_t i = a.t->ndim; i-- > 0;) {
        if (a.t->dims[i] == 1) continue;
        if (a.t->strides[i] != expect) {
            char sa[128];
            return op_fail(x, ACLNN_ERR_PARAM_INVALID, id, "%s must be contiguous (shape %s)",
                           a.name, shp(a.t, sa, sizeof sa));
        }
        expect *= a.t->dims[i];
    }
    return 0;
}

/* aclFormat's DHWCN (31 in the real acl_base.h): not in acl_abi.md 3.2, so acl.h has no name for
 * it, but aclCreateTensor takes any value */
#define SWC_FORMAT_DHWCN 31

int format_fixed_rank(int format)
{
    switch (format) { /* kFormatRank through kFormatIndex (TD:48-113), the rows the spec lists */
    case ACL_FORMAT_NCL:
        return 3;
    case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_HWCN: case ACL_FORMAT_FRACTAL_Z:
        return 4;
    case ACL_FORMAT_NCDHW: case ACL_FORMAT_NDHWC: case SWC_FORMAT_DHWCN: case ACL_FORMAT_NC1HWC0:
        return 5;
    case ACL_FORMAT_NDC1HWC0:
        return 6;
    default: /* ND, FRACTAL_NZ and every other label: no fixed rank, never refused */
        return 0;
    }
}

int chk_l0_reformat(opctx *x, const char *id, const char *step, int format, int rank, const char *who)
{
    if (!reformat_refuses(format, rank)) return 0;
    /* TD:149; the L2 turns ReFormat's nullptr into 561103 */
    return op_fail(x, ACLNN_ERR_INNER_NULLPTR, id, "%s: input tensor shape's rank does not match "
                   "format, format is: %s (rank %d), shape rank is: %d (%s)", step,
                   swc_format_name(format), format_fixed_rank(format), rank, who);
}

int chk_l0_viewcopy(opctx *x, const char *id, int status, int result, named_tensor out)
{
    if (!viewcopy_refuses(result, out.t->format)) return 0;
    /* CT:650 */
    return op_fail(x, status, id, "ViewCopy of the %lld-D result (labelled %s) into %s (labelled %s): "
                   "Input tensor's format[%s] should be same with output's format[%s]",
                   (long long)rk(out.t), swc_format_name(result), out.name,
                   swc_format_name(out.t->format), swc_format_name(result),
                   swc_format_name(out.t->format));
}

int chk_l0_transdata(opctx *x, const char *id, int status, named_tensor src, int dst)
{
    /* after Contiguous the storage shape is the view shape (CT:51-57, 589-632) */
    if (!reformat_refuses(src.t->format, (int)rk(src.t))) return 0;
    char s[128];
    /* TD:277, via CheckSrcTensorValid (TD:285-295) */
    return op_fail(x, status, id, "TransData of %s to %s: storage shape rank does not match the "
                   "source format: Input tensor format not match it's shape, format is: %s, shape "
                   "is: %s (%s is labelled %s, which fixes rank %d; storage rank %lld)", src.name,
                   swc_format_name(dst), swc_format_name(src.t->format), shp(src.t, s, sizeof s),
                   src.name, swc_format_name(src.t->format), format_fixed_rank(src.t->format),
                   (long long)rk(src.t));
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

static void snap(tview *v, const aclTensor *t, const char *name)
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

void lt_axes(int rank, int spatial, int channel_last, int ax[5])
{
    int d = 0;
    ax[0] = rank == spatial + 2 ? d++ : -1;
    if (!channel_last) ax[1] = d++;
    for (int i = 0; i < 3; i++) ax[2 + i] = i < 3 - spatial ? -1 : d++;
    if (channel_last) ax[1] = d++;
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

void *job_new(opctx *x, size_t size, run_fn run, int empty, uint64_t acc_elems, int nt,
              const named_tensor *ts)
{
    struct aclOpExecutor *e = calloc(1, sizeof *e);
    job_head *h = calloc(1, size);
    if (!e || !h) { free(e); free(h); return NULL; }
    uint64_t acc = empty ? 0 : acc_elems * sizeof(float);
    h->exec = e;
    h->kernel = run;
    h->empty = empty;
    h->acc_ws_off = acc ? SYS_WORKSPACE : 0;
    h->deviations = x->c->deviations();
    h->deterministic = (int)x->c->deterministic();
    h->nt = nt;
    for (int i = 0; i < nt; i++) snap(&h->t[i], ts[i].t, ts[i].name);
    e->api = x->api;
    e->workspace = empty ? 0 : SYS_WORKSPACE + acc;
    /* fault workspace_undersized: the accumulator is sized one 16-float tile short, so the kernel
     * writes 64 bytes past the workspace phase 1 asked for (into whatever the caller put there) */
    if (acc > 64 && op_bug(x, "workspace_undersized", nt > 0 ? ts[0].t : NULL)) e->workspace -= 64;
    e->run = run_adapter;
    e->destroy = destroy_exec;
    e->payload = h;
    return h;
}

static int is_dir(const char *path)
{
    struct stat st;
    return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* nnopbase's kernel directory (spec acl_abi 1.6): $ASCEND_HOME_PATH/opp_latest if it exists, else
 * $ASCEND_OPP_PATH; neither -> 561107 when phase 1 selects a kernel. Read at every call, as a
 * process that fixes its environment after a failure may retry. */
static int opp_path_found(opctx *x)
{
    char latest[4096];
    const char *home = getenv("ASCEND_HOME_PATH");
    if (home && snprintf(latest, sizeof latest, "%s/opp_latest", home) < (int)sizeof latest && is_dir(latest))
        return 1;
    if (is_dir(getenv("ASCEND_OPP_PATH")))
        return 1;
    swc_msgf(x->c, "EZ1001", "[%s] Get path and read binary_info_config.json failed, please check if the "
             "opp_kernel package is installed! (neither $ASCEND_HOME_PATH/opp_latest nor $ASCEND_OPP_PATH "
             "is a directory)", x->api);
    return 0;
}

int finish(opctx *x, job_head *h, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    struct aclOpExecutor *e = h->exec;
    if (!h->empty && !opp_path_found(x)) { destroy_exec(e); return ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND; }
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

/* fault input_as_scratch: the kernel keeps its scratch data (0x5A bytes) in the first 32 bytes
 * of gradOutput's view, which an aclnn kernel must treat as read-only */
static void scribble_first_input(const job_head *h)
{
    const tview *t = &h->t[0];
    int64_t last = t->offset; /* the view's last element, so the scribble stays inside it */
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] <= 0) return;
        last += (t->dims[i] - 1) * t->strides[i];
    }
    size_t span = (size_t)(last - t->offset + 1) * t->es;
    memset(t->data + t->offset * (int64_t)t->es, 0x5A, span < 32 ? span : 32);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Clears n bytes at p the way a core clears device memory: the stores go around the host's
 * caches (non-temporal), so the clearing costs memory bandwidth, as on the device, and not what
 * a cache-resident memset would cost. */
static void gm_clear(void *p, size_t n)
{
    size_t done = 0;
#if defined(__x86_64__)
    for (long long *q = p; done + 8 <= n && ((uintptr_t)p & 7u) == 0; done += 8) __builtin_ia32_movnti64(q++, 0);
    __builtin_ia32_sfence();
#elif defined(__aarch64__)
    for (char *q = p; done + 16 <= n && ((uintptr_t)p & 15u) == 0; done += 16, q += 16)
        __asm__ volatile("stnp xzr, xzr, [%0]" : : "r"(q) : "memory");
#endif
    memset((char *)p + done, 0, n - done);
}

/* fault perf_workspace_rezero: every core of the launch clears the whole workspace (system
 * workspace and fp32 accumulator) instead of its own share of the accumulator */
static void rezero_workspace(struct aclOpExecutor *e, job_head *h, void *ws)
{
    if (!h->acc_ws_off || !job_bug(h, "perf_workspace_rezero")) return;
    for (int core_id = 0; core_id < KERNEL_CORES; core_id++) gm_clear(ws, e->workspace);
    job_traffic(h, (uint64_t)KERNEL_CORES * e->workspace);
}

/* the kernel as the device runs it: its thread CPU time and the bytes it moves advance the
 * stream's device clock (phase-2 checks and the launch itself are host work, outside it) */
static int timed_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    uint64_t t0 = thread_cpu_ns();
    h->traffic = 0;
    rezero_workspace(e, h, ws);
    int st = h->kernel(e, h, ws, stream);
    core()->kernel_time(stream, thread_cpu_ns() - t0, h->traffic);
    return st;
}

static int run_adapter(struct aclOpExecutor *e, void *ws, uint64_t wsSize, void *stream)
{
    (void)wsSize;
    job_head *h = e->payload;
    if (h->empty) {
        /* fault empty_launches: the early return is missing and a kernel is launched over no
         * data (harmless to memory, visible to a profiler, and a wasted launch per call) */
        if (job_bug(h, "empty_launches")) core()->count_launch(stream);
        return ACLNN_SUCCESS;
    }
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
    core()->count_launch(stream);
    int st = timed_kernel(e, h, ws, stream);
    if (job_bug(h, "input_as_scratch")) scribble_first_input(h);
    return st;
}

/* elements of the job's first tensor (gradOutput in every op), -1 if none: fault triggers */
static int64_t job_numel(const job_head *h)
{
    if (!h || h->nt < 1) return -1;
    int64_t n = 1;
    for (int i = 0; i < h->t[0].rank; i++) n *= h->t[0].dims[i];
    return n;
}

static int64_t launch_numel(const aclOpExecutor *e) { return job_numel(e->payload); }

int job_bug(const job_head *h, const char *name)
{
    return core()->fault_on(name, h->exec->api, job_numel(h));
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
    } else if (e->launches > 0 && c->fault_on("relaunch_no_kernel", api, launch_numel(e))) {
        /* fault relaunch_no_kernel: the tiling data is released after the first launch, and a
         * later launch of the repeatable executor finds nothing to run and reports success */
        st = ACLNN_SUCCESS;
    } else if (!c->fault_phase2(api, launch_numel(e), rs)) { /* SWCANN_FAULTS */
        /* fault relaunch_stale_workspace: the workspace address is taken into the executor at the
         * first launch, and later launches of a repeatable executor use that block, not theirs */
        if (e->launches == 0) e->first_ws = ws;
        else if (e->first_ws && c->fault_on("relaunch_stale_workspace", api, launch_numel(e))) ws = e->first_ws;
        st = e->run(e, ws, wsSize, rs);
        /* fault phase2_slow: a tiling that puts the whole job on one core; the kernel is
         * idempotent (it zeroes its accumulator and overwrites its output), so only time grows */
        for (int i = 1; st == ACLNN_SUCCESS && i < 10 && c->fault_on("phase2_slow", api, launch_numel(e)); i++)
            st = e->run(e, ws, wsSize, rs);
    } else {
        st = ACLNN_SUCCESS; /* the launch is accepted; the device reports the failure at sync */
    }
    e->launches++;
    /* a non-repeatable executor is consumed by its (first) phase-2 call */
    if (!e->repeatable && c->obj_del(e, SWC_K_EXECUTOR) == 0) e->destroy(e);
    return st;
}

int dev_mem_ok(const void *p, uint64_t bytes, char *why, size_t n)
{
    return core()->mem_check(p, bytes, why, n) == 0;
}

lt5 lt_make(const tview *v, const int axes[5])
{
    lt5 t;
    t.half_via_double = 0;
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

lt5 lt_job(const job_head *h, const tview *v, const int axes[5])
{
    lt5 t = lt_make(v, axes);
    /* fault perf_fp16_double: the fp16 path converts through double (bit-identical, slower) */
    t.half_via_double = t.dtype == ACL_FLOAT16 && job_bug(h, "perf_fp16_double");
    return t;
}

void lt_split(const lt5 *t, int64_t flat, int64_t i[5])
{
    for (int a = 4; a >= 0; a--) {
        i[a] = flat % t->n[a];
        flat /= t->n[a];
    }
}

int64_t lt_at_flat(const lt5 *t, int64_t flat)
{
    int64_t i[5];
    lt_split(t, flat, i);
    return lt_at(t, i[0], i[1], i[2], i[3], i[4]);
}

float ld_f(const lt5 *t, int64_t el)
{
    const char *p = t->data + el * (int64_t)t->es;
    switch (t->dtype) {
    case ACL_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case ACL_FLOAT16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return t->half_via_double ? swc_half_to_float_via_double(v) : swc_half_to_float(v);
    }
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
    case ACL_FLOAT16: {
        uint16_t h = t->half_via_double ? swc_float_to_half_via_double(v) : swc_float_to_half(v);
        memcpy(p, &h, 2);
        break;
    }
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

int indices_in_range(const lt5 *ix, const int64_t ext[5], int as_i32, int64_t limit,
                     void *stream, const char *api, const char *range, const char *access)
{
    for (int64_t n = 0; n < ext[0]; n++)
        for (int64_t c = 0; c < ext[1]; c++)
            for (int64_t d = 0; d < ext[2]; d++)
                for (int64_t y = 0; y < ext[3]; y++)
                    for (int64_t x = 0; x < ext[4]; x++) {
                        int64_t v = ld_i(ix, lt_at(ix, n, c, d, y, x));
                        if (as_i32) v = (int32_t)v;
                        if (v >= 0 && v < limit) continue;
                        raise_exc(stream, api, "tensor indices value %lld at [n=%lld, c=%lld, "
                                  "d=%lld, h=%lld, w=%lld] is outside %s [0, %lld): %s",
                                  (long long)v, (long long)n, (long long)c, (long long)d,
                                  (long long)y, (long long)x, range, (long long)limit, access);
                        return 0;
                    }
    return 1;
}

/* fault half_store_truncates: the fp16/bf16 conversion of the store rounds toward zero (a
 * mantissa cut) instead of to nearest even: every inexact result loses up to one ulp, always
 * toward zero, a bias the single benchmark's error balance measures */
static float toward_zero(float v, int dt)
{
    float r = round_dt(v, dt);
    if ((dt != ACL_FLOAT16 && dt != ACL_BF16) || !isfinite(v) || fabsf(r) <= fabsf(v)) return r;
    uint16_t b = dt == ACL_FLOAT16 ? swc_float_to_half(v) : swc_float_to_bf16(v);
    b--; /* one step toward zero: |r| > |v| >= 0, so the magnitude is not 0 */
    return dt == ACL_FLOAT16 ? swc_half_to_float(b) : swc_bf16_to_float(b);
}

/* fault half_subnormal_ftz: an fp16/bf16 result below the dtype's smallest normal is stored
 * as a zero of its sign (a vector unit in flush-to-zero mode) */
static float flush_subnormal(float v, int dt)
{
    float tiny = dt == ACL_FLOAT16 ? 6.103515625e-05f : dt == ACL_BF16 ? FLT_MIN : 0.0f;
    float r = round_dt(v, dt);
    return r != 0.0f && fabsf(r) < tiny ? copysignf(0.0f, r) : v;
}

/* what store_planes does to each element's value: the library faults that act on the store */
typedef struct { int round_to, onto_old, trunc, ftz; } store_mode;

static float stored_value(const store_mode *m, const lt5 *t, int64_t at, float v)
{
    v = m->round_to >= 0 ? round_dt(v, m->round_to) : v;
    if (m->onto_old) v += ld_f(t, at);
    if (m->trunc) v = toward_zero(v, t->dtype);
    if (m->ftz) v = flush_subnormal(v, t->dtype);
    return v;
}

/* The scalar path's store: it writes through the data cache, then cleans and invalidates the
 * element's line so the write reaches memory (what AscendC's DataCacheCleanAndInvalid does after
 * a scalar GM write); every element pays a memory round trip, as a scalar GM access does. */
static void scalar_store(const lt5 *t, int64_t at, float v)
{
    st_f(t, at, v);
    char *p = t->data + at * (int64_t)t->es;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_clflush(p);
    __builtin_ia32_mfence();
#elif defined(__aarch64__)
    __asm__ volatile("dc civac, %0\n\tdsb ish" : : "r"(p) : "memory");
#else
    __asm__ volatile("" : : "r"(p) : "memory");
#endif
}

/* How store_planes addresses a row. The vector path stores whole 32-byte blocks with
 * addresses stepped along the row. Fault perf_unaligned_width: a width that is not a multiple of
 * 16 makes the kernel derive every element's address by division (no stepped rows); fault
 * perf_tail_scalar: the last partial block of each row goes element by element through the
 * scalar path (scalar_store). */
typedef struct { int divide_all; int64_t scalar_from; } row_path;

static row_path row_path_of(const job_head *h, const lt5 *t)
{
    int64_t W = t->n[4], per_block = 32 / (int64_t)t->es;
    row_path r = {W % 16 != 0 && job_bug(h, "perf_unaligned_width"), W};
    if (per_block > 0 && W % per_block != 0 && job_bug(h, "perf_tail_scalar")) r.scalar_from = W - W % per_block;
    return r;
}

/* fault perf_grad_input_extra_pass: gradInput is cleared in a pass of its own before the store
 * (which then overwrites every element) */
static void clear_pass(job_head *h, const lt5 *t)
{
    int64_t total = lt_numel(t);
    for (int64_t i = 0; i < total; i++) st_f(t, lt_at_flat(t, i), 0.0f);
    job_traffic(h, (uint64_t)total * t->es);
}

void store_planes(job_head *h, const lt5 *t, const float *acc, int round_to)
{
    int64_t i = 0, stop = -1, total = lt_numel(t);
    store_mode m = {round_to, 0, job_bug(h, "half_store_truncates"), job_bug(h, "half_subnormal_ftz")};
    /* fault grad_input_not_zeroed: the output is never cleared before the kernel adds into it,
     * so every element keeps what the buffer held plus its gradient */
    m.onto_old = job_bug(h, "grad_input_not_zeroed");
    /* fault relaunch_not_zeroed: the clearing is done once per executor (an "initialised" flag
     * kept in it), so a repeatable executor's second launch adds onto the buffer's old bytes */
    if (h->exec->launches > 0 && job_bug(h, "relaunch_not_zeroed")) m.onto_old = 1;
    if (job_bug(h, "tail_unwritten")) /* only whole 32-byte blocks of the output are stored */
        stop = total * (int64_t)t->es / 32 * 32 / (int64_t)t->es;
    if (job_bug(h, "perf_grad_input_extra_pass")) clear_pass(h, t);
    /* written, read back when added onto, and the accumulator read when it is in the workspace */
    job_traffic(h, (uint64_t)total * (t->es * (m.onto_old ? 2u : 1u) + (h->acc_ws_off ? 4u : 0u)));
    row_path path = row_path_of(h, t);
    /* fault write_past_end: each row's store is one element too long (a tail-mask bug). Where
     * that element is not in a live block the write is dropped: on a device it would land in
     * memory nobody checks, here it would corrupt the simulator's own heap. */
    int past_end = job_bug(h, "write_past_end");
    char why[256];
    for (int64_t n = 0; n < t->n[0]; n++)
        for (int64_t c = 0; c < t->n[1]; c++)
            for (int64_t d = 0; d < t->n[2]; d++)
                for (int64_t y = 0; y < t->n[3]; y++) {
                    float v = 0.0f;
                    for (int64_t x = 0; x < t->n[4]; x++, i++) {
                        if (i == stop) return;
                        int64_t at = path.divide_all || x >= path.scalar_from ? lt_at_flat(t, i)
                                                                              : lt_at(t, n, c, d, y, x);
                        v = stored_value(&m, t, at, acc[i]);
                        if (x >= path.scalar_from) scalar_store(t, at, v);
                        else st_f(t, at, v);
                    }
                    int64_t over = lt_at(t, n, c, d, y, t->n[4]);
                    if (past_end && t->n[4] > 0 && over >= 0 &&
                        dev_mem_ok(t->data + over * (int64_t)t->es, t->es, why, sizeof why))
                        st_f(t, over, v);
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
    /* fault acc_workspace_not_zeroed: the accumulator in the caller's workspace is used as it
     * comes (whatever the allocation held), not cleared first */
    if (a && !(h->acc_ws_off && job_bug(h, "acc_workspace_not_zeroed"))) {
        memset(a, 0, (size_t)(n > 0 ? n : 0) * sizeof(float));
        if (h->acc_ws_off) job_traffic(h, (uint64_t)(n > 0 ? n : 0) * sizeof(float)); /* in device memory */
    }
    return a;
}
