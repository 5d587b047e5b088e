/* Internal declarations shared by the files of libascendcl.so (all hidden). */
#ifndef SWC_CORE_INTERNAL_H_
#define SWC_CORE_INTERNAL_H_
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "acl/acl.h"
#include "../shared/swc_core.h"

#define SWC_MAX_DEVICES 64

extern pthread_mutex_t g_lock; /* guards every global below and in memory/objreg */

/* errmsg.c */
void core_set_msg(const char *code, const char *text);
void core_msgf(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void core_set_dev_msg(const char *code, const char *text);
aclError core_fail(aclError ret, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void core_set_last_error(aclError e);

/* libascend_hal.so (the driver tree, src/driver/): physical device count, 0 on success */
int drvGetDevNum(uint32_t *num_dev);

/* soc.c */
const swc_soc_info *soc_resolve(const char *value); /* NULL: invalid */
const swc_soc_info *soc_current(void);               /* cached; NULL if SWCANN_SOC invalid */
const swc_soc_info *soc_reload(void); /* caller holds g_lock */
const char *soc_allowed_text(void);

/* objreg.c */
int objreg_add(const void *p, int kind);
int objreg_del(const void *p, int kind);
int objreg_kind(const void *p);
int64_t objreg_live(void);

/* memory.c */
int mem_check(const void *p, uint64_t bytes, char *why, size_t n);
void mem_stats(int64_t *allocs, int64_t *bytes);
int mem_is_device_ptr(const void *p); /* live or quarantined device block */

/* event.c */
int64_t events_live(void); /* live aclrtEvent objects (counted with the ACL objects in swcannGetStats) */

/* runtime.c */
int rt_initialized(void);
int rt_current_device(void); /* -1 when this thread has no device */
/* the preconditions most runtime calls share, checked in the caller's order; each
 * returns 0 or the status after recording the message ("<api>: ...") */
aclError rt_need_init(const char *api);            /* aclInit has been called (100001) */
aclError rt_need_device(const char *api, int *dev); /* thread has a device (107002); dev may be NULL */
int32_t rt_take_fault(int site);
int core_nn_ready(void);
void core_nn_set(int on);
int64_t core_deterministic(void);
int core_stream_get(void *stream, void **resolved, char *why, size_t n);
void core_stream_fail(void *resolved, int code, const char *text);


aclError mem_copy(const char *api, void *dst, size_t destMax, const void *src, size_t count,
                  aclrtMemcpyKind kind);
#endif
