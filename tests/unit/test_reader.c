/* The trace reader on synthetic traces: good, cut short, corrupt and foreign. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "trace_synth.h"
#include "unit_test.h"

static int compare_events(const struct read_all *ra, const struct gen_result *g, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *what;
        CHECKF(event_diff(&ra->events[i], &g->events[i], &what) < 0, "event %zu differs in %s", i, what);
        CHECKF(ra->tids[i] == g->tids[i], "event %zu: tid %u, expected %u", i, ra->tids[i], g->tids[i]);
    }
    return 0;
}

/* Four threads, chunks interleaved, every chunk type: every event and field comes back. */
int test_reader_multithread(void)
{
    char path[512];
    test_path(path, sizeof path, "multithread.trace.zst");
    struct gen_options o = {.threads = 4, .events_per_thread = 20000, .chunk_events = 3000,
                            .clock_kind = WSL_CLOCK_MONOTONIC_NS, .end = true, .extras = true, .seed = 7};
    struct gen_result g;
    gen_trace(path, &o, &g);
    struct read_all ra;
    read_all_file(path, &ra);
    CHECKF(ra.opened, "%s", ra.open_error);
    CHECKF(ra.result == WSL_READ_END, "result %d: %s", ra.result, ra.message);
    CHECK(strcmp(ra.message, "") == 0);
    CHECK(ra.count == g.count && g.count == 80000);
    if (compare_events(&ra, &g, g.count))
        return 1;
    CHECK(ra.chunk_starts == g.chunks);
    CHECK(ra.dropped == g.dropped && g.dropped > 0);

    CHECK(ra.items[WSL_CHUNK_PROCESS] == 1 && ra.items[WSL_CHUNK_API_TABLE] == 1);
    CHECK(ra.items[WSL_CHUNK_DRIVER] == 1 && ra.items[WSL_CHUNK_STRING] == 1 && ra.items[WSL_CHUNK_END] == 1);
    CHECK(ra.items[0] == 0); /* the unknown chunk type was skipped, not handed out */
    CHECK(ra.process.pid == 4242 && ra.process.ppid == 1 && ra.process.flags == WSL_PROC_WSL2);
    CHECK(strcmp(ra.host, "testhost") == 0 && strcmp(ra.exe, "/usr/bin/python3") == 0);
    CHECK(strcmp(ra.kernel_release, "6.6.0-microsoft-standard-WSL2") == 0);
    CHECK(ra.argc == 3 && strcmp(ra.argv1, "train.py") == 0);
    CHECK(ra.api_entries == synth_api_count);
    CHECK(strcmp(ra.api_symbol_7, synth_apis[7].symbol) == 0 && strcmp(ra.api_base_7, synth_apis[7].base) == 0);
    CHECK(ra.driver.driver_version == 13000 && ra.driver.devices == 2);
    CHECK(strcmp(ra.driver.libcuda_path, "/usr/lib/wsl/lib/libcuda.so.1") == 0);
    CHECK(strcmp(ra.gpu0_name, "NVIDIA H200") == 0 && ra.gpu1_mem == 25393692672u);
    CHECK(strcmp(ra.string1, "kernel_name_1") == 0);
    CHECK(ra.end.events_written == g.count && ra.end.events_dropped == g.dropped && ra.end.threads == 4);
    read_all_free(&ra);
    gen_result_free(&g);
    return 0;
}

/* A chunk larger than a batch comes in several items: chunk_start and dropped on the first only. */
int test_reader_batches(void)
{
    char path[512];
    test_path(path, sizeof path, "batches.trace.zst");
    uint32_t n = WSL_READER_BATCH * 2 + 5;
    struct wsl_event *ev = calloc(n, sizeof *ev);
    CHECK(ev);
    for (uint32_t i = 0; i < n; i++) {
        ev[i].api = synth_api_id("cuLaunchKernel");
        ev[i].t_start = 1000 + i * 10;
        ev[i].t_end = ev[i].t_start + 5;
        ev[i].a[0] = i;
    }
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_api_table(s);
    synth_events(s, 9, 33, ev, n);
    synth_end(s, 0, n, 33, 1);
    synth_close(s);

    char err[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_reader_open(path, err, sizeof err);
    CHECKF(r, "%s", err);
    struct wsl_item it;
    uint32_t seen = 0, batches = 0;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        if (it.type == WSL_CHUNK_PROCESS)
            CHECK(it.process.argc == 0 && it.process.argv[0] == NULL);
        if (it.type != WSL_CHUNK_EVENTS)
            continue;
        CHECK(it.events.tid == 9);
        CHECK(it.events.chunk_start == (batches == 0));
        CHECK(it.events.dropped == (batches == 0 ? 33u : 0u));
        CHECK(it.events.count == (batches < 2 ? WSL_READER_BATCH : 5u));
        for (uint32_t i = 0; i < it.events.count; i++)
            CHECK(it.events.events[i].a[0] == seen + i && it.events.events[i].t_start == 1000 + (seen + i) * 10);
        seen += it.events.count;
        batches++;
    }
    CHECK(res == WSL_READ_END && seen == n && batches == 3);
    CHECK(wsl_reader_next(r, &it) == WSL_READ_END); /* stays at the end */
    wsl_reader_close(r);
    free(ev);
    return 0;
}

/* Each chunk's codec state starts from zero: the same event in many one-event
 * chunks (and a chunk with no events) must come back unchanged every time. */
