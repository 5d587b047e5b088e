/* swcann smoke driver: links against the built libraries (no dlopen) and walks
 * the documented call sequence (acl_abi.md 2.2 reference sequence) for each of
 * the five ops once valid (values checked by hand) and once invalid (status and
 * "check <ID>" in the message), plus use-after-free, executor reuse, fault
 * injection and a leak-free teardown (swcannGetStats == 0/0/0).
 * Exit status: number of failed checks (0 = all good). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_adaptive_max_pool2d_backward.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "aclnnop/aclnn_max_pool2d_with_indices_backward.h"
#include "aclnnop/aclnn_max_pool3d_with_argmax_backward.h"
#include "aclnnop/aclnn_max_unpool3d_backward.h"

static int g_fail;
static aclrtStream g_stream;
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            g_fail++;                                                       \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

typedef struct { void *dev; aclTensor *t; size_t bytes; } DT;

static DT mk(const int64_t *dims, int nd, aclDataType dt, aclFormat fmt, const void *host)
{
    DT r = {0};
    int64_t n = 1, strides[8];
    for (int i = nd; i-- > 0;) { strides[i] = n; n *= dims[i]; }
    r.bytes = (size_t)n * aclDataTypeSize(dt);
    size_t alloc = r.bytes ? r.bytes : 32;
    CHECK(aclrtMalloc(&r.dev, alloc, ACL_MEM_MALLOC_HUGE_FIRST) == 0, "malloc");
    if (host && r.bytes)
        CHECK(aclrtMemcpy(r.dev, alloc, host, r.bytes, ACL_MEMCPY_HOST_TO_DEVICE) == 0, "h2d");
    r.t = aclCreateTensor(dims, (uint64_t)nd, dt, strides, 0, fmt, dims, (uint64_t)nd, r.dev);
    CHECK(r.t != NULL, "create tensor");
    return r;
}

static void rm(DT *d)
{
    CHECK(aclDestroyTensor(d->t) == 0, "destroy tensor");
    if (d->dev) CHECK(aclrtFree(d->dev) == 0, "free");
    d->dev = NULL;
}

static void d2h(void *host, const DT *d)
{
    CHECK(aclrtMemcpy(host, d->bytes, d->dev, d->bytes, ACL_MEMCPY_DEVICE_TO_HOST) == 0, "d2h");
}

static void expect_msg(const char *needle)
{
    const char *m = aclGetRecentErrMsg();
    CHECK(m && strstr(m, needle), "message lacks '%s': %s", needle, m ? m : "(null)");
}

/* run phase 2 + sync, allocating the workspace only when > 0 */
typedef aclnnStatus (*phase2_t)(void *, uint64_t, aclOpExecutor *, aclrtStream);
static int run2(phase2_t fn, uint64_t ws, aclOpExecutor *ex)
{
    void *w = NULL;
    if (ws) CHECK(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) == 0, "ws malloc");
    int st = fn(w, ws, ex, g_stream);
    int sy = aclrtSynchronizeStream(g_stream);
    if (w) aclrtFree(w);
    return st ? st : sy;
}

static aclIntArray *ia(const int64_t *v, uint64_t n) { return aclCreateIntArray(v, n); }

/* a call that must pass: phase 1 status st, then phase 2 + sync; result copied to host */
static void expect_ok(const char *what, int st, phase2_t fn, uint64_t ws, aclOpExecutor *ex,
                      void *host, const DT *result)
{
    CHECK(st == 0, "%s phase1 %d", what, st);
    CHECK(run2(fn, ws, ex) == 0, "%s run", what);
    d2h(host, result);
}

/* a phase 1 that must fail with this status and name this check in its message */
static void expect_check(int st, int want, const char *id)
{
    char needle[64];
    snprintf(needle, sizeof needle, "check %s failed", id);
    CHECK(st == want, "%s: status %d, want %d", id, st, want);
    expect_msg(needle);
}

