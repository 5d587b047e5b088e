#ifndef TOY_ACLNN_TOY_IDENTITY_H_
#define TOY_ACLNN_TOY_IDENTITY_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
/* out = self, element for element (both contiguous, same dtype and shape) */
ACL_FUNC_VISIBILITY aclnnStatus aclnnToyIdentityGetWorkspaceSize(const aclTensor *self,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnToyIdentity(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
