"""Elements of a reproducer's tensors, in C: decoding the dtypes a comparison reads (float16 and
bfloat16 by their bits), the harness's poison test, and the check that phase 2 left the output
storage outside the view holding the poison (the harness itself lays exact guard bytes there and
compares them byte for byte: harness/inputs/guard.py; this program does not yet)."""
from __future__ import annotations

DECODE = r"""
HELPER double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp((double)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp((double)(m | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

HELPER double elem_double(const unsigned char *p, int kind)
{
    uint16_t u16;
    uint32_t u32;
    float f;
    double d;
    switch (kind) {
    case K_F16: memcpy(&u16, p, 2); return half_value(u16);
    case K_BF16: memcpy(&u16, p, 2); u32 = (uint32_t)u16 << 16; memcpy(&f, &u32, 4); return f;
    case K_F32: memcpy(&f, p, 4); return f;
    case K_F64: memcpy(&d, p, 8); return d;
    }
    return 0.0;
}

HELPER int64_t elem_int(const unsigned char *p, int kind)
{
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    switch (kind) {
    case K_I8: memcpy(&i8, p, 1); return i8;
    case K_U8: case K_BOOL: return p[0];
    case K_I16: memcpy(&i16, p, 2); return i16;
    case K_I32: memcpy(&i32, p, 4); return i32;
    case K_I64: memcpy(&i64, p, 8); return i64;
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

/* The harness's is_poison: any NaN for floating dtypes, the poison value itself otherwise. */
HELPER int is_poison(const unsigned char *p, const Tensor *t)
{
    if (t->kind == K_F16 || t->kind == K_BF16 || t->kind == K_F32 || t->kind == K_F64)
        return isnan(elem_double(p, t->kind));
    return memcmp(p, t->fill, t->item) == 0;
}

/* Elements of the output storage outside its view that no longer hold the poison. */
HELPER int64_t outside_view_changed(const Tensor *t)
{
    int64_t n = numel(t->dims, t->rank), count = (int64_t)(t->nbytes / t->item), k, pos = t->offset, changed = 0;
    int64_t idx[MAX_RANK] = {0};
    unsigned char *covered = (unsigned char *)xalloc((size_t)count);
    for (k = 0; k < n; k++) {
        covered[pos] = 1;
        pos = next_index(idx, t->dims, t->strides, t->rank, pos);
    }
    for (k = 0; k < count; k++)
        changed += !covered[k] && !is_poison(t->host + k * t->item, t);
    free(covered);
    return changed;
}
"""