/* the four tensors of a max-pool backward: self and gradInput of shape sd; gradOutput
 * (values g) and indices (values idx, dtype idt) of shape gd */
typedef struct { DT self, go, ix, gi; } maxpool_io;
static maxpool_io mk_maxpool(const int64_t *sd, const int64_t *gd, int nd, aclDataType dt,
                             aclDataType idt, aclFormat fmt, const void *g, const void *idx)
{
    maxpool_io m = {mk(sd, nd, dt, fmt, NULL), mk(gd, nd, dt, fmt, g), mk(gd, nd, idt, fmt, idx),
                    mk(sd, nd, dt, fmt, NULL)};
    return m;
}
static void rm_maxpool(maxpool_io *m) { rm(&m->self), rm(&m->go), rm(&m->ix), rm(&m->gi); }

/* 2-D pooling attributes: kernel 2x2, stride 2x2, no padding, dilation 1 */
typedef struct { aclIntArray *k, *s, *p, *d; } attrs2d;
static attrs2d attrs_2x2(void)
{
    int64_t two[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1};
    attrs2d a = {ia(two, 2), ia(two, 2), ia(zero, 2), ia(one, 2)};
    return a;
}
static void attrs_rm(attrs2d *a)
{
    aclDestroyIntArray(a->k), aclDestroyIntArray(a->s), aclDestroyIntArray(a->p), aclDestroyIntArray(a->d);
}
static int mp2(const DT *go, const DT *self, const DT *ix, const DT *gi, attrs2d a, uint64_t *ws,
               aclOpExecutor **ex)
{
    return aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(go->t, self->t, ix->t, a.k, a.s, a.p, a.d,
                                                              false, gi->t, ws, ex);
}

static void test_maxpool2d(void)
{
    /* doc example (spec G.15): self (1,1,4,3), k=s=2, grad [0.4757, 0.1726], idx [0, 6] */
    int64_t sd[4] = {1, 1, 4, 3}, gd[4] = {1, 1, 2, 1};
    float g[2] = {0.4757f, 0.1726f}, out[12];
    int32_t idx[2] = {0, 6};
    maxpool_io io = mk_maxpool(sd, gd, 4, ACL_FLOAT, ACL_INT32, ACL_FORMAT_NCHW, g, idx);
    attrs2d a = attrs_2x2();
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = mp2(&io.go, &io.self, &io.ix, &io.gi, a, &ws, &ex); /* sets ws, ex first */
    expect_ok("mp2", st, aclnnMaxPool2dWithIndicesBackward, ws, ex, out, &io.gi);
    CHECK(out[0] == 0.4757f && out[6] == 0.1726f && out[1] == 0.0f && out[11] == 0.0f,
          "mp2 values %g %g %g", out[0], out[6], out[1]);
    /* invalid: fp16 on A2 -> B9 (dtype list {FLOAT} on DAV_2201) */
    DT h16 = mk(sd, 4, ACL_FLOAT16, ACL_FORMAT_NCHW, NULL);
    expect_check(mp2(&io.go, &h16, &io.ix, &io.gi, a, &ws, &ex), 161002, "B9");
    DT none = {0};
    expect_check(mp2(&none, &io.self, &io.ix, &io.gi, a, &ws, &ex), 161001, "B1");
    rm(&h16);
    rm_maxpool(&io);
    attrs_rm(&a);
}

