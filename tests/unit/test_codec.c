/* The columnar event codec of trace_format.h: round trips, masks, worst cases,
 * malformed columns. */
#include <stdlib.h>
#include <string.h>

#include "trace_reader_internal.h"
#include "trace_synth.h"
#include "unit_test.h"

enum { COL_API, COL_MASK, COL_DT, COL_DUR, COL_FLD, COLS };
static const unsigned col_max[COLS] = {WSL_COL_API_MAX, WSL_COL_MASK_MAX, WSL_COL_DT_MAX, WSL_COL_DUR_MAX,
                                       WSL_COL_FIELDS_MAX};
static const char *const col_name[COLS] = {"api", "mask", "dt", "dur", "fields"};

/* Separate column buffers, each with room for `cap` worst-case events. */
struct cols {
    uint8_t *c[COLS];
    size_t len[COLS];
};

static int cols_alloc(struct cols *k, size_t cap)
{
    for (int i = 0; i < COLS; i++) {
        k->c[i] = malloc(cap * col_max[i] + 16);
        k->len[i] = 0;
        if (!k->c[i])
            return -1;
    }
    return 0;
}

static void cols_free(struct cols *k)
{
    for (int i = 0; i < COLS; i++)
        free(k->c[i]);
}

static struct wsl_columns_out cols_out(struct cols *k)
{
    return (struct wsl_columns_out){k->c[COL_API] + k->len[COL_API], k->c[COL_MASK] + k->len[COL_MASK],
                                    k->c[COL_DT] + k->len[COL_DT], k->c[COL_DUR] + k->len[COL_DUR],
                                    k->c[COL_FLD] + k->len[COL_FLD]};
}

static void cols_take(struct cols *k, const struct wsl_columns_out *o)
{
    k->len[COL_API] = (size_t)(o->api - k->c[COL_API]);
    k->len[COL_MASK] = (size_t)(o->mask - k->c[COL_MASK]);
    k->len[COL_DT] = (size_t)(o->dt - k->c[COL_DT]);
    k->len[COL_DUR] = (size_t)(o->dur - k->c[COL_DUR]);
    k->len[COL_FLD] = (size_t)(o->fld - k->c[COL_FLD]);
}

/* The encoded bytes of an EVENTS chunk (directory, then the columns) in a
 * buffer of exactly their size, so ASan catches any read past the end. */
static uint8_t *cols_join(const struct cols *k, size_t *size)
{
    uint32_t dir[3] = {(uint32_t)k->len[COL_API], (uint32_t)k->len[COL_DT], (uint32_t)k->len[COL_DUR]};
    size_t n = sizeof dir;
    for (int i = 0; i < COLS; i++)
        n += k->len[i];
    uint8_t *b = malloc(n), *p = b;
    if (!b)
        return NULL;
    memcpy(p, dir, sizeof dir);
    p += sizeof dir;
    for (int i = 0; i < COLS; i++) {
        memcpy(p, k->c[i], k->len[i]);
        p += k->len[i];
    }
    *size = n;
    return b;
}

/* Opens and decodes `count` events of the encoded bytes; returns how many
 * decoded (-1: the columns did not open) and whether the columns were used up. */
static int decode_all(const uint8_t *b, size_t size, uint32_t count, uint32_t api_limit, uint64_t base,
                      struct wsl_event *out, int *done)
{
    static struct wsl_codec_state st;
    struct wsl_columns_in in;
    if (wsl_columns_open(&in, b, size, count) != WSL_COLUMNS_OK)
        return -1;
    wsl_codec_reset(&st, base);
    uint32_t i = 0;
    while (i < count && wsl_event_decode_columns(&st, &in, api_limit, &out[i]))
        i++;
    *done = wsl_columns_done(&in);
    return (int)i;
}

static uint64_t extreme_value(void)
{
    static const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
                                      INT64_MAX, (uint64_t)INT64_MIN, UINT64_MAX - 1, UINT64_MAX};
    return rng_below(3) ? values[rng_below(sizeof values / sizeof values[0])] : rng_next();
}

/* A value different from `prev`. */
static uint64_t changed(uint64_t prev)
{
    uint64_t v = extreme_value();
    return v != prev ? v : prev + 1;
}

/* Every combination of the six mask bits, on many api ids, with extreme values:
 * decoding gives back exactly what was encoded, the mask column says which
 * fields changed, no event takes more than its column's worst case, and the
 * worst case is reached exactly. */
