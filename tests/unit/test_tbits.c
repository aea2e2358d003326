/* EVENTS_BITS (format 1.10): the times coded as bits by the writer (trace_format.h). Round trips
 * over the distributions the writer meets and every code parameter, a golden encoding byte for
 * byte, malformed chunks through the reference decoder and the reader's batch loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader_internal.h"
#include "trace_synth.h"
#include "unit_test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Decodes the EVENTS_BITS bytes of n events (reference decoder) into out; 0 when they decode
 * exactly (every column used up), else 1. */
static int decode_tbits(const uint8_t *b, size_t size, uint32_t n, uint64_t base, struct wsl_event *out)
{
    static struct wsl_codec_state st;
    static struct wsl_pack_state ps;
    struct wsl_tbits_in in;
    if (wsl_tbits_open(&in, b, size, n) != WSL_COLUMNS_OK)
        return 1;
    wsl_codec_reset(&st, base);
    wsl_pack_reset(&ps, 0);
    for (uint32_t i = 0; i < n; i++)
        if (!wsl_event_decode_tbits(&ps, &st, &in, WSL_MAX_API_IDS, &out[i]))
            return 1;
    return wsl_tbits_left(&in) != 0 || ps.literals != in.cols.literals;
}

/* The times of the n events of `kind` from t0 on, arguments from a few sets. */
static void make_events(struct wsl_event *ev, uint32_t n, int kind)
{
    uint64_t t = 1000000 + (rnd() & 0xffff) * 2;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t gap, dur;
        switch (kind) {
        case 0: /* a launch loop: even ticks, narrow */
            gap = 44 + 2 * (rnd() % 8), dur = 228 + 2 * (rnd() % 16);
            break;
        case 1: /* two modes and outliers */
            gap = (rnd() % 3 ? 46 : 66) + 2 * (rnd() % 3) + (rnd() % 97 == 0 ? 30000 : 0), dur = 230 + rnd() % 90;
            break;
        case 2: /* file calls: orders of magnitude */
            gap = rnd() >> (rnd() % 40 + 24), dur = rnd() >> (rnd() % 40 + 24);
            break;
        case 3: /* all alike */
            gap = 7, dur = 0;
            break;
        default: /* anything: huge values, escapes both ways */
            gap = rnd(), dur = rnd() >> (rnd() % 64);
            break;
        }
        ev[i].t_start = t + gap;
        ev[i].t_end = ev[i].t_start + dur;
        if (ev[i].t_end < ev[i].t_start) /* past 2^64: the layouts write such a duration as 0 */
            ev[i].t_end = ev[i].t_start;
        t = ev[i].t_end;
        if (kind == 4 && i % 5 == 0)
            ev[i].t_start -= 3 * (rnd() % 1000); /* starts before the previous end: negative gaps */
        ev[i].api = (uint16_t)(rnd() % 3);
        ev[i].stream = 0x100 + rnd() % 2;
        ev[i].a[0] = 0x5000 + (rnd() % 4) * 16;
    }
}

/* Every distribution, every chunk length from 1 to a full chunk: the writer's encoder
 * (wsl_encode_tbits_run, wsl_tbits_close) and the reference decoder give back every timestamp. */
int test_tbits_roundtrip(void)
{
    enum { MAXN = 4096 };
    struct wsl_event *ev = calloc(MAXN, sizeof *ev), *out = calloc(MAXN, sizeof *out);
    CHECK(ev && out);
    static const uint32_t lens[] = {1, 2, 3, 63, 64, 65, 127, 128, 129, 1000, 4096};
    for (int kind = 0; kind < 5; kind++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            const uint32_t n = lens[l];
            memset(ev, 0, sizeof *ev * n);
            make_events(ev, n, kind);
            uint8_t *enc;
            size_t size = synth_encode_tbits(ev, n, ev[0].t_start, &enc);
            CHECKF(size <= WSL_TBITS_DIRECTORY_SIZE + (size_t)n * (1 + WSL_COL_TBITS_MAX + WSL_COL_LIT_MAX),
                   "kind %d n %u: %zu bytes", kind, n, size);
            CHECKF(decode_tbits(enc, size, n, ev[0].t_start, out) == 0, "kind %d n %u: did not decode", kind, n);
            for (uint32_t i = 0; i < n; i++) {
                const char *what;
                CHECKF(event_diff(&ev[i], &out[i], &what) < 0, "kind %d n %u event %u differs in %s", kind, n, i,
                       what);
            }
            free(enc);
        }
    /* a duration that is negative is written as 0, as in every packed layout */
    ev[0] = (struct wsl_event){.t_start = 5000, .t_end = 4000};
    ev[1] = (struct wsl_event){.t_start = 5100, .t_end = 5300};
    uint8_t *enc;
    size_t size = synth_encode_tbits(ev, 2, 5000, &enc);
    CHECK(decode_tbits(enc, size, 2, 5000, out) == 0);
    CHECK(out[0].t_start == 5000 && out[0].t_end == 5000 && out[1].t_start == 5100 && out[1].t_end == 5300);
    free(enc);
    free(ev);
    free(out);
    return 0;
}

/* Every code parameter the format allows, the writer's choice or not: wsl_tbits_write with
 * k, q and shift set by hand, read back by wsl_tb_get; its loop as compiled for any x86-64 and as
 * the writer picks it for this CPU (x86-64-v3 where it has AVX2 and BMI2). */
