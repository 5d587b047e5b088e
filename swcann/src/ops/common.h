/* Shared machinery of the operator library (libopapi.so), the API an op file is
 * written against: the parameter and tensor checks with the "check <ID> failed"
 * message scheme, tensor snapshots and strided element access, the pooling
 * output-size formula, executor set-up and the generic phase-2 runner
 * (executor/stream/workspace validation, AI Core exceptions).
 * Op sources outside src/ops/ (build(op_dirs=...)) include it as "common.h". */
#ifndef SWC_OPS_COMMON_H_
#define SWC_OPS_COMMON_H_
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "../meta/objects.h"
#include "../shared/swc_half.h"
#include "../shared/swc_types.h"

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
    int half_via_double; /* fault perf_fp16_double: fp16 elements converted through double */
} lt5;

struct job_head;
typedef int (*run_fn)(struct aclOpExecutor *e, struct job_head *h, void *ws, void *stream);

/* common head (first member) of every executor payload */
typedef struct job_head {
    struct aclOpExecutor *exec; /* the executor this payload belongs to */
    run_fn kernel;      /* the op's phase-2 computation */
    int empty;          /* early-return executor: nothing is launched */
    char reject[384];   /* kernel-level (tiling) rejection discarded at phase 1 */
    int nt;
    tview t[6];         /* every tensor the kernel touches */
    uint64_t acc_ws_off; /* >0: fp32 accumulator lives in the workspace at this offset */
    int deviations, deterministic;
    uint64_t traffic;    /* bytes the running kernel moved in device memory (read + written) */
} job_head;

/* ---- phase 1 ---- */
/* a parameter of the op, as the null and liveness checks see it */
typedef struct {
    const void *h;
    const char *name;
    int kind;     /* enum swc_kind */
    int nullable; /* not null-checked (still liveness-checked when given) */
} op_param;
#define PARAM_TENSOR(p) {(p), #p, SWC_K_TENSOR, 0}
#define PARAM_INTS(p) {(p), #p, SWC_K_INTARRAY, 0}
#define PARAM_INTS_NULLABLE(p) {(p), #p, SWC_K_INTARRAY, 1}

/* a tensor argument and its parameter name, as the messages print it */
typedef struct {
    const aclTensor *t;
    const char *name;
} named_tensor;
#define NT(p) ((named_tensor){(p), #p})

/* how a dtype-list failure describes the SoC (each op's messages keep their own wording) */
enum soc_note { SOC_NOTE_NONE, SOC_NOTE_FAMILY, SOC_NOTE_SOC, SOC_NOTE_ARCH };

int op_begin(opctx *x, const char *api);
int op_fail(opctx *x, int status, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The checks that open every op: null pointers in parameter order (161001; id: one
 * check id for all of them, or NULL for one id per parameter "B1", "B2", ...), then
 * every non-null handle must be a live object of its kind (561103, not a CANN check). */
int op_params(opctx *x, int n, const op_param *p, const char *null_id);
/* Each returns 0, or the op's 161002 status after recording "check <id> failed: ...". */
int chk_dtype_in(opctx *x, const char *id, named_tensor a, const int *list, int n, int note);
int chk_same_dtype(opctx *x, const char *id, named_tensor a, named_tensor b);
int chk_same_format(opctx *x, const char *id, int n, const named_tensor *ts);
/* tail: appended to the message (e.g. the formats the op does support) */
int chk_no_private_format(opctx *x, const char *id, int n, const named_tensor *ts, const char *tail);
int chk_rank_in(opctx *x, const char *id, named_tensor a, int lo, int hi);
int chk_same_shape(opctx *x, const char *id, named_tensor a, named_tensor b);
int chk_contiguous(opctx *x, const char *id, named_tensor a);

/* ---- the generic L0 operators' format-label rules (shared/spec/l0_format_rules.md) ----
 * ReFormat (R1), ViewCopy (R2) and TransData (R3) compare a tensor's format label with its view
 * rank. An op runs them after every L2 check of its path and after its empty-tensor return; their
 * ids are "L0.R<n>", with a suffix where one rule is reached on several paths or tensors. */
/* TD:48: the view rank a label fixes (NCL 3; NCHW, NHWC, HWCN, FRACTAL_Z 4; NCDHW, NDHWC, DHWCN,
 * NC1HWC0 5; NDC1HWC0 6), 0 for a label with none (ND, FRACTAL_NZ, any other value) */
int format_fixed_rank(int format);
/* R1 (TD:141-161): ReFormat of a view of `rank` to `format` is refused */
static inline int reformat_refuses(int format, int rank)
{
    int fixed = format_fixed_rank(format);
    return fixed != 0 && fixed != rank;
}
/* R2 (CT:647-653): the final copy refuses a result labelled `result` into an output labelled
 * `out` (the labels differ and the result is not ND) */
static inline int viewcopy_refuses(int result, int out)
{
    return result != ACL_FORMAT_ND && result != out;
}
/* Each returns 0, or its status after recording "check <id> failed: <step>: <the real log line>".
 * R1: relabelling a view of `rank` to `format` (561103, ACLNN_ERR_INNER_NULLPTR); step: which
 * ReFormat it is; who: the tensor, its label and rank, as the message names them. */
int chk_l0_reformat(opctx *x, const char *id, const char *step, int format, int rank, const char *who);
/* R2: the result, labelled `result`, copied into `out` (status: what the op makes of the nullptr) */
int chk_l0_viewcopy(opctx *x, const char *id, int status, int result, named_tensor out);
/* R3: TransData of `src` to `dst`: src's storage rank (its view rank, after Contiguous) must fit
 * the label src carries (status: what the op makes of the nullptr) */
int chk_l0_transdata(opctx *x, const char *id, int status, named_tensor src, int dst);
static inline int is_regbase(const opctx *x) { return x->soc->arch == DAV_3510; }
static inline int64_t rk(const aclTensor *t) { return (int64_t)t->ndim; }
static inline int64_t dm(const aclTensor *t, int i) { return t->dims[i]; }
int64_t numel(const aclTensor *t); /* product; 0 if any dim is 0 */
int has_neg_dim(const aclTensor *t);
int shape_eq(const aclTensor *a, const aclTensor *b);
const char *shp(const aclTensor *t, char *buf, size_t n); /* "[1,2,3]" */
int dt_in(int dt, const int *list, int n);
const char *dt_list(const int *list, int n, char *buf, size_t cap);
static inline uint64_t alen(const aclIntArray *a) { return a->n; }
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode);
/* view dim of each logical (N, C, D, H, W) axis, -1 where absent, for a tensor of this rank
 * with `spatial` (2 or 3) spatial dims, channel first or last; N present when
 * rank == spatial + 2 */
