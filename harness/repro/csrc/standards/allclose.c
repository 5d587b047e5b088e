/* The precision standard allclose of harness/judge/compare.py (harness/repro/csrc/standards/allclose.c):
   its metrics (same names, same order), pass rule and reason texts; HEADLINE: the metrics a PASS
   summary shows (compare.py's `headline`). */
static const char *const HEADLINE[] = {"mismatches", "max_abs_err"};

/* torch assert_close: PASS iff every element is within atol + rtol*|g| (integers exact). */
HELPER int judge_standard(Cmp *d, const Thr *t)
{
    Tol r = tolerance(d, t);
    int64_t bad = r.compared - r.ok;
    if (bad && d->integer)
        add_reason(d, "%lld of %lld elements differ (integers must match exactly)", (long long)bad,
                   (long long)r.compared);
    else if (bad)
        add_reason(d, "%lld of %lld elements outside atol+rtol*|g| (max abs err=%s)", (long long)bad,
                   (long long)r.compared, g4(r.max_abs));
    add_metric(d, "mismatches", (double)bad, 1);
    add_metric(d, "max_abs_err", r.max_abs, 0);
    add_metric(d, "max_tol_ratio", r.max_ratio, 0);
    return !d->reasons[0];
}