int test_tbits_codes(void)
{
    enum { N = 700 };
    static uint64_t times[2 * N]; /* gap, duration, ... */
    static uint8_t bits[N * WSL_COL_TBITS_MAX + 8];
    static const unsigned ks[] = {0, 1, 3, 9, 17, 31, 32}, qs[] = {0, 1, 2, 4, 15, 16, 17, 24, 32},
                          shifts[] = {0, 1, 5, 63};
    for (int v3 = 0; v3 < 2; v3++) {
        const struct wsl_tbits_coder coder = wsl_tbits_coder_pick(v3);
        for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
            for (size_t b = 0; b < sizeof qs / sizeof qs[0]; b++)
                for (size_t c = 0; c < sizeof shifts / sizeof shifts[0]; c++) {
                    struct wsl_tbits_dir d = {.gap_center = (int64_t)(rnd() << shifts[c]), .dur_center = 0,
                                              .gap_k = (uint8_t)ks[a], .gap_q = (uint8_t)qs[b],
                                              .gap_shift = (uint8_t)shifts[c], .dur_k = (uint8_t)ks[(a + 3) % 7],
                                              .dur_q = (uint8_t)qs[(b + 4) % 9],
                                              .dur_shift = (uint8_t)shifts[(c + 1) % 4]};
                    d.dur_center = rnd() << d.dur_shift;
                    for (unsigned i = 0; i < N; i++) {
                        /* near the center, then further out, then anything (escapes) */
                        const unsigned sh = i < 300 ? 58 : i < 600 ? (unsigned)(rnd() % 64) : 0;
                        times[2 * i] = (uint64_t)d.gap_center + ((rnd() >> sh) << d.gap_shift);
                        times[2 * i + 1] = d.dur_center + ((rnd() >> sh) << d.dur_shift);
                    }
                    memset(bits, 0xa5, sizeof bits); /* the writer must not rely on zeroed room */
                    const size_t nb = coder.write(bits, times, N, &d);
                    struct wsl_bits_in in = {bits, bits + nb, 0, 0};
                    for (unsigned i = 0; i < N; i++) {
                        const uint64_t g = (uint64_t)d.gap_center +
                                           ((uint64_t)wsl_unzigzag(wsl_tb_get(&in, d.gap_k, d.gap_q)) << d.gap_shift);
                        const uint64_t u = d.dur_center +
                                           ((uint64_t)wsl_unzigzag(wsl_tb_get(&in, d.dur_k, d.dur_q)) << d.dur_shift);
                        CHECKF(g == times[2 * i] && u == times[2 * i + 1], "%s: k %u q %u shift %u: value %u",
                               coder.name, ks[a], qs[b], shifts[c], i);
                    }
                    CHECKF(wsl_bits_done(&in), "%s: k %u q %u shift %u: %llu bits read of %zu bytes", coder.name,
                           ks[a], qs[b], shifts[c], (unsigned long long)in.pos, nb);
                    CHECK(nb == 0 || (bits[nb - 1] >> (in.pos - 8 * (nb - 1)) & 0xff) == 0 || in.pos == 8 * nb);
                }
        /* the longest events the format allows: both values escaping with k 31 and q 32, 2 x 160 bits,
         * within WSL_COL_TBITS_MAX bytes an event */
        struct wsl_tbits_dir w = {.gap_k = 31, .gap_q = 32, .dur_k = 31, .dur_q = 32};
        for (unsigned i = 0; i < N; i++) {
            times[2 * i] = rnd() >> 1 | 1ull << 62; /* positive, >= 2^62: zigzag r >= 2^63 */
            times[2 * i + 1] = rnd() >> 1 | 1ull << 62;
        }
        const size_t wb = coder.write(bits, times, N, &w);
        CHECKF(wb == (size_t)N * 40 && wb <= (size_t)N * WSL_COL_TBITS_MAX, "%s: %zu bytes", coder.name, wb);
        struct wsl_bits_in win = {bits, bits + wb, 0, 0};
        for (unsigned i = 0; i < N; i++) {
            CHECK(wsl_unzigzag(wsl_tb_get(&win, 31, 32)) == (int64_t)times[2 * i]);
            CHECK(wsl_unzigzag(wsl_tb_get(&win, 31, 32)) == (int64_t)times[2 * i + 1]);
        }
        CHECK(wsl_bits_done(&win));
        /* a residual of 2^64 - 1 (a value 2^63 from the center) with k 0 and q 0: y = u + 1 is 2^64,
         * an escape (it wrapped to 0, and its code was undefined, before the sixth pass) */
        struct wsl_tbits_dir z = {.gap_k = 0, .gap_q = 0, .dur_k = 0, .dur_q = 0, .dur_center = 5};
        for (unsigned i = 0; i < 4; i++) {
            times[2 * i] = i & 1 ? 1ull << 63 : i;
            times[2 * i + 1] = i & 2 ? 5 + (1ull << 63) : 5;
        }
        const size_t zb = coder.write(bits, times, 4, &z);
        struct wsl_bits_in zin = {bits, bits + zb, 0, 0};
        for (unsigned i = 0; i < 4; i++) {
            CHECK(wsl_unzigzag(wsl_tb_get(&zin, 0, 0)) == (int64_t)times[2 * i]);
            CHECK((uint64_t)wsl_unzigzag(wsl_tb_get(&zin, 0, 0)) + 5 == times[2 * i + 1]);
        }
        CHECKF(wsl_bits_done(&zin) && !zin.bad, "%s: %zu bytes", coder.name, zb);
    }
    return 0;
}

/* The k search as the writer made it up to the fifth pass. */
static uint64_t ref_best_k(const int64_t *s, unsigned m, unsigned *k, unsigned q)
{
    uint64_t cost_k = wsl_tb_cost(s, m, *k, q);
    const unsigned k0 = *k;
    for (int dir = -1; dir <= 1; dir += 2)
        for (;;) {
            const unsigned k2 = *k + (unsigned)dir;
            if ((dir < 0 && *k == 0) || k2 > WSL_TBITS_K_MAX || (dir > 0 && *k < k0))
                break;
            const uint64_t cost = wsl_tb_cost(s, m, k2, q);
            if (cost >= cost_k)
                break;
            *k = k2;
            cost_k = cost;
        }
    return cost_k;
}

/* The parameters' search as the writer made it up to the fifth pass (docs/overhead.md, "The writer,
 * sixth pass"): the residuals' median by a second select, every cost one code at a time. */
