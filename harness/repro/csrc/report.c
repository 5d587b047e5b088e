/* The comparison's driver (harness/repro/csrc/report.c), after compare.c and the case's standard
   (standards/<name>.c, which defines judge_standard and HEADLINE): one output against its golden,
   every metric and the summary line. */
#define NHEADLINE ((int)(sizeof HEADLINE / sizeof HEADLINE[0]))

HELPER void print_worst(const Cmp *d, const Tensor *t, int bits)
{
    int64_t rest = d->worst, idx[MAX_RANK];
    int k;
    for (k = t->rank - 1; k >= 0; k--) {
        idx[k] = t->ldims[k] ? rest % t->ldims[k] : 0;
        rest = t->ldims[k] ? rest / t->ldims[k] : 0;
    }
    printf(" at (");
    for (k = 0; k < t->rank; k++)
        printf(k ? ", %lld" : "%lld", (long long)idx[k]);
    printf(t->rank == 1 ? ",)" : ")");
    if (d->integer) {
        printf(": golden=%lld actual=%lld", (long long)d->gi[d->worst], (long long)d->ai[d->worst]);
        return;
    }
    printf(": golden=%.7g actual=%.9g", d->g[d->worst], d->a[d->worst]);
    if (bits)
        printf(" (golden rounded %.9g, bits 0x%llx; actual bits 0x%llx)", d->gr[d->worst],
               (unsigned long long)value_bits(d->gr[d->worst], t->dtype),
               (unsigned long long)value_bits(d->a[d->worst], t->dtype));
}

/* One output against its golden (logical order, as compare.py gets them): prints every metric and
   the summary line; returns 1 when it passes. */
