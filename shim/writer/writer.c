/*
 * The writer thread: drains every thread's ring, encodes the events, and
 * streams them through zstd into this process's trace file. All formatting,
 * compression and system calls of the shim happen here, off the program's
 * threads. A zstd block ends at least every second, so a killed process
 * loses at most about a second of events.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cuda.h>
/* ZSTD_c_literalCompressionMode (experimental in zstd 1.5; the shim links libzstd.a where there is one) */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "api_ids.h"
#include "shim_internal.h"

#define FLUSH_INTERVAL_NS 1000000000ull   /* a decodable block boundary at least this often */
#define THREADS_LOOK_NS 50000000ull       /* how often the writer looks whether the program's threads all ended */
#define CALIBRATION_NS 20000000ull        /* second clock sample soon after the first */
#define EVENTS_PER_CHUNK 4096u

enum writer_state { WRITER_NONE = 0, WRITER_RUNNING, WRITER_STOPPED, WRITER_PAUSED };

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int writer_state;
static _Atomic int writer_stop;
static _Atomic int writer_pause;            /* ask the thread to leave without ending the trace */
static _Atomic uint64_t writer_resume_after; /* paused at a fork: not before this (mono ns) */
_Atomic int wsl_writer_paused;               /* read by the rings' slow path */
static pthread_t writer_thread;
static _Atomic uint32_t writer_wake_word; /* futex: bumped to cut the writer's sleep short */
/* The lock-free end of a trace (signal handlers, _exit): a request the writer
 * answers by writing everything out, ending the trace and setting final_done
 * (a futex the requester waits on, bounded). */
static _Atomic int final_req;
static _Atomic uint32_t final_done;
static _Atomic long writer_tid;
/* The writer thread's descriptor table (writer_table_own): its own while set
 * (by the thread itself, cleared as it leaves); never again once
 * writer_keep_shared is set. */
static _Atomic int writer_unshared, writer_keep_shared;
/* Set by a new writer thread once its table is what it keeps (writer_spawn waits for it). */
static _Atomic uint32_t writer_table_set;

struct chunk_part {
    const void *data;
    size_t size;
};
static void emit_chunk_parts(uint32_t type, const struct chunk_part *parts, unsigned count);
static void emit_chunk(uint32_t type, const void *a, size_t na, const void *b, size_t nb);

/* The mount table last written, to write it again only when it changed. */
static char *mounts_buf, *mounts_prev;
static size_t mounts_cap, mounts_prev_len, mounts_prev_cap;

static void emit_mounts_if_changed(void)
{
    size_t n = wsl_io_read_mounts(&mounts_buf, &mounts_cap);
    if (!n || (n == mounts_prev_len && !memcmp(mounts_buf, mounts_prev, n)))
        return;
    if (wsl_cfg.io_paths_hash)
        wsl_path_hash_note_mounts(mounts_buf, n);
    wsl_io_note_mounts(mounts_buf, n);
    emit_chunk(WSL_CHUNK_MOUNTS, mounts_buf, n, NULL, 0);
    if (n > mounts_prev_cap) {
        char *nb = realloc(mounts_prev, n);
        if (!nb)
            return;
        mounts_prev = nb;
        mounts_prev_cap = n;
    }
    memcpy(mounts_prev, mounts_buf, n);
    mounts_prev_len = n;
}

/* Writer-thread state. */
static int trace_fd = -1;
static ZSTD_CCtx *zctx;
static uint8_t *zout;
static size_t zout_size;
static int write_failed;
static char trace_path[PATH_MAX];
/* An EVENTS chunk's columns, each sized for the worst case of a full chunk. */
static uint8_t col_op[EVENTS_PER_CHUNK * WSL_COL_OP_MAX];
static uint8_t col_dt[EVENTS_PER_CHUNK * WSL_COL_DT_MAX];
static uint8_t col_dur[EVENTS_PER_CHUNK * WSL_COL_DUR_MAX];
static uint8_t col_lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX];
static struct wsl_codec_state codec;
static struct wsl_pack_state pack;
static uint16_t codec_touched[WSL_MAX_API_IDS]; /* api slots used since the last reset */
static uint8_t codec_is_touched[WSL_MAX_API_IDS];
static unsigned codec_touched_count;
static uint64_t events_written, events_dropped;
static uint32_t events_chunk_seq; /* the last EVENTS chunk's seq (trace format 1.7) */
static uint32_t threads_seen;

/* Process start, in every clock; reset in a forked child. */
static uint64_t start_ticks, start_mono, start_real;

/* Driver facts, noted by the cuInit hook and written by the writer. */
static void *_Atomic driver_cuInit;
static _Atomic int driver_init_result;
static _Atomic int driver_pending;

void wsl_thread_forbid_recording(void);

/* ---- distributed identity (RANK chunks) ---------------------------------------------- */

/* The launchers' variables a RANK chunk keeps (trace_format.h), and nothing else. */
static const char *const rank_vars[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "CUDA_VISIBLE_DEVICES",
};

/* Appends "key=value\0" when it fits; returns the new length. */
static size_t rank_put(char *buf, size_t n, size_t cap, const char *key, const char *value)
{
    size_t lk = strlen(key), lv = strnlen(value, 1024);
    if (!lk || n + lk + 1 + lv + 1 > cap)
        return n;
    memcpy(buf + n, key, lk);
    buf[n + lk] = '=';
    memcpy(buf + n + lk + 1, value, lv);
    buf[n + lk + 1 + lv] = 0;
    return n + lk + 1 + lv + 1;
}

/* The listed variables as the process has them now. Called on a program
 * thread (recording start, cuInit), never the writer's: the environment is
 * the program's to change. */
static size_t rank_collect(char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *v = getenv(rank_vars[i]);
        if (v)
            n = rank_put(buf, n, cap, rank_vars[i], v);
    }
    return n;
}

/* Snapshot taken when the driver came up, published with driver_pending. */
static char rank_at_init[WSL_RANK_MAX_PAYLOAD];
static size_t rank_at_init_len;

/* ---- output ------------------------------------------------------------------- */

static void write_all(const uint8_t *p, size_t n)
{
    while (n && !write_failed) {
        ssize_t w = write(trace_fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            write_failed = 1;
            wsl_log(WSL_LOG_ERROR, "writing %s failed (%s); recording stopped, the program goes on",
                    trace_path, strerror(errno));
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Whole chunks gather in zacc and are compressed in one call per frame
 * (ZSTD_compress2): about a megabyte, or what came in the last second. One-shot
 * compression of a contiguous buffer is cheaper than feeding the streaming
 * compressor chunk by chunk, and every frame holds only whole chunks, so a
 * killed process leaves a trace readable up to its last frame. */
/* 64 KiB: with zstd level -1 (no entropy stage) a frame of noisy event times
 * can compress little, and a cut trace (disk full, RLIMIT_FSIZE, SIGKILL) reads
 * only up to its last whole block; small frames keep that loss small
 * (preload.trace_write_fails_program_goes_on, 48 KiB limit). The price: about
 * 50 instructions more per hooked call than with 1 MiB frames (tests/bench/run_bench.sh:
 * 405 added with 1 MiB, 451-459 with 64 KiB; 256 KiB costs as much and fails that test
 * now and then under TSan). */
#define ZACC_TARGET (64u << 10)
static uint8_t *zacc;
static size_t zacc_len, zacc_cap;

static void z_frame(void)
{
    if (!zacc_len || write_failed || !zctx) {
        zacc_len = 0;
        return;
    }
    size_t bound = ZSTD_compressBound(zacc_len);
    if (bound > zout_size) {
        uint8_t *nb = realloc(zout, bound);
        if (!nb) {
            write_failed = 1;
            wsl_log(WSL_LOG_ERROR, "out of memory compressing the trace; recording stopped");
            return;
        }
        zout = nb;
        zout_size = bound;
    }
    size_t n = ZSTD_compress2(zctx, zout, zout_size, zacc, zacc_len);
    zacc_len = 0;
    if (ZSTD_isError(n)) {
        write_failed = 1;
        wsl_log(WSL_LOG_ERROR, "compressing the trace failed: %s", ZSTD_getErrorName(n));
        return;
    }
    write_all(zout, n);
}

static int zacc_reserve(size_t more)
{
    if (zacc_len + more <= zacc_cap)
        return 0;
    size_t cap = zacc_cap ? zacc_cap : ZACC_TARGET + (ZACC_TARGET >> 2);
    while (cap < zacc_len + more)
        cap *= 2;
    uint8_t *nb = realloc(zacc, cap);
    if (!nb)
        return -1;
    zacc = nb;
    zacc_cap = cap;
    return 0;
}

static void z_append(const void *data, size_t size)
{
    if (write_failed || !size)
        return;
    if (zacc_reserve(size) != 0) {
        write_failed = 1;
        wsl_log(WSL_LOG_ERROR, "out of memory buffering the trace; recording stopped");
        return;
    }
    memcpy(zacc + zacc_len, data, size);
    zacc_len += size;
}

/* One chunk whose payload is the parts, in order. */
static void emit_chunk_parts(uint32_t type, const struct chunk_part *parts, unsigned count)
{
    size_t total = 0;
    for (unsigned i = 0; i < count; i++)
        total += parts[i].size;
    if (zacc_len && zacc_len + sizeof(struct wsl_chunk_header) + total > ZACC_TARGET)
        z_frame();
    struct wsl_chunk_header h = {type, (uint32_t)total};
    z_append(&h, sizeof h);
    for (unsigned i = 0; i < count; i++)
        z_append(parts[i].data, parts[i].size);
}

static void emit_chunk(uint32_t type, const void *a, size_t na, const void *b, size_t nb)
{
    const struct chunk_part parts[2] = {{a, na}, {b, nb}};
    emit_chunk_parts(type, parts, 2);
}

static void emit_clock(void)
{
    struct wsl_clock_sample c;
    c.ticks = wsl_ticks();
    c.mono_ns = wsl_mono_ns();
    c.real_ns = wsl_real_ns();
    emit_chunk(WSL_CHUNK_CLOCK, &c, sizeof c, NULL, 0);
}

/* ---- opening the trace ---------------------------------------------------------- */

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
                snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)(start_real / 1000000000ull));
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

static size_t read_small_file(const char *path, char *buf, size_t size);

/* The pid in the PROCESS chunk that opens the trace at `path` (its first
 * bytes decompressed), or -1; its ppid in *ppid when asked. */
static int trace_pid(const char *path, int *ppid)
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
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || trace_pid(path, NULL) != (int)getpid())
        return 0;
    char buf[1024];
    size_t n = read_small_file("/proc/self/stat", buf, sizeof buf - 1);
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