static void params_ref(const uint64_t *v, unsigned n, uint64_t v_or, uint64_t *center, uint8_t *k_out,
                       uint8_t *shift_out, uint8_t *q_out)
{
    const unsigned shift = v_or ? (unsigned)__builtin_ctzll(v_or) : 0;
    int64_t s[WSL_TBITS_SAMPLE];
    const unsigned stride = (n + WSL_TBITS_SAMPLE - 1) / WSL_TBITS_SAMPLE, m = (n + stride - 1) / stride;
    for (unsigned i = 0; i < m; i++)
        s[i] = (int64_t)v[2 * i * stride];
    const uint64_t c = (uint64_t)wsl_tbits_select(s, (int)m, (int)(m / 2)) & ~((1ull << shift) - 1);
    for (unsigned i = 0; i < m; i++)
        s[i] = (int64_t)wsl_zigzag((int64_t)(v[2 * i * stride] - c) >> shift);
    const uint64_t med = (uint64_t)wsl_tbits_select(s, (int)m, (int)(m / 2));
    unsigned k = med ? 63 ^ (unsigned)__builtin_clzll(med) : 0, best_k, best_q = 16;
    k = k > WSL_TBITS_K_MAX ? WSL_TBITS_K_MAX : k;
    const uint64_t rice = ref_best_k(s, m, &k, 16);
    uint64_t best = rice - rice / 16;
    best_k = k;
    static const unsigned qs[] = {4, 1, 0};
    for (unsigned j = 0; j < sizeof qs / sizeof qs[0]; j++) {
        const uint64_t cost = ref_best_k(s, m, &k, qs[j]);
        if (cost < best) {
            best = cost;
            best_k = k;
            best_q = qs[j];
        }
    }
    *center = c;
    *k_out = (uint8_t)best_k;
    *shift_out = (uint8_t)shift;
    *q_out = (uint8_t)best_q;
}

/* The writer's parameters' searches (wsl_tbits_params: the residuals' median's bit length counted,
 * not selected; wsl_tbits_params_v3: the costs in AVX2, where this CPU has it) pick the center,
 * shift, k and q of the straightforward search (params_ref) for every column: 1 to 4,096 values,
 * all equal, close together, spread over any number of bits, negative, with outliers, values whose
 * codes escape, shifts of 0 to 40 bits; each q and k = 0 and k = WSL_TBITS_K_MAX among the picks. */
int test_tbits_params_agree(void)
{
    enum { MAXN = 4096, ROUNDS = 30000 };
    uint64_t *times = calloc(2 * MAXN, sizeof *times);
    CHECK(times);
    wsl_tbits_params_fn fast[2] = {wsl_tbits_params, NULL};
    const char *names[2] = {"base", "x86-64-v3"};
#ifdef WSL_TBITS_V3
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
        fast[1] = wsl_tbits_params_v3;
#endif
    static const unsigned lens[] = {1, 2, 3, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096};
    unsigned picked_q[33] = {0}, k0 = 0, kmax = 0;
    for (unsigned round = 0; round < ROUNDS; round++) {
        const unsigned n = round < 64 ? round + 1 : (round & 1) ? lens[rnd() % 15] : (unsigned)(rnd() % MAXN) + 1;
        const unsigned kind = round % 9, shift = rnd() % 4 == 0 ? (unsigned)(rnd() % 41) : 0;
        const unsigned bits = (unsigned)(rnd() % 65); /* the spread, in bits */
        const uint64_t base = rnd() % 3 == 0 ? rnd() : rnd() >> 20;
        uint64_t v_or = 0;
        for (unsigned i = 0; i < n; i++) {
            const uint64_t noise = bits ? rnd() >> (64 - bits) : 0;
            uint64_t x;
            switch (kind) {
            case 0: x = base; break;                                             /* all equal */
            case 1: x = base + noise; break;                                     /* one spread */
            case 2: x = base - noise; break;                                     /* below the center, negative */
            case 3: x = base + (rnd() >> (rnd() % 64)); break;                   /* every order of magnitude */
            case 4: x = rnd(); break;                                            /* anything: escapes */
            case 5: x = base + (rnd() % 16 == 0 ? rnd() : noise); break;         /* outliers */
            case 6: x = base + (noise >> (rnd() % 4)) - (i & 1 ? noise / 3 : 0); break; /* two-sided */
            case 7: x = (rnd() & 1) ? 1ull << 63 | noise : noise; break;         /* residuals of 2^63 and more */
            default: x = base + ((uint64_t)(rnd() % 5) << (bits % 44)); break;    /* few values, k near 32 and past */
            }
            x <<= shift;
            times[2 * i] = x;
            times[2 * i + 1] = rnd(); /* the other column, never read */
            v_or |= x;
        }
        uint64_t rc;
        uint8_t rk, rs, rq;
        params_ref(times, n, v_or, &rc, &rk, &rs, &rq);
        picked_q[rq]++;
        k0 += rk == 0;
        kmax += rk == WSL_TBITS_K_MAX;
        for (int f = 0; f < 2; f++) {
            if (!fast[f])
                continue;
            uint64_t c = ~rc;
            uint8_t k = 99, sh = 99, q = 99;
            fast[f](times, n, v_or, &c, &k, &sh, &q);
            CHECKF(c == rc && k == rk && sh == rs && q == rq,
                   "%s: round %u, kind %u, n %u, bits %u, shift %u: center %llu k %u shift %u q %u, the reference "
                   "%llu %u %u %u",
                   names[f], round, kind, n, bits, shift, (unsigned long long)c, k, sh, q, (unsigned long long)rc, rk,
                   rs, rq);
        }
    }
    CHECKF(picked_q[16] && picked_q[4] && picked_q[1] && picked_q[0] && k0 && kmax,
           "q 16: %u, 4: %u, 1: %u, 0: %u; k 0: %u, k %u: %u", picked_q[16], picked_q[4], picked_q[1], picked_q[0], k0,
           WSL_TBITS_K_MAX, kmax);
    fprintf(stderr, "tbits_params_agree: %u columns (%s too): q 16 %u, 4 %u, 1 %u, 0 %u; k 0 %u, k %u %u\n", ROUNDS,
            fast[1] ? "x86-64-v3" : "no AVX2: base only", picked_q[16], picked_q[4], picked_q[1], picked_q[0], k0,
            WSL_TBITS_K_MAX, kmax);
    free(times);
    return 0;
}

#ifdef WSL_TBITS_V3
static __attribute__((noinline)) WSL_TARGET_V3 int same_v3(const struct wsl_event *a, const struct wsl_event *b)
{
    return wsl_pack_same_v3(a, b);
}
#endif

