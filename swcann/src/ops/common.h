/* Shared machinery of the operator library (libopapi.so): phase-1 check
 * helpers with the "check <ID> failed" message scheme, tensor snapshots and
 * strided element access, the pooling output-size formula, and the generic
 * phase-2 runner (executor/stream/workspace validation, AI Core exceptions). */
#ifndef SWC_OPS_COMMON_H_
#define SWC_OPS_COMMON_H_
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "../meta/objects.h"
#include "../shared/swc_dtype.h"

#define SYS_WORKSPACE 32768u /* modelled "system workspace" of a launched kernel */
#define MAXR 8

typedef struct {
    const char *api;
    const swc_core *c;
    const swc_soc_info *soc;
} opctx;

/* snapshot of a tensor view, taken at phase 1 */
typedef struct {
    const char *name;
    int dtype, format, rank;
    size_t es;
    char *data;
    int64_t offset, dims[MAXR], strides[MAXR];
} tview;

/* logical 5-D (N, C, D, H, W) view over a tview */
typedef struct {
    char *data;
    int dtype;
    size_t es;
    int64_t off, n[5], s[5];
} lt5;

struct job_head;
typedef int (*run_fn)(struct aclOpExecutor *e, struct job_head *h, void *ws, void *stream);

/* common head (first member) of every executor payload */
typedef struct job_head {
    run_fn kernel;      /* the op's phase-2 computation */
    int empty;          /* early-return executor: nothing is launched */
    char reject[384];   /* kernel-level (tiling) rejection discarded at phase 1 */
    int nt;
    tview t[6];         /* every tensor the kernel touches */
    uint64_t acc_ws_off; /* >0: fp32 accumulator lives in the workspace at this offset */
    int deviations, deterministic;
} job_head;

/* ---- phase 1 ---- */
int op_begin(opctx *x, const char *api);
int op_fail(opctx *x, int status, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int op_live(opctx *x, int n, const void *const *h, const int *kinds, const char *const *names);
/* The null-pointer checks that open every op, in parameter order (161001).
 * id: one check id for all of them, or NULL for one id per parameter ("B1", "B2", ...). */
int op_nonnull(opctx *x, int n, const void *const *h, const char *const *names, const char *id);
static inline int is_regbase(const opctx *x) { return x->soc->arch == DAV_3510; }
static inline int64_t rk(const aclTensor *t) { return (int64_t)t->ndim; }
static inline int64_t dm(const aclTensor *t, int i) { return t->dims[i]; }
int64_t numel(const aclTensor *t); /* product; 0 if any dim is 0 */
int has_neg_dim(const aclTensor *t);
int shape_eq(const aclTensor *a, const aclTensor *b);
const char *shp(const aclTensor *t, char *buf, size_t n); /* "[1,2,3]" */
const char *fmt_name(int f);
int is_private_format(int f);
int dt_in(int dt, const int *list, int n);
const char *dt_list(const int *list, int n, char *buf, size_t cap);
int is_contiguous(const aclTensor *t);
static inline uint64_t alen(const aclIntArray *a) { return a->n; }
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode);
void snap(tview *v, const aclTensor *t, const char *name);
void set_reject(job_head *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* executor whose zeroed payload (size bytes, starting with job_head) is e->payload */
struct aclOpExecutor *exec_new(opctx *x, size_t size, run_fn run, uint64_t ws);
int finish(opctx *x, struct aclOpExecutor *e, uint64_t *workspaceSize, aclOpExecutor **executor);

/* ---- phase 2 ---- */
int exec_phase2(const char *api, void *ws, uint64_t wsSize, aclOpExecutor *e, void *stream);
void raise_exc(void *stream, const char *api, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
lt5 lt_make(const tview *v, const int axes[5]); /* axes[i] = view dim for logical i, or -1 */
static inline int64_t lt_at(const lt5 *t, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w)
{
    return t->off + n * t->s[0] + c * t->s[1] + d * t->s[2] + h * t->s[3] + w * t->s[4];
}
float ld_f(const lt5 *t, int64_t el);
void st_f(const lt5 *t, int64_t el, float v);
int64_t ld_i(const lt5 *t, int64_t el);
static inline float round_dt(float v, int dt)
{
    if (dt == ACL_FLOAT16) return swc_half_to_float(swc_float_to_half(v));
    if (dt == ACL_BF16) return swc_bf16_to_float(swc_float_to_bf16(v));
    return v;
}
/* scratch fp32 accumulator (workspace region when modelled, else heap) */
float *acc_get(job_head *h, void *ws, int64_t n, int *heap);
#endif
