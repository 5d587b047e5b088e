"""The precision standards of harness/judge/compare.py, in C: one function `judge_standard` each, with
compare.py's metrics (same names, same order), pass rule and reason texts. A program carries only
its case's standard."""
from __future__ import annotations

# compare.py `_tolerance`: per compared element, |a-g| <= atol + rtol*|g| (integers: exact)
_TOLERANCE = r"""
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
"""

STANDARDS = {
    "mere_mare": (("mere", "mare"), r"""
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
"""),
    "single_bm": (("eb", "max_abs_err_small", "max_rel_err_large"), r"""
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
"""),
    "ttk_mixed": (("matched_ratio", "max_abs_err"), _TOLERANCE + r"""
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
"""),
    "allclose": (("mismatches", "max_abs_err"), _TOLERANCE + r"""
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
"""),
    "bit_exact": (("mismatches",), r"""
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
"""),
}

# one C function serves both single benchmark variants (only their thresholds differ)
ALIASES = {"single_bm_high_precision": "single_bm", "single_bm_high_performance": "single_bm"}


def _entry(standard: str) -> tuple[tuple[str, ...], str]:
    key = ALIASES.get(standard, standard)
    if key not in STANDARDS:
        raise ValueError(f"no C comparator for precision standard {standard!r} (have: "
                         f"{', '.join(sorted(set(STANDARDS) | set(ALIASES)))})")
    return STANDARDS[key]


def headline(standard: str) -> tuple[str, ...]:
    """The metrics a PASS summary shows (compare.py's `headline`)."""
    return _entry(standard)[0]


def standard_code(standard: str) -> str:
    """judge_standard of `standard`, and the HEADLINE metrics its PASS summary shows."""
    names, text = _entry(standard)
    quoted = ", ".join(f'"{n}"' for n in names)
    return text + f"\nstatic const char *const HEADLINE[] = {{{quoted}}};\n#define NHEADLINE {len(names)}\n"
