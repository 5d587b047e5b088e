/* Elements of a reproducer's tensors (harness/repro/csrc/elements.c): reading one element of the
   dtypes a comparison reads, by the aclDataType the tensor was created with (float16 and bfloat16
   by their bits; a dtype with no C type in platforms/platform.yaml is only digested). Every dtype
   the platform gives a C type must have its case below: one missing would read as 0 and turn a
   correct library's output into a FAIL (tests/test_c_repro.py holds the two in step). uint64 has
   none: int64_t cannot hold it. Also the check that phase 2 left every byte of
   the output storage outside the view as the harness laid it (its exact guard bytes, compared byte
   for byte as harness/inputs/guard.py does). */

HELPER double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp((double)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp((double)(m | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

HELPER double elem_double(const unsigned char *p, aclDataType dtype)
{
    uint16_t u16;
    uint32_t u32;
    float f;
    double d;
    switch (dtype) {
    case ACL_FLOAT16: memcpy(&u16, p, 2); return half_value(u16);
    case ACL_BF16: memcpy(&u16, p, 2); u32 = (uint32_t)u16 << 16; memcpy(&f, &u32, 4); return f;
    case ACL_FLOAT: memcpy(&f, p, 4); return f;
    case ACL_DOUBLE: memcpy(&d, p, 8); return d;
    default: break;      /* any other dtype: not read here */
    }
    return 0.0;
}

HELPER int64_t elem_int(const unsigned char *p, aclDataType dtype)
{
    int8_t i8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    switch (dtype) {
    case ACL_INT8: memcpy(&i8, p, 1); return i8;
    case ACL_UINT8: case ACL_BOOL: return p[0];
    case ACL_INT16: memcpy(&i16, p, 2); return i16;
    case ACL_UINT16: memcpy(&u16, p, 2); return u16;
    case ACL_INT32: memcpy(&i32, p, 4); return i32;
    case ACL_UINT32: memcpy(&u32, p, 4); return u32;
    case ACL_INT64: memcpy(&i64, p, 8); return i64;
    default: break;      /* any other dtype: not read here */
    }
    return 0;
}

HELPER uint64_t elem_bits(const unsigned char *p, size_t item)
{
    uint64_t v = 0;
    size_t i;
    for (i = 0; i < item && i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Bytes of the output storage outside its view that phase 2 changed (harness/inputs/guard.py
   damage()): counted over every region, the first one by offset described in `what`, in the
   region it lies in (before the view, a stride gap, after the tail). Returns the count. */
HELPER int64_t outside_view_damage(const Tensor *t, char *what, size_t cap)
{
    int64_t n = numel(t->dims, t->rank), count = (int64_t)(t->nbytes / t->item), k, pos = t->offset, lo = -1, hi = -1;
    int64_t idx[MAX_RANK] = {0}, total = 0, part;
    size_t b, cut, bounds[4];
    const char *names[3] = {"before the view", "stride gap", "after the tail"};
    unsigned char *covered = (unsigned char *)xalloc((size_t)count);
    unsigned char *changed = (unsigned char *)xalloc(t->nbytes);
    int r;
    for (k = 0; k < n; k++) {
        covered[pos] = 1;
        lo = lo < 0 || pos < lo ? pos : lo;
        hi = pos > hi ? pos : hi;
        pos = next_index(idx, t->dims, t->strides, t->rank, pos);
    }
    for (b = 0; b < t->nbytes; b++)
        changed[b] = !covered[b / t->item] && t->host[b] != t->initial[b];
    if (n == 0) {        /* no element: before the offset, then after it */
        cut = (size_t)t->offset * t->item < t->nbytes ? (size_t)t->offset * t->item : t->nbytes;
        bounds[0] = 0, bounds[1] = cut, bounds[2] = cut, bounds[3] = t->nbytes;
    } else {
        bounds[0] = 0, bounds[1] = (size_t)lo * t->item, bounds[2] = (size_t)(hi + 1) * t->item, bounds[3] = t->nbytes;
    }
    what[0] = 0;
    for (r = 0; r < 3; r++) {
        char here[256];
        part = describe_damage(names[r], t->host, t->initial, changed, bounds[r], bounds[r + 1], 0, here, sizeof here);
        if (part && !total)
            snprintf(what, cap, "%s", here);
        total += part;
    }
    free(covered);
    free(changed);
    if (total) {     /* the first change's words, the count over every region */
        char *paren = strrchr(what, '(');
        if (paren)
            snprintf(paren, cap - (size_t)(paren - what), "(%lld guard byte%s changed)", (long long)total,
                     total == 1 ? "" : "s");
    }
    return total;
}
