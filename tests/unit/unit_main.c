/*
 * Unit test runner: `unit_tests NAME` runs one test (ctest registers each as
 * unit.NAME), `unit_tests --list` names them, `unit_tests all` runs all.
 * Also the shared helpers: temporary files, random numbers, a generated
 * multi-thread trace and a reader that collects everything it hands out.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_synth.h"
#include "unit_test.h"

#define TESTS(X)                  \
    X(codec_roundtrip)            \
    X(codec_malformed)            \
    X(codec_end_before_start)     \
    X(packed_roundtrip)           \
    X(packed_malformed)           \
    X(gaps_malformed)             \
    X(gaps_run_same_bytes)        \
    X(tbits_roundtrip)            \
    X(tbits_codes)                \
    X(tbits_coders_agree)         \
    X(tbits_params_agree)         \
    X(tbits_golden)               \
    X(tbits_malformed)            \
    X(reader_formats_agree)       \
    X(reader_packed_malformed)    \
    X(reader_tbits_malformed)     \
    X(reader_tbits_carried)       \
    X(reader_isa_agree)           \
    X(reader_multithread)         \
    X(reader_batches)             \
    X(reader_codec_reset)         \
    X(reader_mem_source)          \
    X(reader_clock_tsc)           \
    X(reader_clock_few_samples)   \
    X(reader_clock_monotonic)     \
    X(reader_truncated_offsets)   \
    X(reader_truncated_raw)       \
    X(reader_corrupt_flips)       \
    X(reader_corrupt_structure)   \
    X(reader_raw_mutations)       \
    X(reader_foreign)             \
    X(reader_newer_version)       \
    X(reader_byte_order)          \
    X(reader_header_fields)       \
    X(stats_histogram)            \
    X(phase_gap_buckets)          \
    X(stats_merge)                \
    X(map_numbers)                \
    X(map_collisions)             \
    X(map_shared_hashes)          \
    X(map_strings)                \
    X(emulation_spec)             \
    X(json_escaping)              \
    X(json_fields)                \
    X(json_buffered)              \
    X(mounts_wsl2)                \
    X(mounts_virtiofs)            \
    X(mounts_wsl1)                \
    X(mounts_native)              \
    X(mounts_escapes)             \
    X(mounts_malformed)           \
    X(mounts_classify)            \
    X(mounts_fuzz)                \
    X(reader_io_chunks)           \
    X(reader_io_malformed)        \
    X(io_size_buckets)            \
    X(io_aggregation)             \
    X(io_path_folders)            \
    X(io_aggregation_tsc)         \
    X(io_two_processes)           \
    X(io_unknown_paths)           \
    X(io_paths_dropped_cut)       \
    X(io_mount_change)            \
    X(io_mutations)               \
    X(io_file_sizes)              \
    X(io_sampled_timing)          \
    X(io_folded_calls)            \
    X(io_folded_opens)            \
    X(io_folded_meta)             \
    X(io_path_records_bounded)    \
    X(io_rank_run_shared)         \
    X(io_lazy_names_windowed)     \
    X(io_path_scan)               \
    X(rule_cross_os_fires)        \
    X(rule_cross_os_silent)       \
    X(rule_small_files_fires)     \
    X(rule_small_files_silent)    \
    X(rules_framework)            \
    X(mem_size_buckets)           \
    X(mem_peak_exact)             \
    X(mem_threads_interleaved)    \
    X(mem_unknown_frees)          \
    X(mem_live_table)             \
    X(mem_two_processes)          \
    X(rule_vram_headroom_low)     \
    X(rule_vram_headroom_silent)  \
    X(rule_pinned_memory)         \
    X(kern_demangle)              \
    X(kern_names_threads)         \
    X(kern_two_processes)         \
    X(kern_no_names)              \
    X(kern_handles_bounded)       \
    X(kern_config_estimate)       \
    X(kern_config_unknown)        \
    X(kern_configs_bounded)       \
    X(kern_estimate_stderr)       \
    X(kern_pair_overhead)         \
    X(kern_estimate_nvtx)         \
    X(kern_estimate_chrome)       \
    X(kern_estimate_project)      \
    X(kern_estimate_fallbacks)    \
    X(nvtx_attribution)           \
    X(nvtx_bounded)               \
    X(nvtx_dropped_resync)        \
    X(nvtx_host_by_range)         \
    X(nvtx_step_list_between_others) \
    X(nvtx_step_figures_three_ways) \
    X(nvtx_step_tracking_launch_run) \
    X(nvtx_step_tracking_before_push) \
    X(kern_gpu_row_cache)         \
    X(nvtx_gpu_caches)            \
    X(phase_fast_path)            \
    X(event_runs_agree)           \
    X(event_runs_agree_demo)      \
    X(rule_sync_heavy)            \
    X(rule_sync_polls)            \
    X(rules_host_quiet)           \
    X(rule_alloc_churn)           \
    X(rule_small_transfers)       \
    X(rule_pageable_transfers)    \
    X(rules_host_wall_cap)        \
    X(host_ranges_hook)           \
    X(compare_causes)             \
    X(compare_never_more_than_difference) \
    X(host_classify_random)       \
    X(host_limits)                \
    X(host_random_invariants)     \
    X(host_sort_window_ties)      \
    X(ddp_straggler_host)         \
    X(ddp_straggler_io_steps)     \
    X(ddp_balanced)               \
    X(ddp_process_order)          \
    X(ddp_single_process)         \
    X(ddp_rank_run_one_pass)      \
    X(ddp_steady_one_reading)     \
    X(ddp_steady_rank_apart)      \
    X(ddp_coll_names)             \
    X(reader_rank_chunk)          \
    X(ddp_slurm_agent)            \
    X(rule_launch_bound_fires)    \
    X(rule_launch_bound_silent_compute) \
    X(rule_launch_bound_silent_graph) \
    X(rule_gpu_idle_fires)        \
    X(store_replays_reading)      \
    X(codec_reader_varint)        \
    X(phase_median)               \
    X(phase_best_period)          \
    X(store_keeps_whole_readings) \
    X(store_arena_shared)         \
    X(store_one_reading_per_trace)

#define DECLARE(name) int test_##name(void);
TESTS(DECLARE)

static const struct {
    const char *name;
    int (*fn)(void);
} tests[] = {
#define ENTRY(name) {#name, test_##name},
    TESTS(ENTRY)
};

/* ---- temporary files ---- */

