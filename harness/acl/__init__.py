"""ctypes binding of the CANN C ABI (spec acl_abi.md).

abi: enum values, status codes, function prototypes. loader: finding and
loading the libraries. runtime: the process-wide ACL session (aclInit, device,
stream). objects: per-case tensors, int arrays and buffers with guaranteed release.
"""
