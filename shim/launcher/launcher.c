/*
 * wslshim: the launcher.
 *
 *   wslshim run [-o PATTERN] [--gpu-timing N|off] [--no-io] [--report] -- PROG ARGS...
 *   wslshim report|probe|doctor ARGS...   (exec of wslshim-report, -probe, -doctor)
 *
 * `run` puts libwslshim.so first in the child's LD_PRELOAD (the user's other
 * entries kept, other copies of the shim dropped), sets the WSLSHIM_* settings
 * the flags ask for, runs PROG (fork + execvp), passes on the signals a user
 * sends to the launcher, and then says which trace files the run created.
 * Exit status: the child's; a child killed by signal N kills the launcher with
 * the same signal (what a shell expects: `wslshim run -- prog` then behaves
 * like `prog` for `$?`, `set -e` and Ctrl-C in loops); 2 for a usage error;
 * 126/127 when PROG cannot be executed or found, as in a shell.
 * docs/usage.md is the user's page.
 *
 * The launcher itself is never traced through its own settings: it builds the
 * child's environment after fork, so its own environment (and that of the
 * wslshim-report it may run) stays the user's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef WSLSHIM_VERSION
#define WSLSHIM_VERSION "unknown"
#endif
#ifndef WSLSHIM_INSTALL_LIBDIR          /* relative to the install prefix, e.g. "lib" */
#define WSLSHIM_INSTALL_LIBDIR "lib"
#endif
#ifndef WSLSHIM_INSTALL_FULL_LIBDIR     /* absolute, e.g. "/usr/local/lib" */
#define WSLSHIM_INSTALL_FULL_LIBDIR "/usr/local/lib"
#endif
#ifndef WSLSHIM_BUILD_REPORT            /* the build tree's programs ("" when absent) */
#define WSLSHIM_BUILD_REPORT ""
#endif
#ifndef WSLSHIM_BUILD_PROBE
#define WSLSHIM_BUILD_PROBE ""
#endif
#ifndef WSLSHIM_BUILD_DOCTOR
#define WSLSHIM_BUILD_DOCTOR ""
#endif

extern char **environ;

#include "wslshim/cli.h"

#define PROG "wslshim"
#define SHIM_NAME "libwslshim.so"
#define DEFAULT_RUN_DIR_PREFIX "wslshim-run-"
#define DEFAULT_TRACE_NAME "wslshim-%h-%p.trace.zst"
#define MAX_LISTED 8            /* trace files named one by one on stderr; more are counted */

static const char usage_text[] =
    "usage: " PROG " run [-o PATTERN] [--append] [--gpu-timing N|off] [--no-io] [--report]\n"
    "                   [--emulate SPEC] -- PROG ARGS...\n"
    "       " PROG " report|probe|doctor ARGS...\n"
    "       " PROG " -V, --version | -h, --help\n"
    "\n"
    "run      runs PROG under libwslshim.so and says where its traces went\n"
    "  -o, --output PATTERN  trace path pattern: %p pid, %h host name, %t start time\n"
    "                        (default: a new directory wslshim-run-DATE-TIME/ holding\n"
    "                        " DEFAULT_TRACE_NAME ")\n"
    "  --gpu-timing N|off    time every Nth kernel launch on the GPU (1: every one)\n"
    "  --no-io               do not record file I/O\n"
    "  --append              let -o's folder hold an earlier run's traces (without it\n"
    "                        run refuses such a folder: a report of it would merge runs)\n"
    "  --report              print wslshim-report's report of the run at the end\n"
    "  --emulate SPEC        add per-call host latency: wsl2, a profile file, or inline\n"
    "                        launch=+8us,sync=+20us,... (WSLSHIM_EMULATE; docs/emulation.md)\n"
    "  -h, --help            this help\n"
    "report   wslshim-report ARGS (the report of traces; see wslshim report --help)\n"
    "probe    wslshim-probe ARGS (measures this platform's CUDA costs)\n"
    "doctor   wslshim-doctor ARGS (checks the set-up)\n"
    "\n"
    "Exit status of run: PROG's (killed by a signal: the same signal), 126/127 when\n"
    "PROG cannot be run or found, 2 for a usage error. docs/usage.md has the details.\n"
    "Every option takes its value as --opt VALUE or --opt=VALUE.\n";

__attribute__((noreturn, format(printf, 1, 2)))
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vfail(PROG, " (see " PROG " --help)", fmt, ap);
}

