/*
 * The run as a timeline: Chrome trace event JSON (the "JSON Object Format" of
 * the Trace Event Format; ui.perfetto.dev and chrome://tracing open it).
 *
 *   - a process per traced pid (process_name: its command line, sorted by
 *     start), a track per thread (thread_name; the main thread first);
 *   - a "phases" track per process (start-up, warm-up, steady state,
 *     teardown: the run model's phases, as the report finds them);
 *   - every recorded CUDA driver call and file I/O call as a complete event
 *     (ph X) named by its API, with the fields that matter in args (stream,
 *     bytes, path, kernel name of launches, result when it failed); a file
 *     call on a descriptor the shim never saw opened says "fd N (not seen
 *     opened: pipe, socket or inherited)" as its path;
 *   - NVTX push/pop ranges as named B/E slices on their thread (nested as
 *     pushed; args.domain), start/end ranges as async b/e slices, marks as
 *     instants; ranges open at the end of a trace end there;
 *   - GPU kernels (GPU_KERNEL events) on one track per stream
 *     ("GPU stream 0x..."; adjusted for the event pairs as the report's
 *     estimate where the trace has launch configurations: args.measured_ns,
 *     args.pair_adjust_ns), each tied to its launch by a flow (ph s on the
 *     launch's thread, ph f with bp "e" on the kernel, cat "ac2g" as
 *     PyTorch's profiler writes them);
 *   - every launch that was not timed as an estimated kernel (cat
 *     "kernel_estimated", args.estimated true) on its stream's
 *     "(estimated, not timed)" track: after its launch returned and after the
 *     previous estimate on the stream, lasting the report's estimate
 *     (wsl_kern_estimate: its configuration's mean less the pair overhead)
 *     where the trace has launch configurations, else the mean timed
 *     duration of the same function, else of every timed kernel of the
 *     process (none when nothing was timed); also tied to its launch by a flow;
 *   - counters (ph C): device memory in use (allocations minus frees,
 *     replayed in time order) and file bytes read per 100 ms.
 * Times are microseconds from the run's start (the earliest process start),
 * with the nanoseconds as three decimals; all processes share the
 * CLOCK_MONOTONIC clock the analyzer maps every trace to.
 *
 * The output is streamed: each trace is read twice (names, the clock fit and
 * the timed launches first, then the events), nothing holds the whole trace;
 * the run model (for the phases) reads them once more. An output name ending
 * in ".gz" is written as a gzip stream (zlib), which Perfetto opens; such an
 * export has no event cap unless max_events is given. Otherwise a run with
 * more recorded events (calls and kernels) than max_events
 * (WSL_CHROME_MAX_EVENTS_DEFAULT when 0) in the window is refused with the
 * numbers and a suggested window, before anything is written.
 */
#ifndef WSLSHIM_EXPORT_CHROME_H
#define WSLSHIM_EXPORT_CHROME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "progress.h"

#define WSL_CHROME_MAX_EVENTS_DEFAULT 2000000u
#define WSL_CHROME_IO_BIN_NS 100000000ull          /* the I/O counter's bin: 100 ms */

struct wsl_chrome_options {
    const char *output;         /* the file to write ("-": stdout) */
    uint64_t max_events;        /* 0: WSL_CHROME_MAX_EVENTS_DEFAULT (no cap for a .gz output) */
    bool have_from, have_to;
    uint64_t from_ns, to_ns;    /* the window, ns from the run's start: [from, to) */
    struct wsl_progress *progress; /* may be NULL */
    const struct wsl_trace_store *store; /* the traces' recordings (trace_reader.h); NULL: read the files */
};

struct wsl_chrome_result {
    uint64_t slices;            /* X events written: calls and GPU kernels */
    uint64_t kernels, flows, counters;
    uint64_t kernels_estimated;  /* launches not timed, placed by the model (args.estimated) */
    uint64_t kernels_unplaced;   /* launches past the timed-launch memory: not estimated */
    uint64_t nvtx_ranges;        /* B and b events */
    uint64_t phases;             /* phase slices */
    bool gzip;                   /* the output was gzip (FILE ends in .gz) */
    size_t processes;
    char **warnings;            /* "<trace>: <what>" (a trace cut short...) */
    size_t warning_count;
};

/* Exports the traces (files, already expanded from directories). Returns 0,
 * or -1 with one line in err: an unreadable or invalid trace, a run over the
 * limit, a write error. On failure no output file is left behind. */
int wsl_chrome_export(char *const *traces, size_t count, const struct wsl_chrome_options *opt,
                      struct wsl_chrome_result *result, char *err, size_t errlen);

void wsl_chrome_result_free(struct wsl_chrome_result *r);

#endif /* WSLSHIM_EXPORT_CHROME_H */
