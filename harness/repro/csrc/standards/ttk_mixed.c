/* The precision standard ttk_mixed of harness/judge/compare.py (harness/repro/csrc/standards/ttk_mixed.c):
   its metrics (same names, same order), pass rule and reason texts; HEADLINE: the metrics a PASS
   summary shows (compare.py's `headline`). */
static const char *const HEADLINE[] = {"matched_ratio", "max_abs_err"};

/* TTK mixed: PASS iff the share of elements within atol + rtol*|g| >= min_matched_ratio and the
   max abs error <= max_abs_err. */
HELPER int judge_standard(Cmp *d, const Thr *t)
{
    Tol r = tolerance(d, t);
    double matched = r.compared ? (double)r.ok / (double)r.compared : 1.0;
    if (!ge(matched, thr(t, "min_matched_ratio")))
        add_reason(d, "matched ratio=%s < %s", g4(matched), g4(thr(t, "min_matched_ratio")));
    if (!le(r.max_abs, thr(t, "max_abs_err")))
        add_reason(d, "max abs err=%s > %s", g4(r.max_abs), g4(thr(t, "max_abs_err")));
    add_metric(d, "matched_ratio", matched, 0);
    add_metric(d, "mismatches", (double)(r.compared - r.ok), 1);
    add_metric(d, "max_abs_err", r.max_abs, 0);
    add_metric(d, "max_tol_ratio", r.max_ratio, 0);
    return !d->reasons[0];
}