int test_reader_codec_reset(void)
{
    char path[512];
    test_path(path, sizeof path, "reset.trace.zst");
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_api_table(s);
    enum { CHUNKS = 20000 };
    for (uint32_t i = 0; i < CHUNKS; i++) {
        struct wsl_event ev = {.t_start = 100 + i, .t_end = 200 + i, .api = (uint16_t)(i % 3),
                               .result = 1, .stream = 5, .a = {6, 7, 8, 9}};
        synth_events(s, 1, 0, &ev, i % 1000 == 999 ? 0 : 1);
    }
    synth_end(s, 0, 0, 0, 1);
    synth_close(s);
    struct read_all ra;
    read_all_file(path, &ra);
    CHECKF(ra.result == WSL_READ_END, "%s", ra.message);
    CHECK(ra.count == CHUNKS - CHUNKS / 1000 && ra.chunk_starts == CHUNKS);
    for (size_t i = 0; i < ra.count; i++) {
        const struct wsl_event *e = &ra.events[i];
        CHECKF(e->result == 1 && e->stream == 5 && e->a[0] == 6 && e->a[1] == 7 && e->a[2] == 8 && e->a[3] == 9 &&
                   e->t_end - e->t_start == 100,
               "event %zu decoded against a stale state", i);
    }
    read_all_free(&ra);
    return 0;
}

/* Reading from memory gives what reading the file gives. */
int test_reader_mem_source(void)
{
    char path[512];
    test_path(path, sizeof path, "mem.trace.zst");
    struct gen_options o = {.threads = 2, .events_per_thread = 5000, .chunk_events = 700,
                            .clock_kind = WSL_CLOCK_MONOTONIC_NS, .end = true, .extras = true, .seed = 9};
    struct gen_result g;
    gen_trace(path, &o, &g);
    size_t size;
    uint8_t *data = synth_read_file(path, &size);
    struct read_all ra;
    read_all_mem(data, size, &ra);
    CHECKF(ra.result == WSL_READ_END, "%s", ra.message);
    CHECK(ra.count == g.count);
    if (compare_events(&ra, &g, g.count))
        return 1;
    read_all_free(&ra);
    free(data);
    gen_result_free(&g);
    return 0;
}

/* TSC ticks at 2.5 per ns from an offset: after the whole trace, the map
 * turns any tick back into its ns within a few ns, even for events read before
 * the second clock sample existed. */
int test_reader_clock_tsc(void)
{
    char path[512];
    test_path(path, sizeof path, "tsc.trace.zst");
    struct gen_options o = {.threads = 2, .events_per_thread = 60000, .chunk_events = 2000,
                            .clock_kind = WSL_CLOCK_TSC, .ticks_per_ns = 2.5, .tick_offset = 123456789,
                            .end = true, .seed = 3};
    struct gen_result g;
    gen_trace(path, &o, &g);
    struct read_all ra;
    read_all_file(path, &ra);
    CHECKF(ra.result == WSL_READ_END, "%s", ra.message);
    CHECK(ra.count == g.count);
    CHECK(ra.items[WSL_CHUNK_CLOCK] >= 3);
    CHECK(ra.clock.kind == WSL_CLOCK_TSC && ra.clock.rate_known);
    CHECKF(fabs(ra.clock.ns_per_tick - 0.4) < 1e-9, "ns per tick %.12f", ra.clock.ns_per_tick);
    const uint64_t ns_points[] = {5000000000u, 5000000001u, 5020000000u, 6234567890u, 9000000000u};
    for (size_t i = 0; i < sizeof ns_points / sizeof ns_points[0]; i++) {
        uint64_t ticks = o.tick_offset + (uint64_t)llround((double)ns_points[i] * 2.5);
        int64_t err = (int64_t)(wsl_clock_to_ns(&ra.clock, ticks) - ns_points[i]);
        CHECKF(err >= -2 && err <= 2, "%llu ns maps back with error %lld", (unsigned long long)ns_points[i],
               (long long)err);
    }
    CHECK(wsl_clock_duration_ns(&ra.clock, 2500) == 1000);
    /* the first event's duration, read before the 2nd sample, converts right too */
    uint64_t d = wsl_clock_duration_ns(&ra.clock, ra.events[0].t_end - ra.events[0].t_start);
    double expect = (double)(g.events[0].t_end - g.events[0].t_start) / 2.5;
    CHECK(fabs((double)d - expect) <= 1);
    read_all_free(&ra);
    gen_result_free(&g);
    return 0;
}

/* With one CLOCK sample the process start pair gives the second point; with
 * no usable pair the rate is marked unknown; a sample going back is ignored. */
int test_reader_clock_few_samples(void)
{
    char path[512];
    test_path(path, sizeof path, "tsc1.trace.zst");
    for (int variant = 0; variant < 3; variant++) {
        struct synth *s = synth_open(path, NULL);
        synth_file_header(s, NULL);
        struct wsl_process_info pi = {.pid = 1, .clock_kind = WSL_CLOCK_TSC, .start_ticks = 1000,
                                      .start_mono_ns = 500};
        synth_process(s, &pi, "h", "e", "r", 0, NULL);
        synth_api_table(s);
        if (variant == 0)
            synth_clock(s, 3000, 1500, 0);   /* with the start pair: 0.5 ns per tick */
        if (variant == 1)
            synth_clock(s, 1000, 500, 0);    /* the same point: nothing to fit */
        if (variant == 2) {
            synth_clock(s, 1000, 500, 0);
            synth_clock(s, 5000, 1500, 0);   /* 0.25 ns per tick */
            synth_clock(s, 4000, 1400, 0);   /* backwards: ignored */
        }
        synth_end(s, 0, 0, 0, 0);
        synth_close(s);
        struct read_all ra;
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_END, "%s", ra.message);
        if (variant == 0) {
            CHECK(ra.clock.rate_known && ra.clock.ns_per_tick == 0.5);
            CHECK(wsl_clock_to_ns(&ra.clock, 5000) == 2500);
            CHECK(wsl_clock_to_ns(&ra.clock, 0) == 0);   /* before the start: clamped at 0 */
        } else if (variant == 1) {
            CHECK(!ra.clock.rate_known && ra.clock.ns_per_tick == 1.0);
            CHECK(wsl_clock_to_ns(&ra.clock, 1100) == 600);
        } else {
            CHECK(ra.clock.rate_known && ra.clock.ns_per_tick == 0.25);
            CHECK(wsl_clock_to_ns(&ra.clock, 9000) == 2500);
        }
        read_all_free(&ra);
    }
    return 0;
}