int test_codec_roundtrip(void)
{
    enum { N = 200000 };
    rng_seed(42);
    struct wsl_event *in = calloc(N, sizeof *in), *out = calloc(N, sizeof *out);
    uint8_t *masks = malloc(N);
    struct wsl_event *prev = calloc(WSL_MAX_API_IDS, sizeof *prev); /* the encoder's view, mirrored */
    struct wsl_codec_state *st = malloc(sizeof *st);
    struct cols k;
    CHECK(in && out && masks && prev && st && cols_alloc(&k, N) == 0);

    static const uint16_t apis[] = {0, 1, 2, 127, 128, 1023};
    uint64_t t = extreme_value();
    for (int i = 0; i < N; i++) {
        uint16_t api = rng_below(4) ? apis[rng_below(6)] : (uint16_t)rng_below(WSL_MAX_API_IDS);
        uint8_t mask = (uint8_t)(i < 64 * 6 ? (uint64_t)(i % 64) : rng_below(64));
        struct wsl_event ev = prev[api];
        ev.api = api;
        ev.flags = 0;
        t = rng_below(8) ? t + rng_below(1000) : extreme_value(); /* some jumps back and forth */
        ev.t_start = t;
        uint64_t room = UINT64_MAX - t, dur = extreme_value();
        ev.t_end = t + (dur <= room ? dur : room);
        if (mask & 1)
            ev.result = (int32_t)changed((uint64_t)(int64_t)prev[api].result);
        if ((mask & 1) && ev.result == prev[api].result)
            ev.result = prev[api].result ^ 1;
        if (mask & 2)
            ev.stream = changed(prev[api].stream);
        for (int a = 0; a < 4; a++)
            if (mask & (4u << a))
                ev.a[a] = changed(prev[api].a[a]);
        in[i] = ev;
        masks[i] = mask;
        prev[api] = ev;
    }
    in[N - 1].result = INT32_MIN;
    in[N - 2].result = INT32_MAX;

    wsl_codec_reset(st, 12345);
    struct wsl_columns_out o = cols_out(&k);
    for (int i = 0; i < N; i++) {
        struct wsl_columns_out before = o;
        wsl_event_encode_columns(st, &in[i], &o);
        CHECKF(o.api - before.api == (in[i].api < 128 ? 1 : 2), "event %d: api took %ld bytes", i,
               (long)(o.api - before.api));
        CHECKF(o.mask - before.mask == 1, "event %d: mask took %ld bytes", i, (long)(o.mask - before.mask));
        CHECKF(o.dt - before.dt <= (long)WSL_COL_DT_MAX && o.dur - before.dur <= (long)WSL_COL_DUR_MAX &&
                   o.fld - before.fld <= (long)WSL_COL_FIELDS_MAX,
               "event %d: dt %ld, dur %ld, fields %ld bytes", i, (long)(o.dt - before.dt),
               (long)(o.dur - before.dur), (long)(o.fld - before.fld));
        if (i < N - 2)
            CHECKF(*before.mask == masks[i], "event %d: mask %#x, expected %#x", i, *before.mask, masks[i]);
        CHECKF((*before.mask == 0) == (o.fld == before.fld), "event %d: mask %#x with %ld field bytes", i,
               *before.mask, (long)(o.fld - before.fld));
    }
    cols_take(&k, &o);
    size_t size;
    uint8_t *enc = cols_join(&k, &size);
    CHECK(enc);
    int done;
    CHECK(decode_all(enc, size, N, WSL_MAX_API_IDS, 12345, out, &done) == N);
    CHECK(done);
    for (int i = 0; i < N; i++) {
        const char *what;
        CHECKF(event_diff(&in[i], &out[i], &what) < 0, "event %d differs in %s", i, what);
    }
    free(enc);

    /* The worst case fills every column's WSL_COL_*_MAX exactly. */
    struct wsl_event worst = {.t_start = 0, .t_end = UINT64_MAX, .api = 1023, .result = INT32_MIN,
                              .stream = UINT64_MAX, .a = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}};
    wsl_codec_reset(st, UINT64_MAX / 2 + 1); /* the largest |t_start - previous| */
    for (int i = 0; i < COLS; i++)
        k.len[i] = 0;
    o = cols_out(&k);
    wsl_event_encode_columns(st, &worst, &o);
    cols_take(&k, &o);
    for (int i = 0; i < COLS; i++)
        CHECKF(k.len[i] == col_max[i], "worst case: %s column %zu bytes, max %u", col_name[i], k.len[i],
               col_max[i]);
    CHECK(k.len[0] + k.len[1] + k.len[2] + k.len[3] + k.len[4] == WSL_EVENT_MAX_ENCODED);
    enc = cols_join(&k, &size);
    CHECK(enc && decode_all(enc, size, 1, WSL_MAX_API_IDS, UINT64_MAX / 2 + 1, out, &done) == 1 && done);
    CHECK(event_diff(&worst, &out[0], NULL) < 0);
    free(enc);

    free(in);
    free(out);
    free(masks);
    free(prev);
    free(st);
    cols_free(&k);
    return 0;
}

/* Two events of one id, the second with every field changed, encoded into k. */
static const struct wsl_event sample[2] = {
    {.t_start = 1000, .t_end = 5000, .api = 300, .result = 2, .stream = 77, .a = {UINT64_MAX, 2, 3, 4}},
    {.t_start = 900, .t_end = 7000, .api = 300, .result = -5, .stream = 78, .a = {1, 1u << 20, 0, 9}},
};

static void encode_sample(struct cols *k)
{
    static struct wsl_codec_state st;
    wsl_codec_reset(&st, 0);
    for (int i = 0; i < COLS; i++)
        k->len[i] = 0;
    struct wsl_columns_out o = cols_out(k);
    wsl_event_encode_columns(&st, &sample[0], &o);
    wsl_event_encode_columns(&st, &sample[1], &o);
    cols_take(k, &o);
}

/* Decodes k as a chunk of `count` events: the number decoded, -1 when the
 * columns did not open; *done: every column used up. */
static int decode_cols(const struct cols *k, uint32_t count, uint32_t api_limit, int *done)
{
    size_t size;
    uint8_t *b = cols_join(k, &size);
    struct wsl_event out[4];
    int n = b ? decode_all(b, size, count, api_limit, 0, out, done) : -2;
    if (n == 2 && (event_diff(&sample[0], &out[0], NULL) >= 0 || event_diff(&sample[1], &out[1], NULL) >= 0))
        n = -3;
    free(b);
    return n;
}

/* Cut columns, overlong varints, reserved mask bits, ids at and past the
 * limits, bytes left over in a column, directories that do not fit: refused,
 * and never a read past the end (ASan checks: the encoded bytes sit in a
 * buffer of exactly their size). */
