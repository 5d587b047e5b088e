"""The CANN C ABI as ctypes sees it: enum values, status codes, prototypes.

Values are those of the CANN headers as recorded in spec acl_abi.md (sections
3 and 4); tests/test_acl_abi.py re-reads the spec tables and compares. The
tables are dicts so the test can walk them; every entry is also a module
attribute (abi.ACL_FLOAT, abi.ACL_MEMCPY_HOST_TO_DEVICE, ...).

PROTOTYPES is the one place that says how each C function is called. It is
applied when a library is loaded, so no call ever goes out with ctypes'
default int arguments/return (a pointer returned as int is truncated to 32 bits).
"""
from __future__ import annotations

from ctypes import POINTER, c_bool, c_char_p, c_double, c_float, c_int, c_int8, c_int32, c_int64, \
    c_size_t, c_uint16, c_uint32, c_uint64, c_void_p

from ..core import dtypes, formats

# --------------------------------------------------------------- enums (3.1-3.3)

# aclDataType and aclFormat come from the one table each (harness/core/dtypes.py, harness/core/formats.py)
DATA_TYPES = {d.acl_name: d.acl for d in dtypes.ALL}
FORMATS = {const: value for const, value in formats.TABLE.values()}

MEMCPY_KINDS = {  # aclrtMemcpyKind
    "ACL_MEMCPY_HOST_TO_HOST": 0, "ACL_MEMCPY_HOST_TO_DEVICE": 1, "ACL_MEMCPY_DEVICE_TO_HOST": 2,
    "ACL_MEMCPY_DEVICE_TO_DEVICE": 3, "ACL_MEMCPY_DEFAULT": 4, "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE": 5,
    "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE": 6, "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE": 7,
}

MALLOC_POLICIES = {  # aclrtMemMallocPolicy
    "ACL_MEM_MALLOC_HUGE_FIRST": 0, "ACL_MEM_MALLOC_HUGE_ONLY": 1, "ACL_MEM_MALLOC_NORMAL_ONLY": 2,
    "ACL_MEM_MALLOC_HUGE_FIRST_P2P": 3, "ACL_MEM_MALLOC_HUGE_ONLY_P2P": 4,
    "ACL_MEM_MALLOC_NORMAL_ONLY_P2P": 5, "ACL_MEM_MALLOC_HUGE1G_ONLY": 6,
    "ACL_MEM_MALLOC_HUGE1G_ONLY_P2P": 7, "ACL_MEM_TYPE_LOW_BAND_WIDTH": 0x0100,
    "ACL_MEM_TYPE_HIGH_BAND_WIDTH": 0x1000, "ACL_MEM_ACCESS_USER_SPACE_READONLY": 0x100000,
}

MEM_ATTRS = {  # aclrtMemAttr (aclrtGetMemInfo); the spec lists the first two of its 18 members
    "ACL_DDR_MEM": 0, "ACL_HBM_MEM": 1,
}

SYS_PARAM_OPTS = {  # aclSysParamOpt
    "ACL_OPT_DETERMINISTIC": 0, "ACL_OPT_ENABLE_DEBUG_KERNEL": 1,
    "ACL_OPT_STRONG_CONSISTENCY": 2, "ACL_OPT_ENABLE_KERNEL_EARLY_START": 3,
}

# --------------------------------------------------------------- status codes (4.1-4.3)

ACLNN_STATUS = {   # aclnnStatus, returned by phase 1 / phase 2 and the meta API
    "ACLNN_SUCCESS": 0, "ACLNN_ERR_PARAM_NULLPTR": 161001, "ACLNN_ERR_PARAM_INVALID": 161002,
    "ACLNN_ERR_RUNTIME_ERROR": 361001, "ACLNN_ERR_INNER": 561000,
    "ACLNN_ERR_INNER_INFERSHAPE_ERROR": 561001, "ACLNN_ERR_INNER_TILING_ERROR": 561002,
    "ACLNN_ERR_INNER_FIND_KERNEL_ERROR": 561003, "ACLNN_ERR_INNER_CREATE_EXECUTOR": 561101,
    "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR": 561102, "ACLNN_ERR_INNER_NULLPTR": 561103,
    "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND": 561107,
}

ACL_ERRORS = {     # aclError (runtime calls); the ones the harness names in its messages
    "ACL_SUCCESS": 0, "ACL_ERROR_INVALID_PARAM": 100000, "ACL_ERROR_UNINITIALIZE": 100001,
    "ACL_ERROR_REPEAT_INITIALIZE": 100002, "ACL_ERROR_REPEAT_FINALIZE": 100037,
    "ACL_ERROR_BAD_ALLOC": 200000, "ACL_ERROR_INVALID_DEVICE": 200002,
    "ACL_ERROR_INTERNAL_ERROR": 500000,
    "ACL_ERROR_RT_PARAM_INVALID": 107000, "ACL_ERROR_RT_INVALID_DEVICEID": 107001,
    "ACL_ERROR_RT_CONTEXT_NULL": 107002, "ACL_ERROR_RT_STREAM_CONTEXT": 107003,
    "ACL_ERROR_RT_FEATURE_NOT_SUPPORT": 207000,
    "ACL_ERROR_RT_MEMORY_ALLOCATION": 207001, "ACL_ERROR_RT_NO_DEVICE": 207004,
    "ACL_ERROR_RT_INTERNAL_ERROR": 507000,
    "ACL_ERROR_RT_AICORE_TIMEOUT": 507014, "ACL_ERROR_RT_AICORE_EXCEPTION": 507015,
    "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION": 507035, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT": 507047,
}