int test_reader_clock_monotonic(void)
{
    char path[512];
    test_path(path, sizeof path, "mono.trace.zst");
    struct gen_options o = {.threads = 1, .events_per_thread = 100, .chunk_events = 50,
                            .clock_kind = WSL_CLOCK_MONOTONIC_NS, .end = true, .seed = 5};
    struct gen_result g;
    gen_trace(path, &o, &g);
    struct read_all ra;
    read_all_file(path, &ra);
    CHECK(ra.result == WSL_READ_END);
    CHECK(ra.clock.kind == WSL_CLOCK_MONOTONIC_NS && ra.clock.rate_known);
    CHECK(wsl_clock_to_ns(&ra.clock, 123456789012345u) == 123456789012345u);
    CHECK(wsl_clock_to_ns(&ra.clock, UINT64_MAX) == UINT64_MAX);
    CHECK(wsl_clock_duration_ns(&ra.clock, 777) == 777);
    read_all_free(&ra);
    gen_result_free(&g);
    return 0;
}

/* A killed process: the compressed file cut at every offset. The reader says
 * "cut short", hands out a prefix of the events (exactly), more for longer cuts. */
int test_reader_truncated_offsets(void)
{
    char path[512], cut_path[512];
    test_path(path, sizeof path, "full.trace.zst");
    test_path(cut_path, sizeof cut_path, "cut.trace.zst");
    struct gen_options o = {.threads = 2, .events_per_thread = 300, .chunk_events = 50,
                            .clock_kind = WSL_CLOCK_MONOTONIC_NS, .end = true, .flush_each_chunk = true,
                            .extras = true, .seed = 11};
    struct gen_result g;
    gen_trace(path, &o, &g);
    size_t size;
    uint8_t *data = synth_read_file(path, &size);
    size_t last_count = 0, truncated = 0, with_events = 0, too_short = 0;
    for (size_t cut = 0; cut <= size; cut++) {
        struct read_all ra;
        if (cut % 97 == 0 || cut == size) { /* through a file now and then, from memory otherwise */
            synth_write_file(cut_path, data, cut);
            read_all_file(cut_path, &ra);
        } else {
            read_all_mem(data, cut, &ra);
        }
        if (cut == 0) {
            CHECK(!ra.opened && strstr(ra.open_error, "empty file"));
            continue;
        }
        if (!ra.opened || !ra.items[WSL_CHUNK_PROCESS]) { /* nothing to read: not a trace, one clear line */
            const char *why = ra.opened ? ra.message : ra.open_error;
            CHECKF((!ra.opened || ra.result == WSL_READ_ERROR) && strstr(why, "too short to be a trace") &&
                       !strchr(why, '\n'), "cut at %zu: %s", cut, why);
            CHECKF(truncated == 0, "cut at %zu: too short after longer cuts read", cut);
            too_short++;
            read_all_free(&ra);
            continue;
        }
        if (cut == size) {
            CHECK(ra.result == WSL_READ_END && ra.count == g.count);
        } else {
            CHECKF(ra.result == WSL_READ_TRUNCATED, "cut at %zu of %zu: result %d (%s)", cut, size, ra.result,
                   ra.message);
            CHECKF(strstr(ra.message, "trace cut short") && strstr(ra.message, "read up to its last complete block"),
                   "%s", ra.message);
            truncated++;
        }
        CHECKF(ra.count >= last_count && ra.count <= g.count, "cut at %zu: %zu events after %zu", cut, ra.count,
               last_count);
        if (compare_events(&ra, &g, ra.count))
            return 1;
        with_events += ra.count > 0;
        last_count = ra.count;
        read_all_free(&ra);
    }
    CHECKF(too_short > 0 && truncated + too_short == size - 1, "%zu too short, %zu truncated of %zu", too_short,
           truncated, size);
    CHECK(with_events > size / 2); /* most cuts keep events: blocks end at every chunk */
    free(data);
    gen_result_free(&g);
    return 0;
}

/* The decompressed stream cut at every byte (then compressed whole): the
 * reader keeps exactly the complete chunks before the cut. */
