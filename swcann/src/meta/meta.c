/* libnnopbase.so: aclTensor / aclIntArray / aclBoolArray / aclFloatArray /
 * aclScalar lifecycle and accessors, executor repeatable/destroy, aclnnInit.
 * Every object is registered in the core registry so that destroy/use of a
 * stale handle is an error status + message, never a crash. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "objects.h"
#include "../shared/swc_types.h"

static const swc_core *core(void)
{
    static const swc_core *c;
    if (!c) c = swcannCoreApi(SWC_CORE_ABI);
    return c;
}

static void *track(void *p, int kind)
{
    if (p && core()->obj_add(p, kind) != 0) return NULL;
    return p;
}

static int64_t *dup64(const int64_t *v, uint64_t n)
{
    int64_t *d = malloc((n ? n : 1) * sizeof *d);
    if (d && n) memcpy(d, v, n * sizeof *d);
    return d;
}

static void free_tensor(struct aclTensor *t)
{
    free(t->dims);
    free(t->strides);
    free(t->sdims);
    free(t);
}

ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t *storageDims,
                                               uint64_t storageDimsNum, void *tensorData)
{
    if (viewDimsNum > SWC_MAX_RANK || storageDimsNum > SWC_MAX_RANK ||
        (viewDimsNum && !viewDims) || (storageDimsNum && !storageDims)) {
        swc_msgf(core(), "EZ1001", "aclCreateTensor: invalid dims (viewDimsNum %llu, "
                 "storageDimsNum %llu, max %d, arrays must be non-null)",
                 (unsigned long long)viewDimsNum, (unsigned long long)storageDimsNum, SWC_MAX_RANK);
        return NULL;
    }
    struct aclTensor *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->dtype = dataType;
    t->format = format;
    t->ndim = viewDimsNum;
    t->sndim = storageDimsNum;
    t->offset = offset;
    t->data = tensorData;
    t->dims = dup64(viewDims, viewDimsNum);
    t->sdims = dup64(storageDims, storageDimsNum);
    if (stride) {
        t->strides = dup64(stride, viewDimsNum);
    } else if ((t->strides = malloc((viewDimsNum ? viewDimsNum : 1) * sizeof(int64_t)))) {
        /* acl_abi.md is silent on stride == NULL: swcann assumes contiguous strides */
        int64_t s = 1;
        for (uint64_t i = viewDimsNum; i-- > 0;) {
            t->strides[i] = s;
            s *= viewDims[i] > 0 ? viewDims[i] : 1;
        }
    }
    if (!t->dims || !t->sdims || !t->strides) { free_tensor(t); return NULL; }
    if (!track(t, SWC_K_TENSOR)) { free_tensor(t); return NULL; }
    return t;
}

ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType)
{
    size_t sz = swc_dtype_size(dataType);
    if (!value || sz == 0 || sz > 16) return NULL;
    struct aclScalar *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->dtype = dataType;
    memcpy(s->v, value, sz); /* copy semantics (acl_abi.md: UNCONFIRMED upstream) */
    if (!track(s, SWC_K_SCALAR)) { free(s); return NULL; }
    return s;
}

/* NULL is accepted silently (op-plugin passes NULL for absent optional args). */
static aclnnStatus destroy_common(const void *p, int kind, const char *api)
{
    if (!p) return ACLNN_SUCCESS;
    if (core()->obj_del(p, kind) != 0) {
        swc_msgf(core(), "EZ9999", "%s: %p is not a live object of this type (double destroy, "
                 "wrong destroy function, or never created)", api, p);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor)
{
    aclnnStatus s = destroy_common(tensor, SWC_K_TENSOR, "aclDestroyTensor");
    if (s == ACLNN_SUCCESS && tensor) free_tensor((struct aclTensor *)tensor);
    return s;
}

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar *scalar)
{
    aclnnStatus s = destroy_common(scalar, SWC_K_SCALAR, "aclDestroyScalar");
    if (s == ACLNN_SUCCESS && scalar) free((void *)scalar);
    return s;
}

