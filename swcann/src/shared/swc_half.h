/* fp16/bf16 <-> fp32 with round-to-nearest-even, shared (as static inline) by
 * the runtime (aclFloat16ToFloat, ...) and the ops' element access. */
#ifndef SWC_HALF_H_
#define SWC_HALF_H_
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t swc_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float swc_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float swc_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return swc_u2f(sign | 0x7f800000u | (man << 13)); /* inf / nan */
    if (exp == 0) {
        if (man == 0) return swc_u2f(sign);
        /* subnormal: man * 2^-24 is exact in fp32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return swc_u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

/* fp32 -> fp16, round to nearest even, overflow -> inf, NaN kept quiet */
static inline uint16_t swc_float_to_half(float f)
{
    uint32_t u = swc_f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u | ((absu >> 13) & 0x3ffu) : 0));
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520 -> inf */
    if (absu < 0x38800000u) { /* result subnormal or zero: exponent < -14 */
        if (absu < 0x33000000u) return sign; /* < 2^-25: rounds to 0 */
        uint32_t e = absu >> 23, m = (absu & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = ((absu - 0x38000000u) >> 13); /* rebias exponent by -112 */
    uint32_t rem = absu & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

/* The same conversions computed through double (libm's log2/ldexp/rint): bit-identical to the
 * two above, and several times slower. The fault perf_fp16_double puts the kernels' fp16 loads
 * and stores on this path; inf and NaN keep their bits, as above. */
static inline float swc_half_to_float_via_double(uint16_t h)
{
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return swc_half_to_float(h);
    double mag = exp ? ldexp((double)(man | 0x400u), (int)exp - 25) : ldexp((double)man, -24);
    return (float)((h & 0x8000u) ? -mag : mag);
}

static inline uint16_t swc_float_to_half_via_double(float f)
{
    uint32_t u = swc_f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7fffffffu) >= 0x7f800000u) return swc_float_to_half(f);
    double a = fabs((double)f); /* exact: the one rounding is rint's, ties to even */
    if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u);
    if (a == 0.0) return sign;
    int E = (int)floor(log2(a)); /* the binade, then fixed up where log2 rounded across it */
    while (ldexp(1.0, E) > a) E--;
    while (ldexp(1.0, E + 1) <= a) E++;
    if (E < -14) E = -14;        /* subnormals keep the quantum 2^-24 */
    double q = rint(ldexp(a, 10 - E)); /* a in units of 2^(E-10): [0, 2048] */
    return (uint16_t)(sign | (((uint32_t)(E + 14) << 10) + (uint32_t)q));
}

static inline float swc_bf16_to_float(uint16_t b) { return swc_u2f((uint32_t)b << 16); }

static inline uint16_t swc_float_to_bf16(float f)
{
    uint32_t u = swc_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
#endif
