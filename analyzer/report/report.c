/*
 * wslshim-report: reads the traces of one run and prints a report.
 * Exit status: 0 on success (whatever the traces show), 2 for a usage error
 * or unreadable/invalid input, always with exactly one line on stderr.
 * Warnings (a trace cut short, dropped events) go to stderr only when the
 * report succeeds, so a failing run says one thing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "compare.h"
#include "projection.h"
#include "report_html.h"
#include "export_chrome.h"
#include "progress.h"
#include "output_file.h"
#include "report_output.h"
#include "trace_reader.h"
#include "util.h"
#include "export_sqlite.h"
#include "wslshim/cli.h"

#define PROG "wslshim-report"
#define TRACE_SUFFIX ".trace.zst"

static const char usage[] =
    "usage: " PROG " [--json | --html FILE | --chrome FILE | --sqlite FILE] [-o FILE] [--color=WHEN]\n"
    "                      [--project TARGET] TRACE...\n"
    "       " PROG " [--json | --html FILE] [-o FILE] --compare A B\n"
    "       " PROG " --version | --help\n"
    "\n"
    "Reads wslshim traces (the processes of one run, merged on one clock) and\n"
    "reports host time spent in each CUDA driver API, the file I/O (which\n"
    "filesystems, Windows drives, folders, read sizes) and the bottlenecks found.\n"
    "\n"
    "  TRACE           a .trace.zst file, or a directory: every *" TRACE_SUFFIX "(.N) in it\n"
    "  --json          the JSON report instead of text (docs/report-schema.json)\n"
    "  --compare A B   compare run B with the baseline run A (each a trace or a\n"
    "                  directory of traces): per-API counts and times, I/O per\n"
    "                  filesystem, bottlenecks, and the wall-time difference split\n"
    "                  into causes; with --json, B's report with \"compare\" added\n"
    "  --color[=WHEN], --colour[=WHEN]  ANSI colours in the text report: auto\n"
    "                  (default: when stdout is a terminal, NO_COLOR is unset and\n"
    "                  TERM is not dumb), always (also --color alone), never\n"
    "  -o, --output FILE  write the report to FILE instead of stdout\n"
    "  --html FILE     write the report as one self-contained HTML page (charts\n"
    "                  inline, nothing loaded from the network); FILE '-' is stdout;\n"
    "                  with --compare, the two runs side by side\n"
    "  --chrome FILE   write the run's timeline instead, as Chrome trace event JSON\n"
    "                  (ui.perfetto.dev, chrome://tracing); FILE '-' is stdout\n"
    "  --from S, --to S   with --chrome: only the events that start in this window,\n"
    "                  in seconds from the run's start\n"
    "  --gpu-pair-correction[=MODE]  how the GPU time estimates adjust timed launches\n"
    "                  for where their kernels ran: fixed[:IDLE_NS,QUEUED_NS] (the\n"
    "                  default: IDLE_NS onto each launch timed idle, QUEUED_NS off each\n"
    "                  one timed queued; 800,2600 as measured on an H100 host), or by\n"
    "                  D, how much longer queued timed launches measure than idle\n"
    "                  ones: split (D/2 off each queued one, D/2 onto each idle one),\n"
    "                  queued (D off each queued one; the bare option), or none\n"
    "                  (docs/gpu-timing.md)\n"
    "  --max-events N  with --chrome: refuse a window of more recorded events than\n"
    "                  this (default 2000000, about what a browser can load)\n"
    "  --project TARGET  add a what-if replay of the run on another platform: TARGET\n"
    "                  is native, wsl2 (built-in profiles) or a calibration file\n"
    "                  from wslshim-probe (docs/projection.md)\n"
    "  --project-from SOURCE  with --project: the profile of the platform the trace\n"
    "                  was recorded on (default: wsl2 for a process recorded under\n"
    "                  WSL 2, else native)\n"
    "  --project-fs FSTYPE  with --project: replay file I/O as if the files were on\n"
    "                  this filesystem type on the target (e.g. ext4: a dataset\n"
    "                  copied off /mnt/c); default: the same type as recorded\n"
    "  --sqlite FILE   write the run as SQLite tables instead (processes, threads,\n"
    "                  api_calls, kernels, gpu_samples, nvtx_ranges, phases, files,\n"
    "                  io_calls; docs/sqlite.md); FILE is replaced\n"
    "  -V, --version   the version\n"
    "  -h, --help      this help\n"
    "\n"
    "Every option takes its value as --opt VALUE or --opt=VALUE.\n"
    "\n"
    "Exit status: 0 success, 2 usage error or unreadable/invalid input.\n";

__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vfail(PROG, "", fmt, ap);
}

/* --gpu-pair-correction=fixed:IDLE_NS,QUEUED_NS: two numbers of ns, each 0 to 1,000,000. */
static bool parse_pair_parts(const char *v)
{
    char *end;
    double idle = strtod(v, &end);
    if (end == v || *end != ',')
        return false;
    const char *q = end + 1;
    double queued = strtod(q, &end);
    if (end == q || *end || !(idle >= 0 && idle <= 1e6) || !(queued >= 0 && queued <= 1e6))
        return false;
    wsl_kern_fixed_idle_ns = idle;
    wsl_kern_fixed_queued_ns = queued;
    return true;
}

