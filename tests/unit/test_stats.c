/* The log-linear histogram: quantiles within its stated error, exact small values, merging. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "phase_analysis.h"
#include "stats.h"
#include "unit_test.h"

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of sorted values. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n);
    return sorted[rank ? rank - 1 : 0];
}

static double rel_error(uint64_t got, uint64_t want)
{
    return want ? fabs((double)got - (double)want) / (double)want : (double)got;
}

int test_stats_histogram(void)
{
    enum { N = 100000 };
    uint64_t *v = malloc(N * sizeof *v);
    CHECK(v);
    rng_seed(17);
    for (int dist = 0; dist < 3; dist++) {
        struct wsl_hist h;
        memset(&h, 0, sizeof h);
        uint64_t sum = 0;
        for (int i = 0; i < N; i++) {
            if (dist == 0)
                v[i] = 1 + rng_below(1000000);                       /* uniform */
            else if (dist == 1)
                v[i] = (uint64_t)(1000.0 * exp((double)rng_below(1000000) / 1e5)); /* log-uniform, 1e3..2e7 */
            else
                v[i] = rng_below(100) ? 4000 + rng_below(500) : 5000000; /* fast calls, a few slow ones */
            sum += v[i];
            wsl_hist_add(&h, v[i]);
        }
        qsort(v, N, sizeof *v, compare_u64);
        CHECK(h.count == N && h.sum == sum && h.min == v[0] && h.max == v[N - 1]);
        const double qs[] = {0.01, 0.25, 0.5, 0.9, 0.99, 0.999};
        for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
            uint64_t got = wsl_hist_quantile(&h, qs[k]), want = exact_quantile(v, N, qs[k]);
            CHECKF(rel_error(got, want) <= 1.0 / 128, "dist %d q %.3f: %llu, exact %llu", dist, qs[k],
                   (unsigned long long)got, (unsigned long long)want);
        }
        CHECK(wsl_hist_quantile(&h, 0) == v[0] && wsl_hist_quantile(&h, 1) == v[N - 1]);
        wsl_hist_free(&h);
    }

    /* below 128 every value has its own bucket */
    struct wsl_hist h;
    memset(&h, 0, sizeof h);
    for (uint64_t i = 0; i < 100; i++)
        wsl_hist_add(&h, i);
    CHECK(wsl_hist_quantile(&h, 0.5) == 49 && wsl_hist_quantile(&h, 0.99) == 98);
    wsl_hist_free(&h);

    /* bucket widths stay within 1/128 of their values, up to the top of the range */
    for (uint64_t x = 1; x < UINT64_MAX / 3; x = x * 3 + 1) {
        uint64_t lo, hi;
        wsl_hist_bucket_bounds(x, &lo, &hi);
        CHECK(lo <= x && x <= hi && (double)(hi - lo) <= (double)lo / 128.0);
    }
    uint64_t lo, hi;
    wsl_hist_bucket_bounds(UINT64_MAX, &lo, &hi);
    CHECK(hi == UINT64_MAX && lo == UINT64_MAX - ((1ull << 56) - 1));

    /* extreme values: the sum saturates, nothing overflows */
    memset(&h, 0, sizeof h);
    wsl_hist_add(&h, UINT64_MAX);
    wsl_hist_add(&h, UINT64_MAX);
    wsl_hist_add(&h, 0);
    CHECK(h.sum == UINT64_MAX && h.max == UINT64_MAX && h.min == 0);
    CHECK(wsl_hist_quantile(&h, 0.99) == UINT64_MAX && wsl_hist_quantile(&h, 0.1) == 0);
    wsl_hist_free(&h);

    /* the min where the first value opens a group and later ones open others or land in it: the
     * first value's group is allocated with it (wsl_hist_group_first sets min), later ones compare */
    const uint64_t seqs[4][5] = {{5000, 3, 70000, 1, 2}, {0, 9, 1u << 20, 0, 7}, {127, 128, 126, 255, 129},
                                 {UINT64_MAX, 1ull << 40, 300, 1ull << 40, 299}};
    const uint64_t mins[4] = {1, 0, 126, 299};
    for (int k = 0; k < 4; k++) {
        memset(&h, 0, sizeof h);
        for (int i = 0; i < 5; i++)
            wsl_hist_add(&h, seqs[k][i]);
        CHECKF(h.count == 5 && h.min == mins[k], "sequence %d: min %llu", k, (unsigned long long)h.min);
        CHECK(wsl_hist_quantile(&h, 0) == mins[k]);
        wsl_hist_free(&h);
    }

    /* the bucket of every value near each power of two as the plain formula has it */
    for (unsigned b = 0; b < 64; b++)
        for (int d = -2; d <= 2; d++) {
            uint64_t x = ((uint64_t)1 << b) + (uint64_t)(int64_t)d;
            unsigned g, i, rg, ri;
            wsl_hist_locate(x, &g, &i);
            if (x < WSL_HIST_SUB) {
                rg = 0, ri = (unsigned)x;
            } else {
                unsigned msb = 63u - (unsigned)__builtin_clzll(x);
                rg = msb - (WSL_HIST_SUB_BITS - 1);
                ri = (unsigned)(x >> (msb - WSL_HIST_SUB_BITS)) & (WSL_HIST_SUB - 1);
            }
            CHECKF(g == rg && i == ri, "%llu: group %u index %u, want %u %u", (unsigned long long)x, g, i, rg, ri);
        }

    struct wsl_hist empty;
    memset(&empty, 0, sizeof empty);
    CHECK(wsl_hist_quantile(&empty, 0.5) == 0);
    free(v);
    return 0;
}