/* ---- short helper processes (wslshim run) ------------------------------------------
 * A wrapper script (a pyenv shim) runs many short helper processes (bash,
 * sed, cat, head...) before it execs the real program, each of which would
 * leave a trace. Under `wslshim run` (WSLSHIM_RUN_ROOT set, the pid of the
 * process the launcher started) a trace that ends with nothing of interest in
 * it is removed when it ends, and one line goes to wslshim-helpers.txt in the
 * trace folder (the launcher counts them). Nothing of interest: no CUDA or
 * NVTX event (only file calls), no driver, no events dropped, at most
 * HELPER_MAX_BYTES read, written or mapped on files the shim saw opened (a
 * pipe, stdout: not counted), at most HELPER_MAX_DIR_OPS renames, unlinks or
 * mkdirs, less than HELPER_MAX_NS since the image started, ended by exit or
 * exec (not by a signal: signals.c keeps it), and no trace in the folder,
 * written since it started, of a child of this pid (a parent of a kept trace
 * stays). The run's root process keeps the trace of its last image (exit),
 * and drops only images it exec'd away from. WSLSHIM_KEEP_HELPERS=1 keeps
 * every trace. A killed helper (SIGKILL) leaves its trace. The counts are
 * gathered by the writer while it encodes events, and only while the trace
 * may still be a helper's. docs/usage.md. */
#define HELPER_MAX_BYTES (8u << 10) /* pyenv 2.x helpers: 4817 bytes at most (pyenv-which) */
#define HELPER_MAX_DIR_OPS 8u
#define HELPER_MAX_NS 1000000000ull
#define HELPERS_FILE "wslshim-helpers.txt"

static int helper_root_pid;      /* WSLSHIM_RUN_ROOT, 0: not under wslshim run, or keep every trace */
static int helper_possible;      /* the writer's: nothing of interest written yet */
static uint64_t helper_bytes;
static unsigned helper_dir_ops;
static _Atomic int helper_exec;  /* the trace ends for an exec (exec_hooks.c) */
static _Atomic int helper_keep;  /* keep it whatever it holds (a signal ended the process) */

/* On a program thread (writer_open): the settings, read from the environment now. */
static void helper_config(void)
{
    const char *root = getenv("WSLSHIM_RUN_ROOT"), *keep = getenv("WSLSHIM_KEEP_HELPERS");
    helper_root_pid = root && *root && !(keep && *keep && strcmp(keep, "0") != 0) ? atoi(root) : 0;
    helper_possible = helper_root_pid > 0;
    helper_bytes = 0;
    helper_dir_ops = 0;
    atomic_store(&helper_keep, 0);
}

void wsl_writer_note_exec(int execing) { atomic_store(&helper_exec, execing); }

void wsl_writer_keep_trace(void) { atomic_store(&helper_keep, 1); }

/* One event written (writer thread), while the trace may be a helper's. */
static void helper_note(const struct wsl_event *ev)
{
    unsigned cat = wsl_api_table[ev->api].category;
    uint64_t n = 0;
    switch (cat) {
    case WSL_CAT_IO_READ:
    case WSL_CAT_IO_WRITE: /* a2: bytes read or written (an untimed read: all its calls') */
        n = ev->a[0] && (int64_t)ev->a[2] > 0 ? ev->a[2] : 0;
        break;
    case WSL_CAT_IO_MMAP:
        n = ev->a[0] && (int64_t)ev->a[1] > 0 ? ev->a[1] : 0;
        break;
    case WSL_CAT_IO_FOLD:
        for (int i = 1; i < 4; i++) {
            uint64_t slot = ev->a[i];
            if (slot && WSL_FOLD_API(slot) < wsl_api_count &&
                wsl_api_table[WSL_FOLD_API(slot)].category == WSL_CAT_IO_READ)
                n += (uint64_t)WSL_FOLD_CALLS(slot) * WSL_FOLD_VALUE(slot);
        }
        break;
    case WSL_CAT_IO_DIR:
        if (ev->a[2] != WSL_DIR_OP_LIST)
            helper_dir_ops++;
        break;
    case WSL_CAT_IO_OPEN:
    case WSL_CAT_IO_STAT:
    case WSL_CAT_IO_SEEK:
    case WSL_CAT_IO_CLOSE:
        break;
    default: /* CUDA, NVTX, GPU kernels */
        helper_possible = 0;
        return;
    }
    helper_bytes += n < HELPER_MAX_BYTES ? n : HELPER_MAX_BYTES + 1ull;
    if (helper_bytes > HELPER_MAX_BYTES || helper_dir_ops > HELPER_MAX_DIR_OPS)
        helper_possible = 0;
}

/* The folder of the trace at trace_path (a copy in dir). */
static void trace_folder(char *dir, size_t size)
{
    snprintf(dir, size, "%s", trace_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
}

/* Is there, in the trace's folder, a trace of a child of this pid, written
 * since this image started? Only the names that start as the pattern's file
 * name does (up to its first %), and only files written since. */
static int helper_children_kept(const char *dir)
{
    const char *pat = strrchr(wsl_cfg.output_pattern, '/');
    pat = pat ? pat + 1 : wsl_cfg.output_pattern;
    size_t prefix = strcspn(pat, "%");
    DIR *d = opendir(dir);
    if (!d)
        return 1; /* cannot tell: keep it */
    int found = 0, self = (int)getpid();
    double since = (double)start_real / 1e9 - 1.0;
    struct dirent *e;
    char path[PATH_MAX];
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, pat, prefix) != 0 || !strcmp(e->d_name, HELPERS_FILE))
            continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path || !strcmp(path, trace_path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9 < since)
            continue;
        int ppid = -1, pid = trace_pid(path, &ppid);
        found = pid >= 0 && pid != self && ppid == self;
    }
    closedir(d);
    return found;
}

/* At the trace's end (writer_finish, the trace closed): removes a helper's
 * trace, and notes it in the folder's HELPERS_FILE. */
