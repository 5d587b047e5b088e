/* Helpers of every reproducer (harness/repro/csrc/support.c): files, device buffers, the workspace
   and descriptors. The generator #defines before it (harness/repro/c_files.py, from the harness's
   own constants):
     MAX_RANK               the largest rank of the case's tensors
     REPRO_MIN_ALLOC        harness/acl/objects.py MIN_ALLOC: device sizes are rounded up to it
     REPRO_WORKSPACE_FILL   harness/backends/aclnn.py WORKSPACE_FILL: every byte of the workspace
     REPRO_WORKSPACE_GUARD  harness/backends/aclnn.py WORKSPACE_GUARD: guard bytes after the workspace */
#if !defined(MAX_RANK) || !defined(REPRO_MIN_ALLOC) || !defined(REPRO_WORKSPACE_FILL) || !defined(REPRO_WORKSPACE_GUARD)
#error "define MAX_RANK, REPRO_MIN_ALLOC, REPRO_WORKSPACE_FILL and REPRO_WORKSPACE_GUARD before support.c"
#endif

/* ------------------------------------------------------------------ helpers */

static char g_dir[4096] = ".";
static int g_setup_failed;            /* a call outside the operator failed: no verdict */
static char g_reasons[8192];          /* why the verdict is FAIL, "; "-separated */

