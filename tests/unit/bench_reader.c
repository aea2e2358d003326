/*
 * bench_reader [EVENTS] [PATH] [v12]: writes a synthetic trace of EVENTS
 * (default 10M) launch-like events from 4 threads, then times reading it
 * back, five rounds: the reader alone (decompress + decode) and the report's
 * whole analysis. With "v12" the trace has the 1.2 layout (EVENTS chunks,
 * zstd level 1) that older shims wrote. EVENTS 0: read PATH as it is (any
 * trace), write nothing. Built, not run as a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "rules.h"
#include "trace_reader.h"
#include "trace_synth.h"

#define THREADS 4
#define CHUNK_EVENTS 16384

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252u;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000u;
    const char *path = argc > 2 ? argv[2] : "/tmp/wslshim-bench.trace.zst";
    const struct synth_options opt = {.checksum = true, .v12_events = argc > 3 && !strcmp(argv[3], "v12")};

    uint64_t written = 0;
    if (total == 0)
        goto read;
    double t0 = now();
    struct synth *s = synth_open(path, &opt);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1, .clock_kind = WSL_CLOCK_MONOTONIC_NS, .start_mono_ns = 1000};
    synth_process(s, &pi, "bench", "/bin/bench", "6.8", 0, NULL);
    synth_api_table(s);
    const uint16_t launch = synth_api_id("cuLaunchKernel"), launch_ptsz = synth_api_id("cuLaunchKernel_ptsz"),
                   sync = synth_api_id("cuStreamSynchronize"), copy = synth_api_id("cuMemcpyHtoDAsync_v2");
    struct wsl_event *ev = calloc(CHUNK_EVENTS, sizeof *ev);
    uint64_t cursor[THREADS] = {1000, 1100, 1200, 1300};
    const uint64_t functions[] = {0x5555000010a0u, 0x5555000020b0u, 0x5555000030c0u, 0x5555000040d0u};
    while (written < total) {
        for (unsigned t = 0; t < THREADS && written < total; t++) {
            uint32_t n = total - written < CHUNK_EVENTS ? (uint32_t)(total - written) : CHUNK_EVENTS;
            for (uint32_t i = 0; i < n; i++) {
                uint64_t r = next_random();
                struct wsl_event *e = &ev[i];
                memset(e, 0, sizeof *e);
                e->api = r % 50 == 0 ? sync : r % 37 == 0 ? copy : r % 2 ? launch : launch_ptsz;
                cursor[t] += 300 + (r >> 8) % 1500;
                e->t_start = cursor[t];
                cursor[t] += 3000 + (r >> 20) % 4000;
                e->t_end = cursor[t];
                e->stream = 0x7000 + t;
                e->a[0] = functions[(r >> 32) % 4];
                e->a[1] = (uint64_t)1024 | (uint64_t)1 << 32;
                e->a[2] = (uint64_t)256 << 16;
                if (e->api == copy) {
                    e->a[0] = 0x7f0000000000u + ((r >> 40) << 12);
                    e->a[2] = 4096;
                }
            }
            synth_events(s, 100 + t, 0, ev, n);
            written += n;
        }
        synth_flush(s);
    }
    synth_end(s, cursor[0], written, 0, THREADS);
    synth_close(s);
    free(ev);
    double t1 = now();
    printf("wrote %llu events to %s in %.2f s (%.1f M events/s encode+compress)\n", (unsigned long long)written,
           path, t1 - t0, (double)written / (t1 - t0) / 1e6);

read:
    for (int round = 0; round < 5; round++) {
        char err[WSL_READER_ERRLEN];
        double a = now();
        struct wsl_reader *r = wsl_reader_open(path, err, sizeof err);
        if (!r) {
            fprintf(stderr, "bench_reader: %s\n", err);
            return 1;
        }
        struct wsl_item it;
        uint64_t events = 0, checksum = 0;
        while (wsl_reader_next(r, &it) == WSL_READ_ITEM)
            if (it.type == WSL_CHUNK_EVENTS) {
                events += it.events.count;
                for (uint32_t i = 0; i < it.events.count; i++)
                    checksum += it.events.events[i].t_end;
            }
        double b = now();
        printf("reader:   %llu events in %.3f s = %.1f M events/s (%.0f MB/s decompressed, %.2f compressed "
               "bytes/event)\n",
               (unsigned long long)events, b - a, (double)events / (b - a) / 1e6,
               (double)wsl_reader_bytes_out(r) / (b - a) / 1e6, (double)wsl_reader_bytes_in(r) / (double)events);
        wsl_reader_close(r);
        if ((total && events != written) || !checksum)
            return 1;

        struct wsl_run run;
        wsl_run_init(&run);
        a = now();
        if (wsl_run_add_trace(&run, path, err, sizeof err) != 0) {
            fprintf(stderr, "bench_reader: %s\n", err);
            return 1;
        }
        wsl_run_finish(&run);
        b = now();
        printf("analysis: %llu events in %.3f s = %.1f M events/s\n", (unsigned long long)run.procs[0].events,
               b - a, (double)run.procs[0].events / (b - a) / 1e6);
        wsl_run_free(&run);
    }
    return 0;
}