static void helper_drop_if_one(void)
{
    if (!helper_possible || atomic_load(&helper_keep) || write_failed || events_dropped ||
        atomic_load(&driver_cuInit) || !trace_path[0])
        return;
    if (helper_root_pid == (int)getpid() && !atomic_load(&helper_exec))
        return; /* the run's program, its last image */
    if (wsl_mono_ns() - start_mono >= HELPER_MAX_NS)
        return;
    char dir[PATH_MAX];
    trace_folder(dir, sizeof dir);
    if (helper_children_kept(dir))
        return;
    if (syscall(SYS_unlinkat, AT_FDCWD, trace_path, 0) != 0)
        return;
    char exe[PATH_MAX], line[PATH_MAX + 64], file[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    if (wsl_cfg.io_paths_hash || !*name)
        name = "-";
    int n = snprintf(line, sizeof line, "%d %d %s%s\n", (int)getpid(), (int)getppid(), name,
                     atomic_load(&helper_exec) ? " exec" : "");
    if ((size_t)snprintf(file, sizeof file, "%s/" HELPERS_FILE, dir) >= sizeof file)
        return;
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) != n)
            wsl_log(WSL_LOG_DEBUG, "cannot note the helper in %s", file);
        close(fd);
    }
    wsl_log(WSL_LOG_INFO, "%s removed: a short helper process (WSLSHIM_KEEP_HELPERS=1 keeps it)", trace_path);
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
            snprintf(trace_path, sizeof trace_path, "%s", base);
        else
            snprintf(trace_path, sizeof trace_path, "%s.%d", base, i);
        int fd = open(trace_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if (i > 0 && !trace_of_earlier_image(base))
                wsl_log(WSL_LOG_NOTE, "%s exists; the trace goes to %s", base, trace_path);
            return fd;
        }
        if (errno != EEXIST) {
            wsl_log(WSL_LOG_ERROR, "cannot create trace %s: %s; recording off", trace_path, strerror(errno));
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

static size_t read_small_file(const char *path, char *buf, size_t size)
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

static uint32_t detect_wsl(void)
{
    char rel[256];
    size_t n = read_small_file("/proc/sys/kernel/osrelease", rel, sizeof rel - 1);
    rel[n] = 0;
    if (!strcasestr(rel, "microsoft"))
        return 0;
    return strstr(rel, "WSL2") || strcasestr(rel, "microsoft-standard") ? WSL_PROC_WSL2 : WSL_PROC_WSL1;
}

/* WSLSHIM_IO_PATHS=hash: arguments that name files (they hold a '/') are
 * hashed like paths; the others (flags, numbers) stay. In place; returns the
 * new length of the NUL-separated list. */
static size_t hash_path_arguments(char *args, size_t len, size_t cap)
{
    static char copy[65536], out[65536];
    if (len > sizeof copy)
        return len;
    memcpy(copy, args, len);
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t l = strnlen(copy + i, len - i);
        if (memchr(copy + i, '/', l)) {
            size_t room = sizeof out - o - 1;
            o += wsl_path_hash(copy + i, l, out + o, room < WSL_PATH_MAX_LENGTH ? room : WSL_PATH_MAX_LENGTH);
        } else {
            size_t c = l < sizeof out - o - 1 ? l : sizeof out - o - 1;
            memcpy(out + o, copy + i, c);
            o += c;
        }
        out[o++] = 0;
        i += l + 1;
        if (o + 2 >= sizeof out)
            break;
    }
    if (o > cap)
        o = cap;
    memcpy(args, out, o);
    return o;
}

static void emit_process(void)
{
    static char strings[65536];
    size_t n = 0;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    n += (size_t)snprintf(strings + n, sizeof strings - n, "%s", host) + 1;
    char exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    if (wsl_cfg.io_paths_hash && exe[0]) {
        static char hx[PATH_MAX];
        size_t hl = wsl_path_hash(exe, strlen(exe), hx, sizeof hx - 1);
        hx[hl] = 0;
        snprintf(exe, sizeof exe, "%s", hx);
    }
    n += (size_t)snprintf(strings + n, sizeof strings - n, "%s", exe) + 1;
    struct utsname u;
    if (uname(&u) != 0)
        u.release[0] = 0;
    n += (size_t)snprintf(strings + n, sizeof strings - n, "%s", u.release) + 1;
    size_t cl = read_small_file("/proc/self/cmdline", strings + n, sizeof strings - n - 1);
    if (cl && strings[n + cl - 1] != 0)
        strings[n + cl++] = 0; /* cut short: keep it NUL-terminated */
    if (wsl_cfg.io_paths_hash)
        cl = hash_path_arguments(strings + n, cl, sizeof strings - n);
    n += cl;

    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = (int32_t)getpid();
    pi.ppid = (int32_t)getppid();
    pi.flags = (uint32_t)wsl_process_flags() | detect_wsl();
    pi.clock_kind = wsl_cfg.use_tsc ? WSL_CLOCK_TSC : WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = start_ticks;
    pi.start_mono_ns = start_mono;
    pi.start_real_ns = start_real;
    pi.strings_size = (uint32_t)n;
    pi.io_timing = (uint32_t)wsl_cfg.io_timing;
    emit_chunk(WSL_CHUNK_PROCESS, &pi, sizeof pi, strings, n);
}

static void emit_api_table(void)
{
    /* Names are at most 64 bytes each (checked where the table is built), so
     * this buffer always holds the whole table. */
    static uint8_t buf[4 + WSL_MAX_API_IDS * (8 + 2 * 64)];
    size_t n = 4;
    uint32_t count = 0;
    for (unsigned i = 0; i < wsl_api_count; i++) {
        size_t ls = strnlen(wsl_api_table[i].sym, 63) + 1, lb = strnlen(wsl_api_table[i].base, 63) + 1;
        uint16_t id = (uint16_t)i, cat = wsl_api_table[i].category;
        memcpy(buf + n, &id, 2);
        memcpy(buf + n + 2, &cat, 2);
        buf[n + 4] = wsl_api_table[i].per_thread;
        buf[n + 5] = wsl_api_table[i].flags;
        buf[n + 6] = buf[n + 7] = 0;
        memcpy(buf + n + 8, wsl_api_table[i].sym, ls - 1);
        buf[n + 8 + ls - 1] = 0;
        memcpy(buf + n + 8 + ls, wsl_api_table[i].base, lb - 1);
        buf[n + 8 + ls + lb - 1] = 0;
        n += 8 + ls + lb;
        count++;
    }
    memcpy(buf, &count, 4);
    emit_chunk(WSL_CHUNK_API_TABLE, buf, n, NULL, 0);
}

/* Asks the driver about itself, from the writer thread (never the program's),
 * through the same libcuda the program loaded. */
static void emit_driver(void)
{
    struct wsl_driver_info di;
    struct wsl_gpu_info gpus[16];
    memset(&di, 0, sizeof di);
    memset(gpus, 0, sizeof gpus);
    void *init = atomic_load(&driver_cuInit);
    di.init_result = atomic_load(&driver_init_result);
    Dl_info info;
    void *lib = NULL;
    if (init && dladdr(init, &info) && info.dli_fname) {
        snprintf(di.libcuda_path, sizeof di.libcuda_path, "%s", info.dli_fname);
        lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    if (lib && di.init_result == CUDA_SUCCESS) {
        CUresult (*get_version)(int *) = (CUresult(*)(int *))wsl_real_dlsym(lib, "cuDriverGetVersion");
        CUresult (*get_count)(int *) = (CUresult(*)(int *))wsl_real_dlsym(lib, "cuDeviceGetCount");
        CUresult (*get_dev)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))wsl_real_dlsym(lib, "cuDeviceGet");
        CUresult (*get_name)(char *, int, CUdevice) =
            (CUresult(*)(char *, int, CUdevice))wsl_real_dlsym(lib, "cuDeviceGetName");
        CUresult (*get_mem)(size_t *, CUdevice) = (CUresult(*)(size_t *, CUdevice))wsl_real_dlsym(lib, "cuDeviceTotalMem_v2");
        CUresult (*get_attr)(int *, CUdevice_attribute, CUdevice) =
            (CUresult(*)(int *, CUdevice_attribute, CUdevice))wsl_real_dlsym(lib, "cuDeviceGetAttribute");
        int count = 0;
        if (get_version)
            get_version(&di.driver_version);
        if (get_count && get_count(&count) == CUDA_SUCCESS) {
            for (int i = 0; i < count && i < 16; i++) {
                CUdevice d;
                if (!get_dev || get_dev(&d, i) != CUDA_SUCCESS)
                    continue;
                if (get_name)
                    get_name(gpus[di.devices].name, sizeof gpus[0].name - 1, d);
                if (get_mem)
                    get_mem((size_t *)&gpus[di.devices].total_mem, d);
                if (get_attr) {
                    get_attr(&gpus[di.devices].cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
                    get_attr(&gpus[di.devices].cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
                }
                di.devices++;
            }
        }
    }
    /* The RANK chunk again: the environment at cuInit, plus each GPU's PCI bus id. */
    static char rank_buf[WSL_RANK_MAX_PAYLOAD];
    size_t rn = rank_at_init_len;
    memcpy(rank_buf, rank_at_init, rn);
    if (lib && di.init_result == CUDA_SUCCESS) {
        CUresult (*get_dev)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))wsl_real_dlsym(lib, "cuDeviceGet");
        CUresult (*get_pci)(char *, int, CUdevice) =
            (CUresult(*)(char *, int, CUdevice))wsl_real_dlsym(lib, "cuDeviceGetPCIBusId");
        for (uint32_t i = 0; get_dev && get_pci && i < di.devices; i++) {
            CUdevice d;
            char bus[64] = "", key[32];
            if (get_dev(&d, (int)i) != CUDA_SUCCESS || get_pci(bus, (int)sizeof bus - 1, d) != CUDA_SUCCESS)
                continue;
            snprintf(key, sizeof key, "gpu.%u.pci_bus_id", i);
            rn = rank_put(rank_buf, rn, sizeof rank_buf, key, bus);
        }
    }
    if (lib)
        dlclose(lib);
    emit_chunk(WSL_CHUNK_DRIVER, &di, sizeof di, gpus, sizeof gpus[0] * di.devices);
    if (rn)
        emit_chunk(WSL_CHUNK_RANK, rank_buf, rn, NULL, 0);
}

