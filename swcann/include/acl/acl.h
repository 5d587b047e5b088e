/* acl/acl.h -- software CANN ("swcann") runtime header.
 * Declares only what libascendcl.so of swcann exports.  Types, enum values and
 * error codes follow the real CANN headers (spec acl_abi.md sections 2-4).
 * This is a SIMULATION for host-only testing, NOT the Huawei runtime. */
#ifndef SWCANN_ACL_ACL_H_
#define SWCANN_ACL_ACL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACL_FUNC_VISIBILITY
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif

typedef int aclError;
typedef uint16_t aclFloat16;
typedef void *aclrtStream;
typedef void *aclrtContext;
typedef void *aclrtEvent;

/* acl_abi.md 2.1b: aclrtCreateEventWithFlag / aclrtCreateEventExWithFlag flag bits */
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010U
#define ACL_EVENT_EXTERNAL 0x00000020U
#define ACL_EVENT_IPC 0x00000040U

/* aclrtQueryEventStatus (values of CANN's acl_rt.h; the spec names only the type) */
typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

/* acl_abi.md 3.1 */
typedef enum {
    /* @ACL_DATA_TYPES@: the build writes the enumerators here from platforms/platform.yaml */
} aclDataType;

/* acl_abi.md 3.2 */
typedef enum {
    ACL_FORMAT_UNDEFINED = -1, ACL_FORMAT_NCHW = 0, ACL_FORMAT_NHWC = 1, ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3, ACL_FORMAT_FRACTAL_Z = 4, ACL_FORMAT_NC1HWC0_C04 = 12,
    ACL_FORMAT_HWCN = 16, ACL_FORMAT_NDHWC = 27, ACL_FORMAT_FRACTAL_NZ = 29,
    ACL_FORMAT_NCDHW = 30, ACL_FORMAT_NDC1HWC0 = 32, ACL_FRACTAL_Z_3D = 33,
    ACL_FORMAT_NC = 35, ACL_FORMAT_NCL = 47, ACL_FORMAT_FRACTAL_NZ_C0_16 = 50,
    ACL_FORMAT_FRACTAL_NZ_C0_32 = 51, ACL_FORMAT_FRACTAL_NZ_C0_2 = 52,
    ACL_FORMAT_FRACTAL_NZ_C0_4 = 53, ACL_FORMAT_FRACTAL_NZ_C0_8 = 54
} aclFormat;

/* acl_abi.md 3.3 */
typedef enum {
    ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3, ACL_MEMCPY_DEFAULT = 4, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

typedef enum {
    ACL_MEM_MALLOC_HUGE_FIRST = 0, ACL_MEM_MALLOC_HUGE_ONLY = 1, ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3, ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5, ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7, ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000, ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

typedef enum {
    ACL_OPT_DETERMINISTIC = 0, ACL_OPT_ENABLE_DEBUG_KERNEL = 1,
    ACL_OPT_STRONG_CONSISTENCY = 2, ACL_OPT_ENABLE_KERNEL_EARLY_START = 3
} aclSysParamOpt;

typedef enum { ACL_DEVICE = 0, ACL_HOST = 1 } aclrtRunMode;
typedef enum { ACL_DDR_MEM = 0, ACL_HBM_MEM = 1 } aclrtMemAttr;
typedef enum { ACL_RT_THREAD_LEVEL = 0 } aclrtLastErrLevel;

/* acl_abi.md 4.2 / 4.3 (subset) */
#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID 107006 /* rt_error_codes.h; not in the spec's 4.3 */
#define ACL_ERROR_RT_INVALID_HANDLE 107017          /* rt_error_codes.h; not in the spec's 4.3 */
#define ACL_ERROR_RT_SYSPARAMOPT_NOT_SET 107021
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_NO_DEVICE 207004
#define ACL_ERROR_RT_NO_EVENT_RESOURCE 207007       /* rt_error_codes.h; not in the spec's 4.3 */
#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015
#define ACL_ERROR_RT_EVENT_SYNC_TIMEOUT 507047

#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 17
#define ACL_PATCH_VERSION 0

ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
ACL_FUNC_VISIBILITY aclError aclFinalizeReference(uint64_t *refCount);
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context);
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                                              size_t count, aclrtMemcpyKind kind,
                                              aclrtStream stream);
/* Events (acl_abi.md 2.1b): timing work on a stream */
ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);
ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);
ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value);
ACL_FUNC_VISIBILITY const char *aclrtGetSocName(void);
ACL_FUNC_VISIBILITY aclError aclrtPeekAtLastError(aclrtLastErrLevel level);
ACL_FUNC_VISIBILITY aclError aclrtGetLastError(aclrtLastErrLevel level);
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
                                             int32_t *patchVersion);
ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType);
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value);
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value);

/* ---- swcann extensions (not part of CANN; their presence marks a software CANN) ---- */
/* Live counts: device+host allocations, their requested bytes, ACL objects
 * (tensors, int/bool/float arrays, scalars, executors, events). Returns 0. */
ACL_FUNC_VISIBILITY int32_t swcannGetStats(int64_t *liveAllocs, int64_t *liveBytes,
                                           int64_t *liveObjects);
/* Kernels launched by this process since aclInit (the in-process analogue of a profiler's
 * task count; a real CANN reports that only through msprof/aclprof result files).
 * 100001 before aclInit, 100000 for a null pointer. */
ACL_FUNC_VISIBILITY aclError swcannGetKernelLaunches(uint64_t *launches);
/* What event timings measure (swcann/README.md "Device time"): 0 = the kernels' thread CPU
 * time (and that of copies queued with aclrtMemcpyAsync), 1 = modelled device time
 * (SWCANN_DEVICE_TIME=1: bytes moved / the family's modelled bandwidth, slept for real).
 * Read at aclInit; -1 before the first aclInit. */
ACL_FUNC_VISIBILITY int32_t swcannGetTimingSource(void);
/* One-shot fault: site "phase2", "sync" or "malloc"; code 0 clears. Unknown site -> nonzero. */
ACL_FUNC_VISIBILITY int32_t swcannInjectFault(const char *site, int32_t code);
ACL_FUNC_VISIBILITY const char *swcannVersion(void);

#ifdef __cplusplus
}
#endif
#endif