void lt_axes(int rank, int spatial, int channel_last, int ax[5]);
void set_reject(job_head *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The executor of every op: a zeroed payload of `size` bytes (starting with job_head)
 * running `run` on snapshots of the nt tensors (h->t[i] in the order given); workspace =
 * the system workspace plus an fp32 accumulator of acc_elems elements, none at all when
 * empty. NULL when it cannot be created. */
void *job_new(opctx *x, size_t size, run_fn run, int empty, uint64_t acc_elems, int nt,
              const named_tensor *ts);
/* registers the executor and hands it out: the last call of every phase 1 */
int finish(opctx *x, job_head *h, uint64_t *workspaceSize, aclOpExecutor **executor);

/* SWCANN_FAULTS (swcann/README.md): is the named library bug switched on for this call?
 * Phase 1: the op's first tensor (gradOutput; NULL allowed) decides a numel= trigger. */
int op_bug(const opctx *x, const char *name, const aclTensor *first);

/* ---- phase 2 ---- */
/* the same question inside a kernel: the launch's api and its first tensor */
int job_bug(const job_head *h, const char *name);
int exec_phase2(const char *api, void *ws, uint64_t wsSize, aclOpExecutor *e, void *stream);
void raise_exc(void *stream, const char *api, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 1 when [p, p + bytes) lies in one live device block, else 0 with why filled */
int dev_mem_ok(const void *p, uint64_t bytes, char *why, size_t n);
lt5 lt_make(const tview *v, const int axes[5]); /* axes[i] = view dim for logical i, or -1 */
/* the same view with the launch's performance faults applied (its element accessors) */
lt5 lt_job(const job_head *h, const tview *v, const int axes[5]);
static inline int64_t lt_numel(const lt5 *t) { return t->n[0] * t->n[1] * t->n[2] * t->n[3] * t->n[4]; }
/* element offset of the flat-th element (row-major over n[]) derived by division, as a scalar
 * loop without incremental addressing derives it: the slow paths of the perf faults */
int64_t lt_at_flat(const lt5 *t, int64_t flat);
void lt_split(const lt5 *t, int64_t flat, int64_t i[5]); /* the (n, c, d, h, w) of a flat index */
/* the view keeps C innermost (stride 1, C > 1): NHWC data or a channels-last view */
static inline int lt_channel_last(const lt5 *t) { return t->n[1] > 1 && t->s[1] == 1; }
/* the kernel moved `bytes` of device memory (swcann/README.md "Device time": the byte model) */
static inline void job_traffic(job_head *h, uint64_t bytes) { h->traffic += bytes; }
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
/* An index outside [0, limit) would make the real kernel access memory out of bounds:
 * raises the AI Core exception ("... is outside <range> [0, limit): <access>") and
 * returns 0; nothing may be written then. ext: the (N,C,D,H,W) extent of ix to scan. */
int indices_in_range(const lt5 *ix, const int64_t ext[5], int as_i32, int64_t limit,
                     void *stream, const char *api, const char *range, const char *access);
/* writes an fp32 sum laid out plane by plane (n, c, then d, h, w) into t, rounded to
 * round_to first when >= 0 (an aclDataType); h: the job (its faults) */
void store_planes(job_head *h, const lt5 *t, const float *acc, int round_to);
/* scratch fp32 accumulator (workspace region when modelled, else heap) */
float *acc_get(job_head *h, void *ws, int64_t n, int *heap);
#endif
