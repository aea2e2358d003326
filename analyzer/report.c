/*
 * wslshim-report: reads the traces of one run and prints a report.
 * Exit status: 0 on success (whatever the traces show), 2 for a usage error
 * or unreadable/invalid input, always with exactly one line on stderr.
 * Warnings (a trace cut short, dropped events) go to stderr only when the
 * report succeeds, so a failing run says one thing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "export_chrome.h"
#include "progress.h"
#include "report_html.h"
#include "report_output.h"
#include "trace_reader.h"
#include "util.h"

#define PROG "wslshim-report"
#define TRACE_SUFFIX ".trace.zst"

static const char usage[] =
    "usage: " PROG " [--json] [-o FILE] [--html FILE] [--chrome FILE] TRACE...\n"
    "\n"
    "Reads wslshim traces (the processes of one run, merged on one clock) and\n"
    "reports host time spent in each CUDA driver API, the file I/O (which\n"
    "filesystems, Windows drives, folders, read sizes) and the bottlenecks found.\n"
    "\n"
    "  TRACE           a .trace.zst file, or a directory: every *" TRACE_SUFFIX "(.N) in it\n"
    "  --json          the JSON report instead of text\n"
    "  -o, --output FILE  write the report to FILE instead of stdout\n"
    "  --html FILE     write the report as one self-contained HTML page (charts\n"
    "                  inline, nothing loaded from the network); FILE '-' is stdout\n"
    "  --chrome FILE   write the run's timeline instead, as Chrome trace event JSON\n"
    "                  (ui.perfetto.dev, chrome://tracing); FILE '-' is stdout\n"
    "  --from S, --to S   with --chrome: only the events that start in this window,\n"
    "                  in seconds from the run's start\n"
    "  --max-events N  with --chrome: refuse a window of more recorded events than\n"
    "                  this (default 2000000, about what a browser can load)\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 success, 2 usage error or unreadable/invalid input.\n";

__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

struct trace_list {
    char **paths;
    dev_t *devs;
    ino_t *inos;
    size_t count;
};

static void trace_list_add(struct trace_list *l, const char *path, const struct stat *st)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->devs[i] == st->st_dev && l->inos[i] == st->st_ino)
            return; /* the same file named twice (e.g. a file and its directory) */
    l->paths = xrealloc(l->paths, (l->count + 1) * sizeof *l->paths);
    l->devs = xrealloc(l->devs, (l->count + 1) * sizeof *l->devs);
    l->inos = xrealloc(l->inos, (l->count + 1) * sizeof *l->inos);
    l->paths[l->count] = xstrdup(path);
    l->devs[l->count] = st->st_dev;
    l->inos[l->count] = st->st_ino;
    l->count++;
}

/* NAME.trace.zst, or NAME.trace.zst.N: the shim adds .N when the name is
 * taken (the image a traced process exec'd keeps its pid). */
static bool has_trace_suffix(const char *name)
{
    size_t n = strlen(name), s = strlen(TRACE_SUFFIX);
    const char *end = name + n;
    while (end > name && end[-1] >= '0' && end[-1] <= '9')
        end--;
    if (end < name + n && end > name && end[-1] == '.')
        n = (size_t)(end - 1 - name);
    return n > s && strncmp(name + n - s, TRACE_SUFFIX, s) == 0;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds every *.trace.zst in dir, in name order. */
static void add_directory(struct trace_list *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fail("%s: cannot read directory: %s", dir, strerror(errno));
    char **names = NULL;
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (has_trace_suffix(e->d_name)) {
            names = xrealloc(names, (count + 1) * sizeof *names);
            names[count++] = xstrdup(e->d_name);
        }
    closedir(d);
    if (count)
        qsort(names, count, sizeof *names, compare_strings);
    size_t added = 0;
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(dir);
        char *path = xasprintf("%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            trace_list_add(l, path, &st);
            added++;
        }
        free(path);
        free(names[i]);
    }
    free(names);
    if (added == 0)
        fail("%s: no *" TRACE_SUFFIX " traces in this directory", dir);
}

static void add_argument(struct trace_list *l, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        fail("%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        add_directory(l, path);
    else
        trace_list_add(l, path, &st);
}

/* A non-negative number of seconds (decimals allowed) as ns. */
static bool parse_seconds(const char *v, uint64_t *ns)
{
    char *end;
    errno = 0;
    double s = strtod(v, &end);
    if (end == v || *end || errno || !(s >= 0) || s > 1e9)
        return false;
    *ns = (uint64_t)(s * 1e9 + 0.5);
    return true;
}

static bool parse_count(const char *v, uint64_t *n)
{
    char *end;
    errno = 0;
    unsigned long long c = strtoull(v, &end, 10);
    if (end == v || *end || errno || c == 0 || v[0] == '-')
        return false;
    *n = c;
    return true;
}

static void free_trace_list(struct trace_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->paths[i]);
    free(l->paths);
    free(l->devs);
    free(l->inos);
}

