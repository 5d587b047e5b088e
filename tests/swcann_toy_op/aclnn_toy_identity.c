/* A toy sixth operator that lives outside swcann/src/ops/: tests/test_swcann.py builds
 * it in with build(op_dirs=[this directory]) to show that an op is one C file (plus an
 * optional header) written against the shared helpers of common.h. */
#include "aclnn_toy_identity.h"
#include "common.h"

#define API "aclnnToyIdentity"

static int toy_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    (void)e, (void)ws, (void)stream;
    const tview *in = &h->t[0], *out = &h->t[1];
    int64_t n = 1;
    for (int i = 0; i < in->rank; i++) n *= in->dims[i];
    memcpy(out->data + out->offset * (int64_t)out->es, in->data + in->offset * (int64_t)in->es,
           (size_t)n * in->es);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnToyIdentityGetWorkspaceSize(const aclTensor *self,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    opctx x;
    int st = op_begin(&x, API);
    if (st) return st;
    static const int dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    const op_param params[2] = {PARAM_TENSOR(self), PARAM_TENSOR(out)};
    if ((st = op_params(&x, 2, params, NULL)) ||
        (st = chk_dtype_in(&x, "T3", NT(self), dtypes, 3, SOC_NOTE_NONE)) ||
        (st = chk_same_dtype(&x, "T4", NT(out), NT(self))) ||
        (st = chk_same_shape(&x, "T5", NT(out), NT(self))) ||
        (st = chk_contiguous(&x, "T6", NT(self))) || (st = chk_contiguous(&x, "T7", NT(out))))
        return st;
    const named_tensor ts[2] = {NT(self), NT(out)};
    job_head *h = job_new(&x, sizeof *h, toy_kernel, numel(self) == 0, 0, 2, ts);
    if (!h) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    return finish(&x, h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnToyIdentity(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
