/* Shared phase-2 kernel of the three max-pool backward ops:
 *   gradInput[n,c,p] = sum over outputs o with indices[n,c,o] == p of gradOutput[n,c,o]
 * p = flat index into the un-padded D*H*W volume of its own (n,c) (spec C of
 * each op).  Tensors t[0]=gradOutput, t[1]=indices, t[2]=gradInput, t[3]=self. */
#ifndef SWC_SCATTER_KERNEL_H_
#define SWC_SCATTER_KERNEL_H_
#include "common.h"

enum { ACC_FP32 = 0,   /* fp32 accumulation, one rounding at the end */
       ACC_DTYPE = 1,  /* AdaptiveMaxPool2d on 950: atomic adds in the tensor dtype */
       ACC_LWW = 2 };  /* deviation: A2/A3 Scatter template, plain stores */

typedef struct {
    job_head h;
    int ax_go[5], ax_ix[5], ax_gi[5]; /* logical (N,C,D,H,W) -> view dim */
    int mode;
    int idx_cast_i32;                 /* Adaptive: INT64 indices are cast to INT32 first */
} scatter_job;

int scatter_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream);

/* Phase-1 side of the three ops: an executor running scatter_kernel on snapshots
 * of the four tensors. Workspace = the system workspace plus, when acc_elems > 0,
 * an fp32 accumulator of that many elements (A2/A3 fp16/bf16 overlap, spec C);
 * none at all for an empty input. NULL when the executor cannot be created. */
scatter_job *scatter_job_new(opctx *x, int empty, uint64_t acc_elems, const aclTensor *gradOutput,
                             const aclTensor *indices, const aclTensor *gradInput,
                             const aclTensor *self, struct aclOpExecutor **executor);
#endif