int test_codec_malformed(void)
{
    struct cols k;
    CHECK(cols_alloc(&k, 4) == 0);
    int done;
    encode_sample(&k);
    CHECK(k.len[COL_API] == 4 && k.len[COL_MASK] == 2 && k.len[COL_FLD] > 0);
    CHECK(decode_cols(&k, 2, WSL_MAX_API_IDS, &done) == 2 && done);

    /* Every column cut short (the mask column's size is the count: not cut here). */
    for (int c = 0; c < COLS; c++) {
        if (c == COL_MASK)
            continue;
        size_t full = k.len[c];
        for (size_t cut = 0; cut < full; cut++) {
            k.len[c] = cut;
            int n = decode_cols(&k, 2, WSL_MAX_API_IDS, &done);
            CHECKF(n < 2, "%s column cut to %zu of %zu: %d events decoded", col_name[c], cut, full, n);
        }
        k.len[c] = full;
    }

    /* A byte left over in any column: both events decode, the columns are not used up. */
    for (int c = 0; c < COLS; c++) {
        if (c == COL_MASK)
            continue;
        k.c[c][k.len[c]++] = 0;
        CHECKF(decode_cols(&k, 2, WSL_MAX_API_IDS, &done) == 2 && !done, "%s column with a spare byte",
               col_name[c]);
        k.len[c]--;
    }
    /* One event fewer than encoded: the rest is left over. */
    CHECK(decode_cols(&k, 1, WSL_MAX_API_IDS, &done) == 1 && !done);

    /* Reserved mask bits. */
    for (int bit = 6; bit < 8; bit++) {
        encode_sample(&k);
        k.c[COL_MASK][1] |= (uint8_t)(1u << bit);
        CHECKF(decode_cols(&k, 2, WSL_MAX_API_IDS, &done) == 1, "reserved bit %d accepted", bit);
    }

    /* Ids: 300 needs a limit above 300; 1023 is the last id; 1024 is refused whatever the limit. */
    encode_sample(&k);
    CHECK(decode_cols(&k, 2, 300, &done) == 0);
    CHECK(decode_cols(&k, 2, 301, &done) == 2 && done);
    static const uint8_t id1023[2] = {0xff, 0x07}, id1024[2] = {0x80, 0x08};
    memcpy(k.c[COL_API], id1023, 2);
    memcpy(k.c[COL_API] + 2, id1023, 2);
    CHECK(decode_cols(&k, 2, WSL_MAX_API_IDS, &done) == -3 && done); /* decodes, as id 1023 */
    CHECK(decode_cols(&k, 2, 1023, &done) == 0);
    memcpy(k.c[COL_API] + 2, id1024, 2);
    CHECK(decode_cols(&k, 2, UINT32_MAX, &done) == 1);

    /* An 11-byte varint is refused in every varint column; a 10-byte one is not. */
    for (int c = 0; c < COLS; c++) {
        if (c == COL_MASK)
            continue;
        for (int len = 10; len <= 11; len++) {
            encode_sample(&k);
            /* The first event's value in that column, written in `len` bytes. */
            struct cols m;
            CHECK(cols_alloc(&m, 4) == 0);
            for (int i = 0; i < COLS; i++) {
                memcpy(m.c[i], k.c[i], k.len[i]);
                m.len[i] = k.len[i];
            }
            uint64_t v;
            const uint8_t *after = wsl_get_varint(k.c[c], k.c[c] + k.len[c], &v);
            CHECK(after);
            size_t first = (size_t)(after - k.c[c]);
            for (int i = 0; i < len - 1; i++, v >>= 7) /* the same value, padded with continuation bytes */
                m.c[c][i] = (uint8_t)(v | 0x80);
            m.c[c][len - 1] = (uint8_t)v;
            memcpy(m.c[c] + len, k.c[c] + first, k.len[c] - first);
            m.len[c] = (size_t)len + k.len[c] - first;
            if (c == COL_API) { /* id 300 does not fit one byte: make both ids 1 */
                m.c[c][0] = 0x81;
                m.c[c][len] = 1;
                m.len[c] = (size_t)len + 1;
            }
            int n = decode_cols(&m, 2, WSL_MAX_API_IDS, &done);
            if (len == 10)
                CHECKF(n == 2 || (c == COL_API && n == -3), "%s column: 10-byte varint refused (%d)", col_name[c],
                       n);
            else
                CHECKF(n == 0, "%s column: 11-byte varint gave %d events", col_name[c], n);
            cols_free(&m);
        }
    }

    /* Directories: too short, counts beyond a varint column, columns past the end. */
    encode_sample(&k);
    size_t size;
    uint8_t *b = cols_join(&k, &size);
    CHECK(b);
    struct wsl_columns_in in;
    CHECK(wsl_columns_open(&in, b, size, 2) == WSL_COLUMNS_OK);
    for (size_t cut = 0; cut < WSL_EVENTS_DIRECTORY_SIZE; cut++)
        CHECK(wsl_columns_open(&in, b, cut, 0) == WSL_COLUMNS_NO_DIRECTORY);
    size_t fixed = size - k.len[COL_FLD]; /* directory and all columns but the fields */
    CHECK(wsl_columns_open(&in, b, fixed, 2) == WSL_COLUMNS_OK && in.fld == in.fld_end);
    CHECK(wsl_columns_open(&in, b, fixed - 1, 2) == WSL_COLUMNS_OVERRUN);
    CHECK(wsl_columns_open(&in, b, size, 5) == WSL_COLUMNS_COUNT_TOO_BIG); /* api column holds 4 bytes */
    static const uint32_t short_dir[][3] = {{2, 8, 8}, {8, 2, 8}, {8, 8, 2}};
    for (size_t h = 0; h < sizeof short_dir / sizeof short_dir[0]; h++) {
        memcpy(b, short_dir[h], sizeof short_dir[h]);
        CHECKF(wsl_columns_open(&in, b, size, 3) == WSL_COLUMNS_COUNT_TOO_BIG, "directory %zu", h);
    }
    static const uint32_t huge[][3] = {{UINT32_MAX, 2, 2}, {2, UINT32_MAX, UINT32_MAX}, {UINT32_MAX, UINT32_MAX,
                                                                                          UINT32_MAX}};
    for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
        memcpy(b, huge[h], sizeof huge[h]);
        CHECKF(wsl_columns_open(&in, b, size, 2) == WSL_COLUMNS_OVERRUN, "directory %zu", h);
    }
    /* The mask column makes a count too big for the bytes even when the varint columns allow it. */
    uint32_t tight[3] = {2, 2, (uint32_t)(size - WSL_EVENTS_DIRECTORY_SIZE - 4)};
    memcpy(b, tight, sizeof tight);
    CHECK(wsl_columns_open(&in, b, size, 1) == WSL_COLUMNS_OVERRUN);
    CHECK(wsl_columns_open(&in, b, size, 0) == WSL_COLUMNS_OK);
    free(b);

    /* An empty chunk: a directory of zeros and nothing else. */
    uint8_t *empty = calloc(1, WSL_EVENTS_DIRECTORY_SIZE);
    CHECK(empty && wsl_columns_open(&in, empty, WSL_EVENTS_DIRECTORY_SIZE, 0) == WSL_COLUMNS_OK);
    CHECK(wsl_columns_done(&in));
    CHECK(wsl_columns_open(&in, empty, WSL_EVENTS_DIRECTORY_SIZE, 1) == WSL_COLUMNS_COUNT_TOO_BIG);
    free(empty);

    /* Decoding past `count` events fails (every column is used up), never reads on. */
    encode_sample(&k);
    b = cols_join(&k, &size);
    CHECK(b && wsl_columns_open(&in, b, size, 2) == WSL_COLUMNS_OK);
    CHECK(wsl_columns_left(&in) == size - WSL_EVENTS_DIRECTORY_SIZE && !wsl_columns_done(&in));
    struct wsl_codec_state *st = malloc(sizeof *st);
    struct wsl_event ev;
    CHECK(st);
    wsl_codec_reset(st, 0);
    CHECK(wsl_event_decode_columns(st, &in, WSL_MAX_API_IDS, &ev) && wsl_event_decode_columns(st, &in, WSL_MAX_API_IDS, &ev));
    CHECK(wsl_columns_done(&in) && wsl_columns_left(&in) == 0);
    CHECK(!wsl_event_decode_columns(st, &in, WSL_MAX_API_IDS, &ev));
    free(b);

    /* Two events' api, dt and dur columns but a count of 1: the second event
     * has no mask byte (the next byte, 0, belongs to the dt column). */
    static const uint8_t two_for_one[] = {2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, /* directory */
                                          5, 5, 0, 0, 0, 0, 0};              /* api, mask, dt, dur */
    b = malloc(sizeof two_for_one);
    CHECK(b);
    memcpy(b, two_for_one, sizeof two_for_one);
    CHECK(wsl_columns_open(&in, b, sizeof two_for_one, 1) == WSL_COLUMNS_OK);
    wsl_codec_reset(st, 0);
    CHECK(wsl_event_decode_columns(st, &in, WSL_MAX_API_IDS, &ev) && ev.api == 5);
    CHECK(!wsl_event_decode_columns(st, &in, WSL_MAX_API_IDS, &ev));
    free(st);
    free(b);
    cols_free(&k);
    return 0;
}

