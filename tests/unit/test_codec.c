/* The columnar event codec of trace_format.h: round trips, masks, worst cases,
 * malformed columns. */
#include <stdlib.h>
#include <string.h>

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
