/* Shared phase-2 kernels of the pooling-backward ops, and the phase-1 calls that set
 * them up.  Each kernel works on logical (N, C, D, H, W) views (lt_axes maps an op's
 * tensor layout onto them), so 2-D and 3-D ops of one family share one kernel.
 *
 * max-scatter (the max-pool family, spec C of each op):
 *   gradInput[n,c,p] = sum over outputs o with indices[n,c,o] == p of gradOutput[n,c,o]
 *   p = flat index into the un-padded D*H*W volume of its own (n,c).
 * average (the avg-pool family, AvgPool2dBackward spec C.2 = PyTorch):
 *   every window w adds gradOutput[w] / divisor(w) to each input element it covers;
 *   divisor = divisorOverride if non-zero, else the window size counted with padding
 *   (countIncludePad) or without it; windows are clipped at input + padding (ceil mode). */
#ifndef SWC_POOL_KERNELS_H_
#define SWC_POOL_KERNELS_H_
#include "common.h"

/* op_begin, then the parameter checks (B1..B8: null in parameter order, then liveness) of
 * the max-pool ops with the signature (gradOutput, self, indices, kernelSize, stride, padding,
 * dilation, ceilMode, gradInput): MaxPool2dWithIndices and MaxPool3dWithArgmax backward. */
int max_pool_begin(opctx *x, const char *api, const aclTensor *gradOutput, const aclTensor *self,
                   const aclTensor *indices, const aclIntArray *kernelSize, const aclIntArray *stride,
                   const aclIntArray *padding, const aclIntArray *dilation,
                   const aclTensor *gradInput);

/* ---- max-scatter: t[0]=gradOutput, t[1]=indices, t[2]=gradInput, t[3]=self ---- */
enum { ACC_FP32 = 0,   /* fp32 accumulation, one rounding at the end */
       ACC_DTYPE = 1,  /* deviation: AdaptiveMaxPool2d on 950, atomic adds in the tensor dtype */
       ACC_LWW = 2 };  /* deviation: A2/A3 Scatter template, plain stores */

typedef struct {
    job_head h;
    int ax[5];        /* logical (N,C,D,H,W) -> view dim, the same for all three tensors */
    int mode;
    int idx_cast_i32; /* Adaptive: INT64 indices are cast to INT32 first */
    int fp32_acc;     /* fp16/bf16 coinciding gradients summed in an on-chip fp32 buffer (no
                       * user workspace: the 950 max-pool kernels); fault acc_storage_dtype */
    int atomic;       /* coinciding gradients summed by atomic adds from several cores: the
                       * order, and so the fp32 bits, vary run to run (set via atomic_order) */
    int64_t pad[3];   /* (D, H, W) padding of the forward pass (max pools): fault indices_padded */
} scatter_job;

/* Workspace: the system workspace plus, when acc_elems > 0, an fp32 accumulator of that
 * many elements (A2/A3 fp16/bf16 overlap, spec C). NULL when the executor cannot be made. */
scatter_job *scatter_job_new(opctx *x, int empty, uint64_t acc_elems, const int ax[5],
                             const aclTensor *gradOutput, const aclTensor *indices,
                             const aclTensor *gradInput, const aclTensor *self);

/* ---- average: t[0]=gradOutput, t[1]=gradInput, t[2]=self ---- */
typedef struct avg_job avg_job;
/* what one window adds to each element it covers, given its gradient g, its size with
 * padding (pool) and without (area); NULL = g / avg_divisor() */
typedef float (*avg_value_fn)(const avg_job *j, float g, int64_t pool, int64_t area);

struct avg_job {
    job_head h;
    int ax[5];                 /* logical (N,C,D,H,W) -> view dim of both gradients */
    int64_t k[3], s[3], p[3];  /* window over (D, H, W); 2-D ops: k[0] = s[0] = 1, p[0] = 0 */
    int count_include_pad;
    int64_t divisor_override;  /* 0: none */
    avg_value_fn value;        /* deviation models hook in here */
    int store_fp16;            /* deviation models: FP16 rounding of the sum before the store */
    int bug_cip;               /* fault cip_divisor, set per launch */
    int atomic;                /* overlapping windows summed by atomic adds (set via atomic_order) */
    int bug_no_override;       /* fault divisor_override_ignored, set per launch */
    int bug_far_pad;           /* fault cip_far_pad_dropped, set per launch */
};

/* size: the op's own job type when it extends avg_job (avg_job first), else sizeof(avg_job) */
avg_job *avg_job_new(opctx *x, size_t size, int empty, uint64_t acc_elems, const int ax[5],
                     const aclTensor *gradOutput, const aclTensor *gradInput,
                     const aclTensor *self);
float avg_divisor(const avg_job *j, int64_t pool, int64_t area);

/* Whether a kernel that sums overlapping windows with atomic adds (spec C "Determinism" of each
 * op: the A2/A3 max-pool and AvgPool3DGrad tilings, the 950 adaptive SIMT kernel) runs them in a
 * launch-dependent order: only when deterministic mode is off, unless `honours_flag` is 0 (a
 * tiling that never reads it) or the fault deterministic_ignored is on. Called at phase 1,
 * where the tilings read GetDeterministic(). */
int atomic_order(const opctx *x, const job_head *h, int overlap, int honours_flag, const aclTensor *first);
#endif