/* The writer's two compiled loops (trace_codec.h, wsl_tbits_coder_pick): the base x86-64 ones and
 * those picked for this CPU write the same bytes, op, literal and bit columns and directory, for
 * every distribution and chunk length, fed in runs of any length as drains feed them; the AVX2
 * compare of argument sets agrees with the 16-byte one on sets that differ in any one byte (the
 * flags' two bytes aside, which neither compares): a miss is never taken for a hit. */
int test_tbits_coders_agree(void)
{
    enum { MAXN = 4096 };
    const struct wsl_tbits_coder coders[2] = {wsl_tbits_coder_pick(0), wsl_tbits_coder_pick(1)};
    struct wsl_event *ev = calloc(MAXN, sizeof *ev), *out = calloc(MAXN, sizeof *out);
    uint8_t *op[2], *lit[2], *bits[2];
    uint64_t *times = calloc(2 * MAXN, sizeof *times);
    struct wsl_codec_state *st = calloc(1, sizeof *st);
    struct wsl_pack_state *ps = calloc(1, sizeof *ps);
    CHECK(ev && out && times && st && ps);
    for (int c = 0; c < 2; c++) {
        op[c] = malloc(MAXN);
        lit[c] = malloc((size_t)MAXN * WSL_COL_LIT_MAX);
        bits[c] = malloc((size_t)MAXN * WSL_COL_TBITS_MAX + 8);
        CHECK(op[c] && lit[c] && bits[c]);
    }
    static const uint32_t lens[] = {1, 2, 63, 64, 65, 511, 1000, 4096};
    for (int kind = 0; kind < 5; kind++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            const uint32_t n = lens[l];
            memset(ev, 0, sizeof *ev * n);
            make_events(ev, n, kind);
            for (uint32_t i = 0; i < n; i++) {
                ev[i].flags = (uint16_t)rnd(); /* not part of the argument set */
                if (rnd() % 7 == 0) /* sets that differ from a known one in one byte: a miss */
                    ((uint8_t *)&ev[i])[16 + (rnd() % 2 ? 0 : 4 + rnd() % 44)] ^= (uint8_t)(1u << rnd() % 8);
            }
            struct wsl_tbits_dir dir[2];
            size_t lits[2];
            for (int c = 0; c < 2; c++) {
                wsl_codec_reset(st, ev[0].t_start);
                wsl_pack_reset(ps, 1);
                memset(ps->last, 0, sizeof ps->last);
                for (unsigned i = 0; i <= WSL_PACK_TABLE_MAX; i++)
                    wsl_pack_link(ps, i, 0);
                ps->prev = 0;
                struct wsl_tbits_out o = {op[c], lit[c], times};
                for (uint32_t from = 0; from < n;) { /* runs of 1 to 600 events */
                    const uint32_t k = 1 + (uint32_t)(rnd() % 600), to = from + k < n ? from + k : n;
                    coders[c].run(ps, st, ev + from, ev + to, &o);
                    from = to;
                }
                CHECKF(o.op == op[c] + n, "%s: %zu ops for %u events", coders[c].name, (size_t)(o.op - op[c]), n);
                memset(bits[c], 0x5a, (size_t)MAXN * WSL_COL_TBITS_MAX + 8);
                dir[c].literals = ps->literals;
                coders[c].close(&dir[c], bits[c], times, n);
                lits[c] = (size_t)(o.lit - lit[c]);
            }
            CHECKF(!memcmp(&dir[0], &dir[1], sizeof dir[0]) && !memcmp(op[0], op[1], n) && lits[0] == lits[1] &&
                       !memcmp(lit[0], lit[1], lits[0]) && !memcmp(bits[0], bits[1], dir[0].bit_bytes),
                   "kind %d n %u: %s and %s differ", kind, n, coders[0].name, coders[1].name);
            /* and they decode to every event, arguments and times */
            uint8_t *enc = malloc(WSL_TBITS_DIRECTORY_SIZE + n + dir[1].bit_bytes + lits[1]);
            CHECK(enc);
            memcpy(enc, &dir[1], sizeof dir[1]);
            memcpy(enc + WSL_TBITS_DIRECTORY_SIZE, op[1], n);
            memcpy(enc + WSL_TBITS_DIRECTORY_SIZE + n, bits[1], dir[1].bit_bytes);
            memcpy(enc + WSL_TBITS_DIRECTORY_SIZE + n + dir[1].bit_bytes, lit[1], lits[1]);
            CHECKF(decode_tbits(enc, WSL_TBITS_DIRECTORY_SIZE + n + dir[1].bit_bytes + lits[1], n, ev[0].t_start,
                                out) == 0,
                   "kind %d n %u: %s did not decode", kind, n, coders[1].name);
            for (uint32_t i = 0; i < n; i++) {
                struct wsl_event want = ev[i];
                want.flags = 0; /* not written */
                out[i].flags = 0;
                const char *what;
                CHECKF(event_diff(&want, &out[i], &what) < 0, "kind %d n %u event %u differs in %s", kind, n, i, what);
            }
            free(enc);
        }
#ifdef WSL_TBITS_V3
    if (__builtin_cpu_supports("avx2")) {
        struct wsl_event a, b;
        for (int round = 0; round < 20000; round++) {
            for (unsigned i = 0; i < sizeof a; i++)
                ((uint8_t *)&a)[i] = (uint8_t)rnd();
            b = a;
            const unsigned at = 16 + (unsigned)(rnd() % 48);
            if (round % 3)
                ((uint8_t *)&b)[at] ^= (uint8_t)(1u << rnd() % 8);
            const int want = round % 3 == 0 || at == 18 || at == 19 || at < 16;
            CHECKF(same_v3(&a, &b) == want && wsl_pack_same(&a, &b) == want, "byte %u: v3 %d, base %d, want %d", at,
                   same_v3(&a, &b), wsl_pack_same(&a, &b), want);
        }
    }
#endif
    for (int c = 0; c < 2; c++) {
        free(op[c]);
        free(lit[c]);
        free(bits[c]);
    }
    free(times);
    free(st);
    free(ps);
    free(ev);
    free(out);
    return 0;
}

