/* aclnnToySignBackward, a toy operator for tests/test_toy_operator.py:
 * gradInput = gradOutput * sign(self), on any strided view of rank 1..5.
 * One C file written against the software CANN's shared helpers (common.h), built in
 * through SWCANN_OP_DIRS: nothing else in swcann/ knows about it. */
#include "common.h"

#define API "aclnnToySignBackward"

/* logical 5-D view of a rank-r tensor: its dims are the last r logical axes */
static lt5 view5(const tview *v)
{
    int ax[5];
    for (int i = 0; i < 5; i++) ax[i] = i - (5 - v->rank) >= 0 ? i - (5 - v->rank) : -1;
    return lt_make(v, ax);
}

static int toy_kernel(struct aclOpExecutor *e, job_head *h, void *ws, void *stream)
{
    (void)e, (void)ws, (void)stream;
    lt5 go = view5(&h->t[0]), x = view5(&h->t[1]), gi = view5(&h->t[2]);
    for (int64_t n = 0; n < go.n[0]; n++)
        for (int64_t c = 0; c < go.n[1]; c++)
            for (int64_t d = 0; d < go.n[2]; d++)
                for (int64_t hh = 0; hh < go.n[3]; hh++)
                    for (int64_t w = 0; w < go.n[4]; w++) {
                        float g = ld_f(&go, lt_at(&go, n, c, d, hh, w));
                        float s = ld_f(&x, lt_at(&x, n, c, d, hh, w));
                        float sign = s > 0 ? 1.0f : s < 0 ? -1.0f : s == 0 ? 0.0f : s; /* NaN stays NaN */
                        st_f(&gi, lt_at(&gi, n, c, d, hh, w), g * sign);
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
        (st = chk_same_shape(&x, "B4", NT(gradInput), NT(gradOutput))) ||
        (st = chk_rank_in(&x, "B5", NT(gradOutput), 1, 5)))
        return st;
    const named_tensor ts[3] = {NT(gradOutput), NT(self), NT(gradInput)};
    job_head *h = job_new(&x, sizeof *h, toy_kernel, numel(gradOutput) == 0, 0, 3, ts);
    if (!h) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    return finish(&x, h, workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnToySignBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream)
{
    return exec_phase2(API, workspace, workspaceSize, executor, stream);
}
