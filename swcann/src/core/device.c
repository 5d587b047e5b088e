/* aclInit/aclFinalize, devices (per-thread current device, ref-counted
 * SetDevice/ResetDevice), contexts, sys-param options (acl_abi.md 3.3, 6). */
#include "core.h"
#include "devtime.h"
#include "faults.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static int g_init_ref;  /* aclInit reference count */
static int g_nn_init;   /* aclnnInit called */
static unsigned g_epoch = 1; /* bumped by aclFinalize: stale thread devices become invalid */
static int g_dev_count = -1;
static int g_dev_ref[SWC_MAX_DEVICES];
static int64_t g_sysopt[4];
static int g_sysopt_set[4];
static int64_t g_ctxopt[SWC_MAX_DEVICES][4];
static int g_ctxopt_set[SWC_MAX_DEVICES][4];
static struct { uint32_t magic; int dev; } g_ctx[SWC_MAX_DEVICES];
static _Thread_local int tl_dev = -1;
static _Thread_local unsigned tl_epoch;

void stream_reset_device(int dev); /* stream.c, caller holds g_lock */

int rt_initialized(void)
{
    pthread_mutex_lock(&g_lock);
    int r = g_init_ref > 0;
    pthread_mutex_unlock(&g_lock);
    return r;
}

int core_nn_ready(void)
{
    pthread_mutex_lock(&g_lock);
    int r = g_init_ref > 0 || g_nn_init;
    pthread_mutex_unlock(&g_lock);
    return r;
}

void core_nn_set(int on)
{
    pthread_mutex_lock(&g_lock);
    g_nn_init = on;
    pthread_mutex_unlock(&g_lock);
}

static int cur_dev_locked(void)
{
    if (tl_dev < 0 || tl_epoch != g_epoch || g_init_ref <= 0) return -1;
    return g_dev_ref[tl_dev] > 0 ? tl_dev : -1;
}

int rt_current_device(void)
{
    pthread_mutex_lock(&g_lock);
    int d = cur_dev_locked();
    pthread_mutex_unlock(&g_lock);
    return d;
}

aclError rt_need_init(const char *api)
{
    if (rt_initialized()) return ACL_SUCCESS;
    return core_fail(ACL_ERROR_UNINITIALIZE, "EH0002", "%s: aclInit has not been called", api);
}

aclError rt_need_device(const char *api, int *dev)
{
    int d = rt_current_device();
    if (dev) *dev = d;
    if (d >= 0) return ACL_SUCCESS;
    return core_fail(ACL_ERROR_RT_CONTEXT_NULL, "EE1001",
                     "%s: no current context in this thread (call aclrtSetDevice)", api);
}

static int is_count(const char *e)
{
    char *end;
    long v = strtol(e, &end, 10);
    return end != e && !*end && v >= 1 && v <= SWC_MAX_DEVICES;
}

/* why the driver refused its device-count variables (src/driver/hal.c) */
static void device_env_why(char *why, size_t n)
{
    const char *now = getenv("SWCANN_DEVICES"), *old = getenv("SWCANN_DEVICE_COUNT");
    if (now && *now && !is_count(now))
        snprintf(why, n, "Value '%s' for env SWCANN_DEVICES is invalid. Reason: must be an integer in "
                 "[1, %d].", now, SWC_MAX_DEVICES);
    else if (old && *old && !is_count(old))
        snprintf(why, n, "Value '%s' for env SWCANN_DEVICE_COUNT is invalid. Reason: must be an integer in "
                 "[1, %d] (SWCANN_DEVICE_COUNT is the old name of SWCANN_DEVICES).", old, SWC_MAX_DEVICES);
    else
        snprintf(why, n, "Values '%s' for env SWCANN_DEVICES and '%s' for env SWCANN_DEVICE_COUNT disagree. "
                 "Reason: SWCANN_DEVICE_COUNT is the old name of SWCANN_DEVICES; set only SWCANN_DEVICES.",
                 now ? now : "", old ? old : "");
}

/* The physical devices the driver reports (libascend_hal.so: SWCANN_DEVICES, default 1),
 * filtered and re-indexed by ASCEND_RT_VISIBLE_DEVICES: parsing stops at the first invalid
 * character or id, duplicates are an error (EE2002) -- acl_abi.md 6. */
static int parse_devices(int *count, char *why, size_t n)
{
    uint32_t num = 0;
    if (drvGetDevNum(&num) != 0 || num > SWC_MAX_DEVICES) {
        device_env_why(why, n);
        return -1;
    }
    long phys = (long)num;
    const char *v = getenv("ASCEND_RT_VISIBLE_DEVICES");
    if (!v || !*v) { *count = (int)phys; return 0; }
    int seen[SWC_MAX_DEVICES] = {0}, cnt = 0;
    const char *p = v;
    while (*p) {
        if (*p < '0' || *p > '9') break;
        long id = 0;
        while (*p >= '0' && *p <= '9' && id <= SWC_MAX_DEVICES) id = id * 10 + (*p++ - '0');
        if (id >= phys) break;
        if (seen[id]) {
            snprintf(why, n, "EE2002 Value '%s' for env ASCEND_RT_VISIBLE_DEVICES is invalid. "
                     "Reason: duplicate device id %ld.", v, id);
            return -1;
        }
        seen[id] = 1;
        cnt++;
        if (*p == ',') p++; else break;
    }
    *count = cnt;
    return 0;
}