int test_reader_truncated_raw(void)
{
    char path[512];
    test_path(path, sizeof path, "raw.trace");
    struct synth_options so = {.raw = true};
    struct synth *s = synth_open(path, &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 77};
    synth_process(s, &pi, "host", "exe", "rel", 0, NULL);
    synth_api_table(s);
    struct wsl_event ev[3] = {
        {.t_start = 10, .t_end = 20, .api = 1},
        {.t_start = 30, .t_end = 45, .api = 2, .a = {1, 2, 3, 4}},
        {.t_start = 50, .t_end = 51, .api = 1, .result = 3},
    };
    synth_events(s, 5, 0, ev, 2);
    synth_events(s, 6, 0, ev + 2, 1);
    synth_end(s, 60, 3, 0, 2);
    synth_close(s);
    size_t size;
    uint8_t *raw = synth_read_file(path, &size);
    uint8_t *z = malloc(ZSTD_compressBound(size));
    CHECK(z);
    size_t events_at_end_of_first = 0;
    for (size_t cut = 0; cut <= size; cut++) {
        size_t zn = ZSTD_compress(z, ZSTD_compressBound(size), raw, cut, 1);
        CHECK(!ZSTD_isError(zn));
        struct read_all ra;
        read_all_mem(z, zn, &ra);
        if (cut == 0) {
            CHECK(!ra.opened && strstr(ra.open_error, "not a wslshim trace"));
            continue;
        }
        if (!ra.opened || !ra.items[WSL_CHUNK_PROCESS]) { /* cut before its PROCESS chunk is whole */
            const char *why = ra.opened ? ra.message : ra.open_error;
            CHECKF((!ra.opened || ra.result == WSL_READ_ERROR) && strstr(why, "too short to be a trace"), "cut %zu: %s",
                   cut, why);
            uint32_t process_size;
            memcpy(&process_size, raw + 32 + 4, 4);
            CHECKF(cut < 32 + 8 + process_size, "cut %zu: no process read", cut);
            read_all_free(&ra);
            continue;
        }
        CHECKF(ra.result == (cut == size ? WSL_READ_END : WSL_READ_TRUNCATED), "cut %zu: %d %s", cut, ra.result,
               ra.message);
        CHECK(ra.count == 0 || ra.count == 2 || ra.count == 3);
        if (ra.count == 2 && !events_at_end_of_first)
            events_at_end_of_first = cut;
        for (size_t i = 0; i < ra.count; i++)
            CHECK(event_diff(&ra.events[i], &ev[i], NULL) < 0);
        read_all_free(&ra);
    }
    CHECK(events_at_end_of_first > 0);
    free(z);
    free(raw);
    return 0;
}

/* Flipped bytes in a checksummed file: an error with a message (or, where a
 * flip changes nothing zstd checks, a clean read of the same events); never
 * a crash. */
int test_reader_corrupt_flips(void)
{
    char path[512], bad_path[512];
    test_path(path, sizeof path, "flip.trace.zst");
    test_path(bad_path, sizeof bad_path, "flipped.trace.zst");
    struct gen_options o = {.threads = 2, .events_per_thread = 400, .chunk_events = 100,
                            .clock_kind = WSL_CLOCK_MONOTONIC_NS, .end = true, .extras = true, .seed = 13};
    struct gen_result g;
    gen_trace(path, &o, &g);
    size_t size;
    uint8_t *data = synth_read_file(path, &size);
    size_t errors = 0, clean = 0;
    rng_seed(99);
    for (size_t at = 0; at < size; at++) {
        uint8_t saved = data[at];
        data[at] ^= (uint8_t)(1u << rng_below(8));
        struct read_all ra;
        read_all_mem(data, size, &ra);
        data[at] = saved;
        if (!ra.opened || ra.result == WSL_READ_ERROR) {
            const char *msg = ra.opened ? ra.message : ra.open_error;
            CHECKF(msg[0] && !strchr(msg, '\n'), "flip at %zu: no one-line message", at);
            errors++;
        } else if (ra.result == WSL_READ_END) {
            CHECKF(ra.count == g.count, "flip at %zu: clean end with %zu events", at, ra.count);
            if (compare_events(&ra, &g, g.count))
                return 1;
            clean++;
        } else {
            CHECK(ra.result == WSL_READ_TRUNCATED);
        }
        read_all_free(&ra);
    }
    CHECKF(errors > size * 9 / 10, "%zu errors, %zu clean of %zu flips", errors, clean, size);
    free(data);
    gen_result_free(&g);
    return 0;
}

/* A trace broken in way `which` (see the cases). */
static void write_structured(const char *path, int which)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1, .strings_size = 0};
    if (which == 0) { /* first chunk is not PROCESS */
        synth_clock(s, 1, 1, 1);
        synth_close(s);
        return;
    }
    if (which == 1) { /* PROCESS strings without their terminators */
        uint8_t buf[sizeof pi + 3];
        pi.strings_size = 3;
        memcpy(buf, &pi, sizeof pi);
        memcpy(buf + sizeof pi, "abc", 3);
        synth_chunk(s, WSL_CHUNK_PROCESS, buf, sizeof buf);
        synth_close(s);
        return;
    }
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_api_table(s);
    struct wsl_event ev = {.t_start = 10, .t_end = 20, .api = 1};
    uint8_t *enc;
    size_t n = synth_encode_events(&ev, 1, 10, &enc);
    struct wsl_events_header eh = {.tid = 1, .count = 1, .base_ticks = 10, .encoded_size = (uint32_t)n};
    switch (which) {
    case 2: /* absurd chunk size */
        synth_chunk_header(s, WSL_CHUNK_EVENTS, WSL_CHUNK_MAX_PAYLOAD + 1);
        break;
    case 3: /* api id not in the table */
        ev.api = (uint16_t)synth_api_count;
        free(enc);
        n = synth_encode_events(&ev, 1, 10, &enc);
        eh.encoded_size = (uint32_t)n;
        break;
    case 4: /* more events claimed than encoded */
        eh.count = 2;
        break;
    case 5: /* bytes left after the events */
        enc = realloc(enc, n + 8);
        memset(enc + n, 0, 8);
        n += 8;
        eh.encoded_size = (uint32_t)n;
        break;
    case 6: { /* reserved mask bits: the mask column follows the directory and the api column */
        uint32_t api_bytes;
        memcpy(&api_bytes, enc, 4);
        enc[WSL_EVENTS_DIRECTORY_SIZE + api_bytes] |= 0x80;
        break;
    }
    case 7: /* encoded size beyond the chunk */
        eh.encoded_size = (uint32_t)n + 100;
        break;
    case 8: { /* an API table defining an id twice */
        uint8_t t[4 + 2 * 12] = {2, 0, 0, 0};
        memcpy(t + 4 + 8, "a\0a", 4);
        memcpy(t + 16 + 8, "b\0b", 4);
        synth_chunk(s, WSL_CHUNK_API_TABLE, t, sizeof t);
        break;
    }
    case 9: { /* DRIVER claiming more GPUs than it holds */
        struct wsl_driver_info di = {.devices = 3};
        synth_chunk(s, WSL_CHUNK_DRIVER, &di, sizeof di);
        break;
    }
    case 10: /* a count that cannot fit the encoded bytes */
        eh.count = 1000000;
        break;
    case 11: /* encoded bytes too short for the column directory */
        n = eh.encoded_size = WSL_EVENTS_DIRECTORY_SIZE - 1;
        break;
    case 12: { /* a column directory whose columns run past the encoded bytes */
        uint32_t huge = UINT32_MAX;
        memcpy(enc + 4, &huge, 4); /* dt_bytes */
        break;
    }
    case 13: { /* a byte left in the duration column (the fields column is empty) */
        uint32_t dur_bytes;
        memcpy(&dur_bytes, enc + 8, 4);
        dur_bytes++;
        memcpy(enc + 8, &dur_bytes, 4);
        enc = realloc(enc, n + 1);
        enc[n++] = 0;
        eh.encoded_size = (uint32_t)n;
        break;
    }
    case 14: /* an api id varint running past its column into the mask column */
        enc[WSL_EVENTS_DIRECTORY_SIZE] |= 0x80;
        break;
    }
    if ((which >= 3 && which <= 7) || which >= 10) {
        synth_chunk_header(s, WSL_CHUNK_EVENTS, (uint32_t)(sizeof eh + n));
        synth_bytes(s, &eh, sizeof eh);
        synth_bytes(s, enc, n);
    }
    free(enc);
    synth_end(s, 0, 0, 0, 0);
    synth_close(s);
}