/* Four events in a fixed encoding, byte for byte: the directory, the ops, the bit column and
 * the literals; any change to what the writer writes or the reader reads shows here
 * (docs/trace-format.md, EVENTS_BITS, has the same example). */
int test_tbits_golden(void)
{
    struct wsl_event ev[4] = {
        {.t_start = 1000, .t_end = 1230, .api = 1, .stream = 7, .a = {0x40}},
        {.t_start = 1276, .t_end = 1506, .api = 1, .stream = 7, .a = {0x40}},
        {.t_start = 1552, .t_end = 1784, .api = 1, .stream = 7, .a = {0x40}},
        {.t_start = 1830, .t_end = 2058, .api = 2, .stream = 7},
    };
    static const uint8_t want[] = {
        /* bit_bytes 3, literals 2 */
        3, 0, 0, 0, 2, 0, 0, 0,
        /* gap_center 46, dur_center 230 */
        46, 0, 0, 0, 0, 0, 0, 0, 230, 0, 0, 0, 0, 0, 0, 0,
        /* gap k 0, shift 1 (every tick even), dur k 0, shift 1, gap q 0 (Exp-Golomb), dur q 16 (Rice),
         * reserved */
        0, 1, 0, 1, 0, 16, 0, 0,
        /* ops: a literal, entry 1, entry 1, a literal */
        0, 1, 1, 0,
        /* gaps 0, 46, 46, 46 as zigzag((gap - 46) >> 1): 45, 0, 0, 0; durations 230, 230, 232, 228 as
         * zigzag((dur - 230) >> 1): 0, 0, 2, 1. Least significant bit first: 45 = 00000 1 01110
         * (y = 46, nb = 5), 0 = 1 | 0 = 1 | 0 = 1, 0 = 1 | 0 = 1, 2 = 001 | 0 = 1, 1 = 01 */
        0xa0, 0x7b, 0x16,
        /* literals: api 1 with stream and a[0]; api 2 with stream */
        1, 0x06, 7, 0x40, 2, 0x02, 7};
    uint8_t *enc;
    const size_t size = synth_encode_tbits(ev, 4, 1000, &enc);
    if (size != sizeof want || memcmp(enc, want, size) != 0) {
        fprintf(stderr, "tbits_golden: got %zu bytes:", size);
        for (size_t i = 0; i < size; i++)
            fprintf(stderr, " %02x", enc[i]);
        fprintf(stderr, "\n");
    }
    CHECK(size == sizeof want && memcmp(enc, want, size) == 0);
    struct wsl_event out[4];
    CHECK(decode_tbits(want, sizeof want, 4, 1000, out) == 0);
    for (int i = 0; i < 4; i++)
        CHECKF(event_diff(&ev[i], &out[i], NULL) < 0, "event %d", i);
    free(enc);
    return 0;
}

/* Malformed EVENTS_BITS bytes: the open's checks (parameters, counts, overruns) and the bit
 * column's (a code with too many zeros, codes that run past the column or stop short of its last
 * byte) through the reference decoder; never a read outside the bytes given. */