void wsl_writer_note_driver(void *real_cuInit, int init_result)
{
    if (atomic_load(&driver_cuInit))
        return;
    atomic_store(&driver_init_result, init_result);
    void *expect = NULL;
    if (atomic_compare_exchange_strong(&driver_cuInit, &expect, real_cuInit)) {
        /* once per process, on the program's thread; the writer reads it after driver_pending */
        rank_at_init_len = rank_collect(rank_at_init, sizeof rank_at_init);
        atomic_store(&driver_pending, 1);
    }
}

/* ---- draining ---------------------------------------------------------------------- */

/* Events base[from & mask] .. base[(to - 1) & mask] of thread tid, as one chunk. */
static void emit_event_chunk(uint32_t tid, const struct wsl_event *base, uint64_t mask, uint64_t from, uint64_t to,
                             uint64_t dropped)
{
    struct wsl_events_header eh;
    memset(&eh, 0, sizeof eh);
    eh.tid = tid;
    eh.dropped = dropped;
    eh.base_ticks = from < to ? base[from & mask].t_start : 0;
    eh.seq = ++events_chunk_seq;
    /* Each chunk decodes on its own: reset the codec, but only the slots the
     * previous chunk used (a full reset is 64 KiB, chunks are often small). */
    for (unsigned i = 0; i < codec_touched_count; i++) {
        memset(&codec.prev[codec_touched[i]], 0, sizeof codec.prev[0]);
        codec_is_touched[codec_touched[i]] = 0;
    }
    codec_touched_count = 0;
    codec.prev_t = eh.base_ticks;
    wsl_pack_reset(&pack, 1);
    struct wsl_packed_out o = {col_op, col_dt, col_dur, col_lit};
    uint32_t count = 0;
    for (uint64_t i = from; i < to; i++) {
        const struct wsl_event *ev = &base[i & mask];
        if (WSL_UNLIKELY(ev->api >= wsl_api_count))
            continue; /* cannot happen: ids come from the table */
        if (WSL_UNLIKELY(!codec_is_touched[ev->api])) {
            codec_is_touched[ev->api] = 1;
            codec_touched[codec_touched_count++] = ev->api;
        }
        if (WSL_UNLIKELY(helper_possible))
            helper_note(ev);
        wsl_event_encode_packed(&pack, &codec, ev, &o);
        count++;
    }
    eh.count = count;
    /* The column directory: dt and dur bytes, literals; the op column has eh.count. */
    uint32_t dir[3] = {(uint32_t)(o.dt - col_dt), (uint32_t)(o.dur - col_dur), pack.literals};
    _Static_assert(sizeof dir == WSL_EVENTS_DIRECTORY_SIZE, "column directory");
    eh.encoded_size = (uint32_t)(sizeof dir + eh.count + dir[0] + dir[1] + (size_t)(o.lit - col_lit));
    const struct chunk_part parts[] = {
        {&eh, sizeof eh},
        {dir, sizeof dir},
        {col_op, (size_t)(o.op - col_op)},
        {col_dt, dir[0]},
        {col_dur, dir[1]},
        {col_lit, (size_t)(o.lit - col_lit)},
    };
    emit_chunk_parts(WSL_CHUNK_EVENTS_PACKED, parts, sizeof parts / sizeof parts[0]);
    events_written += eh.count;
}

/* Path entries are published before the events that name them: drained after
 * the event head was read, they cover every event about to be written. Each
 * path ring is read to its head or to its first marker (then the thread's next
 * entries are in the other ring: shim_internal.h, two rings). */