/* Warnings about the input found before the report (bad traces of a folder, left out). */
static char **input_warnings;
static size_t input_warning_count;

static void add_input_warning(char *w)
{
    input_warnings = xrealloc(input_warnings, (input_warning_count + 1) * sizeof *input_warnings);
    input_warnings[input_warning_count++] = w;
}

/* Once the output is written: the input's warnings, then each run's (b: NULL for one run). */
static void print_warnings(const struct wsl_run *a, const struct wsl_run *b)
{
    for (size_t i = 0; i < input_warning_count; i++) {
        fprintf(stderr, PROG ": warning: %s\n", input_warnings[i]);
        free(input_warnings[i]);
    }
    free(input_warnings);
    input_warnings = NULL;
    input_warning_count = 0;
    for (size_t i = 0; a && i < a->warning_count; i++)
        fprintf(stderr, PROG ": warning: %s\n", a->warnings[i]);
    for (size_t i = 0; b && i < b->warning_count; i++)
        fprintf(stderr, PROG ": warning: %s\n", b->warnings[i]);
}

struct trace_list {
    char **paths;
    dev_t *devs;
    ino_t *inos;
    bool *in_dir;   /* found in a directory given: left out with a warning when bad */
    size_t count;
};

static void trace_list_add(struct trace_list *l, const char *path, const struct stat *st, bool in_dir)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->devs[i] == st->st_dev && l->inos[i] == st->st_ino)
            return; /* the same file named twice (e.g. a file and its directory) */
    l->paths = xrealloc(l->paths, (l->count + 1) * sizeof *l->paths);
    l->devs = xrealloc(l->devs, (l->count + 1) * sizeof *l->devs);
    l->inos = xrealloc(l->inos, (l->count + 1) * sizeof *l->inos);
    l->in_dir = xrealloc(l->in_dir, (l->count + 1) * sizeof *l->in_dir);
    l->in_dir[l->count] = in_dir;
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
            trace_list_add(l, path, &st, true);
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
        trace_list_add(l, path, &st, false);
}

/* A warning about a trace that has no process info (no trace at all): such warnings come before
 * the others, as when an up-front check found them before any reading. */
static size_t unusable_warnings;

static void add_unusable_warning(char *w)
{
    add_input_warning(w);
    memmove(input_warnings + unusable_warnings + 1, input_warnings + unusable_warnings,
            (input_warning_count - 1 - unusable_warnings) * sizeof *input_warnings);
    input_warnings[unusable_warnings++] = w;
}

