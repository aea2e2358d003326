#include "stats.h"

#include <math.h>
#include <stdlib.h>

#include "util.h"

uint64_t *wsl_hist_group_alloc(struct wsl_hist *h, unsigned group)
{
    uint64_t *b = xcalloc(WSL_HIST_SUB, sizeof *b);
    h->groups[group] = b;
    return b;
}

void wsl_hist_saturate(struct wsl_hist *h)
{
    h->sum = UINT64_MAX;
}

uint64_t *wsl_hist_group_first(struct wsl_hist *h, unsigned group, uint64_t v)
{
    if (h->count == 0)
        h->min = v;
    return wsl_hist_group_alloc(h, group);
}

static void bucket_bounds(unsigned g, unsigned i, uint64_t *lo, uint64_t *hi)
{
    if (g == 0) {
        *lo = *hi = i;
        return;
    }
    unsigned shift = g - 1;     /* msb - SUB_BITS */
    *lo = (uint64_t)(WSL_HIST_SUB + i) << shift;
    *hi = *lo + (((uint64_t)1 << shift) - 1);
}

void wsl_hist_bucket_bounds(uint64_t v, uint64_t *lo, uint64_t *hi)
{
    unsigned g, i;
    wsl_hist_locate(v, &g, &i);
    bucket_bounds(g, i, lo, hi);
}

static uint64_t bucket_middle(unsigned g, unsigned i)
{
    uint64_t lo, hi;
    bucket_bounds(g, i, &lo, &hi);
    return lo + (hi - lo + 1) / 2;
}

uint64_t wsl_hist_quantile(const struct wsl_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (!(q > 0))
        return h->min;
    if (q >= 1)
        return h->max;
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank <= 1)
        return h->min;  /* the extremes are known exactly */
    if (rank >= h->count)
        return h->max;
    uint64_t seen = 0;
    for (unsigned g = 0; g < WSL_HIST_GROUPS; g++) {
        const uint64_t *b = h->groups[g];
        if (!b)
            continue;
        for (unsigned i = 0; i < WSL_HIST_SUB; i++) {
            seen += b[i];
            if (seen >= rank) {
                uint64_t v = bucket_middle(g, i);
                return v < h->min ? h->min : v > h->max ? h->max : v;
            }
        }
    }
    return h->max;
}

static uint64_t scale_value(uint64_t v, double scale)
{
    double s = (double)v * scale;
    if (!(s > 0))
        return 0;
    if (!(s < 18446744073709551615.0))
        return UINT64_MAX;
    return (uint64_t)llround(s);
}

void wsl_hist_merge_scaled(struct wsl_hist *dst, const struct wsl_hist *src, double scale)
{
    if (src->count == 0)
        return;
    for (unsigned g = 0; g < WSL_HIST_GROUPS; g++) {
        const uint64_t *b = src->groups[g];
        if (!b)
            continue;
        for (unsigned i = 0; i < WSL_HIST_SUB; i++) {
            if (!b[i])
                continue;
            unsigned dg = g, di = i;
            if (scale != 1.0)
                wsl_hist_locate(scale_value(bucket_middle(g, i), scale), &dg, &di);
            uint64_t *d = dst->groups[dg] ? dst->groups[dg] : wsl_hist_group_alloc(dst, dg);
            d[di] += b[i];
        }
    }
    uint64_t mn = scale == 1.0 ? src->min : scale_value(src->min, scale);
    uint64_t mx = scale == 1.0 ? src->max : scale_value(src->max, scale);
    uint64_t sum = scale == 1.0 ? src->sum : scale_value(src->sum, scale);
    if (dst->count == 0 || mn < dst->min)
        dst->min = mn;
    if (mx > dst->max)
        dst->max = mx;
    dst->count += src->count;
    uint64_t s = dst->sum + sum;
    dst->sum = s < sum ? UINT64_MAX : s;
}

void wsl_hist_expand(struct wsl_hist *h, uint64_t total, uint32_t weight)
{
    uint64_t k = h->count;
    if (total <= k)
        return;
    if (k == 0) {
        uint64_t *b = h->groups[0] ? h->groups[0] : wsl_hist_group_alloc(h, 0);
        b[0] += total;
        h->count = total;
        h->min = h->max = h->sum = 0;
        return;
    }
    double f = (double)total / (double)k;
    uint64_t assigned = 0, *largest = NULL;
    for (unsigned g = 0; g < WSL_HIST_GROUPS; g++) {
        uint64_t *b = h->groups[g];
        for (unsigned i = 0; b && i < WSL_HIST_SUB; i++) {
            if (!b[i])
                continue;
            double v = (double)b[i] * f;
            uint64_t n = v >= 18446744073709549568.0 ? UINT64_MAX / 2 : (uint64_t)v;
            if (n < b[i])
                n = b[i];
            b[i] = n;
            assigned += n;
            if (!largest || n > *largest)
                largest = &b[i];
        }
    }
    if (largest && assigned < total)
        *largest += total - assigned;
    h->count = total;
    uint64_t w = weight ? weight : 1;
    h->sum = h->sum > UINT64_MAX / w ? UINT64_MAX : h->sum * w;
}

void wsl_hist_free(struct wsl_hist *h)
{
    for (unsigned g = 0; g < WSL_HIST_GROUPS; g++) {
        free(h->groups[g]);
        h->groups[g] = NULL;
    }
}
