/* One reading per trace (trace_reader.h, "the store"): a replay hands out what the file's reading
 * did, item by item; only whole readings within the budget are kept; the analysis of a
 * distributed run with NVTX steps opens each trace once. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "ddp_scenarios.h"
#include "rules.h"
#include "trace_synth.h"
#include "unit_test.h"

/* ---- everything a reading hands out, as bytes ---- */

struct blob {
    uint8_t *p;
    size_t n, cap;
};

static void put(struct blob *b, const void *data, size_t size)
{
    if (b->n + size > b->cap) {
        b->cap = (b->n + size) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, data, size);
    b->n += size;
}

static void put_str(struct blob *b, const char *s) { put(b, s ? s : "(null)", strlen(s ? s : "(null)") + 1); }
static void put_u64(struct blob *b, uint64_t v) { put(b, &v, sizeof v); }

/* Reads r to its end into b (items, then the end: result, message, warnings, clock, bytes) and closes it. */
static void serialize(struct wsl_reader *r, struct blob *b)
{
    struct wsl_item it;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        put_u64(b, it.type);
        switch (it.type) {
        case WSL_CHUNK_PROCESS:
            put(b, &it.process.info, sizeof it.process.info);
            put_str(b, it.process.host);
            put_str(b, it.process.exe);
            put_str(b, it.process.kernel_release);
            for (uint32_t i = 0; i < it.process.argc; i++)
                put_str(b, it.process.argv[i]);
            break;
        case WSL_CHUNK_API_TABLE:
            for (uint32_t i = 0; i < it.api_table.count; i++) {
                const struct wsl_api_entry *e = &it.api_table.entries[i];
                put_u64(b, (uint64_t)e->id << 32 | (uint64_t)e->category << 16 | e->flags << 8 | e->per_thread_stream);
                put_str(b, e->symbol);
                put_str(b, e->base);
            }
            break;
        case WSL_CHUNK_CLOCK:
            put(b, &it.clock, sizeof it.clock);
            break;
        case WSL_CHUNK_EVENTS:
            put_u64(b, (uint64_t)it.events.tid << 32 | it.events.count);
            put_u64(b, it.events.dropped << 1 | it.events.chunk_start);
            put(b, it.events.events, it.events.count * sizeof *it.events.events);
            break;
        case WSL_CHUNK_DRIVER:
            put(b, &it.driver.info, sizeof it.driver.info);
            put(b, it.driver.gpus, it.driver.info.devices * sizeof *it.driver.gpus);
            break;
        case WSL_CHUNK_END:
            put(b, &it.end, sizeof it.end);
            break;
        case WSL_CHUNK_STRING:
            put_u64(b, it.string.id);
            put(b, it.string.bytes, it.string.size);
            break;
        case WSL_CHUNK_MOUNTS:
            put_u64(b, it.mounts.table->count);
            for (size_t i = 0; i < it.mounts.table->count; i++) {
                put_str(b, it.mounts.table->mounts[i].mount_point);
                put_str(b, it.mounts.table->mounts[i].fstype);
                put_str(b, it.mounts.table->mounts[i].source);
            }
            break;
        case WSL_CHUNK_PATHS:
            put(b, it.paths.data, it.paths.size);
            break;
        case WSL_CHUNK_GPU_MEMORY:
            put(b, &it.gpu_memory, sizeof it.gpu_memory);
            break;
        case WSL_CHUNK_RANK:
            put(b, it.rank.data, it.rank.size);
            break;
        case WSL_CHUNK_EMULATION:
            put(b, it.emulation.ns, sizeof it.emulation.ns);
            put_str(b, it.emulation.spec);
            break;
        default:
            break;
        }
        put(b, wsl_reader_clock(r), sizeof(struct wsl_clock_map));
        put_u64(b, wsl_reader_bytes_in(r));
    }
    put_u64(b, res);
    put_str(b, wsl_reader_message(r));
    for (size_t i = 0; wsl_reader_warning(r, i); i++)
        put_str(b, wsl_reader_warning(r, i));
    put(b, wsl_reader_clock(r), sizeof(struct wsl_clock_map));
    put_u64(b, wsl_reader_bytes_in(r));
    put_u64(b, wsl_reader_bytes_out(r));
    wsl_reader_close(r);
}