# The event API's codes the spec's 4.3 table does not list, from CANN's rt_error_codes.h
# (hicann/runtime include/external/acl/error_codes): what its runtime answers an event created
# without ACL_EVENT_TIME_LINE or not yet complete (no timestamp), and a destroyed handle.
RT_ERRORS_BEYOND_SPEC = {
    "ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID": 107006, "ACL_ERROR_RT_INVALID_HANDLE": 107017,
}

EVENT_FLAGS = {    # aclrtCreateEventWithFlag / aclrtCreateEventExWithFlag (spec 2.1b), a bitmap
    "ACL_EVENT_SYNC": 0x1, "ACL_EVENT_CAPTURE_STREAM_PROGRESS": 0x2, "ACL_EVENT_TIME_LINE": 0x8,
    "ACL_EVENT_DEVICE_USE_ONLY": 0x10, "ACL_EVENT_EXTERNAL": 0x20, "ACL_EVENT_IPC": 0x40,
}

EVENT_RECORDED_STATUS = {  # aclrtEventRecordedStatus (acl_rt.h; the spec names only the type)
    "ACL_EVENT_RECORDED_STATUS_NOT_READY": 0, "ACL_EVENT_RECORDED_STATUS_COMPLETE": 1,
}

for _table in (DATA_TYPES, FORMATS, MEMCPY_KINDS, MALLOC_POLICIES, MEM_ATTRS, SYS_PARAM_OPTS, ACLNN_STATUS, ACL_ERRORS,
               RT_ERRORS_BEYOND_SPEC, EVENT_FLAGS, EVENT_RECORDED_STATUS):
    globals().update(_table)
del _table

# What the harness passes: huge pages when available, normal pages otherwise (what the
# ops-nn samples use).
DEFAULT_MALLOC_POLICY = MALLOC_POLICIES["ACL_MEM_MALLOC_HUGE_FIRST"]

# --------------------------------------------------------------- prototypes (section 2)

_P_VOID = c_void_p
_PP_VOID = POINTER(c_void_p)
_P_I64 = POINTER(c_int64)
_PP_I64 = POINTER(POINTER(c_int64))
_P_U64 = POINTER(c_uint64)
_EVENT = c_void_p     # aclrtEvent
_ERR = c_int          # aclError
_STATUS = c_int32     # aclnnStatus
_ENUM = c_int


def _fn(restype, *argtypes, optional=False):
    return {"restype": restype, "argtypes": list(argtypes), "optional": optional}


