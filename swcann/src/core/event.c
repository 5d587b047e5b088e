/* Events (acl_abi.md 2.1b): a record takes the stream's device clock (stream.h); the elapsed
 * time of two events is the difference of their stamps.  The rules and status codes are those of
 * CANN's runtime (hicann/runtime: acl event.cpp, the runtime's api_error.cc and event.cc), with
 * the choices swcann/README.md lists where the runtime is looser than its documented call order. */
#include "core.h"
#include "faults.h"
#include "stream.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVENT_DEFAULT_FLAGS 0x0Eu   /* aclrtCreateEvent: the runtime's RT_EVENT_DEFAULT (with TIME_LINE) */
#define FLAGS_WITH_FLAG 0x3Fu      /* what aclrtCreateEventWithFlag accepts */
#define FLAGS_EX 0x4Fu             /* what aclrtCreateEventExWithFlag accepts (IPC only there) */
#define MAX_LIMITED_EVENTS 65536   /* SYNC / EXTERNAL events per device (aclrtCreateEventWithFlag doc) */

typedef struct event {
    struct event *next;
    int dev;             /* the device of the context it was created in */
    uint32_t flag;
    int ex;              /* made by aclrtCreateEventExWithFlag ("new mode") */
    int recorded;
    uint64_t stream;     /* serial of the stream of its latest record */
    uint64_t seq;        /* that record's place in the stream's order */
    uint64_t stamp_ns;   /* the stream's clock at that record */
    int done;            /* the record is known complete: its timestamp can be read */
    int err;             /* device error the stream had parked when it was recorded */
    char err_msg[1536];
} event_t;

static event_t *g_events;
static int64_t g_live;
static int g_limited[SWC_MAX_DEVICES];

static int limited(const event_t *ev) { return !ev->ex && (ev->flag & (ACL_EVENT_SYNC | ACL_EVENT_EXTERNAL)); }

static event_t *find_locked(const void *h)
{
    for (event_t *e = g_events; e; e = e->next)
        if ((const void *)e == h) return e;
    return NULL;
}

int64_t events_live(void)
{
    pthread_mutex_lock(&g_lock);
    int64_t n = g_live;
    pthread_mutex_unlock(&g_lock);
    return n;
}

static void unlink_locked(event_t *ev)
{
    for (event_t **pp = &g_events; *pp; pp = &(*pp)->next) {
        if (*pp == ev) {
            *pp = ev->next;
            break;
        }
    }
    g_live--;
    if (limited(ev)) g_limited[ev->dev]--;
    free(ev);
}

void events_completed_locked(uint64_t serial, uint64_t upto)
{
    for (event_t *e = g_events; e; e = e->next)
        if (e->recorded && e->stream == serial && e->seq <= upto) e->done = 1;
}

void events_reset_device_locked(int dev)
{
    for (event_t *e = g_events, *next; e; e = next) {
        next = e->next;
        if (e->dev == dev) unlink_locked(e);
    }
}

/* the handle check every call makes after its null checks: 107017, as the runtime's object
 * validation answers a destroyed or foreign handle */
static event_t *live_or_fail(const char *api, const char *what, const void *h, aclError *e)
{
    event_t *ev = find_locked(h);
    if (!ev) {
        pthread_mutex_unlock(&g_lock);
        *e = core_fail(ACL_ERROR_RT_INVALID_HANDLE, "EE1017", "%s: %s %p is not a live event (destroyed, "
                       "never created, or its device was reset)", api, what, h);
    }
    return ev;
}

static const char *flag_rule(uint32_t flag, int ex)
{
    const uint32_t mask = ex ? FLAGS_EX : FLAGS_WITH_FLAG;
    const uint32_t alone[3] = {ACL_EVENT_DEVICE_USE_ONLY, ACL_EVENT_EXTERNAL, ACL_EVENT_IPC};
    for (int i = 0; i < 3; i++)
        if ((flag & alone[i]) && (flag & ~alone[i]))
            return "ACL_EVENT_DEVICE_USE_ONLY, ACL_EVENT_EXTERNAL and ACL_EVENT_IPC cannot be combined";
    if ((flag & mask) == 0 || flag > mask)
        return ex ? "an OR of ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, 0x4 and ACL_EVENT_TIME_LINE, "
                    "or ACL_EVENT_IPC alone"
                  : "an OR of ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, 0x4 and ACL_EVENT_TIME_LINE, or "
                    "ACL_EVENT_DEVICE_USE_ONLY or ACL_EVENT_EXTERNAL alone (ACL_EVENT_IPC: "
                    "aclrtCreateEventExWithFlag)";
    return NULL;
}

