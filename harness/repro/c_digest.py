"""The digest of an output view, in C, byte for byte harness/judge/digest.py: SHA-256 (FIPS 180-4)
over the view's elements in the order of its dims as passed to aclCreateTensor."""
from __future__ import annotations

from math import isqrt

SHA256 = r"""
/* SHA-256 (FIPS 180-4). The round constants were derived by the generator from their definition
   (the first 32 fractional bits of the cube roots of the first 64 primes; the initial hash: square
   roots of the first 8). */
static const uint32_t SHA_K[64] = {@SHA_K@};
static const uint32_t SHA_H0[8] = {@SHA_H0@};

typedef struct {
    uint32_t h[8];
    unsigned char block[64];
    size_t used;
    uint64_t bytes;
} Sha256;

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

HELPER void sha256_block(Sha256 *s, const unsigned char *p)
{
    uint32_t w[64], v[8], t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (i = 16; i < 64; i++)
        w[i] = w[i - 16] + (ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 7]
               + (ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10));
    memcpy(v, s->h, sizeof v);
    for (i = 0; i < 64; i++) {
        t1 = v[7] + (ROTR(v[4], 6) ^ ROTR(v[4], 11) ^ ROTR(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6]))
             + SHA_K[i] + w[i];
        t2 = (ROTR(v[0], 2) ^ ROTR(v[0], 13) ^ ROTR(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (i = 0; i < 8; i++)
        s->h[i] += v[i];
}

HELPER void sha256_update(Sha256 *s, const unsigned char *p, size_t n)
{
    s->bytes += n;
    while (n) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == 64) {
            sha256_block(s, s->block);
            s->used = 0;
        }
    }
}

HELPER void sha256_hex(Sha256 *s, char out[65])
{
    uint64_t bits = s->bytes * 8;
    unsigned char pad = 0x80, len[8];
    int i;
    sha256_update(s, &pad, 1);
    pad = 0;
    while (s->used != 56)
        sha256_update(s, &pad, 1);
    for (i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(s, len, 8);
    for (i = 0; i < 8; i++)
        sprintf(out + 8 * i, "%08x", (unsigned)s->h[i]);
}

/* harness/judge/digest.py: SHA-256 of the view's elements in the order of its dims as passed to
   aclCreateTensor, each element's bytes as stored; strides, offset and gaps do not count. */
HELPER void view_digest(const Tensor *t, char out[65])
{
    Sha256 s;
    int64_t n = numel(t->dims, t->rank), k, pos = t->offset;
    int64_t idx[MAX_RANK] = {0};
    memset(&s, 0, sizeof s);
    memcpy(s.h, SHA_H0, sizeof s.h);
    for (k = 0; k < n; k++) {
        sha256_update(&s, t->host + pos * (int64_t)t->item, t->item);
        pos = next_index(idx, t->dims, t->strides, t->rank, pos);
    }
    sha256_hex(&s, out);
}
"""


def _primes(count: int) -> list[int]:
    found, n = [], 2
    while len(found) < count:
        if all(n % p for p in found):
            found.append(n)
        n += 1
    return found


def _icbrt(n: int) -> int:
    """floor(n ** (1/3)) for a non-negative integer, exactly."""
    x = 1 << ((n.bit_length() + 2) // 3)        # above the root
    while True:
        y = (2 * x + n // (x * x)) // 3
        if y >= x:
            return x
        x = y


def sha256_constants() -> tuple[list[int], list[int]]:
    """(K, H0) of SHA-256 from their definition: fractional bits of cube and square roots of primes."""
    primes = _primes(64)
    k = [_icbrt(p << 96) & 0xFFFFFFFF for p in primes]
    h0 = [isqrt(p << 64) & 0xFFFFFFFF for p in primes[:8]]
    return k, h0




def _hex_list(values: list[int]) -> str:
    return ", ".join(f"0x{v:08x}u" for v in values)


def digest_code() -> str:
    """The C text of SHA-256 and view_digest, with its constants filled in."""
    k, h0 = sha256_constants()
    return SHA256.replace("@SHA_K@", _hex_list(k)).replace("@SHA_H0@", _hex_list(h0))
