/*
 * The trace file: its name (WSLSHIM_OUTPUT's pattern), opened so that it never
 * follows or overwrites what is there, its descriptor moved out of the
 * program's way, the bytes written to it, and its close. compress.c hands it
 * whole frames.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <zstd.h>

#include "writer_internal.h"

int wsl_trace_fd = -1;
char wsl_trace_path[PATH_MAX];
int wsl_trace_write_failed;

/* Expands %p (pid), %h (host), %t (start time, seconds since the epoch), %%. */
static int expand_pattern(const char *pat, char *out, size_t size)
{
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    size_t n = 0;
    for (const char *p = pat; *p; p++) {
        char tmp[300];
        const char *piece = tmp;
        if (*p == '%' && p[1]) {
            p++;
            if (*p == 'p')
                snprintf(tmp, sizeof tmp, "%d", (int)getpid());
            else if (*p == 'h')
                piece = host;
            else if (*p == 't')
                snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)(wsl_start_real / 1000000000ull));
            else
                snprintf(tmp, sizeof tmp, "%c", *p);
        } else {
            tmp[0] = *p;
            tmp[1] = 0;
        }
        size_t len = strlen(piece);
        if (n + len + 1 > size)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = 0;
    return 0;
}

/* The pid in the PROCESS chunk that opens the trace at `path` (its first
 * bytes decompressed), or -1; its ppid in *ppid when asked. */
int wsl_trace_pid(const char *path, int *ppid)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    static uint8_t in[16384];
    ssize_t n = read(fd, in, sizeof in);
    close(fd);
    uint8_t out[sizeof(struct wsl_file_header) + sizeof(struct wsl_chunk_header) + sizeof(struct wsl_process_info)];
    ZSTD_DCtx *d = n > 0 ? ZSTD_createDCtx() : NULL;
    if (!d)
        return -1;
    ZSTD_inBuffer ib = {in, (size_t)n, 0};
    ZSTD_outBuffer ob = {out, sizeof out, 0};
    while (ob.pos < ob.size && ib.pos < ib.size) {
        size_t r = ZSTD_decompressStream(d, &ob, &ib);
        if (ZSTD_isError(r) || r == 0)
            break;
    }
    ZSTD_freeDCtx(d);
    struct wsl_file_header fh;
    struct wsl_chunk_header ch;
    struct wsl_process_info pi;
    if (ob.pos < sizeof out)
        return -1;
    memcpy(&fh, out, sizeof fh);
    memcpy(&ch, out + sizeof fh, sizeof ch);
    memcpy(&pi, out + sizeof fh + sizeof ch, sizeof pi);
    if (memcmp(fh.magic, WSL_TRACE_MAGIC, sizeof WSL_TRACE_MAGIC) != 0 || fh.header_size != sizeof fh ||
        ch.type != WSL_CHUNK_PROCESS)
        return -1;
    if (ppid)
        *ppid = pi.ppid;
    return pi.pid;
}

/* Whether `path` is, by all signs, the trace of an earlier image of this very
 * process (exec keeps the pid): a regular file of ours, a trace whose PROCESS
 * chunk names this pid, last written since this process started (its start
 * from /proc/self/stat, in clock ticks of CLOCK_BOOTTIME; 1 s of slack for the
 * ticks' coarseness): a stale trace of another process that had this pid
 * before is older than that. */
static int trace_of_earlier_image(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || wsl_trace_pid(path, NULL) != (int)getpid())
        return 0;
    char buf[1024];
    size_t n = wsl_read_small_file("/proc/self/stat", buf, sizeof buf - 1);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* field 2 may hold spaces */
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot, real;
    if (!p || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 || clock_gettime(CLOCK_REALTIME, &real) != 0)
        return 0;
    double started = (double)strtoull(p + 1, NULL, 10) / (double)hz;
    double since_start = (double)boot.tv_sec + boot.tv_nsec / 1e9 - started;
    double start_real = (double)real.tv_sec + real.tv_nsec / 1e9 - since_start;
    return (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9 >= start_real - 1.0;
}

/* Never follows or overwrites what is there: O_EXCL|O_NOFOLLOW, private 0600.
 * A name already taken gets a suffix, and one line on stderr says so, unless
 * an exec'd image of the same pid took it (the usual case with %p). */