static aclError create(const char *api, aclrtEvent *event, uint32_t flag, int ex, int check_flag)
{
    if (!event) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "%s: event is null", api);
    aclError e = rt_need_init(api);
    if (e) return e;
    const char *rule = check_flag ? flag_rule(flag, ex) : NULL;
    if (rule)
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001", "%s: Value %#x for flag is invalid. Reason: "
                         "must be %s.", api, flag, rule);
    int d;
    if ((e = rt_need_device(api, &d))) return e;
    event_t *ev = calloc(1, sizeof *ev);
    if (!ev) return core_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "EE2001", "%s: out of memory", api);
    ev->dev = d;
    ev->flag = flag;
    ev->ex = ex;
    pthread_mutex_lock(&g_lock);
    if (limited(ev) && g_limited[d] >= MAX_LIMITED_EVENTS) {
        pthread_mutex_unlock(&g_lock);
        free(ev);
        return core_fail(ACL_ERROR_RT_NO_EVENT_RESOURCE, "EE1001", "%s: device %d already has %d events with "
                         "ACL_EVENT_SYNC or ACL_EVENT_EXTERNAL", api, d, MAX_LIMITED_EVENTS);
    }
    if (limited(ev)) g_limited[d]++;
    ev->next = g_events;
    g_events = ev;
    g_live++;
    pthread_mutex_unlock(&g_lock);
    *event = ev;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event)
{
    return create("aclrtCreateEvent", event, EVENT_DEFAULT_FLAGS, 0, 0);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    return create("aclrtCreateEventWithFlag", event, flag, 0, 1);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag)
{
    return create("aclrtCreateEventExWithFlag", event, flag, 1, 1);
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event)
{
    if (!event) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtDestroyEvent: event is null");
    aclError e = rt_need_init("aclrtDestroyEvent");
    if (e) return e;
    pthread_mutex_lock(&g_lock);
    event_t *ev = live_or_fail("aclrtDestroyEvent", "event", event, &e);
    if (!ev) return e;
    unlink_locked(ev);
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

/* the stream a record goes to: NULL is the current context's default stream; a stream or an
 * event of another device than the current context is refused (107003) */
static aclError record_target(aclrtStream stream, const event_t *ev, int d, stream_t **out)
{
    stream_t *s = stream ? stream_find_locked(stream) : stream_default_locked(d);
    if (!s)
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001", "aclrtRecordEvent: stream %p is not a live "
                         "stream (destroyed, never created, or its device was reset)", stream);
    if (s->dev != d)
        return core_fail(ACL_ERROR_RT_STREAM_CONTEXT, "EE1001", "aclrtRecordEvent: stream %p belongs to "
                         "device %d, not to the current context (device %d)", stream, s->dev, d);
    if (ev->dev != d)
        return core_fail(ACL_ERROR_RT_STREAM_CONTEXT, "EE1001", "aclrtRecordEvent: the event was created on "
                         "device %d, the current context is device %d", ev->dev, d);
    *out = s;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    if (!event) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtRecordEvent: event is null");
    aclError e = rt_need_init("aclrtRecordEvent");
    int d;
    if (e || (e = rt_need_device("aclrtRecordEvent", &d))) return e;
    pthread_mutex_lock(&g_lock);
    event_t *ev = live_or_fail("aclrtRecordEvent", "event", event, &e);
    if (!ev) return e;
    stream_t *s = NULL;
    if (ev->flag == ACL_EVENT_DEVICE_USE_ONLY)
        e = core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1006", "aclrtRecordEvent: an ACL_EVENT_DEVICE_USE_ONLY "
                      "event can be recorded only on the device");
    else
        e = record_target(stream, ev, d, &s);
    if (!e) {
        ev->recorded = 1;
        ev->stream = s->serial;
        ev->seq = ++s->records;
        ev->stamp_ns = s->clock_ns; /* work runs at launch: everything queued before is in it */
        ev->done = 0;
        ev->err = s->pend_code;
        memcpy(ev->err_msg, s->pend_msg, sizeof ev->err_msg);
    }
    pthread_mutex_unlock(&g_lock);
    return e;
}

/* the recorded work of `ev` as a synchronize finds it; caller holds g_lock, which is released */
typedef struct { int recorded, dev, err; uint64_t serial, seq; void *stream; char msg[1536]; } pending_t;

static pending_t pending_of(const event_t *ev)
{
    pending_t p = {ev->recorded, ev->dev, ev->err, ev->stream, ev->seq, NULL, ""};
    if (ev->recorded) p.stream = stream_by_serial_locked(ev->stream);
    memcpy(p.msg, ev->err_msg, sizeof p.msg);
    return p;
}

