#ifndef SWCANN_ACLNN_MAX_UNPOOL3D_BACKWARD_H_
#define SWCANN_ACLNN_MAX_UNPOOL3D_BACKWARD_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxUnpool3dBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *indices,
    const aclIntArray *outputSize, const aclIntArray *stride, const aclIntArray *padding,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnMaxUnpool3dBackward(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
