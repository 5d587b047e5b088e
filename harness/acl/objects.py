"""ACL objects of one case (device buffers, tensors, int arrays, an executor) with guaranteed cleanup.

`CaseObjects` is a context manager: everything created through it is released
when the block ends, on every path (phase-1 failure, phase-2 failure, an
exception in the middle of argument conversion). Release runs in reverse order
of creation, so a tensor is destroyed before the buffer it points into is
freed. Release failures are collected in `problems`, never raised, so they
cannot mask the error that ended the block.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
from typing import TYPE_CHECKING

from ..core import formats
from . import abi
from .loader import Libraries
from .runtime import AclCallError, recent_error

if TYPE_CHECKING:        # torch only where a tensor is moved: opening a device needs none
    import torch

    from ..inputs.layout import TensorArg

MIN_ALLOC = 32      # aclCreateTensor wants 32-byte aligned data; aclrtMalloc aligns, we round sizes


def alloc_size(nbytes: int) -> int:
    """Bytes requested from aclrtMalloc: rounded up to 32, at least 32 (an empty tensor still needs an address)."""
    return max(MIN_ALLOC, (nbytes + MIN_ALLOC - 1) // MIN_ALLOC * MIN_ALLOC)


def _int64_array(values) -> ctypes.Array:
    values = [int(v) for v in values]
    return (ctypes.c_int64 * len(values))(*values)


def _host_bytes(storage: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The flat storage as a contiguous host tensor of a dtype every path handles (bf16 as int16)."""
    if storage.device.type != "cpu" or not storage.is_contiguous():
        raise ValueError("TensorArg.storage must be a contiguous CPU tensor")
    import torch
    host = storage.view(torch.int16) if storage.dtype == torch.bfloat16 else storage
    return host, host.numel() * host.element_size()


class CaseObjects(contextlib.AbstractContextManager):
    def __init__(self, libs: Libraries):
        self.libs = libs
        self._stack = contextlib.ExitStack()
        self.problems: list[str] = []          # release failures: reported by the backend after the case

    def __exit__(self, *exc):
        self._stack.close()
        return False

    def _release(self, what: str, fn, handle) -> None:
        def release():
            try:
                ret = fn(handle)
            except Exception as e:              # a ctypes failure must not stop the other releases
                self.problems.append(f"{what}: {e}")
                return
            if ret != 0:
                self.problems.append(f"{what} returned {ret}: {recent_error(self.libs)}")
        self._stack.callback(release)

    # ------------------------------------------------------------ device memory

    def device_buffer(self, nbytes: int) -> int:
        """aclrtMalloc(alloc_size(nbytes)); freed with the block. Returns the device address."""
        ptr = ctypes.c_void_p()
        size = alloc_size(nbytes)
        ret = self.libs.runtime.aclrtMalloc(ctypes.byref(ptr), size, abi.DEFAULT_MALLOC_POLICY)
        if ret != abi.ACL_SUCCESS or not ptr.value:
            raise AclCallError(f"aclrtMalloc({size} bytes)", ret, recent_error(self.libs))
        self._release(f"aclrtFree({size} bytes)", self.libs.runtime.aclrtFree, ptr.value)
        return ptr.value

    def filled_buffer(self, nbytes: int, byte: int) -> int:
        """device_buffer(nbytes) with every byte set to `byte` (aclrtMemset)."""
        dev = self.device_buffer(nbytes)
        self.fill(dev, nbytes, byte)
        return dev

    def fill(self, dev: int, nbytes: int, byte: int) -> None:
        """Set `nbytes` of a buffer from device_buffer(nbytes) to `byte` (aclrtMemset)."""
        ret = self.libs.runtime.aclrtMemset(dev, alloc_size(nbytes), byte, nbytes)
        if ret != abi.ACL_SUCCESS:
            raise AclCallError(f"aclrtMemset({nbytes} bytes)", ret, recent_error(self.libs))

    def upload(self, storage: torch.Tensor) -> int:
        """A device buffer holding a copy of the whole flat storage (gaps and poison included)."""
        dev = self.device_buffer(_host_bytes(storage)[1])
        self.upload_into(dev, storage)
        return dev

    def upload_into(self, dev: int, storage: torch.Tensor) -> None:
        """Copy the whole flat storage into a buffer that upload(storage) made."""
        host, nbytes = _host_bytes(storage)
        if nbytes:
            ret = self.libs.runtime.aclrtMemcpy(dev, alloc_size(nbytes), host.data_ptr(), nbytes,
                                                abi.ACL_MEMCPY_HOST_TO_DEVICE)
            if ret != abi.ACL_SUCCESS:
                raise AclCallError(f"aclrtMemcpy(host to device, {nbytes} bytes)", ret, recent_error(self.libs))

    def _to_host(self, dst, dev: int, nbytes: int) -> None:
        ret = self.libs.runtime.aclrtMemcpy(dst, nbytes, dev, nbytes, abi.ACL_MEMCPY_DEVICE_TO_HOST)
        if ret != abi.ACL_SUCCESS:
            raise AclCallError(f"aclrtMemcpy(device to host, {nbytes} bytes)", ret, recent_error(self.libs))

    def download(self, dev: int, storage: torch.Tensor) -> None:
        """Copy the device buffer back over the whole host storage, in place."""
        host, nbytes = _host_bytes(storage)
        if nbytes:
            self._to_host(host.data_ptr(), dev, nbytes)

    def read(self, dev: int, nbytes: int) -> bytes:
        """`nbytes` of device memory from address `dev`."""
        buf = (ctypes.c_ubyte * nbytes)()
        self._to_host(buf, dev, nbytes)
        return bytes(buf)

    def unchanged(self, dev: int, storage: torch.Tensor) -> bool:
        """Whether the device buffer still holds exactly the bytes uploaded from `storage`
        (compared as bytes: NaN payloads and -0.0 count, and NaN == NaN)."""
        import numpy as np
        import torch
        host, nbytes = _host_bytes(storage)
        if not nbytes:
            return True
        now = torch.empty_like(host)
        self.download(dev, now)
        # numpy, not torch.equal: as fast for a few bytes, 8x faster for 100 KB
        return bool(np.array_equal(now.view(torch.uint8).numpy(), host.view(torch.uint8).numpy()))

    # ------------------------------------------------------------ meta objects

    def tensor(self, arg: TensorArg, acl_dtype: int) -> tuple[int, int]:
        """Upload the storage and describe the view like torch_npu does (spec 7.2): view dims,
        element strides and offset, storage dims = [numel] (1-D), data = the buffer's base.
        Returns (aclTensor*, device address)."""
        dev = self.upload(arg.storage)
        dims, strides = _int64_array(arg.dims), _int64_array(arg.strides)
        # an unbacked descriptor claims one element of storage, which its tiny buffer holds for any dtype
        storage_dims = _int64_array([1 if arg.unbacked else arg.storage.numel()])
        handle = self.libs.nnopbase.aclCreateTensor(dims, len(arg.dims), acl_dtype, strides, arg.offset,
                                                   formats.lookup(arg.format), storage_dims, 1, dev)
        if not handle:
            raise AclCallError(f"aclCreateTensor({arg.name}: dims {list(arg.dims)}, strides {list(arg.strides)}, "
                               f"offset {arg.offset}, format {arg.format}, dtype {acl_dtype})", None,
                               recent_error(self.libs))
        self._release(f"aclDestroyTensor({arg.name})", self.libs.nnopbase.aclDestroyTensor, handle)
        return handle, dev

    def int_array(self, values, name: str = "") -> int:
        """aclCreateIntArray copies the values, so the ctypes array may go away afterwards."""
        handle = self.libs.nnopbase.aclCreateIntArray(_int64_array(values), len(values))
        if not handle:
            raise AclCallError(f"aclCreateIntArray({name}={list(values)})", None, recent_error(self.libs))
        self._release(f"aclDestroyIntArray({name})", self.libs.nnopbase.aclDestroyIntArray, handle)
        return handle

    def repeatable(self, executor: int) -> None:
        """Make the executor repeatable (aclSetAclOpExecutorRepeatable, right after phase 1, as
        acl_abi.md 2.2 requires), so phase 2 may run it more than once; it is then freed with
        aclDestroyAclOpExecutor when the case's objects are released (before its tensors)."""
        nn = self.libs.nnopbase
        missing = [f for f in ("aclSetAclOpExecutorRepeatable", "aclDestroyAclOpExecutor") if not hasattr(nn, f)]
        if missing:
            raise AclCallError(f"{' and '.join(missing)} (not exported by {self.libs.nnopbase_path})", None,
                               "a repeatable executor needs both")
        ret = nn.aclSetAclOpExecutorRepeatable(executor)
        if ret != abi.ACL_SUCCESS:
            raise AclCallError("aclSetAclOpExecutorRepeatable", ret, recent_error(self.libs))
        self._release("aclDestroyAclOpExecutor", nn.aclDestroyAclOpExecutor, executor)

    def unused_executor(self, executor: int) -> None:
        """Release an executor whose phase 2 will not run (phase 2 consumes it otherwise).
        The documented way to free one is: make it repeatable, then aclDestroyAclOpExecutor."""
        nn = self.libs.nnopbase
        if not executor or not hasattr(nn, "aclDestroyAclOpExecutor"):
            return
        if hasattr(nn, "aclSetAclOpExecutorRepeatable"):
            nn.aclSetAclOpExecutorRepeatable(executor)
        self._release("aclDestroyAclOpExecutor", nn.aclDestroyAclOpExecutor, executor)