HELPER const char *recent_error(void)
{
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

/* The check a library message names ("check B9 failed", "check L0.R1 failed": the software CANN's
   words, as harness/judge/runner.py reads them) into out; 0 when it names none (a real CANN). */
HELPER int named_check(const char *msg, char *out, size_t n)
{
    const char *p = msg;
    while ((p = strstr(p, "check ")) != NULL) {
        const char *id = p + 6, *end = id;
        if (*id == 'B' || strncmp(id, "L0.", 3) == 0) {
            while (*end && (isalnum((unsigned char)*end) || *end == '_' || *end == '.'))
                end++;
            if (end > id && strncmp(end, " failed", 7) == 0 && (size_t)(end - id) < n) {
                memcpy(out, id, (size_t)(end - id));
                out[end - id] = '\0';
                return 1;
            }
        }
        p = id;
    }
    return 0;
}

HELPER void fail(const char *fmt, ...)
{
    size_t used = strlen(g_reasons);
    va_list ap;
    if (used && used + 2 < sizeof g_reasons) {
        strcat(g_reasons, "; ");
        used += 2;
    }
    va_start(ap, fmt);
    vsnprintf(g_reasons + used, sizeof g_reasons - used, fmt, ap);
    va_end(ap);
}

/* A runtime or meta-API call outside the operator's phases (malloc, memcpy, create). */
HELPER int acl_ok(int ret, const char *what)
{
    if (ret == ACL_SUCCESS)
        return 1;
    printf("SETUP ERROR: %s returned %d: %s\n", what, ret, recent_error());
    g_setup_failed = 1;
    return 0;
}

HELPER int created(const void *handle, const char *what)
{
    if (handle)
        return 1;
    printf("SETUP ERROR: %s returned NULL: %s\n", what, recent_error());
    g_setup_failed = 1;
    return 0;
}

/* The data files lie in DIR (argument 1), else beside the program. */
HELPER void set_data_dir(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    if (argc > 1)
        snprintf(g_dir, sizeof g_dir, "%s", argv[1]);
    else if (slash)
        snprintf(g_dir, sizeof g_dir, "%.*s", slash == argv[0] ? 1 : (int)(slash - argv[0]), argv[0]);
}

HELPER void release(int ret, const char *what)
{
    if (ret != 0) {
        printf("release failed: %s returned %d: %s\n", what, ret, recent_error());
        fail("release failed: %s returned %d", what, ret);
    }
}

HELPER void *xalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p) {
        printf("SETUP ERROR: out of host memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

HELPER unsigned char *read_file(const char *name, size_t nbytes)
{
    char path[4400];
    unsigned char *buf;
    size_t got;
    int longer;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    f = fopen(path, "rb");
    if (!f) {
        printf("SETUP ERROR: cannot open %s\n", path);
        g_setup_failed = 1;
        return NULL;
    }
    buf = (unsigned char *)xalloc(nbytes);
    got = fread(buf, 1, nbytes, f);
    longer = fgetc(f) != EOF;
    fclose(f);
    if (got != nbytes || longer) {
        printf("SETUP ERROR: %s is not %zu bytes long\n", path, nbytes);
        g_setup_failed = 1;
        free(buf);
        return NULL;
    }
    return buf;
}

/* What the library wrote, for a closer look; NULL data: no download, so no such file. */
HELPER void write_file(const char *name, const unsigned char *data, size_t nbytes)
{
    char path[4400];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (!data) {
        remove(path);
        return;
    }
    f = fopen(path, "wb");
    if (!f || fwrite(data, 1, nbytes, f) != nbytes)
        printf("note: could not write %s\n", path);
    if (f)
        fclose(f);
}

/* Bytes asked of aclrtMalloc: rounded up to REPRO_MIN_ALLOC, at least REPRO_MIN_ALLOC (an empty tensor still needs an address). */
HELPER size_t alloc_size(size_t nbytes)
{
    size_t r = (nbytes + REPRO_MIN_ALLOC - 1) / REPRO_MIN_ALLOC * REPRO_MIN_ALLOC;
    return r < REPRO_MIN_ALLOC ? REPRO_MIN_ALLOC : r;
}

/* A device copy of the whole flat storage: gaps, offset and (outputs) poison included. */
HELPER int upload(Tensor *t)
{
    size_t size = alloc_size(t->nbytes);
    if (!acl_ok(aclrtMalloc(&t->dev, size, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc"))
        return 0;
    if (!t->dev)
        return acl_ok(-1, "aclrtMalloc (returned NULL)");
    if (t->nbytes && !acl_ok(aclrtMemcpy(t->dev, size, t->host, t->nbytes, ACL_MEMCPY_HOST_TO_DEVICE),
                             "aclrtMemcpy(host to device)"))
        return 0;
    return 1;
}

HELPER int load_input(Tensor *t, const char *file)
{
    t->host = read_file(file, t->nbytes);
    return t->host && upload(t);
}

/* An output's storage as the harness lays it: the poison in the view, the case's exact guard
   bytes outside it (harness/inputs/guard.py); a copy is kept to find what phase 2 changed. */
HELPER int load_output(Tensor *t, const char *file)
{
    t->host = read_file(file, t->nbytes);
    if (!t->host)
        return 0;
    t->initial = (unsigned char *)xalloc(t->nbytes);
    memcpy(t->initial, t->host, t->nbytes);
    return upload(t);
}

HELPER int to_host(void *dst, const void *dev, size_t nbytes)
{
    return !nbytes || acl_ok(aclrtMemcpy(dst, nbytes, dev, nbytes, ACL_MEMCPY_DEVICE_TO_HOST),
                             "aclrtMemcpy(device to host)");
}

/* Whether phase 2 left an input's device buffer as uploaded (an aclnn input is const). */
HELPER int input_changed(const Tensor *t)
{
    unsigned char *now = (unsigned char *)xalloc(t->nbytes);
    int changed = to_host(now, t->dev, t->nbytes) && memcmp(now, t->host, t->nbytes) != 0;
    free(now);
    return changed;
}

/* Guard bytes a launch changed, as harness/inputs/guard.py's Damage says it: the region, the offset
   of the first changed byte in [lo, hi) (base: the offset of byte 0 of found), the run of changed
   bytes from there (at most 8, with " ..." when it goes on within the region) and how many changed
   in all (`changed` per byte). Returns that count. */
HELPER int64_t describe_damage(const char *region, const unsigned char *found, const unsigned char *expected,
                               const unsigned char *changed, size_t lo, size_t hi, size_t base, char *what,
                               size_t cap)
{
    size_t i, at = hi, end;
    int64_t count = 0;
    char got[64] = "", want[64] = "";
    for (i = lo; i < hi; i++) {
        count += changed[i];
        if (changed[i] && at == hi)
            at = i;
    }
    if (!count)
        return 0;
    for (end = at; end < at + 8 && end < hi && changed[end]; end++) {
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%02x", end > at ? " " : "", found[end]);
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%02x", end > at ? " " : "", expected[end]);
    }
    snprintf(what, cap, "%s at byte %zu: found %s%s, expected %s%s (%lld guard byte%s changed)", region, base + at,
             got, end < hi && changed[end] ? " ..." : "", want, end < hi && changed[end] ? " ..." : "",
             (long long)count, count == 1 ? "" : "s");
    return count;
}

/* The workspace as the harness gives it: REPRO_WORKSPACE_FILL in every byte, then after its rounded end the
   REPRO_WORKSPACE_GUARD guard bytes `guard` (the case's pattern). */
HELPER int workspace_alloc(void **ws, uint64_t size, const unsigned char *guard)
{
    size_t at = alloc_size((size_t)size), total = at + REPRO_WORKSPACE_GUARD;
    if (!acl_ok(aclrtMalloc(ws, alloc_size(total), ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(workspace)"))
        return 0;
    return acl_ok(aclrtMemset(*ws, alloc_size(total), REPRO_WORKSPACE_FILL, total), "aclrtMemset(workspace)") &&
           acl_ok(aclrtMemcpy((unsigned char *)*ws + at, REPRO_WORKSPACE_GUARD, guard, REPRO_WORKSPACE_GUARD, ACL_MEMCPY_HOST_TO_DEVICE),
                  "aclrtMemcpy(workspace guard)");
}

/* How many of the workspace's guard bytes phase 2 changed; the first change described in `what`. */
HELPER int64_t workspace_overrun(void *ws, uint64_t size, const unsigned char *guard, char *what, size_t cap)
{
    unsigned char found[REPRO_WORKSPACE_GUARD], changed[REPRO_WORKSPACE_GUARD];
    size_t at = alloc_size((size_t)size), i;
    if (!to_host(found, (unsigned char *)ws + at, sizeof found))
        return 0;
    for (i = 0; i < REPRO_WORKSPACE_GUARD; i++)
        changed[i] = found[i] != guard[i];
    return describe_damage("workspace tail", found, guard, changed, 0, REPRO_WORKSPACE_GUARD, at, what, cap);
}

HELPER void print_ints(const int64_t *v, int n)
{
    int i;
    printf("[");
    for (i = 0; i < n; i++)
        printf("%s%lld", i ? ", " : "", (long long)v[i]);
    printf("]");
}

HELPER void print_descriptor(const Tensor *t, int dtype, const char *dtype_name, int format,
                             const char *format_name, const int64_t *storage_dims)
{
    printf("aclCreateTensor(%s): dims ", t->name);
    print_ints(t->dims, t->rank);
    printf(" strides ");
    print_ints(t->strides, t->rank);
    printf(" offset %lld format %d (%s) dtype %d (%s) storage ", (long long)t->offset, format, format_name,
           dtype, dtype_name);
    print_ints(storage_dims, 1);
    printf("\n");
}

HELPER int64_t numel(const int64_t *dims, int rank)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < rank; d++)
        n *= dims[d] > 0 ? dims[d] : 0;
    return n;
}

/* Steps a row-major multi-index over dims; returns the element offset of the next index. */
HELPER int64_t next_index(int64_t *idx, const int64_t *dims, const int64_t *strides, int rank, int64_t pos)
{
    int d;
    for (d = rank - 1; d >= 0; d--) {
        if (++idx[d] < dims[d])
            return pos + strides[d];
        pos -= (dims[d] - 1) * strides[d];
        idx[d] = 0;
    }
    return pos;
}