/* The file read alone, read into a store, and replayed twice: the same bytes each time. */
static int replays_as_read(const char *path, enum wsl_read_result want)
{
    char err[WSL_READER_ERRLEN];
    struct blob file = {0}, rec = {0}, replay[2] = {{0}, {0}};
    struct wsl_reader *r = wsl_reader_open(path, err, sizeof err);
    CHECKF(r, "%s: %s", path, err);
    serialize(r, &file);
    struct wsl_trace_store *s = wsl_store_new();
    uint64_t opened = wsl_reader_files_opened();
    r = wsl_store_open_recording(s, path, err, sizeof err);
    CHECKF(r, "%s: %s", path, err);
    serialize(r, &rec);
    CHECKF(wsl_store_holds(s, path), "%s not kept", path);
    for (int k = 0; k < 2; k++) {
        r = wsl_store_open(s, path, err, sizeof err);
        CHECKF(r, "%s: %s", path, err);
        serialize(r, &replay[k]);
    }
    CHECKF(wsl_reader_files_opened() == opened + 1, "%s: opened %llu times", path,
           (unsigned long long)(wsl_reader_files_opened() - opened));
    CHECKF(file.n == rec.n && !memcmp(file.p, rec.p, file.n), "%s: the recorded reading differs", path);
    for (int k = 0; k < 2; k++)
        CHECKF(file.n == replay[k].n && !memcmp(file.p, replay[k].p, file.n), "%s: replay %d differs (%zu bytes, %zu)",
               path, k, replay[k].n, file.n);
    /* the result is the file's */
    r = wsl_store_open(s, path, err, sizeof err);
    struct wsl_item it;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM)
        ;
    CHECKF(res == want, "%s: result %d, want %d", path, res, want);
    wsl_reader_close(r);
    wsl_store_free(s);
    free(file.p);
    free(rec.p);
    free(replay[0].p);
    free(replay[1].p);
    return 0;
}

int test_store_replays_reading(void)
{
    char path[512], cut[512], rank[512];
    test_path(path, sizeof path, "store-tsc.trace.zst");
    struct gen_options o = {.threads = 4, .events_per_thread = 20000, .chunk_events = 3000, .clock_kind = WSL_CLOCK_TSC,
                            .ticks_per_ns = 2.5, .tick_offset = 123456789, .end = true, .extras = true, .seed = 11};
    struct gen_result g;
    gen_trace(path, &o, &g);
    gen_result_free(&g);
    if (replays_as_read(path, WSL_READ_END))
        return 1;
    /* cut short: the chunks before the cut, the message and the clock as far as it got */
    test_path(cut, sizeof cut, "store-cut.trace.zst");
    size_t size;
    uint8_t *data = synth_read_file(path, &size);
    synth_write_file(cut, data, size * 3 / 5);
    free(data);
    if (replays_as_read(cut, WSL_READ_TRUNCATED))
        return 1;
    /* a shim's trace: mounts, paths, strings (the demo's sample run) */
    if (replays_as_read(WSLSHIM_SAMPLE_TRACE, WSL_READ_END))
        return 1;
    /* a rank: RANK chunk, NVTX, GPU_KERNEL events, GPU_MEMORY */
    test_path(rank, sizeof rank, "store-rank.trace.zst");
    struct ddp_plan p = ddp_plan_default();
    p.nvtx = p.rank_env = true;
    ddp_write_rank(rank, &p, 1);
    return replays_as_read(rank, WSL_READ_END);
}

