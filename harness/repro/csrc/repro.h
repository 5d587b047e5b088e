/* The fixed head of every reproducer (harness/repro/csrc/repro.h): headers, the meta-API
   declarations, and the Tensor record the helpers and the case's declarations share.

   The text compiles as C11 and as C++ (CANN's aclnn/acl_meta.h is a C++ header: it includes
   <cstdint> and uses constexpr, so a C program declares the few meta functions it calls itself;
   built as C++ the program includes the real header and the compiler checks those calls against
   it). The generator copies this file and the .c files of this directory into repro.c, in the
   order harness/repro/c_files.py gives, after its own #defines (MAX_RANK, REPRO_*). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <stdarg.h>
#include <math.h>
#include <fnmatch.h>

#include "acl/acl.h"

/* The helpers below are the same for every case; a case may leave some of them unused. */
#if defined(__GNUC__) || defined(__clang__)
#define HELPER static __attribute__((unused))
#else
#define HELPER static
#endif

#ifdef __cplusplus
#include "aclnn/acl_meta.h"
#else
/* CANN's aclnn/acl_meta.h is C++ (<cstdint>, constexpr); its functions are extern "C", so a C
   program declares the ones it calls (signatures: acl_abi.md 2.2, hicann/opbase acl_meta.h). */
typedef int32_t aclnnStatus;
typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;
typedef struct aclOpExecutor aclOpExecutor;
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData);
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclnnStatus aclDestroyIntArray(const aclIntArray *array);
aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);
#endif

typedef struct {
    const char *name;
    aclDataType dtype;                 /* as passed to aclCreateTensor: how an element is read (elements.c) */
    size_t item;                       /* bytes per storage element */
    size_t nbytes;                     /* bytes of the whole flat storage */
    int rank;
    const int64_t *dims, *strides;     /* the view as passed to aclCreateTensor */
    int64_t offset;
    const int64_t *ldims, *lstrides;   /* the same view in logical (channel-first) order */
    const unsigned char *fill;         /* outputs: the poison element every element of the view holds */
    unsigned char *host;               /* the storage uploaded; outputs: then downloaded */
    void *dev;
    aclTensor *handle;
    unsigned char *initial;            /* outputs: the storage as uploaded (poison in the view, guard bytes outside) */
} Tensor;