static void drain_paths(struct wsl_thread *t)
{
    static uint8_t buf[WSL_PATH_RING];
    static char hashed[WSL_PATH_MAX_LENGTH];
    size_t n = 0;
    for (int turn = 0; turn < 8; turn++) {
        int big = (int)atomic_load_explicit(&t->w_paths_big, memory_order_relaxed);
        const uint8_t *ring = big ? t->paths : t->small_paths;
        uint32_t size = big ? WSL_PATH_RING : WSL_PATH_SMALL;
        _Atomic uint64_t *head_at = big ? &t->paths_head : &t->sp_head, *tail_at = big ? &t->paths_tail : &t->sp_tail;
        uint64_t head = atomic_load_explicit(head_at, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(tail_at, memory_order_relaxed);
        if (head == tail)
            break;
        int switched = 0;
        while (tail < head && head - tail <= size) {
            uint32_t off = (uint32_t)(tail & (size - 1));
            struct wsl_path_entry_header h;
            memcpy(&h, ring + off, sizeof h);
            if (h.id == 0 && h.length == WSL_PATH_SWITCH) {
                tail += sizeof h;
                switched = 1;
                break;
            }
            uint32_t step = (uint32_t)((sizeof h + h.length + 7) & ~7u);
            if (h.length > size - off - sizeof h)
                break; /* cannot happen; never read past the ring */
            const char *name = (const char *)ring + off + sizeof h;
            /* Paths (absolute, or under a directory fd) are hashed; kernel names are not paths. */
            if (h.id != 0 && wsl_cfg.io_paths_hash && h.length &&
                (name[0] == '/' || (h.length >= 4 && !memcmp(name, "<fd ", 4)))) {
                h.length = (uint32_t)wsl_path_hash(name, h.length, hashed, sizeof hashed);
                name = hashed;
            }
            if (h.id != 0 && n + sizeof h + h.length > sizeof buf) {
                emit_chunk(WSL_CHUNK_PATHS, buf, n, NULL, 0);
                n = 0;
            }
            if (h.id != 0) {
                memcpy(buf + n, &h, sizeof h);
                memcpy(buf + n + sizeof h, name, h.length);
                n += sizeof h + h.length;
            }
            tail += step;
        }
        atomic_store_explicit(tail_at, switched ? tail : head, memory_order_release);
        if (!switched)
            break;
        atomic_store_explicit(&t->w_paths_big, (uint32_t)!big, memory_order_relaxed);
    }
    if (n)
        emit_chunk(WSL_CHUNK_PATHS, buf, n, NULL, 0);
}

/* ---- untimed file calls (io_hooks.c: sampled timing) -----------------------------------
 * Their events come without times: each gets one no earlier than the thread's
 * previous event and than `floor`, when its ring was drained before (it was
 * recorded after that). Folded calls (WSL_CAT_IO_FOLD) are counted by the
 * thread without events until its fold ends; so that a killed program loses
 * no more of them than of other calls, each drain takes the calls the thread's
 * open fold counted since the drain before (fold_take) and writes them as fold
 * events of their own, and the fold's events, when they come, are lowered by
 * what was written ahead (fold_settle): each call is in exactly one event. */
static struct wsl_fold_track *fold_tracked(struct wsl_thread *t, uint32_t id)
{
    for (int k = 0; k < 2; k++)
        if (t->w_fold[k].live && t->w_fold[k].id == id)
            return &t->w_fold[k];
    return NULL;
}

/* A fold event from the ring, less the calls written ahead of it; 0 when none
 * are left and it carries no close (it is dropped). */
static int fold_settle(struct wsl_thread *t, struct wsl_event *ev)
{
    struct wsl_fold_track *f = fold_tracked(t, WSL_FOLD_ID(ev->result));
    if (!f)
        return 1;
    int left = ev->result & WSL_FOLD_CLOSED;
    for (uint32_t k = 0; k < WSL_FOLD_SLOTS_PER_EVENT; k++) {
        uint32_t j = WSL_FOLD_INDEX(ev->result) + k;
        uint64_t s = ev->a[1 + k];
        if (s && j + 1 < f->slots)
            s = 0; /* written ahead, all of it */
        else if (s && j + 1 == f->slots)
            s = WSL_FOLD_CALLS(s) > f->calls ? s - ((uint64_t)f->calls << 10) : 0;
        ev->a[1 + k] = s;
        left |= s != 0;
    }
    if (ev->result & WSL_FOLD_LAST)
        f->live = 0; /* the fold's last event: done with */
    return left;
}

/* Whether the writer has read every event the thread published, in both rings
 * (it sets a ring's tail to the head it read). */
static int rings_drained(struct wsl_thread *t)
{
    return atomic_load_explicit(&t->head, memory_order_acquire) == atomic_load_explicit(&t->tail, memory_order_relaxed) &&
           atomic_load_explicit(&t->s_head, memory_order_acquire) == atomic_load_explicit(&t->s_tail, memory_order_relaxed);
}

/* The calls the thread's open fold counted since the last drain, as up to two
 * fold events at time `at` into out; returns how many. Only when the thread
 * published no event since the drain (its rings' heads are where the drain
 * ended): then every event it recorded before those calls (the file's open) is
 * out before them. */
static unsigned fold_take(struct wsl_thread *t, struct wsl_event out[2], uint64_t at)
{
    uint32_t seq = atomic_load_explicit(&t->fold_seq, memory_order_acquire);
    uint32_t used = atomic_load_explicit(&t->fold_used, memory_order_acquire);
    if ((seq & 1) || !used || used > WSL_FOLD_SLOTS)
        return 0;
    uint64_t file = atomic_load_explicit(&t->fold_file, memory_order_relaxed), sl[WSL_FOLD_SLOTS];
    int64_t fd = (int32_t)(uint32_t)file;
    uint64_t path = file >> 32;
    for (uint32_t i = 0; i < used; i++)
        sl[i] = atomic_load_explicit(&t->fold_slot[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&t->fold_seq, memory_order_relaxed) != seq)
        return 0; /* it ended meanwhile: its events are in the ring */
    if (!rings_drained(t))
        return 0; /* events came since the drain: the next one takes these calls after them */
    uint32_t id = seq >> 1 & 0x3ffffffu;
    struct wsl_fold_track *f = fold_tracked(t, id);
    if (!f) { /* a fold not followed yet; the one followed before waits aside for its events */
        if (t->w_fold[0].live)
            t->w_fold[1] = t->w_fold[0];
        f = &t->w_fold[0];
        *f = (struct wsl_fold_track){id, 0, 0, 1};
    }
    uint32_t from = f->slots ? f->slots - 1 : 0;
    if (from >= used || (used == f->slots && WSL_FOLD_CALLS(sl[used - 1]) == f->calls))
        return 0; /* nothing new */
    uint64_t d[WSL_FOLD_SLOTS];
    unsigned nd = 0, base = from;
    for (uint32_t j = from; j < used; j++) {
        uint64_t s = sl[j];
        if (j + 1 == f->slots)
            s = WSL_FOLD_CALLS(s) > f->calls ? s - ((uint64_t)f->calls << 10) : 0;
        if (!s && nd == 0) {
            base = j + 1;
            continue;
        }
        d[nd++] = s;
    }
    f->slots = used;
    f->calls = WSL_FOLD_CALLS(sl[used - 1]);
    unsigned n = 0;
    for (unsigned i = 0; i < nd; i += WSL_FOLD_SLOTS_PER_EVENT, n++) {
        struct wsl_event *e = &out[n];
        memset(e, 0, sizeof *e);
        e->t_start = e->t_end = at;
        e->api = WSL_ID_IO_FOLD;
        e->result = WSL_FOLD_RESULT(id, base + i, 0);
        e->stream = (uint64_t)fd;
        e->a[0] = path;
        for (unsigned k = 0; k < WSL_FOLD_SLOTS_PER_EVENT && i + k < nd; k++)
            e->a[1 + k] = d[i + k];
    }
    return n;
}

/* Times the untimed events of [from, to) and settles the fold events among
 * them; the ring there is the writer's until it moves the tail. Returns the
 * new end (dropped fold events close the gap). */
static uint64_t settle_untimed(struct wsl_thread *t, struct wsl_event *ring, uint64_t mask, uint64_t from, uint64_t to,
                               uint64_t floor)
{
    uint64_t last = t->w_last_ticks, w = from;
    for (uint64_t i = from; i < to; i++) {
        struct wsl_event *ev = &ring[i & mask];
        if (WSL_LIKELY(ev->t_start != 0)) {
            if (ev->t_end > last)
                last = ev->t_end;
        } else {
            uint64_t at = last > floor ? last : floor;
            ev->t_start = ev->t_end = last = at;
            if (ev->api == WSL_ID_IO_FOLD && !fold_settle(t, ev))
                continue;
        }
        if (w != i)
            ring[w & mask] = *ev;
        w++;
    }
    t->w_last_ticks = last;
    return w;
}

/* Drains the ring the writer reads now (w_big), to its head or to its first
 * marker (then the events that come next are in the other ring: the next
 * call reads them). `now`: the ticks before the drain began. Returns the
 * events read, the marker counted; *switched: a marker was read. */
static uint64_t drain_ring(struct wsl_thread *t, uint64_t now, uint64_t *new_drops, int *switched)
{
    int big = (int)atomic_load_explicit(&t->w_big, memory_order_relaxed);
    struct wsl_event *ring = big ? t->ev : t->small_ev;
    uint64_t size = big ? WSL_RING_EVENTS : WSL_RING_SMALL, mask = size - 1;
    _Atomic uint64_t *tail_at = big ? &t->tail : &t->s_tail;
    /* Up to the head read when this drain began: every path the events name,
     * in any thread's ring, was published before them and is out (drain_all) */
    uint64_t head = big ? t->w_cap_head : t->w_cap_s_head;
    drain_paths(t);
    uint64_t tail = atomic_load_explicit(tail_at, memory_order_relaxed);
    uint64_t n = head - tail;
    if (n > size) /* cannot happen; never read garbage */
        tail = head - size, n = size;
    /* Up to the first marker: what follows it in this ring the thread wrote
     * after its turn in the other ring. */
    uint64_t end = tail;
    while (end < head && ring[end & mask].api != WSL_RING_SWITCH)
        end++;
    *switched = end < head;
    int untimed = atomic_load_explicit(&t->io_untimed, memory_order_relaxed);
    if (end > tail || *new_drops) {
        if (end > tail && t->tid != t->writer_seen_tid) {
            t->writer_seen_tid = t->tid;
            threads_seen++;
        }
        uint64_t stop = end, floor = t->w_drain_ticks ? t->w_drain_ticks : start_ticks;
        if (untimed)
            stop = settle_untimed(t, ring, mask, tail, end, floor);
        else if (end > tail)
            t->w_last_ticks = ring[(end - 1) & mask].t_end;
        t->w_drain_ticks = now;
        uint64_t pos = tail;
        if (stop > tail || *new_drops)
            do {
                uint64_t to = pos + (stop - pos > EVENTS_PER_CHUNK ? EVENTS_PER_CHUNK : stop - pos);
                emit_event_chunk(t->tid, ring, mask, pos, to, pos == tail ? *new_drops : 0);
                pos = to;
            } while (pos < stop);
        *new_drops = 0;
    }
    atomic_store_explicit(tail_at, end + (uint64_t)*switched, memory_order_release);
    if (*switched)
        atomic_store_explicit(&t->w_big, (uint32_t)!big, memory_order_relaxed);
    return end - tail + (uint64_t)*switched;
}

static uint64_t drain_pass; /* drains so far (drain_all) */

/* Every thread's paths, to their heads. */
static void drain_paths_all(void)
{
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next)
        if (atomic_load_explicit(&t->state, memory_order_acquire) != WSL_THREAD_FREE)
            drain_paths(t);
}

/* Returns how many events were drained. */
static uint64_t drain_thread(struct wsl_thread *t)
{
    int state = atomic_load_explicit(&t->state, memory_order_acquire);
    if (state == WSL_THREAD_FREE || t->w_cap_pass != drain_pass)
        return 0; /* free, or taken since this drain began: its events wait for the next one */
    uint64_t now = wsl_ticks(); /* events past the heads read below were recorded after this */
    uint64_t dropped = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    uint64_t new_drops = dropped - t->dropped_reported, n = 0;
    events_dropped += new_drops;
    t->dropped_reported = dropped;
    /* The ring read now, and the other one after its marker, in turn; a few
     * turns, and what the thread wrote meanwhile waits for the next pass. */
    for (int turn = 0, switched = 1; switched && turn < 8; turn++)
        n += drain_ring(t, now, &new_drops, &switched);
    /* After the ring's events: the open fold's calls so far. A fold that never
     * ended (one file read over and over, left open) has put no event in the
     * ring yet, so its slots are looked at whatever io_untimed says; once the
     * writer has taken calls ahead of the fold's own events, it must settle
     * those events when they come (drain_ring reads io_untimed for that). */
    if (atomic_load_explicit(&t->io_untimed, memory_order_relaxed) ||
        atomic_load_explicit(&t->fold_used, memory_order_relaxed)) {
        struct wsl_event folded[2];
        uint64_t at = now > t->w_last_ticks ? now : t->w_last_ticks;
        unsigned k = fold_take(t, folded, at);
        if (k) {
            atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
            if (t->tid != t->writer_seen_tid) {
                t->writer_seen_tid = t->tid;
                threads_seen++;
            }
            drain_paths_all(); /* the fold's file may have been opened since the drain began, by any thread */
            emit_event_chunk(t->tid, folded, ~0ull, 0, k, 0);
            t->w_last_ticks = at;
        }
    }
    if (state == WSL_THREAD_RETIRED && rings_drained(t)) {
        int expect = WSL_THREAD_RETIRED;
        atomic_compare_exchange_strong(&t->state, &expect, WSL_THREAD_FREE);
    }
    return n;
}