static void reset_all_locked(void)
{
    for (int d = 0; d < SWC_MAX_DEVICES; d++) {
        if (g_dev_ref[d] > 0) {
            stream_reset_device(d);
            faults_device_reset(d);
        }
        g_dev_ref[d] = 0;
        memset(g_ctxopt_set[d], 0, sizeof g_ctxopt_set[d]);
    }
}

ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath)
{
    char why[1600]; /* room for the list of known SWCANN_FAULTS names */
    pthread_mutex_lock(&g_lock);
    if (g_init_ref > 0) {
        g_init_ref++;
        pthread_mutex_unlock(&g_lock);
        core_set_last_error(ACL_ERROR_REPEAT_INITIALIZE);
        return ACL_ERROR_REPEAT_INITIALIZE; /* acl_abi.md 6: ignorable */
    }
    if (configPath && *configPath && access(configPath, R_OK) != 0) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_INVALID_FILE, "EH0001",
                         "Value %s for configPath is invalid. Reason: file is not readable.",
                         configPath);
    }
    const char *env = getenv("SWCANN_SOC");
    const swc_soc_info *soc = soc_reload(); /* read at every aclInit: a process may switch families */
    if (!soc) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value '%s' for env SWCANN_SOC is invalid. Reason: allowed values are %s "
                         "(software CANN).", env ? env : "", soc_allowed_text());
    }
    /* SWCANN_DEVIATIONS is "1" (on) or "0" / unset (off): a "yes" read as off would run the
     * documented semantics while the report records the variable as set */
    const char *dev = getenv("SWCANN_DEVIATIONS");
    if (dev && strcmp(dev, "1") != 0 && strcmp(dev, "0") != 0 && *dev) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value '%s' for env SWCANN_DEVIATIONS is invalid. Reason: allowed values are 1 "
                         "(reproduce the documented hardware deviations) and 0 (software CANN).", dev);
    }
    int cnt;
    if (parse_devices(&cnt, why, sizeof why) != 0 || faults_load(why, sizeof why) != 0 ||
        devtime_load(soc, why, sizeof why) != 0) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "%s", why);
    }
    g_dev_count = cnt;
    g_init_ref = 1;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclFinalize(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_init_ref <= 0) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_REPEAT_FINALIZE, "EH0002", "aclFinalize: not initialized "
                         "(repeated finalize)");
    }
    g_init_ref = 0;
    reset_all_locked();
    g_epoch++;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclFinalizeReference(uint64_t *refCount)
{
    pthread_mutex_lock(&g_lock);
    if (g_init_ref <= 0) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_REPEAT_FINALIZE, "EH0002", "aclFinalizeReference: not initialized");
    }
    if (--g_init_ref == 0) {
        reset_all_locked();
        g_epoch++;
    }
    if (refCount) *refCount = (uint64_t)g_init_ref;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count)
{
    char why[512];
    if (!count)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtGetDeviceCount: count is null");
    int cnt;
    pthread_mutex_lock(&g_lock);
    int rc = g_init_ref > 0 ? (cnt = g_dev_count, 0) : parse_devices(&cnt, why, sizeof why);
    pthread_mutex_unlock(&g_lock);
    if (rc != 0) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "%s", why);
    if (cnt == 0)
        return core_fail(ACL_ERROR_RT_NO_DEVICE, "EE1001",
                         "aclrtGetDeviceCount: no visible device (ASCEND_RT_VISIBLE_DEVICES)");
    *count = (uint32_t)cnt;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId)
{
    pthread_mutex_lock(&g_lock);
    if (g_init_ref <= 0) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_UNINITIALIZE, "EH0002", "aclrtSetDevice: aclInit has not been called");
    }
    if (deviceId < 0 || deviceId >= g_dev_count) {
        int c = g_dev_count;
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_RT_INVALID_DEVICEID, "EE1001",
                         "Value %d for deviceId is invalid. Reason: visible device count is %d.",
                         deviceId, c);
    }
    g_dev_ref[deviceId]++;
    g_ctx[deviceId].magic = 0x43545821u;
    g_ctx[deviceId].dev = deviceId;
    tl_dev = deviceId;
    tl_epoch = g_epoch;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