/* The encoder stores durations as unsigned: an event ending before it starts
 * (a clock step) comes back with t_end == t_start, not as a huge duration.
 * Repeated arguments cost nothing in the fields column. */
int test_codec_end_before_start(void)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    struct cols k;
    CHECK(st && cols_alloc(&k, 3) == 0);
    struct wsl_event ev[3] = {{.t_start = 5000, .t_end = 4000, .api = 3, .stream = 9, .a = {1, 2}},
                              {.t_start = 6000, .t_end = 6500, .api = 3, .stream = 9, .a = {1, 2}},
                              {.t_start = 6100, .t_end = 6600, .api = 3, .stream = 9, .a = {1, 2}}},
                     out[3];
    wsl_codec_reset(st, 5000);
    struct wsl_columns_out o = cols_out(&k);
    for (int i = 0; i < 3; i++)
        wsl_event_encode_columns(st, &ev[i], &o);
    cols_take(&k, &o);
    CHECK(k.len[COL_MASK] == 3 && k.c[COL_MASK][1] == 0 && k.c[COL_MASK][2] == 0);
    CHECK(k.len[COL_FLD] == 3); /* stream, a[0] and a[1] of the first event, one byte each */
    size_t size;
    uint8_t *b = cols_join(&k, &size);
    int done;
    CHECK(b && decode_all(b, size, 3, WSL_MAX_API_IDS, 5000, out, &done) == 3 && done);
    CHECK(out[0].t_start == 5000 && out[0].t_end == 5000);
    CHECK(event_diff(&ev[1], &out[1], NULL) < 0 && event_diff(&ev[2], &out[2], NULL) < 0);
    CHECK(out[2].stream == 9 && out[2].a[0] == 1 && out[2].a[1] == 2);
    free(b);
    free(st);
    cols_free(&k);
    return 0;
}

/* ---- EVENTS_PACKED (format 1.4) ---- */

/* The layout unpack_all decodes: EVENTS_GAPS (1.9) when set, else EVENTS_PACKED. */
static bool unpack_gaps;

/* Decodes the packed bytes b (exactly `size`, so ASan sees any overrun) as a
 * chunk of `count` events with the reference decoder: how many decoded (-1:
 * the columns did not open); *done: every column used up and the literal count
 * as the directory says. */
static int unpack_all(const uint8_t *b, size_t size, uint32_t count, uint32_t api_limit, uint64_t base,
                      struct wsl_event *out, int *done)
{
    static struct wsl_codec_state st;
    static struct wsl_pack_state ps;
    struct wsl_packed_in in;
    *done = 0;
    if ((unpack_gaps ? wsl_gaps_open : wsl_packed_open)(&in, b, size, count) != WSL_COLUMNS_OK)
        return -1;
    wsl_codec_reset(&st, base);
    wsl_pack_reset(&ps, 0);
    uint32_t i = 0;
    while (i < count && (unpack_gaps ? wsl_event_decode_gaps : wsl_event_decode_packed)(&ps, &st, &in, api_limit,
                                                                                        &out[i]))
        i++;
    *done = wsl_packed_left(&in) == 0 && ps.literals == in.literals;
    return (int)i;
}

/* Events drawn from a pool of argument sets (some pools larger than the
 * table, so the table fills and later sets stay literals; many sets share a
 * hash slot), with unique ones and extreme times mixed in: the packed bytes
 * decode to exactly the events, repeats take one op byte and no literal bytes,
 * and the same events decode identically from the 1.2 columns. */