/* Removes trace i from the list. */
static void trace_list_remove(struct trace_list *l, size_t i)
{
    free(l->paths[i]);
    memmove(l->paths + i, l->paths + i + 1, (l->count - i - 1) * sizeof *l->paths);
    memmove(l->devs + i, l->devs + i + 1, (l->count - i - 1) * sizeof *l->devs);
    memmove(l->inos + i, l->inos + i + 1, (l->count - i - 1) * sizeof *l->inos);
    memmove(l->in_dir + i, l->in_dir + i + 1, (l->count - i - 1) * sizeof *l->in_dir);
    l->count--;
}

/* A trace that cannot be read: one named on the command line ends the program
 * (exit 2); one found in a directory is left out with a warning (unusable: it has
 * no process info), unless no trace of the list is left (exit 2). Returns whether
 * trace i was removed. */
static bool drop_bad_trace(struct trace_list *l, size_t i, const char *why, size_t *bad, char **first_bad,
                           bool unusable)
{
    if (!l->in_dir[i])
        fail("%s: %s", l->paths[i], why);
    if (!*first_bad)
        *first_bad = xasprintf("%s: %s", l->paths[i], why);
    (*bad)++;
    char *w = xasprintf("%s: %s; left out of the report", l->paths[i], why);
    if (unusable)
        add_unusable_warning(w);
    else
        add_input_warning(w);
    trace_list_remove(l, i);
    return true;
}

/* Checks that traces from..count of the list have something to read (their process
 * info): a directory's bad traces (a 0-byte file left by a full disk) are named and
 * left out; the others make the report. The reports read the traces without it
 * (load_run: the reading finds the same); --chrome checks before its passes, reading
 * each trace whole into store (its passes replay it). */
static void check_traces_from(struct trace_list *l, size_t from, struct wsl_trace_store *store)
{
    size_t bad = 0;
    char *first_bad = NULL;
    for (size_t i = from; i < l->count;) {
        char err[WSL_READER_ERRLEN];
        if ((store ? wsl_store_probe(store, l->paths[i], err, sizeof err)
                   : wsl_reader_probe(l->paths[i], err, sizeof err)) != 0)
            drop_bad_trace(l, i, err, &bad, &first_bad, true);
        else
            i++;
    }
    if (l->count == 0 && bad)
        fail("no trace can be read (%zu bad, e.g. %s)", bad, first_bad);
    free(first_bad);
}

static void check_traces(struct trace_list *l) { check_traces_from(l, 0, NULL); }

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
    free(l->in_dir);
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
    print_warnings(NULL, NULL);
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

/* --html --compare: the wall-time difference split into its causes, after the summary. */
static void html_fmt_ns(FILE *out, int64_t ns)
{
    char buf[32];
    fprintf(out, "%s%s", ns < 0 ? "-" : "+", wsl_format_ns(buf, sizeof buf, (uint64_t)(ns < 0 ? -ns : ns)));
}

static void html_compare_causes(FILE *out, const struct wsl_html_run *runs, size_t count, void *arg)
{
    (void)runs;
    (void)count;
    const struct wsl_compare *c = arg;
    fputs("<section id=\"causes\">\n<h2>Why B took ", out);
    html_fmt_ns(out, c->wall_diff_ns);
    fputs(" against A</h2>\n<p class=\"note\">The wall-time difference split into its causes: calls made more or less "
          "often, calls that cost more or less each, file I/O per filesystem. Causes never claim more than the "
          "difference; the rest is unexplained (GPU time, Python, anything not in recorded calls).</p>\n"
          "<table>\n<thead><tr><th>cause</th><th>share of the difference</th></tr></thead>\n<tbody>\n", out);
    for (size_t i = 0; i < c->cause_count; i++) {
        fputs("<tr><td>", out);
        wsl_html_escape(out, c->causes[i].text);
        fputs("</td><td>", out);
        html_fmt_ns(out, c->causes[i].attributed_ns);
        fputs("</td></tr>\n", out);
    }
    fputs("<tr><td>unexplained</td><td>", out);
    html_fmt_ns(out, c->unexplained_ns);
    fputs("</td></tr>\n</tbody>\n</table>\n</section>\n", out);
}