static void test_maxpool3d(void)
{
    /* doc example: self (1,1,2,2,2), k=s=2, grad [0.4757], idx [6] -> gradInput[6] */
    int64_t sd[5] = {1, 1, 2, 2, 2}, gd[5] = {1, 1, 1, 1, 1};
    float g = 0.4757f, out[8];
    int32_t idx = 6;
    maxpool_io io = mk_maxpool(sd, gd, 5, ACL_FLOAT, ACL_INT32, ACL_FORMAT_ND, &g, &idx);
    DT self = io.self, go = io.go, ix = io.ix, gi = io.gi;
    int64_t two = 2, zero = 0, one = 1;
    aclIntArray *k = ia(&two, 1), *s = ia(&two, 1), *p = ia(&zero, 1), *d = ia(&one, 1);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnMaxPool3dWithArgmaxBackwardGetWorkspaceSize(go.t, self.t, ix.t, k, s, p, d, false,
                                                               gi.t, &ws, &ex);
    expect_ok("mp3", st, aclnnMaxPool3dWithArgmaxBackward, ws, ex, out, &gi);
    CHECK(out[6] == 0.4757f && out[0] == 0.0f && out[7] == 0.0f, "mp3 values %g", out[6]);
    /* fp16 with overlapping windows: fp32 workspace N*C*D*H*W*4 on A2/A3, sum 1.5+2.25 */
    int64_t s3[5] = {1, 1, 1, 1, 3}, g3[5] = {1, 1, 1, 1, 2}, k3[3] = {1, 1, 2}, s13[3] = {1, 1, 1};
    uint16_t gh[2] = {aclFloatToFloat16(1.5f), aclFloatToFloat16(2.25f)}, oh[3];
    int32_t i3[2] = {1, 1};
    maxpool_io io3 = mk_maxpool(s3, g3, 5, ACL_FLOAT16, ACL_INT32, ACL_FORMAT_ND, gh, i3);
    DT self3 = io3.self, go3 = io3.go, ix3 = io3.ix, gi3 = io3.gi;
    aclIntArray *kk = ia(k3, 3), *ss = ia(s13, 3);
    st = aclnnMaxPool3dWithArgmaxBackwardGetWorkspaceSize(go3.t, self3.t, ix3.t, kk, ss, p, d, false,
                                                           gi3.t, &ws, &ex);
    CHECK(st == 0 && ws > 32768, "mp3 fp16 overlap phase1 %d ws %llu", st, (unsigned long long)ws);
    CHECK(run2(aclnnMaxPool3dWithArgmaxBackward, ws, ex) == 0, "mp3 fp16 run");
    d2h(oh, &gi3);
    CHECK(aclFloat16ToFloat(oh[1]) == 3.75f && oh[0] == 0 && oh[2] == 0, "mp3 fp16 %g",
          aclFloat16ToFloat(oh[1]));
    /* invalid: INT64 indices on DAV_2201 -> B10 */
    DT i64 = mk(gd, 5, ACL_INT64, ACL_FORMAT_ND, NULL);
    st = aclnnMaxPool3dWithArgmaxBackwardGetWorkspaceSize(go.t, self.t, i64.t, k, s, p, d, false,
                                                           gi.t, &ws, &ex);
    expect_check(st, 161002, "B10");
    rm(&i64);
    rm_maxpool(&io3);
    rm_maxpool(&io);
    aclDestroyIntArray(k), aclDestroyIntArray(s), aclDestroyIntArray(p), aclDestroyIntArray(d);
    aclDestroyIntArray(kk), aclDestroyIntArray(ss);
}