/* The launch gaps' buckets: g itself below 4, else by its power of two and top two bits, as the
 * plain formula has them (less 4 above 4); the value split_gaps compares for each as the plain
 * formula's bucket gave it, and within the bucket or at its end. */
int test_phase_gap_buckets(void)
{
    for (unsigned b = 0; b < 64; b++)
        for (int d = -2; d <= 3; d++) {
            uint64_t g = ((uint64_t)1 << b) + (uint64_t)(int64_t)d;
            if (b < 2 && d < 0)
                continue;
            unsigned k = wsl_phase_gap_bucket(g);
            CHECKF(k < 256, "%llu: bucket %u", (unsigned long long)g, k);
            if (g < 4) {
                CHECK(k == g);
            } else {
                unsigned msb = 63u - (unsigned)__builtin_clzll(g);
                CHECKF(k == 4 * msb + (unsigned)(g >> (msb - 1)) - 4, "%llu: bucket %u", (unsigned long long)g, k);
            }
            uint64_t split = wsl_phase_gap_split_value(k), low = g < 4 ? g : (uint64_t)(k & 3) << (k / 4);
            if (g >= 4) {
                unsigned old = k + 4; /* the plain formula's bucket and its value */
                CHECKF(split == (uint64_t)(4 | (old & 3)) << (old / 4 - 2), "bucket %u: %llu", k,
                       (unsigned long long)split);
            }
            CHECKF(low <= g && (g < 4 ? split == g : g - low < (uint64_t)1 << (k / 4) && split > low &&
                                                         split <= low + ((uint64_t)1 << (k / 4))),
                   "%llu: bucket %u from %llu, split at %llu", (unsigned long long)g, k, (unsigned long long)low,
                   (unsigned long long)split);
        }
    CHECK(wsl_phase_gap_bucket(UINT64_MAX) == 251 && wsl_phase_gap_split_value(251) == 7ull << 61);
    return 0;
}

/* Merging with scale 1 is exact; merging ticks at 0.4 ns/tick lands within 1%. */
int test_stats_merge(void)
{
    enum { N = 50000 };
    struct wsl_hist a, b, all, ticks, ns;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&all, 0, sizeof all);
    memset(&ticks, 0, sizeof ticks);
    memset(&ns, 0, sizeof ns);
    uint64_t *v = malloc(N * sizeof *v);
    CHECK(v);
    rng_seed(23);
    for (int i = 0; i < N; i++) {
        v[i] = 2000 + rng_below(200000);
        wsl_hist_add(i % 2 ? &a : &b, v[i]);
        wsl_hist_add(&all, v[i]);
        wsl_hist_add(&ticks, (uint64_t)llround((double)v[i] * 2.5));
    }
    struct wsl_hist merged;
    memset(&merged, 0, sizeof merged);
    wsl_hist_merge_scaled(&merged, &a, 1.0);
    wsl_hist_merge_scaled(&merged, &b, 1.0);
    CHECK(merged.count == all.count && merged.sum == all.sum && merged.min == all.min && merged.max == all.max);
    for (double q = 0.05; q < 1; q += 0.05)
        CHECK(wsl_hist_quantile(&merged, q) == wsl_hist_quantile(&all, q));

    wsl_hist_merge_scaled(&ns, &ticks, 0.4);
    qsort(v, N, sizeof *v, compare_u64);
    CHECK(ns.count == N && ns.min == v[0] && ns.max == v[N - 1]);
    CHECK(rel_error(ns.sum, all.sum) < 1e-6);
    const double qs[] = {0.5, 0.9, 0.99};
    for (size_t k = 0; k < 3; k++) {
        uint64_t got = wsl_hist_quantile(&ns, qs[k]), want = exact_quantile(v, N, qs[k]);
        CHECKF(rel_error(got, want) <= 0.01, "q %.2f: %llu, exact %llu", qs[k], (unsigned long long)got,
               (unsigned long long)want);
    }
    wsl_hist_free(&a);
    wsl_hist_free(&b);
    wsl_hist_free(&all);
    wsl_hist_free(&ticks);
    wsl_hist_free(&ns);
    wsl_hist_free(&merged);
    free(v);
    return 0;
}