/* A trace of PROCESS, API_TABLE, one STRING chunk of `string_bytes` and END. */
static void string_trace(const char *path, size_t string_bytes)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 7, .clock_kind = WSL_CLOCK_MONOTONIC_NS, .start_mono_ns = 1000};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_api_table(s);
    uint8_t *payload = calloc(1, string_bytes);
    if (!payload)
        abort();
    synth_chunk(s, WSL_CHUNK_STRING, payload, string_bytes);
    free(payload);
    synth_end(s, 2000, 0, 0, 1);
    synth_close(s);
}

/* Kept: whole readings (END or TRUNCATED) within the budget. Not kept: a reading closed before its
 * end, one that failed, a trace past the per-trace cap, traces past the total: their later readings
 * read the file, with the same result. */
int test_store_keeps_whole_readings(void)
{
    char path[512], err[WSL_READER_ERRLEN];
    struct wsl_item it;
    size_t held0 = wsl_store_bytes_held();
    struct wsl_trace_store *s = wsl_store_new();

    test_path(path, sizeof path, "store-small.trace.zst");
    string_trace(path, 100);
    struct wsl_reader *r = wsl_store_open_recording(s, path, err, sizeof err);
    CHECK(r && wsl_reader_next(r, &it) == WSL_READ_ITEM && it.type == WSL_CHUNK_PROCESS);
    wsl_reader_close(r); /* before its end */
    CHECK(!wsl_store_holds(s, path) && wsl_store_bytes_held() == held0);

    char bad[512];
    test_path(bad, sizeof bad, "store-bad.trace.zst");
    struct synth *sy = synth_open(bad, NULL);
    synth_file_header(sy, NULL);
    struct wsl_process_info pi = {.pid = 8, .clock_kind = WSL_CLOCK_MONOTONIC_NS};
    synth_process(sy, &pi, "h", "e", "r", 0, NULL);
    synth_chunk_header(sy, WSL_CHUNK_CLOCK, 4); /* too small a CLOCK: corrupt after PROCESS */
    synth_bytes(sy, "abcd", 4);
    synth_close(sy);
    for (int k = 0; k < 2; k++) { /* the recording's reading, then the file's again */
        r = wsl_store_open_recording(s, bad, err, sizeof err);
        CHECK(r);
        enum wsl_read_result res;
        while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM)
            ;
        CHECKF(res == WSL_READ_ERROR && strstr(wsl_reader_message(r), "CLOCK payload too small"), "%d %s", res,
               wsl_reader_message(r));
        wsl_reader_close(r);
        CHECK(!wsl_store_holds(s, bad) && wsl_store_bytes_held() == held0);
    }

    /* past the per-trace cap */
    char big[512];
    test_path(big, sizeof big, "store-big.trace.zst");
    string_trace(big, WSL_STORE_MAX_TRACE_BYTES + 1);
    uint64_t opened = wsl_reader_files_opened();
    CHECK(wsl_store_probe(s, big, err, sizeof err) == 0);
    CHECK(!wsl_store_holds(s, big) && wsl_store_bytes_held() == held0);
    r = wsl_store_open(s, big, err, sizeof err);
    size_t strings = 0;
    while (wsl_reader_next(r, &it) == WSL_READ_ITEM)
        strings += it.type == WSL_CHUNK_STRING && it.string.size == WSL_STORE_MAX_TRACE_BYTES + 1 - 4;
    wsl_reader_close(r);
    CHECK(strings == 1 && wsl_reader_files_opened() == opened + 2);

    /* the total: traces under the per-trace cap are kept until they would pass it */
    size_t each = WSL_STORE_MAX_TRACE_BYTES / 2, kept = 0;
    for (unsigned i = 0; i < 2 * WSL_STORE_MAX_BYTES / each; i++) {
        char name[64];
        snprintf(name, sizeof name, "store-part%u.trace.zst", i);
        test_path(path, sizeof path, name);
        string_trace(path, each);
        CHECK(wsl_store_probe(s, path, err, sizeof err) == 0);
        kept += wsl_store_holds(s, path);
        CHECK(wsl_store_bytes_held() <= WSL_STORE_MAX_BYTES);
    }
    CHECKF(kept >= WSL_STORE_MAX_BYTES / each - 2 && kept < 2 * WSL_STORE_MAX_BYTES / each, "kept %zu", kept);
    wsl_store_free(s);
    CHECK(wsl_store_bytes_held() == held0);
    return 0;
}

