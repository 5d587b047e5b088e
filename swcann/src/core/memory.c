/* Simulated device memory = host memory with a registry of live blocks.
 * - aclrtMalloc: 32-byte aligned blocks, filled with 0xBE so nothing relies on
 *   zeroed device memory; requested size is the valid extent (strict: the real
 *   allocator's 32-byte padding is NOT usable).
 * - aclrtFree: poisons the block with 0xDB and keeps it in a FIFO quarantine
 *   (SWCANN_QUARANTINE_MB, default 256) so its address is not reused and a
 *   use-after-free is recognised as such.
 * - memcpy/memset validate device ranges against LIVE blocks. */
#include "core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uintptr_t base; size_t size; int device; } blk_t;
typedef struct qnode { uintptr_t base; size_t size; struct qnode *next; } qnode_t;
typedef struct { uintptr_t base; size_t size; } span_t;

/* An array of records that each begin with their uintptr_t base, kept sorted by base: found by
 * binary search, inserted and removed in place. The live blocks are one; the quarantine keeps
 * one beside its FIFO list, because every memcpy asks whether its host pointer lies in a freed
 * block, and walking the list for that cost ~0.3 ms per copy after a few thousand cases. */
typedef struct { char *recs; size_t n, cap, stride; } sorted_t;

static sorted_t g_blocks = {NULL, 0, 0, sizeof(blk_t)};     /* live aclrtMalloc blocks */
static sorted_t g_qindex = {NULL, 0, 0, sizeof(span_t)};    /* the quarantine, by address */
static int64_t g_dev_bytes, g_host_allocs, g_host_bytes;
static qnode_t *g_qhead, *g_qtail;
static size_t g_qbytes;

typedef struct hnode { uintptr_t p; size_t size; struct hnode *next; } hnode_t;
static hnode_t *g_host; /* aclrtMallocHost blocks (counted in stats) */

static size_t quarantine_cap(void)
{
    const char *e = getenv("SWCANN_QUARANTINE_MB");
    long mb = e ? atol(e) : 256;
    if (mb < 0) mb = 0;
    return (size_t)mb << 20;
}

static void *sorted_at(const sorted_t *t, size_t i) { return t->recs + i * t->stride; }

/* index of the first record whose base is > p */
static size_t sorted_upper(const sorted_t *t, uintptr_t p)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uintptr_t base;
        memcpy(&base, sorted_at(t, mid), sizeof base);
        if (base <= p) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* the record holding address p's base at or below p, or NULL */
static void *sorted_floor(const sorted_t *t, uintptr_t p)
{
    size_t i = sorted_upper(t, p);
    return i ? sorted_at(t, i - 1) : NULL;
}

static int sorted_insert(sorted_t *t, const void *rec)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        char *grown = realloc(t->recs, cap * t->stride);
        if (!grown) return 0;
        t->recs = grown;
        t->cap = cap;
    }
    uintptr_t base;
    memcpy(&base, rec, sizeof base);
    size_t i = sorted_upper(t, base);
    memmove(sorted_at(t, i + 1), sorted_at(t, i), (t->n - i) * t->stride);
    memcpy(sorted_at(t, i), rec, t->stride);
    t->n++;
    return 1;
}

static void sorted_remove(sorted_t *t, void *rec)
{
    char *at = rec;
    memmove(at, at + t->stride, (size_t)(t->recs + t->n * t->stride - at - t->stride));
    t->n--;
}

static const blk_t *containing(uintptr_t p)
{
    const blk_t *b = sorted_floor(&g_blocks, p);
    return b && (p < b->base + b->size || (b->size == 0 && p == b->base)) ? b : NULL;
}

static const span_t *in_quarantine(uintptr_t p)
{
    const span_t *q = sorted_floor(&g_qindex, p);
    return q && p < q->base + (q->size ? q->size : 1) ? q : NULL;
}

int mem_is_device_ptr(const void *p)
{
    pthread_mutex_lock(&g_lock);
    int r = containing((uintptr_t)p) || in_quarantine((uintptr_t)p);
    pthread_mutex_unlock(&g_lock);
    return r;
}

static int check_locked(const void *p, uint64_t bytes, char *why, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    const blk_t *b = containing(a);
    if (!b) {
        if (in_quarantine(a))
            snprintf(why, n, "address %p lies in a FREED device block (use after free)", p);
        else
            snprintf(why, n, "address %p is not inside any live device allocation", p);
        return -1;
    }
    if (bytes > b->base + b->size - a) {
        snprintf(why, n,
                 "range [%p, +%llu bytes) overruns its device block [0x%llx, +%llu bytes) by %llu "
                 "bytes",
                 p, (unsigned long long)bytes, (unsigned long long)b->base,
                 (unsigned long long)b->size,
                 (unsigned long long)(bytes - (b->base + b->size - a)));
        return -1;
    }
    return 0;
}

