/*
 * A measured alternative to the shim's ZSTD_compress2, not used by the shim
 * (docs/overhead.md, "The writer, third pass"): a frame compressed with
 * matches the writer finds itself (ZSTD_compressSequences), so that zstd's match
 * finder never runs over the columns marked noise, and each long noise region
 * is a zstd block of its own (its own Huffman table, or raw literals when zstd
 * finds them incompressible, as a duration's low bytes are). The output is an
 * ordinary zstd frame of the same bytes: any zstd decoder reads it.
 *
 * The frame's bytes are described by regions, each from `start` to the next
 * region's start: WSL_ZR_MATCH bytes are searched for matches by a small greedy
 * matcher (the last offset, then a 4,096-slot hash of 5 bytes, the step longer
 * after misses); WSL_ZR_NOISE bytes are never searched and go to zstd as
 * literals. tests/bench/writer_replay.c's `-seq` modes use it.
 */
#ifndef WSLSHIM_FRAME_SEQ_H
#define WSLSHIM_FRAME_SEQ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ZSTD_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#endif
#include <zstd.h>
#include <zstd_errors.h>

enum { WSL_ZR_MATCH = 0, WSL_ZR_NOISE = 1 };

struct wsl_zregion {
    uint32_t start; /* offset in the frame's bytes */
    uint32_t kind;  /* WSL_ZR_* */
};

#define WSL_ZSEQ_HASH_LOG 12u
#define WSL_ZSEQ_MIN_MATCH 5u
#ifndef WSL_ZSEQ_STEP_SHIFT
#define WSL_ZSEQ_STEP_SHIFT 6 /* misses in a row make the search step longer: one more byte per 2^6 */
#endif
#ifndef WSL_ZSEQ_BLOCK_MIN
#define WSL_ZSEQ_BLOCK_MIN 512u
#endif   /* a noise region this long or longer is a block of its own */
#define WSL_ZSEQ_BLOCK_MAX (128u << 10)
#define WSL_ZSEQ_SEGMENT_MAX (64u << 10) /* regions are cut into segments this long at most */

struct wsl_zseq {
    ZSTD_Sequence *seq;
    size_t seq_cap;
    uint32_t hash[1u << WSL_ZSEQ_HASH_LOG]; /* position + 1 of the last 5 bytes with this hash; 0 none */
};

static inline uint32_t wsl_zseq_read32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t wsl_zseq_read64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t wsl_zseq_hash5(const uint8_t *p)
{
    return (uint32_t)(((wsl_zseq_read64(p) << 24) * 0xcf1bbcdcbbull) >> (64 - WSL_ZSEQ_HASH_LOG));
}

/* Bytes equal at p and q, up to end (p > q). */
static inline size_t wsl_zseq_extend(const uint8_t *p, const uint8_t *q, const uint8_t *end)
{
    const uint8_t *const s = p;
    while (p + 8 <= end) {
        uint64_t d = wsl_zseq_read64(p) ^ wsl_zseq_read64(q);
        if (d)
            return (size_t)(p - s) + (size_t)(__builtin_ctzll(d) >> 3);
        p += 8, q += 8;
    }
    while (p < end && *p == *q)
        p++, q++;
    return (size_t)(p - s);
}

/* The cctx's settings for wsl_zseq_compress (once, on a cctx that may also run ZSTD_compress2). */
static inline void wsl_zseq_setup(ZSTD_CCtx *cctx)
{
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_blockDelimiters, ZSTD_sf_explicitBlockDelimiters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_validateSequences, 0);
}

/* Room for the sequences of n bytes; 0, or -1: out of memory. */
static inline int wsl_zseq_reserve(struct wsl_zseq *z, size_t n)
{
    /* a sequence per WSL_ZSEQ_MIN_MATCH bytes at most, a delimiter per block: a block per region at most */
    size_t need = n / WSL_ZSEQ_MIN_MATCH + 16;
    if (need <= z->seq_cap)
        return 0;
    ZSTD_Sequence *s = (ZSTD_Sequence *)realloc(z->seq, need * sizeof *s);
    if (!s)
        return -1;
    z->seq = s;
    z->seq_cap = need;
    return 0;
}

