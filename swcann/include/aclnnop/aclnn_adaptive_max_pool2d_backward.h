#ifndef SWCANN_ACLNN_ADAPTIVE_MAX_POOL2D_BACKWARD_H_
#define SWCANN_ACLNN_ADAPTIVE_MAX_POOL2D_BACKWARD_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnAdaptiveMaxPool2dBackward(void *workspace,
    uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