/* Each kind of structural corruption: WSL_READ_ERROR with a message that says what. */
int test_reader_corrupt_structure(void)
{
    static const char *const expect[] = {
        "not PROCESS", "not NUL-terminated", "exceeds the 67108864-byte limit",
        NULL /* api id N not in the API table */,
        "event count mismatch", "event count mismatch", "bad event encoding", "run past the chunk",
        "defined twice", "GPUs", "cannot fit", "cannot hold the 12-byte column directory",
        "columns run past the", "event count mismatch (1 bytes left after 1 events)", "bad event encoding (event 0)",
    };
    char path[512];
    test_path(path, sizeof path, "structure.trace.zst");
    for (int which = 0; which < (int)(sizeof expect / sizeof expect[0]); which++) {
        write_structured(path, which);
        struct read_all ra;
        read_all_file(path, &ra);
        CHECKF(ra.opened, "case %d: %s", which, ra.open_error);
        CHECKF(ra.result == WSL_READ_ERROR, "case %d: result %d (%s)", which, ra.result, ra.message);
        char want[64];
        if (expect[which])
            snprintf(want, sizeof want, "%s", expect[which]);
        else
            snprintf(want, sizeof want, "api id %u not in the API table", synth_api_count);
        CHECKF(strstr(ra.message, want) && strstr(ra.message, "corrupt chunk at byte"), "case %d: '%s'", which,
               ra.message);
        CHECK(ra.count == 0);
        read_all_free(&ra);
    }
    return 0;
}

/* Files that are not traces at all. */
int test_reader_foreign(void)
{
    char path[512];
    struct read_all ra;
    test_path(path, sizeof path, "notes.txt");
    synth_write_file(path, "hello, this is a text file\n", 27);
    read_all_file(path, &ra);
    CHECK(!ra.opened && strcmp(ra.open_error, "not a zstd file (not a wslshim trace)") == 0);

    test_path(path, sizeof path, "empty");
    synth_write_file(path, "", 0);
    read_all_file(path, &ra);
    CHECK(!ra.opened && strcmp(ra.open_error, "empty file (not a wslshim trace)") == 0);

    test_path(path, sizeof path, "two-bytes");
    synth_write_file(path, "{}", 2);
    read_all_file(path, &ra);
    CHECK(!ra.opened && strstr(ra.open_error, "not a zstd file"));

    char text[4000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)('a' + i % 26);
    uint8_t z[8192];
    for (size_t len = 0; len < sizeof text; len = len * 3 + 1) { /* short and long other data */
        size_t zn = ZSTD_compress(z, sizeof z, text, len, 3);
        CHECK(!ZSTD_isError(zn));
        test_path(path, sizeof path, "other.zst");
        synth_write_file(path, z, zn);
        read_all_file(path, &ra);
        CHECKF(!ra.opened && strcmp(ra.open_error, "not a wslshim trace (zstd data without a wslshim header)") == 0,
               "%zu bytes of other data: %s", len, ra.open_error);
    }

    test_path(path, sizeof path, "uncompressed.trace");
    struct synth_options so = {.raw = true};
    struct synth *s = synth_open(path, &so);
    synth_file_header(s, NULL);
    synth_close(s);
    read_all_file(path, &ra);
    CHECK(!ra.opened && strstr(ra.open_error, "uncompressed wslshim data"));

    test_path(path, sizeof path, "does-not-exist.trace.zst");
    read_all_file(path, &ra);
    CHECK(!ra.opened && strcmp(ra.open_error, "cannot open: No such file or directory") == 0);

    test_path(path, sizeof path, "");
    read_all_file(path, &ra); /* the temporary directory itself */
    CHECK(!ra.opened && strstr(ra.open_error, "Is a directory"));
    return 0;
}

