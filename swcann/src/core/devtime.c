/* Device time: how far a piece of work advances its stream's clock (stream.h).
 *
 * Source 0 (default): the thread CPU time the kernel (or async copy) really spent, read
 * around it; a kernel doing twice the work takes about twice the time, with real noise.
 * Source 1 (SWCANN_DEVICE_TIME=1): bytes moved / the modelled memory bandwidth of the
 * family, a model and not a measurement (swcann/README.md lists the figures and where they
 * come from).  That time is slept for real (clock_nanosleep, no spinning), so that many
 * simulated devices can be device-bound on a machine with few cores. */
#define _GNU_SOURCE
#include "devtime.h"
#include "core.h"
#include "stream.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Modelled peak memory bandwidth per family, bytes/s: generated from platforms/platform.yaml
 * (swc_platform.h), where each figure carries its source or the assumption behind it. */
static const struct { const char *family; const char *soc_prefix; double bytes_per_s; } k_bw[] = {
    SWC_BANDWIDTH_ROWS};
#define HOST_LINK_BYTES_PER_S 32.0e9 /* PCIe 4.0 x16, one direction (assumption, every family) */
#define MAX_GBPS 1.0e6

static int g_source = -1;        /* -1 until the first aclInit */
static double g_bytes_per_s;     /* the modelled memory bandwidth in force */

static double family_bandwidth(const swc_soc_info *soc)
{
    for (size_t i = 0; i < sizeof k_bw / sizeof k_bw[0]; i++)
        if (strcmp(soc->family, k_bw[i].family) == 0 &&
            strncmp(soc->soc_name, k_bw[i].soc_prefix, strlen(k_bw[i].soc_prefix)) == 0)
            return k_bw[i].bytes_per_s;
    return 0.0; /* unreachable: every family has a row */
}

/* SWCANN_DEVICE_GBPS: a positive decimal, GB/s (1e9 bytes/s); 0 when unset */
static int parse_gbps(const char *v, double *out)
{
    char *end = NULL;
    double g = strtod(v, &end);
    if (end == v || *end || !isfinite(g) || g <= 0.0 || g > MAX_GBPS) return -1;
    *out = g * 1e9;
    return 0;
}

int devtime_load(const swc_soc_info *soc, char *why, size_t n)
{
    const char *src = getenv("SWCANN_DEVICE_TIME"), *gbps = getenv("SWCANN_DEVICE_GBPS");
    int source = src && strcmp(src, "1") == 0;
    if (src && *src && strcmp(src, "1") != 0 && strcmp(src, "0") != 0) {
        snprintf(why, n, "Value '%s' for env SWCANN_DEVICE_TIME is invalid. Reason: allowed values are 1 "
                 "(events report modelled device time) and 0 (the kernels' CPU time).", src);
        return -1;
    }
    double bw = family_bandwidth(soc);
    if (gbps && *gbps) {
        if (parse_gbps(gbps, &bw) != 0) {
            snprintf(why, n, "Value '%s' for env SWCANN_DEVICE_GBPS is invalid. Reason: must be a number "
                     "of GB/s in (0, %.0f].", gbps, MAX_GBPS);
            return -1;
        }
        if (!source) { /* a run would be labelled CPU time while its owner expects the model */
            snprintf(why, n, "Value '%s' for env SWCANN_DEVICE_GBPS is invalid. Reason: it sets the modelled "
                     "bandwidth, which only SWCANN_DEVICE_TIME=1 uses.", gbps);
            return -1;
        }
    }
    g_source = source;
    g_bytes_per_s = bw;
    return 0;
}

ACL_FUNC_VISIBILITY int32_t swcannGetTimingSource(void)
{
    pthread_mutex_lock(&g_lock);
    int s = g_source;
    pthread_mutex_unlock(&g_lock);
    return s;
}

uint64_t devtime_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* the modelled time really passes on this thread; it sleeps, so the core is free meanwhile */
static void sleep_ns(uint64_t ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t at = (uint64_t)until.tv_nsec + ns % 1000000000u;
    until.tv_sec += (time_t)(ns / 1000000000u + at / 1000000000u);
    until.tv_nsec = (long)(at % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
    }
}

/* advance the stream's clock by the work's cost under the source in force */
static void advance(void *stream, uint64_t cpu_ns, double bytes, double bytes_per_s)
{
    pthread_mutex_lock(&g_lock);
    int modelled = g_source == 1;
    pthread_mutex_unlock(&g_lock);
    uint64_t ns = cpu_ns;
    if (modelled) {
        ns = (uint64_t)(bytes * 1e9 / bytes_per_s + 0.5); /* to the nearest ns */
        sleep_ns(ns);
    }
    stream_t *s = stream;
    pthread_mutex_lock(&g_lock);
    s->clock_ns += ns;
    pthread_mutex_unlock(&g_lock);
}

void devtime_kernel(void *stream, uint64_t cpu_ns, uint64_t bytes)
{
    pthread_mutex_lock(&g_lock);
    double bw = g_bytes_per_s;
    pthread_mutex_unlock(&g_lock);
    advance(stream, cpu_ns, (double)bytes, bw);
}

/* A device-to-device copy reads and writes device memory; a copy with a host side is
 * bounded by the host link instead. */
void devtime_copy(void *stream, uint64_t cpu_ns, size_t count, aclrtMemcpyKind kind, const void *dst,
                  const void *src)
{
    int on_dev_src, on_dev_dst;
    switch (kind) {
    case ACL_MEMCPY_DEVICE_TO_DEVICE: case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: on_dev_src = on_dev_dst = 1; break;
    case ACL_MEMCPY_DEFAULT: on_dev_src = mem_is_device_ptr(src); on_dev_dst = mem_is_device_ptr(dst); break;
    default: on_dev_src = on_dev_dst = 0; break;
    }
    pthread_mutex_lock(&g_lock);
    double bw = g_bytes_per_s;
    pthread_mutex_unlock(&g_lock);
    if (on_dev_src && on_dev_dst) advance(stream, cpu_ns, 2.0 * (double)count, bw);
    else advance(stream, cpu_ns, (double)count, HOST_LINK_BYTES_PER_S);
}