int test_packed_roundtrip(void)
{
    enum { N = 60000 };
    rng_seed(4242);
    struct wsl_event *in = calloc(N, sizeof *in), *out = calloc(N, sizeof *out), *pool = calloc(600, sizeof *pool);
    CHECK(in && out && pool);
    static const uint16_t apis[] = {0, 1, 2, 127, 128, 1023};
    for (int j = 0; j < 600; j++) {
        struct wsl_event *e = &pool[j];
        e->api = rng_below(3) ? apis[rng_below(6)] : (uint16_t)rng_below(WSL_MAX_API_IDS);
        e->result = rng_below(10) ? 0 : (int32_t)extreme_value();
        e->stream = rng_below(2) ? 0x7000 + rng_below(4) : extreme_value();
        for (int a = 0; a < 4; a++)
            e->a[a] = rng_below(2) ? extreme_value() : rng_below(16);
    }
    static const uint32_t pool_sizes[] = {1, 4, 200, 255, 256, 600};
    uint64_t t = extreme_value();
    size_t total_ops_bytes = 0;
    for (int round = 0; round < 12; round++) {
        uint32_t n = round % 3 == 0 ? 5000 : (uint32_t)rng_below(N) + 1, pool_n = pool_sizes[round % 6];
        for (uint32_t i = 0; i < n; i++) {
            struct wsl_event ev = rng_below(20) ? pool[rng_below(pool_n)] : pool[rng_below(600)];
            if (!rng_below(30))
                ev.a[rng_below(4)] = rng_next(); /* a set seen once */
            t = rng_below(50) ? t + rng_below(100000) : extreme_value();
            ev.t_start = t;
            uint64_t room = UINT64_MAX - t, dur = rng_below(4) ? rng_below(10000) : extreme_value();
            ev.t_end = t + (dur <= room ? dur : room);
            in[i] = ev;
        }
        uint8_t *enc;
        size_t size = synth_encode_packed(in, n, in[0].t_start, &enc);
        uint32_t dir[3];
        memcpy(dir, enc, sizeof dir);
        CHECKF(size <= WSL_EVENTS_DIRECTORY_SIZE + (size_t)n * WSL_PACKED_EVENT_MAX_ENCODED, "round %d: %zu bytes",
               round, size);
        int done;
        CHECKF(unpack_all(enc, size, n, WSL_MAX_API_IDS, in[0].t_start, out, &done) == (int)n && done,
               "round %d: packed bytes did not decode", round);
        /* Ops: 0 for a literal, else at most the table's size; literals are the
         * first sightings, plus every set beyond the table's 255. */
        const uint8_t *op = enc + WSL_EVENTS_DIRECTORY_SIZE;
        uint32_t zeros = 0, kept = 0;
        for (uint32_t i = 0; i < n; i++) {
            const char *what;
            CHECKF(event_diff(&in[i], &out[i], &what) < 0, "round %d event %u differs in %s", round, i, what);
            if (op[i] == 0) {
                zeros++;
                kept += kept < WSL_PACK_TABLE_MAX;
            } else {
                CHECKF(op[i] <= kept, "round %d event %u: op %u with %u entries", round, i, op[i], kept);
            }
            /* A set already in the table is never written again. */
            if (op[i] == 0)
                for (uint32_t j = 0, lit = 0; j < i && lit < WSL_PACK_TABLE_MAX; j++)
                    if (op[j] == 0 && lit++ < WSL_PACK_TABLE_MAX && wsl_pack_same(&in[j], &in[i]))
                        CHECKF(0, "round %d event %u: a literal again for the set of event %u", round, i, j);
        }
        CHECK(zeros == dir[2]);
        total_ops_bytes += n;
        /* EVENTS_GAPS (1.9): the same ops and literals, the same events. */
        uint8_t *genc;
        size_t gsize = synth_encode_gaps(in, n, in[0].t_start, &genc);
        uint32_t gdir[3];
        memcpy(gdir, genc, sizeof gdir);
        CHECKF(gsize <= WSL_EVENTS_DIRECTORY_SIZE + (size_t)n * WSL_GAPS_EVENT_MAX_ENCODED, "round %d: %zu bytes",
               round, gsize);
        CHECK(gdir[2] == dir[2] && memcmp(genc + WSL_EVENTS_DIRECTORY_SIZE, op, n) == 0);
        CHECK(memcmp(genc + gsize - (size_t)(size - WSL_EVENTS_DIRECTORY_SIZE - n - dir[0] - dir[1]),
                     enc + WSL_EVENTS_DIRECTORY_SIZE + n + dir[0] + dir[1],
                     size - WSL_EVENTS_DIRECTORY_SIZE - n - dir[0] - dir[1]) == 0); /* the literal column */
        unpack_gaps = true;
        memset(out, 0, (size_t)n * sizeof *out);
        CHECKF(unpack_all(genc, gsize, n, WSL_MAX_API_IDS, in[0].t_start, out, &done) == (int)n && done,
               "round %d: EVENTS_GAPS bytes did not decode", round);
        unpack_gaps = false;
        for (uint32_t i = 0; i < n; i++) {
            const char *what;
            CHECKF(event_diff(&in[i], &out[i], &what) < 0, "round %d event %u (gaps) differs in %s", round, i, what);
        }
        free(genc);
        free(enc);
        /* The 1.2 columns of the same events decode to the same events. */
        size = synth_encode_events(in, n, in[0].t_start, &enc);
        CHECK(decode_all(enc, size, n, WSL_MAX_API_IDS, in[0].t_start, out, &done) == (int)n && done);
        for (uint32_t i = 0; i < n; i++)
            CHECK(event_diff(&in[i], &out[i], NULL) < 0);
        free(enc);
    }
    CHECK(total_ops_bytes > 0);

    /* A chunk of one repeated set: one literal, then nothing but op 1, a dt and a dur byte each. */
    for (int i = 0; i < 1000; i++) {
        in[i] = pool[0];
        in[i].t_start = 1000 + 10 * (uint64_t)i;
        in[i].t_end = in[i].t_start + 5;
    }
    uint8_t *enc;
    size_t size = synth_encode_packed(in, 1000, 1000, &enc);
    uint32_t dir[3];
    memcpy(dir, enc, sizeof dir);
    CHECK(dir[0] == 1000 && dir[1] == 1000 && dir[2] == 1);
    CHECK(size < WSL_EVENTS_DIRECTORY_SIZE + 3000 + WSL_COL_LIT_MAX);
    CHECK(enc[WSL_EVENTS_DIRECTORY_SIZE] == 0 && enc[WSL_EVENTS_DIRECTORY_SIZE + 999] == 1);
    free(enc);

    /* The worst case: every column at its maximum. */
    struct wsl_event worst = {.t_start = 0, .t_end = UINT64_MAX, .api = 1023, .result = INT32_MIN,
                              .stream = UINT64_MAX, .a = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}};
    size = synth_encode_packed(&worst, 1, UINT64_MAX / 2 + 1, &enc);
    CHECK(size == WSL_EVENTS_DIRECTORY_SIZE + WSL_PACKED_EVENT_MAX_ENCODED);
    int done;
    CHECK(unpack_all(enc, size, 1, WSL_MAX_API_IDS, UINT64_MAX / 2 + 1, out, &done) == 1 && done);
    CHECK(event_diff(&worst, &out[0], NULL) < 0);
    free(enc);
    size = synth_encode_gaps(&worst, 1, UINT64_MAX / 2 + 1, &enc);
    CHECK(size <= WSL_EVENTS_DIRECTORY_SIZE + WSL_GAPS_EVENT_MAX_ENCODED);
    unpack_gaps = true;
    CHECK(unpack_all(enc, size, 1, WSL_MAX_API_IDS, UINT64_MAX / 2 + 1, out, &done) == 1 && done);
    unpack_gaps = false;
    CHECK(event_diff(&worst, &out[0], NULL) < 0);
    free(enc);
    free(in);
    free(out);
    free(pool);
    return 0;
}

/* Packed bytes of the sample's two events and a repeat of the first:
 * directory, ops {0, 0, 1}, dt, dur, two literals. */
static uint8_t *pack_sample(size_t *size)
{
    struct wsl_event ev[3] = {sample[0], sample[1], sample[0]};
    ev[2].t_start = 2000;
    ev[2].t_end = 2500;
    uint8_t *enc;
    *size = synth_encode_packed(ev, 3, 0, &enc);
    return enc;
}

/* Decodes a copy of b (exactly its size) with byte `at` set to v (at < 0: as is),
 * the directory's literal count replaced by `literals` (< 0: as is), cut to `cut` bytes. */
