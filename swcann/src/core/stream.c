/* Streams.  Work is executed synchronously at launch; device-side failures
 * (AI Core exception, injected faults) are parked on the stream and reported by
 * the next synchronize on it (acl_abi.md 4.3).  Each stream's device clock
 * (stream.h) advances by the work run on it (devtime.c). */
#include "core.h"
#include "devtime.h"
#include "faults.h"
#include "stream.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static stream_t *g_streams;
static stream_t g_default[SWC_MAX_DEVICES]; /* default stream of each device context */
static uint64_t g_serial = SWC_MAX_DEVICES; /* serials 1..SWC_MAX_DEVICES: the default streams */

stream_t *stream_find_locked(void *s)
{
    for (stream_t *p = g_streams; p; p = p->next)
        if ((void *)p == s) return p;
    return NULL;
}

stream_t *stream_default_locked(int dev)
{
    stream_t *s = &g_default[dev];
    s->dev = dev;
    s->serial = (uint64_t)dev + 1;
    return s;
}

stream_t *stream_by_serial_locked(uint64_t serial)
{
    if (serial >= 1 && serial <= SWC_MAX_DEVICES) return stream_default_locked((int)serial - 1);
    for (stream_t *p = g_streams; p; p = p->next)
        if (p->serial == serial) return p;
    return NULL;
}

void stream_reset_device(int dev) /* caller holds g_lock */
{
    for (stream_t **pp = &g_streams; *pp;) {
        if ((*pp)->dev == dev) {
            stream_t *d = *pp;
            *pp = d->next;
            free(d);
        } else {
            pp = &(*pp)->next;
        }
    }
    g_default[dev].pend_code = 0;
    g_default[dev].clock_ns = 0; /* a reset device starts a new timeline; its events go too */
    g_default[dev].records = 0;
    events_reset_device_locked(dev);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream)
{
    aclError e = rt_need_init("aclrtCreateStream");
    if (e) return e;
    if (!stream)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtCreateStream: stream is null");
    int d;
    if ((e = rt_need_device("aclrtCreateStream", &d))) return e;
    stream_t *s = calloc(1, sizeof *s);
    if (!s) return core_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "EE2001", "out of memory");
    s->magic = 0x5354524du;
    s->dev = d;
    pthread_mutex_lock(&g_lock);
    s->serial = ++g_serial;
    s->next = g_streams;
    g_streams = s;
    pthread_mutex_unlock(&g_lock);
    *stream = s;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream)
{
    aclError e = rt_need_init("aclrtDestroyStream");
    if (e) return e;
    if (!stream)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "aclrtDestroyStream: the default stream (null) cannot be destroyed");
    pthread_mutex_lock(&g_lock);
    for (stream_t **pp = &g_streams; *pp; pp = &(*pp)->next) {
        if ((void *)*pp == stream) {
            stream_t *d = *pp;
            *pp = d->next;
            /* its work is done (destroy requires a prior synchronize, acl_rt.h): the events
             * recorded on it keep their stamps and count as completed */
            events_completed_locked(d->serial, d->records);
            pthread_mutex_unlock(&g_lock);
            free(d);
            return ACL_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001",
                     "aclrtDestroyStream: %p is not a live stream (already destroyed, or its "
                     "device was reset)", stream);
}

/* resolve a user stream handle; NULL means the thread's default stream */
int core_stream_get(void *stream, void **resolved, char *why, size_t n)
{
    int d = rt_current_device();
    if (d < 0) {
        snprintf(why, n, "no current context in this thread (call aclrtSetDevice)");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    pthread_mutex_lock(&g_lock);
    stream_t *s = stream ? stream_find_locked(stream) : stream_default_locked(d);
    pthread_mutex_unlock(&g_lock);
    if (!s) {
        snprintf(why, n, "stream %p is not a live stream (destroyed, never created, or its "
                 "device was reset)", stream);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    *resolved = s;
    return 0;
}

void core_stream_fail(void *resolved, int code, const char *text)
{
    stream_t *s = resolved;
    pthread_mutex_lock(&g_lock);
    if (s->pend_code == 0) { /* the first device error is the one reported */
        s->pend_code = code;
        snprintf(s->pend_msg, sizeof s->pend_msg, "%s", text);
    }
    pthread_mutex_unlock(&g_lock);
}

static aclError sync_one(const char *api, aclrtStream stream)
{
    char why[256];
    void *r;
    aclError e = rt_need_init(api);
    if (e) return e;
    int rc = core_stream_get(stream, &r, why, sizeof why);
    if (rc) return core_fail(rc, "EE1001", "%s: %s", api, why);
    int32_t f = rt_take_fault(SWC_FAULT_SYNC);
    if (f) {
        char t[160];
        snprintf(t, sizeof t, "%s: injected fault (swcann), code %d", api, f);
        core_set_dev_msg("EZ9999", t);
        core_set_last_error(f);
        return f;
    }
    int poisoned = faults_sync(r, rt_current_device()); /* SWCANN_FAULTS: may never return */
    if (poisoned) return poisoned;
    stream_t *s = r;
    pthread_mutex_lock(&g_lock);
    int code = s->pend_code;
    char msg[sizeof s->pend_msg];
    memcpy(msg, s->pend_msg, sizeof msg);
    s->pend_code = 0;
    if (!code) events_completed_locked(s->serial, s->records);
    pthread_mutex_unlock(&g_lock);
    if (code) {
        core_set_dev_msg("EZ9999", msg);
        core_set_last_error(code);
    }
    return code;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream)
{
    return sync_one("aclrtSynchronizeStream", stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    if (timeout < -1)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value %d for timeout is invalid. Reason: must be -1 or >= 0.", timeout);
    return sync_one("aclrtSynchronizeStreamWithTimeout", stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void)
{
    int d = rt_current_device();
    if (d < 0) return sync_one("aclrtSynchronizeDevice", NULL); /* reports the error */
    aclError first = sync_one("aclrtSynchronizeDevice", NULL);
    pthread_mutex_lock(&g_lock);
    for (stream_t *p = g_streams; p; p = p->next) {
        if (p->dev == d && p->pend_code) {
            int code = p->pend_code;
            p->pend_code = 0;
            if (!first) {
                first = code;
                core_set_dev_msg("EZ9999", p->pend_msg);
                core_set_last_error(code);
            }
        }
    }
    for (stream_t *p = g_streams; !first && p; p = p->next)
        if (p->dev == d) events_completed_locked(p->serial, p->records);
    pthread_mutex_unlock(&g_lock);
    return first;
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                                              size_t count, aclrtMemcpyKind kind,
                                              aclrtStream stream)
{
    char why[256];
    void *r;
    aclError e = rt_need_init("aclrtMemcpyAsync");
    if (e) return e;
    int rc = core_stream_get(stream, &r, why, sizeof why);
    if (rc) return core_fail(rc, "EE1001", "aclrtMemcpyAsync: %s", why);
    uint64_t t0 = devtime_thread_cpu_ns();
    e = mem_copy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
    if (!e) devtime_copy(r, devtime_thread_cpu_ns() - t0, count, kind, dst, src);
    return e;
}