__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vfail(PROG, "", fmt, ap);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        fail("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        fail("out of memory");
    return p;
}

__attribute__((format(printf, 1, 2)))
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        fail("out of memory");
    return s;
}

/* ---- finding our own files ----------------------------------------------------------- */

static char self_dir[PATH_MAX];

static void find_self_dir(const char *argv0)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
    } else if (!realpath(argv0, buf)) {
        snprintf(self_dir, sizeof self_dir, ".");
        return;
    }
    char *slash = strrchr(buf, '/');
    if (slash == buf)
        snprintf(self_dir, sizeof self_dir, "/");
    else {
        if (slash)
            *slash = 0;
        snprintf(self_dir, sizeof self_dir, "%s", buf);
    }
}

static bool is_file(const char *path, int mode)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, mode) == 0;
}

/* The shim: next to the launcher, the build tree's and an install's bin/../lib,
 * then the install prefix's lib dir. Returns a canonical absolute path (the
 * shim's exec hooks compare LD_PRELOAD entries with the path they were loaded
 * from), or NULL. */
static char *find_shim(void)
{
    char *candidates[] = {
        xasprintf("%s/" SHIM_NAME, self_dir),
        xasprintf("%s/../lib/" SHIM_NAME, self_dir),
        WSLSHIM_INSTALL_LIBDIR[0] == '/' ? NULL : xasprintf("%s/../" WSLSHIM_INSTALL_LIBDIR "/" SHIM_NAME, self_dir),
        xasprintf(WSLSHIM_INSTALL_FULL_LIBDIR "/" SHIM_NAME),
    };
    char *found = NULL;
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        char real[PATH_MAX];
        if (!found && candidates[i] && is_file(candidates[i], R_OK) && realpath(candidates[i], real))
            found = xstrdup(real);
        free(candidates[i]);
    }
    return found;
}

/* A sibling program (wslshim-report...): next to the launcher, else where the
 * build tree made it. */
static char *find_sibling(const char *name, const char *build_path)
{
    char *p = xasprintf("%s/%s", self_dir, name);
    if (is_file(p, X_OK))
        return p;
    free(p);
    if (build_path[0] && is_file(build_path, X_OK))
        return xstrdup(build_path);
    return NULL;
}

/* ---- LD_PRELOAD -------------------------------------------------------------------------- */

static bool same_file(const char *a, const struct stat *b)
{
    struct stat st;
    return stat(a, &st) == 0 && st.st_dev == b->st_dev && st.st_ino == b->st_ino;
}

static bool is_a_shim(const char *entry, const char *shim, const struct stat *shim_st)
{
    const char *base = strrchr(entry, '/');
    base = base ? base + 1 : entry;
    return strcmp(entry, shim) == 0 || strcmp(base, SHIM_NAME) == 0 || same_file(entry, shim_st);
}

/* shim first, then the entries of old (separated by ':' or spaces, as ld.so
 * reads them) that are not a copy of the shim, joined with ':'. */
static char *preload_with_shim(const char *shim, const char *old)
{
    struct stat shim_st;
    if (stat(shim, &shim_st) != 0)
        memset(&shim_st, 0, sizeof shim_st);
    size_t cap = strlen(shim) + (old ? strlen(old) : 0) + 2, n = 0;
    char *out = xmalloc(cap);
    n = (size_t)snprintf(out, cap, "%s", shim);
    if (!old)
        return out;
    char *copy = xstrdup(old), *save = NULL;
    for (char *tok = strtok_r(copy, ": \t", &save); tok; tok = strtok_r(NULL, ": \t", &save)) {
        if (is_a_shim(tok, shim, &shim_st))
            continue;
        n += (size_t)snprintf(out + n, cap - n, ":%s", tok);
    }
    free(copy);
    return out;
}

/* ---- trace file names: the pattern as a matcher ------------------------------------------------ */

static char host_name[256] = "host";

/* Does name match the shim's pattern: %p and %t any digits, %h the host name,
 * %% a '%', %X an X, and the ".N" the shim adds when a name is taken? */