static char tmpdir[256];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tmpdir(void)
{
    if (tmpdir[0])
        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void test_path(char *buf, size_t size, const char *name)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/wslshim-unit-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_tmpdir);
    }
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

/* ---- random numbers ---- */

static uint64_t rng_state;
void rng_seed(uint64_t seed) { rng_state = seed; }
uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
uint64_t rng_below(uint64_t n) { return n ? rng_next() % n : 0; }

/* ---- generated traces ---- */

static uint64_t gen_ticks(const struct gen_options *o, uint64_t ns)
{
    if (o->clock_kind != WSL_CLOCK_TSC)
        return ns;
    return o->tick_offset + (uint64_t)llround((double)ns * o->ticks_per_ns);
}

static void gen_push(struct gen_result *g, const struct wsl_event *ev, uint32_t tid, size_t *cap)
{
    if (g->count == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        g->events = realloc(g->events, *cap * sizeof *g->events);
        g->tids = realloc(g->tids, *cap * sizeof *g->tids);
        if (!g->events || !g->tids)
            abort();
    }
    g->events[g->count] = *ev;
    g->tids[g->count++] = tid;
}

void gen_trace(const char *path, const struct gen_options *o, struct gen_result *g)
{
    memset(g, 0, sizeof *g);
    rng_seed(o->seed ? o->seed : 1);
    const uint64_t start = 5000000000u;
    g->start_mono_ns = start;
    struct synth_options so = {.level = 1, .checksum = true, .flush_each_chunk = o->flush_each_chunk,
                               .v12_events = o->v12, .v14_events = o->v14,
                               .v19_events = o->v19};
    struct synth *s = synth_open(path, &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 4242;
    pi.ppid = 1;
    pi.flags = WSL_PROC_WSL2;
    pi.clock_kind = o->clock_kind;
    pi.start_ticks = gen_ticks(o, start);
    pi.start_mono_ns = start;
    pi.start_real_ns = 1700000000000000000u;
    const char *argv[] = {"python3", "train.py", "--epochs=1"};
    synth_process(s, &pi, "testhost", "/usr/bin/python3", "6.6.0-microsoft-standard-WSL2", 3, argv);
    synth_api_table(s);
    synth_clock(s, gen_ticks(o, start), start, pi.start_real_ns);
    if (o->extras) {
        struct wsl_gpu_info gpus[2];
        memset(gpus, 0, sizeof gpus);
        snprintf(gpus[0].name, sizeof gpus[0].name, "NVIDIA H200");
        gpus[0].total_mem = 150754820096u;
        gpus[0].cc_major = 9;
        snprintf(gpus[1].name, sizeof gpus[1].name, "NVIDIA RTX 4090");
        gpus[1].total_mem = 25393692672u;
        gpus[1].cc_major = 8;
        gpus[1].cc_minor = 9;
        synth_driver(s, 13000, 0, "/usr/lib/wsl/lib/libcuda.so.1", gpus, 2);
    }

    const uint16_t common[] = {
        synth_api_id("cuLaunchKernel"), synth_api_id("cuLaunchKernel_ptsz"), synth_api_id("cuMemAlloc_v2"),
        synth_api_id("cuMemFree_v2"), synth_api_id("cuStreamSynchronize"), synth_api_id("cuMemcpyHtoDAsync_v2"),
        synth_api_id("cuEventRecord"),
    };
    const uint64_t pool[] = {0, 1, 0x7f00dead0000u, 0x7f00dead1000u, UINT64_MAX, 1u << 20, 4096};
    unsigned threads = o->threads ? o->threads : 1;
    uint64_t *cursor = calloc(threads, sizeof *cursor);
    struct wsl_event *chunk = calloc(o->chunk_events ? o->chunk_events : 1, sizeof *chunk);
    size_t cap = 0;
    for (unsigned t = 0; t < threads; t++)
        cursor[t] = start + 1000 + t * 37;
    uint64_t latest = start, next_mark = start + 20000000u;
    unsigned rounds = (o->events_per_thread + o->chunk_events - 1) / o->chunk_events;
    for (unsigned k = 0; k < rounds; k++) {
        for (unsigned t = 0; t < threads; t++) {
            uint32_t n = 0;
            for (unsigned i = k * o->chunk_events; i < o->events_per_thread && n < o->chunk_events; i++) {
                struct wsl_event *ev = &chunk[n++];
                memset(ev, 0, sizeof *ev);
                uint64_t r = rng_below(100);
                uint64_t dur = r < 90 ? 1000 + rng_below(9000) : r < 99 ? 10000 + rng_below(990000)
                                                                        : rng_below(100000000);
                cursor[t] += rng_below(2000);
                ev->api = rng_below(10) ? common[rng_below(sizeof common / sizeof common[0])]
                                        : (uint16_t)rng_below(synth_api_count);
                ev->t_start = gen_ticks(o, cursor[t]);
                ev->t_end = gen_ticks(o, cursor[t] + dur);
                cursor[t] += dur;
                ev->result = rng_below(50) ? 0 : (int32_t[]){1, 2, 700, -5}[rng_below(4)];
                ev->stream = pool[rng_below(4)];
                for (int a = 0; a < 4; a++)
                    ev->a[a] = rng_below(3) ? pool[rng_below(7)] : rng_next();
                if (cursor[t] > latest)
                    latest = cursor[t];
                gen_push(g, ev, 100 + t, &cap);
            }
            uint64_t dropped = k % 4 == 1 ? k : 0;
            g->dropped += dropped;
            synth_events(s, 100 + t, dropped, chunk, n);
            g->chunks++;
        }
        if (o->clock_kind == WSL_CLOCK_TSC && latest >= next_mark) {
            synth_clock(s, gen_ticks(o, latest), latest, 0);
            next_mark = next_mark < start + 1000000000u ? start + 1000000000u : next_mark + 1000000000u;
        }
        if (k == 0 && o->extras) {
            synth_string(s, 1, "kernel_name_1");
            uint8_t unknown[100] = {1, 2, 3};
            synth_chunk(s, 99, unknown, sizeof unknown);
        }
    }
    if (o->extras) {
        synth_events(s, 100, 7, NULL, 0);
        g->dropped += 7;
        g->chunks++;
    }
    uint64_t end = latest + 1000;
    synth_clock(s, gen_ticks(o, end), end, 0);
    if (o->end)
        synth_end(s, gen_ticks(o, end), g->count, g->dropped, threads);
    synth_close(s);
    free(cursor);
    free(chunk);
}

void gen_result_free(struct gen_result *g)
{
    free(g->events);
    free(g->tids);
    memset(g, 0, sizeof *g);
}

/* ---- collecting a read ---- */

static void read_all_run(struct wsl_reader *r, struct read_all *ra)
{
    struct wsl_item it;
    while ((ra->result = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        ra->items[it.type < 16 ? it.type : 0]++;
        switch (it.type) {
        case WSL_CHUNK_PROCESS:
            ra->process = it.process.info;
            snprintf(ra->host, sizeof ra->host, "%s", it.process.host);
            snprintf(ra->exe, sizeof ra->exe, "%s", it.process.exe);
            snprintf(ra->kernel_release, sizeof ra->kernel_release, "%s", it.process.kernel_release);
            ra->argc = it.process.argc;
            if (it.process.argc > 1)
                snprintf(ra->argv1, sizeof ra->argv1, "%s", it.process.argv[1]);
            break;
        case WSL_CHUNK_API_TABLE:
            ra->api_entries += it.api_table.count;
            break;
        case WSL_CHUNK_EVENTS:
            ra->batches++;
            ra->chunk_starts += it.events.chunk_start;
            ra->dropped += it.events.dropped;
            for (uint32_t i = 0; i < it.events.count; i++) {
                if (ra->count == ra->cap) {
                    ra->cap = ra->cap ? ra->cap * 2 : 1024;
                    ra->events = realloc(ra->events, ra->cap * sizeof *ra->events);
                    ra->tids = realloc(ra->tids, ra->cap * sizeof *ra->tids);
                    if (!ra->events || !ra->tids)
                        abort();
                }
                ra->events[ra->count] = it.events.events[i];
                ra->tids[ra->count++] = it.events.tid;
            }
            break;
        case WSL_CHUNK_DRIVER:
            ra->driver = it.driver.info;
            if (it.driver.info.devices > 0)
                snprintf(ra->gpu0_name, sizeof ra->gpu0_name, "%s", it.driver.gpus[0].name);
            if (it.driver.info.devices > 1)
                ra->gpu1_mem = it.driver.gpus[1].total_mem;
            break;
        case WSL_CHUNK_END:
            ra->end = it.end;
            break;
        case WSL_CHUNK_STRING:
            if (it.string.id == 1 && it.string.size < sizeof ra->string1) {
                memcpy(ra->string1, it.string.bytes, it.string.size);
                ra->string1[it.string.size] = 0;
            }
            break;
        default:
            break;
        }
    }
    snprintf(ra->message, sizeof ra->message, "%s", wsl_reader_message(r));
    const struct wsl_api_entry *e = wsl_reader_api(r, 7);
    if (e) {
        snprintf(ra->api_symbol_7, sizeof ra->api_symbol_7, "%s", e->symbol);
        snprintf(ra->api_base_7, sizeof ra->api_base_7, "%s", e->base);
    }
    ra->clock = *wsl_reader_clock(r);
}

void read_all_file(const char *path, struct read_all *ra)
{
    memset(ra, 0, sizeof *ra);
    struct wsl_reader *r = wsl_reader_open(path, ra->open_error, sizeof ra->open_error);
    ra->opened = r != NULL;
    ra->result = WSL_READ_ERROR;
    if (!r)
        return;
    read_all_run(r, ra);
    wsl_reader_close(r);
}

void read_all_mem(const void *data, size_t size, struct read_all *ra)
{
    memset(ra, 0, sizeof *ra);
    struct wsl_reader *r = wsl_reader_open_mem(data, size, ra->open_error, sizeof ra->open_error);
    ra->opened = r != NULL;
    ra->result = WSL_READ_ERROR;
    if (!r)
        return;
    read_all_run(r, ra);
    wsl_reader_close(r);
}

void read_all_free(struct read_all *ra)
{
    free(ra->events);
    free(ra->tids);
    ra->events = NULL;
    ra->tids = NULL;
}

int event_diff(const struct wsl_event *a, const struct wsl_event *b, const char **what)
{
    static const char *const names[] = {"t_start", "t_end", "api", "result", "stream", "a0", "a1", "a2", "a3"};
    const bool differs[] = {a->t_start != b->t_start, a->t_end != b->t_end, a->api != b->api,
                            a->result != b->result, a->stream != b->stream, a->a[0] != b->a[0],
                            a->a[1] != b->a[1], a->a[2] != b->a[2], a->a[3] != b->a[3]};
    for (int i = 0; i < 9; i++)
        if (differs[i]) {
            if (what)
                *what = names[i];
            return i;
        }
    return -1;
}

int main(int argc, char **argv)
{
    const size_t count = sizeof tests / sizeof tests[0];
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < count; i++)
            puts(tests[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: unit_tests NAME|all|--list\n");
        return 2;
    }
    int failed = 0, ran = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        ran++;
        int rc = tests[i].fn();
        fprintf(stderr, "%s: %s\n", tests[i].name, rc ? "FAILED" : "ok");
        failed += rc != 0;
    }
    if (!ran) {
        fprintf(stderr, "unit_tests: no test named %s\n", argv[1]);
        return 2;
    }
    return failed ? 1 : 0;
}
