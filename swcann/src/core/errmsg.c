/* Thread-local error messages (acl_abi.md 6, 8): aclGetRecentErrMsg returns the
 * host message, then device messages, joined by '\n', and clears them; NULL when
 * there is nothing to report.  Format: "CODE: [PID: p] YYYY-MM-DD-HH:MM:SS.mmm.uuu text". */
#include "core.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MSG_CAP 4096
static _Thread_local char tl_host[MSG_CAP];
static _Thread_local char tl_dev[MSG_CAP];
static _Thread_local char tl_ret[2 * MSG_CAP + 2];
static _Thread_local aclError tl_last_error;

static void format_msg(char *dst, size_t cap, const char *code, const char *text)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    snprintf(dst, cap, "%s: [PID: %d] %04d-%02d-%02d-%02d:%02d:%02d.%03ld.%03ld %s", code,
             (int)getpid(), tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
             tm.tm_sec, (long)(tv.tv_usec / 1000), (long)(tv.tv_usec % 1000), text);
}

void core_set_msg(const char *code, const char *text) { format_msg(tl_host, MSG_CAP, code, text); }

void core_set_dev_msg(const char *code, const char *text)
{
    format_msg(tl_dev, MSG_CAP, code, text);
}

static void core_vmsgf(const char *code, const char *fmt, va_list ap)
{
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    core_set_msg(code, buf);
}

void core_msgf(const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    core_vmsgf(code, fmt, ap);
    va_end(ap);
}

aclError core_fail(aclError ret, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    core_vmsgf(code, fmt, ap);
    va_end(ap);
    tl_last_error = ret;
    return ret;
}

void core_set_last_error(aclError e) { tl_last_error = e; }

ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void)
{
    if (!tl_host[0] && !tl_dev[0]) return NULL;
    snprintf(tl_ret, sizeof tl_ret, "%s%s%s", tl_host, (tl_host[0] && tl_dev[0]) ? "\n" : "",
             tl_dev);
    tl_host[0] = tl_dev[0] = '\0';
    return tl_ret;
}

ACL_FUNC_VISIBILITY aclError aclrtPeekAtLastError(aclrtLastErrLevel level)
{
    (void)level;
    return tl_last_error;
}

ACL_FUNC_VISIBILITY aclError aclrtGetLastError(aclrtLastErrLevel level)
{
    (void)level;
    aclError e = tl_last_error;
    tl_last_error = ACL_SUCCESS;
    return e;
}