int mem_check(const void *p, uint64_t bytes, char *why, size_t n)
{
    pthread_mutex_lock(&g_lock);
    int r = check_locked(p, bytes, why, n);
    pthread_mutex_unlock(&g_lock);
    return r;
}

void mem_stats(int64_t *allocs, int64_t *bytes)
{
    pthread_mutex_lock(&g_lock);
    *allocs = (int64_t)g_blocks.n + g_host_allocs;
    *bytes = g_dev_bytes + g_host_bytes;
    pthread_mutex_unlock(&g_lock);
}

static int policy_ok(int policy)
{
    int base = policy & 0xff;
    int flags = policy & ~0xff;
    return base >= 0 && base <= 7 && (flags & ~(0x0100 | 0x1000 | 0x100000)) == 0;
}

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    aclError e = rt_need_init("aclrtMalloc");
    if (!e) e = rt_need_device("aclrtMalloc", NULL);
    if (e) return e;
    if (!devPtr)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value nullptr for devPtr is invalid. Reason: must not be null.");
    if (size == 0)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value 0 for size is invalid. Reason: must be greater than 0.");
    if (!policy_ok((int)policy))
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value %d for policy is invalid. Reason: unknown aclrtMemMallocPolicy.",
                         (int)policy);
    int32_t f = rt_take_fault(SWC_FAULT_MALLOC);
    if (f) return core_fail(f, "EE9999", "aclrtMalloc: injected fault (swcann) code %d", f);
    size_t rounded = (size + 31u) & ~(size_t)31u;
    if (rounded < size) return core_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "EE1001", "size overflow");
    void *p = aligned_alloc(32, rounded);
    if (!p)
        return core_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "EE2001",
                         "aclrtMalloc: out of (simulated) device memory, size %zu", size);
    memset(p, 0xBE, rounded);
    int dev = rt_current_device(); /* before taking g_lock: the mutex is not recursive */
    pthread_mutex_lock(&g_lock);
    if (!sorted_insert(&g_blocks, &(blk_t){(uintptr_t)p, size, dev})) {
        pthread_mutex_unlock(&g_lock);
        free(p);
        return core_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "EE2001", "registry allocation failed");
    }
    g_dev_bytes += (int64_t)size;
    pthread_mutex_unlock(&g_lock);
    *devPtr = p;
    return ACL_SUCCESS;
}

