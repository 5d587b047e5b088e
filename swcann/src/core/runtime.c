/* Misc runtime API, swcann extensions and the internal table handed to
 * libnnopbase.so / libopapi.so. */
#include "core.h"
#include "devtime.h"
#include "faults.h"
#include <stdlib.h>
#include <string.h>
#include "../shared/swc_half.h"
#include "../shared/swc_types.h"

static int32_t g_fault[SWC_FAULT_N];

int32_t rt_take_fault(int site)
{
    pthread_mutex_lock(&g_lock);
    int32_t c = g_fault[site];
    g_fault[site] = 0;
    pthread_mutex_unlock(&g_lock);
    return c;
}

ACL_FUNC_VISIBILITY const char *aclrtGetSocName(void)
{
    const swc_soc_info *s = soc_current();
    if (!s) {
        const char *e = getenv("SWCANN_SOC");
        core_msgf("EH0001", "Value '%s' for env SWCANN_SOC is invalid. Reason: allowed values are %s.",
                  e ? e : "", soc_allowed_text());
        return NULL;
    }
    return s->soc_name;
}

ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
                                             int32_t *patchVersion)
{
    if (!majorVersion || !minorVersion || !patchVersion)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtGetVersion: null output");
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) { return swc_dtype_size(dataType); }
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value) { return swc_half_to_float(value); }
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value) { return swc_float_to_half(value); }

ACL_FUNC_VISIBILITY int32_t swcannGetStats(int64_t *liveAllocs, int64_t *liveBytes,
                                           int64_t *liveObjects)
{
    int64_t a, b;
    mem_stats(&a, &b);
    if (liveAllocs) *liveAllocs = a;
    if (liveBytes) *liveBytes = b;
    if (liveObjects) *liveObjects = objreg_live() + events_live();
    return 0;
}

/* Kernels launched by this process since aclInit, as a profiler counts tasks (msprof /
 * aclprof on hardware, read from its result files there, never in-process): a case reads it
 * before and after its phase 2 + sync. Like aclprof, it needs an initialised runtime. */
static uint64_t g_launches;

static void core_count_launch(void *stream)
{
    (void)stream;
    pthread_mutex_lock(&g_lock);
    g_launches++;
    pthread_mutex_unlock(&g_lock);
}

ACL_FUNC_VISIBILITY aclError swcannGetKernelLaunches(uint64_t *launches)
{
    aclError e = rt_need_init("swcannGetKernelLaunches");
    if (e) return e;
    if (!launches)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "swcannGetKernelLaunches: launches is null");
    pthread_mutex_lock(&g_lock);
    *launches = g_launches;
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY int32_t swcannInjectFault(const char *site, int32_t code)
{
    static const char *names[SWC_FAULT_N] = {"phase2", "sync", "malloc"};
    if (!site) return ACL_ERROR_INVALID_PARAM;
    for (int i = 0; i < SWC_FAULT_N; i++) {
        if (strcmp(site, names[i]) == 0) {
            pthread_mutex_lock(&g_lock);
            g_fault[i] = code; /* one-shot; 0 clears */
            pthread_mutex_unlock(&g_lock);
            return 0;
        }
    }
    return ACL_ERROR_INVALID_PARAM;
}

ACL_FUNC_VISIBILITY const char *swcannVersion(void)
{
    return "swcann " SWC_VERSION " (software CANN \xe2\x80\x94 simulated, NOT hardware)";
}

static int core_deviations(void)
{
    const char *e = getenv("SWCANN_DEVIATIONS");
    return e && strcmp(e, "1") == 0;
}

static void core_set_msg_cb(const char *code, const char *text) { core_set_msg(code, text); }

static const swc_core k_core = {
    .abi = SWC_CORE_ABI,
    .set_msg = core_set_msg_cb,
    .obj_add = objreg_add,
    .obj_del = objreg_del,
    .obj_kind = objreg_kind,
    .nn_ready = core_nn_ready,
    .nn_set = core_nn_set,
    .soc = soc_current,
    .deviations = core_deviations,
    .mem_check = mem_check,
    .stream_get = core_stream_get,
    .stream_fail = core_stream_fail,
    .take_fault = rt_take_fault,
    .deterministic = core_deterministic,
    .fault_on = faults_on,
    .fault_phase2 = faults_phase2,
    .count_launch = core_count_launch,
    .kernel_time = devtime_kernel,
};

SWC_API const swc_core *swcannCoreApi(uint32_t abi) { return abi == SWC_CORE_ABI ? &k_core : NULL; }
