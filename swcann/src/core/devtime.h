/* What work costs on a stream's device clock (swcann/README.md "Device time").
 * Timing source 0: the thread CPU time the work really took.  Source 1
 * (SWCANN_DEVICE_TIME=1): the bytes it moved over the family's modelled bandwidth, a time
 * the calling thread really sleeps, so simulated devices can be device-bound on few cores. */
#ifndef SWC_CORE_DEVTIME_H_
#define SWC_CORE_DEVTIME_H_
#include <stddef.h>
#include <stdint.h>
#include "acl/acl.h"
#include "../shared/swc_core.h"

/* at aclInit, caller holds g_lock: SWCANN_DEVICE_TIME / SWCANN_DEVICE_GBPS for this SoC;
 * 0, or -1 with why filled */
int devtime_load(const swc_soc_info *soc, char *why, size_t n);
uint64_t devtime_thread_cpu_ns(void);
/* a kernel ran on a resolved stream: it took cpu_ns of thread CPU time and moved `bytes` */
void devtime_kernel(void *stream, uint64_t cpu_ns, uint64_t bytes);
/* aclrtMemcpyAsync of `count` bytes on a resolved stream took cpu_ns */
void devtime_copy(void *stream, uint64_t cpu_ns, size_t count, aclrtMemcpyKind kind, const void *dst,
                  const void *src);
#endif