/* --chrome: the timeline instead of the report. */
static int export_chrome(struct trace_list *traces, const struct wsl_chrome_options *opt)
{
    struct wsl_chrome_result res;
    char err[512];
    int rc = wsl_chrome_export(traces->paths, traces->count, opt, &res, err, sizeof err);
    wsl_progress_end(opt->progress);
    if (rc != 0)
        fail("%s", err);
    for (size_t i = 0; i < res.warning_count; i++)
        fprintf(stderr, PROG ": warning: %s\n", res.warnings[i]);
    if (strcmp(opt->output, "-") != 0)
        fprintf(stderr, PROG ": wrote %s: %zu process%s, %llu calls and kernels (%llu GPU kernels, %llu flows, "
                        "%llu counter samples)\n", opt->output, res.processes, res.processes == 1 ? "" : "es",
                (unsigned long long)res.slices, (unsigned long long)res.kernels, (unsigned long long)res.flows,
                (unsigned long long)res.counters);
    wsl_chrome_result_free(&res);
    free_trace_list(traces);
    return 0;
}

/* --html: the second pass over the traces (the timeline), then the page,
 * into a temporary file renamed at the end: a failure leaves no file. */
static int write_html(struct wsl_run *run, struct wsl_progress *progress, struct trace_list *traces,
                      const char *path)
{
    struct wsl_html_series *series = xmalloc(sizeof *series);
    char err[512];
    int rc = wsl_html_series_build(run, series, progress, err, sizeof err);
    wsl_progress_end(progress);
    if (rc != 0)
        fail("%s", err);
    bool to_stdout = strcmp(path, "-") == 0;
    char *tmp = to_stdout ? NULL : xasprintf("%s.tmp-%d", path, (int)getpid());
    FILE *out = to_stdout ? stdout : fopen(tmp, "w");
    if (!out)
        fail("%s: cannot write: %s", path, strerror(errno));
    struct wsl_html_run page = {.label = NULL, .run = run, .series = series};
    wsl_html_write(out, &page, 1, NULL);
    bool bad = fflush(out) != 0 || ferror(out);
    int saved = errno;
    if (!to_stdout) {
        if (fclose(out) != 0 && !bad) {
            bad = true;
            saved = errno;
        }
        if (!bad && rename(tmp, path) != 0) {
            saved = errno;
            unlink(tmp);
            fail("%s: cannot write: %s", path, strerror(saved));
        }
        if (bad)
            unlink(tmp);
    }
    if (bad)
        fail("%s: write error: %s", to_stdout ? "stdout" : path, strerror(saved));
    for (size_t i = 0; i < run->warning_count; i++)
        fprintf(stderr, PROG ": warning: %s\n", run->warnings[i]);
    if (!to_stdout)
        fprintf(stderr, PROG ": wrote %s: %zu process%s, %zu bottleneck%s\n", path, run->proc_count,
                run->proc_count == 1 ? "" : "es", run->finding_count, run->finding_count == 1 ? "" : "s");
    free(tmp);
    free(series);
    wsl_run_free(run);
    free_trace_list(traces);
    return 0;
}

