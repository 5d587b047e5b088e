/* libascendcl.so: the compatibility library of the CANN 8/9 runtime split.
 * It implements nothing itself; its DT_NEEDED on libacl_rt.so makes
 * dlsym(handle, "aclInit") find the runtime's functions through the
 * dependency tree, and only one copy of the runtime state ever exists in a
 * process whichever of the two names a consumer opens (acl_abi.md 1.1, 1.8). */
typedef int swc_ascendcl_compat_only; /* a translation unit may not be empty */