static bool pattern_match(const char *pat, const char *name)
{
    while (*pat) {
        if (pat[0] == '%' && pat[1]) {
            char c = pat[1];
            pat += 2;
            if (c == 'p' || c == 't') {
                if (!(*name >= '0' && *name <= '9'))
                    return false;
                /* digits are greedy but may be followed by more digits in the pattern: try every split */
                const char *d = name;
                while (*d >= '0' && *d <= '9')
                    d++;
                for (const char *cut = d; cut > name; cut--)
                    if (pattern_match(pat, cut))
                        return true;
                return false;
            }
            if (c == 'h') {
                size_t n = strlen(host_name);
                if (strncmp(name, host_name, n) != 0)
                    return false;
                name += n;
                continue;
            }
            if (*name++ != c)
                return false;
            continue;
        }
        if (*name++ != *pat++)
            return false;
    }
    if (!*name)
        return true;
    if (*name++ != '.' || !*name)
        return false;
    while (*name >= '0' && *name <= '9')
        name++;
    return !*name;
}

struct file_id {
    dev_t dev;
    ino_t ino;
};

struct trace_set {
    char **paths;
    struct file_id *ids;
    size_t count;
};

static void trace_set_add(struct trace_set *s, char *path, const struct stat *st)
{
    s->paths = realloc(s->paths, (s->count + 1) * sizeof *s->paths);
    s->ids = realloc(s->ids, (s->count + 1) * sizeof *s->ids);
    if (!s->paths || !s->ids)
        fail("out of memory");
    s->paths[s->count] = path;
    s->ids[s->count] = (struct file_id){st->st_dev, st->st_ino};
    s->count++;
}

static void trace_set_free(struct trace_set *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->paths[i]);
    free(s->paths);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

static bool trace_set_has(const struct trace_set *s, const struct stat *st)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->ids[i].dev == st->st_dev && s->ids[i].ino == st->st_ino)
            return true;
    return false;
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The regular files in dir whose names match base_pattern and that are not in
 * `before`, sorted by name. */
static void scan_traces(const char *dir, const char *base_pattern, const struct trace_set *before,
                        struct trace_set *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!pattern_match(base_pattern, e->d_name))
            continue;
        char *path = xasprintf("%s%s%s", dir, strcmp(dir, "/") ? "/" : "", e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (!before || !trace_set_has(before, &st)))
            trace_set_add(out, path, &st);
        else
            free(path);
    }
    closedir(d);
    if (out->count > 1) {
        /* sort paths and ids together: sort the paths, then look the ids up again */
        qsort(out->paths, out->count, sizeof *out->paths, compare_strings);
        for (size_t i = 0; i < out->count; i++) {
            struct stat st;
            if (stat(out->paths[i], &st) == 0)
                out->ids[i] = (struct file_id){st.st_dev, st.st_ino};
        }
    }
}

/* Files of dir that wslshim-report would read as traces of the folder (NAME.trace.zst[.N]). */
static size_t count_traces(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".trace.zst");
        if (!t || t == e->d_name)
            continue;
        t += strlen(".trace.zst");
        if (*t == '.')
            t += 1 + strspn(t + 1, "0123456789");
        n += *t == 0;
    }
    closedir(d);
    return n;
}

/* mkdir -p; 0 or -1 with errno. */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(buf, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* ---- signals ------------------------------------------------------------------------------- */

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof forwarded_signals / sizeof forwarded_signals[0])
static volatile sig_atomic_t child_pid;

/* A signal sent to the launcher goes on to the child. One the kernel sent
 * (si_code SI_KERNEL: a terminal's Ctrl-C, Ctrl-\, hang-up) went to the
 * whole foreground process group, the child included: passing it on would
 * deliver it twice. */
static void forward_signal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    int saved = errno;
    if (child_pid > 0 && (!info || info->si_code != SI_KERNEL))
        kill((pid_t)child_pid, sig);
    errno = saved;
}

/* Dies of sig the way the child did; exit 128+sig if that is not possible. */
__attribute__((noreturn)) static void die_of_signal(int sig)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the child dumped core if it was going to: not the launcher */
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    fflush(stdout);
    raise(sig);
    exit(128 + sig);
}

/* ---- run ------------------------------------------------------------------------------------ */

struct run_options {
    const char *output;     /* -o, NULL: the default per-run directory */
    const char *gpu_timing; /* NULL: leave the environment's */
    const char *emulate;    /* --emulate SPEC: WSLSHIM_EMULATE for the child (docs/emulation.md) */
    bool no_io, report;
    bool append;            /* --append: -o's folder may hold an earlier run's traces */
    char **argv;            /* PROG ARGS..., NULL-terminated */
};