static int header_case(const char *name, struct wsl_file_header h, const char *expect)
{
    char path[512];
    test_path(path, sizeof path, name);
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, &h);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_end(s, 0, 0, 0, 0);
    synth_close(s);
    struct read_all ra;
    read_all_file(path, &ra);
    if (!expect) {
        CHECKF(ra.opened && ra.result == WSL_READ_END, "%s: %s %s", name, ra.open_error, ra.message);
        CHECK(ra.process.pid == 1);
        read_all_free(&ra);
        return 0;
    }
    CHECKF(!ra.opened && strcmp(ra.open_error, expect) == 0, "%s: '%s'", name, ra.open_error);
    return 0;
}

int test_reader_newer_version(void)
{
    struct wsl_file_header h = synth_default_header();
    h.version_major = 2;
    if (header_case("v2.trace.zst", h, "newer format major version 2 (this reader reads 1)"))
        return 1;
    h = synth_default_header();
    h.version_minor = 1; /* row-wise events of a development build before 1.2 */
    if (header_case("v1.1.trace.zst", h,
                    "unsupported format version 1.1 (a development build's; this reader reads 1.2 and later)"))
        return 1;
    h = synth_default_header();
    h.version_minor = 7; /* a newer minor version still reads */
    return header_case("v1.7.trace.zst", h, NULL);
}

int test_reader_byte_order(void)
{
    struct wsl_file_header h = synth_default_header();
    h.byte_order = __builtin_bswap32(h.byte_order);
    h.version_major = __builtin_bswap16(h.version_major);
    return header_case("swapped.trace.zst", h, "trace written in the other byte order (not readable on this host)");
}

int test_reader_header_fields(void)
{
    struct wsl_file_header h = synth_default_header();
    h.magic[3] = 'X';
    if (header_case("magic.trace.zst", h, "not a wslshim trace (zstd data without a wslshim header)"))
        return 1;
    h = synth_default_header();
    h.byte_order = 0x11223344;
    if (header_case("bom.trace.zst", h, "corrupt file header (byte order mark 0x11223344)"))
        return 1;
    h = synth_default_header();
    h.record_size = 48;
    if (header_case("record.trace.zst", h, "corrupt file header (header_size 32, record_size 48)"))
        return 1;
    h = synth_default_header();
    h.version_major = 0;
    return header_case("v0.trace.zst", h, "unsupported format major version 0 (this reader reads 1)");
}

/* Random damage to the decompressed stream (flipped bytes, lengths and counts
 * set to edge values, cuts), compressed again so zstd passes it on: the
 * parser must end in END, TRUNCATED or ERROR with a one-line message, and
 * never crash or read out of bounds (run it under ASan). */
int test_reader_raw_mutations(void)
{
    char path[512];
    test_path(path, sizeof path, "mutate.trace");
    struct synth_options so = {.raw = true};
    struct synth *s = synth_open(path, &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 5, .clock_kind = WSL_CLOCK_TSC, .start_ticks = 100, .start_mono_ns = 50};
    const char *argv[] = {"prog", "arg"};
    synth_process(s, &pi, "host", "/bin/prog", "6.8", 2, argv);
    synth_api_table(s);
    synth_clock(s, 100, 50, 0);
    struct wsl_gpu_info gpu = {.name = "GPU", .total_mem = 1 << 30};
    synth_driver(s, 13000, 0, "/lib/libcuda.so.1", &gpu, 1);
    rng_seed(1234);
    struct wsl_event ev[40];
    for (int c = 0; c < 6; c++) {
        for (int i = 0; i < 40; i++) {
            uint64_t t = 1000u * (uint64_t)(c * 40 + i);
            ev[i] = (struct wsl_event){.t_start = t, .t_end = t + 400, .api = (uint16_t)rng_below(synth_api_count),
                                       .result = (int32_t)rng_below(3), .stream = rng_below(3),
                                       .a = {rng_next(), 5, rng_below(4), 0}};
        }
        synth_events(s, (uint32_t)(c % 2), (uint64_t)c, ev, 40);
        if (c == 2)
            synth_clock(s, 200000, 100000, 0);
    }
    synth_string(s, 3, "name");
    synth_end(s, 300000, 240, 15, 2);
    synth_close(s);
    size_t size;
    uint8_t *raw = synth_read_file(path, &size);
    uint8_t *work = malloc(size), *z = malloc(ZSTD_compressBound(size));
    CHECK(work && z);
    static const uint32_t edge[] = {0, 1, 2, 3, 4, 7, 8, 31, 32, 33, 47, 48, 255, 256, 272, 1023, 1024, 1025,
                                    0x7fffffff, 0x80000000u, 0xffffffffu, WSL_CHUNK_MAX_PAYLOAD,
                                    WSL_CHUNK_MAX_PAYLOAD + 1};
    size_t results[4] = {0};
    for (int iter = 0; iter < 5000; iter++) {
        memcpy(work, raw, size);
        size_t n = size;
        for (int m = 0, count = 1 + (int)rng_below(4); m < count && n > 40; m++) {
            size_t at = 32 + rng_below(n - 36); /* past the file header: it has its own tests */
            switch (rng_below(3)) {
            case 0:
                work[at] ^= (uint8_t)(1 + rng_below(255));
                break;
            case 1: {
                uint32_t v = edge[rng_below(sizeof edge / sizeof edge[0])];
                memcpy(work + (at & ~(size_t)3), &v, 4);
                break;
            }
            case 2:
                n = at;
                break;
            }
        }
        size_t zn = ZSTD_compress(z, ZSTD_compressBound(size), work, n, 1);
        CHECK(!ZSTD_isError(zn));
        struct read_all ra;
        read_all_mem(z, zn, &ra);
        CHECKF(ra.opened, "iteration %d: %s", iter, ra.open_error);
        CHECK(ra.result == WSL_READ_END || ra.result == WSL_READ_TRUNCATED || ra.result == WSL_READ_ERROR);
        if (ra.result != WSL_READ_END)
            CHECKF(ra.message[0] && !strchr(ra.message, '\n'), "iteration %d: no one-line message", iter);
        CHECK(ra.count <= 240);
        results[ra.result]++;
        read_all_free(&ra);
    }
    /* the damage reached every outcome, so the parser, not only the header check, was exercised */
    CHECKF(results[WSL_READ_END] > 100 && results[WSL_READ_TRUNCATED] > 100 && results[WSL_READ_ERROR] > 100,
           "end %zu, truncated %zu, error %zu", results[WSL_READ_END], results[WSL_READ_TRUNCATED],
           results[WSL_READ_ERROR]);
    free(raw);
    free(work);
    free(z);
    return 0;
}

