/*
 * Log-linear histogram of u64 values (durations): values below 128 are kept
 * exactly, larger ones in 128 sub-buckets per power of two, so a bucket is at
 * most 1/128 of its value wide and a quantile read from its middle is within
 * 0.4% of the true one. Memory: 1 KiB per power of two actually used.
 */
#ifndef WSLSHIM_STATS_H
#define WSLSHIM_STATS_H

#include <stddef.h>
#include <stdint.h>

#define WSL_HIST_SUB_BITS 7
#define WSL_HIST_SUB (1u << WSL_HIST_SUB_BITS)
#define WSL_HIST_GROUPS (64 - WSL_HIST_SUB_BITS + 1)

struct wsl_hist {
    uint64_t count, sum, min, max;      /* sum saturates at UINT64_MAX */
    uint64_t *groups[WSL_HIST_GROUPS];  /* allocated on first use */
};

/* Allocates a bucket group; prints "out of memory" and exits 2 if it cannot. */
uint64_t *wsl_hist_group_alloc(struct wsl_hist *h, unsigned group);

/* Allocates the bucket group of v's first value in it (the slow path of wsl_hist_add); an empty h
 * (count 0) takes v as its min, so that the inline path compares with min alone: a histogram
 * holds a bucket group only once it holds a value. */
uint64_t *wsl_hist_group_first(struct wsl_hist *h, unsigned group, uint64_t v);

/* The sum past UINT64_MAX: it stays there (the slow path of wsl_hist_add). */
void wsl_hist_saturate(struct wsl_hist *h);

/* v's power of two above the exact values: s = msb(v | 128) - 7, 0 below 128; then v >> s is v
 * itself below 128 and 128 + v's index above, and v's group is s + (v >> s >> 7). */
static inline unsigned wsl_hist_shift(uint64_t v)
{
    return ((unsigned)__builtin_clzll(v | WSL_HIST_SUB) ^ 63u) - WSL_HIST_SUB_BITS; /* (^ 63: bsr alone) */
}

/* The bucket of v: group (0: exact values, else the power of two) and index. */
static inline void wsl_hist_locate(uint64_t v, unsigned *group, unsigned *index)
{
    unsigned s = wsl_hist_shift(v);
    uint64_t w = v >> s;
    *group = s + (unsigned)(w >> WSL_HIST_SUB_BITS);
    *index = (unsigned)w & (WSL_HIST_SUB - 1);
}

static inline void wsl_hist_add(struct wsl_hist *h, uint64_t v)
{
    unsigned s = wsl_hist_shift(v);
    uint64_t w = v >> s;
    size_t g = s + (size_t)(w >> WSL_HIST_SUB_BITS);
    uint64_t *b = h->groups[g];
    if (__builtin_expect(!b, 0))
        b = wsl_hist_group_first(h, (unsigned)g, v);
    b[w & (WSL_HIST_SUB - 1)]++;
    if (v < h->min) /* (count > 0 here: min is the least so far) */
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->count++;
    h->sum += v;
    if (__builtin_expect(h->sum < v, 0)) /* (a call: no cmov, an add to memory and a jump) */
        wsl_hist_saturate(h);
}

/* Value at quantile q in [0, 1] (nearest rank), read from the middle of its
 * bucket and clamped to [min, max]; 0 when empty. */
uint64_t wsl_hist_quantile(const struct wsl_hist *h, double q);

/* Adds src to dst with every value multiplied by scale (ticks -> ns); with
 * scale 1 the buckets are added exactly, otherwise each src bucket lands
 * where its middle value lands (adding at most another 0.4%). */
void wsl_hist_merge_scaled(struct wsl_hist *dst, const struct wsl_hist *src, double scale);

/* A sample stands for all the values (sampled file timing): bucket counts
 * scaled up so that count becomes total (the largest bucket takes the
 * rounding), sum multiplied by weight (each sampled value stands for weight
 * values' time). An empty h becomes total values of 0 (their time unknown). */
void wsl_hist_expand(struct wsl_hist *h, uint64_t total, uint32_t weight);

void wsl_hist_free(struct wsl_hist *h);

/* The bucket range [lo, hi] holding v (for tests). */
void wsl_hist_bucket_bounds(uint64_t v, uint64_t *lo, uint64_t *hi);

#endif /* WSLSHIM_STATS_H */