static void test_adaptive(void)
{
    /* repo example: self (1,1,3,2), gradOut (1,1,2,1) = [1, 2], indices {1, 4} */
    int64_t sd[4] = {1, 1, 3, 2}, gd[4] = {1, 1, 2, 1};
    float g[2] = {1.0f, 2.0f}, out[6];
    int64_t idx[2] = {1, 4};
    maxpool_io io = mk_maxpool(sd, gd, 4, ACL_FLOAT, ACL_INT64, ACL_FORMAT_NCHW, g, idx);
    DT self = io.self, go = io.go, ix = io.ix, gi = io.gi;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(go.t, self.t, ix.t, gi.t, &ws, &ex);
    expect_ok("amp", st, aclnnAdaptiveMaxPool2dBackward, ws, ex, out, &gi);
    CHECK(out[1] == 1.0f && out[4] == 2.0f && out[0] == 0 && out[5] == 0, "amp values %g %g", out[1], out[4]);
    st = aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(go.t, self.t, ix.t, NULL, &ws, &ex);
    expect_check(st, 161001, "B1");
    /* out-of-plane index -> phase 2 ok, sync reports the AI Core exception */
    int64_t bad[2] = {1, 99};
    CHECK(aclrtMemcpy(ix.dev, ix.bytes, bad, sizeof bad, ACL_MEMCPY_HOST_TO_DEVICE) == 0, "h2d");
    st = aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(go.t, self.t, ix.t, gi.t, &ws, &ex);
    CHECK(st == 0, "amp phase1 %d", st);
    CHECK(run2(aclnnAdaptiveMaxPool2dBackward, ws, ex) == 507015, "amp oob index must be 507015");
    expect_msg("AI Core exception");
    rm_maxpool(&io);
}

static void test_avgpool(void)
{
    int64_t sd[4] = {1, 1, 4, 4}, gd[4] = {1, 1, 2, 2};
    float g[4] = {4, 8, 12, 16}, out[16];
    DT self = mk(sd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL), go = mk(gd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, g),
       gi = mk(sd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL);
    int64_t two[2] = {2, 2}, zero[2] = {0, 0};
    aclIntArray *k = ia(two, 2), *s = ia(two, 2), *p = ia(zero, 2);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnAvgPool2dBackwardGetWorkspaceSize(go.t, self.t, k, s, p, false, true, 0, 0, gi.t,
                                                    &ws, &ex);
    expect_ok("avg", st, aclnnAvgPool2dBackward, ws, ex, out, &gi);
    CHECK(out[0] == 1 && out[5] == 1 && out[2] == 2 && out[8] == 3 && out[15] == 4, "avg %g %g %g %g",
          out[0], out[2], out[8], out[15]);
    /* repeatable executor: two runs, then aclDestroyAclOpExecutor */
    st = aclnnAvgPool2dBackwardGetWorkspaceSize(go.t, self.t, k, s, p, false, true, 0, 0, gi.t, &ws, &ex);
    CHECK(st == 0 && aclSetAclOpExecutorRepeatable(ex) == 0, "repeatable");
    CHECK(run2(aclnnAvgPool2dBackward, ws, ex) == 0, "run 1");
    CHECK(run2(aclnnAvgPool2dBackward, ws, ex) == 0, "run 2");
    CHECK(aclDestroyAclOpExecutor(ex) == 0, "destroy exec");
    CHECK(aclDestroyAclOpExecutor(ex) == 561103, "double destroy exec");
    aclGetRecentErrMsg();
    /* non-repeatable executor run twice -> 561103 on the second call */
    st = aclnnAvgPool2dBackwardGetWorkspaceSize(go.t, self.t, k, s, p, false, true, 0, 0, gi.t, &ws, &ex);
    CHECK(run2(aclnnAvgPool2dBackward, ws, ex) == 0, "run once");
    CHECK(run2(aclnnAvgPool2dBackward, ws, ex) == 561103, "second run of non-repeatable");
    expect_msg("only once");
    /* invalid: ND format -> B1.4 */
    DT nd = mk(sd, 4, ACL_FLOAT, ACL_FORMAT_ND, NULL);
    st = aclnnAvgPool2dBackwardGetWorkspaceSize(go.t, nd.t, k, s, p, false, true, 0, 0, gi.t, &ws, &ex);
    expect_check(st, 161002, "B1.4");
    rm(&nd);
    /* use after free: free gradOutput's block, then run -> sync 507015 */
    st = aclnnAvgPool2dBackwardGetWorkspaceSize(go.t, self.t, k, s, p, false, true, 0, 0, gi.t, &ws, &ex);
    CHECK(st == 0, "avg phase1 %d", st);
    CHECK(aclrtFree(go.dev) == 0, "free go");
    go.dev = NULL;
    void *w = NULL;
    if (ws) aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK(aclnnAvgPool2dBackward(w, ws, ex, g_stream) == 0, "uaf phase2 returns 0");
    CHECK(aclrtSynchronizeStream(g_stream) == 507015, "uaf sync must be 507015");
    expect_msg("not inside a live device allocation");
    if (w) aclrtFree(w);
    /* injected sync fault */
    CHECK(swcannInjectFault("sync", 507014) == 0 && swcannInjectFault("bogus", 1) != 0, "inject");
    CHECK(aclrtSynchronizeStream(g_stream) == 507014, "injected sync");
    expect_msg("injected fault");
    rm(&self), rm(&go), rm(&gi);
    aclDestroyIntArray(k), aclDestroyIntArray(s), aclDestroyIntArray(p);
}