static void emit_one(uint32_t type, const void *data, size_t size) { emit_chunk(type, data, size, NULL, 0); }

static uint64_t drain_all(void)
{
    uint64_t n = 0;
#ifdef WSL_TEST_SLOW_WRITER
    /* The tiny-rings test build (shim/CMakeLists.txt): a writer that comes late
     * to every drain, so that threads go on in their large rings and back. */
    struct timespec late = {0, WSL_TEST_SLOW_WRITER * 1000L};
    nanosleep(&late, NULL);
    /* WSLSHIM_TEST_STALL_MS: the writer stalls that long once, at its first
     * drain, so that a burst fills the ring (preload.ring_full_drops_once). */
    static int stalled;
    const char *stall = stalled ? NULL : getenv("WSLSHIM_TEST_STALL_MS");
    stalled = 1;
    if (stall && atoi(stall) > 0) {
        struct timespec st = {atoi(stall) / 1000, (long)(atoi(stall) % 1000) * 1000000L};
        nanosleep(&st, NULL);
    }
#endif
    /* An event may name a path another thread published (a descriptor one
     * thread opened, read by another): every thread's event heads first, then
     * every thread's paths, then the events up to those heads. A path is
     * published before any event that names it, so each is out before them,
     * and a trace cut at any frame (SIGKILL) holds the path of every call in
     * it. */
    drain_pass++;
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next) {
        if (atomic_load_explicit(&t->state, memory_order_acquire) == WSL_THREAD_FREE)
            continue;
        t->w_cap_head = atomic_load_explicit(&t->head, memory_order_acquire);
        t->w_cap_s_head = atomic_load_explicit(&t->s_head, memory_order_acquire);
        t->w_cap_pass = drain_pass;
    }
    drain_paths_all();
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next)
        n += drain_thread(t);
    return n;
}

static void writer_finish(void);