/* --html: a second pass over each run's traces (the timeline), then the
 * page (output_file.h: a regular file is replaced only once the page is whole;
 * a device or FIFO is written in place). */
static void write_html(struct wsl_html_run *pages, size_t count, bool force_progress, const char *path,
                       const struct wsl_compare *cmp)
{
    struct wsl_html_series *series = xcalloc(count, sizeof *series);
    for (size_t r = 0; r < count; r++) {
        uint64_t total_bytes = 0;
        for (size_t i = 0; i < pages[r].run->proc_count; i++) {
            struct stat st;
            if (pages[r].run->procs[i].trace_path && stat(pages[r].run->procs[i].trace_path, &st) == 0)
                total_bytes += (uint64_t)st.st_size;
        }
        struct wsl_progress progress;
        wsl_progress_begin(&progress, "timeline", total_bytes, force_progress);
        char err[512];
        int rc = wsl_html_series_build(pages[r].run, &series[r], &progress, err, sizeof err);
        wsl_progress_end(&progress);
        if (rc != 0)
            fail("%s", err);
        pages[r].series = &series[r];
    }
    struct wsl_output o;
    char err[512];
    if (wsl_output_open(&o, path, err, sizeof err) != 0)
        fail("%s", err);
    struct wsl_html_options hopt = {.title = NULL, .extra_section = cmp ? html_compare_causes : NULL,
                                    .extra_arg = (void *)cmp};
    wsl_html_write(o.f, pages, count, &hopt);
    if (wsl_output_close(&o, true, err, sizeof err) != 0)
        fail("%s", err);
    bool to_stdout = o.is_stdout;
    print_warnings(pages[0].run, count > 1 ? pages[1].run : NULL);
    if (!to_stdout)
        fprintf(stderr, PROG ": wrote %s: %zu run%s, %zu process%s, %zu bottleneck%s\n", path, count,
                count == 1 ? "" : "s", pages[count - 1].run->proc_count,
                pages[count - 1].run->proc_count == 1 ? "" : "es", pages[count - 1].run->finding_count,
                pages[count - 1].run->finding_count == 1 ? "" : "s");
    free(series);
}

enum color_when { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };

static enum color_when parse_color(const char *v)
{
    if (strcmp(v, "auto") == 0)
        return COLOR_AUTO;
    if (strcmp(v, "always") == 0)
        return COLOR_ALWAYS;
    if (strcmp(v, "never") == 0)
        return COLOR_NEVER;
    fail("option '--color' takes auto, always or never, not '%s' (see --help)", v);
}

/* What a run ran, for --compare's check: its first process that is not a shell (a wrapper script
 * that exec'd the program, or ran helpers), else its first; the executable's name and, for an
 * interpreter, the script (its first argument that is not an option). */
static char *run_program(const struct wsl_run *run)
{
    const struct wsl_process *pick = wsl_run_program(run);
    if (!pick || !pick->exe)
        return xstrdup("(unknown)");
    const char *base = strrchr(pick->exe, '/') ? strrchr(pick->exe, '/') + 1 : pick->exe;
    for (uint32_t i = 1; i < pick->argc; i++)
        if (pick->argv[i][0] != '-')
            return xasprintf("%s %s", base, pick->argv[i]);
    return xstrdup(base);
}

/* Reads the traces of one run into run, with progress on a terminal; a bad
 * trace named on the command line fails the program, a directory's is left out.
 * Each trace is read once: what an up-front check of every list would find
 * (traces without their process info) comes out of the reading, with the same
 * messages and warnings in the same order. Only when the program is about to
 * fail for a trace that had its process info are the traces not read yet (the
 * rest of this list, then the later lists) probed, because such a check would
 * have failed on them first. */
