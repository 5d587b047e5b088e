/* Layouts of the aclnn meta objects, shared by libnnopbase.so (creates them)
 * and libopapi.so (reads them after checking liveness in the core registry). */
#ifndef SWC_OBJECTS_H_
#define SWC_OBJECTS_H_
#include <stdbool.h>
#include <stdint.h>
#include "aclnn/acl_meta.h"
#include "../shared/swc_core.h"

#define SWC_MAX_RANK 64

struct aclTensor {
    int32_t dtype, format; /* format = storage format (op checks compare it) */
    uint64_t ndim, sndim;
    int64_t *dims, *strides; /* view dims / element strides */
    int64_t offset;          /* element offset of the view */
    int64_t *sdims;          /* storage dims */
    void *data;              /* device address (not validated at creation) */
};
struct aclIntArray { uint64_t n; int64_t *v; };
struct aclBoolArray { uint64_t n; bool *v; };
struct aclFloatArray { uint64_t n; float *v; };
struct aclScalar { int32_t dtype; unsigned char v[16]; };

/* An executor holds everything phase 2 needs (snapshots, never user handles). */
struct aclOpExecutor {
    const char *api;  /* "aclnnXxx" */
    int repeatable;
    int launches;     /* phase-2 calls so far (a repeatable executor runs more than once) */
    void *first_ws;   /* the workspace of the first phase-2 call (fault relaunch_stale_workspace) */
    uint64_t workspace; /* size phase 1 reported */
    /* returns an aclnn status; a device-side failure is parked on the stream */
    int (*run)(struct aclOpExecutor *e, void *ws, uint64_t wsSize, void *stream);
    void (*destroy)(struct aclOpExecutor *e);
    void *payload;
};
#endif
