/* aclnnToySignBackward, the software CANN side of the toy sixth operator in this directory
 * (toy_sign_backward.yaml): gradInput = gradOutput * sign(self), element for element, any
 * strides. Built in with SWCANN_OP_DIRS=tests/toy_op (or build(op_dirs=[...])); no header:
 * the harness calls it through ctypes, and a header beside it is optional. */
#include "common.h"

#define API "aclnnToySignBackward"

typedef struct {
    job_head h; /* t[0] = gradOutput, t[1] = self, t[2] = gradInput */
    int ax[5];  /* rank <= 5: the view dims right-aligned on the logical axes */
} sign_job;

static int sign_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    (void)e, (void)ws, (void)stream;
    sign_job *j = (sign_job *)h;
    lt5 go = lt_make(&h->t[0], j->ax), x = lt_make(&h->t[1], j->ax), gi = lt_make(&h->t[2], j->ax);
    int64_t i[5];
    for (i[0] = 0; i[0] < gi.n[0]; i[0]++)
        for (i[1] = 0; i[1] < gi.n[1]; i[1]++)
            for (i[2] = 0; i[2] < gi.n[2]; i[2]++)
                for (i[3] = 0; i[3] < gi.n[3]; i[3]++)
                    for (i[4] = 0; i[4] < gi.n[4]; i[4]++) {
                        float v = ld_f(&x, lt_at(&x, i[0], i[1], i[2], i[3], i[4]));
                        float s = v > 0 ? 1.0f : v < 0 ? -1.0f : v == 0 ? 0.0f : v; /* NaN stays */
                        float g = ld_f(&go, lt_at(&go, i[0], i[1], i[2], i[3], i[4]));
                        st_f(&gi, lt_at(&gi, i[0], i[1], i[2], i[3], i[4]), g * s);
                    }
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnToySignBackwardGetWorkspaceSize(const aclTensor *gradOutput,
    const aclTensor *self, aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    opctx x;
    int st = op_begin(&x, API);
    if (st) return st;
    static const int dtypes[] = {ACL_FLOAT, ACL_FLOAT16};
    const op_param params[3] = {PARAM_TENSOR(gradOutput), PARAM_TENSOR(self), PARAM_TENSOR(gradInput)};
    if ((st = op_params(&x, 3, params, "B1")) ||
        (st = chk_dtype_in(&x, "B2", NT(gradOutput), dtypes, 2, SOC_NOTE_NONE)) ||
        (st = chk_same_dtype(&x, "B3", NT(self), NT(gradOutput))) ||
        (st = chk_same_dtype(&x, "B3", NT(gradInput), NT(gradOutput))) ||
        (st = chk_same_shape(&x, "B4", NT(self), NT(gradOutput))) ||
        (st = chk_same_shape(&x, "B4", NT(gradInput), NT(gradOutput))))
        return st;
    if (rk(self) > 5)
        return op_fail(&x, ACLNN_ERR_PARAM_INVALID, "B4", "rank %lld > 5", (long long)rk(self));
    const named_tensor ts[3] = {NT(gradOutput), NT(self), NT(gradInput)};
    sign_job *j = job_new(&x, sizeof *j, sign_kernel, numel(self) == 0, 0, 3, ts);
    if (!j) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    for (int a = 0, r = (int)rk(self); a < 5; a++) j->ax[a] = a - (5 - r) >= 0 ? a - (5 - r) : -1;
    return finish(&x, &j->h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnToySignBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