static void load_run(struct wsl_run *run, struct trace_list *traces, bool force_progress, struct trace_list *later,
                     bool read_again)
{
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < traces->count; i++) {
        struct stat st;
        if (stat(traces->paths[i], &st) == 0)
            total_bytes += (uint64_t)st.st_size;
    }
    struct wsl_progress progress;
    wsl_run_init(run);
    /* Several traces (a rank's own run, the NVTX step's figures read each again), or an output that
     * reads them again: each is decompressed once, its chunks kept for the later passes. One trace
     * of a text or JSON report is read again only for NVTX steps or a steady state shorter than
     * the run: there the recording would cost more than it saves where neither comes. */
    run->record = traces->count > 1 || read_again;
    wsl_progress_begin(&progress, "reading traces", total_bytes, force_progress);
    run->progress = &progress;
    size_t bad = 0, unusable = 0;
    char *first_bad = NULL, *first_unusable = NULL;
    for (size_t i = 0; i < traces->count;) {
        char err[WSL_READER_ERRLEN];
        struct stat st;
        uint64_t size = stat(traces->paths[i], &st) == 0 ? (uint64_t)st.st_size : 0;
        bool usable;
        if (wsl_run_read_trace(run, traces->paths[i], &usable, err, sizeof err) != 0) {
            if (!traces->in_dir[i]) {
                wsl_progress_end(&progress);
                if (usable) { /* the up-front check would have failed on these first */
                    check_traces_from(traces, i + 1, NULL);
                    if (later)
                        check_traces(later);
                }
            }
            if (usable)
                drop_bad_trace(traces, i, err, &bad, &first_bad, false);
            else
                drop_bad_trace(traces, i, err, &unusable, &first_unusable, true);
        } else {
            i++;
        }
        wsl_progress_next_file(&progress, size);
    }
    if (traces->count == 0 && (bad || unusable)) {
        wsl_progress_end(&progress);
        if (!bad) /* found by the check, before any later list's */
            fail("no trace can be read (%zu bad, e.g. %s)", unusable, first_unusable);
        if (later)
            check_traces(later);
        fail("no trace can be read (%zu bad, e.g. %s)", bad, first_bad);
    }
    free(first_bad);
    free(first_unusable);
    wsl_progress_end(&progress);
    run->progress = NULL;
    wsl_run_finish(run);
}