/* A trace of PROCESS, API_TABLE, `count` STRING chunks of `each` bytes (each its own bytes) and END. */
static void strings_trace(const char *path, unsigned count, size_t each, uint8_t seed)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 9, .clock_kind = WSL_CLOCK_MONOTONIC_NS, .start_mono_ns = 1000};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_api_table(s);
    uint8_t *payload = malloc(each);
    if (!payload)
        abort();
    for (unsigned k = 0; k < count; k++) {
        for (size_t i = 0; i < each; i++)
            payload[i] = (uint8_t)(seed + k * 7 + i);
        synth_chunk(s, WSL_CHUNK_STRING, payload, each);
    }
    free(payload);
    synth_end(s, 2000, 0, 0, 1);
    synth_close(s);
}

/* Whether the store's replay of path hands out what the file's reading does. */
static bool replay_is_file(struct wsl_trace_store *s, const char *path)
{
    char err[WSL_READER_ERRLEN];
    struct blob file = {0}, replay = {0};
    struct wsl_reader *r = wsl_reader_open(path, err, sizeof err);
    if (!r)
        return false;
    serialize(r, &file);
    uint64_t opened = wsl_reader_files_opened();
    r = wsl_store_open(s, path, err, sizeof err);
    if (!r)
        return false;
    serialize(r, &replay);
    bool same = wsl_reader_files_opened() == opened && file.n == replay.n && !memcmp(file.p, replay.p, file.n);
    free(file.p);
    free(replay.p);
    return same;
}

/* The recordings share the store's arena (2 MiB chunks): one that is dropped (closed before its end,
 * or past the per-trace cap after several chunks) gives back its part and no more, so the kept ones
 * before it and after it replay as read; of two recordings at once, the second carves no arena (malloc's
 * blocks), and its drop leaves the first's blocks alone. Fails where a drop rolls the arena back too far (a later recording
 * overwrites a kept one) or two recordings carve the same memory. */
