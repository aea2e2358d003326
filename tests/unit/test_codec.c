/* The event codec of trace_format.h: round trips, masks, malformed input. */
#include <stdlib.h>
#include <string.h>

#include "unit_test.h"

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
 * decoding gives back exactly what was encoded, and the mask says which fields changed. */
int test_codec_roundtrip(void)
{
    enum { N = 200000 };
    rng_seed(42);
    struct wsl_event *in = calloc(N, sizeof *in), *out = calloc(N, sizeof *out);
    uint8_t *buf = malloc((size_t)N * WSL_EVENT_MAX_ENCODED);
    uint8_t *masks = malloc(N);
    struct wsl_event *prev = calloc(WSL_MAX_API_IDS, sizeof *prev); /* the encoder's view, mirrored */
    struct wsl_codec_state *st = malloc(sizeof *st);
    CHECK(in && out && buf && masks && prev && st);

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
    uint8_t *p = buf;
    for (int i = 0; i < N; i++) {
        uint8_t *next = wsl_event_encode(st, &in[i], p);
        CHECKF(next - p <= (long)WSL_EVENT_MAX_ENCODED, "event %d took %ld bytes", i, (long)(next - p));
        if (i < N - 2) {
            unsigned api_bytes = in[i].api < 128 ? 1 : 2;
            CHECKF(p[api_bytes] == masks[i], "event %d: mask %#x, expected %#x", i, p[api_bytes], masks[i]);
        }
        p = next;
    }
    const uint8_t *end = p, *q = buf;
    wsl_codec_reset(st, 12345);
    for (int i = 0; i < N; i++) {
        q = wsl_event_decode(st, q, end, WSL_MAX_API_IDS, &out[i]);
        CHECKF(q != NULL, "event %d did not decode", i);
        const char *what;
        CHECKF(event_diff(&in[i], &out[i], &what) < 0, "event %d differs in %s", i, what);
    }
    CHECK(q == end);

    /* The worst case really fits WSL_EVENT_MAX_ENCODED. */
    struct wsl_event worst = {.t_start = 0, .t_end = UINT64_MAX, .api = 1023, .result = INT32_MIN,
                              .stream = UINT64_MAX, .a = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}};
    wsl_codec_reset(st, UINT64_MAX / 2 + 1); /* the largest |t_start - previous| */
    CHECK(wsl_event_encode(st, &worst, buf) - buf == (long)WSL_EVENT_MAX_ENCODED);

    free(in);
    free(out);
    free(buf);
    free(masks);
    free(prev);
    free(st);
    return 0;
}

/* Every cut of a valid encoding, reserved mask bits, overlong varints, ids
 * beyond the limit: decode refuses them and never reads past the end (ASan
 * checks: each input sits in a buffer of exactly its size). */
int test_codec_malformed(void)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    CHECK(st);
    struct wsl_event ev = {.t_start = 1000, .t_end = 5000, .api = 300, .result = 2, .stream = 77,
                           .a = {UINT64_MAX, 2, 3, 4}}, out;
    uint8_t enc[WSL_EVENT_MAX_ENCODED];
    wsl_codec_reset(st, 0);
    size_t len = (size_t)(wsl_event_encode(st, &ev, enc) - enc);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *b = malloc(cut ? cut : 1);
        memcpy(b, enc, cut);
        wsl_codec_reset(st, 0);
        CHECKF(wsl_event_decode(st, b, b + cut, WSL_MAX_API_IDS, &out) == NULL, "cut at %zu decoded", cut);
        free(b);
    }
    uint8_t *b = malloc(len);
    memcpy(b, enc, len);
    wsl_codec_reset(st, 0);
    CHECK(wsl_event_decode(st, b, b + len, WSL_MAX_API_IDS, &out) == b + len);
    CHECK(event_diff(&ev, &out, NULL) < 0);
    wsl_codec_reset(st, 0);
    CHECK(wsl_event_decode(st, b, b + len, 300, &out) == NULL); /* id 300 >= limit 300 */
    for (int bit = 6; bit < 8; bit++) {
        memcpy(b, enc, len);
        b[2] |= (uint8_t)(1u << bit); /* the mask byte follows the 2-byte id */
        wsl_codec_reset(st, 0);
        CHECKF(wsl_event_decode(st, b, b + len, WSL_MAX_API_IDS, &out) == NULL, "reserved bit %d accepted", bit);
    }
    free(b);

    /* An 11-byte varint is refused; a 10-byte one is not. */
    uint8_t overlong[14] = {0x01, 0x00};
    memset(overlong + 2, 0x80, 10);
    overlong[12] = 0x01;
    overlong[13] = 0x00;
    wsl_codec_reset(st, 0);
    CHECK(wsl_event_decode(st, overlong, overlong + sizeof overlong, WSL_MAX_API_IDS, &out) == NULL);
    uint8_t ten[13] = {0x01, 0x00};
    memset(ten + 2, 0x80, 9);
    ten[11] = 0x01;
    ten[12] = 0x00;
    wsl_codec_reset(st, 0);
    CHECK(wsl_event_decode(st, ten, ten + sizeof ten, WSL_MAX_API_IDS, &out) == ten + sizeof ten);
    free(st);
    return 0;
}

/* The encoder stores durations as unsigned: an event ending before it starts
 * (a clock step) comes back with t_end == t_start, not as a huge duration. */
int test_codec_end_before_start(void)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    CHECK(st);
    struct wsl_event ev = {.t_start = 5000, .t_end = 4000, .api = 3}, out;
    uint8_t enc[WSL_EVENT_MAX_ENCODED];
    wsl_codec_reset(st, 5000);
    const uint8_t *end = wsl_event_encode(st, &ev, enc);
    wsl_codec_reset(st, 5000);
    CHECK(wsl_event_decode(st, enc, end, WSL_MAX_API_IDS, &out) == end);
    CHECK(out.t_start == 5000 && out.t_end == 5000);
    free(st);
    return 0;
}