HELPER int compare_output(const Tensor *t, const char *golden_file, int integer, const char *standard,
                          const char *dtype, const Thr *thresholds, long long not_whole, const char *shape_mismatch)
{
    Cmp d;
    int64_t n = numel(t->ldims, t->rank), i, pos = t->offset, n_eq = 0, n_bad = 0, n_cmp = 0, overflow = 0;
    int64_t idx[MAX_RANK] = {0}, first_bad = -1;
    unsigned char *golden;
    double g, gcls, a;
    int k, ok = 1, equal, special;
    char reasons[2048];
    const Thr *th;
    if (shape_mismatch[0] || not_whole) {
        if (shape_mismatch[0])
            snprintf(reasons, sizeof reasons, "%s", shape_mismatch);
        else
            snprintf(reasons, sizeof reasons, "the golden of an %s output holds %lld value(s) that are not whole "
                     "numbers", dtype, not_whole);
        printf("compare(%s): FAIL %s[%s]: %s\nreason(%s): %s\n", t->name, standard, dtype, reasons, t->name, reasons);
        fail("%s: FAIL %s[%s]: %s", t->name, standard, dtype, reasons);
        return 0;
    }
    golden = read_file(golden_file, (size_t)n * 8);
    if (!golden)
        return 0;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.integer = integer;
    d.worst = -1;
    d.g = (double *)xalloc((size_t)n * 8);
    d.a = (double *)xalloc((size_t)n * 8);
    d.gr = (double *)xalloc((size_t)n * 8);
    d.gi = (int64_t *)xalloc((size_t)n * 8);
    d.ai = (int64_t *)xalloc((size_t)n * 8);
    d.cmp = (unsigned char *)xalloc((size_t)n);
    d.bad = (unsigned char *)xalloc((size_t)n);
    for (i = 0; i < n; i++) {
        const unsigned char *p = t->host + pos * (int64_t)t->item;
        if (integer) {
            memcpy(&d.gi[i], golden + 8 * i, 8);
            d.ai[i] = elem_int(p, t->dtype);
            d.g[i] = d.gr[i] = (double)d.gi[i];
            d.a[i] = (double)d.ai[i];
            d.cmp[i] = 1;
        } else {
            memcpy(&g, golden + 8 * i, 8);
            a = elem_double(p, t->dtype);
            d.g[i] = g;
            d.a[i] = a;
            d.gr[i] = round_to(g, t->dtype);
            /* a finite golden beyond the dtype's range has Inf as its rounded value: its NaN/Inf
               class is judged on that, its metrics on the exact value */
            gcls = isinf(d.gr[i]) && isfinite(g) ? d.gr[i] : g;
            overflow += isinf(d.gr[i]) && isfinite(g);
            equal = (isnan(gcls) && isnan(a)) || (isinf(gcls) && gcls == a);
            special = !isfinite(gcls) || !isfinite(a);
            d.cmp[i] = !special;
            d.bad[i] = special && !equal;
            n_eq += equal;
            if (d.bad[i] && n_bad++ == 0)
                first_bad = i;
        }
        n_cmp += d.cmp[i];
        pos = next_index(idx, t->ldims, t->lstrides, t->rank, pos);
    }
    free(golden);
    add_metric(&d, "n", (double)n, 1);
    add_metric(&d, "n_compared", (double)n_cmp, 1);
    add_metric(&d, "n_nan_inf_equal", (double)n_eq, 1);
    add_metric(&d, "nan_inf_mismatches", (double)n_bad, 1);
    add_metric(&d, "golden_overflow", (double)overflow, 1);
    for (th = thresholds; th->key; th++) {
        static char keys[16][64];
        snprintf(keys[th - thresholds], 64, "threshold_%s", th->key);
        add_metric(&d, keys[th - thresholds], th->value, 0);
    }
    if (n)
        ok = judge_standard(&d, thresholds);
    if (n_bad) {
        /* the NaN/Inf reason goes first */
        size_t lp, lr = strlen(d.reasons);
        snprintf(reasons, sizeof reasons, "%lld NaN/Inf mismatch%s%s", (long long)n_bad, n_bad > 1 ? "es" : "",
                 lr ? "; " : "");
        lp = strlen(reasons);
        lr = lp + lr < sizeof d.reasons ? lr : sizeof d.reasons - lp - 1;
        memmove(d.reasons + lp, d.reasons, lr);
        memcpy(d.reasons, reasons, lp);
        d.reasons[lp + lr] = 0;
        d.worst = first_bad;
        d.worst_metric = "nan_inf_mismatch";
        ok = 0;
    }
    for (k = 0; k < d.nm; k++) {
        if (d.integers[k])
            printf("metric(%s) %s = %lld\n", t->name, d.names[k], (long long)d.values[k]);
        else
            printf("metric(%s) %s = %.17g\n", t->name, d.names[k], d.values[k]);
    }
    printf("compare(%s): %s %s[%s]:", t->name, ok ? "PASS" : "FAIL", standard, dtype);
    if (ok) {
        for (k = 0; k < NHEADLINE; k++) {
            int m;
            for (m = 0; m < d.nm && strcmp(d.names[m], HEADLINE[k]); m++)
                ;
            if (m == d.nm)
                continue;
            if (!strcmp(HEADLINE[k], "mere") || !strcmp(HEADLINE[k], "mare") || !strcmp(HEADLINE[k], "eb"))
                printf(" %s=", !strcmp(HEADLINE[k], "eb") ? "EB" : !strcmp(HEADLINE[k], "mere") ? "MERE" : "MARE");
            else
                printf(" %s=", HEADLINE[k]);
            if (d.integers[m])
                printf("%lld", (long long)d.values[m]);
            else
                printf("%s", g4(d.values[m]));
        }
        printf(" (n=%lld)\n", (long long)n);
    } else {
        printf(" %s", d.reasons);
        if (d.worst >= 0)
            print_worst(&d, t, !strcmp(d.worst_metric, "first_bit_mismatch") && !integer);
        printf("\nreason(%s): %s\n", t->name, d.reasons);
        fail("%s: FAIL %s[%s]: %s", t->name, standard, dtype, d.reasons);
    }
    free(d.g); free(d.a); free(d.gr); free(d.gi); free(d.ai); free(d.cmp); free(d.bad);
    return ok;
}