static void test_unpool(void)
{
    /* 4-D (N,D,H,W): gradOutput (1,1,1,4) int32, self (1,1,1,2), idx [3, 0] -> out [40, 10] */
    int64_t gd[4] = {1, 1, 1, 4}, sd[4] = {1, 1, 1, 2};
    int32_t g[4] = {10, 20, 30, 40}, out[2];
    int64_t idx[2] = {3, 0};
    DT go = mk(gd, 4, ACL_INT32, ACL_FORMAT_ND, g), self = mk(sd, 4, ACL_INT32, ACL_FORMAT_ND, NULL),
       ix = mk(sd, 4, ACL_INT64, ACL_FORMAT_ND, idx), o = mk(sd, 4, ACL_INT32, ACL_FORMAT_ND, NULL);
    int64_t os[3] = {1, 1, 4}, st3[3] = {1, 1, 1}, pd[3] = {0, 0, 0};
    aclIntArray *a = ia(os, 3), *b = ia(st3, 3), *c = ia(pd, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = aclnnMaxUnpool3dBackwardGetWorkspaceSize(go.t, self.t, ix.t, a, b, c, o.t, &ws, &ex);
    expect_ok("unpool", st, aclnnMaxUnpool3dBackward, ws, ex, out, &o);
    CHECK(out[0] == 40 && out[1] == 10, "unpool %d %d", out[0], out[1]);
    DT i32 = mk(sd, 4, ACL_INT32, ACL_FORMAT_ND, NULL);
    st = aclnnMaxUnpool3dBackwardGetWorkspaceSize(go.t, self.t, i32.t, a, b, c, o.t, &ws, &ex);
    expect_check(st, 161002, "B9");
    st = aclnnMaxUnpool3dBackwardGetWorkspaceSize(go.t, self.t, ix.t, a, b, c, o.t, NULL, &ex);
    expect_check(st, 161001, "B0");
    rm(&i32);
    rm(&go), rm(&self), rm(&ix), rm(&o);
    aclDestroyIntArray(a), aclDestroyIntArray(b), aclDestroyIntArray(c);
}

/* one AvgPool2dBackward launch (4x4 -> 2x2) queued on `stream`, phase 1 on the host */
static void avg_launch(aclrtStream stream)
{
    int64_t sd[4] = {1, 1, 4, 4}, gd[4] = {1, 1, 2, 2}, two[2] = {2, 2}, zero[2] = {0, 0};
    float g[4] = {4, 8, 12, 16};
    DT self = mk(sd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL), go = mk(gd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, g),
       gi = mk(sd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL);
    aclIntArray *k = ia(two, 2), *s = ia(two, 2), *p = ia(zero, 2);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    void *w = NULL;
    CHECK(aclnnAvgPool2dBackwardGetWorkspaceSize(go.t, self.t, k, s, p, false, true, 0, 0, gi.t, &ws, &ex) == 0,
          "avg phase 1");
    if (ws) CHECK(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) == 0, "ws malloc");
    CHECK(aclnnAvgPool2dBackward(w, ws, ex, stream) == 0, "avg phase 2");
    CHECK(aclrtSynchronizeStream(stream) == 0, "avg sync");
    if (w) aclrtFree(w);
    rm(&self), rm(&go), rm(&gi);
    aclDestroyIntArray(k), aclDestroyIntArray(s), aclDestroyIntArray(p);
}