/* The same events written as 1.2 EVENTS chunks (older shims), as 1.4
 * EVENTS_PACKED chunks, as 1.9 EVENTS_GAPS chunks and as 1.10 EVENTS_BITS chunks
 * read back identically; chunks of 2500 events with random arguments fill the
 * packed table, and batches cut across it. */
int test_reader_formats_agree(void)
{
    char path12[512], path14[512], path19[512], path110[512];
    test_path(path12, sizeof path12, "v12.trace.zst");
    test_path(path14, sizeof path14, "v14.trace.zst");
    test_path(path19, sizeof path19, "v19.trace.zst");
    test_path(path110, sizeof path110, "v110.trace.zst");
    struct gen_options o = {.threads = 3, .events_per_thread = 30000, .chunk_events = 2500,
                            .clock_kind = WSL_CLOCK_TSC, .ticks_per_ns = 2.5, .end = true, .extras = true,
                            .seed = 1312};
    struct gen_result g12, g14, g19, g110;
    o.v12 = true;
    gen_trace(path12, &o, &g12);
    o.v12 = false;
    o.v14 = true;
    gen_trace(path14, &o, &g14);
    o.v14 = false;
    o.v19 = true;
    gen_trace(path19, &o, &g19);
    o.v19 = false;
    gen_trace(path110, &o, &g110);
    CHECK(g12.count == g14.count && g12.count == g19.count && g12.count == g110.count && g12.count == 90000);
    struct read_all a, b, c, e;
    read_all_file(path12, &a);
    read_all_file(path14, &b);
    read_all_file(path19, &c);
    read_all_file(path110, &e);
    CHECKF(a.result == WSL_READ_END && b.result == WSL_READ_END && c.result == WSL_READ_END &&
               e.result == WSL_READ_END,
           "%s / %s / %s / %s", a.message, b.message, c.message, e.message);
    if (compare_events(&a, &g12, g12.count) || compare_events(&b, &g12, g12.count) ||
        compare_events(&c, &g12, g12.count) || compare_events(&e, &g12, g12.count))
        return 1;
    const struct read_all *later[] = {&b, &c, &e};
    for (int k = 0; k < 3; k++) {
        const struct read_all *x = later[k];
        CHECK(a.count == x->count && a.batches == x->batches && a.chunk_starts == x->chunk_starts &&
              a.dropped == x->dropped && a.dropped == g12.dropped);
        CHECK(memcmp(a.items, x->items, sizeof a.items) == 0);
        CHECK(a.clock.ns_per_tick == x->clock.ns_per_tick && a.clock.ns0 == x->clock.ns0);
    }
    read_all_free(&a);
    read_all_free(&b);
    read_all_free(&c);
    read_all_free(&e);
    gen_result_free(&g12);
    gen_result_free(&g14);
    gen_result_free(&g19);
    gen_result_free(&g110);
    return 0;
}

/* An EVENTS_PACKED chunk (gaps: EVENTS_GAPS) of the events `ev`, with payload
 * byte `at` (from the start of the encoded bytes; < 0: none) set to v, and
 * `extra` spare bytes. */
static void write_packed_case(const char *path, bool gaps, const struct wsl_event *ev, uint32_t n, long at, uint8_t v,
                              size_t extra, int64_t literals)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    static const struct synth_row rows[] = {{"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH, 0},
                                            {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM, 0}};
    synth_api_rows(s, rows, 2);
    uint8_t *enc;
    size_t size = gaps ? synth_encode_gaps(ev, n, ev[0].t_start, &enc) : synth_encode_packed(ev, n, ev[0].t_start, &enc);
    uint8_t *payload = calloc(1, sizeof(struct wsl_events_header) + size + extra);
    struct wsl_events_header eh = {.tid = 7, .count = n, .base_ticks = ev[0].t_start,
                                   .encoded_size = (uint32_t)(size + extra)};
    memcpy(payload, &eh, sizeof eh);
    memcpy(payload + sizeof eh, enc, size);
    if (at >= 0)
        payload[sizeof eh + (size_t)at] = v;
    if (literals >= 0) {
        uint32_t l = (uint32_t)literals;
        memcpy(payload + sizeof eh + 8, &l, 4);
    }
    synth_chunk(s, gaps ? WSL_CHUNK_EVENTS_GAPS : WSL_CHUNK_EVENTS_PACKED, payload, sizeof eh + size + extra);
    synth_end(s, 0, n, 0, 1);
    synth_close(s);
    free(enc);
    free(payload);
}

/* Broken EVENTS_PACKED and EVENTS_GAPS chunks through the reader's batch
 * decoder: one line naming the chunk, and only whole batches before the fault
 * handed out. */