static int unpack_mutated(const uint8_t *b, size_t size, long at, uint8_t v, long literals, size_t cut,
                          uint32_t count, uint32_t api_limit, int *done)
{
    if (cut < size)
        size = cut;
    uint8_t *c = malloc(size ? size : 1);
    memcpy(c, b, size);
    if (at >= 0 && (size_t)at < size)
        c[at] = v;
    if (literals >= 0 && size >= 12) {
        uint32_t l = (uint32_t)literals;
        memcpy(c + 8, &l, 4);
    }
    struct wsl_event out[8];
    int n = unpack_all(c, size, count, api_limit, 0, out, done);
    free(c);
    return n;
}

/* Ops beyond the table, literal counts that disagree, cut columns, spare
 * bytes, reserved mask bits, ids past the limits, directories that cannot
 * fit: refused, never a read past the end. */
int test_packed_malformed(void)
{
    size_t size;
    uint8_t *b = pack_sample(&size);
    int done;
    const long op0 = WSL_EVENTS_DIRECTORY_SIZE;
    CHECK(b[op0] == 0 && b[op0 + 1] == 0 && b[op0 + 2] == 1);
    CHECK(unpack_mutated(b, size, -1, 0, -1, size, 3, WSL_MAX_API_IDS, &done) == 3 && done);
    /* An op naming an entry not yet in the table (the second event names the second entry). */
    CHECK(unpack_mutated(b, size, op0 + 1, 2, -1, size, 3, WSL_MAX_API_IDS, &done) == 1);
    CHECK(unpack_mutated(b, size, op0 + 2, 3, -1, size, 3, WSL_MAX_API_IDS, &done) == 2);
    CHECK(unpack_mutated(b, size, op0 + 2, 255, -1, size, 3, WSL_MAX_API_IDS, &done) == 2);
    /* op 2 (the second literal) is valid at event 3: decodes, as the wrong event. */
    CHECK(unpack_mutated(b, size, op0 + 2, 2, -1, size, 3, WSL_MAX_API_IDS, &done) == 3 && done);
    /* A literal op where the table was named: there is no third literal. */
    CHECK(unpack_mutated(b, size, op0 + 2, 0, -1, size, 3, WSL_MAX_API_IDS, &done) == 2);
    CHECK(unpack_mutated(b, size, op0 + 2, 0, 3, size, 3, WSL_MAX_API_IDS, &done) == 2);
    /* The directory's literal count: fewer than the ops say, or more (bytes stay unread). */
    CHECK(unpack_mutated(b, size, -1, 0, 1, size, 3, WSL_MAX_API_IDS, &done) == 1);
    CHECK(unpack_mutated(b, size, -1, 0, 3, size, 3, WSL_MAX_API_IDS, &done) == 3 && !done);
    CHECK(unpack_mutated(b, size, -1, 0, 4, size, 3, WSL_MAX_API_IDS, &done) == -1); /* above count */
    /* One event fewer than encoded: bytes left over. */
    CHECK(unpack_mutated(b, size, -1, 0, -1, size, 2, WSL_MAX_API_IDS, &done) < 2 || !done);
    /* Cut anywhere: never all three events with every column used up. */
    for (size_t cut = 0; cut < size; cut++) {
        int n = unpack_mutated(b, size, -1, 0, -1, cut, 3, WSL_MAX_API_IDS, &done);
        CHECKF(n < 3 || !done, "cut at %zu of %zu: %d events", cut, size, n);
    }
    /* The literal column: api 300 is two bytes, then the mask byte. */
    uint32_t dir[3];
    memcpy(dir, b, sizeof dir);
    const long lit0 = op0 + 3 + (long)dir[0] + (long)dir[1];
    CHECK(b[lit0] == ((300 & 0x7f) | 0x80) && b[lit0 + 1] == (300 >> 7));
    CHECK(unpack_mutated(b, size, -1, 0, -1, size, 3, 300, &done) == 0);
    CHECK(unpack_mutated(b, size, -1, 0, -1, size, 3, 301, &done) == 3 && done);
    for (int bit = 6; bit < 8; bit++)
        CHECKF(unpack_mutated(b, size, lit0 + 2, (uint8_t)(b[lit0 + 2] | 1u << bit), -1, size, 3, WSL_MAX_API_IDS,
                              &done) == 0, "reserved mask bit %d accepted", bit);
    CHECK(unpack_mutated(b, size, lit0 + 1, 0x08, -1, size, 3, UINT32_MAX, &done) == 0); /* id 1024+ */
    /* A spare byte in the literal column. */
    uint8_t *spare = malloc(size + 1);
    memcpy(spare, b, size);
    spare[size] = 0;
    struct wsl_event out[4];
    CHECK(unpack_all(spare, size + 1, 3, WSL_MAX_API_IDS, 0, out, &done) == 3 && !done);
    free(spare);
    /* Directories that do not fit: count above the dt or dur column, columns past the end. */
    uint8_t d[WSL_EVENTS_DIRECTORY_SIZE + 8] = {0};
    struct wsl_packed_in in;
    CHECK(wsl_packed_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE - 1, 0) == WSL_COLUMNS_NO_DIRECTORY);
    CHECK(wsl_packed_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE, 0) == WSL_COLUMNS_OK && wsl_packed_left(&in) == 0);
    CHECK(wsl_packed_open(&in, d, sizeof d, 1) == WSL_COLUMNS_COUNT_TOO_BIG);
    uint32_t big[3] = {UINT32_MAX, UINT32_MAX, 0};
    memcpy(d, big, sizeof big);
    CHECK(wsl_packed_open(&in, d, sizeof d, 4) == WSL_COLUMNS_OVERRUN);
    uint32_t lits[3] = {2, 2, 2};
    memcpy(d, lits, sizeof lits);
    CHECK(wsl_packed_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE + 2 + 4 + 3, 2) == WSL_COLUMNS_COUNT_TOO_BIG);
    CHECK(wsl_packed_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE + 2 + 4 + 4, 2) == WSL_COLUMNS_OK);
    free(b);
    return 0;
}

/* EVENTS_GAPS (1.9): directories that do not fit (its dur_lo column takes a
 * byte per event too), a duration's high part past 2^56 - 1, and every cut of
 * a good chunk (the decoder stops inside the bytes it was given). */