# Which library each group is taken from: "runtime" (libascendcl / libacl_rt),
# "nnopbase" (aclCreateTensor and friends). Optional = may be absent in older CANN
# or exists only in the software CANN; a missing required one is a config error.
PROTOTYPES = {
    "runtime": {
        "aclInit": _fn(_ERR, c_char_p),
        "aclFinalize": _fn(_ERR),
        "aclGetRecentErrMsg": _fn(c_char_p, optional=True),     # torch_npu treats it as optional (spec 1.1)
        "aclrtSetDevice": _fn(_ERR, c_int32),
        "aclrtResetDevice": _fn(_ERR, c_int32),
        "aclrtResetDeviceForce": _fn(_ERR, c_int32, optional=True),   # recovery after a 507xxx
        "aclrtGetDevice": _fn(_ERR, POINTER(c_int32), optional=True),
        "aclrtGetDeviceCount": _fn(_ERR, POINTER(c_uint32)),
        "aclrtCreateStream": _fn(_ERR, _PP_VOID),
        "aclrtDestroyStream": _fn(_ERR, _P_VOID),
        "aclrtSynchronizeStream": _fn(_ERR, _P_VOID),
        "aclrtMalloc": _fn(_ERR, _PP_VOID, c_size_t, _ENUM),
        "aclrtFree": _fn(_ERR, _P_VOID),
        "aclrtMemcpy": _fn(_ERR, _P_VOID, c_size_t, _P_VOID, c_size_t, _ENUM),
        "aclrtMemset": _fn(_ERR, _P_VOID, c_size_t, c_int32, c_size_t),
        "aclrtGetMemInfo": _fn(_ERR, _ENUM, POINTER(c_size_t), POINTER(c_size_t), optional=True),
        "aclrtCtxSetSysParamOpt": _fn(_ERR, _ENUM, c_int64, optional=True),
        "aclrtCtxGetSysParamOpt": _fn(_ERR, _ENUM, _P_I64, optional=True),
        "aclrtSetSysParamOpt": _fn(_ERR, _ENUM, c_int64, optional=True),     # process level
        "aclrtGetSysParamOpt": _fn(_ERR, _ENUM, _P_I64, optional=True),
        "aclrtGetSocName": _fn(c_char_p),
        # events (spec 2.1b): optional, as only the performance mode needs them (harness/acl/events.py)
        "aclrtCreateEvent": _fn(_ERR, _PP_VOID, optional=True),
        "aclrtCreateEventWithFlag": _fn(_ERR, _PP_VOID, c_uint32, optional=True),
        "aclrtCreateEventExWithFlag": _fn(_ERR, _PP_VOID, c_uint32, optional=True),     # ACL_EVENT_IPC
        "aclrtRecordEvent": _fn(_ERR, _EVENT, _P_VOID, optional=True),
        "aclrtSynchronizeEvent": _fn(_ERR, _EVENT, optional=True),
        "aclrtSynchronizeEventWithTimeout": _fn(_ERR, _EVENT, c_int32, optional=True),   # newer headers
        "aclrtQueryEventStatus": _fn(_ERR, _EVENT, POINTER(_ENUM), optional=True),
        "aclrtEventElapsedTime": _fn(_ERR, POINTER(c_float), _EVENT, _EVENT, optional=True),
        "aclrtDestroyEvent": _fn(_ERR, _EVENT, optional=True),
        "aclDataTypeSize": _fn(c_size_t, _ENUM, optional=True),
        "aclFloat16ToFloat": _fn(c_float, c_uint16, optional=True),
        # software CANN extensions: their presence is what marks a library as simulated
        "swcannGetStats": _fn(c_int32, _P_I64, _P_I64, _P_I64, optional=True),
        "swcannInjectFault": _fn(c_int32, c_char_p, c_int32, optional=True),
        # kernels launched since aclInit; a real CANN counts them only in profiler files (msprof)
        "swcannGetKernelLaunches": _fn(_ERR, _P_U64, optional=True),
        # what its event timings measure: 0 the kernels' CPU time, 1 modelled device time
        "swcannGetTimingSource": _fn(c_int32, optional=True),
        "swcannVersion": _fn(c_char_p, optional=True),
    },
    "nnopbase": {
        "aclCreateTensor": _fn(_P_VOID, _P_I64, c_uint64, _ENUM, _P_I64, c_int64, _ENUM, _P_I64, c_uint64, _P_VOID),
        "aclDestroyTensor": _fn(_STATUS, _P_VOID),
        "aclCreateIntArray": _fn(_P_VOID, _P_I64, c_uint64),
        "aclDestroyIntArray": _fn(_STATUS, _P_VOID),
        # getters: only objects.describe_tensor (the binding's own tests) reads a tensor back
        "aclGetViewShape": _fn(_STATUS, _P_VOID, _PP_I64, _P_U64, optional=True),
        "aclGetStorageShape": _fn(_STATUS, _P_VOID, _PP_I64, _P_U64, optional=True),
        "aclGetViewStrides": _fn(_STATUS, _P_VOID, _PP_I64, _P_U64, optional=True),
        "aclGetViewOffset": _fn(_STATUS, _P_VOID, _P_I64, optional=True),
        "aclGetFormat": _fn(_STATUS, _P_VOID, POINTER(_ENUM), optional=True),
        "aclGetDataType": _fn(_STATUS, _P_VOID, POINTER(_ENUM), optional=True),
        "aclGetIntArraySize": _fn(_STATUS, _P_VOID, _P_U64, optional=True),
        "aclGetRawTensorAddr": _fn(_STATUS, _P_VOID, _PP_VOID, optional=True),
        "aclSetAclOpExecutorRepeatable": _fn(_STATUS, _P_VOID, optional=True),
        "aclDestroyAclOpExecutor": _fn(_STATUS, _P_VOID, optional=True),
    },
}

# Phase-1 parameter kinds (casefile Param.type) -> how they travel: handles as void*,
# scalars by value with their exact C width (section 7.1: bool, int64_t, int8_t, double).
PARAM_CTYPES = {
    "tensor": c_void_p, "int_array": c_void_p,
    "bool": c_bool, "int64": c_int64, "int8": c_int8, "double": c_double,
}


def phase1_argtypes(param_types) -> list:
    """argtypes of aclnnXxxGetWorkspaceSize: the signature, then uint64_t* and aclOpExecutor**."""
    return [PARAM_CTYPES[t] for t in param_types] + [_P_U64, _PP_VOID]


# aclnnXxx(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
PHASE2_ARGTYPES = [c_void_p, c_uint64, c_void_p, c_void_p]
PHASE2_RESTYPE = _STATUS
PHASE1_RESTYPE = _STATUS