/* The phases' median (a selection) is the sorted array's middle element: random sizes, few or many
 * distinct values, sorted and reversed input. */
int test_phase_median(void)
{
    rng_seed(2626);
    for (unsigned round = 0; round < 4000; round++) {
        size_t n = (size_t)rng_below(round < 3000 ? 40 : 5000);
        uint64_t *v = malloc((n ? n : 1) * sizeof *v), *s = malloc((n ? n : 1) * sizeof *s);
        CHECK(v && s);
        uint64_t spread = round % 4 == 0 ? 3 : round % 4 == 1 ? 1000 : UINT64_MAX;
        for (size_t i = 0; i < n; i++)
            v[i] = spread == UINT64_MAX ? rng_next() : rng_below(spread);
        if (round % 7 == 0)
            qsort(v, n, sizeof *v, compare_u64);
        if (round % 11 == 0)
            for (size_t i = 0; i < n / 2; i++) {
                uint64_t t = v[i];
                v[i] = v[n - 1 - i];
                v[n - 1 - i] = t;
            }
        memcpy(s, v, n * sizeof *v);
        qsort(s, n, sizeof *s, compare_u64);
        uint64_t want = n ? s[n / 2] : 0, got = wsl_phase_median(v, n);
        CHECKF(got == want, "round %u, n %zu: %llu, want %llu", round, n, (unsigned long long)got,
               (unsigned long long)want);
        free(v);
        free(s);
    }
    return 0;
}

/* wsl_phase_best_period, which takes a region grown from an earlier anchor where it can, answers as
 * wsl_phase_find_period at each anchor in turn, the first longest kept: periodic launch streams
 * (periods 1 to 40, several periods in a row, random substitutions and insertions that break
 * blocks), the anchors of the phases and random ones. */
int test_phase_best_period(void)
{
    rng_seed(3030);
    unsigned reused = 0;
    for (unsigned round = 0; round < 3000; round++) {
        size_t n = 30 + (size_t)rng_below(round < 2000 ? 400 : 6000);
        uint64_t *ids = malloc(n * sizeof *ids);
        CHECK(ids);
        size_t i = 0;
        while (i < n) { /* a few stretches, each of its own period */
            uint32_t p = 1 + (uint32_t)rng_below(round % 3 == 0 ? 4 : 40);
            size_t len = 1 + (size_t)rng_below(n);
            uint64_t base = rng_below(4) * 1000;
            for (size_t k = 0; k < len && i < n; k++, i++)
                ids[i] = base + k % p;
        }
        unsigned noise = round % 5 == 0 ? 0 : (unsigned)rng_below(1 + n / 20);
        for (unsigned k = 0; k < noise; k++)
            ids[rng_below(n)] = 500 + rng_below(3);
        size_t anchors[WSL_PHASE_MAX_ANCHORS + 2], count;
        if (round % 2 == 0) {
            anchors[0] = n / 4, anchors[1] = n / 2, anchors[2] = 3 * n / 4, anchors[3] = n;
            count = 4;
        } else {
            count = 1 + (size_t)rng_below(WSL_PHASE_MAX_ANCHORS + 2);
            for (size_t a = 0; a < count; a++)
                anchors[a] = (size_t)rng_below(n + 2); /* one past n too: find_period refuses it */
        }
        uint32_t want_p = 0;
        size_t want_s = 0, want_e = 0, grown_s[WSL_PHASE_MAX_ANCHORS + 2], grown_e[WSL_PHASE_MAX_ANCHORS + 2];
        unsigned found = 0;
        for (size_t a = 0; a < count; a++) {
            size_t s, e;
            uint32_t p = wsl_phase_find_period(ids, n, anchors[a], &s, &e);
            if (p) {
                for (unsigned k = 0; k < found; k++)
                    reused += grown_s[k] == s && grown_e[k] == e;
                grown_s[found] = s, grown_e[found++] = e;
            }
            if (p && e - s > want_e - want_s) {
                want_p = p;
                want_s = s;
                want_e = e;
            }
        }
        size_t got_s = 7, got_e = 7;
        uint32_t got_p = wsl_phase_best_period(ids, n, anchors, count, &got_s, &got_e);
        CHECKF(got_p == want_p && got_s == want_s && got_e == want_e,
               "round %u, n %zu: period %u [%zu, %zu), want %u [%zu, %zu)", round, n, got_p, got_s, got_e,
               want_p, want_s, want_e);
        free(ids);
    }
    CHECKF(reused > 500, "only %u anchors landed in a region found before: the reuse is not tested", reused);
    return 0;
}