int test_gaps_malformed(void)
{
    struct wsl_event ev[3] = {
        {.t_start = 1000, .t_end = 1300, .api = 1, .stream = 7},
        {.t_start = 1310, .t_end = 1400, .api = 1, .stream = 7},
        {.t_start = 1390, .t_end = 1390, .api = 2, .stream = 7, .a = {5}}, /* starts before the last end */
    };
    uint8_t *b;
    size_t size = synth_encode_gaps(ev, 3, 1000, &b);
    int done;
    struct wsl_event out[4];
    unpack_gaps = true;
    CHECK(unpack_all(b, size, 3, WSL_MAX_API_IDS, 1000, out, &done) == 3 && done);
    for (int i = 0; i < 3; i++)
        CHECK(event_diff(&ev[i], &out[i], NULL) < 0);
    uint32_t dir[3];
    memcpy(dir, b, sizeof dir);
    CHECK(dir[0] == 3 && dir[1] == 3 && dir[2] == 2); /* small gaps, no high part above 255 ticks but the first's */
    for (size_t cut = 0; cut < size; cut++) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        int n = unpack_all(c, cut, 3, WSL_MAX_API_IDS, 1000, out, &done);
        CHECKF(n < 3 || !done, "cut at %zu decoded whole", cut);
        free(c);
    }
    /* The first duration's high part made 2^56 (a 9-byte varint). */
    const size_t hi0 = WSL_EVENTS_DIRECTORY_SIZE + 3 + dir[0] + 3;
    CHECK(b[hi0] == 1); /* 300 ticks: 1 << 8 | 44 */
    uint8_t *c = malloc(size + 8);
    static const uint8_t long_hi[9] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    memcpy(c, b, hi0);
    memcpy(c + hi0, long_hi, sizeof long_hi);
    memcpy(c + hi0 + 9, b + hi0 + 1, size - hi0 - 1);
    uint32_t d2[3] = {dir[0], dir[1] + 8, dir[2]};
    memcpy(c, d2, sizeof d2);
    CHECK(unpack_all(c, size + 8, 3, WSL_MAX_API_IDS, 1000, out, &done) == 0);
    c[hi0 + 8] = 0x00; /* 2^56 - 1 fits: 0x80 x 8 then 0: not minimal, but a valid value (0) */
    CHECK(unpack_all(c, size + 8, 3, WSL_MAX_API_IDS, 1000, out, &done) == 3 && done);
    free(c);
    /* Directories: count above the gap or dur_hi column, the dur_lo bytes past the end, literals. */
    uint8_t d[WSL_EVENTS_DIRECTORY_SIZE + 16] = {0};
    struct wsl_packed_in in;
    CHECK(wsl_gaps_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE - 1, 0) == WSL_COLUMNS_NO_DIRECTORY);
    CHECK(wsl_gaps_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE, 0) == WSL_COLUMNS_OK && wsl_packed_left(&in) == 0 &&
          in.dur_lo);
    uint32_t two[3] = {2, 2, 0};
    memcpy(d, two, sizeof two);
    CHECK(wsl_gaps_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE + 2 + 2 + 2 + 1, 2) == WSL_COLUMNS_OVERRUN);
    CHECK(wsl_gaps_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE + 2 + 2 + 2 + 2, 2) == WSL_COLUMNS_OK);
    CHECK(wsl_gaps_open(&in, d, sizeof d, 3) == WSL_COLUMNS_COUNT_TOO_BIG);
    uint32_t lits[3] = {2, 2, 2};
    memcpy(d, lits, sizeof lits);
    CHECK(wsl_gaps_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE + 8 + 3, 2) == WSL_COLUMNS_COUNT_TOO_BIG);
    CHECK(wsl_gaps_open(&in, d, WSL_EVENTS_DIRECTORY_SIZE + 8 + 4, 2) == WSL_COLUMNS_OK);
    unpack_gaps = false;
    free(b);
    return 0;
}

/* The reader's varint (reader_get_varint: short cuts for 1, 2 and 3..8 bytes) against the format's
 * wsl_get_varint on every length, with and without a last byte, at every distance from the end. */
int test_codec_reader_varint(void)
{
    rng_seed(26);
    uint8_t buf[24];
    for (unsigned round = 0; round < 200000; round++) {
        unsigned len = 1 + (unsigned)rng_below(12), room = (unsigned)rng_below(sizeof buf + 1);
        for (unsigned i = 0; i < sizeof buf; i++)
            buf[i] = (uint8_t)rng_next();
        for (unsigned i = 0; i + 1 < len && i < sizeof buf; i++)
            buf[i] |= 0x80;
        if (len - 1 < sizeof buf && rng_below(8))
            buf[len - 1] &= 0x7f;
        uint64_t a = 0xdead, b = 0xbeef;
        const uint8_t *pa = wsl_get_varint(buf, buf + room, &a), *pb = reader_get_varint(buf, buf + room, &b);
        CHECKF(pa == pb && (!pa || a == b), "round %u: len %u room %u: %p %llx, %p %llx", round, len, room,
               (const void *)pa, (unsigned long long)a, (const void *)pb, (unsigned long long)b);
    }
    return 0;
}

/* wsl_encode_gaps_run (the writer's loop, drain.c's encode_run) writes the bytes that
 * wsl_event_encode_gaps writes one event at a time: every column, byte for byte, the
 * codec and table state after it the same; events cut into runs of any length (as the
 * drains cut them), events whose api is at or above the limit skipped by both, argument
 * sets repeating in step order (the successor hint), the api's last set, the hash, the
 * table full, ends before starts. */