/* State letter of a task of this process ('R', 'S', 'Z'...), from its stat file; 0 if unknown. */
static char task_state(const char *stat_path)
{
    char buf[512];
    int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Has every thread of the program ended, the writer alone left? glibc ends a
 * process with exit(0) when its last thread ends (the main thread by
 * pthread_exit, say), counting threads itself: the writer is one, so without
 * this the process would outlive its program. Cheap while the main thread runs
 * (one read of /proc/self/stat); only once it has ended, the other tasks. */
/* The signal mask of the thread that started the writer: the writer takes it
 * back before it ends the process for the program's last thread. */
static sigset_t writer_spawner_mask;

static int program_threads_ended(void)
{
    char st = task_state("/proc/self/stat");
    if (st != 'Z' && st != 'X')
        return 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    long self = atomic_load(&writer_tid);
    int alive = 0;
    struct dirent *e;
    char path[64];
    while (!alive && (e = readdir(d)) != NULL) {
        long tid = atol(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
        char s = task_state(path);
        alive = s != 'Z' && s != 'X' && s != 0;
    }
    closedir(d);
    return !alive;
}

/* A descriptor table of the writer's own, while the program has one thread and
 * has not loaded the driver: with a second task sharing its table, Linux takes a
 * reference on the file (and, for read and write, the file position's lock) in
 * every descriptor call of the program's, +17% on a page-cached read() of 4 KiB
 * on the H200 host (docs/overhead.md, tests/io/bench_fdshare). What the writer
 * touches then is its own: the trace (opened before it starts, so in both
 * tables) and the files it reads (/proc). It gives the table back, by leaving
 * for a writer that shares the program's, before anything that needs the
 * program's descriptors on the writer thread: the program's second thread
 * (the writer would stand for it no longer), the driver (the writer's GPU
 * timing and device queries use the descriptors the driver opens in program
 * threads) and the end of its one thread (the writer then calls exit(0) in its
 * place, and atexit handlers flush the program's files): wsl_writer_share_table. */
static void writer_table_own(void)
{
#if !WSL_TSAN
    if (atomic_load(&writer_keep_shared) || trace_fd < 0 ||
        atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) != WSL_PROGRAM_THREADS_ONE)
        return;
    /* The new table must hold none of the program's descriptors: a copy of a
     * pipe's write end would keep its reader from ever seeing end of file (a
     * parent waiting for its child to close a pipe before exec, as perf does,
     * would wait for ever), a socket would stay connected, a file's flock
     * held. The kernel copies only the descriptors below trace_fd + 1 here
     * (CLOSE_RANGE_UNSHARE), and those below the trace's are closed at once,
     * while the program's one thread waits for this in the call that started
     * the writer (writer_spawn). Without close_range (Linux before 5.9) the
     * table stays shared. */
    if (syscall(SYS_close_range, (unsigned)trace_fd + 1u, ~0u, CLOSE_RANGE_UNSHARE) != 0)
        return;
    wsl_tls.own_fds = 1; /* from here its log waits for the program's table (wsl_log) */
    if (trace_fd > 0)
        syscall(SYS_close_range, 0u, (unsigned)trace_fd - 1u, 0u);
    atomic_store(&writer_unshared, 1);
    wsl_log(WSL_LOG_DEBUG, "writer thread: a descriptor table of its own while the program has one thread");
#endif
}

/* A writer with a table of its own closes its descriptors before it leaves:
 * the kernel would otherwise close them after pthread_join has returned, with
 * the thread still counted (/proc/self/stat: the program would see two threads
 * right after a fork, CPython 3.12 would warn). The program's are not these. */
static void writer_table_drop(void)
{
    if (!wsl_tls.own_fds)
        return;
    if (syscall(SYS_close_range, 0u, ~0u, 0u) != 0)
        for (int fd = 0; fd < 1024; fd++) /* no close_range (Linux before 5.9) */
            syscall(SYS_close, fd);
}

static void *writer_main(void *arg)
{
    (void)arg;
    wsl_thread_forbid_recording();
    atomic_store(&writer_tid, syscall(SYS_gettid));
    writer_table_own();
    atomic_store(&writer_table_set, 1);
    syscall(SYS_futex, &writer_table_set, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    uint64_t last_flush = wsl_mono_ns(), started = last_flush, last_look = last_flush;
    int calibrated = 0;
    unsigned sleep_us = 10000;
    while (!atomic_load(&writer_stop) && !atomic_load(&final_req)) {
        if (atomic_load(&writer_pause)) {
            /* A fork: what the rings hold goes out now, and the thread leaves
             * with the trace open (wsl_writer_pause). */
            drain_all();
            z_frame();
            writer_table_drop();
            atomic_store(&writer_unshared, 0);
            return NULL;
        }
        struct timespec ts = {0, (long)sleep_us * 1000};
        uint32_t seen = atomic_load(&writer_wake_word);
        syscall(SYS_futex, &writer_wake_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
        if (!atomic_load_explicit(&writer_unshared, memory_order_relaxed)) /* never the case (above): no driver */
            wsl_gpu_timing_poll(0, emit_one);
        uint64_t n = drain_all();
        /* Busy rings: come back sooner; idle: back off to 50 ms. */
        sleep_us = n > WSL_RING_EVENTS / 8 ? 2000 : n ? 10000 : (sleep_us < 50000 ? sleep_us + 5000 : 50000);
        if (atomic_load(&driver_pending) && !atomic_load_explicit(&writer_unshared, memory_order_relaxed)) {
            atomic_store(&driver_pending, 0);
            emit_driver();
        }
        uint64_t now = wsl_mono_ns();
        if (!calibrated && now - started >= CALIBRATION_NS) {
            emit_clock();
            calibrated = 1;
        }
        if (now - last_look >= THREADS_LOOK_NS) {
            last_look = now;
            if (program_threads_ended()) {
                /* What the program's last thread would have done, with a program
                 * thread's signal mask (atexit handlers run here); wsl_writer_shutdown
                 * ends the trace. */
                pthread_sigmask(SIG_SETMASK, &writer_spawner_mask, NULL);
                exit(0);
            }
        }
        if (now - last_flush >= FLUSH_INTERVAL_NS) {
            emit_mounts_if_changed(); /* mounts made after start */
            emit_clock();
            z_frame();
            last_flush = now;
        }
    }
    /* The trace ends here, in the writer thread, whoever asked for it. */
    writer_finish();
    writer_table_drop();
    atomic_store(&writer_unshared, 0);
    atomic_store(&final_done, 1);
    syscall(SYS_futex, &final_done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    return NULL;
}

static void writer_finish(void)
{
    int own_table = atomic_load_explicit(&writer_unshared, memory_order_relaxed) &&
                    pthread_equal(pthread_self(), writer_thread);
    if (!own_table)
        wsl_gpu_timing_poll(1, emit_one);
    drain_all();
    drain_all(); /* what was published while the first drained (its heads were read first) */
    if (atomic_load(&driver_pending) && !own_table) {
        atomic_store(&driver_pending, 0);
        emit_driver();
    }
    emit_clock();
    struct wsl_end_info end;
    memset(&end, 0, sizeof end);
    end.end_ticks = wsl_ticks();
    end.events_written = events_written;
    end.events_dropped = events_dropped;
    end.threads = threads_seen;
    emit_chunk(WSL_CHUNK_END, &end, sizeof end, NULL, 0);
    z_frame();
    if (events_dropped)
        wsl_log(WSL_LOG_WARN, "%llu events dropped (buffers full); the trace counts them",
                (unsigned long long)events_dropped);
    wsl_log(WSL_LOG_INFO, "trace written to %s (%llu events)", trace_path, (unsigned long long)events_written);
    wsl_fd_protect(0, -1);
    if (trace_fd >= 0)
        close(trace_fd);
    trace_fd = -1;
    ZSTD_freeCCtx(zctx);
    zctx = NULL;
    helper_drop_if_one();
}

static int writer_open(void)
{
    write_failed = 0;
    events_written = events_dropped = 0;
    events_chunk_seq = 0;
    threads_seen = 0;
    helper_config();
    trace_fd = open_trace();
    if (trace_fd < 0)
        return -1;
    trace_fd = fd_move_high(trace_fd);
    wsl_fd_protect(0, trace_fd);
    zctx = ZSTD_createCCtx();
    zacc_len = 0;
    if (!zout) {
        zout_size = ZSTD_compressBound(ZACC_TARGET + (ZACC_TARGET >> 2));
        zout = malloc(zout_size);
    }
    if (!zctx || !zout) {
        wsl_fd_protect(0, -1);
        close(trace_fd);
        trace_fd = -1;
        return -1;
    }
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_compressionLevel, WSL_TRACE_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_checksumFlag, 1);
    /* Level -1 stores literals raw; the time columns are nearly all literals,
     * whose high bytes repeat: Huffman-coded literals took a launch mix from 3.83
     * to 3.12 bytes per event for about 0.6 ns per input byte (issue 26,
     * docs/overhead.md). A libzstd without the parameter keeps raw literals. */
#ifdef ZSTD_c_literalCompressionMode
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
#endif
    struct wsl_file_header fh;
    memset(&fh, 0, sizeof fh);
    memcpy(fh.magic, WSL_TRACE_MAGIC, sizeof WSL_TRACE_MAGIC);
    fh.byte_order = WSL_TRACE_BYTE_ORDER;
    fh.version_major = WSL_TRACE_VERSION_MAJOR;
    fh.version_minor = WSL_TRACE_VERSION_MINOR;
    fh.header_size = sizeof fh;
    fh.record_size = sizeof(struct wsl_event);
    z_append(&fh, sizeof fh);
    if (wsl_cfg.io_paths_hash) { /* the mount points, before the first path is hashed */
        size_t mn = wsl_io_read_mounts(&mounts_buf, &mounts_cap);
        if (mn)
            wsl_path_hash_note_mounts(mounts_buf, mn);
    }
    emit_process();
    emit_api_table();
    if (wsl_cfg.emulate) { /* the SPEC and its costs (trace format 1.8) */
        struct wsl_emulation_info ei;
        memset(&ei, 0, sizeof ei);
        ei.families = WSL_EMU_FAMILIES;
        for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
            ei.ns[f] = wsl_cfg.emu.ns[f];
        if (wsl_cfg.emu.fs.count) { /* the file system's costs; its paths are in the SPEC */
            ei.families = 8;
            ei.ns[WSL_EMU_INFO_FS_META] = wsl_cfg.emu.fs.meta_ns;
            ei.ns[WSL_EMU_INFO_FS_READ] = wsl_cfg.emu.fs.read_bps;
            ei.ns[WSL_EMU_INFO_FS_WRITE] = wsl_cfg.emu.fs.write_bps;
        }
        ei.spec_size = (uint32_t)strlen(wsl_cfg.emu.text) + 1;
        emit_chunk(WSL_CHUNK_EMULATION, &ei, sizeof ei, wsl_cfg.emu.text, ei.spec_size);
    }
    {
        static char rank_start[WSL_RANK_MAX_PAYLOAD];
        size_t n = rank_collect(rank_start, sizeof rank_start);
        if (n)
            emit_chunk(WSL_CHUNK_RANK, rank_start, n, NULL, 0);
    }
    mounts_prev_len = 0;
    emit_mounts_if_changed();
    emit_clock();
    z_frame();
    wsl_log(WSL_LOG_INFO, "recording to %s", trace_path);
    return 0;
}

void wsl_writer_wake(void)
{
    atomic_fetch_add(&writer_wake_word, 1);
    syscall(SYS_futex, &writer_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#if WSL_TSAN
/* gcc's TSan runtime keeps, in a forked child, its record of the parent's
 * threads, and glibc gives the child's first new thread the stack, and so the
 * thread id, of one of them: TSan then aborts ("dup thread with used id"). A
 * stack of the writer's own, never unmapped (a child would find the parent's
 * in place), gives each writer an id no thread had. TSan builds only. */
static pthread_attr_t writer_attr;
static pthread_attr_t *writer_thread_attr(void)
{
    size_t size = 8u << 20;
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                       -1, 0);
    if (stack == MAP_FAILED || pthread_attr_init(&writer_attr) != 0)
        return NULL;
    if (pthread_attr_setstack(&writer_attr, stack, size) != 0) {
        pthread_attr_destroy(&writer_attr);
        return NULL;
    }
    return &writer_attr;
}
#else
static pthread_attr_t *writer_thread_attr(void) { return NULL; }
#endif

/* Starts the writer thread (writer_lock held); 0 or an errno. */
static int writer_spawn(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer takes no signals */
    writer_spawner_mask = old;                /* published to it by pthread_create */
    pthread_attr_t *attr = writer_thread_attr();
    wsl_note_program_threads(); /* before the writer's thread is the process's second */
    wsl_writer_thread_creating(1);
    atomic_store(&writer_table_set, 0);
    int err = pthread_create(&writer_thread, attr, writer_main, NULL);
    wsl_writer_thread_creating(0);
    if (attr)
        pthread_attr_destroy(attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* A writer that may take a table of its own copies part of the program's
     * for a moment (writer_table_own): the program's one thread does nothing
     * with its descriptors meanwhile (50 ms at most). */
    if (!err && !atomic_load(&writer_keep_shared) &&
        atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) == WSL_PROGRAM_THREADS_ONE) {
        uint64_t deadline = wsl_mono_ns() + 50000000ull;
        while (!atomic_load(&writer_table_set)) {
            uint64_t now = wsl_mono_ns();
            if (now >= deadline)
                break;
            struct timespec ts = {0, (long)(deadline - now)};
            syscall(SYS_futex, &writer_table_set, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        }
    }
    return err;
}

/* ---- fork: the writer thread does not live across it ----------------------------
 * Before a fork (pthread_atfork's prepare) the writer drains the rings, writes
 * out what it has and leaves, the trace still open; after it, in the parent,
 * it comes back at the first event recorded PAUSE_NS later, or when a ring is
 * half full, or at exit. So right after fork() returns, a program sees the
 * threads it has itself: CPython 3.12 and later count them in
 * /proc/self/stat then, and warn about forking a multi-threaded process. */
#define PAUSE_NS 5000000ull

/* The running writer thread leaves, with the trace open (writer_lock held).
 * pthread_join returns when the thread's id is cleared, a little before the
 * kernel stops counting the task: a fork right after would show the program a
 * thread it does not have (CPython 3.12 warns), so wait, at most 10 ms, until
 * the task is gone. */
static void writer_leave(void)
{
    long tid = atomic_load(&writer_tid);
    atomic_store(&writer_pause, 1);
    wsl_writer_wake();
    pthread_join(writer_thread, NULL);
    wsl_log_flush_pending();
    atomic_store(&writer_pause, 0);
    uint64_t deadline = wsl_mono_ns() + 10000000ull;
    while (tid > 0 && syscall(SYS_tgkill, (long)getpid(), tid, 0) == 0 && wsl_mono_ns() < deadline)
        sched_yield();
}

/* A writer thread started (writer_lock held): RUNNING, or, when it cannot be,
 * the trace ended here and STOPPED. Returns 0 or the errno. */
static int writer_start_or_end(const char *when)
{
    int err = writer_spawn();
    if (err) {
        wsl_log(WSL_LOG_ERROR, "cannot start the writer thread%s: %s", when, strerror(err));
        writer_finish();
        atomic_store(&wsl_recording_off, 1); /* nobody would drain the rings */
    }
    atomic_store(&writer_state, err ? WRITER_STOPPED : WRITER_RUNNING);
    return err;
}

void wsl_writer_pause(void)
{
    if (pthread_mutex_trylock(&writer_lock) != 0)
        return; /* a fork from inside a writer start or stop: left running */
    if (atomic_load(&writer_state) == WRITER_RUNNING && !atomic_load(&wsl_shutting_down) &&
        !pthread_equal(pthread_self(), writer_thread)) {
        writer_leave();
        atomic_store(&writer_state, WRITER_PAUSED);
        atomic_store(&wsl_writer_paused, 1);
        atomic_store(&writer_resume_after, ~0ull); /* set when fork returns */
    }
    pthread_mutex_unlock(&writer_lock);
}

/* In the parent, fork() done: the writer may come back PAUSE_NS from now. */
void wsl_writer_after_fork_parent(void)
{
    if (atomic_load(&wsl_writer_paused))
        atomic_store(&writer_resume_after, wsl_mono_ns() + PAUSE_NS);
}

/* Brings a paused writer back (pressure: a ring is half full, or the program
 * ends: at once); the rings' slow path calls it while one is paused. */
void wsl_writer_resume(int pressure)
{
    if (!atomic_load(&wsl_writer_paused))
        return;
    if (!pressure && wsl_mono_ns() < atomic_load(&writer_resume_after))
        return;
    if (pthread_mutex_trylock(&writer_lock) != 0)
        return; /* another thread is at it (or this one, from a signal handler): later */
    if (atomic_load(&writer_state) == WRITER_PAUSED) {
        writer_start_or_end(" again after a fork");
        atomic_store(&wsl_writer_paused, 0);
    }
    pthread_mutex_unlock(&writer_lock);
}

/* Before the program's second thread, its first driver pointer or the end of
 * its one thread (writer_table_own): a writer with a table of its own leaves,
 * its rings drained, for one that shares the program's (started here, from the
 * program's thread). For good: a writer never takes a table of its own again. */
void wsl_writer_share_table(void)
{
    atomic_store(&writer_keep_shared, 1);
    if (!atomic_load(&writer_unshared))
        return;
    int saved = errno;
    wsl_tls_depth++; /* the shim's own thread calls */
    pthread_mutex_lock(&writer_lock);
    if (atomic_load(&writer_unshared) && atomic_load(&writer_state) == WRITER_RUNNING &&
        !pthread_equal(pthread_self(), writer_thread)) {
        writer_leave();
        writer_start_or_end(" sharing the program's descriptors");
    }
    pthread_mutex_unlock(&writer_lock);
    wsl_tls_depth--;
    errno = saved;
}

/* The process's start: when the shim was loaded (its settings read), not when its first call
 * was recorded, so a program's start-up before its first hooked call counts as its own (phases). */
void wsl_writer_note_start(void)
{
    if (!start_mono) {
        start_ticks = wsl_ticks();
        start_mono = wsl_mono_ns();
        start_real = wsl_real_ns();
    }
}

int wsl_writer_start(void)
{
    int st = atomic_load_explicit(&writer_state, memory_order_acquire);
    if (st == WRITER_RUNNING)
        return 0;
    if (st == WRITER_STOPPED)
        return -1;
    if (st == WRITER_PAUSED) {
        /* a new thread records: the fork is behind us. Its events wait in its
         * ring if another thread is bringing the writer back just now. */
        wsl_writer_resume(1);
        return 0;
    }
    int rc = 0;
    pthread_mutex_lock(&writer_lock);
    if (atomic_load(&writer_state) == WRITER_NONE) {
        wsl_writer_note_start();
        /* The file is opened here, in the first recording thread, so that an
         * unwritable path turns recording off at once instead of filling rings. */
        if (writer_open() != 0) {
            atomic_store(&writer_state, WRITER_STOPPED);
            atomic_store(&wsl_recording_off, 1); /* at once: no thread fills a ring from here on */
            rc = -1;
        } else {
            atomic_store(&writer_stop, 0);
            if (writer_start_or_end("") != 0)
                rc = -1;
        }
    } else if (atomic_load(&writer_state) == WRITER_STOPPED) {
        rc = -1;
    }
    pthread_mutex_unlock(&writer_lock);
    return rc;
}

void wsl_writer_shutdown(void)
{
    wsl_tls_depth++; /* closing the trace is not the program's I/O */
    atomic_store(&wsl_shutting_down, 1);
    pthread_mutex_lock(&writer_lock);
    if (atomic_load(&writer_state) == WRITER_RUNNING) {
        int fd = trace_fd, own_table = atomic_load(&writer_unshared);
        atomic_store(&writer_stop, 1);
        wsl_writer_wake();
        if (!pthread_equal(pthread_self(), writer_thread)) {
            pthread_join(writer_thread, NULL); /* it ends the trace */
            wsl_log_flush_pending();
            if (own_table && fd >= 0)
                close(fd); /* the trace's descriptor in the program's table: the writer closed its own */
        } else {
            writer_finish();
        }
    } else if (atomic_load(&writer_state) == WRITER_PAUSED) {
        writer_finish(); /* no writer thread: this one ends the trace */
        atomic_store(&wsl_writer_paused, 0);
    }
    atomic_store(&writer_state, WRITER_STOPPED);
    pthread_mutex_unlock(&writer_lock);
    wsl_tls_depth--;
}

/* Async-signal-safe: no lock, no allocation, only atomics and futexes. The
 * calling thread must not be the writer (a crash in the writer itself cannot
 * be flushed by it). Returns 0 when the trace was ended within the time. */
int wsl_writer_final_flush(unsigned timeout_ms)
{
    if (atomic_load(&writer_state) != WRITER_RUNNING)
        return -1;
    if (syscall(SYS_gettid) == atomic_load(&writer_tid))
        return -1;
    atomic_store(&wsl_shutting_down, 1);
    atomic_store(&final_req, 1);
    wsl_writer_wake();
    uint64_t deadline = wsl_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (!atomic_load(&final_done)) {
        uint64_t now = wsl_mono_ns();
        if (now >= deadline)
            return -1;
        uint64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        syscall(SYS_futex, &final_done, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
    wsl_log_flush_pending();
    return 0;
}

/* In a forked child: the writer thread is gone and the parent's lock may have
 * been held at fork; the parent's trace stays the parent's. */
void wsl_writer_after_fork_child(void)
{
    atomic_store(&wsl_writer_paused, 0); /* the parent's pause is the parent's */
    atomic_store(&wsl_recording_off, 0);  /* the child opens a trace of its own, or tries */
    pthread_mutex_init(&writer_lock, NULL);
    wsl_fd_protect(0, -1);
    if (trace_fd >= 0)
        close(trace_fd);
    trace_fd = -1;
    zctx = NULL; /* the parent's compressor state is not ours to use or free */
    zout = NULL;
    zout_size = 0;
    zacc = NULL; /* the parent's unwritten chunks are the parent's */
    zacc_len = zacc_cap = 0;
    atomic_store(&writer_state, WRITER_NONE);
    atomic_store(&writer_stop, 0);
    atomic_store(&writer_pause, 0);
    atomic_store(&final_req, 0);
    atomic_store(&final_done, 0);
    atomic_store(&writer_tid, 0);
    atomic_store(&driver_pending, 0); /* CUDA is not usable in a forked child */
    atomic_store(&helper_exec, 0); /* the child's trace is its own (helper_config at its start) */
    start_ticks = wsl_ticks();
    start_mono = wsl_mono_ns();
    start_real = wsl_real_ns();
    /* The parent's folded file calls and drain times are the parent's. */
    for (struct wsl_thread *t = atomic_load(&wsl_threads); t; t = t->next) {
        atomic_store_explicit(&t->fold_used, 0, memory_order_relaxed);
        WSL_FOLD_NONE(t);
        atomic_store_explicit(&t->fold_file, WSL_FOLD_FILE(-1, 0), memory_order_relaxed);
        t->w_fold[0].live = t->w_fold[1].live = 0;
        t->w_drain_ticks = 0;
    }
}

/* Restarts recording after a failed exec: a new trace, as if newly started. */
void wsl_writer_restart(void)
{
    pthread_mutex_lock(&writer_lock);
    if (atomic_load(&writer_state) == WRITER_STOPPED)
        atomic_store(&writer_state, WRITER_NONE);
    pthread_mutex_unlock(&writer_lock);
    atomic_store(&helper_exec, 0);
    atomic_store(&wsl_recording_off, 0); /* a new trace, maybe writable this time */
    atomic_store(&wsl_shutting_down, 0);
}
