/* The precision standard mere_mare of harness/judge/compare.py (harness/repro/csrc/standards/mere_mare.c):
   its metrics (same names, same order), pass rule and reason texts; HEADLINE: the metrics a PASS
   summary shows (compare.py's `headline`). */
static const char *const HEADLINE[] = {"mere", "mare"};

/* Ascend MERE/MARE: RE = |a-g| / (|g| + 1e-7); PASS iff MERE < mere and MARE < mare. */
HELPER int judge_standard(Cmp *d, const Thr *t)
{
    Sum sum = {0, 0};
    double re, mere, mare = 0;
    int64_t i, count = 0;
    for (i = 0; i < d->n; i++) {
        if (!d->cmp[i])
            continue;
        re = fabs(d->a[i] - d->g[i]) / (fabs(d->g[i]) + 1e-7);
        sum_add(&sum, re);
        d->worst = argmax_first(&mare, &count, re, i, d->worst);
    }
    mere = count ? sum_value(&sum) / (double)count : 0.0;
    d->worst_metric = "RE";
    if (!lt(mere, thr(t, "mere")))
        add_reason(d, "MERE=%s >= %s", g4(mere), g4(thr(t, "mere")));
    if (!lt(mare, thr(t, "mare")))
        add_reason(d, "MARE=%s >= %s", g4(mare), g4(thr(t, "mare")));
    add_metric(d, "mere", mere, 0);
    add_metric(d, "mare", mare, 0);
    return !d->reasons[0];
}