int main(int argc, char **argv)
{
    bool json = false, options_done = false;
    const char *output = NULL, *chrome = NULL, *html = NULL;
    struct wsl_chrome_options chrome_opt = {0};
    const char *window_option = NULL;
    struct trace_list traces = {0};
    /* Trace arguments are gathered at the front of argv (there is always room). */
    char **args = argv + 1;
    size_t nargs = 0;

    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == 0) {
            args[nargs++] = a;
        } else if (strcmp(a, "--") == 0) {
            options_done = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                fail("option '%s' needs a file name (see --help)", a);
            output = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else if (strncmp(a, "-o", 2) == 0) {
            output = a + 2;
        } else if (strcmp(a, "--chrome") == 0 || strncmp(a, "--chrome=", 9) == 0) {
            chrome = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!chrome || !*chrome)
                fail("option '--chrome' needs a file name (see --help)");
        } else if (strcmp(a, "--html") == 0 || strncmp(a, "--html=", 7) == 0) {
            html = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!html || !*html)
                fail("option '--html' needs a file name (see --help)");
        } else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0 || strcmp(a, "--max-events") == 0) {
            if (i + 1 >= argc)
                fail("option '%s' needs a value (see --help)", a);
            const char *v = argv[++i];
            window_option = a;
            if (strcmp(a, "--max-events") == 0) {
                if (!parse_count(v, &chrome_opt.max_events))
                    fail("--max-events '%s': expected a count of events (1 or more)", v);
            } else if (strcmp(a, "--html") == 0 || strncmp(a, "--html=", 7) == 0) {
            html = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!html || !*html)
                fail("option '--html' needs a file name (see --help)");
        } else if (strcmp(a, "--from") == 0) {
                if (!parse_seconds(v, &chrome_opt.from_ns))
                    fail("--from '%s': expected seconds from the run's start (0 or more)", v);
                chrome_opt.have_from = true;
            } else {
                if (!parse_seconds(v, &chrome_opt.to_ns))
                    fail("--to '%s': expected seconds from the run's start (0 or more)", v);
                chrome_opt.have_to = true;
            }
        } else if (strcmp(a, "--compare") == 0 || strcmp(a, "--project") == 0) {
            fail("option '%s' is not implemented yet (see --help)", a);
        } else {
            fail("unknown option '%s' (see --help)", a);
        }
    }
    if (nargs == 0)
        fail("no trace given (see --help)");
    if (output && !*output)
        fail("option '-o' needs a file name (see --help)");
    if (window_option && !chrome)
        fail("option '%s' goes with --chrome (see --help)", window_option);
    if (chrome && html)
        fail("--chrome and --html write different files: give one of them");
    if (html && (json || output))
        fail("--html writes the report to its FILE: leave out %s", json ? "--json" : "-o");
    if (chrome && (json || output))
        fail("--chrome writes the timeline instead of the report: leave out %s", json ? "--json" : "-o");
    for (size_t i = 0; i < nargs; i++)
        add_argument(&traces, args[i]);
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < traces.count; i++) {
        struct stat st;
        if (stat(traces.paths[i], &st) == 0)
            total_bytes += (uint64_t)st.st_size;
    }
    struct wsl_progress progress;
    bool force_progress = getenv("WSLSHIM_PROGRESS") && strcmp(getenv("WSLSHIM_PROGRESS"), "1") == 0;
    if (chrome) {
        /* the scan and the write each read every trace (a window count may read them once more) */
        wsl_progress_begin(&progress, "exporting", 2 * total_bytes, force_progress);
        chrome_opt.output = chrome;
        chrome_opt.progress = &progress;
        return export_chrome(&traces, &chrome_opt);
    }

    struct wsl_run run;
    wsl_run_init(&run);
    /* --html reads every trace once more, for the timeline */
    wsl_progress_begin(&progress, "reading traces", html ? 2 * total_bytes : total_bytes, force_progress);
    run.progress = &progress;
    for (size_t i = 0; i < traces.count; i++) {
        char err[WSL_READER_ERRLEN];
        if (wsl_run_add_trace(&run, traces.paths[i], err, sizeof err) != 0) {
            wsl_progress_end(&progress);
            fail("%s: %s", traces.paths[i], err);
        }
        struct stat st;
        wsl_progress_next_file(&progress, stat(traces.paths[i], &st) == 0 ? (uint64_t)st.st_size : 0);
    }
    run.progress = NULL;
    wsl_run_finish(&run);
    if (html)
        return write_html(&run, &progress, &traces, html);
    wsl_progress_end(&progress);

    /* Written whole to a temporary stream first: a failed write leaves no half report. */
    char *text = NULL;
    size_t text_size = 0;
    FILE *mem = open_memstream(&text, &text_size);
    if (!mem)
        fail("out of memory");
    if (json)
        report_write_json(&run, mem);
    else
        report_write_text(&run, mem);
    if (fclose(mem) != 0)
        fail("out of memory");

    FILE *out = stdout;
    if (output && !(out = fopen(output, "w")))
        fail("%s: cannot write: %s", output, strerror(errno));
    for (size_t i = 0; i < run.warning_count; i++)
        fprintf(stderr, PROG ": warning: %s\n", run.warnings[i]);
    fwrite(text, 1, text_size, out);
    if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0))
        fail("%s: write error: %s", output ? output : "stdout", strerror(errno));

    free(text);
    wsl_run_free(&run);
    for (size_t i = 0; i < traces.count; i++)
        free(traces.paths[i]);
    free(traces.paths);
    free(traces.devs);
    free(traces.inos);
    return 0;
}