/* Compresses src[0, len), described by regions r[0, nr) (r[0].start == 0, in order), into one
 * zstd frame at dst; returns its size or a zstd error code (as ZSTD_compress2). */
static inline size_t wsl_zseq_compress(ZSTD_CCtx *cctx, struct wsl_zseq *z, void *dst, size_t cap,
                                       const uint8_t *src, size_t len, const struct wsl_zregion *r, size_t nr)
{
    /* sequences: one per match, a delimiter per block; blocks: a noise region long enough is one, what is
     * between two such is one (cut at WSL_ZSEQ_BLOCK_MAX) */
    if (wsl_zseq_reserve(z, len + nr * WSL_ZSEQ_MIN_MATCH * 2) != 0)
        return (size_t) - (int)ZSTD_error_memory_allocation;
    memset(z->hash, 0, sizeof z->hash);
    ZSTD_Sequence *s = z->seq;
    size_t ns = 0, block = 0; /* the block's start */
    const uint8_t *anchor = src;
    uint32_t rep = 0;
    size_t i = 0, from = 0;
    while (i < nr) {
        /* a segment: the rest of region i, at most WSL_ZSEQ_SEGMENT_MAX bytes */
        const size_t rend = i + 1 < nr ? r[i + 1].start : len;
        const uint32_t kind = r[i].kind;
        size_t to = rend - from > WSL_ZSEQ_SEGMENT_MAX ? from + WSL_ZSEQ_SEGMENT_MAX : rend;
        if (to == rend)
            i++;
        if (from >= to) {
            from = to;
            continue;
        }
        const int own = kind == WSL_ZR_NOISE && to - from >= WSL_ZSEQ_BLOCK_MIN;
        if (from > block && (own || to - block > WSL_ZSEQ_BLOCK_MAX)) { /* the block so far ends here */
            s[ns++] = (ZSTD_Sequence){0, (unsigned)(src + from - anchor), 0, 0};
            anchor = src + from;
            block = from;
        }
        if (kind == WSL_ZR_MATCH && to - from >= WSL_ZSEQ_MIN_MATCH + 8) {
            /* matches end in their segment (so in their block); they may start anywhere before */
            const uint8_t *p = src + from, *const end = src + to, *const limit = end - 8;
            const uint8_t *skip_from = p; /* misses since here make the search step longer */
            while (p < limit) {
                const uint8_t *q = NULL;
                if (rep && p - src >= (ptrdiff_t)rep && wsl_zseq_read32(p) == wsl_zseq_read32(p - rep) &&
                    p[4] == p[4 - (ptrdiff_t)rep]) {
                    q = p - rep;
                } else {
                    const uint32_t h = wsl_zseq_hash5(p);
                    const uint32_t c = z->hash[h];
                    z->hash[h] = (uint32_t)(p - src) + 1;
                    if (c && wsl_zseq_read32(src + c - 1) == wsl_zseq_read32(p) && src[c + 3] == p[4])
                        q = src + c - 1;
                }
                if (!q) {
                    p += 1 + ((size_t)(p - skip_from) >> WSL_ZSEQ_STEP_SHIFT);
                    continue;
                }
                const size_t m = 5 + wsl_zseq_extend(p + 5, q + 5, end);
                rep = (uint32_t)(p - q);
                s[ns++] = (ZSTD_Sequence){rep, (unsigned)(p - anchor), (unsigned)m, 0};
                if (m > 16) /* a later match may start inside this one */
                    z->hash[wsl_zseq_hash5(p + m - 8)] = (uint32_t)(p + m - 8 - src) + 1;
                p += m;
                anchor = skip_from = p;
            }
        }
        if (own && to < len) { /* the noise region is a block of its own */
            s[ns++] = (ZSTD_Sequence){0, (unsigned)(src + to - anchor), 0, 0};
            anchor = src + to;
            block = to;
        }
        from = to;
    }
    s[ns++] = (ZSTD_Sequence){0, (unsigned)(src + len - anchor), 0, 0};
    return ZSTD_compressSequences(cctx, dst, cap, s, ns, src, len);
}

#endif /* WSLSHIM_FRAME_SEQ_H */