static bool valid_gpu_timing(const char *v)
{
    if (strcmp(v, "off") == 0)
        return true;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    return *v >= '0' && *v <= '9' && !*end && errno == 0 && n >= 1 && n <= 1000000;
}

static void parse_run_options(int argc, char **argv, struct run_options *o)
{
    memset(o, 0, sizeof *o);
    enum { OPT_GPU_TIMING = 256, OPT_NO_IO, OPT_REPORT, OPT_EMULATE, OPT_APPEND };
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"output", required_argument, NULL, 'o'},
        {"gpu-timing", required_argument, NULL, OPT_GPU_TIMING},
        {"no-io", no_argument, NULL, OPT_NO_IO},
        {"report", no_argument, NULL, OPT_REPORT},
        {"emulate", required_argument, NULL, OPT_EMULATE},
        {"append", no_argument, NULL, OPT_APPEND},
        {NULL, 0, NULL, 0},
    };
    /* argv[0] is "run" for getopt; '+': options end at PROG */
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc + 1, argv - 1, "+:ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        case 'o':
            o->output = optarg;
            break;
        case OPT_GPU_TIMING:
            if (!valid_gpu_timing(optarg))
                usage_error("--gpu-timing '%s': expected 'off' or a count from 1 to 1000000", optarg);
            o->gpu_timing = optarg;
            break;
        case OPT_NO_IO:
            o->no_io = true;
            break;
        case OPT_REPORT:
            o->report = true;
            break;
        case OPT_EMULATE:
            if (!*optarg)
                usage_error("option '--emulate' needs a SPEC (wsl2, a profile file, or launch=+8us,...)");
            o->emulate = optarg;
            break;
        case OPT_APPEND:
            o->append = true;
            break;
        case ':':
            if (optopt == 'o')
                usage_error("option '%s' needs a trace path pattern", argv[optind - 2]);
            cli_option_error(PROG, c, argv - 1);
        default:
            if (optind >= 1 && optopt == 0)
                usage_error("run: unknown option '%.*s'", (int)strcspn(argv[optind - 2], "="), argv[optind - 2]);
            cli_option_error(PROG, c, argv - 1);
        }
    }
    int i = optind - 1;
    if (o->output && !*o->output)
        usage_error("option '-o' needs a trace path pattern");
    if (o->output && o->output[strlen(o->output) - 1] == '/')
        usage_error("-o '%s' names a directory; give a file pattern such as %s%%p.trace.zst", o->output, o->output);
    if (i >= argc)
        usage_error("run: no program given (wslshim run [OPTIONS] -- PROG ARGS...)");
    o->argv = argv + i;
}

/* Where the traces go: an absolute pattern (a child that changes directory
 * still writes where the user meant), its directory and its last component. */
struct output_plan {
    char *pattern;          /* absolute, for WSLSHIM_OUTPUT */
    char *dir;              /* absolute */
    char *base;             /* the file-name part of the pattern */
    char *shown_dir;        /* the directory as the user would name it */
    bool run_dir;           /* dir is a directory made for this run */
    bool dir_has_escapes;   /* the directory part has % escapes: files cannot be listed */
};

static char *absolute(const char *path)
{
    if (path[0] == '/')
        return xstrdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        fail("cannot get the working directory: %s", strerror(errno));
    return xasprintf("%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", path);
}

static void plan_output(const struct run_options *o, struct output_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (!o->output) {
        /* A new directory per run: wslshim-run-YYYYmmdd-HHMMSS, then -2, -3... */
        time_t now = time(NULL);
        struct tm tm;
        char stamp[32];
        localtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        for (int n = 1;; n++) {
            char *name = n == 1 ? xasprintf(DEFAULT_RUN_DIR_PREFIX "%s", stamp)
                                : xasprintf(DEFAULT_RUN_DIR_PREFIX "%s-%d", stamp, n);
            if (mkdir(name, 0777) == 0) {
                plan->shown_dir = name;
                break;
            }
            int err = errno;
            free(name);
            if (err != EEXIST || n >= 1000)
                fail("cannot create a directory for the traces in the working directory: %s", strerror(err));
        }
        plan->dir = absolute(plan->shown_dir);
        plan->base = xstrdup(DEFAULT_TRACE_NAME);
        plan->pattern = xasprintf("%s/%s", plan->dir, plan->base);
        plan->run_dir = true;
        return;
    }
    plan->pattern = absolute(o->output);
    const char *slash = strrchr(o->output, '/');
    plan->shown_dir = slash ? strndup(o->output, (size_t)(slash - o->output) + (slash == o->output)) : xstrdup(".");
    if (!plan->shown_dir)
        fail("out of memory");
    char *pslash = strrchr(plan->pattern, '/');
    plan->base = xstrdup(pslash + 1);
    plan->dir = pslash == plan->pattern ? xstrdup("/") : strndup(plan->pattern, (size_t)(pslash - plan->pattern));
    if (!plan->dir)
        fail("out of memory");
    plan->dir_has_escapes = strchr(plan->dir, '%') != NULL;
    if (!plan->dir_has_escapes && make_dirs(plan->dir) != 0)
        fail("cannot create the trace directory %s: %s", plan->shown_dir, strerror(errno));
}