/* accessors: 161001 for null arguments, 161002 for a handle that is not live */
static aclnnStatus acc_check(const void *p, int kind, const void *out, const char *api)
{
    if (!p || !out) {
        swc_msgf(core(), "EZ1001", "%s: null argument", api);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (core()->obj_kind(p) != kind) {
        swc_msgf(core(), "EZ1001", "%s: %p is not a live object of the expected type", api, p);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

/* arrays are malloc()ed; the caller releases them with free() */
static aclnnStatus out_array(const int64_t *src, uint64_t n, int64_t **dst, uint64_t *num)
{
    int64_t *d = dup64(src, n);
    if (!d) return ACLNN_ERR_INNER;
    *dst = d;
    *num = n;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims,
                                                uint64_t *viewDimsNum)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, viewDims, "aclGetViewShape");
    if (!s && !viewDimsNum) s = acc_check(NULL, 0, NULL, "aclGetViewShape");
    return s ? s : out_array(tensor->dims, tensor->ndim, viewDims, viewDimsNum);
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                                   uint64_t *storageDimsNum)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, storageDims, "aclGetStorageShape");
    if (!s && !storageDimsNum) s = acc_check(NULL, 0, NULL, "aclGetStorageShape");
    return s ? s : out_array(tensor->sdims, tensor->sndim, storageDims, storageDimsNum);
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                                  uint64_t *stridesNum)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, stridesValue, "aclGetViewStrides");
    if (!s && !stridesNum) s = acc_check(NULL, 0, NULL, "aclGetViewStrides");
    return s ? s : out_array(tensor->strides, tensor->ndim, stridesValue, stridesNum);
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, offset, "aclGetViewOffset");
    if (!s) *offset = tensor->offset;
    return s;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, format, "aclGetFormat");
    if (!s) *format = (aclFormat)tensor->format;
    return s;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, dataType, "aclGetDataType");
    if (!s) *dataType = (aclDataType)tensor->dtype;
    return s;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, addr, "aclGetRawTensorAddr");
    if (!s) *addr = tensor->data;
    return s;
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr)
{
    aclnnStatus s = acc_check(tensor, SWC_K_TENSOR, tensor, "aclSetRawTensorAddr");
    if (!s) tensor->data = addr;
    return s;
}

/* The three array types share one shape ({n, v}, objects.h): create (copies the values),
 * destroy and size are written once here and instantiated per element type. */
static void *copy_values(const void *value, uint64_t size, size_t es)
{
    if ((size && !value) || size > (1u << 20)) return NULL;
    void *d = malloc(size ? size * es : 1);
    if (d && size) memcpy(d, value, size * es);
    return d;
}

#define SWC_ARRAY_API(Type, Elem, kind)                                                      \
    ACL_FUNC_VISIBILITY acl##Type *aclCreate##Type(const Elem *value, uint64_t size)         \
    {                                                                                        \
        struct acl##Type *a = calloc(1, sizeof *a);                                          \
        if (!a || !(a->v = copy_values(value, size, sizeof *a->v))) { free(a); return NULL; } \
        a->n = size;                                                                         \
        if (!track(a, kind)) { free(a->v); free(a); return NULL; }                          \
        return a;                                                                            \
    }                                                                                        \
    ACL_FUNC_VISIBILITY aclnnStatus aclDestroy##Type(const acl##Type *array)                 \
    {                                                                                        \
        aclnnStatus s = destroy_common(array, kind, "aclDestroy" #Type);                     \
        if (s == ACLNN_SUCCESS && array) { free(array->v); free((void *)array); }            \
        return s;                                                                            \
    }                                                                                        \
    ACL_FUNC_VISIBILITY aclnnStatus aclGet##Type##Size(const acl##Type *array, uint64_t *size) \
    {                                                                                        \
        aclnnStatus s = acc_check(array, kind, size, "aclGet" #Type "Size");                 \
        if (!s) *size = array->n;                                                            \
        return s;                                                                            \
    }
SWC_ARRAY_API(IntArray, int64_t, SWC_K_INTARRAY)
SWC_ARRAY_API(BoolArray, bool, SWC_K_BOOLARRAY)
SWC_ARRAY_API(FloatArray, float, SWC_K_FLOATARRAY)

/* acl_abi.md 4.1: a null executor passed to repeatable/destroy is 561103 */
ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor)
{
    if (!executor || core()->obj_kind(executor) != SWC_K_EXECUTOR) {
        swc_msgf(core(), "EZ9999", "aclSetAclOpExecutorRepeatable: %p is not a live executor "
                 "(null, already executed, or destroyed)", (void *)executor);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    executor->repeatable = 1;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor)
{
    if (!executor || core()->obj_del(executor, SWC_K_EXECUTOR) != 0) {
        swc_msgf(core(), "EZ9999", "aclDestroyAclOpExecutor: %p is not a live executor (null, "
                 "already executed (non-repeatable) or destroyed)", (void *)executor);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    executor->destroy(executor);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath)
{
    (void)configPath; /* acl_abi.md 1.6: aclnnInit or aclInit; both together is fine */
    core()->nn_set(1);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void)
{
    core()->nn_set(0);
    return ACLNN_SUCCESS;
}