int test_reader_packed_malformed(void)
{
    enum { N = 600 }; /* three batches */
    struct wsl_event *ev = calloc(N, sizeof *ev);
    CHECK(ev);
    for (int i = 0; i < N; i++) {
        ev[i].api = i % 7 == 3; /* ids of the two-row table: cuLaunchKernel, cuStreamSynchronize */
        ev[i].t_start = 1000 + 100 * (uint64_t)i;
        ev[i].t_end = ev[i].t_start + 50;
        ev[i].stream = 0x7000;
        ev[i].a[0] = 0x5000 + (uint64_t)(i % 5) * 0x10; /* six sets: literals at events 0..4 and 3 */
    }
    char path[512];
    test_path(path, sizeof path, "packed-bad.trace.zst");
    struct read_all ra;
    for (int gaps = 0; gaps < 2; gaps++) {
        /* Good first. */
        write_packed_case(path, gaps, ev, N, -1, 0, 0, -1);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_END && ra.count == N, "%s", ra.message);
        for (int i = 0; i < N; i++)
            CHECK(event_diff(&ev[i], &ra.events[i], NULL) < 0);
        read_all_free(&ra);

        const long ops = WSL_EVENTS_DIRECTORY_SIZE;
        uint8_t *enc;
        if (gaps)
            synth_encode_gaps(ev, N, ev[0].t_start, &enc);
        else
            synth_encode_packed(ev, N, ev[0].t_start, &enc);
        uint32_t dir[3];
        memcpy(dir, enc, sizeof dir);
        free(enc);
        const int64_t literals = dir[2];
        CHECK(literals == 10);
        const struct {
            long at;
            uint8_t v;
            size_t extra;
            int64_t literals;
            const char *want;
            size_t handed_out;
        } cases[] = {
            {ops + 1, 200, 0, -1, "bad event encoding (event 1)", 0},     /* op past the table */
            {ops + 300, 200, 0, -1, "bad event encoding (event 300)", 256}, /* in the second batch */
            {ops + 599, 0, 0, -1, "bad event encoding (event 599)", 512}, /* a literal that is not there */
            {-1, 0, 0, 5, "bad event encoding (event", 0},                /* fewer literals than ops 0 */
            {-1, 0, 1, -1, "event count mismatch (1 bytes left after 600 events)", 512},
            {-1, 0, 0, N + 1, "event count mismatch (600 events with 601 literals cannot fit", 0},
            {-1, 0, 0, literals + 1, "literals, the directory says", 512}, /* more than the ops 0 */
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            write_packed_case(path, gaps, ev, N, cases[c].at, cases[c].v, cases[c].extra, cases[c].literals);
            read_all_file(path, &ra);
            CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, cases[c].want) &&
                       strstr(ra.message, "corrupt chunk at byte") && !strchr(ra.message, '\n'),
                   "case %zu: result %d, '%s'", c, ra.result, ra.message);
            CHECKF(ra.count == cases[c].handed_out, "case %zu: %zu events handed out", c, ra.count);
            read_all_free(&ra);
        }

        /* A literal whose api id is not in the table; reserved mask bits. */
        const long lit0 = ops + N + (long)dir[0] + (long)dir[1] + (gaps ? N : 0); /* gaps: the dur_lo column too */
        write_packed_case(path, gaps, ev, N, lit0, 2, 0, -1);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, "not in the API table"), "'%s'", ra.message);
        read_all_free(&ra);
        write_packed_case(path, gaps, ev, N, lit0 + 1, 0x40, 0, -1);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, "bad event encoding (event 0)"), "'%s'", ra.message);
        read_all_free(&ra);
    }
    /* EVENTS_GAPS: a duration's high part past 2^56 - 1 (the first dur_hi varint made 9 bytes long). */
    {
        uint8_t *enc;
        size_t size = synth_encode_gaps(ev, N, ev[0].t_start, &enc);
        uint32_t dir[3];
        memcpy(dir, enc, sizeof dir);
        const size_t hi0 = WSL_EVENTS_DIRECTORY_SIZE + N + dir[0] + N;
        CHECK(enc[hi0] == 0); /* 50 ticks: no high part */
        static const uint8_t long_hi[9] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}; /* 2^56 */
        uint8_t *bad = malloc(size + 8);
        memcpy(bad, enc, hi0);
        memcpy(bad + hi0, long_hi, sizeof long_hi);
        memcpy(bad + hi0 + 9, enc + hi0 + 1, size - hi0 - 1);
        dir[1] += 8;
        memcpy(bad, dir, sizeof dir);
        struct synth *s = synth_open(path, NULL);
        synth_file_header(s, NULL);
        struct wsl_process_info pi = {.pid = 1};
        synth_process(s, &pi, "h", "e", "r", 0, NULL);
        static const struct synth_row rows[] = {{"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH, 0},
                                                {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM, 0}};
        synth_api_rows(s, rows, 2);
        uint8_t *payload = malloc(sizeof(struct wsl_events_header) + size + 8);
        struct wsl_events_header eh = {.tid = 7, .count = N, .base_ticks = ev[0].t_start,
                                       .encoded_size = (uint32_t)(size + 8)};
        memcpy(payload, &eh, sizeof eh);
        memcpy(payload + sizeof eh, bad, size + 8);
        synth_chunk(s, WSL_CHUNK_EVENTS_GAPS, payload, sizeof eh + size + 8);
        synth_end(s, 0, N, 0, 1);
        synth_close(s);
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR && strstr(ra.message, "bad event encoding (event 0)"), "'%s'", ra.message);
        read_all_free(&ra);
        free(payload);
        free(bad);
        free(enc);
    }
    free(ev);
    return 0;
}