int test_tbits_malformed(void)
{
    enum { N = 300 };
    struct wsl_event ev[N], out[N];
    memset(ev, 0, sizeof ev);
    make_events(ev, N, 1);
    uint8_t *enc;
    const size_t size = synth_encode_tbits(ev, N, ev[0].t_start, &enc);
    struct wsl_tbits_dir d;
    memcpy(&d, enc, sizeof d);
    CHECK(decode_tbits(enc, size, N, ev[0].t_start, out) == 0);
    uint8_t *b = malloc(size + 64);
    struct wsl_tbits_in in;
    CHECK(b);
#define MUTATE(field, value, want)                                                                                     \
    do {                                                                                                               \
        memcpy(b, enc, size);                                                                                          \
        struct wsl_tbits_dir d2 = d;                                                                                   \
        d2.field = value;                                                                                              \
        memcpy(b, &d2, sizeof d2);                                                                                     \
        CHECKF(wsl_tbits_open(&in, b, size, N) == (want), "%s = %llu", #field, (unsigned long long)(value));        \
    } while (0)
    MUTATE(gap_k, 33, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(dur_k, 255, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(gap_q, 33, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(dur_q, 200, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(gap_shift, 64, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(dur_shift, 64, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(reserved, 2, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(reserved, 0x8000, WSL_COLUMNS_BAD_PARAMETER);
    MUTATE(reserved, WSL_TBITS_CONTINUES, WSL_COLUMNS_OK); /* 1.13: the chunk carries its slot's table */
    MUTATE(literals, N + 1, WSL_COLUMNS_COUNT_TOO_BIG);
    MUTATE(bit_bytes, 0xffffffffu, WSL_COLUMNS_OVERRUN);
    MUTATE(bit_bytes, (uint32_t)(size - WSL_TBITS_DIRECTORY_SIZE - N + 1), WSL_COLUMNS_OVERRUN);
    MUTATE(gap_k, 32, WSL_COLUMNS_OK);
    MUTATE(dur_q, 32, WSL_COLUMNS_OK);
    CHECK(wsl_tbits_open(&in, enc, WSL_TBITS_DIRECTORY_SIZE - 1, 0) == WSL_COLUMNS_NO_DIRECTORY);
    CHECK(wsl_tbits_open(&in, enc, size, N + 1) != WSL_COLUMNS_OK || decode_tbits(enc, size, N + 1, 0, out) != 0);
    /* the bit column one byte shorter (its last byte read as literals): the codes run past it */
    {
        memcpy(b, enc, size);
        struct wsl_tbits_dir d2 = d;
        d2.bit_bytes--;
        memcpy(b, &d2, sizeof d2);
        CHECK(decode_tbits(b, size, N, ev[0].t_start, out) != 0);
        /* one byte longer: the codes stop short of its last byte */
        d2.bit_bytes += 2;
        memcpy(b, &d2, sizeof d2);
        CHECK(decode_tbits(b, size, N, ev[0].t_start, out) != 0);
    }
    /* a bit column of zeros: every code has too many zeros */
    {
        memcpy(b, enc, size);
        memset(b + WSL_TBITS_DIRECTORY_SIZE + N, 0, d.bit_bytes);
        CHECK(decode_tbits(b, size, N, ev[0].t_start, out) != 0);
    }
    /* every single byte of the bit column changed: either it decodes to other times (a code's own
     * bits) or it is refused; never a read past the bytes (ASan builds check that) */
    unsigned refused = 0;
    for (uint32_t at = 0; at < d.bit_bytes; at++) {
        memcpy(b, enc, size);
        b[WSL_TBITS_DIRECTORY_SIZE + N + at] ^= 0x5a;
        uint8_t *exact = malloc(size);
        memcpy(exact, b, size);
        refused += decode_tbits(exact, size, N, ev[0].t_start, out) != 0;
        free(exact);
    }
    CHECKF(refused > 0, "%u of %u changed bytes refused", refused, d.bit_bytes);
#undef MUTATE
    free(b);
    free(enc);
    return 0;
}

/* One EVENTS_BITS chunk of n events in a trace, its encoded byte `at` (< 0: none) XORed with x
 * and its directory's fields set by `dir` when given. */
static void write_tbits_case(const char *path, const struct wsl_event *ev, uint32_t n, long at, uint8_t x,
                             const struct wsl_tbits_dir *dir)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    static const struct synth_row rows[] = {{"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH, 0},
                                            {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM, 0},
                                            {"cuMemAlloc_v2", "cuMemAlloc", WSL_CAT_ALLOC, 0}};
    synth_api_rows(s, rows, 3);
    uint8_t *enc;
    const size_t size = synth_encode_tbits(ev, n, ev[0].t_start, &enc);
    uint8_t *payload = calloc(1, sizeof(struct wsl_events_header) + size);
    struct wsl_events_header eh = {.tid = 7, .count = n, .base_ticks = ev[0].t_start, .encoded_size = (uint32_t)size};
    memcpy(payload, &eh, sizeof eh);
    memcpy(payload + sizeof eh, enc, size);
    if (dir)
        memcpy(payload + sizeof eh, dir, sizeof *dir);
    if (at >= 0)
        payload[sizeof eh + (size_t)at] ^= x;
    synth_chunk(s, WSL_CHUNK_EVENTS_BITS, payload, (uint32_t)(sizeof eh + size));
    synth_end(s, 0, n, 0, 1);
    synth_close(s);
    free(enc);
    free(payload);
}

/* Broken EVENTS_BITS chunks through the reader's batch loop (trace_reader_chunks.c): one line
 * naming the chunk, WSL_READ_ERROR, whatever the damage. */
int test_reader_tbits_malformed(void)
{
    enum { N = 600 }; /* three batches */
    struct wsl_event *ev = calloc(N, sizeof *ev);
    CHECK(ev);
    make_events(ev, N, 1);
    char path[512];
    test_path(path, sizeof path, "tbits-bad.trace.zst");
    struct read_all ra;
    write_tbits_case(path, ev, N, -1, 0, NULL);
    read_all_file(path, &ra);
    CHECKF(ra.result == WSL_READ_END && ra.count == N, "%s", ra.message);
    for (int i = 0; i < N; i++)
        CHECK(event_diff(&ev[i], &ra.events[i], NULL) < 0);
    read_all_free(&ra);
    uint8_t *enc;
    const size_t size = synth_encode_tbits(ev, N, ev[0].t_start, &enc);
    struct wsl_tbits_dir d;
    memcpy(&d, enc, sizeof d);
    free(enc);
    const struct {
        const char *field;
        struct wsl_tbits_dir dir;
        const char *want;
    } cases[] = {
        {"k", {.bit_bytes = d.bit_bytes, .literals = d.literals, .gap_k = 33}, "time code parameters k 33/"},
        {"q", {.bit_bytes = d.bit_bytes, .literals = d.literals, .dur_q = 40}, "time code parameters"},
        {"reserved", {.bit_bytes = d.bit_bytes, .literals = d.literals, .reserved = 9}, "reserved 9"},
        {"literals", {.bit_bytes = d.bit_bytes, .literals = N + 1}, "event count mismatch (600 events with 601"},
        {"bits", {.bit_bytes = 0xfffffff0u, .literals = d.literals}, "the event columns run past"},
        {"short", {.bit_bytes = d.bit_bytes - 1, .literals = d.literals}, "corrupt chunk at byte"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct wsl_tbits_dir dir = d;
        dir.bit_bytes = cases[c].dir.bit_bytes;
        dir.literals = cases[c].dir.literals;
        if (cases[c].dir.gap_k)
            dir.gap_k = cases[c].dir.gap_k;
        if (cases[c].dir.dur_q)
            dir.dur_q = cases[c].dir.dur_q;
        dir.reserved = cases[c].dir.reserved;
        write_tbits_case(path, ev, N, -1, 0, &dir);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, cases[c].want) &&
                   strstr(ra.message, "corrupt chunk at byte") && !strchr(ra.message, '\n'),
               "case %s: result %d, '%s'", cases[c].field, ra.result, ra.message);
        read_all_free(&ra);
    }
    /* a bit column cut short by its last byte's codes (zeros where ones were): a malformed code or
     * the wrong end, never a crash, never a half-read chunk handed out as whole */
    const long bits_at = WSL_TBITS_DIRECTORY_SIZE + N;
    unsigned errors = 0;
    for (long at = bits_at; at < bits_at + (long)d.bit_bytes; at += 7) {
        write_tbits_case(path, ev, N, at, 0xff, NULL);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_END || (ra.result == WSL_READ_ERROR && !strchr(ra.message, '\n') &&
                                             strstr(ra.message, "corrupt chunk at byte")),
               "byte %ld: result %d '%s'", at, ra.result, ra.message);
        errors += ra.result == WSL_READ_ERROR;
        read_all_free(&ra);
    }
    CHECK(errors > 0);
    /* all zeros: codes with too many zeros */
    {
        struct synth *s = synth_open(path, NULL);
        synth_file_header(s, NULL);
        struct wsl_process_info pi = {.pid = 1};
        synth_process(s, &pi, "h", "e", "r", 0, NULL);
        static const struct synth_row rows[] = {{"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH, 0},
                                                {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM, 0},
                                                {"cuMemAlloc_v2", "cuMemAlloc", WSL_CAT_ALLOC, 0}};
        synth_api_rows(s, rows, 3);
        uint8_t *e2;
        const size_t sz = synth_encode_tbits(ev, N, ev[0].t_start, &e2);
        memset(e2 + bits_at, 0, d.bit_bytes);
        uint8_t *payload = calloc(1, sizeof(struct wsl_events_header) + sz);
        struct wsl_events_header eh = {.tid = 7, .count = N, .base_ticks = ev[0].t_start, .encoded_size = (uint32_t)sz};
        memcpy(payload, &eh, sizeof eh);
        memcpy(payload + sizeof eh, e2, sz);
        synth_chunk(s, WSL_CHUNK_EVENTS_BITS, payload, (uint32_t)(sizeof eh + sz));
        synth_end(s, 0, N, 0, 1);
        synth_close(s);
        free(e2);
        free(payload);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, "hold a malformed code"), "'%s'", ra.message);
        read_all_free(&ra);
    }
    (void)size;
    free(ev);
    return 0;
}

/* Carried tables (format 1.13): chunks of threads 100, 101 and 116 (116 shares 100's slot, tid % 16),
 * each a step of `sets` kernels' launches, with one set new in `fresh_at` steps. */
struct carried_chunk {
    uint32_t tid;
    bool carry;     /* WSL_TBITS_CONTINUES */
    bool frame_end; /* the zstd frame ends before it */
};

static uint32_t carried_events(struct wsl_event *ev, uint32_t tid, uint32_t k, uint64_t *t)
{
    enum { STEPS = 6, SETS = 5 };
    uint32_t n = 0;
    for (uint32_t s = 0; s < STEPS; s++)
        for (uint32_t j = 0; j < SETS; j++, n++) {
            struct wsl_event *e = &ev[n];
            memset(e, 0, sizeof *e);
            e->api = 0;
            e->stream = 0x7000 + tid;
            e->a[0] = 0xf000 + j + (j == SETS - 1 ? k : 0); /* the last kernel's grid changes each chunk */
            e->a[1] = 0x100 * (j + 1);
            e->t_start = *t;
            e->t_end = *t + 200 + j;
            *t += 300 + 7 * j;
        }
    return n;
}

/* Writes the chunks; returns the events in file order in ev (room for 30 a chunk) and their
 * literals in lits. */
static uint32_t write_carried_case(const char *path, const struct carried_chunk *c, size_t nc, struct wsl_event *ev,
                                   uint32_t *lits)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    static const struct synth_row rows[] = {{"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH, 0}};
    synth_api_rows(s, rows, 1);
    struct wsl_pack_state *ps = calloc(WSL_TBITS_SLOTS, sizeof *ps);
    uint64_t t = 5000;
    uint32_t n = 0;
    *lits = 0;
    for (size_t i = 0; i < nc; i++) {
        if (c[i].frame_end)
            synth_frame_end(s);
        const uint32_t m = carried_events(ev + n, c[i].tid, (uint32_t)i, &t);
        uint8_t *enc;
        const size_t size = synth_encode_tbits_table(ev + n, m, ev[n].t_start, &ps[c[i].tid % WSL_TBITS_SLOTS],
                                                     c[i].carry, &enc);
        struct wsl_tbits_dir d;
        memcpy(&d, enc, sizeof d);
        *lits += d.literals;
        uint8_t *payload = calloc(1, sizeof(struct wsl_events_header) + size);
        struct wsl_events_header eh = {.tid = c[i].tid, .count = m, .base_ticks = ev[n].t_start,
                                       .encoded_size = (uint32_t)size, .seq = (uint32_t)i + 1};
        memcpy(payload, &eh, sizeof eh);
        memcpy(payload + sizeof eh, enc, size);
        synth_chunk(s, WSL_CHUNK_EVENTS_BITS, payload, (uint32_t)(sizeof eh + size));
        free(enc);
        free(payload);
        n += m;
    }
    synth_end(s, 0, n, 0, 3);
    synth_close(s);
    free(ps);
    return n;
}

/* A chunk carries the table its thread's previous chunk in the same frame ended with: read back
 * event for event, the same through the store's replays (which see no zstd frames: trace_store.c
 * marks them); a chunk whose slot holds no table of its thread in its frame (none yet, another
 * frame, another thread of the slot since) is refused in one line. */
int test_reader_tbits_carried(void)
{
    struct wsl_event ev[16 * 30];
    char path[512];
    test_path(path, sizeof path, "tbits-carried.trace.zst");
    struct read_all ra;
    uint32_t lits, lits_anew;
    /* threads 100 and 101 taking turns, a frame ending midway, 116 in 100's slot after it */
    const struct carried_chunk good[] = {
        {100, false, false}, {101, false, false}, {100, true, false}, {101, true, false}, {100, true, false},
        {100, false, true},  {100, true, false},  {116, false, false}, {101, false, false}, {100, false, false},
        {100, true, false},  {101, true, false},
    };
    enum { NG = sizeof good / sizeof good[0] };
    unsigned carried = 0;
    for (size_t i = 0; i < NG; i++)
        carried += good[i].carry;
    struct carried_chunk anew[NG];
    for (size_t i = 0; i < NG; i++)
        anew[i] = (struct carried_chunk){good[i].tid, false, good[i].frame_end};
    write_carried_case(path, anew, NG, ev, &lits_anew);
    const uint32_t n = write_carried_case(path, good, NG, ev, &lits);
    /* each carried chunk writes only its new set as a literal: 1 of 30 events against 5 */
    CHECKF(carried == 6 && lits == (NG - carried) * 5 + carried && lits_anew == NG * 5, "literals %u carried, %u anew",
           lits, lits_anew);
    read_all_file(path, &ra);
    CHECKF(ra.result == WSL_READ_END && ra.count == n, "%d '%s' %zu events of %u", ra.result, ra.message, ra.count, n);
    for (uint32_t i = 0; i < n && i < ra.count; i++) {
        const char *what = "";
        CHECKF(event_diff(&ev[i], &ra.events[i], &what) < 0, "event %u: %s", i, what);
        CHECKF(ra.tids[i] == good[i / 30].tid, "event %u: tid %u", i, ra.tids[i]);
    }
    read_all_free(&ra);
    /* replayed from the store: the same events twice (the frames as the file had them) */
    char err[WSL_READER_ERRLEN];
    struct wsl_trace_store *st = wsl_store_new();
    for (int k = 0; k < 3; k++) {
        struct wsl_reader *r = k == 0 ? wsl_store_open_recording(st, path, err, sizeof err)
                                      : wsl_store_open(st, path, err, sizeof err);
        CHECKF(r, "%s", err);
        struct wsl_item it;
        enum wsl_read_result res;
        uint32_t got = 0;
        bool same = true;
        while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM)
            if (it.type == WSL_CHUNK_EVENTS)
                for (uint32_t i = 0; i < it.events.count; i++, got++)
                    same = same && got < n && event_diff(&ev[got], &it.events.events[i], NULL) < 0;
        CHECKF(res == WSL_READ_END && got == n && same, "reading %d: result %d '%s', %u events, same %d", k, res,
               wsl_reader_message(r), got, same);
        CHECKF(k == 0 || wsl_store_holds(st, path), "reading %d: not replayed", k);
        wsl_reader_close(r);
    }
    wsl_store_free(st);
    const struct {
        const char *name;
        struct carried_chunk c[3];
        size_t n;
    } bad[] = {
        {"first", {{100, true, false}}, 1},
        {"another frame", {{100, false, false}, {100, true, true}}, 2},
        {"another thread of the slot", {{100, false, false}, {116, false, false}, {100, true, false}}, 3},
        {"the slot's other thread", {{100, false, false}, {116, true, false}}, 2},
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        write_carried_case(path, bad[b].c, bad[b].n, ev, &lits);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, "continues the table of thread") &&
                   strstr(ra.message, "corrupt chunk at byte") && !strchr(ra.message, '\n') &&
                   ra.count == 30 * (bad[b].n - 1),
               "%s: result %d '%s', %zu events", bad[b].name, ra.result, ra.message, ra.count);
        read_all_free(&ra);
    }
    return 0;
}

/* The reader's EVENTS_BITS loop as built for any x86-64 and for BMI1 and BMI2 (wsl_reader_bmi2_path,
 * taken where the CPU has them): every distribution, lengths around a batch and a chunk's table,
 * Rice and Exp-Golomb columns, escapes; each read with both gives every event, and a damaged column
 * the same result and message with both. Where the CPU lacks BMI2 both readings are the generic
 * loop's (said on stderr). */
int test_reader_isa_agree(void)
{
    enum { MAXN = 3000 };
    struct wsl_event *ev = calloc(MAXN, sizeof *ev);
    CHECK(ev);
    char path[512];
    test_path(path, sizeof path, "tbits-isa.trace.zst");
    wsl_reader_generic_only = false;
    const bool bmi2 = wsl_reader_bmi2_path();
    if (!bmi2)
        fprintf(stderr, "reader_isa_agree: this CPU has no BMI2: the generic loop alone\n");
    static const uint32_t lens[] = {1, 2, 255, 256, 257, 600, 3000};
    unsigned rice = 0, golomb = 0, damaged = 0;
    for (int kind = 0; kind < 5; kind++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            const uint32_t n = lens[l];
            memset(ev, 0, sizeof *ev * n);
            make_events(ev, n, kind);
            uint8_t *enc;
            synth_encode_tbits(ev, n, ev[0].t_start, &enc);
            struct wsl_tbits_dir d;
            memcpy(&d, enc, sizeof d);
            free(enc);
            if (d.gap_q == 0 || d.dur_q == 0)
                golomb++;
            else
                rice++;
            /* whole, then a byte of the bit column flipped (a code misread, or malformed) */
            for (int flip = 0; flip < 3; flip++) {
                const long at = flip ? (long)(WSL_TBITS_DIRECTORY_SIZE + n + (d.bit_bytes * (unsigned)flip) / 3) : -1;
                if (flip && !d.bit_bytes)
                    break;
                write_tbits_case(path, ev, n, at, (uint8_t)(flip == 1 ? 0x10 : 0xff), NULL);
                struct read_all ra[2];
                for (int g = 0; g < 2; g++) {
                    wsl_reader_generic_only = g == 1;
                    read_all_file(path, &ra[g]);
                }
                wsl_reader_generic_only = false;
                CHECKF(ra[0].result == ra[1].result && !strcmp(ra[0].message, ra[1].message) &&
                           ra[0].count == ra[1].count,
                       "kind %d n %u flip %d: BMI2 loop %d '%s' %zu events, generic %d '%s' %zu", kind, n, flip,
                       ra[0].result, ra[0].message, ra[0].count, ra[1].result, ra[1].message, ra[1].count);
                for (size_t i = 0; i < ra[0].count; i++) {
                    const char *what;
                    CHECKF(event_diff(&ra[0].events[i], &ra[1].events[i], &what) < 0,
                           "kind %d n %u flip %d event %zu differs in %s", kind, n, flip, i, what);
                }
                if (!flip) {
                    CHECKF(ra[0].result == WSL_READ_END && ra[0].count == n, "kind %d n %u: %s", kind, n,
                           ra[0].message);
                    for (uint32_t i = 0; i < n; i++) {
                        const char *what;
                        CHECKF(event_diff(&ev[i], &ra[1].events[i], &what) < 0, "kind %d n %u event %u differs in %s",
                               kind, n, i, what);
                    }
                } else {
                    damaged += ra[0].result != WSL_READ_END ||
                               memcmp(ra[0].events, ev, sizeof *ev * (ra[0].count < n ? ra[0].count : n)) != 0;
                }
                read_all_free(&ra[0]);
                read_all_free(&ra[1]);
            }
        }
    CHECKF(rice > 0 && golomb > 0 && damaged > 0, "cases: %u Rice, %u Exp-Golomb, %u damaged read differently", rice,
           golomb, damaged);
    free(ev);
    return 0;
}