/* an event API call that must fail with `want` */
#define EXPECT_EV(call, want) \
    do { int r_ = (call); CHECK(r_ == (want), "%s = %d, want %d", #call, r_, (want)); aclGetRecentErrMsg(); } while (0)

/* the documented timing order, then every error path of the event API (acl_abi.md 2.1b) */
static void test_events(void)
{
    aclrtEvent a = NULL, b = NULL, plain = NULL, ext = NULL, ipc = NULL;
    CHECK(aclrtCreateEventWithFlag(&a, ACL_EVENT_TIME_LINE) == 0 && aclrtCreateEvent(&b) == 0, "create");
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    CHECK(aclrtQueryEventStatus(a, &st) == 0 && st == ACL_EVENT_RECORDED_STATUS_NOT_READY, "never recorded");
    EXPECT_EV(aclrtEventElapsedTime(&(float){0}, a, b), ACL_ERROR_RT_INTERNAL_ERROR); /* never recorded */
    CHECK(aclrtRecordEvent(a, g_stream) == 0, "record start");
    avg_launch(g_stream);
    CHECK(aclrtRecordEvent(b, g_stream) == 0, "record end");
    float ms = -1;
    CHECK(aclrtSynchronizeEvent(b) == 0 && aclrtEventElapsedTime(&ms, a, b) == 0 && ms > 0, "elapsed %g", ms);
    CHECK(aclrtQueryEventStatus(b, &st) == 0 && st == ACL_EVENT_RECORDED_STATUS_COMPLETE, "complete");
    CHECK(aclrtRecordEvent(b, g_stream) == 0, "record again");
    EXPECT_EV(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID); /* not synchronized */
    CHECK(aclrtSynchronizeStream(g_stream) == 0 && aclrtEventElapsedTime(&ms, a, b) == 0, "after stream sync");
    EXPECT_EV(aclrtEventElapsedTime(NULL, a, b), ACL_ERROR_INVALID_PARAM);
    EXPECT_EV(aclrtEventElapsedTime(&ms, NULL, b), ACL_ERROR_INVALID_PARAM);
    EXPECT_EV(aclrtRecordEvent(NULL, g_stream), ACL_ERROR_INVALID_PARAM);
    EXPECT_EV(aclrtSynchronizeEventWithTimeout(a, -2), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EV(aclrtSynchronizeEventWithTimeout(a, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtSynchronizeEventWithTimeout(b, 1000) == 0, "sync with timeout");
    /* no timestamp without ACL_EVENT_TIME_LINE; external and IPC events have no elapsed time */
    CHECK(aclrtCreateEventWithFlag(&plain, ACL_EVENT_SYNC) == 0 && aclrtRecordEvent(plain, g_stream) == 0 &&
          aclrtSynchronizeEvent(plain) == 0, "sync-only event");
    EXPECT_EV(aclrtEventElapsedTime(&ms, a, plain), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);
    CHECK(aclrtCreateEventWithFlag(&ext, ACL_EVENT_EXTERNAL) == 0, "external");
    EXPECT_EV(aclrtEventElapsedTime(&ms, a, ext), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    EXPECT_EV(aclrtSynchronizeEvent(ext), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    EXPECT_EV(aclrtCreateEventWithFlag(&ipc, ACL_EVENT_IPC), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EV(aclrtCreateEventWithFlag(&ipc, ACL_EVENT_EXTERNAL | ACL_EVENT_TIME_LINE), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EV(aclrtCreateEventWithFlag(&ipc, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtCreateEventExWithFlag(&ipc, ACL_EVENT_IPC) == 0 && aclrtRecordEvent(ipc, g_stream) == 0, "ipc");
    EXPECT_EV(aclrtEventElapsedTime(&ms, ipc, b), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    /* two streams: each has its own clock, the documented order uses one */
    aclrtStream other = NULL;
    CHECK(aclrtCreateStream(&other) == 0 && aclrtRecordEvent(b, other) == 0 && aclrtSynchronizeStream(other) == 0,
          "other stream");
    EXPECT_EV(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtDestroyStream(other) == 0, "destroy other stream");
    CHECK(aclrtDestroyEvent(a) == 0 && aclrtDestroyEvent(b) == 0 && aclrtDestroyEvent(plain) == 0 &&
          aclrtDestroyEvent(ext) == 0, "destroy");
    EXPECT_EV(aclrtDestroyEvent(a), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EV(aclrtRecordEvent(a, g_stream), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EV(aclrtDestroyEvent(NULL), ACL_ERROR_INVALID_PARAM);
    /* ipc is left to aclrtResetDevice, which drops the device's events (no leak) */
    int64_t x, y, live = -1;
    CHECK(swcannGetStats(&x, &y, &live) == 0 && live == 1, "one live event, got %lld", (long long)live);
    CHECK(swcannGetTimingSource() == 0, "timing source %d", swcannGetTimingSource());
}

/* SWCANN_DEVICES devices, each with its own streams: a record across devices is refused */
static void test_devices(void)
{
    setenv("SWCANN_SOC", "ascend910b", 1);
    setenv("SWCANN_DEVICES", "2", 1);
    setenv("SWCANN_DEVICE_COUNT", "3", 1);
    CHECK(aclInit(NULL) == ACL_ERROR_INVALID_PARAM, "alias conflict");
    expect_msg("SWCANN_DEVICE_COUNT");
    unsetenv("SWCANN_DEVICE_COUNT");
    uint32_t n = 0;
    CHECK(aclInit(NULL) == 0 && aclrtGetDeviceCount(&n) == 0 && n == 2, "2 devices, got %u", n);
    aclrtEvent ev = NULL;
    aclrtStream s1 = NULL;
    CHECK(aclrtSetDevice(0) == 0 && aclrtCreateEvent(&ev) == 0, "event on device 0");
    CHECK(aclrtSetDevice(1) == 0 && aclrtCreateStream(&s1) == 0, "stream on device 1");
    EXPECT_EV(aclrtRecordEvent(ev, s1), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclrtDestroyStream(s1) == 0 && aclrtDestroyEvent(ev) == 0, "cleanup");
    CHECK(aclrtResetDevice(1) == 0 && aclrtResetDevice(0) == 0 && aclFinalize() == 0, "teardown");
    unsetenv("SWCANN_DEVICES");
}

/* SoC switch: finalize, pick ascend950, re-init; fp16 MaxPool2d accepted, B2.4 on AvgPool */
static void test_950(void)
{
    setenv("SWCANN_SOC", "ascend950", 1);
    CHECK(aclInit(NULL) == 0, "re-init 950");
    const char *soc = aclrtGetSocName();
    CHECK(soc && strncmp(soc, "Ascend950", 9) == 0, "soc %s", soc ? soc : "(null)");
    CHECK(aclrtSetDevice(0) == 0 && aclrtCreateStream(&g_stream) == 0, "device/stream");
    int64_t sd[4] = {1, 4, 4, 1}, gd[4] = {1, 2, 2, 1}; /* NHWC: (N,H,W,C) */
    uint16_t g[4], out[16];
    for (int i = 0; i < 4; i++) g[i] = aclFloatToFloat16((float)(i + 1));
    int64_t idx[4] = {0, 3, 8, 15};
    maxpool_io io = mk_maxpool(sd, gd, 4, ACL_FLOAT16, ACL_INT64, ACL_FORMAT_NHWC, g, idx);
    DT self = io.self, go = io.go, ix = io.ix, gi = io.gi;
    attrs2d a = attrs_2x2();
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int st = mp2(&go, &self, &ix, &gi, a, &ws, &ex);
    expect_ok("950 mp2 fp16 NHWC", st, aclnnMaxPool2dWithIndicesBackward, ws, ex, out, &gi);
    CHECK(aclFloat16ToFloat(out[0]) == 1 && aclFloat16ToFloat(out[3]) == 2 &&
          aclFloat16ToFloat(out[8]) == 3 && aclFloat16ToFloat(out[15]) == 4 && out[1] == 0,
          "950 mp2 values");
    /* AvgPool on 950 with a gradOutput that does not match the formula -> B2.4 561103 */
    int64_t asd[4] = {1, 1, 4, 4}, agd[4] = {1, 1, 3, 3};
    DT as = mk(asd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL), ag = mk(agd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL),
       ai = mk(asd, 4, ACL_FLOAT, ACL_FORMAT_NCHW, NULL);
    st = aclnnAvgPool2dBackwardGetWorkspaceSize(ag.t, as.t, a.k, a.s, a.p, false, true, 0, 0, ai.t, &ws, &ex);
    expect_check(st, 561103, "B2.4");
    rm(&as), rm(&ag), rm(&ai);
    rm_maxpool(&io);
    attrs_rm(&a);
    CHECK(aclrtDestroyStream(g_stream) == 0 && aclrtResetDevice(0) == 0, "teardown");
    CHECK(aclFinalize() == 0, "finalize");
    /* an unknown family makes aclInit fail with 100000 and names the env var */
    setenv("SWCANN_SOC", "ascend999", 1);
    CHECK(aclInit(NULL) == 100000, "bad soc");
    expect_msg("SWCANN_SOC");
}

int main(void)
{
    setenv("SWCANN_SOC", "ascend910b", 1);
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    unsetenv("SWCANN_DEVICE_COUNT");
    printf("%s\n", swcannVersion());
    CHECK(aclrtMalloc(&(void *){NULL}, 8, 0) == 100001, "malloc before init");
    aclGetRecentErrMsg();
    CHECK(aclInit(NULL) == 0, "init");
    CHECK(aclInit(NULL) == 100002, "repeat init");
    const char *soc = aclrtGetSocName();
    CHECK(soc && strcmp(soc, "Ascend910B2") == 0, "soc %s", soc ? soc : "(null)");
    uint32_t n = 0;
    CHECK(aclrtGetDeviceCount(&n) == 0 && n == 1, "count %u", n);
    CHECK(aclrtSetDevice(1) == 107001, "bad device");
    aclGetRecentErrMsg();
    void *tmp;
    CHECK(aclrtMalloc(&tmp, 8, 0) == 107002, "malloc without device");
    aclGetRecentErrMsg();
    CHECK(aclrtSetDevice(0) == 0, "set device");
    CHECK(aclrtCreateStream(&g_stream) == 0, "stream");
    CHECK(aclGetRecentErrMsg() == NULL, "no message pending");
    test_maxpool2d();
    test_maxpool3d();
    test_adaptive();
    test_avgpool();
    test_unpool();
    test_events();
    CHECK(aclrtDestroyStream(g_stream) == 0, "destroy stream");
    CHECK(aclrtResetDevice(0) == 0, "reset");
    CHECK(aclFinalize() == 0, "finalize");
    CHECK(aclFinalize() == 100037, "repeat finalize");
    test_950();
    test_devices();
    int64_t a = -1, b = -1, o = -1;
    CHECK(swcannGetStats(&a, &b, &o) == 0 && a == 0 && b == 0 && o == 0,
          "leaks: allocs %lld bytes %lld objects %lld", (long long)a, (long long)b, (long long)o);
    printf("smoke: %s (%d failures)\n", g_fail ? "FAILED" : "OK", g_fail);
    return g_fail ? 1 : 0;
}