static aclError reset_dev(int32_t deviceId, int force)
{
    pthread_mutex_lock(&g_lock);
    if (g_init_ref <= 0) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_UNINITIALIZE, "EH0002", "aclrtResetDevice: aclInit has not been called");
    }
    if (deviceId < 0 || deviceId >= g_dev_count) {
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_RT_INVALID_DEVICEID, "EE1001",
                         "Value %d for deviceId is invalid.", deviceId);
    }
    if (g_dev_ref[deviceId] > 0 && (force || --g_dev_ref[deviceId] == 0)) {
        g_dev_ref[deviceId] = 0;
        /* the device's context and streams go away; memory blocks stay registered so
         * that leaks remain visible in swcannGetStats */
        stream_reset_device(deviceId);
        faults_device_reset(deviceId);
        memset(g_ctxopt_set[deviceId], 0, sizeof g_ctxopt_set[deviceId]);
    }
    if (tl_dev == deviceId && g_dev_ref[deviceId] == 0) tl_dev = -1;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) { return reset_dev(deviceId, 0); }
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId) { return reset_dev(deviceId, 1); }

ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId)
{
    if (!deviceId)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtGetDevice: deviceId is null");
    int d;
    aclError e = rt_need_device("aclrtGetDevice", &d);
    if (e) return e;
    *deviceId = d;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context)
{
    if (!context)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtGetCurrentContext: null output");
    int d = rt_current_device();
    if (d < 0)
        return core_fail(ACL_ERROR_RT_CONTEXT_NULL, "EE1001", "no current context in this thread");
    *context = &g_ctx[d];
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context)
{
    pthread_mutex_lock(&g_lock);
    for (int d = 0; d < SWC_MAX_DEVICES; d++) {
        if (context == (void *)&g_ctx[d] && g_dev_ref[d] > 0 && g_init_ref > 0) {
            tl_dev = d;
            tl_epoch = g_epoch;
            pthread_mutex_unlock(&g_lock);
            return ACL_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                     "aclrtSetCurrentContext: %p is not a live context", context);
}

ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode)
{
    if (!runMode) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtGetRunMode: null output");
    *runMode = ACL_HOST; /* host-driven accelerator card */
    return ACL_SUCCESS;
}

static aclError opt_check(const char *api, aclSysParamOpt opt, int64_t value, int setting)
{
    if ((int)opt < 0 || (int)opt > 3)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "%s: Value %d for opt is invalid. Reason: unknown aclSysParamOpt.", api,
                         (int)opt);
    int64_t hi = opt == ACL_OPT_DETERMINISTIC ? 3 : 1; /* DETERMINISTIC range [0,4) */
    if (setting && (value < 0 || value > hi))
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "%s: Value %lld for opt %d is invalid. Reason: range is [0, %lld].", api,
                         (long long)value, (int)opt, (long long)hi);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value)
{
    aclError e = opt_check("aclrtCtxSetSysParamOpt", opt, value, 1);
    if (e) return e;
    pthread_mutex_lock(&g_lock);
    int d = cur_dev_locked();
    if (d >= 0) { g_ctxopt[d][opt] = value; g_ctxopt_set[d][opt] = 1; }
    pthread_mutex_unlock(&g_lock);
    if (d < 0)
        return core_fail(ACL_ERROR_RT_CONTEXT_NULL, "EE1001",
                         "aclrtCtxSetSysParamOpt: no current context in this thread");
    return ACL_SUCCESS;
}

/* one option from the current context's table (ctx) or the process-wide one */
static aclError opt_get(const char *api, aclSysParamOpt opt, int64_t *value, int ctx)
{
    aclError e = opt_check(api, opt, 0, 0);
    if (e) return e;
    if (!value) return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "value is null");
    pthread_mutex_lock(&g_lock);
    int d = ctx ? cur_dev_locked() : 0;
    int set = d >= 0 && (ctx ? g_ctxopt_set[d][opt] : g_sysopt_set[opt]);
    if (set) *value = ctx ? g_ctxopt[d][opt] : g_sysopt[opt];
    pthread_mutex_unlock(&g_lock);
    if (d < 0)
        return core_fail(ACL_ERROR_RT_CONTEXT_NULL, "EE1001", "%s: no current context in this thread",
                         api);
    if (!set)
        return core_fail(ACL_ERROR_RT_SYSPARAMOPT_NOT_SET, "EE1001", "%s: opt %d has not been set",
                         api, (int)opt);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value)
{
    return opt_get("aclrtCtxGetSysParamOpt", opt, value, 1);
}

ACL_FUNC_VISIBILITY aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value)
{
    aclError e = opt_check("aclrtSetSysParamOpt", opt, value, 1);
    if (e) return e;
    pthread_mutex_lock(&g_lock);
    g_sysopt[opt] = value;
    g_sysopt_set[opt] = 1;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value)
{
    return opt_get("aclrtGetSysParamOpt", opt, value, 0);
}

/* determinism as the op library sees it: current opbase reads the process-level option
 * (aclrtGetSysParamOpt, acl_abi.md 1.8), so a context-level setting alone does not count */
int64_t core_deterministic(void)
{
    pthread_mutex_lock(&g_lock);
    int64_t v = g_sysopt_set[0] ? g_sysopt[0] : 0;
    pthread_mutex_unlock(&g_lock);
    return v;
}
