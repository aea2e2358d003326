/*
 * make_trace: writes one synthetic trace with a known workload, for the
 * report tests (check_report.py recomputes the expected figures from the
 * same formulas). Prints {"start_ns", "end_ns", "events"} of what it wrote.
 *
 *   make_trace OUT [--pid N] [--ppid N] [--start-ns NS] [--forked] [--native]
 *              [--tsc] [--no-end] [--no-driver] [--dropped N] [--major N]
 *              [--swap-order] [--truncate-tail BYTES] [--bad-chunk] [--exe PATH] [--v12] [--v14]
 *              [--v19]
 *
 * --v12 writes the events in the 1.2 layout (EVENTS chunks, zstd level 1) of older shims,
 * --v14 in the 1.4 one (EVENTS_PACKED chunks, file header 1.8) of shims before 1.9, --v19 in the
 * 1.9 one (EVENTS_GAPS chunks) of shims before 1.10; by default EVENTS_BITS (1.10).
 *
 * Workload (ns): thread 100 makes 6000 launches, launch i lasting
 * 2000 + (i*7919 % 10007)*3, every third one through cuLaunchKernel_ptsz, and
 * after every 60th launch a cuStreamSynchronize k lasting 1500 + 10k; thread
 * 101 makes 50 cuMemAlloc_v2 (i: 80000 + 100i, failing with 2 when i % 10 == 0),
 * 10 cuMemAlloc (70000) and 60 cuMemFree_v2 (3000). 500 ns between calls.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_synth.h"

#define CHUNK_EVENTS 500
#define TICK_OFFSET 1000000000u
#define TICKS_PER_NS 3u

struct thread_events {
    uint32_t tid;
    struct wsl_event *ev;
    size_t count, cap;
    uint64_t cursor;    /* ns */
};

static bool use_tsc, v12, v14, v19;

static uint64_t ticks(uint64_t ns) { return use_tsc ? TICK_OFFSET + ns * TICKS_PER_NS : ns; }

static void add_call(struct thread_events *t, const char *symbol, uint64_t dur_ns, int32_t result)
{
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->ev = realloc(t->ev, t->cap * sizeof *t->ev);
        if (!t->ev)
            abort();
    }
    struct wsl_event *ev = &t->ev[t->count++];
    memset(ev, 0, sizeof *ev);
    ev->api = synth_api_id(symbol);
    ev->t_start = ticks(t->cursor);
    ev->t_end = ticks(t->cursor + dur_ns);
    ev->result = result;
    ev->stream = 0x5000;
    ev->a[0] = 0x7f0000001000u + t->count % 7;
    t->cursor += dur_ns + 500;
}

