/* The comparison of an output with its golden (harness/repro/csrc/compare.c): harness/judge/compare.py's
   shared part. The golden rounded once (round to nearest even) to the output dtype, the NaN/Inf rule
   (same-position NaN or same-sign Inf counts as equal and leaves the metrics; any other disagreement
   fails), the base metrics and the tolerance test two standards share. The standard itself is one
   file of standards/ (judge_standard and its HEADLINE metrics); report.c, after it, compares an
   output and prints the summary line. Means are summed with compensation, so they agree with numpy's
   pairwise sums to far below any threshold's resolution. */

/* ------------------------------------------------------------------ comparison (compare.py) */

typedef struct {
    const char *key;
    double value;
} Thr;

typedef struct {
    int64_t n;
    int integer;                       /* integer data: exact int64 comparison */
    double *g, *a, *gr;                /* golden (exact), actual, golden rounded once to the dtype */
    int64_t *gi, *ai;
    unsigned char *cmp, *bad;          /* both finite: in the metrics; NaN/Inf disagreement: fails */
    const char *names[32];
    double values[32];
    int integers[32], nm;
    char reasons[2048];
    int64_t worst;
    const char *worst_metric;
} Cmp;

typedef struct {
    double s, c;
} Sum;

HELPER void sum_add(Sum *s, double x)
{
    double t = s->s + x;
    if (isfinite(t))
        s->c += fabs(s->s) >= fabs(x) ? (s->s - t) + x : (x - t) + s->s;
    s->s = t;
}

HELPER double sum_value(const Sum *s)
{
    return isfinite(s->s) ? s->s + s->c : s->s;
}

HELPER double thr(const Thr *t, const char *key)
{
    for (; t->key; t++)
        if (!strcmp(t->key, key))
            return t->value;
    printf("internal error: no threshold %s\n", key);
    exit(2);
}

/* compare.py's _fmt: 4 significant digits; several may appear in one printf */
HELPER const char *g4(double x)
{
    static char pool[8][40];
    static int next;
    char *buf = pool[next++ % 8];
    snprintf(buf, 40, "%.4g", x);
    return buf;
}

/* The pass tests: a NaN metric never passes. */
HELPER int lt(double x, double lim) { return !isnan(x) && x < lim; }
HELPER int le(double x, double lim) { return !isnan(x) && x <= lim; }
HELPER int ge(double x, double lim) { return !isnan(x) && x >= lim; }

HELPER void add_metric(Cmp *d, const char *name, double value, int integer)
{
    d->names[d->nm] = name;
    d->values[d->nm] = value;
    d->integers[d->nm++] = integer;
}

HELPER void add_reason(Cmp *d, const char *fmt, ...)
{
    size_t used = strlen(d->reasons);
    va_list ap;
    if (used) {
        strcat(d->reasons, "; ");
        used += 2;
    }
    va_start(ap, fmt);
    vsnprintf(d->reasons + used, sizeof d->reasons - used, fmt, ap);
    va_end(ap);
}

/* x rounded once, to nearest even, to a binary format with p fraction bits and exponents
   emin..emax (subnormals and overflow to Inf included): x / quantum is exact, so nearbyint is
   the only rounding. */
HELPER double round_to_format(double x, int p, int emin, int emax)
{
    int e, lead;
    double q, r;
    if (!isfinite(x) || x == 0)
        return x;
    frexp(x, &e);
    lead = e - 1 < emin ? emin : e - 1;
    if (lead > emax)
        return copysign(INFINITY, x);
    q = ldexp(1.0, lead - p);
    r = nearbyint(x / q) * q;
    return fabs(r) > ldexp(2.0 - ldexp(1.0, -p), emax) ? copysign(INFINITY, x) : r;
}

HELPER double round_to(double x, aclDataType dtype)
{
    switch (dtype) {
    case ACL_FLOAT16: return round_to_format(x, 10, -14, 15);
    case ACL_BF16: return round_to_format(x, 7, -126, 127);
    case ACL_FLOAT: return round_to_format(x, 23, -126, 127);
    default: break;      /* any other dtype: not read here */
    }
    return x;
}

HELPER uint16_t half_bits(double r)
{
    uint16_t s = signbit(r) ? 0x8000 : 0;
    double a = fabs(r);
    int e;
    if (isnan(r))
        return 0x7e00;
    if (isinf(a))
        return s | 0x7c00;
    if (a == 0)
        return s;
    frexp(a, &e);
    if (e - 1 < -14)
        return (uint16_t)(s | (uint16_t)ldexp(a, 24));
    return (uint16_t)(s | (e + 14) << 10 | (uint16_t)(ldexp(a, 11 - e) - 1024));
}

/* The bits a value representable in the dtype is stored as (for the worst element's line). */
HELPER uint64_t value_bits(double r, aclDataType dtype)
{
    float f = (float)r;
    uint32_t u32;
    uint64_t u64;
    switch (dtype) {
    case ACL_FLOAT16: return half_bits(r);
    case ACL_BF16: memcpy(&u32, &f, 4); return u32 >> 16;
    case ACL_FLOAT: memcpy(&u32, &f, 4); return u32;
    default: break;      /* any other dtype: not read here */
    }
    memcpy(&u64, &r, 8);
    return u64;
}

HELPER int judge_standard(Cmp *d, const Thr *t);

HELPER int64_t argmax_first(double *best, int64_t *count, double value, int64_t i, int64_t worst)
{
    if ((*count)++ == 0 || value > *best) {
        *best = value;
        return i;
    }
    return worst;
}

/* compare.py `_tolerance`: per compared element, |a-g| <= atol + rtol*|g| (integers: exact) */
typedef struct {
    int64_t compared, ok;
    double max_abs, max_ratio;
} Tol;

HELPER Tol tolerance(Cmp *d, const Thr *t)
{
    Tol r = {0, 0, 0.0, 0.0};
    double best = 0, diff, tol, ratio;
    int64_t i, seen = 0;
    for (i = 0; i < d->n; i++) {
        if (!d->cmp[i])
            continue;
        if (d->integer) {
            diff = fabs((double)d->ai[i] - (double)d->gi[i]);
            r.ok += d->ai[i] == d->gi[i];
            ratio = diff;
        } else {
            diff = fabs(d->a[i] - d->g[i]);
            tol = thr(t, "atol") + thr(t, "rtol") * fabs(d->g[i]);
            r.ok += diff <= tol;
            ratio = tol > 0 ? diff / tol : (diff > 0 ? INFINITY : 0.0);
        }
        r.compared++;
        r.max_abs = diff > r.max_abs ? diff : r.max_abs;
        r.max_ratio = ratio > r.max_ratio ? ratio : r.max_ratio;
        d->worst = argmax_first(&best, &seen, ratio, i, d->worst);
    }
    d->worst_metric = "err/tol";
    return r;
}
