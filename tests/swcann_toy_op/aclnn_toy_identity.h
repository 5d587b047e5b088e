/* Header of the toy operator (C only: no extern "C" block); build() installs it into
 * include/aclnnop/ because it sits beside the op source. */
#ifndef TOY_ACLNN_TOY_IDENTITY_H_
#define TOY_ACLNN_TOY_IDENTITY_H_
#include "aclnn/acl_meta.h"

/* out = self, element for element (both contiguous, same dtype and shape) */
ACL_FUNC_VISIBILITY aclnnStatus aclnnToyIdentityGetWorkspaceSize(const aclTensor *self,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnToyIdentity(void *workspace, uint64_t workspaceSize,
    aclOpExecutor *executor, aclrtStream stream);
#endif
