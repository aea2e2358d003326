/*
 * Chrome trace event export (export_chrome.h). Per trace, two passes over
 * the file through the reader:
 *   scan   the process, the API table, the clock fit, kernel names (FUNC_NAME
 *          events and their PATHS strings), event counts and the last time;
 *   write  metadata, then every event as it is decoded, with the final clock
 *          fit of the scan; memory events go through a bounded min-heap that
 *          restores time order across threads for the memory counter.
 * A third, counting pass runs only when the run is over the limit and a
 * window was given (the window's count needs the final clock fit).
 * The scan is export_chrome_scan.c, the write and the count export_chrome_events.c
 * (export_chrome_internal.h between them); here, the gzip output and wsl_chrome_export.
 */
#define _GNU_SOURCE
#include "export_chrome.h"
#include "output_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "analysis.h"
#include "rules.h"
#include "io_analysis.h"
#include "json_writer.h"
#include "kernel_analysis.h"
#include "memory_analysis.h"
#include "trace_reader.h"
#include "u64_map.h"
#include "util.h"
#include "export_chrome_internal.h"

struct gz_cookie {
    FILE *dest;
    z_stream z;
    bool failed;
    unsigned char buf[1 << 16];
};

static bool gz_pump(struct gz_cookie *c, int flush)
{
    int zr;
    do {
        c->z.next_out = c->buf;
        c->z.avail_out = sizeof c->buf;
        zr = deflate(&c->z, flush);
        if (zr == Z_STREAM_ERROR)
            return false;
        size_t have = sizeof c->buf - c->z.avail_out;
        if (have && fwrite(c->buf, 1, have, c->dest) != have)
            return false;
    } while (c->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
    return true;
}

static ssize_t gz_write(void *cookie, const char *data, size_t n)
{
    struct gz_cookie *c = cookie;
    if (c->failed)
        return -1;
    c->z.next_in = (unsigned char *)(uintptr_t)data;
    c->z.avail_in = (uInt)n; /* stdio hands over at most its buffer */
    if (!gz_pump(c, Z_NO_FLUSH)) {
        c->failed = true;
        return -1;
    }
    return (ssize_t)n;
}

static int gz_close(void *cookie)
{
    struct gz_cookie *c = cookie;
    bool ok = !c->failed && gz_pump(c, Z_FINISH);
    deflateEnd(&c->z);
    free(c);
    return ok ? 0 : -1;
}

/* A FILE writing gzip into dest (not closed with it), or NULL. */
static FILE *gz_open(FILE *dest)
{
    struct gz_cookie *c = xcalloc(1, sizeof *c);
    c->dest = dest;
    if (deflateInit2(&c->z, 6, Z_DEFLATED, 15 + 16 /* gzip header */, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(c);
        return NULL;
    }
    cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
    FILE *f = fopencookie(c, "w", io);
    if (!f) {
        deflateEnd(&c->z);
        free(c);
    }
    return f;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The phases of each trace's process, as the report finds them (the run model). */
static void find_phases(struct chrome_trace **traces, size_t n, const struct wsl_trace_store *store,
                        struct wsl_chrome_result *res)
{
    struct wsl_run run;
    wsl_run_init(&run);
    run.solo = true;
    run.nested = true; /* only its phases are used */
    run.store = (struct wsl_trace_store *)store; /* not owned: only read */
    char err[WSL_READER_ERRLEN];
    for (size_t i = 0; i < n; i++)
        if (wsl_run_add_trace(&run, traces[i]->path, err, sizeof err) != 0) {
            chrome_add_result_warning(res, xasprintf("%s: phases not shown: %s", traces[i]->path, err));
            wsl_run_free(&run);
            return;
        }
    wsl_run_finish(&run);
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < run.proc_count; p++)
            if (run.procs[p].trace_path && !strcmp(run.procs[p].trace_path, traces[i]->path)) {
                traces[i]->phases = run.procs[p].phases;
                traces[i]->have_phases = true;
            }
    wsl_run_free(&run);
}

/* ---- the run ----------------------------------------------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const struct chrome_trace *x = *(const struct chrome_trace *const *)a, *y = *(const struct chrome_trace *const *)b;
    if ((x->rank >= 0) != (y->rank >= 0)) /* ranks first, by rank */
        return x->rank >= 0 ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

__attribute__((format(printf, 3, 4))) static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void format_count(char *buf, size_t size, uint64_t n)
{
    if (n >= 1000000)
        snprintf(buf, size, "%.2f M", (double)n / 1e6);
    else
        snprintf(buf, size, "%" PRIu64, n);
}

int wsl_chrome_export(char *const *paths, size_t count, const struct wsl_chrome_options *opt,
                      struct wsl_chrome_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    /* gzip output is written as a stream: a long run needs no cap unless one is asked for */
    res->gzip = strcmp(opt->output, "-") != 0 && ends_with(opt->output, ".gz");
    uint64_t max_events = opt->max_events ? opt->max_events : res->gzip ? UINT64_MAX : WSL_CHROME_MAX_EVENTS_DEFAULT;
    struct chrome_trace **traces = xcalloc(count ? count : 1, sizeof *traces);
    int rc = 0;
    FILE *out = NULL;

    /* pass 1 */
    for (size_t i = 0; i < count && rc == 0; i++) {
        traces[i] = xcalloc(1, sizeof *traces[i]);
        traces[i]->path = paths[i];
        traces[i]->rank = -1;
        char why[WSL_READER_ERRLEN];
        if (chrome_scan_trace(traces[i], opt, res, why, sizeof why) != 0)
            rc = set_err(err, errlen, "%s: %s", paths[i], why);
        wsl_progress_next_file(opt->progress, file_size(paths[i]));
    }
    size_t n = 0; /* the traces with a process, by start */
    for (size_t i = 0; rc == 0 && i < count; i++)
        if (traces[i]->have_process)
            traces[n++] = traces[i];
        else {
            chrome_trace_free(traces[i]);
            free(traces[i]);
        }
    if (rc != 0)
        n = count; /* free them all below (NULL past the one that failed) */
    if (rc == 0 && n)
        qsort(traces, n, sizeof *traces, by_start);
    if (rc == 0 && n)
        find_phases(traces, n, opt->store, res);

    struct exporter x = {.opt = opt, .res = res, .first = true, .to_ns = UINT64_MAX};
    uint64_t run_end = 0, total = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (i == 0 || traces[i]->start_ns < x.run_start_ns)
            x.run_start_ns = traces[i]->start_ns;
        if (traces[i]->end_ns > run_end)
            run_end = traces[i]->end_ns;
        total += traces[i]->events;
    }
    uint64_t span = run_end > x.run_start_ns ? run_end - x.run_start_ns : 0;
    if (opt->have_from)
        x.from_ns = opt->from_ns;
    if (opt->have_to)
        x.to_ns = opt->to_ns;
    if (rc == 0 && x.from_ns >= x.to_ns)
        rc = set_err(err, errlen, "--from %.6g s is not before --to %.6g s", (double)x.from_ns / 1e9,
                     (double)x.to_ns / 1e9);
    if (rc == 0 && opt->have_from && x.from_ns > span)
        rc = set_err(err, errlen, "--from %.6g s is past the end of the run (it spans %.3f s)",
                     (double)x.from_ns / 1e9, (double)span / 1e9);

    /* the limit */
    uint64_t events = total;
    bool windowed = opt->have_from || opt->have_to;
    if (rc == 0 && total > max_events && windowed) {
        events = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            char why[WSL_READER_ERRLEN];
            if (chrome_count_in_window(&x, traces[i], &events, why, sizeof why) != 0)
                rc = set_err(err, errlen, "%s: %s", traces[i]->path, why);
        }
    }
    if (rc == 0 && events > max_events) {
        char have[32], lim[32];
        format_count(have, sizeof have, events);
        format_count(lim, sizeof lim, max_events);
        double span_s = (double)span / 1e9, part = span_s * (double)max_events / (double)events;
        if (windowed)
            rc = set_err(err, errlen,
                         "the window holds %s events (calls and kernels), more than a browser can load (limit %s, "
                         "--max-events N); choose a shorter one: it covers %.3f s, about %.3g s would fit",
                         have, lim, (double)((x.to_ns < span ? x.to_ns : span) - x.from_ns) / 1e9,
                         (double)((x.to_ns < span ? x.to_ns : span) - x.from_ns) / 1e9 * (double)max_events /
                             (double)events);
        else
            rc = set_err(err, errlen,
                         "the run holds %s events (calls and kernels), more than a browser can load (limit %s); "
                         "export a window with --from S --to S (seconds from the start; the run spans %.3f s, "
                         "e.g. --from 0 --to %.3g), or raise --max-events N",
                         have, lim, span_s, part);
    }

    /* pass 2, into a temporary file renamed at the end (a regular file; anything else in place) */
    struct wsl_output o = {0};
    if (rc == 0 && wsl_output_open(&o, opt->output, err, errlen) != 0)
        rc = -1;
    out = o.f;
    if (rc == 0 && res->gzip) {
        out = gz_open(o.f);
        if (!out) {
            rc = set_err(err, errlen, "%s: cannot start gzip output", opt->output);
            char werr[512];
            wsl_output_close(&o, false, werr, sizeof werr);
        }
    }
    if (rc == 0) {
        static char buf[1 << 16];
        setvbuf(out, buf, _IOFBF, sizeof buf);
        x.out = out;
        fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"wslshim-report\","
                     "\"run_start_monotonic_ns\":%" PRIu64 ",\"window_from_ns\":%" PRIu64 ",\"window_to_ns\":",
                x.run_start_ns, x.from_ns);
        if (x.to_ns == UINT64_MAX)
            fputs("null", out);
        else
            fprintf(out, "%" PRIu64, x.to_ns);
        fputs("},\n\"traceEvents\":[\n", out);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            char why[WSL_READER_ERRLEN];
            if (chrome_write_trace(&x, traces[i], (int)i, why, sizeof why) != 0)
                rc = set_err(err, errlen, "%s: %s", traces[i]->path, why);
            wsl_progress_next_file(opt->progress, file_size(traces[i]->path));
        }
        fputs("\n]}\n", out);
        if (res->gzip) { /* the gzip stream ends here; write errors surface at the output's close too */
            bool bad = ferror(out) != 0;
            if (fclose(out) != 0 || bad) {
                if (rc == 0)
                    rc = set_err(err, errlen, "%s: write error: %s", opt->output, errno ? strerror(errno) : "gzip");
            }
        }
        char werr[512];
        if (wsl_output_close(&o, rc == 0, werr, sizeof werr) != 0 && rc == 0)
            rc = set_err(err, errlen, "%s", werr);
    }
    for (size_t i = 0; i < n; i++)
        if (traces[i]) {
            chrome_trace_free(traces[i]);
            free(traces[i]);
        }
    free(traces);
    return rc;
}

void wsl_chrome_result_free(struct wsl_chrome_result *r)
{
    for (size_t i = 0; i < r->warning_count; i++)
        free(r->warnings[i]);
    free(r->warnings);
    memset(r, 0, sizeof *r);
}
