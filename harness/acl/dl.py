"""dlopen with the flags the reference consumers use: RTLD_LAZY | RTLD_GLOBAL.

ctypes.CDLL always adds RTLD_NOW (CPython's py_dl_open), so a library with a
function that is bound only at its first call (a symbol taken from a library
loaded later, or never called) fails to load through it, while torch_npu and
op-plugin load it fine (acl_abi.md 1.8). The handle from libc's own dlopen is
wrapped in a CDLL, which then resolves attributes with dlsym as usual.
RTLD_GLOBAL: libraries loaded later (nnopbase, the op libraries) bind their
lazily resolved symbols against what is already loaded.
"""
from __future__ import annotations

import ctypes
import os

FLAGS = os.RTLD_LAZY | os.RTLD_GLOBAL

_libc = ctypes.CDLL(None)       # the process's own symbols: libc's dlopen and dlerror (glibc >= 2.34)
if not hasattr(_libc, "dlopen"):      # older glibc keeps them in libdl
    _libc = ctypes.CDLL("libdl.so.2")
_dlopen = _libc.dlopen
_dlopen.restype, _dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
_dlerror = _libc.dlerror
_dlerror.restype, _dlerror.argtypes = ctypes.c_char_p, []


class DlopenError(OSError):
    """dlopen failed; str() is dlerror()'s text (names the missing library or symbol)."""


def open_library(path, flags: int = FLAGS) -> ctypes.CDLL:
    """dlopen(path, flags) and a CDLL around the handle; DlopenError with dlerror() on failure."""
    _dlerror()                          # clear a stale error
    handle = _dlopen(os.fsencode(str(path)), flags)
    if not handle:
        raw = _dlerror()
        raise DlopenError(raw.decode("utf-8", errors="replace") if raw else f"dlopen({path}) failed")
    return ctypes.CDLL(str(path), handle=handle)