/* In the child: the environment PROG gets, then exec. Never returns. */
__attribute__((noreturn)) static void exec_child(const struct run_options *o, const struct output_plan *plan,
                                                 const char *shim)
{
    char *preload = preload_with_shim(shim, getenv("LD_PRELOAD"));
    /* The process the user ran: the shim never drops its last image's trace as a
     * short helper's (WSLSHIM_KEEP_HELPERS=1 keeps every one; shim/writer/helpers.c). */
    char root_pid[24];
    snprintf(root_pid, sizeof root_pid, "%d", (int)getpid());
#if defined(__SANITIZE_THREAD__)
    /* A ThreadSanitizer build of the shim needs TSan's runtime (this launcher's
     * own) loaded before it (docs/reliability.md). */
    extern void __tsan_init(void);
    Dl_info rt;
    if (dladdr((void *)__tsan_init, &rt) && rt.dli_fname) {
        char *both = xasprintf("%s:%s", rt.dli_fname, preload);
        free(preload);
        preload = both;
    }
#endif
    if (setenv("LD_PRELOAD", preload, 1) != 0 || setenv("WSLSHIM_OUTPUT", plan->pattern, 1) != 0 ||
        (o->gpu_timing && setenv("WSLSHIM_GPU_TIMING", o->gpu_timing, 1) != 0) ||
        (o->no_io && setenv("WSLSHIM_IO", "0", 1) != 0) ||
        (o->emulate && setenv("WSLSHIM_EMULATE", o->emulate, 1) != 0) ||
        setenv("WSLSHIM_RUN_ROOT", root_pid, 1) != 0) {
        fprintf(stderr, PROG ": out of memory\n");
        _exit(127);
    }
    execvp(o->argv[0], o->argv);
    int err = errno;
    fprintf(stderr, PROG ": %s: %s\n", o->argv[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
}

/* ---- short helper processes: the shim's notes (shim/writer/helpers.c) ---------------------------- */

#define HELPERS_FILE "wslshim-helpers.txt"

/* The size of the folder's helpers file now (0: none). */
static off_t helpers_size(const struct output_plan *plan)
{
    if (plan->dir_has_escapes)
        return 0;
    char *path = xasprintf("%s/" HELPERS_FILE, plan->dir);
    struct stat st;
    off_t n = lstat(path, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
    free(path);
    return n;
}

/* The helper processes noted past offset `from` (one line each). */
static size_t helpers_noted(const struct output_plan *plan, off_t from)
{
    if (plan->dir_has_escapes)
        return 0;
    char *path = xasprintf("%s/" HELPERS_FILE, plan->dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return 0;
    size_t lines = 0;
    char buf[8192];
    ssize_t r;
    if (lseek(fd, from, SEEK_SET) == from)
        while ((r = read(fd, buf, sizeof buf)) > 0)
            for (ssize_t i = 0; i < r; i++)
                lines += buf[i] == '\n';
    close(fd);
    return lines;
}

static void print_helpers(size_t helpers)
{
    if (helpers)
        fprintf(stderr, PROG ": %zu short helper process%s not kept (no CUDA, little file I/O; listed in "
                HELPERS_FILE "; WSLSHIM_KEEP_HELPERS=1 keeps them)\n", helpers, helpers == 1 ? "" : "es");
}

static void print_traces(const struct output_plan *plan, const struct trace_set *traces, bool tell_report,
                         size_t helpers)
{
    if (plan->dir_has_escapes) {
        fprintf(stderr, PROG ": traces: %s (the directory has %% escapes, so the files are not listed)\n",
                plan->pattern);
        return;
    }
    if (traces->count == 0) {
        fprintf(stderr, PROG ": no trace was written (the program made no recorded call%s)\n",
                plan->run_dir ? "" : ", or the shim could not create files there: try WSLSHIM_LOG=warn");
        print_helpers(helpers);
        return;
    }
    const char *dir = plan->shown_dir;
    size_t dir_len = strlen(plan->dir);
    fprintf(stderr, PROG ": %zu trace%s in %s/:", traces->count, traces->count == 1 ? "" : "s", dir);
    for (size_t i = 0; i < traces->count && i < MAX_LISTED; i++)
        fprintf(stderr, " %s", traces->paths[i] + dir_len + (strcmp(plan->dir, "/") != 0));
    if (traces->count > MAX_LISTED)
        fprintf(stderr, " and %zu more", traces->count - MAX_LISTED);
    fputc('\n', stderr);
    print_helpers(helpers);
    if (tell_report) {
        if (plan->run_dir)
            fprintf(stderr, PROG ": report: " PROG " report %s\n", dir);
        else if (traces->count == 1)
            fprintf(stderr, PROG ": report: " PROG " report %s\n", traces->paths[0]);
        else
            fprintf(stderr, PROG ": report: " PROG " report %s/%s (the files above)\n", dir,
                    strchr(plan->base, '%') ? "..." : plan->base);
    }
}

/* Runs wslshim-report on the run's traces (its output on our stdout). */
static void run_report(const struct trace_set *traces)
{
    char *report = find_sibling("wslshim-report", WSLSHIM_BUILD_REPORT);
    if (!report) {
        fprintf(stderr, PROG ": --report: wslshim-report is not next to %s/" PROG "\n", self_dir);
        return;
    }
    if (traces->count == 0) {
        free(report);
        return;
    }
    char **argv = xmalloc((traces->count + 3) * sizeof *argv);
    size_t n = 0;
    argv[n++] = "wslshim-report";
    argv[n++] = "--";
    for (size_t i = 0; i < traces->count; i++)
        argv[n++] = traces->paths[i];
    argv[n] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv(report, argv);
        fprintf(stderr, PROG ": %s: %s\n", report, strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        fprintf(stderr, PROG ": cannot run wslshim-report: %s\n", strerror(errno));
    } else {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    free(argv);
    free(report);
}

static int cmd_run(int argc, char **argv)
{
    struct run_options o;
    parse_run_options(argc, argv, &o);
    char *shim = find_shim();
    if (!shim)
        fail("cannot find " SHIM_NAME " (looked in %s, %s/../lib and " WSLSHIM_INSTALL_FULL_LIBDIR ")", self_dir,
             self_dir);
    gethostname(host_name, sizeof host_name - 1);
    host_name[sizeof host_name - 1] = 0;

    struct output_plan plan;
    plan_output(&o, &plan);
    struct trace_set before = {0};
    off_t helpers_before = 0;
    if (!plan.dir_has_escapes && !plan.run_dir) {
        scan_traces(plan.dir, plan.base, NULL, &before);
        size_t others = count_traces(plan.dir);
        if (others && !o.append)
            fail("%s/ already holds %zu trace%s of an earlier run, and a report of the folder would merge the two "
                 "runs: give -o a new folder, remove them, or pass --append", plan.shown_dir, others,
                 others == 1 ? "" : "s");
    }
    helpers_before = helpers_size(&plan);

    /* The forwarded signals stay blocked from before fork until child_pid is set. */
    sigset_t fwd, old_mask;
    sigemptyset(&fwd);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&fwd, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &fwd, &old_mask);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    struct sigaction old_actions[N_FORWARDED];
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded_signals[i], &sa, &old_actions[i]);

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        fail("cannot start %s: %s", o.argv[0], strerror(errno));
    if (pid == 0) {
        for (size_t i = 0; i < N_FORWARDED; i++)
            sigaction(forwarded_signals[i], &old_actions[i], NULL);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        exec_child(&o, &plan, shim);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            fail("waiting for %s: %s", o.argv[0], strerror(errno));
    }
    child_pid = 0;

    /* Exec failures (126/127, with the child's own message) have no traces to tell about. */
    bool exec_failed = WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127);
    struct trace_set traces = {0};
    if (!plan.dir_has_escapes)
        scan_traces(plan.dir, plan.base, &before, &traces);
    size_t helpers = helpers_noted(&plan, helpers_before);
    if (!(exec_failed && traces.count == 0)) {
        print_traces(&plan, &traces, !o.report, helpers);
        if (o.report)
            run_report(&traces);
    }
    if (plan.run_dir && traces.count == 0) {
        /* nothing in it (but the notes of helpers not kept): leave no directory behind */
        char *notes = xasprintf("%s/" HELPERS_FILE, plan.dir);
        unlink(notes);
        free(notes);
        rmdir(plan.dir);
    }
    trace_set_free(&before);
    trace_set_free(&traces);
    free(plan.pattern);
    free(plan.dir);
    free(plan.base);
    free(plan.shown_dir);
    free(shim);

    if (WIFSIGNALED(status))
        die_of_signal(WTERMSIG(status));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* ---- the other subcommands: exec of a sibling program ---------------------------------------------- */

__attribute__((noreturn)) static void exec_sibling(const char *name, const char *build_path, int argc, char **argv)
{
    char *path = find_sibling(name, build_path);
    if (!path)
        fail("%s is not installed next to " PROG " (looked in %s)", name, self_dir);
    char **args = xmalloc(((size_t)argc + 2) * sizeof *args);
    args[0] = (char *)name;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    args[argc + 1] = NULL;
    fflush(stdout);
    execv(path, args);
    fail("cannot run %s: %s", path, strerror(errno));
}

/* A user whose environment already preloads the shim would have the launcher
 * traced too (a trace of its own, and the shim's exec hooks rewriting the
 * child's LD_PRELOAD). If the shim is in this process (the object that
 * defines our execve is not libc's and also defines open, read and _exit, as
 * the shim does; or it is named libwslshim.so), start again without it: the
 * raw execve system call, since the shim's execve would put it back.
 * Nothing here makes a call the shim records (no open, stat or read). */
static bool defined_in(void *fn, const char *object)
{
    Dl_info info;
    return dladdr(fn, &info) && info.dli_fname && strcmp(info.dli_fname, object) == 0;
}

static void leave_the_shim(char **argv)
{
    Dl_info info, libc;
    if (!dladdr((void *)execve, &info) || !info.dli_fname || !dladdr((void *)getpid, &libc) || !libc.dli_fname)
        return;
    const char *base = strrchr(info.dli_fname, '/');
    bool is_shim = strcmp(base ? base + 1 : info.dli_fname, SHIM_NAME) == 0 ||
                   (strcmp(info.dli_fname, libc.dli_fname) != 0 && defined_in((void *)open, info.dli_fname) &&
                    defined_in((void *)read, info.dli_fname) && defined_in((void *)_exit, info.dli_fname));
    const char *old = getenv("LD_PRELOAD");
    if (!is_shim || !old)
        return;
    /* LD_PRELOAD without the shim: the name it was loaded by, and any libwslshim.so */
    char *kept = xmalloc(strlen(old) + 1), *copy = xstrdup(old), *save = NULL;
    size_t n = 0;
    for (char *tok = strtok_r(copy, ": \t", &save); tok; tok = strtok_r(NULL, ": \t", &save)) {
        const char *name = strrchr(tok, '/');
        if (strcmp(tok, info.dli_fname) == 0 || strcmp(name ? name + 1 : tok, SHIM_NAME) == 0)
            continue;
        n += (size_t)sprintf(kept + n, "%s%s", n ? ":" : "", tok);
    }
    if (n)
        setenv("LD_PRELOAD", kept, 1);
    else
        unsetenv("LD_PRELOAD");
    free(copy);
    free(kept);
    syscall(SYS_execve, "/proc/self/exe", argv, environ);
    /* could not: go on traced */
}

int main(int argc, char **argv)
{
    leave_the_shim(argv);
    find_self_dir(argv[0]);
    if (argc < 2)
        usage_error("no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        return cli_print_version(PROG);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "report") == 0)
        exec_sibling("wslshim-report", WSLSHIM_BUILD_REPORT, argc - 2, argv + 2);
    if (strcmp(cmd, "probe") == 0)
        exec_sibling("wslshim-probe", WSLSHIM_BUILD_PROBE, argc - 2, argv + 2);
    if (strcmp(cmd, "doctor") == 0)
        exec_sibling("wslshim-doctor", WSLSHIM_BUILD_DOCTOR, argc - 2, argv + 2);
    if (cmd[0] == '-')
        usage_error("unknown option '%s'", cmd);
    usage_error("unknown command '%s'", cmd);
}