int main(int argc, char **argv)
{
    bool json = false, compare = false;
    enum color_when color = COLOR_AUTO;
    char *compare_args[2] = {NULL, NULL};
    struct wsl_projection_options project_opt = {0};
    const char *output = NULL, *chrome = NULL, *html = NULL;
    struct wsl_chrome_options chrome_opt = {0};
    const char *window_option = NULL;
    struct trace_list traces = {0};
    const char *sqlite = NULL;
    /* Trace arguments (getopt_long's operands) are gathered at the front of argv (there is always room). */
    char **args = argv + 1;
    size_t nargs = 0;
    enum {
        OPT_JSON = 256, OPT_CHROME, OPT_FROM, OPT_TO, OPT_MAX_EVENTS, OPT_COLOR, OPT_COMPARE, OPT_PROJECT,
        OPT_PROJECT_FROM, OPT_PROJECT_FS, OPT_HTML, OPT_SQLITE, OPT_GPU_PAIR,
    };
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"json", no_argument, NULL, OPT_JSON},
        {"gpu-pair-correction", optional_argument, NULL, OPT_GPU_PAIR},
        {"output", required_argument, NULL, 'o'},
        {"chrome", required_argument, NULL, OPT_CHROME},
        {"html", required_argument, NULL, OPT_HTML},
        {"sqlite", required_argument, NULL, OPT_SQLITE},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"max-events", required_argument, NULL, OPT_MAX_EVENTS},
        {"color", optional_argument, NULL, OPT_COLOR},
        {"colour", optional_argument, NULL, OPT_COLOR},
        {"compare", required_argument, NULL, OPT_COMPARE},
        {"project", required_argument, NULL, OPT_PROJECT},
        {"project-from", required_argument, NULL, OPT_PROJECT_FROM},
        {"project-fs", required_argument, NULL, OPT_PROJECT_FS},
        {NULL, 0, NULL, 0},
    };

    /* A closed pipe is a write error to report (exit 2, one line), not a silent death. */
    signal(SIGPIPE, SIG_IGN);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":hVo:", longopts, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case 'V':
            return cli_print_version(PROG);
        case OPT_JSON:
            json = true;
            break;
        case OPT_GPU_PAIR:
            if (!v || strcmp(v, "queued") == 0)
                wsl_kern_pairs = WSL_KERN_PAIRS_QUEUED;
            else if (strcmp(v, "split") == 0)
                wsl_kern_pairs = WSL_KERN_PAIRS_SPLIT;
            else if (strcmp(v, "none") == 0)
                wsl_kern_pairs = WSL_KERN_PAIRS_NONE;
            else if (strncmp(v, "fixed", 5) == 0 && (!v[5] || v[5] == ':')) {
                wsl_kern_pairs = WSL_KERN_PAIRS_FIXED;
                if (v[5] && !parse_pair_parts(v + 6))
                    fail("--gpu-pair-correction '%s': expected fixed:IDLE_NS,QUEUED_NS (two numbers of ns, "
                         "0 to 1000000)", v);
            } else
                fail("--gpu-pair-correction '%s': expected fixed[:IDLE_NS,QUEUED_NS] (the default), split, "
                     "queued or none", v);
            break;
        case 'o':
            output = v;
            break;
        case OPT_CHROME:
        case OPT_HTML:
        case OPT_SQLITE:
            if (!*v)
                fail("option '--%s' needs a file name (see --help)",
                     c == OPT_CHROME ? "chrome" : c == OPT_HTML ? "html" : "sqlite");
            *(c == OPT_CHROME ? &chrome : c == OPT_HTML ? &html : &sqlite) = v;
            break;
        case OPT_MAX_EVENTS:
            window_option = "--max-events";
            if (!parse_count(v, &chrome_opt.max_events))
                fail("--max-events '%s': expected a count of events (1 or more)", v);
            break;
        case OPT_FROM:
            window_option = "--from";
            if (!parse_seconds(v, &chrome_opt.from_ns))
                fail("--from '%s': expected seconds from the run's start (0 or more)", v);
            chrome_opt.have_from = true;
            break;
        case OPT_TO:
            window_option = "--to";
            if (!parse_seconds(v, &chrome_opt.to_ns))
                fail("--to '%s': expected seconds from the run's start (0 or more)", v);
            chrome_opt.have_to = true;
            break;
        case OPT_COLOR:
            color = v ? parse_color(v) : COLOR_ALWAYS;
            break;
        case OPT_COMPARE:
            /* two values: A is getopt's, B the next argument */
            if (compare)
                fail("option '--compare' given twice (see --help)");
            if (optind >= argc)
                fail("option '--compare' needs two runs, A (the baseline) and B (see --help)");
            compare = true;
            compare_args[0] = (char *)v;
            compare_args[1] = argv[optind++];
            break;
        case OPT_PROJECT:
        case OPT_PROJECT_FROM:
        case OPT_PROJECT_FS:
            if (!*v)
                fail("option '--%s' needs a value (see --help)",
                     c == OPT_PROJECT ? "project" : c == OPT_PROJECT_FROM ? "project-from" : "project-fs");
            *(c == OPT_PROJECT ? &project_opt.target : c == OPT_PROJECT_FROM ? &project_opt.source
                                                                               : &project_opt.fs) = v;
            break;
        case ':':
            if (optopt == OPT_COMPARE)
                fail("option '--compare' needs two runs, A (the baseline) and B (see --help)");
            if (optopt == 'o')
                fail("option '%s' needs a file name (see --help)", argv[optind - 1]);
            cli_option_error(PROG, c, argv);
        default:
            cli_option_error(PROG, c, argv);
        }
    }
    for (int i = optind; i < argc; i++)
        args[nargs++] = argv[i];
    if (sqlite) {
        if (!wsl_sqlite_available()) {
            char serr[256];
            wsl_sqlite_export(NULL, sqlite, serr, sizeof serr);
            fail("%s", serr);
        }
        if (strcmp(sqlite, "-") == 0)
            fail("--sqlite writes a database file: give a file name, not '-'");
        if (compare || chrome || html || json || output || project_opt.target)
            fail("--sqlite writes the run's tables instead of the report: leave out %s",
                 compare ? "--compare" : chrome ? "--chrome" : html ? "--html" : json ? "--json" : output ? "-o"
                                                                                                  : "--project");
    }
    if (compare && nargs)
        fail("with '--compare A B' give no other traces ('%s'); a run of several traces is a directory", args[0]);
    if (compare && chrome)
        fail("--chrome exports one run: leave out --compare");
    if (chrome && html)
        fail("--chrome and --html write different files: give one of them");
    if (html && (json || output))
        fail("--html writes the report to its FILE: leave out %s", json ? "--json" : "-o");
    if (html && project_opt.target)
        fail("--project is in the text and JSON reports: leave out --html");
    if (!compare && nargs == 0)
        fail("no trace given (see --help)");
    if (output && !*output)
        fail("option '-o' needs a file name (see --help)");
    if (window_option && !chrome)
        fail("option '%s' goes with --chrome (see --help)", window_option);
    if (chrome && (json || output))
        fail("--chrome writes the timeline instead of the report: leave out %s", json ? "--json" : "-o");
    if ((project_opt.source || project_opt.fs) && !project_opt.target)
        fail("option '%s' goes with --project (see --help)", project_opt.source ? "--project-from" : "--project-fs");
    if (compare && project_opt.target)
        fail("--project replays one run: leave out --compare");
    if (chrome && project_opt.target)
        fail("--chrome writes the timeline instead of the report: leave out --project");
    /* Profiles are checked before any trace is read: a bad TARGET is a usage error. */
    struct wsl_projection projection;
    if (project_opt.target) {
        struct wsl_profile check;
        char perr[512];
        if (wsl_project_check_target(project_opt.target, perr, sizeof perr) != 0)
            fail("--project: %s", perr);
        if (project_opt.source && wsl_profile_load(project_opt.source, &check, perr, sizeof perr) != 0)
            fail("--project-from: %s", perr);
        if (project_opt.fs && (strlen(project_opt.fs) >= sizeof projection.fs ||
                               strspn(project_opt.fs, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(project_opt.fs)))
            fail("--project-fs '%s': expected a filesystem type such as ext4 or 9p", project_opt.fs);
    }
    bool force_progress = getenv("WSLSHIM_PROGRESS") && strcmp(getenv("WSLSHIM_PROGRESS"), "1") == 0;
    if (chrome) {
        for (size_t i = 0; i < nargs; i++)
            add_argument(&traces, args[i]);
        struct wsl_trace_store *store = wsl_store_new();
        check_traces_from(&traces, 0, store);
        uint64_t total_bytes = 0;
        for (size_t i = 0; i < traces.count; i++) {
            struct stat st;
            if (stat(traces.paths[i], &st) == 0)
                total_bytes += (uint64_t)st.st_size;
        }
        struct wsl_progress progress;
        /* the scan and the write each read every trace (a window count may read them once more) */
        wsl_progress_begin(&progress, "exporting", 2 * total_bytes, force_progress);
        chrome_opt.output = chrome;
        chrome_opt.progress = &progress;
        chrome_opt.store = store;
        int rc = export_chrome(&traces, &chrome_opt);
        wsl_store_free(store);
        return rc;
    }

    struct trace_list traces_b = {0};
    struct wsl_run run, run_b;
    struct wsl_compare cmp;
    struct report_compare_labels labels = {0};
    if (compare) {
        add_argument(&traces, compare_args[0]);
        add_argument(&traces_b, compare_args[1]);
        load_run(&run, &traces, force_progress, &traces_b, html != NULL);
        load_run(&run_b, &traces_b, force_progress, NULL, html != NULL);
        wsl_compare_build(&cmp, &run, &run_b);
        char *pa = run_program(&run), *pb = run_program(&run_b);
        if (strcmp(pa, pb) != 0)
            add_input_warning(xasprintf("A and B ran different programs (A: %s, B: %s): the comparison may "
                                        "compare unlike work", pa, pb));
        free(pa);
        free(pb);
        labels.a = (const char *const *)traces.paths;
        labels.a_count = traces.count;
        labels.b = (const char *const *)traces_b.paths;
        labels.b_count = traces_b.count;
    } else {
        for (size_t i = 0; i < nargs; i++)
            add_argument(&traces, args[i]);
        load_run(&run, &traces, force_progress, NULL, html || sqlite || project_opt.target);
        if (project_opt.target) {
            char perr[512];
            if (run.phases.known && run.phases.main.steps) { /* the exposure's step time */
                project_opt.steady_pid = run.phases.main_pid;
                project_opt.steady_start_ns = run.phases.main.steady_start_ns;
                project_opt.steady_end_ns = run.phases.main.steady_end_ns;
                project_opt.steady_steps = run.phases.main.steps;
            }
            project_opt.store = run.store;
            if (wsl_project((const char *const *)traces.paths, traces.count, &project_opt, &projection, perr,
                            sizeof perr) != 0)
                fail("%s", perr);
            run.projection = &projection;
        }
    }
    if (sqlite) {
        char serr[512];
        if (wsl_sqlite_export(&run, sqlite, serr, sizeof serr) != 0)
            fail("%s", serr);
        print_warnings(&run, NULL);
        fprintf(stderr, PROG ": wrote %s: %zu process%s\n", sqlite, run.proc_count, run.proc_count == 1 ? "" : "es");
        wsl_run_free(&run);
        free_trace_list(&traces);
        return 0;
    }
    if (html) {
        struct wsl_html_run pages[2] = {{.label = NULL, .run = &run}, {.label = NULL, .run = &run_b}};
        char *la = NULL, *lb = NULL;
        if (compare) {
            pages[0].label = la = xasprintf("A: %s", compare_args[0]);
            pages[1].label = lb = xasprintf("B: %s", compare_args[1]);
        }
        write_html(pages, compare ? 2 : 1, force_progress, html, compare ? &cmp : NULL);
        free(la);
        free(lb);
        if (compare) {
            wsl_compare_free(&cmp);
            wsl_run_free(&run_b);
            free_trace_list(&traces_b);
        }
        wsl_run_free(&run);
        free_trace_list(&traces);
        return 0;
    }
    bool use_color = !json && (color == COLOR_ALWAYS ||
                               (color == COLOR_AUTO && !output && cli_auto_color(STDOUT_FILENO)));

    /* Written whole to a temporary stream first: a failed write leaves no half report. */
    char *text = NULL;
    size_t text_size = 0;
    FILE *mem = open_memstream(&text, &text_size);
    if (!mem)
        fail("out of memory");
    if (compare && json)
        report_write_json(&run_b, &cmp, &labels, mem);
    else if (compare)
        report_write_compare_text(&cmp, &labels, mem);
    else if (json)
        report_write_json(&run, NULL, NULL, mem);
    else
        report_write_text(&run, mem, use_color);
    if (fclose(mem) != 0)
        fail("out of memory");

    struct wsl_output o;
    char werr[512];
    if (wsl_output_open(&o, output ? output : "-", werr, sizeof werr) != 0)
        fail("%s", werr);
    fwrite(text, 1, text_size, o.f);
    if (wsl_output_close(&o, true, werr, sizeof werr) != 0)
        fail("%s", werr);
    print_warnings(&run, compare ? &run_b : NULL);

    free(text);
    if (compare) {
        wsl_compare_free(&cmp);
        wsl_run_free(&run_b);
        free_trace_list(&traces_b);
    }
    if (run.projection)
        wsl_projection_free(&projection);
    wsl_run_free(&run);
    free_trace_list(&traces);
    return 0;
}
