/* Internal contract between the three swcann libraries.
 * libascendcl.so owns all process state (messages, registries, memory, streams,
 * SoC); libnnopbase.so and libopapi.so reach it through ONE exported table
 * (swcannCoreApi) so that only the CANN API plus swcann* names are exported. */
#ifndef SWC_CORE_H_
#define SWC_CORE_H_
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SWC_API __attribute__((visibility("default")))
#define SWC_CORE_ABI 2u
#define SWC_VERSION "0.1.0"

enum swc_kind { SWC_K_TENSOR = 1, SWC_K_INTARRAY, SWC_K_BOOLARRAY, SWC_K_FLOATARRAY,
                SWC_K_SCALAR, SWC_K_EXECUTOR, SWC_K_COUNT };

/* NpuArch (enum swc_arch) and SocVersion (enum swc_socv) as the ops' code switches on them:
 * generated from platforms/platform.yaml at build time. */
#include "swc_platform.h"

typedef struct {
    const char *family;   /* "ascend910b", ... */
    const char *soc_name; /* what aclrtGetSocName() returns */
    int socv;             /* enum swc_socv */
    int arch;             /* enum swc_arch */
} swc_soc_info;

/* fault sites */
enum { SWC_FAULT_PHASE2 = 0, SWC_FAULT_SYNC = 1, SWC_FAULT_MALLOC = 2, SWC_FAULT_N = 3 };

typedef struct swc_core {
    uint32_t abi;
    /* thread-local recent error message ("CODE: [PID: p] ts text") */
    void (*set_msg)(const char *code, const char *text);
    /* live object registry */
    int (*obj_add)(const void *p, int kind);
    int (*obj_del)(const void *p, int kind); /* 0 if p was live with that kind */
    int (*obj_kind)(const void *p);          /* kind, or 0 when not live */
    /* aclInit / aclnnInit state and the simulated SoC (NULL: SWCANN_SOC invalid) */
    int (*nn_ready)(void);
    void (*nn_set)(int on);
    const swc_soc_info *(*soc)(void);
    int (*deviations)(void); /* SWCANN_DEVIATIONS=1 */
    /* memory: 0 when [p, p+bytes) lies in one LIVE device block, else fills why */
    int (*mem_check)(const void *p, uint64_t bytes, char *why, size_t n);
    /* streams: resolve (NULL -> default stream of the thread's device); 0 ok */
    int (*stream_get)(void *stream, void **resolved, char *why, size_t n);
    /* record an asynchronous (device-side) error reported by the next sync */
    void (*stream_fail)(void *resolved, int code, const char *text);
    int32_t (*take_fault)(int site); /* one-shot injected code, 0 if none */
    int64_t (*deterministic)(void);
    /* SWCANN_FAULTS (src/core/faults.c): is fault `name` on for this launch? */
    int (*fault_on)(const char *name, const char *api, int64_t numel);
    /* run-level faults at a phase-2 launch; may not return; 1: the kernel must not run */
    int (*fault_phase2)(const char *api, int64_t numel, void *stream);
    /* one kernel launched onto a (resolved) stream: what a profiler's task count sees
     * (read back through swcannGetKernelLaunches) */
    void (*count_launch)(void *stream);
    /* a kernel ran on a (resolved) stream: the thread CPU time it took and the bytes it moved
     * (read + written); the stream's device clock advances (src/core/devtime.c) */
    void (*kernel_time)(void *stream, uint64_t cpu_ns, uint64_t bytes);
} swc_core;

SWC_API const swc_core *swcannCoreApi(uint32_t abi);

/* printf-style helper used by every library (each keeps a cached table). */
static inline void swc_msgf(const swc_core *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void swc_msgf(const swc_core *c, const char *code, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->set_msg(code, buf);
}
#endif