int test_gaps_run_same_bytes(void)
{
    enum { N = 20000, API_LIMIT = 900 };
    rng_seed(2611);
    struct wsl_event *in = calloc(N, sizeof *in), *pool = calloc(400, sizeof *pool);
    struct wsl_pack_state *ps[2] = {calloc(1, sizeof *ps[0]), calloc(1, sizeof *ps[1])};
    struct wsl_codec_state *st[2] = {calloc(1, sizeof *st[0]), calloc(1, sizeof *st[1])};
    uint8_t *col[2][5];
    static const size_t col_size[5] = {N * WSL_COL_OP_MAX, N * WSL_COL_DT_MAX, N * WSL_COL_DUR_LO_MAX,
                                       N * WSL_COL_DUR_MAX, N * WSL_COL_LIT_MAX};
    for (int w = 0; w < 2; w++)
        for (int c = 0; c < 5; c++)
            CHECK((col[w][c] = calloc(col_size[c] + 16, 1)) != NULL);
    CHECK(in && pool && ps[0] && ps[1] && st[0] && st[1]);
    for (int j = 0; j < 400; j++) {
        struct wsl_event *e = &pool[j];
        e->api = (uint16_t)(rng_below(8) ? rng_below(40) : rng_below(WSL_MAX_API_IDS)); /* some >= API_LIMIT */
        e->result = rng_below(10) ? 0 : (int32_t)extreme_value();
        e->stream = rng_below(2) ? 0x7000 + rng_below(4) : extreme_value();
        for (int a = 0; a < 4; a++)
            e->a[a] = rng_below(2) ? extreme_value() : rng_below(16);
    }
    static const uint32_t pool_sizes[] = {1, 3, 64, 255, 256, 400};
    uint64_t t = 1000;
    size_t runs = 0, skipped = 0;
    for (int round = 0; round < 12; round++) {
        const uint32_t n = (uint32_t)rng_below(N) + 1, pool_n = pool_sizes[round % 6];
        for (uint32_t i = 0; i < n; i++) {
            /* step order most of the time (i mod pool_n), else any set, now and then one seen once */
            struct wsl_event ev = rng_below(4) ? pool[i % pool_n] : pool[rng_below(pool_n)];
            if (!rng_below(40))
                ev.a[rng_below(4)] = rng_next();
            t = rng_below(60) ? t + rng_below(5000) : extreme_value();
            ev.t_start = t;
            ev.t_end = rng_below(30) ? t + rng_below(100000) : (rng_below(2) ? t - 1 - rng_below(100) : extreme_value());
            ev.flags = (uint16_t)rng_below(3); /* not part of the set */
            in[i] = ev;
            skipped += ev.api >= API_LIMIT;
        }
        struct wsl_gaps_out o[2];
        for (int w = 0; w < 2; w++) {
            wsl_codec_reset(st[w], in[0].t_start);
            memset(ps[w], 0, sizeof *ps[w]);
            ps[w]->prev = (uint8_t)WSL_PACK_TABLE_MAX;
            o[w] = (struct wsl_gaps_out){col[w][0], col[w][1], col[w][2], col[w][3], col[w][4]};
        }
        for (uint32_t i = 0; i < n; i++) /* one event at a time, as drain.c's helper-process loop */
            if (in[i].api < API_LIMIT)
                wsl_event_encode_gaps(ps[0], st[0], &in[i], &o[0]);
        for (uint32_t i = 0; i < n;) { /* in runs, as drain.c's encode_run */
            uint32_t k = rng_below(3) ? (uint32_t)rng_below(700) + 1 : (uint32_t)rng_below(4);
            k = k < n - i ? k : n - i;
            wsl_encode_gaps_run(ps[1], st[1], &in[i], &in[i] + k, API_LIMIT, &o[1]);
            i += k;
            runs++;
        }
        CHECKF(o[0].op - col[0][0] == o[1].op - col[1][0] && o[0].gap - col[0][1] == o[1].gap - col[1][1] &&
                   o[0].dur_lo - col[0][2] == o[1].dur_lo - col[1][2] &&
                   o[0].dur_hi - col[0][3] == o[1].dur_hi - col[1][3] && o[0].lit - col[0][4] == o[1].lit - col[1][4],
               "round %d: the columns' lengths differ", round);
        CHECKF(memcmp(col[0][0], col[1][0], (size_t)(o[0].op - col[0][0])) == 0, "round %d: op column", round);
        CHECKF(memcmp(col[0][1], col[1][1], (size_t)(o[0].gap - col[0][1])) == 0, "round %d: gap column", round);
        CHECKF(memcmp(col[0][2], col[1][2], (size_t)(o[0].dur_lo - col[0][2])) == 0, "round %d: dur_lo column",
               round);
        CHECKF(memcmp(col[0][3], col[1][3], (size_t)(o[0].dur_hi - col[0][3])) == 0, "round %d: dur_hi column",
               round);
        CHECKF(memcmp(col[0][4], col[1][4], (size_t)(o[0].lit - col[0][4])) == 0, "round %d: literal column", round);
        CHECKF(st[0]->prev_t == st[1]->prev_t && ps[0]->prev == ps[1]->prev && ps[0]->entries == ps[1]->entries &&
                   ps[0]->literals == ps[1]->literals,
               "round %d: the state after the events differs", round);
        /* and the bytes decode to the events kept */
        const size_t lit_len = (size_t)(o[1].lit - col[1][4]);
        uint32_t dir[3] = {(uint32_t)(o[1].gap - col[1][1]), (uint32_t)(o[1].dur_hi - col[1][3]), ps[1]->literals};
        const uint32_t kept = (uint32_t)(o[1].op - col[1][0]);
        const size_t size = sizeof dir + 2u * kept + dir[0] + dir[1] + lit_len;
        uint8_t *buf = malloc(size + 1);
        CHECK(buf != NULL);
        uint8_t *p = buf;
        memcpy(p, dir, sizeof dir), p += sizeof dir;
        memcpy(p, col[1][0], kept), p += kept;
        memcpy(p, col[1][1], dir[0]), p += dir[0];
        memcpy(p, col[1][2], kept), p += kept;
        memcpy(p, col[1][3], dir[1]), p += dir[1];
        memcpy(p, col[1][4], lit_len);
        struct wsl_packed_in pin;
        CHECK(wsl_gaps_open(&pin, buf, size, kept) == WSL_COLUMNS_OK);
        struct wsl_codec_state dst;
        struct wsl_pack_state *dps = calloc(1, sizeof *dps);
        CHECK(dps != NULL);
        wsl_codec_reset(&dst, in[0].t_start);
        wsl_pack_reset(dps, 0);
        for (uint32_t i = 0, j = 0; i < n; i++) {
            if (in[i].api >= API_LIMIT)
                continue;
            struct wsl_event d;
            CHECKF(wsl_event_decode_gaps(dps, &dst, &pin, WSL_MAX_API_IDS, &d), "round %d event %u: no decode", round,
                   i);
            const uint64_t dur = in[i].t_end >= in[i].t_start ? in[i].t_end - in[i].t_start : 0;
            CHECKF(d.t_start == in[i].t_start && d.t_end == in[i].t_start + dur && wsl_pack_same(&d, &in[i]),
                   "round %d event %u (kept %u) decodes differently", round, i, j);
            j++;
        }
        CHECK(wsl_packed_left(&pin) == 0);
        free(dps);
        free(buf);
    }
    CHECK(runs > 100 && skipped > 100);
    for (int w = 0; w < 2; w++) {
        for (int c = 0; c < 5; c++)
            free(col[w][c]);
        free(ps[w]);
        free(st[w]);
    }
    free(in);
    free(pool);
    return 0;
}