int test_store_arena_shared(void)
{
    char a[512], b[512], big[512], c[512], d[512], err[WSL_READER_ERRLEN];
    struct wsl_item it;
    size_t held0 = wsl_store_bytes_held();
    test_path(a, sizeof a, "store-arena-a.trace.zst");
    test_path(b, sizeof b, "store-arena-b.trace.zst");
    test_path(big, sizeof big, "store-arena-big.trace.zst");
    test_path(c, sizeof c, "store-arena-c.trace.zst");
    test_path(d, sizeof d, "store-arena-d.trace.zst");
    strings_trace(a, 30, 50000, 1);      /* 1.5 MB: into a second chunk once b's and c's follow */
    strings_trace(b, 10, 50000, 2);
    strings_trace(big, 200, 50000, 3);   /* 10 MB: past the per-trace cap, after four chunks */
    strings_trace(c, 30, 50000, 4);
    strings_trace(d, 30, 50000, 5);
    struct wsl_trace_store *s = wsl_store_new();
    CHECK(wsl_store_probe(s, a, err, sizeof err) == 0 && wsl_store_holds(s, a));
    struct wsl_reader *r = wsl_store_open_recording(s, b, err, sizeof err);
    for (int k = 0; k < 8; k++)
        CHECK(wsl_reader_next(r, &it) == WSL_READ_ITEM);
    wsl_reader_close(r); /* before its end: dropped */
    CHECK(!wsl_store_holds(s, b));
    CHECK(wsl_store_probe(s, big, err, sizeof err) == 0 && !wsl_store_holds(s, big));
    /* two at once: c takes the arena, d (opened second) malloc's blocks; d is dropped halfway, c
     * goes on to its end; then d read whole (the arena is free again) */
    struct wsl_reader *rc = wsl_store_open_recording(s, c, err, sizeof err);
    struct wsl_reader *rd = wsl_store_open_recording(s, d, err, sizeof err);
    CHECK(rc && rd);
    enum wsl_read_result resc = WSL_READ_ITEM;
    for (int k = 0; k < 16; k++)
        CHECK(wsl_reader_next(rd, &it) == WSL_READ_ITEM && wsl_reader_next(rc, &it) == WSL_READ_ITEM);
    wsl_reader_close(rd);
    while (resc == WSL_READ_ITEM)
        resc = wsl_reader_next(rc, &it);
    CHECK(resc == WSL_READ_END);
    wsl_reader_close(rc);
    CHECK(wsl_store_holds(s, c) && !wsl_store_holds(s, d));
    CHECK(wsl_store_probe(s, d, err, sizeof err) == 0 && wsl_store_holds(s, d));
    /* after the drops, a recording that takes the arena again (b, read whole this time) */
    CHECK(wsl_store_probe(s, b, err, sizeof err) == 0 && wsl_store_holds(s, b));
    /* one that begins inside a chunk and runs over several, in large chunks (a new arena chunk is
     * carved from its start) */
    char e[512];
    test_path(e, sizeof e, "store-arena-e.trace.zst");
    strings_trace(e, 36, 190000, 6);
    CHECK(wsl_store_probe(s, e, err, sizeof err) == 0 && wsl_store_holds(s, e));
    CHECKF(replay_is_file(s, e), "%s", e);
    CHECKF(replay_is_file(s, a), "%s", a);
    CHECKF(replay_is_file(s, b), "%s", b);
    CHECKF(replay_is_file(s, c), "%s", c);
    CHECKF(replay_is_file(s, d), "%s", d);
    wsl_store_free(s);
    CHECK(wsl_store_bytes_held() == held0);
    return 0;
}

/* A distributed run with NVTX steps (the step's process-wide figures, each rank's own run and
 * steady state): recorded or not, each trace file is opened once, by the run's own reading (the
 * step's figures are counted on it). */
int test_store_one_reading_per_trace(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.nvtx = p.rank_env = true;
    p.straggler = 1;
    p.delay_ns = 4000000;
    char paths[4][512];
    for (unsigned k = 0; k < p.ranks; k++) {
        char name[64];
        snprintf(name, sizeof name, "store-ddp%u.trace.zst", k);
        test_path(paths[k], sizeof paths[k], name);
        ddp_write_rank(paths[k], &p, k);
    }
    struct wsl_run run;
    char err[WSL_READER_ERRLEN];
    for (int record = 0; record < 2; record++) {
        uint64_t opened = wsl_reader_files_opened();
        wsl_run_init(&run);
        run.record = record;
        for (unsigned k = 0; k < p.ranks; k++)
            CHECKF(wsl_run_add_trace(&run, paths[k], err, sizeof err) == 0, "%s", err);
        wsl_run_finish(&run);
        uint64_t opens = wsl_reader_files_opened() - opened;
        CHECKF(opens == p.ranks, "record %d: %llu opens for %u traces", record,
               (unsigned long long)opens, p.ranks);
        if (!record)
            wsl_run_free(&run);
    }
    /* the passes after the first ran: the step's figures over every thread, the ranks' own runs */
    CHECK(run.nvtx.step >= 0 && run.nvtx.step_process_known && run.nvtx.step_process_steps == p.ranks * p.steps);
    CHECK(run.dist.active && run.dist.count == p.ranks);
    for (unsigned k = 0; k < p.ranks; k++)
        CHECK(run.dist.ranks[k].have_step && run.dist.ranks[k].steps == p.steps);
    wsl_run_free(&run);
    return 0;
}