/* caller holds g_lock */
static void quarantine_push(uintptr_t base, size_t size)
{
    size_t cap = quarantine_cap();
    memset((void *)base, 0xDB, size);
    if (size > cap) { free((void *)base); return; } /* too big to keep: release now */
    qnode_t *q = malloc(sizeof *q);
    if (!q || !sorted_insert(&g_qindex, &(span_t){base, size})) { free(q); free((void *)base); return; }
    *q = (qnode_t){base, size, NULL};
    if (g_qtail) g_qtail->next = q; else g_qhead = q;
    g_qtail = q;
    g_qbytes += size;
    while (g_qbytes > cap && g_qhead) {
        qnode_t *h = g_qhead;
        g_qhead = h->next;
        if (!g_qhead) g_qtail = NULL;
        g_qbytes -= h->size;
        span_t *indexed = sorted_floor(&g_qindex, h->base);
        if (indexed && indexed->base == h->base) sorted_remove(&g_qindex, indexed);
        free((void *)h->base);
        free(h);
    }
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr)
{
    aclError e = rt_need_init("aclrtFree");
    if (e) return e;
    if (!devPtr)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value nullptr for devPtr is invalid. Reason: must not be null.");
    pthread_mutex_lock(&g_lock);
    blk_t *live = sorted_floor(&g_blocks, (uintptr_t)devPtr);
    if (!live || live->base != (uintptr_t)devPtr) {
        int freed = in_quarantine((uintptr_t)devPtr) != NULL;
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001",
                         "aclrtFree: %p is %s", devPtr,
                         freed ? "already freed (double free)"
                               : "not the start of a live aclrtMalloc block");
    }
    blk_t b = *live;
    sorted_remove(&g_blocks, live);
    g_dev_bytes -= (int64_t)b.size;
    quarantine_push(b.base, (b.size + 31u) & ~(size_t)31u);
    pthread_mutex_unlock(&g_lock);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    aclError e = rt_need_init("aclrtMallocHost");
    if (e) return e;
    if (!hostPtr || size == 0)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "aclrtMallocHost: hostPtr must not be null and size must be > 0");
    void *p = aligned_alloc(64, (size + 63u) & ~(size_t)63u);
    hnode_t *h = malloc(sizeof *h);
    if (!p || !h) {
        free(p);
        free(h);
        return core_fail(ACL_ERROR_BAD_ALLOC, "EH9999", "aclrtMallocHost: out of memory");
    }
    pthread_mutex_lock(&g_lock);
    *h = (hnode_t){(uintptr_t)p, size, g_host};
    g_host = h;
    g_host_allocs++;
    g_host_bytes += (int64_t)size;
    pthread_mutex_unlock(&g_lock);
    *hostPtr = p;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr)
{
    if (!hostPtr)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtFreeHost: hostPtr is null");
    pthread_mutex_lock(&g_lock);
    for (hnode_t **pp = &g_host; *pp; pp = &(*pp)->next) {
        if ((*pp)->p == (uintptr_t)hostPtr) {
            hnode_t *h = *pp;
            *pp = h->next;
            g_host_allocs--;
            g_host_bytes -= (int64_t)h->size;
            pthread_mutex_unlock(&g_lock);
            free((void *)h->p);
            free(h);
            return ACL_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                     "aclrtFreeHost: %p is not a live aclrtMallocHost block", hostPtr);
}

/* validate one side of a copy; dev: 1 device, 0 host */
static aclError side_ok(const char *api, const char *what, const void *p, size_t n, int dev)
{
    char why[256];
    if (dev) {
        if (check_locked(p, n, why, sizeof why) != 0)
            return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001", "%s: %s: %s", api, what, why);
    } else if (containing((uintptr_t)p) || in_quarantine((uintptr_t)p)) {
        return core_fail(ACL_ERROR_RT_PARAM_INVALID, "EE1001",
                         "%s: %s %p is a device address but the copy kind says host", api, what, p);
    }
    return ACL_SUCCESS;
}

aclError mem_copy(const char *api, void *dst, size_t destMax, const void *src, size_t count,
                  aclrtMemcpyKind kind)
{
    aclError e = rt_need_init(api);
    if (!e) e = rt_need_device(api, NULL);
    if (e) return e;
    if (!dst || !src)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "%s: dst and src must not be null", api);
    if (count > destMax)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value %zu for count is invalid. Reason: greater than destMax %zu.", count,
                         destMax);
    if (count == 0) return ACL_SUCCESS;
    pthread_mutex_lock(&g_lock);
    int sdev, ddev;
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: sdev = 0; ddev = 0; break;
    case ACL_MEMCPY_HOST_TO_DEVICE: case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: sdev = 0; ddev = 1; break;
    case ACL_MEMCPY_DEVICE_TO_HOST: sdev = 1; ddev = 0; break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE: case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: sdev = 1; ddev = 1; break;
    case ACL_MEMCPY_DEFAULT: /* inferred from the address (unified addressing) */
        sdev = containing((uintptr_t)src) != NULL || in_quarantine((uintptr_t)src) != NULL;
        ddev = containing((uintptr_t)dst) != NULL || in_quarantine((uintptr_t)dst) != NULL;
        break;
    default:
        pthread_mutex_unlock(&g_lock);
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value %d for kind is invalid. Reason: unknown aclrtMemcpyKind.", (int)kind);
    }
    e = side_ok(api, "src", src, count, sdev);
    if (!e) e = side_ok(api, "dst", dst, count, ddev);
    if (!e) memmove(dst, src, count);
    pthread_mutex_unlock(&g_lock);
    return e;
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind)
{
    return mem_copy("aclrtMemcpy", dst, destMax, src, count, kind);
}

ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    aclError e = rt_need_init("aclrtMemset");
    if (!e) e = rt_need_device("aclrtMemset", NULL);
    if (e) return e;
    if (!devPtr)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtMemset: devPtr is null");
    if (count > maxCount)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001",
                         "Value %zu for count is invalid. Reason: greater than maxCount %zu.",
                         count, maxCount);
    if (count == 0) return ACL_SUCCESS;
    pthread_mutex_lock(&g_lock);
    e = side_ok("aclrtMemset", "devPtr", devPtr, count, 1);
    if (!e) memset(devPtr, value & 0xff, count);
    pthread_mutex_unlock(&g_lock);
    return e;
}

ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *freeMem, size_t *total)
{
    (void)attr;
    aclError e = rt_need_init("aclrtGetMemInfo");
    if (e) return e;
    if (rt_current_device() < 0)
        return core_fail(ACL_ERROR_RT_CONTEXT_NULL, "EE1001",
                         "aclrtGetMemInfo: no current context in this thread");
    if (!freeMem || !total)
        return core_fail(ACL_ERROR_INVALID_PARAM, "EH0001", "aclrtGetMemInfo: null output pointer");
    size_t tot = (size_t)64 << 30; /* simulated 64 GiB HBM */
    pthread_mutex_lock(&g_lock);
    size_t used = (size_t)g_dev_bytes;
    pthread_mutex_unlock(&g_lock);
    *total = tot;
    *freeMem = used < tot ? tot - used : 0;
    return ACL_SUCCESS;
}
