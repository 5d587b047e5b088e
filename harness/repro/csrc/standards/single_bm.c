/* The precision standard single_bm of harness/judge/compare.py (harness/repro/csrc/standards/single_bm.c):
   its metrics (same names, same order), pass rule and reason texts; HEADLINE: the metrics a PASS
   summary shows (compare.py's `headline`). */
static const char *const HEADLINE[] = {"eb", "max_abs_err_small", "max_rel_err_large"};

/* Single benchmark: error e = a-g where |g| < 1, (a-g)/|g| elsewhere; EB = mean(e) (signed);
   PASS iff |EB| <= eb and max |e| of both classes <= error. */
HELPER int judge_standard(Cmp *d, const Thr *t)
{
    Sum sum = {0, 0};
    double e, eb, max_abs = 0, max_rel = 0, best = 0;
    int64_t i, count = 0, small = 0, large = 0;
    for (i = 0; i < d->n; i++) {
        if (!d->cmp[i])
            continue;
        e = d->a[i] - d->g[i];
        if (fabs(d->g[i]) < 1) {
            small++;
            max_abs = fabs(e) > max_abs ? fabs(e) : max_abs;
        } else {
            e /= fabs(d->g[i]);
            large++;
            max_rel = fabs(e) > max_rel ? fabs(e) : max_rel;
        }
        sum_add(&sum, e);
        d->worst = argmax_first(&best, &count, fabs(e), i, d->worst);
    }
    eb = count ? sum_value(&sum) / (double)count : 0.0;
    d->worst_metric = "abs_or_rel_err";
    if (!le(fabs(eb), thr(t, "eb")))
        add_reason(d, "|EB|=%s > %s", g4(fabs(eb)), g4(thr(t, "eb")));
    if (!le(max_abs, thr(t, "error")))
        add_reason(d, "max abs err (|g|<1)=%s > %s", g4(max_abs), g4(thr(t, "error")));
    if (!le(max_rel, thr(t, "error")))
        add_reason(d, "max rel err (|g|>=1)=%s > %s", g4(max_rel), g4(thr(t, "error")));
    add_metric(d, "eb", eb, 0);
    add_metric(d, "abs_eb", fabs(eb), 0);
    add_metric(d, "max_abs_err_small", max_abs, 0);
    add_metric(d, "max_rel_err_large", max_rel, 0);
    add_metric(d, "n_small", (double)small, 1);
    add_metric(d, "n_large", (double)large, 1);
    return !d->reasons[0];
}
