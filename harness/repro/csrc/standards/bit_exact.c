/* The precision standard bit_exact of harness/judge/compare.py (harness/repro/csrc/standards/bit_exact.c):
   its metrics (same names, same order), pass rule and reason texts; HEADLINE: the metrics a PASS
   summary shows (compare.py's `headline`). */
static const char *const HEADLINE[] = {"mismatches"};

/* Bit-exact: the output's bits equal those of the golden rounded once to the dtype (NaN vs NaN
   counts as equal); integers exactly. PASS iff at most max_mismatches elements differ. */
HELPER int judge_standard(Cmp *d, const Thr *t)
{
    double ac, gc, diff, max_abs = 0;
    int64_t i, bad = 0;
    int same;
    for (i = 0; i < d->n; i++) {
        if (d->integer) {
            same = d->ai[i] == d->gi[i];
            ac = (double)d->ai[i];
            gc = (double)d->gi[i];
        } else {
            ac = d->a[i];
            gc = d->gr[i];
            /* equal bits: equal values and signs (zero), or NaN on both sides */
            same = (ac == gc && !signbit(ac) == !signbit(gc)) || (isnan(ac) && isnan(gc));
        }
        diff = fabs(ac - gc);
        if (d->cmp[i] && isfinite(diff) && diff > max_abs)
            max_abs = diff;
        if (!same && bad++ == 0)
            d->worst = i;
    }
    d->worst_metric = "first_bit_mismatch";
    if (!((double)bad <= thr(t, "max_mismatches")))
        add_reason(d, "%lld of %lld elements differ bitwise", (long long)bad, (long long)d->n);
    add_metric(d, "mismatches", (double)bad, 1);
    add_metric(d, "max_abs_err", max_abs, 0);
    return !d->reasons[0];
}