static void usage(void)
{
    fprintf(stderr, "usage: make_trace OUT [options] (see make_trace.c)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *out = argv[1], *exe = "/usr/bin/python3";
    int32_t pid = 4242, ppid = 1;
    uint64_t start = 5000000000u, dropped = 0;
    long truncate_tail = 0;
    unsigned major = WSL_TRACE_VERSION_MAJOR;
    bool forked = false, native = false, end = true, driver = true, swap = false, bad_chunk = false;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--pid") && v)
            pid = atoi(argv[++i]);
        else if (!strcmp(a, "--ppid") && v)
            ppid = atoi(argv[++i]);
        else if (!strcmp(a, "--start-ns") && v)
            start = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--dropped") && v)
            dropped = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--major") && v)
            major = (unsigned)atoi(argv[++i]);
        else if (!strcmp(a, "--truncate-tail") && v)
            truncate_tail = atol(argv[++i]);
        else if (!strcmp(a, "--exe") && v)
            exe = argv[++i];
        else if (!strcmp(a, "--forked"))
            forked = true;
        else if (!strcmp(a, "--native"))
            native = true;
        else if (!strcmp(a, "--tsc"))
            use_tsc = true;
        else if (!strcmp(a, "--no-end"))
            end = false;
        else if (!strcmp(a, "--no-driver"))
            driver = false;
        else if (!strcmp(a, "--swap-order"))
            swap = true;
        else if (!strcmp(a, "--bad-chunk"))
            bad_chunk = true;
        else if (!strcmp(a, "--v12"))
            v12 = true;
        else if (!strcmp(a, "--v14"))
            v14 = true;
        else if (!strcmp(a, "--v19"))
            v19 = true;
        else
            usage();
    }

    struct thread_events th[2] = {{.tid = 100, .cursor = start + 1000}, {.tid = 101, .cursor = start + 1300}};
    for (unsigned i = 0, k = 0; i < 6000; i++) {
        uint64_t dur = 2000 + (uint64_t)(i * 7919u % 10007u) * 3;
        add_call(&th[0], i % 3 == 0 ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", dur, 0);
        if (i % 60 == 59) {
            add_call(&th[0], "cuStreamSynchronize", 1500 + 10 * (uint64_t)k, 0);
            k++;
        }
    }
    for (unsigned i = 0; i < 50; i++)
        add_call(&th[1], "cuMemAlloc_v2", 80000 + 100 * (uint64_t)i, i % 10 == 0 ? 2 : 0);
    for (unsigned i = 0; i < 10; i++)
        add_call(&th[1], "cuMemAlloc", 70000, 0);
    for (unsigned i = 0; i < 60; i++)
        add_call(&th[1], "cuMemFree_v2", 3000, 0);

    struct synth_options so = {.level = v12 ? 1 : 0, .checksum = true, .flush_each_chunk = true, .v12_events = v12,
                               .v14_events = v14, .v19_events = v19};
    struct synth *s = synth_open(out, &so);
    struct wsl_file_header h = synth_default_header();
    h.version_major = (uint16_t)major;
    if (v12)
        h.version_minor = 2;
    else if (v14)
        h.version_minor = 8;
    else if (v19)
        h.version_minor = 9;
    if (swap)
        h.byte_order = __builtin_bswap32(h.byte_order);
    synth_file_header(s, &h);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = ppid;
    pi.flags = (native ? 0 : WSL_PROC_WSL2) | (forked ? WSL_PROC_FORKED : 0);
    pi.clock_kind = use_tsc ? WSL_CLOCK_TSC : WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = ticks(start);
    pi.start_mono_ns = start;
    pi.start_real_ns = 1700000000000000000u;
    const char *args[] = {"python3", "train.py", "--name=\"quoted\"\tand tab"};
    synth_process(s, &pi, "testhost", exe, native ? "6.8.0-45-generic" : "5.15.167.4-microsoft-standard-WSL2", 3,
                  args);
    synth_api_table(s);
    if (bad_chunk)
        synth_chunk_header(s, WSL_CHUNK_EVENTS, 0xfffffff0u);
    synth_clock(s, ticks(start), start, pi.start_real_ns);
    if (driver) {
        struct wsl_gpu_info gpu;
        memset(&gpu, 0, sizeof gpu);
        snprintf(gpu.name, sizeof gpu.name, "NVIDIA H200");
        gpu.total_mem = 150754820096u;
        gpu.cc_major = 9;
        synth_driver(s, 13000, 0, "/usr/lib/wsl/lib/libcuda.so.1", &gpu, 1);
    }

    /* Chunks of both threads in turn, with clock samples at +20 ms and every second. */
    size_t pos[2] = {0, 0};
    uint64_t next_mark = start + 20000000u, latest = start, total = 0;
    bool first_chunk = true;
    while (pos[0] < th[0].count || pos[1] < th[1].count) {
        for (int t = 0; t < 2; t++) {
            size_t n = th[t].count - pos[t];
            if (n > CHUNK_EVENTS)
                n = CHUNK_EVENTS;
            if (!n)
                continue;
            synth_events(s, th[t].tid, first_chunk ? dropped : 0, th[t].ev + pos[t], (uint32_t)n);
            first_chunk = false;
            uint64_t last_end_ns = use_tsc ? (th[t].ev[pos[t] + n - 1].t_end - TICK_OFFSET) / TICKS_PER_NS
                                           : th[t].ev[pos[t] + n - 1].t_end;
            if (last_end_ns > latest)
                latest = last_end_ns;
            pos[t] += n;
            total += n;
        }
        if (latest >= next_mark) {
            synth_clock(s, ticks(latest), latest, 0);
            next_mark += next_mark == start + 20000000u ? 980000000u : 1000000000u;
        }
    }
    uint64_t end_ns = latest;
    if (end) {
        end_ns = latest + 500;
        synth_clock(s, ticks(end_ns), end_ns, 0);
        synth_end(s, ticks(end_ns), total, dropped, 2);
        synth_close(s);
    } else {
        synth_abandon(s); /* killed: no END, the zstd frame left open */
    }
    if (truncate_tail > 0)
        synth_truncate_file(out, synth_file_size(out) - truncate_tail);
    printf("{\"start_ns\": %llu, \"end_ns\": %llu, \"events\": %llu}\n", (unsigned long long)start,
           (unsigned long long)end_ns, (unsigned long long)total);
    free(th[0].ev);
    free(th[1].ev);
    return 0;
}
