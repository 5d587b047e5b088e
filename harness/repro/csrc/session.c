/* The fixed steps of a reproducer's main() (harness/repro/csrc/session.c): the ACL session as the
   harness's aclnn backend opens and closes it, the SoC check, and the verdict and exit status. */

/* aclInit, device 0, one stream; what succeeded is marked for close_session. 0: a step failed. */
HELPER int open_session(aclrtStream *stream, int *initialised, int *device_set)
{
    if (!acl_ok(aclInit(NULL), "aclInit(NULL)"))
        return 0;
    *initialised = 1;
    if (!acl_ok(aclrtSetDevice(0), "aclrtSetDevice(0)"))
        return 0;
    *device_set = 1;
    return acl_ok(aclrtCreateStream(stream), "aclrtCreateStream");
}

/* Deterministic mode at both levels, as torch_npu and the harness set it. */
HELPER int set_deterministic(void)
{
    return acl_ok(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), "aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1)") &&
           acl_ok(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), "aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1)");
}

/* Whether the SoC is of `family` (one of its aclrtGetSocName() patterns matches, POSIX fnmatch). */
HELPER int soc_of_family(const char *const *patterns, const char *family)
{
    const char *soc = aclrtGetSocName();
    int k, ok = 0;
    for (k = 0; patterns[k]; k++)
        ok |= soc && fnmatch(patterns[k], soc, 0) == 0;
    printf("soc: %s (%s family %s)\n", soc ? soc : "NULL", ok ? "of" : "NOT of", family);
    return ok;
}

/* The session's releases, in reverse order of open_session. */
HELPER void close_session(aclrtStream stream, int initialised, int device_set)
{
    if (stream)
        release(aclrtDestroyStream(stream), "aclrtDestroyStream");
    if (device_set)
        release(aclrtResetDevice(0), "aclrtResetDevice(0)");
    if (initialised)
        release(aclFinalize(), "aclFinalize");
}

/* The verdict line, and the exit status: 0 PASS, 1 FAIL, 2 a call outside the operator failed (no
   verdict), 3 the SoC is not of the family whose expectation was judged. */
HELPER int verdict(int soc_ok, const char *family)
{
    if (g_setup_failed) {
        printf("verdict: NONE (a call outside the operator failed: see SETUP ERROR above)\n");
        return 2;
    }
    if (g_reasons[0])
        printf("verdict: FAIL: %s\n", g_reasons);
    else
        printf("verdict: PASS\n");
    if (!soc_ok) {
        printf("note: this SoC is not of family %s, whose expectation was judged: exit status 3\n", family);
        return 3;
    }
    return g_reasons[0] ? 1 : 0;
}