static void sleep_ms(int32_t ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static aclError sync_event(const char *api, aclrtEvent event, int32_t timeout)
{
    if (!event) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "%s: event is null", api);
    aclError e = rt_need_init(api);
    if (e) return e;
    if (timeout == 0) /* the runtime's rule; -1 waits without limit */
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001", "Value 0 for timeout is invalid. Reason: must "
                         "be -1 or > 0.");
    pthread_mutex_lock(&g_lock);
    event_t *ev = live_or_fail(api, "event", event, &e);
    if (!ev) return e;
    if (ev->flag == ACL_EVENT_EXTERNAL) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "EE1001", "%s: an ACL_EVENT_EXTERNAL event cannot "
                         "be synchronized", api);
    }
    pending_t p = pending_of(ev);
    pthread_mutex_unlock(&g_lock);
    if (!p.recorded) return ACL_SUCCESS; /* nothing to wait for */
    if (timeout > 0 && faults_sync_hangs(p.stream)) {
        sleep_ms(timeout);
        return core_fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "EE1001", "%s: the event did not complete within "
                         "%d ms", api, timeout);
    }
    int code = faults_sync(p.stream, p.dev); /* may never return (sync_hang) */
    if (!code && p.err) {
        core_set_dev_msg("EZ9999", p.msg);
        core_set_last_error(code = p.err);
    }
    if (code) return code;
    pthread_mutex_lock(&g_lock);
    events_completed_locked(p.serial, p.seq); /* in-order stream: earlier records are done too */
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    return sync_event("aclrtSynchronizeEvent", event, -1);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout)
{
    if (timeout < -1) /* checked before the event, as acl's event.cpp does */
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EH0001", "Value %d for timeout is invalid. Reason: "
                         "must be -1 or > 0.", timeout);
    return sync_event("aclrtSynchronizeEventWithTimeout", event, timeout);
}

ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    if (!event || !status)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtQueryEventStatus: %s is null",
                         event ? "status" : "event");
    aclError e = rt_need_init("aclrtQueryEventStatus");
    if (e) return e;
    pthread_mutex_lock(&g_lock);
    event_t *ev = live_or_fail("aclrtQueryEventStatus", "event", event, &e);
    if (!ev) return e;
    if (ev->flag == ACL_EVENT_EXTERNAL) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "EE1001", "aclrtQueryEventStatus: an "
                         "ACL_EVENT_EXTERNAL event has no status");
    }
    pending_t p = pending_of(ev);
    /* complete when a synchronize would return success at once; a never-recorded event is
     * complete only in the new mode (aclrtCreateEventExWithFlag), as in the runtime */
    int complete = p.recorded ? !p.err && !faults_sync_hangs(p.stream) && !faults_device_error(p.dev) : ev->ex;
    if (p.recorded && complete) events_completed_locked(p.serial, p.seq);
    pthread_mutex_unlock(&g_lock);
    *status = complete ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

/* the checks of the elapsed time between a and b after their handles; 0 or the status */
static aclError elapsed_check(const event_t *a, const event_t *b)
{
    const char *api = "aclrtEventElapsedTime";
    const uint32_t refuse = ACL_EVENT_EXTERNAL | ACL_EVENT_IPC; /* each can only stand alone */
    if ((a->flag & refuse) || (b->flag & refuse))
        return core_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "EE1001", "%s: ACL_EVENT_EXTERNAL and ACL_EVENT_IPC "
                         "events have no elapsed time", api);
    if (!a->recorded || !b->recorded)
        return core_fail(ACL_ERROR_RT_INTERNAL_ERROR, "EE9999", "%s: event recorder null: the %s event was "
                         "never recorded", api, a->recorded ? "end" : "start");
    if (!(a->flag & ACL_EVENT_TIME_LINE) || !(b->flag & ACL_EVENT_TIME_LINE))
        return core_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "EE1001", "%s: the %s event was created without "
                         "ACL_EVENT_TIME_LINE and records no timestamp", api,
                         a->flag & ACL_EVENT_TIME_LINE ? "end" : "start");
    if (!a->done || !b->done)
        return core_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "EE1001", "%s: the %s event's timestamp is not "
                         "there yet: synchronize its stream or the end event first (documented call order)",
                         api, a->done ? "end" : "start");
    if (a->dev != b->dev || a->stream != b->stream)
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001", "%s: the events were recorded on different %s "
                         "(the documented call order records both on one stream)", api,
                         a->dev != b->dev ? "devices" : "streams");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)
{
    const char *api = "aclrtEventElapsedTime";
    if (!ms || !startEvent || !endEvent)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "%s: %s is null", api,
                         !ms ? "ms" : !startEvent ? "startEvent" : "endEvent");
    aclError e = rt_need_init(api);
    if (e) return e;
    pthread_mutex_lock(&g_lock);
    const event_t *a = live_or_fail(api, "startEvent", startEvent, &e), *b;
    if (!a || !(b = live_or_fail(api, "endEvent", endEvent, &e))) return e;
    e = elapsed_check(a, b);
    if (!e) *ms = (float)((double)(int64_t)(b->stamp_ns - a->stamp_ns) / 1e6);
    pthread_mutex_unlock(&g_lock);
    return e;
}