static int open_trace(void)
{
    char base[PATH_MAX - 16];
    if (expand_pattern(wsl_cfg.output_pattern, base, sizeof base) != 0) {
        wsl_log(WSL_LOG_ERROR, "WSLSHIM_OUTPUT expands to a path that is too long");
        return -1;
    }
    for (int i = 0; i < 1000; i++) {
        if (i == 0)
            snprintf(wsl_trace_path, sizeof wsl_trace_path, "%s", base);
        else
            snprintf(wsl_trace_path, sizeof wsl_trace_path, "%s.%d", base, i);
        int fd = open(wsl_trace_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if (i > 0 && !trace_of_earlier_image(base))
                wsl_log(WSL_LOG_NOTE, "%s exists; the trace goes to %s", base, wsl_trace_path);
            return fd;
        }
        if (errno != EEXIST) {
            wsl_log(WSL_LOG_ERROR, "cannot create trace %s: %s; recording off", wsl_trace_path, strerror(errno));
            return -1;
        }
    }
    wsl_log(WSL_LOG_ERROR, "cannot create trace %s: too many files of that name", base);
    return -1;
}

/* Whether the process has one thread (its task folder's links: ".", ".." and
 * one task). The system call: the shim's stat hook never sees it. */
static int process_one_thread(void)
{
#ifdef SYS_newfstatat
    struct stat st;
    return syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/task", &st, 0) == 0 && st.st_nlink == 3;
#else
    return 0;
#endif
}

/* The trace's descriptor moves out of the program's way. Where the hard limit
 * allows, it goes to the soft limit's number, past every number the program
 * can be given (a program that opens files until EMFILE gets as many as
 * without the shim): the soft limit is raised by one for the moment of the
 * dup, only while the process has one thread (no other thread can see or set
 * the limit then), and only for soft limits up to 65536 (the table grows to
 * that number). Otherwise it goes just under 1024, or under the soft limit if
 * that is lower (-1: no room, it stays). The shim's close hooks never let the
 * program close it. Keeps errno. */
static int fd_dup_high(int fd)
{
    int saved = errno, hi = -1;
    struct rlimit rl;
    int known = getrlimit(RLIMIT_NOFILE, &rl) == 0;
    rlim_t lim = known ? rl.rlim_cur : 1024;
    if (known && lim <= 65536 && rl.rlim_max > lim && process_one_thread()) {
        struct rlimit up = {lim + 1, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)lim);
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    if (hi < 0) {
        if (lim > 1024)
            lim = 1024;
        if (lim >= 128)
            hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)lim - 32);
    }
    errno = saved;
    return hi;
}

static int fd_move_high(int fd)
{
    int hi = fd_dup_high(fd);
    if (hi < 0)
        return fd;
    close(fd);
    return hi;
}

/* The first descriptor past 63 grows the process's descriptor table, and
 * Linux, when the table is shared by threads, then waits for an RCU grace
 * period (synchronize_rcu: 5-30 ms measured) before it goes on. The trace is
 * opened by the first thread that records, often after the program has
 * started threads of its own: the table is grown here instead, at load,
 * while the process has one thread and the growth costs microseconds. Only
 * the table's size stays (the kernel never shrinks it); no descriptor does. */
void wsl_writer_reserve_fd(void)
{
    int fd = open("/", O_PATH | O_CLOEXEC);
    if (fd < 0)
        return;
    int hi = fd_dup_high(fd);
    if (hi >= 0)
        close(hi);
    close(fd);
}

size_t wsl_read_small_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    while (n < size) {
        ssize_t r = read(fd, buf + n, size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return n;
}

/* A new trace file, its descriptor moved out of the program's way; -1 when
 * none could be made (the reason logged). */
int wsl_trace_open(void)
{
    int fd = open_trace();
    return fd < 0 ? -1 : fd_move_high(fd);
}

void wsl_trace_write(const uint8_t *p, size_t n)
{
    while (n && !wsl_trace_write_failed) {
        ssize_t w = write(wsl_trace_fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            wsl_trace_write_failed = 1;
            wsl_log(WSL_LOG_ERROR, "writing %s failed (%s); recording stopped, the program goes on",
                    wsl_trace_path, strerror(errno));
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}


void wsl_trace_close(void)
{
    wsl_fd_protect(0, -1);
    if (wsl_trace_fd >= 0)
        close(wsl_trace_fd);
    wsl_trace_fd = -1;
}
