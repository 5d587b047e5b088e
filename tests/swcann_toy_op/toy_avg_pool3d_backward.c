/* A second toy operator, without a header (a header beside the source is optional):
 * aclnnToyAvgPool3dBackward runs the shared average kernel of pool_kernels.h on 3-D
 * windows, which no in-tree op does, so tests/test_swcann.py can check that path
 * against PyTorch. Only the checks the kernel needs, not a model of a real op's. */
#include "pool_kernels.h"

#define API "aclnnToyAvgPool3dBackward"

ACL_FUNC_VISIBILITY aclnnStatus aclnnToyAvgPool3dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclIntArray *kernelSize,
    const aclIntArray *stride, const aclIntArray *padding, bool countIncludePad,
    int64_t divisorOverride, aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    opctx x;
    int st = op_begin(&x, API);
    if (st) return st;
    const op_param params[6] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_INTS(kernelSize),
                                PARAM_INTS(stride), PARAM_INTS(padding), PARAM_TENSOR(gradInput)};
    if ((st = op_params(&x, 6, params, NULL)) ||
        (st = chk_same_dtype(&x, "T7", NT(gradOutput), NT(self))) ||
        (st = chk_same_shape(&x, "T8", NT(gradInput), NT(self))) ||
        (st = chk_rank_in(&x, "T9", NT(self), 5, 5)) || (st = chk_rank_in(&x, "T9", NT(gradOutput), 5, 5)))
        return st;
    if (alen(kernelSize) != 3 || alen(stride) != 3 || alen(padding) != 3)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "T10", "kernelSize, stride, padding need 3 values");
    int ax[5];
    lt_axes(5, 3, 0, ax);
    avg_job *j = avg_job_new(&x, sizeof *j, numel(self) == 0, 0, ax, gradOutput, gradInput, self);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    memcpy(j->k, kernelSize->v, sizeof j->k);
    memcpy(j->s, stride->v, sizeof j->s);
    memcpy(j->p, padding->v, sizeof j->p);
    j->count_include_pad = countIncludePad;
    j->divisor_override = divisorOverride;
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnToyAvgPool3dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