# ---------------------------------------------------------------- reading a tensor back

_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.free.argtypes, _libc.free.restype = [ctypes.c_void_p], None


def _take_array(libs: Libraries, getter: str, handle: int) -> list[int]:
    """Call an aclGetViewShape-style getter and free the array it returns. The library allocates
    it and the caller frees it: real CANN with new[] (op-plugin pairs it with delete[]), the
    software CANN with malloc (its acl_meta.h). For int64_t arrays glibc's operator new[] is
    malloc, so libc free() releases both."""
    data, count = ctypes.POINTER(ctypes.c_int64)(), ctypes.c_uint64(0)
    ret = getattr(libs.nnopbase, getter)(handle, ctypes.byref(data), ctypes.byref(count))
    if ret != 0:
        raise AclCallError(getter, ret, recent_error(libs))
    try:
        return [data[i] for i in range(count.value)]
    finally:
        if data:
            _libc.free(ctypes.cast(data, ctypes.c_void_p))


def describe_tensor(libs: Libraries, handle: int) -> dict:
    """What the library recorded for an aclTensor (view, strides, offset, format, dtype, storage)."""
    nn = libs.nnopbase
    offset, fmt, dtype = ctypes.c_int64(), ctypes.c_int(), ctypes.c_int()
    for name, out in (("aclGetViewOffset", offset), ("aclGetFormat", fmt), ("aclGetDataType", dtype)):
        ret = getattr(nn, name)(handle, ctypes.byref(out))
        if ret != 0:
            raise AclCallError(name, ret, recent_error(libs))
    return {"view_shape": _take_array(libs, "aclGetViewShape", handle),
            "strides": _take_array(libs, "aclGetViewStrides", handle),
            "offset": offset.value, "format": fmt.value, "dtype": dtype.value,
            "storage_shape": _take_array(libs, "aclGetStorageShape", handle)}
