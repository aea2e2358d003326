/*
 * File I/O as a data loader sees it: opens, reads (plain, positioned,
 * vectored, stdio), file mmaps, the stat family, seeks and closes, recorded
 * into the same per-thread rings as the CUDA calls (names and categories in
 * include/wslshim/io_api.def).
 *
 * Per call the hook keeps it lean: fd, path id, bytes, duration. A path is
 * copied once per open or lookup into the thread's path ring (made absolute
 * with a cached working directory), and an fd -> path id table lets reads
 * name their file. Where a file lives is its device: the first open in each
 * directory asks fstat for it, later opens in the same directory reuse it.
 * The analyzer maps devices to filesystems with the mount table the writer
 * snapshots (MOUNTS chunks).
 *
 * Every call is recorded and counted, but a call on a local filesystem (a
 * Linux disk, tmpfs, overlay, /proc...: a few hundred nanoseconds when the page
 * cache holds the data) is timed only 1 in WSLSHIM_IO_TIMING (32) on average:
 * its two clock reads would cost more than the rest of the hook. Such events
 * carry the sampled twin of their id; the untimed ones have no times, which the
 * writer fills in, and it folds runs of alike untimed reads into one event.
 * Calls anywhere else (a Windows drive, a network or FUSE filesystem, a
 * directory not seen yet, a pipe) are all timed: there they are slow, and
 * exactly what the report is about (docs/io.md, "Sampled timing").
 *
 * errno and return values are the real call's: the recording path makes no
 * system call except that first fstat per directory, which saves errno.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "api_ids.h"
#include "shim_internal.h"

/* glibc declares the path and buffer arguments of these functions nonnull, but
 * a program may still pass NULL (the real call then fails with EFAULT): the
 * hooks keep their NULL checks (built with -fno-delete-null-pointer-checks). */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpointer-bool-conversion"
#else
#pragma GCC diagnostic ignored "-Wnonnull-compare"
#endif

/* stdio may define some of these as macros; here they are the functions. */
#undef fread_unlocked
#undef fread
#undef fgets
#undef getline
#undef getdelim
#undef stat
#undef lstat
#undef fstat
#undef fstatat

/* ---- the real functions ------------------------------------------------------------ */
static struct {
    int (*open)(const char *, int, ...);
    int (*open64)(const char *, int, ...);
    int (*__open_2)(const char *, int);
    int (*__open64_2)(const char *, int);
    int (*openat)(int, const char *, int, ...);
    int (*openat64)(int, const char *, int, ...);
    int (*__openat_2)(int, const char *, int);
    int (*__openat64_2)(int, const char *, int);
    int (*creat)(const char *, mode_t);
    int (*creat64)(const char *, mode_t);
    FILE *(*fopen)(const char *, const char *);
    FILE *(*fopen64)(const char *, const char *);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*__read_chk)(int, void *, size_t, size_t);
    ssize_t (*pread)(int, void *, size_t, off_t);
    ssize_t (*pread64)(int, void *, size_t, off64_t);
    ssize_t (*__pread_chk)(int, void *, size_t, off_t, size_t);
    ssize_t (*__pread64_chk)(int, void *, size_t, off64_t, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*preadv)(int, const struct iovec *, int, off_t);
    ssize_t (*preadv64)(int, const struct iovec *, int, off64_t);
    ssize_t (*preadv2)(int, const struct iovec *, int, off_t, int);
    ssize_t (*preadv64v2)(int, const struct iovec *, int, off64_t, int);
    size_t (*fread)(void *, size_t, size_t, FILE *);
    size_t (*fread_unlocked)(void *, size_t, size_t, FILE *);
    size_t (*__fread_chk)(void *, size_t, size_t, size_t, FILE *);
    char *(*fgets)(char *, int, FILE *);
    char *(*__fgets_chk)(char *, size_t, int, FILE *);
    ssize_t (*getdelim)(char **, size_t *, int, FILE *);
    ssize_t (*__getdelim)(char **, size_t *, int, FILE *);
    ssize_t (*getline)(char **, size_t *, FILE *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off64_t);
    int (*stat)(const char *, struct stat *);
    int (*stat64)(const char *, struct stat64 *);
    int (*lstat)(const char *, struct stat *);
    int (*lstat64)(const char *, struct stat64 *);
    int (*fstat)(int, struct stat *);
    int (*fstat64)(int, struct stat64 *);
    int (*fstatat)(int, const char *, struct stat *, int);
    int (*fstatat64)(int, const char *, struct stat64 *, int);
    int (*__xstat)(int, const char *, struct stat *);
    int (*__xstat64)(int, const char *, struct stat64 *);
    int (*__lxstat)(int, const char *, struct stat *);
    int (*__lxstat64)(int, const char *, struct stat64 *);
    int (*__fxstat)(int, int, struct stat *);
    int (*__fxstat64)(int, int, struct stat64 *);
    int (*__fxstatat)(int, int, const char *, struct stat *, int);
    int (*__fxstatat64)(int, int, const char *, struct stat64 *, int);
    int (*statx)(int, const char *, int, unsigned, struct statx *);
    int (*access)(const char *, int);
    int (*faccessat)(int, const char *, int, int);
    off_t (*lseek)(int, off_t, int);
    off64_t (*lseek64)(int, off64_t, int);
    int (*close)(int);
    int (*fclose)(FILE *);
    int (*chdir)(const char *);
    int (*fchdir)(int);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
    ssize_t (*writev)(int, const struct iovec *, int);
    size_t (*fwrite)(const void *, size_t, size_t, FILE *);
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*rename)(const char *, const char *);
    int (*renameat)(int, const char *, int, const char *);
    int (*unlink)(const char *);
    int (*unlinkat)(int, const char *, int);
    int (*mkdir)(const char *, mode_t);
    int (*mkdirat)(int, const char *, mode_t);
    DIR *(*opendir)(const char *);
} real;

#define REAL(name) (WSL_LIKELY(real.name != NULL) ? real.name : (__typeof__(real.name))resolve(#name, (void **)&real.name))

static void *resolve(const char *name, void **slot)
{
    void *p = wsl_real_dlsym(RTLD_NEXT, name);
    *slot = p;
    return p;
}

/* While the program has no thread of its own (program_threads.c), the calls
 * that glibc makes cancellation points are made as glibc makes them in a
 * single-threaded process: the system call alone (st_*). Each such hook has a
 * twin (its name_st) for that case and one (name_mt) for the usual one: the
 * exported function only chooses, with two tail calls, so that neither pays
 * for the other's registers. */
#define PROGRAM_ST()                                                                       \
    WSL_UNLIKELY(atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) == WSL_PROGRAM_THREADS_ONE)
/* The kernel's answer as it is (-errno on failure), for the fast twins below. */
static inline __attribute__((always_inline)) long st_syscall4_kernel(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__) || defined(__aarch64__)
    return wsl_syscall4_kernel(nr, a, b, c, d);
#else
    long r = wsl_raw_syscall4(nr, a, b, c, d);
    return r < 0 ? -errno : r;
#endif
}
static inline ssize_t st_read(int fd, void *buf, size_t n)
{
    return (ssize_t)wsl_raw_syscall4(SYS_read, fd, (long)buf, (long)n, 0);
}
static inline ssize_t st_pread(int fd, void *buf, size_t n, off_t off)
{
    return (ssize_t)wsl_raw_syscall4(SYS_pread64, fd, (long)buf, (long)n, (long)off);
}
static inline int st_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return (int)wsl_raw_syscall4(SYS_openat, dirfd, (long)path, flags, (long)mode);
}
static inline int st_close(int fd) { return (int)wsl_raw_syscall4(SYS_close, fd, 0, 0, 0); }

/* Whether the functions the single-threaded twins replace by system calls
 * would otherwise reach glibc's own: where another library after the shim
 * (an interposer preloaded after it: a file-I/O profiler, a path rewriter)
 * defines one of them, that library must see every call, so glibc's path is
 * kept. *who: that library's file. */
int wsl_io_libc_is_next(const char **who)
{
    static const char *const names[] = {"read", "pread", "pread64", "open", "open64", "openat", "openat64", "close"};
    void **slots[] = {(void **)&real.read, (void **)&real.pread, (void **)&real.pread64, (void **)&real.open,
                      (void **)&real.open64, (void **)&real.openat, (void **)&real.openat64, (void **)&real.close};
    _Static_assert(sizeof names / sizeof names[0] == sizeof slots / sizeof slots[0], "one slot per name");
    *who = "?";
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!libc)
        return 0;
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof names / sizeof names[0]; i++) {
        void *next = *slots[i] ? *slots[i] : resolve(names[i], slots[i]);
        if (next != wsl_real_dlsym(libc, names[i])) {
            Dl_info info;
            if (next && dladdr(next, &info) && info.dli_fname)
                *who = info.dli_fname;
            ok = 0;
        }
    }
    dlclose(libc);
    return ok;
}

/* glibc's lseek, lseek64, fstat and fstat64 are its system calls and nothing
 * more (not cancellation points; since 2.33 an fstat is newfstatat(fd, "",
 * AT_EMPTY_PATH)): where glibc's come next after the shim, their hooks make
 * the same system call themselves on their common path, in any program,
 * without a call out and back (FD_FOLD_FAST); elsewhere the full hook calls
 * the next one. */
static int seek_direct, fstat_direct;
#if defined(SYS_newfstatat)
#define WSL_HAVE_NEWFSTATAT 1
#else
#define WSL_HAVE_NEWFSTATAT 0
#define SYS_newfstatat (-1) /* never made: fstat_direct stays 0 */
#endif

static void fd_calls_direct_init(void)
{
#if (defined(__x86_64__) || defined(__aarch64__)) && !WSL_TSAN
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!libc)
        return;
    seek_direct = real.lseek && real.lseek == wsl_real_dlsym(libc, "lseek") &&
                  real.lseek64 == wsl_real_dlsym(libc, "lseek64");
    unsigned major = 0, minor = 0; /* an older glibc makes fstat another system call: left its own */
    fstat_direct = WSL_HAVE_NEWFSTATAT && sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) == 2 &&
                   (major > 2 || (major == 2 && minor >= 33)) && real.fstat &&
                   real.fstat == wsl_real_dlsym(libc, "fstat") && real.fstat64 == wsl_real_dlsym(libc, "fstat64");
    dlclose(libc);
#endif
}

void wsl_io_init(void)
{
#define R(name) resolve(#name, (void **)&real.name);
    R(open) R(open64) R(__open_2) R(__open64_2) R(openat) R(openat64) R(__openat_2) R(__openat64_2)
    R(creat) R(creat64) R(fopen) R(fopen64) R(read) R(__read_chk) R(pread) R(pread64) R(__pread_chk)
    R(__pread64_chk) R(readv) R(preadv) R(preadv64) R(preadv2) R(preadv64v2) R(fread) R(fread_unlocked)
    R(__fread_chk) R(fgets) R(__fgets_chk) R(getdelim) R(__getdelim) R(getline) R(mmap) R(mmap64)
    R(stat) R(stat64) R(lstat) R(lstat64) R(fstat) R(fstat64) R(fstatat) R(fstatat64) R(__xstat)
    R(__xstat64) R(__lxstat) R(__lxstat64) R(__fxstat) R(__fxstat64) R(__fxstatat) R(__fxstatat64)
    R(statx) R(access) R(faccessat) R(lseek) R(lseek64) R(close) R(fclose) R(chdir) R(fchdir)
#undef R
    fd_calls_direct_init();
}

/* ---- fd -> path id, directory -> device ------------------------------------------------- */
/* Per fd: the path id of its open, and FD_LOCAL when the file is on a local
 * filesystem (its calls' timing is sampled). */
#define FD_TABLE_SIZE 65536
#define FD_LOCAL (1ull << 32)
#define FD_EMU (1ull << 33) /* opened under an emulated path (WSLSHIM_EMULATE fs:PATH=9p): never FD_LOCAL */
static _Atomic uint64_t fd_info[FD_TABLE_SIZE];
static _Atomic uint32_t next_path_id = 1;
static _Atomic uint64_t cwd_generation = 1; /* bumped by chdir/fchdir */

static inline uint64_t info_of_fd(int fd)
{
    return (unsigned)fd < FD_TABLE_SIZE ? atomic_load_explicit(&fd_info[fd], memory_order_relaxed) : 0;
}

static inline uint32_t path_of_fd(int fd) { return (uint32_t)info_of_fd(fd); }

/* local: the file is on a local filesystem, and its calls' timing is sampled (WSLSHIM_IO_TIMING > 1) */
static inline void fd_set_info(int fd, uint32_t id, int local)
{
    if ((unsigned)fd < FD_TABLE_SIZE)
        atomic_store_explicit(&fd_info[fd], id | (local && wsl_cfg.io_timing > 1 ? FD_LOCAL : 0),
                              memory_order_relaxed);
}

static inline void fd_set_path(int fd, uint32_t id) { fd_set_info(fd, id, 0); }
/* A call passed through closes fd: what the hooks knew of it goes, unless the
 * caller's descriptors are not the program's (the writer's own, wsl_tls.own_fds). */
static inline void fd_forget_passing(int fd)
{
    if (WSL_LIKELY(!wsl_tls.own_fds))
        fd_set_path(fd, 0);
}

/* ---- which devices are local filesystems --------------------------------------------------
 * From the mount table the writer reads (at start and whenever it changes): a
 * small array of (device, local) keys, read without a lock. A reader that sees
 * it mid-update may time a call it could have sampled, or the reverse; the
 * events say which it did, so the figures stay right either way. */
#define LOCAL_DEVS_MAX 512
static _Atomic uint64_t local_devs[LOCAL_DEVS_MAX]; /* (major << 20 | minor) << 1 | local */
static _Atomic uint32_t local_dev_count;
static _Atomic uint32_t local_devs_gen = 1;

static uint64_t dev_key(uint64_t dev) { return ((dev >> 32) << 20 | (dev & 0xfffff)) << 1; }

/* Filesystems whose calls cost what the page cache and a local disk cost. */
static int fstype_is_local(const char *t, size_t n)
{
    static const char *const local[] = {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs", "nilfs2",
        "vfat", "msdos", "exfat", "ntfs3", "squashfs", "erofs", "iso9660", "udf", "lxfs", "wslfs",
        "tmpfs", "ramfs", "overlay", "aufs", "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2",
        "mqueue", "hugetlbfs", "debugfs", "tracefs", "securityfs", "bpf", "configfs", "pstore",
        "efivarfs", "binfmt_misc", "nsfs", "fusectl", "rpc_pipefs", "selinuxfs",
    };
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if (strlen(local[i]) == n && !memcmp(local[i], t, n))
            return 1;
    return 0;
}

void wsl_io_note_mounts(const char *text, size_t n)
{
    uint32_t count = 0;
    const char *p = text, *end = text + n;
    while (p < end && count < LOCAL_DEVS_MAX) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        /* "36 35 98:0 /root /mnt opts - fstype source superopts" */
        unsigned major, minor;
        const char *dash = NULL;
        for (const char *q = p; q + 3 <= eol; q++)
            if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
                dash = q + 3;
                break;
            }
        char line[64];
        size_t ll = (size_t)(eol - p) < sizeof line - 1 ? (size_t)(eol - p) : sizeof line - 1;
        memcpy(line, p, ll);
        line[ll] = 0;
        if (dash && sscanf(line, "%*u %*u %u:%u", &major, &minor) == 2) {
            const char *ft = dash, *fe = memchr(ft, ' ', (size_t)(eol - ft));
            if (!fe)
                fe = eol;
            uint64_t key = dev_key((uint64_t)major << 32 | minor) | (uint64_t)fstype_is_local(ft, (size_t)(fe - ft));
            atomic_store_explicit(&local_devs[count++], key, memory_order_relaxed);
        }
        p = eol + 1;
    }
    atomic_store_explicit(&local_dev_count, count, memory_order_release);
    atomic_fetch_add_explicit(&local_devs_gen, 1, memory_order_release);
}

/* The first question comes before the writer read the mount table: read it
 * here, once (the writer reads it again and keeps it current). */
static void mounts_first_read(void)
{
    static _Atomic int reading;
    static char buf[256 << 10]; /* no malloc here: an allocator's own start-up may be reading a file */
    if (atomic_exchange(&reading, 1))
        return; /* another thread is at it: its answer comes soon, time these calls meanwhile */
    const char *path = getenv("WSLSHIM_MOUNTINFO");
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path && *path ? path : "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t n = 0;
    for (;;) {
        ssize_t r = syscall(SYS_read, fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    syscall(SYS_close, fd);
    if (n && atomic_load(&local_devs_gen) == 1)
        wsl_io_note_mounts(buf, n); /* a table past the buffer: its first mounts, until the writer's read */
}

/* Is dev a local filesystem's? The table's answer (dev_is_local remembers it per thread). */
static __attribute__((noinline)) int dev_lookup_local(struct wsl_thread *t, uint64_t dev, uint32_t gen)
{
    if (WSL_UNLIKELY(gen == 1)) {
        int saved = errno;
        mounts_first_read();
        errno = saved;
        gen = atomic_load_explicit(&local_devs_gen, memory_order_acquire);
    }
    uint64_t key = dev_key(dev);
    int local = 0;
    uint32_t count = atomic_load_explicit(&local_dev_count, memory_order_acquire);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t k = atomic_load_explicit(&local_devs[i], memory_order_relaxed);
        if ((k & ~1ull) == key) {
            local = (int)(k & 1); /* the first mount of a device names its filesystem */
            break;
        }
    }
    t->io_memo_dev = dev;
    t->io_memo_gen = gen;
    t->io_memo_local = (uint32_t)local;
    return local;
}

/* Is dev a local filesystem's? Remembered per thread for the last device. */
static inline __attribute__((always_inline)) int dev_is_local(struct wsl_thread *t, uint64_t dev)
{
    uint32_t gen = atomic_load_explicit(&local_devs_gen, memory_order_acquire);
    if (WSL_LIKELY(t->io_memo_dev == dev && t->io_memo_gen == gen))
        return (int)t->io_memo_local;
    return dev_lookup_local(t, dev, gen);
}

/* ---- sampled timing ------------------------------------------------------------------------
 * Gaps between timed calls are uniform on [1, 2N-1] (mean N), so that no
 * periodic pattern of calls (open, read, read, close...) is always caught at
 * the same place; each local call is timed with probability 1/N and a timed
 * one stands for N calls. A thread's first gap is the smaller of two draws,
 * which is what a gap looks like when met at a random point. */
static inline uint32_t io_rand(struct wsl_thread *t)
{
    uint32_t x = t->io_rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->io_rng = x;
    return x;
}

static inline uint32_t io_gap(struct wsl_thread *t)
{
    uint32_t span = 2u * (uint32_t)wsl_cfg.io_timing - 1u;
    return 1u + (uint32_t)(((uint64_t)io_rand(t) * span) >> 32);
}

/* the thread's fold (below, "folded calls"): its own fields, read by the writer */
#define FOLD_ONE (1ull << 10)
_Static_assert(WSL_API_COUNT < 0x3ff, "no call's id is 1023, fold_none's (WSL_FOLD_NONE)");
#define FOLD_LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define FOLD_ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

void wsl_io_thread_init(struct wsl_thread *t)
{
    /* no fold; fold ids go on counting, as the writer follows them across the ring's owners */
    uint32_t seq = FOLD_LD(t->fold_seq);
    FOLD_ST(t->fold_used, 0);
    WSL_FOLD_NONE(t);
    FOLD_ST(t->fold_file, WSL_FOLD_FILE(-1, 0));
    atomic_store_explicit(&t->fold_seq, (seq | 1) + 1, memory_order_release);
    uint32_t seed = (uint32_t)(t->tid * 2654435761u) ^ (uint32_t)wsl_ticks();
    t->io_rng = seed ? seed : 1;
    if (wsl_cfg.io_timing > 1) {
        uint32_t a = io_gap(t), b = io_gap(t);
        t->io_countdown = a < b ? a : b;
    } else {
        t->io_countdown = 1;
    }
}

static void fold_next(struct wsl_thread *t, int closed, int fd, uint32_t path);

/* The thread ends: its folded calls go into its ring. */
void wsl_io_thread_exit(struct wsl_thread *t)
{
    if (FOLD_LD(t->fold_used))
        fold_next(t, 0, -1, 0);
}

/* Is this call on a local file the thread's one to time? */
static inline __attribute__((always_inline)) int io_due(struct wsl_thread *t)
{
    if (WSL_LIKELY(--t->io_countdown != 0))
        return 0;
    t->io_countdown = io_gap(t);
    return 1;
}

#define DIR_CACHE_SIZE 4096 /* power of two */
static struct {
    _Atomic uint64_t hash;
    _Atomic uint64_t dev;
} dir_cache[DIR_CACHE_SIZE];

/* Word-at-a-time multiplicative hash of s[0, n): paths are hashed on every
 * open. `s` must be readable up to the next multiple of 8 past n (a path entry
 * in the ring is padded so): the last partial word is one load, masked. */
static inline uint64_t hash_padded_seeded(uint64_t seed, const char *s, size_t n)
{
    uint64_t h = seed ^ n;
    size_t full = n & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n & 7) {
        memcpy(&w, s + full, 8);
        w &= ~0ull >> (64 - 8 * (n & 7)); /* the bytes of s, little-endian first */
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h | 1; /* never 0: 0 marks an empty slot */
}

/* Seeds of the folder hashes: an absolute path's, and a working directory's
 * (whose hash then seeds those of the paths named relative to it). */
#define DIR_HASH_SEED 0x9e3779b97f4a7c15ull
#define CWD_HASH_SEED 0x2545f4914f6cdd1dull

/* ---- paths -------------------------------------------------------------------------------- */

/* The working directory, cached per thread until the next chdir. */
static const char *thread_cwd(struct wsl_thread *t, uint32_t *len)
{
    uint64_t gen = atomic_load_explicit(&cwd_generation, memory_order_acquire);
    if (t->cwd_gen != gen) {
        int saved = errno;
        if (syscall(SYS_getcwd, t->cwd, sizeof t->cwd) > 0)
            t->cwd_len = (uint32_t)strnlen(t->cwd, sizeof t->cwd);
        else
            t->cwd_len = 0;
        /* the seed of the directory hashes of paths named relative to it (path_record_as) */
        t->cwd_hash = hash_padded_seeded(CWD_HASH_SEED, t->cwd, t->cwd_len);
        errno = saved;
        t->cwd_gen = gen;
    }
    *len = t->cwd_len;
    return t->cwd;
}

/* Room in the large path ring up to `end`: past half full the writer is
 * woken; full, the call waits for it at most 10 ms, like the event ring. */
static int paths_room(struct wsl_thread *t, uint64_t end)
{
    uint64_t tail = atomic_load_explicit(&t->paths_tail, memory_order_acquire);
    if (end - tail <= WSL_PATH_RING / 2)
        return 1;
    int saved = errno;
    if (t->paths_woken_at != tail) { /* once per drain, not once per path */
        t->paths_woken_at = tail;
        wsl_writer_wake();
    }
    if (end - tail <= WSL_PATH_RING) {
        errno = saved;
        return 1;
    }
    wsl_writer_wake();
    uint64_t deadline = wsl_mono_ns() + 10000000ull;
    do {
        sched_yield();
        tail = atomic_load_explicit(&t->paths_tail, memory_order_acquire);
    } while (end - tail > WSL_PATH_RING && wsl_mono_ns() < deadline);
    errno = saved;
    if (end - tail <= WSL_PATH_RING)
        return 1;
    atomic_fetch_add_explicit(&t->paths_dropped, 1, memory_order_relaxed);
    return 0;
}

/* Writes the marker that ends the path ring the thread writes now (at its
 * head, where room was kept for it) and publishes it. */
static void paths_leave(struct wsl_thread *t)
{
    uint64_t head = atomic_load_explicit(t->p_head_at, memory_order_relaxed);
    struct wsl_path_entry_header m = {0, WSL_PATH_SWITCH};
    memcpy(t->p_cur + (head & t->p_mask), &m, sizeof m);
    atomic_store_explicit(t->p_head_at, head + sizeof m, memory_order_release);
}

/* Where an entry of `need` bytes goes: its index in the path ring the thread
 * writes now, after a filler where it would cross that ring's end; the small
 * ring while it has room (8 bytes always kept there for its marker), else the
 * large one (shim_internal.h: two rings); ~0 when that has no room either (the
 * entry is dropped). errno is kept. */
#define PATHS_MARKER ((uint64_t)sizeof(struct wsl_path_entry_header))
static uint64_t paths_reserve(struct wsl_thread *t, uint32_t need)
{
    int saved = errno;
    if (t->p_in_big && !t->no_small &&
        atomic_load_explicit(&t->sp_tail, memory_order_acquire) == atomic_load_explicit(&t->sp_head, memory_order_relaxed) &&
        atomic_load_explicit(&t->paths_head, memory_order_relaxed) + PATHS_MARKER -
                atomic_load_explicit(&t->paths_tail, memory_order_acquire) <= WSL_PATH_RING) {
        paths_leave(t); /* the writer has read all of the small ring: back to it */
        wsl_paths_use(t, 0);
    }
    uint8_t *ring = t->p_cur;
    uint32_t size = t->p_mask + 1;
    uint64_t head = atomic_load_explicit(t->p_head_at, memory_order_relaxed);
    uint32_t off = (uint32_t)(head & t->p_mask);
    uint32_t pad = size - off < need ? size - off : 0;
    if (!t->p_in_big) {
        uint64_t tail = atomic_load_explicit(&t->sp_tail, memory_order_acquire);
        if (head + pad + need + PATHS_MARKER - tail <= WSL_PATH_SMALL) {
            if (head + pad + need - tail > WSL_PATH_SMALL / 2 && t->paths_woken_at != tail) {
                t->paths_woken_at = tail; /* more than half full: once per drain */
                wsl_writer_wake();
            }
            goto room;
        }
        paths_leave(t); /* full: the large ring from here */
        wsl_paths_use(t, 1);
        wsl_writer_wake();
        ring = t->p_cur;
        size = WSL_PATH_RING;
        head = atomic_load_explicit(&t->paths_head, memory_order_relaxed);
        off = (uint32_t)(head & (WSL_PATH_RING - 1));
        pad = size - off < need ? size - off : 0;
    }
    if (!paths_room(t, head + pad + need + PATHS_MARKER)) {
        errno = saved;
        return ~0ull;
    }
room:
    if (pad) {
        struct wsl_path_entry_header filler = {0, pad - (uint32_t)sizeof filler};
        memcpy(ring + off, &filler, sizeof filler);
    }
    errno = saved;
    return head + pad;
}

/* A new path id: from the thread's own block of them, taken 64 at a time (no
 * shared counter touched per open). Ids are unique in the process, and in a
 * forked child, whose threads go on from the blocks their rings held. */
#define PATH_ID_BLOCK 64u
static inline uint32_t path_id_new(struct wsl_thread *t)
{
    if (WSL_UNLIKELY(t->path_id_next == t->path_id_end)) {
        t->path_id_next = atomic_fetch_add_explicit(&next_path_id, PATH_ID_BLOCK, memory_order_relaxed);
        t->path_id_end = t->path_id_next + PATH_ID_BLOCK;
    }
    return t->path_id_next++;
}

#define DIRFD_RAW (-4242) /* not a path: written as given (kernel names) */

/* The absolute path of directory fd dirfd when the hooks saw it opened (its
 * path id in the fd table), else NULL. Asked of /proc/self/fd once per such
 * open and kept for the thread's next paths relative to it (the loop over a
 * folder's files); a directory fd that came from elsewhere (opendir, a raw
 * system call) has no path id, and its number may have been reused unseen:
 * its paths stay named by the fd, with no system call. errno is kept. */
static const char *dirfd_path(struct wsl_thread *t, int dirfd, uint32_t *len)
{
    uint32_t id = path_of_fd(dirfd);
    if (!id)
        return NULL;
    if (t->dirfd_id != id) {
        char link[32];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        int saved = errno;
        long n = syscall(SYS_readlinkat, AT_FDCWD, link, t->dirfd_name, sizeof t->dirfd_name);
        errno = saved;
        /* a path, not "socket:[...]" or "anon_inode:..."; one that fills the buffer may be cut */
        t->dirfd_len = n > 0 && n < (long)sizeof t->dirfd_name && t->dirfd_name[0] == '/' ? (uint32_t)n : 0;
        t->dirfd_id = id;
    }
    *len = t->dirfd_len;
    return t->dirfd_len ? t->dirfd_name : NULL;
}

/* ---- file-system emulation (WSLSHIM_EMULATE fs:PATH=9p, docs/emulation.md) --------------
 * Whether a call naming `path` (relative to dirfd) names a file under an
 * emulated prefix: the path made absolute (the thread's cached working
 * directory, or the directory fd's path) and its "." and ".." removed by
 * name, as the kernel would without symbolic links. Only when emulating files
 * (wsl_emu_fs_on); errno is kept. */
static __attribute__((noinline, cold)) int emu_named(struct wsl_thread *t, int dirfd, const char *path)
{
    if (!path)
        return 0;
    char full[2 * WSL_EMU_FS_PATH];
    uint32_t blen = 0;
    const char *base = "";
    if (path[0] != '/') {
        if (dirfd == AT_FDCWD) {
            base = thread_cwd(t, &blen);
        } else {
            if (info_of_fd(dirfd) & FD_EMU)
                return 1; /* relative to a directory opened under an emulated prefix */
            base = dirfd_path(t, dirfd, &blen);
        }
        if (!base || !blen)
            return 0;
    }
    size_t n = wsl_emu_path_join(full, sizeof full, base, blen, path);
    if (!n)
        return 0;
    return wsl_emu_fs_match(&wsl_cfg.emu.fs, full, n);
}

/* Copies `path` (relative to dirfd) into the thread's path ring under a new id,
 * as an absolute path where it can tell; returns the id (0 if none). Also
 * returns through dir_hash the hash of its directory part. */
static uint32_t path_record_as(struct wsl_thread *t, uint32_t given_id, int dirfd, const char *path,
                               uint64_t *dir_hash)
{
    *dir_hash = 0;
    if (!path)
        return 0;
    size_t plen = strnlen(path, WSL_PATH_MAX_LENGTH);
    const char *prefix = NULL;
    uint32_t prefix_len = 0;
    char fdprefix[32];
    if (path[0] != '/' && dirfd != DIRFD_RAW) {
        if (dirfd == AT_FDCWD) {
            prefix = thread_cwd(t, &prefix_len);
        } else if (!(prefix = dirfd_path(t, dirfd, &prefix_len))) {
            /* Relative to a directory fd the hooks did not see opened: named
             * by the fd ("<fd N>/name"). */
            int n = snprintf(fdprefix, sizeof fdprefix, "<fd %d>", dirfd);
            prefix = fdprefix;
            prefix_len = (uint32_t)n;
        }
        if (plen >= 2 && path[0] == '.' && path[1] == '/')
            path += 2, plen -= 2;
    }
    if (!plen && !prefix_len)
        path = ".", plen = 1; /* open("") with no working directory: still a name */
    uint32_t len = prefix_len + (prefix_len ? 1 : 0) + (uint32_t)plen;
    if (len > WSL_PATH_MAX_LENGTH)
        len = WSL_PATH_MAX_LENGTH;
    uint32_t need = (uint32_t)((sizeof(struct wsl_path_entry_header) + len + 7) & ~7u);
    uint32_t id = given_id ? given_id : path_id_new(t);
    uint64_t head = paths_reserve(t, need);
    if (head == ~0ull)
        return id; /* no room: the id stays, its path is unknown to the report */
    struct wsl_path_entry_header h = {id, len};
    uint8_t *dst = t->p_cur + (head & t->p_mask);
    memcpy(dst, &h, sizeof h);
    char *p = (char *)dst + sizeof h;
    uint32_t used = 0;
    if (prefix_len) {
        memcpy(p, prefix, prefix_len);
        used = prefix_len;
        if (used < len)
            p[used++] = '/';
    }
    memcpy(p + used, path, len - used);
    /* Directory part of the absolute path: up to the last '/'. A path named
     * relative to the working directory is hashed from its own bytes on, seeded
     * with the working directory's hash (the same directory named otherwise has
     * another key in the directory cache: one more fstat), so that the working
     * directory is not hashed again at every open. Reads past the directory
     * part stay in the ring (the thread's struct) and are masked off. */
    uint64_t seed = DIR_HASH_SEED;
    const char *h0 = p;
    uint32_t hl = len;
    if (prefix == t->cwd && prefix_len && used < len) {
        seed = t->cwd_hash;
        h0 = p + used;
        hl = len - used;
    }
    const char *last = memrchr(h0, '/', hl);
    *dir_hash = hash_padded_seeded(seed, h0, last ? (size_t)(last - h0) : 0);
    atomic_store_explicit(t->p_head_at, head + need, memory_order_release);
    return id;
}

/* memcpy out of line: a copy whose length the compiler knows to be at most
 * 4096 it may expand inline as `rep movs`, slow to start for a path's few
 * dozen bytes on many cores. */
static __attribute__((noinline)) void copy_long(char *d, const char *s, size_t n) { memcpy(d, s, n); }

/* Copies n bytes, as glibc's memcpy does a short copy: up to 32 of them with
 * two pairs of loads from either end (no byte past s[n - 1] is read), inline. */
static inline __attribute__((always_inline)) void copy_short(char *d, const char *s, size_t n)
{
    if (n >= 8) {
        uint64_t a, b, c, e;
        if (WSL_UNLIKELY(n > 32)) {
            copy_long(d, s, n);
            return;
        }
        if (n > 16) {
            memcpy(&a, s, 8);
            memcpy(&b, s + 8, 8);
            memcpy(&c, s + n - 16, 8);
            memcpy(&e, s + n - 8, 8);
            memcpy(d, &a, 8);
            memcpy(d + 8, &b, 8);
            memcpy(d + n - 16, &c, 8);
            memcpy(d + n - 8, &e, 8);
            return;
        }
        memcpy(&a, s, 8);
        memcpy(&e, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &e, 8);
    } else if (n >= 4) {
        uint32_t a, e;
        memcpy(&a, s, 4);
        memcpy(&e, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &e, 4);
    } else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

/* path_record_as for a new id, and its common case straight: a path named
 * absolute or relative to the working directory (cached), whose entry fits
 * before the small ring's end and leaves it at most half full. The same entry
 * and directory hash as path_record_as, with fewer tests: it runs once per open. */
static __attribute__((noinline)) uint32_t path_record(struct wsl_thread *t, int dirfd, const char *path,
                                                      uint64_t *dir_hash)
{
    if (WSL_UNLIKELY(!path))
        return path_record_as(t, 0, dirfd, path, dir_hash);
    size_t plen = strnlen(path, WSL_PATH_MAX_LENGTH);
    const char *name = path;
    uint32_t prelen = 0; /* the working directory and its '/' */
    uint64_t seed = DIR_HASH_SEED;
    if (path[0] != '/') {
        if (WSL_UNLIKELY(dirfd != AT_FDCWD || !t->cwd_len ||
                         t->cwd_gen != atomic_load_explicit(&cwd_generation, memory_order_acquire)))
            return path_record_as(t, 0, dirfd, path, dir_hash);
        if (plen >= 2 && name[0] == '.' && name[1] == '/')
            name += 2, plen -= 2;
        prelen = t->cwd_len + 1;
        seed = t->cwd_hash;
    }
    uint32_t len = prelen + (uint32_t)plen;
    uint32_t need = (uint32_t)((sizeof(struct wsl_path_entry_header) + len + 7) & ~7u);
    uint64_t head = atomic_load_explicit(&t->sp_head, memory_order_relaxed);
    uint32_t off = (uint32_t)(head & (WSL_PATH_SMALL - 1));
    if (WSL_UNLIKELY(!plen || len > WSL_PATH_MAX_LENGTH || t->p_in_big || need > WSL_PATH_SMALL - off ||
                     head + need - atomic_load_explicit(&t->sp_tail, memory_order_acquire) > WSL_PATH_SMALL / 2))
        return path_record_as(t, 0, dirfd, path, dir_hash);
    uint32_t id = path_id_new(t);
    uint8_t *dst = t->small_paths + off;
    struct wsl_path_entry_header h = {id, len};
    memcpy(dst, &h, sizeof h);
    char *p = (char *)dst + sizeof h;
    if (prelen) {
        copy_short(p, t->cwd, prelen - 1);
        p[prelen - 1] = '/';
        p += prelen;
    }
    copy_short(p, name, plen);
    /* as path_record_as: the folder's part from the path's own bytes, seeded */
    const char *last = memrchr(p, '/', plen);
    *dir_hash = hash_padded_seeded(seed, p, last ? (size_t)(last - p) : 0);
    atomic_store_explicit(&t->sp_head, head + need, memory_order_release);
    return id;
}

/* A kernel name: written as given (not a path), under a new string id. */
uint32_t wsl_string_record(struct wsl_thread *t, const char *s)
{
    if (!s || !t)
        return 0;
    uint64_t dir_hash;
    return path_record_as(t, 0, DIRFD_RAW, s, &dir_hash);
}

/* In a forked child, files opened by the parent are still open under the
 * parent's path ids, but the child's trace has no names for them: write them
 * again, from /proc/self/fd, under the same ids. */
void wsl_io_name_inherited_fds(struct wsl_thread *t)
{
    char link[64], target[WSL_PATH_MAX_LENGTH];
    for (int fd = 0; fd < FD_TABLE_SIZE; fd++) {
        uint32_t id = path_of_fd(fd);
        if (!id)
            continue;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        uint64_t dir_hash;
        path_record_as(t, id, AT_FDCWD, target, &dir_hash);
    }
}

/* The device of a directory when an earlier open or lookup in it told (0: not known). */
static inline uint64_t dir_device(uint64_t dir_hash)
{
    if (!dir_hash)
        return 0;
    unsigned slot = (unsigned)(dir_hash & (DIR_CACHE_SIZE - 1));
    if (atomic_load_explicit(&dir_cache[slot].hash, memory_order_acquire) == dir_hash)
        return atomic_load_explicit(&dir_cache[slot].dev, memory_order_relaxed);
    return 0;
}

static void dir_device_set(uint64_t dir_hash, uint64_t dev)
{
    if (!dir_hash || !dev)
        return;
    unsigned slot = (unsigned)(dir_hash & (DIR_CACHE_SIZE - 1));
    atomic_store_explicit(&dir_cache[slot].hash, 0, memory_order_relaxed);
    atomic_store_explicit(&dir_cache[slot].dev, dev, memory_order_relaxed);
    atomic_store_explicit(&dir_cache[slot].hash, dir_hash, memory_order_release);
}

/* The device a just-opened file lives on: cached per directory. */
static uint64_t device_of(int fd, uint64_t dir_hash, uint64_t *size)
{
    *size = ~0ull;
    uint64_t dev = dir_device(dir_hash);
    if (dev)
        return dev;
    struct stat st;
    int saved = errno;
    int rc = REAL(fstat)(fd, &st);
    errno = saved;
    if (rc != 0)
        return 0;
    dev = WSL_DEV(major(st.st_dev), minor(st.st_dev));
    *size = (uint64_t)st.st_size;
    if (S_ISREG(st.st_mode))
        dir_device_set(dir_hash, dev);
    return dev;
}

/* ---- recording --------------------------------------------------------------------------- */

/* Enters a hook: the thread to record into, or NULL to pass straight through. */
static inline __attribute__((always_inline)) struct wsl_thread *io_enter(void)
{
    if (WSL_UNLIKELY(wsl_tls_depth))
        return NULL;
    /* One test for both: the thread's buffer is of this process (not one from
     * before a fork), and file calls are recorded (wsl_io_gen is 0 when not). */
    struct wsl_thread *t = wsl_tls_thread;
    if (WSL_UNLIKELY(!t || t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed))) {
        if (!t || t->gen != atomic_load_explicit(&wsl_gen, memory_order_relaxed))
            t = wsl_thread_setup();
        if (!t || !wsl_cfg.io) /* the first call may be what loaded WSLSHIM_IO=0 */
            return NULL;
    }
    wsl_tls_depth = 1;
    return t;
}

static inline __attribute__((always_inline)) void io_fill(struct wsl_event *e, uint64_t t0, uint64_t t1,
                                                          unsigned api, int32_t result, int64_t fd, uint64_t a0,
                                                          uint64_t a1, uint64_t a2, uint64_t a3)
{
    e->t_start = t0;
    e->t_end = t1;
    e->api = (uint16_t)api;
    e->flags = 0;
    e->result = result;
    e->stream = (uint64_t)fd;
    e->a[0] = a0;
    e->a[1] = a1;
    e->a[2] = a2;
    e->a[3] = a3;
}

static inline __attribute__((always_inline)) void io_record(struct wsl_thread *t, unsigned api, uint64_t t0,
                                                            uint64_t t1, int failed, int err, int64_t fd,
                                                            uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
    struct wsl_event *e = wsl_ring_reserve(t);
    if (WSL_LIKELY(e != NULL)) {
        io_fill(e, t0, t1, api, failed ? -err : 0, fd, a0, a1, a2, a3);
        wsl_ring_commit(t);
        if (!t0)
            atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed); /* the writer times these */
    }
    wsl_tls_depth = 0;
}

/* ---- folded calls -------------------------------------------------------------------------
 * An untimed call on a local file (its timing sampled out) that succeeded is
 * folded: the thread counts it in a slot of the file it folds (fd and path id),
 * alike calls (same id, same value returned) in the same slot, and writes
 * nothing. The fold's events (WSL_CAT_IO_FOLD, trace_format.h) go into the ring
 * when the file is closed, when a call on another file comes, or when a slot
 * is full; the writer takes the calls counted so far at each drain (writer/untimed.c). */

/* The seqlock around a fold's end: fold_enter makes fold_seq odd (the writer
 * keeps out) and returns it as it was; fold_leave leaves the thread with no
 * slot, folding `file`, and the next fold id. */
static inline __attribute__((always_inline)) uint32_t fold_enter(struct wsl_thread *t)
{
    uint32_t seq = FOLD_LD(t->fold_seq);
    FOLD_ST(t->fold_seq, seq + 1);
    atomic_thread_fence(memory_order_release);
    return seq;
}

static inline __attribute__((always_inline)) void fold_leave(struct wsl_thread *t, uint32_t seq, uint64_t file)
{
    FOLD_ST(t->fold_used, 0);
    WSL_FOLD_NONE(t);
    FOLD_ST(t->fold_file, file);
    atomic_store_explicit(&t->fold_seq, seq + 2, memory_order_release);
}

/* Ends the thread's fold (its events into the ring; closed: the file's close
 * comes last) and begins one for fd and path. */
static void fold_next(struct wsl_thread *t, int closed, int fd, uint32_t path)
{
    uint32_t used = FOLD_LD(t->fold_used), seq = fold_enter(t);
    if (used || closed) {
        uint32_t id = seq >> 1;
        uint64_t file = FOLD_LD(t->fold_file);
        int64_t ffd = (int32_t)(uint32_t)file;
        uint64_t fpath = file >> 32;
        uint32_t i = 0;
        do {
            struct wsl_event *e = wsl_ring_reserve(t);
            if (WSL_UNLIKELY(e == NULL))
                break; /* counted as dropped */
            uint32_t last = i + WSL_FOLD_SLOTS_PER_EVENT >= used;
            io_fill(e, 0, 0, WSL_ID_IO_FOLD,
                    WSL_FOLD_RESULT(id, i, last ? WSL_FOLD_LAST | (closed ? WSL_FOLD_CLOSED : 0) : 0), ffd, fpath,
                    i < used ? FOLD_LD(t->fold_slot[i]) : 0, i + 1 < used ? FOLD_LD(t->fold_slot[i + 1]) : 0,
                    i + 2 < used ? FOLD_LD(t->fold_slot[i + 2]) : 0);
            wsl_ring_commit(t);
            i += WSL_FOLD_SLOTS_PER_EVENT;
        } while (i < used);
        atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
    }
    fold_leave(t, seq, WSL_FOLD_FILE(fd, path));
}

/* The thread's fold ends with its file's close in it: fold_next(t, 1, -1, 0)
 * written straight, as it is once per file: one event when the slots fit one
 * (an open and its reads), else two (Python's open().read() fills six). */
_Static_assert(WSL_FOLD_SLOTS == 2 * WSL_FOLD_SLOTS_PER_EVENT, "a fold's slots fill two events at most");
static inline __attribute__((always_inline)) void fold_end_closed(struct wsl_thread *t)
{
    uint32_t used = FOLD_LD(t->fold_used), seq = fold_enter(t);
    uint64_t file = FOLD_LD(t->fold_file);
    int64_t fd = (int32_t)(uint32_t)file;
    /* slots past the used ones hold what earlier folds left: not this one's */
    uint64_t s0 = FOLD_LD(t->fold_slot[0]), s1 = FOLD_LD(t->fold_slot[1]), s2 = FOLD_LD(t->fold_slot[2]);
    struct wsl_event *e = wsl_ring_reserve(t);
    if (WSL_UNLIKELY(used > WSL_FOLD_SLOTS_PER_EVENT) && WSL_LIKELY(e != NULL)) {
        io_fill(e, 0, 0, WSL_ID_IO_FOLD, WSL_FOLD_RESULT(seq >> 1, 0, 0), fd, file >> 32, s0, s1, s2);
        wsl_ring_commit(t);
        used -= WSL_FOLD_SLOTS_PER_EVENT;
        s0 = FOLD_LD(t->fold_slot[3]);
        s1 = FOLD_LD(t->fold_slot[4]);
        s2 = FOLD_LD(t->fold_slot[5]);
        e = wsl_ring_reserve(t);
        if (WSL_LIKELY(e != NULL)) {
            io_fill(e, 0, 0, WSL_ID_IO_FOLD,
                    WSL_FOLD_RESULT(seq >> 1, WSL_FOLD_SLOTS_PER_EVENT, WSL_FOLD_LAST | WSL_FOLD_CLOSED), fd,
                    file >> 32, s0, used > 1 ? s1 : 0, used > 2 ? s2 : 0);
            wsl_ring_commit(t);
        }
    } else if (WSL_LIKELY(e != NULL)) {
        io_fill(e, 0, 0, WSL_ID_IO_FOLD, WSL_FOLD_RESULT(seq >> 1, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED), fd,
                file >> 32, used > 0 ? s0 : 0, used > 1 ? s1 : 0, used > 2 ? s2 : 0);
        wsl_ring_commit(t);
    }
    atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
    fold_leave(t, seq, WSL_FOLD_FILE(-1, 0));
}

/* Begins a fold for fd and path: ends the thread's fold when it has calls;
 * one without calls has a fold id no call was counted under yet (fold_next
 * leaves a new one, and a fold's first slot comes with fold_used, after the
 * file), so the new file takes it over as it is. */
static inline __attribute__((always_inline)) void fold_begin(struct wsl_thread *t, int fd, uint32_t path)
{
    if (FOLD_LD(t->fold_used))
        fold_next(t, 0, fd, path);
    else
        FOLD_ST(t->fold_file, WSL_FOLD_FILE(fd, path));
}

/* The largest value a folded call keeps: half the format's (WSL_FOLD_VALUE_MAX),
 * so that a slot's top value bit is 0 and io_fold's one test below holds. */
#define FOLD_VALUE_LIMIT (WSL_FOLD_VALUE_MAX >> 1)

/* Folds an untimed successful call (id api, on fd whose path id is path) that
 * returned value (at most FOLD_VALUE_LIMIT: a read's bytes always are, as
 * Linux moves at most 2 GiB per call; callers check sizes and offsets): into
 * the last slot when it is alike, else into a new one. Returns 1. */
static inline __attribute__((always_inline)) int io_fold(struct wsl_thread *t, unsigned api, int fd,
                                                         uint32_t path, uint64_t value)
{
    uint64_t key = WSL_FOLD_SLOT(api, 0, value);
    uint32_t used = FOLD_LD(t->fold_used);
    if (WSL_LIKELY(FOLD_LD(t->fold_file) == WSL_FOLD_FILE(fd, path))) {
        if (WSL_LIKELY(used)) {
            /* x: the slot's calls when it is alike (same id and value). One more fits when
             * x + 1 call is still only calls: a different id leaves bits 0-9 set, a
             * different value bits from 24 up (no carry clears them: bit 63 of x is 0),
             * and a full slot carries into bit 24. */
            uint64_t s = FOLD_LD(t->fold_slot[used - 1]), x = s ^ key;
            if (WSL_LIKELY(!((x + FOLD_ONE) & ~((uint64_t)WSL_FOLD_CALLS_MAX << 10)))) {
                FOLD_ST(t->fold_slot[used - 1], s + FOLD_ONE);
                wsl_tls_depth = 0;
                return 1;
            }
            if (WSL_UNLIKELY(used == WSL_FOLD_SLOTS)) {
                fold_next(t, 0, fd, path);
                used = 0;
            }
        }
    } else {
        fold_begin(t, fd, path);
        used = 0;
    }
    FOLD_ST(t->fold_slot[used], key | FOLD_ONE);
    t->fold_last = &t->fold_slot[used];
    atomic_store_explicit(&t->fold_used, used + 1, memory_order_release); /* after the slot: the writer's view */
    wsl_tls_depth = 0;
    return 1;
}

/* NVTX: the folded calls so far go before a range's start or end (they
 * belong where they happened). */
void wsl_io_fold_cut(struct wsl_thread *t)
{
    if (FOLD_LD(t->fold_used))
        fold_next(t, 0, (int32_t)(uint32_t)FOLD_LD(t->fold_file), (uint32_t)(FOLD_LD(t->fold_file) >> 32));
}

/* Out of the hooks' way: the fold ends here when it is fd's (path's). */
static __attribute__((noinline, cold)) void io_fold_cut_file(struct wsl_thread *t, int fd, uint32_t path)
{
    if (FOLD_LD(t->fold_used) && FOLD_LD(t->fold_file) == WSL_FOLD_FILE(fd, path))
        wsl_io_fold_cut(t);
}

/* A close of the folded file: the fold ends, with the close in it when the
 * close itself is one to fold (untimed, successful). Returns 1 when it was. */
static inline int io_fold_close(struct wsl_thread *t, int fd, uint32_t path, int fold_it)
{
    if (FOLD_LD(t->fold_file) != WSL_FOLD_FILE(fd, path) || !path)
        return 0;
    if (fold_it) {
        fold_end_closed(t);
        wsl_tls_depth = 0;
        return 1;
    }
    fold_next(t, 0, -1, 0);
    return 0;
}

/* A read-like call: a timed one is an event of its own, an untimed one folds. */
static inline __attribute__((always_inline)) void io_record_read(struct wsl_thread *t, unsigned api, uint64_t t0,
                                                                 uint64_t t1, int failed, int err, int64_t fd,
                                                                 uint64_t path, uint64_t ask, uint64_t got,
                                                                 uint64_t off)
{
    if (t0) {
        /* A timed read that hit the end of the file: the reads folded before it go
         * first, as the report takes the file's size from the bytes read up to it. */
        if (WSL_UNLIKELY(!got && ask && !failed))
            io_fold_cut_file(t, (int)fd, (uint32_t)path);
        io_record(t, api, t0, t1, failed, err, fd, path, ask, got, off);
        return;
    }
    if (!failed && ask && io_fold(t, api, (int)fd, (uint32_t)path, got))
        return;
    io_record(t, api, 0, 0, failed, err, fd, path, ask, got, 1); /* untimed: a3 is its calls */
}

/* Whether a call on a local file (local: nonzero, and sampling is on) is
 * timed, and the id offset its event takes: every other call is timed under
 * its own id. */
#define IO_TIMING(local)                                                                   \
    unsigned off_ = 0;                                                                     \
    int timed_ = 1;                                                                        \
    if (local) {                                                                           \
        off_ = WSL_IO_SAMPLED;                                                             \
        timed_ = io_due(t);                                                                \
    }

/* The real call into `var`, between two clock reads when it is timed (t0 0: not);
 * `after` runs between the call and the second clock read (the emulation's
 * added time, which the recorded call includes). */
#define IO_CALL_TIMED(type, var, call) IO_CALL_TIMED_EMU(type, var, call, (void)0)
#define IO_CALL_TIMED_EMU(type, var, call, after)                                          \
    uint64_t t0 = timed_ ? wsl_ticks() : 0;                                                \
    type var = call;                                                                       \
    after;                                                                                 \
    uint64_t t1 = timed_ ? wsl_ticks() : 0;                                                \
    if (WSL_UNLIKELY(timed_ && t1 <= t0))                                                  \
        t1 = t0 + 1; /* a timed call never looks untimed */

/* The emulation's added time for a call on fd (its info `info`) that moved
 * `bytes` (reads: fsread, writes: fswrite), or named an emulated path. */
#define EMU_FD_BYTES(info, write, bytes)                                                   \
    if (WSL_UNLIKELY((info) & FD_EMU))                                                     \
    wsl_emu_fs_bytes((write), (bytes))
#define EMU_NAMED(emu)                                                                     \
    if (WSL_UNLIKELY(emu))                                                                 \
    wsl_emu_fs_meta()

/* An untimed open's slot value (trace_format.h, WSL_FOLD_OPEN_VALUE) into *v;
 * 0 when its device or flags do not fit one: then it is an event of its own. */
static inline int open_fold_value(uint64_t dev, int flags, uint64_t *v)
{
    uint64_t major = dev >> 32, minor = (uint32_t)dev;
    const int folds = O_ACCMODE | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    if (major >= 4096 || minor >= (1u << 20) || (flags & ~folds))
        return 0;
    unsigned bits = (unsigned)(flags & O_ACCMODE) | (flags & O_CLOEXEC ? WSL_FOLD_OPEN_CLOEXEC : 0);
    if (WSL_UNLIKELY(flags & (O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)))
        bits |= (flags & O_DIRECTORY ? WSL_FOLD_OPEN_DIRECTORY : 0) | (flags & O_NOFOLLOW ? WSL_FOLD_OPEN_NOFOLLOW : 0) |
                (flags & O_NONBLOCK ? WSL_FOLD_OPEN_NONBLOCK : 0) | (flags & O_NOCTTY ? WSL_FOLD_OPEN_NOCTTY : 0);
    *v = WSL_FOLD_OPEN_VALUE(major, minor, bits); /* under 2^39: within FOLD_VALUE_LIMIT */
    return 1;
}

/* An open that returned fd (or failed, errno saying why): name it, find its
 * device, record it (record_open below: this is all but its common case).
 * errno stays the call's. */
static __attribute__((noinline)) void record_open_event(struct wsl_thread *t, unsigned api, uint64_t t0, uint64_t t1,
                                                        int fd, uint32_t id, uint64_t dir_hash, int flags,
                                                        uint64_t dirdev, int local, int emu)
{
    int err = errno;
    uint64_t dev = 0, size = ~0ull;
    if (fd >= 0) {
        if (dirdev) {
            dev = dirdev;
        } else {
            dev = device_of(fd, dir_hash, &size);
            local = !emu && dev && wsl_cfg.io_timing > 1 && dev_is_local(t, dev);
        }
        fd_set_info(fd, id, local);
        if (WSL_UNLIKELY(emu) && (unsigned)fd < FD_TABLE_SIZE) /* every call on it timed, and slowed */
            atomic_store_explicit(&fd_info[fd], id | FD_EMU, memory_order_relaxed);
        /* Its reads will fold (if untimed): their fold begins here, and the one
         * before it (another file's) ends, its events ahead of this open. */
        if (local && id && FOLD_LD(t->fold_file) != WSL_FOLD_FILE(fd, id))
            fold_begin(t, fd, id);
    }
    io_record(t, api, t0, t1, fd < 0, err, fd, id, dev, (uint64_t)(unsigned)flags, size);
    errno = err;
}

/* An open that returned fd (or failed). dirdev: its folder's device when known
 * before the call, local: whether that is a local filesystem's (the call was
 * sampled). The common case, an untimed open of a local file whose folder's
 * device was known, begins the file's fold with the open as its first slot
 * (1.6): no event of its own. */
static inline __attribute__((always_inline)) void record_open(struct wsl_thread *t, unsigned api, uint64_t t0,
                                                              uint64_t t1, int fd, uint32_t id,
                                                              uint64_t dir_hash, int flags, uint64_t dirdev, int local,
                                                              int emu)
{
    uint64_t v;
    if (WSL_LIKELY(!t0 && local && fd >= 0 && id) && open_fold_value(dirdev, flags, &v)) {
        fd_set_info(fd, id, 1);
        fold_begin(t, fd, id); /* another file's fold ends */
        FOLD_ST(t->fold_slot[0], WSL_FOLD_SLOT(api, 1, v));
        t->fold_last = &t->fold_slot[0];
        atomic_store_explicit(&t->fold_used, 1, memory_order_release); /* after the slot: the writer's view */
        wsl_tls_depth = 0;
        return;
    }
    record_open_event(t, api, t0, t1, fd, id, dir_hash, flags, dirdev, local, emu);
}

/* Every fd hook's first half: straight through when this call is not to be
 * recorded, else the real call into `var`, timed or not (see IO_TIMING). */
#define IO_TIMED_CALL(type, var, fd, call) IO_TIMED_CALL_EMU(type, var, fd, call, (void)0)
#define IO_TIMED_CALL_EMU(type, var, fd, call, after)                                      \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    IO_TIMING(info_ & FD_LOCAL)                                                            \
    IO_CALL_TIMED_EMU(type, var, call, after)

/* A call by name: the path is recorded first, and its directory says
 * whether the file is local (known once something in it was opened). */
#define IO_NAMED_CALL(type, var, dirfd, path, call)                                        \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t dir_hash_;                                                                    \
    uint32_t id_ = path_record(t, dirfd, path, &dir_hash_);                               \
    uint64_t dirdev_ = dir_device(dir_hash_);                                              \
    int emu_ = WSL_UNLIKELY(wsl_emu_fs_on) && emu_named(t, dirfd, path);                   \
    int local_ = !emu_ && dirdev_ && wsl_cfg.io_timing > 1 && dev_is_local(t, dirdev_);    \
    IO_TIMING(local_)                                                                      \
    IO_CALL_TIMED_EMU(type, var, call, EMU_NAMED(emu_))

static inline int open_needs_mode(int flags)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define OPEN_HOOK(api, dirfd, path, flags, call)                                           \
    IO_NAMED_CALL(int, fd, dirfd, path, call)                                              \
    /* errno is the call's: record_open leaves it alone */                                 \
    record_open(t, (api) + off_, t0, t1, fd, id_, dir_hash_, flags, dirdev_, local_, emu_); \
    return fd;

#define MODE_ARG(flags)                                                                    \
    mode_t mode = 0;                                                                       \
    if (open_needs_mode(flags)) {                                                          \
        va_list ap;                                                                        \
        va_start(ap, flags);                                                               \
        mode = (mode_t)va_arg(ap, int);                                                    \
        va_end(ap);                                                                        \
    }

static __attribute__((noinline)) int open_st(const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_open, AT_FDCWD, path, flags, st_openat(AT_FDCWD, path, flags, mode))
}
static __attribute__((noinline)) int open_mt(const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_open, AT_FDCWD, path, flags, REAL(open)(path, flags, mode))
}
WSL_EXPORT int open(const char *path, int flags, ...)
{
    MODE_ARG(flags)
    if (PROGRAM_ST())
        return open_st(path, flags, mode);
    return open_mt(path, flags, mode);
}
static __attribute__((noinline)) int open64_st(const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_open64, AT_FDCWD, path, flags, st_openat(AT_FDCWD, path, flags, mode))
}
static __attribute__((noinline)) int open64_mt(const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_open64, AT_FDCWD, path, flags, REAL(open64)(path, flags, mode))
}
WSL_EXPORT int open64(const char *path, int flags, ...)
{
    MODE_ARG(flags)
    if (PROGRAM_ST())
        return open64_st(path, flags, mode);
    return open64_mt(path, flags, mode);
}
WSL_EXPORT int __open_2(const char *path, int flags)
{
    OPEN_HOOK(WSL_IO_ID___open_2, AT_FDCWD, path, flags, REAL(__open_2)(path, flags))
}
WSL_EXPORT int __open64_2(const char *path, int flags)
{
    OPEN_HOOK(WSL_IO_ID___open64_2, AT_FDCWD, path, flags, REAL(__open64_2)(path, flags))
}
static __attribute__((noinline)) int openat_st(int dirfd, const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_openat, dirfd, path, flags, st_openat(dirfd, path, flags, mode))
}
static __attribute__((noinline)) int openat_mt(int dirfd, const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_openat, dirfd, path, flags, REAL(openat)(dirfd, path, flags, mode))
}
WSL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags)
    if (PROGRAM_ST())
        return openat_st(dirfd, path, flags, mode);
    return openat_mt(dirfd, path, flags, mode);
}
static __attribute__((noinline)) int openat64_st(int dirfd, const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_openat64, dirfd, path, flags, st_openat(dirfd, path, flags, mode))
}
static __attribute__((noinline)) int openat64_mt(int dirfd, const char *path, int flags, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_openat64, dirfd, path, flags, REAL(openat64)(dirfd, path, flags, mode))
}
WSL_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags)
    if (PROGRAM_ST())
        return openat64_st(dirfd, path, flags, mode);
    return openat64_mt(dirfd, path, flags, mode);
}
WSL_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    OPEN_HOOK(WSL_IO_ID___openat_2, dirfd, path, flags, REAL(__openat_2)(dirfd, path, flags))
}
WSL_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    OPEN_HOOK(WSL_IO_ID___openat64_2, dirfd, path, flags, REAL(__openat64_2)(dirfd, path, flags))
}
WSL_EXPORT int creat(const char *path, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_creat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, REAL(creat)(path, mode))
}
WSL_EXPORT int creat64(const char *path, mode_t mode)
{
    OPEN_HOOK(WSL_IO_ID_creat64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, REAL(creat64)(path, mode))
}

static int fopen_flags(const char *mode)
{
    if (!mode)
        return 0;
    int plus = strchr(mode, '+') != NULL;
    switch (mode[0]) {
    case 'r': return plus ? O_RDWR : O_RDONLY;
    case 'w': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    case 'a': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    default: return 0;
    }
}

#define FOPEN_HOOK(api, fn)                                                                \
    IO_NAMED_CALL(FILE *, f, AT_FDCWD, path, REAL(fn)(path, mode))                         \
    int err = errno;                                                                       \
    record_open(t, (api) + off_, t0, t1, f ? fileno_unlocked(f) : -1, id_, dir_hash_, fopen_flags(mode), \
                dirdev_, local_, emu_);                                                    \
    errno = err;                                                                           \
    return f;

WSL_EXPORT FILE *fopen(const char *path, const char *mode) { FOPEN_HOOK(WSL_IO_ID_fopen, fopen) }
WSL_EXPORT FILE *fopen64(const char *path, const char *mode) { FOPEN_HOOK(WSL_IO_ID_fopen64, fopen64) }

/* ---- reads ------------------------------------------------------------------------------- */
#define NO_OFFSET (~0ull)

/* The common case of a read on a local file, untimed and successful, when the
 * thread's fold is this file's (an open of a local file begins its fold): one
 * more call in the last slot when it is alike (same id, same bytes returned)
 * and not full, else a new slot while there is one. Returns 0 otherwise. */
static inline __attribute__((always_inline)) int io_fold_fast_file(struct wsl_thread *t, unsigned api,
                                                                   uint64_t file, uint64_t value)
{
    if (FOLD_LD(t->fold_file) != file)
        return 0;
    uint64_t key = WSL_FOLD_SLOT(api, 0, value);
    /* see io_fold: one test for "alike and not full"; no slot: fold_none, alike nothing */
    _Atomic uint64_t *last = t->fold_last;
    uint64_t s = FOLD_LD(*last), x = s ^ key;
    if (WSL_LIKELY(!((x + FOLD_ONE) & ~((uint64_t)WSL_FOLD_CALLS_MAX << 10)))) {
        FOLD_ST(*last, s + FOLD_ONE);
        return 1;
    }
    uint32_t used = FOLD_LD(t->fold_used);
    if (used == WSL_FOLD_SLOTS)
        return 0;
    FOLD_ST(t->fold_slot[used], key | FOLD_ONE);
    t->fold_last = &t->fold_slot[used];
    atomic_store_explicit(&t->fold_used, used + 1, memory_order_release); /* after the slot: the writer's view */
    return 1;
}

static inline __attribute__((always_inline)) int io_fold_fast(struct wsl_thread *t, unsigned api, int fd,
                                                              uint32_t path, uint64_t value)
{
    return io_fold_fast_file(t, api, WSL_FOLD_FILE(fd, path), value);
}

/* Any other untimed read on a local file: folded into a new slot, or, failed
 * or asking for nothing, an event of its own. errno is the call's. */
static __attribute__((noinline)) void io_read_untimed(struct wsl_thread *t, unsigned api, int fd, uint32_t path,
                                                      uint64_t ask, ssize_t r, uint64_t off)
{
    io_record_read(t, api, 0, 0, r < 0, r < 0 ? errno : 0, fd, path, ask, r > 0 ? (uint64_t)r : 0, off);
}

/* io_read_untimed for READ_MT_HOOK, from the fold's key of the file; returns r. */
static __attribute__((noinline)) ssize_t io_read_untimed_file(struct wsl_thread *t, unsigned api, uint64_t file,
                                                              uint64_t ask, ssize_t r, uint64_t off)
{
    io_read_untimed(t, api, (int)(uint32_t)file, (uint32_t)(file >> 32), ask, r, off);
    return r;
}

/* A read-like call returning ssize_t: bytes asked `ask`, offset `off`. The
 * untimed call on a local file (all but 1 in WSLSHIM_IO_TIMING of them) comes
 * first, and its common case, folded into the slot of the call before, is
 * inline; the rest (timed calls, new slots, failures) as IO_TIMED_CALL. */
#define READ_HOOK(api, fd, ask, off, call)                                                 \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    if (WSL_LIKELY(info_ & FD_LOCAL) && WSL_LIKELY(--t->io_countdown != 0)) {              \
        ssize_t r = call;                                                                  \
        if (WSL_LIKELY(r >= 0 && (ask) != 0) &&                                            \
            WSL_LIKELY(io_fold_fast(t, (api) + WSL_IO_SAMPLED, fd, (uint32_t)info_, (uint64_t)r))) { \
            wsl_tls_depth = 0;                                                             \
            return r;                                                                      \
        }                                                                                  \
        io_read_untimed(t, (api) + WSL_IO_SAMPLED, fd, (uint32_t)info_, ask, r, off);     \
        return r;                                                                          \
    }                                                                                      \
    unsigned off_ = 0;                                                                     \
    if (info_ & FD_LOCAL) {                                                                \
        off_ = WSL_IO_SAMPLED;                                                             \
        t->io_countdown = io_gap(t); /* this is the one in N to time */                   \
    }                                                                                      \
    int timed_ = 1;                                                                        \
    IO_CALL_TIMED_EMU(ssize_t, r, call, EMU_FD_BYTES(info_, 0, r > 0 ? (uint64_t)r : 0))   \
    /* The recording path leaves errno alone (its slow paths restore it). */               \
    io_record_read(t, (api) + off_, t0, t1, r < 0, r < 0 ? errno : 0, fd, (uint32_t)info_, ask, \
                   r > 0 ? (uint64_t)r : 0, off);                                          \
    return r;

/* WSLSHIM_IO=0: the fast twins make the call and nothing else. */
#define IO_OFF() WSL_UNLIKELY(atomic_load_explicit(&wsl_io_off, memory_order_relaxed))
static inline __attribute__((always_inline)) long st_kernel_result(long r)
{
    return WSL_UNLIKELY(r < 0) ? wsl_syscall_failed(r) : r;
}

/* Enters a hook's fast twin: the thread to record into when it is set up and
 * records file calls, else NULL (the full hook then decides). Sets nothing. */
static inline __attribute__((always_inline)) struct wsl_thread *io_enter_ready(void)
{
    if (WSL_UNLIKELY(wsl_tls_depth))
        return NULL;
    struct wsl_thread *t = wsl_tls_thread;
    if (WSL_UNLIKELY(!t || t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)))
        return NULL;
    return t;
}

/* The rest of an untimed read on a local file made by the fast twin: r is the
 * kernel's answer (-errno on failure), returned as glibc would. */
static __attribute__((noinline)) ssize_t io_read_untimed_kernel(struct wsl_thread *t, unsigned api, int fd,
                                                                uint32_t path, uint64_t ask, long r, uint64_t off)
{
    if (r < 0) {
        io_record_read(t, api, 0, 0, 1, (int)-r, fd, path, ask, 0, off);
        errno = (int)-r;
        return -1;
    }
    io_record_read(t, api, 0, 0, 0, 0, fd, path, ask, (uint64_t)r, off);
    return r;
}

/* st_syscall4_kernel, with two values the caller needs after the call pinned
 * to registers the system call leaves alone (x86-64: r8 and r9), so that the
 * compiler saves no register of its own for them. */
static inline __attribute__((always_inline)) long st_syscall4_keeping(long nr, int fd, long b, long c, long d,
                                                                      uint64_t *keep1, uint64_t *keep2)
{
#if defined(__x86_64__)
    long r;
    register long r10 __asm__("r10") = d;
    register uint64_t r8 __asm__("r8") = *keep1;
    register uint64_t r9 __asm__("r9") = *keep2;
    __asm__ volatile("syscall"
                     : "=a"(r), "+r"(r8), "+r"(r9)
                     : "a"(nr), "D"(fd), "S"(b), "d"(c), "r"(r10) /* the kernel takes fd's low 32 bits */
                     : "rcx", "r11", "memory");
    *keep1 = r8;
    *keep2 = r9;
    return r;
#else
    return st_syscall4_kernel(nr, fd, b, c, d);
#endif
}

/* io_read_untimed_kernel, from a fast twin that marked the thread busy rather
 * than raising its depth (READ_ST_HOOK); its arguments in the registers they
 * are in already there (x86-64: fd, ask, t and file stay where the system call
 * had them). */
static __attribute__((noinline)) ssize_t io_read_untimed_busy(int fd, unsigned api, uint64_t ask, long r,
                                                              struct wsl_thread *t, uint64_t file, uint64_t off)
{
    t->gen &= ~WSL_GEN_BUSY;
    wsl_tls_depth = 1;
    return io_read_untimed_kernel(t, api, fd, (uint32_t)(file >> 32), ask, r, off);
}

/* A read in a single-threaded program (PROGRAM_ST): its common case, an
 * untimed read on a local file folded into the thread's fold, makes no call at
 * all (the system call inline), and keeps what it needs past the system call
 * in registers the call leaves alone, so it saves none; everything else goes
 * to the full hook, `full`, as a tail call, and what follows a read that does
 * not fold to io_read_untimed_kernel. */
#define READ_ST_HOOK(api, fd, ask, off, nr, a3, full)                                      \
    struct wsl_thread *t = wsl_tls.thread;                                                 \
    if (WSL_UNLIKELY(wsl_tls.depth || !t ||                                                \
                     t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)))   \
        return IO_OFF() && !wsl_tls.depth                                                  \
                   ? st_kernel_result(st_syscall4_kernel(nr, fd, (long)buf, (long)(ask), (long)(a3))) \
                   : full;                                                                 \
    uint64_t info_ = info_of_fd(fd);                                                       \
    uint32_t countdown_ = t->io_countdown;                                                 \
    if (WSL_UNLIKELY(!(info_ & FD_LOCAL) || countdown_ <= 1))                              \
        return full; /* a call to time, or not on a local file */                          \
    t->io_countdown = countdown_ - 1;                                                      \
    uint64_t tv_ = (uintptr_t)t, file_ = WSL_FOLD_FILE(fd, (uint32_t)info_);               \
    long r = st_syscall4_keeping(nr, fd, (long)buf, (long)(ask), (long)(a3), &tv_, &file_); \
    t = (struct wsl_thread *)(uintptr_t)tv_;                                               \
    /* Busy from here: a signal handler's calls when the system call returns (where \
     * most signals are taken) are recorded, and the fold is read after them. */           \
    t->gen |= WSL_GEN_BUSY;                                                                \
    if (WSL_LIKELY(r >= 0 && (ask) != 0) &&                                                \
        WSL_LIKELY(io_fold_fast_file(t, (api) + WSL_IO_SAMPLED, file_, (uint64_t)r))) {    \
        t->gen &= ~WSL_GEN_BUSY;                                                           \
        return r;                                                                          \
    }                                                                                      \
    return io_read_untimed_busy(fd, (api) + WSL_IO_SAMPLED, ask, r, t, file_, off);

/* A read in a program with threads: its common case, an untimed read on a
 * local file folded into the thread's fold, calls the real function with the
 * arguments as they came and saves only what the fold needs past the call;
 * everything else goes to the full hook, `full`, as a tail call. */
#define READ_MT_HOOK(api, fd, ask, off, name, args, full)                                  \
    struct wsl_thread *t = wsl_tls.thread;                                                 \
    __typeof__(real.name) real_ = real.name;                                               \
    if (WSL_UNLIKELY(wsl_tls.depth || !t || !real_ ||                                      \
                     t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)))   \
        return full;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    uint32_t countdown_ = t->io_countdown;                                                 \
    if (WSL_UNLIKELY(!(info_ & FD_LOCAL) || countdown_ <= 1))                              \
        return full; /* a call to time, or not on a local file */                          \
    t->io_countdown = countdown_ - 1;                                                      \
    uint64_t file_ = WSL_FOLD_FILE(fd, (uint32_t)info_);                                   \
    uint64_t ask_ = (ask);                                                                 \
    wsl_tls.depth = 1;                                                                     \
    ssize_t r = real_ args;                                                                \
    if (WSL_LIKELY(r >= 0 && ask_ != 0) &&                                                 \
        WSL_LIKELY(io_fold_fast_file(t, (api) + WSL_IO_SAMPLED, file_, (uint64_t)r))) {    \
        wsl_tls.depth = 0;                                                                 \
        return r;                                                                          \
    }                                                                                      \
    return io_read_untimed_file(t, (api) + WSL_IO_SAMPLED, file_, ask_, r, off);

static __attribute__((noinline)) ssize_t read_st_full(int fd, void *buf, size_t n)
{
    READ_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, st_read(fd, buf, n))
}
static __attribute__((noinline)) ssize_t read_st(int fd, void *buf, size_t n)
{
    READ_ST_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, SYS_read, 0, read_st_full(fd, buf, n))
}
static __attribute__((noinline)) ssize_t read_mt_full(int fd, void *buf, size_t n)
{
    READ_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, REAL(read)(fd, buf, n))
}
static __attribute__((noinline)) ssize_t read_mt(int fd, void *buf, size_t n)
{
    READ_MT_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, read, (fd, buf, n), read_mt_full(fd, buf, n))
}
WSL_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    if (PROGRAM_ST())
        return read_st(fd, buf, n);
    return read_mt(fd, buf, n);
}
WSL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    READ_HOOK(WSL_IO_ID___read_chk, fd, n, NO_OFFSET, REAL(__read_chk)(fd, buf, n, buflen))
}
static __attribute__((noinline)) ssize_t pread_st_full(int fd, void *buf, size_t n, off_t off)
{
    READ_HOOK(WSL_IO_ID_pread, fd, n, (uint64_t)off, st_pread(fd, buf, n, (off_t)off))
}
static __attribute__((noinline)) ssize_t pread_st(int fd, void *buf, size_t n, off_t off)
{
    READ_ST_HOOK(WSL_IO_ID_pread, fd, n, (uint64_t)off, SYS_pread64, off, pread_st_full(fd, buf, n, off))
}
static __attribute__((noinline)) ssize_t pread_mt_full(int fd, void *buf, size_t n, off_t off)
{
    READ_HOOK(WSL_IO_ID_pread, fd, n, (uint64_t)off, REAL(pread)(fd, buf, n, off))
}
static __attribute__((noinline)) ssize_t pread_mt(int fd, void *buf, size_t n, off_t off)
{
    READ_MT_HOOK(WSL_IO_ID_pread, fd, n, (uint64_t)off, pread, (fd, buf, n, off), pread_mt_full(fd, buf, n, off))
}
WSL_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    if (PROGRAM_ST())
        return pread_st(fd, buf, n, off);
    return pread_mt(fd, buf, n, off);
}
static __attribute__((noinline)) ssize_t pread64_st_full(int fd, void *buf, size_t n, off64_t off)
{
    READ_HOOK(WSL_IO_ID_pread64, fd, n, (uint64_t)off, st_pread(fd, buf, n, (off_t)off))
}
static __attribute__((noinline)) ssize_t pread64_st(int fd, void *buf, size_t n, off64_t off)
{
    READ_ST_HOOK(WSL_IO_ID_pread64, fd, n, (uint64_t)off, SYS_pread64, off, pread64_st_full(fd, buf, n, off))
}
static __attribute__((noinline)) ssize_t pread64_mt_full(int fd, void *buf, size_t n, off64_t off)
{
    READ_HOOK(WSL_IO_ID_pread64, fd, n, (uint64_t)off, REAL(pread64)(fd, buf, n, off))
}
static __attribute__((noinline)) ssize_t pread64_mt(int fd, void *buf, size_t n, off64_t off)
{
    READ_MT_HOOK(WSL_IO_ID_pread64, fd, n, (uint64_t)off, pread64, (fd, buf, n, off), pread64_mt_full(fd, buf, n, off))
}
WSL_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    if (PROGRAM_ST())
        return pread64_st(fd, buf, n, off);
    return pread64_mt(fd, buf, n, off);
}
WSL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    READ_HOOK(WSL_IO_ID___pread_chk, fd, n, (uint64_t)off, REAL(__pread_chk)(fd, buf, n, off, buflen))
}
WSL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    READ_HOOK(WSL_IO_ID___pread64_chk, fd, n, (uint64_t)off, REAL(__pread64_chk)(fd, buf, n, off, buflen))
}

static uint64_t iov_bytes(const struct iovec *iov, int cnt)
{
    uint64_t n = 0;
    for (int i = 0; iov && i < cnt && i < 1024; i++)
        n += iov[i].iov_len;
    return n;
}

WSL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    READ_HOOK(WSL_IO_ID_readv, fd, iov_bytes(iov, cnt), NO_OFFSET, REAL(readv)(fd, iov, cnt))
}
WSL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    READ_HOOK(WSL_IO_ID_preadv, fd, iov_bytes(iov, cnt), (uint64_t)off, REAL(preadv)(fd, iov, cnt, off))
}
WSL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    READ_HOOK(WSL_IO_ID_preadv64, fd, iov_bytes(iov, cnt), (uint64_t)off, REAL(preadv64)(fd, iov, cnt, off))
}
WSL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    READ_HOOK(WSL_IO_ID_preadv2, fd, iov_bytes(iov, cnt), (uint64_t)off, REAL(preadv2)(fd, iov, cnt, off, flags))
}
WSL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    READ_HOOK(WSL_IO_ID_preadv64v2, fd, iov_bytes(iov, cnt), (uint64_t)off,
              REAL(preadv64v2)(fd, iov, cnt, off, flags))
}

/* stdio: the FILE's fd names the file; an error is what ferror reports. */
static inline int stream_fd(FILE *f) { return f ? fileno_unlocked(f) : -1; }

#define FREAD_HOOK(api, size, n, f, call)                                                  \
    int fd = stream_fd(f);                                                                 \
    IO_TIMED_CALL_EMU(size_t, r, fd, call, EMU_FD_BYTES(info_, 0, (uint64_t)r * (size)))   \
    int err = errno;                                                                       \
    int failed = r < (n) && f && ferror_unlocked(f);                                       \
    io_record_read(t, (api) + off_, t0, t1, failed, err, fd, (uint32_t)info_, (uint64_t)(size) * (n), \
              (uint64_t)r * (size), NO_OFFSET);                                            \
    errno = err;                                                                           \
    return r;

WSL_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
    FREAD_HOOK(WSL_IO_ID_fread, size, n, f, REAL(fread)(buf, size, n, f))
}
WSL_EXPORT size_t fread_unlocked(void *buf, size_t size, size_t n, FILE *f)
{
    FREAD_HOOK(WSL_IO_ID_fread_unlocked, size, n, f, REAL(fread_unlocked)(buf, size, n, f))
}
WSL_EXPORT size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *f)
{
    FREAD_HOOK(WSL_IO_ID___fread_chk, size, n, f, REAL(__fread_chk)(buf, buflen, size, n, f))
}

#define FGETS_HOOK(api, s, size, f, call)                                                  \
    int fd = stream_fd(f);                                                                 \
    IO_TIMED_CALL(char *, r, fd, call)                                                     \
    int err = errno;                                                                       \
    io_record_read(t, (api) + off_, t0, t1, !r && f && ferror_unlocked(f), err, fd, (uint32_t)info_, \
              (uint64_t)(size), r ? strlen(r) : 0, NO_OFFSET);                             \
    errno = err;                                                                           \
    return r;

WSL_EXPORT char *fgets(char *s, int size, FILE *f)
{
    FGETS_HOOK(WSL_IO_ID_fgets, s, size > 0 ? size : 0, f, REAL(fgets)(s, size, f))
}
WSL_EXPORT char *__fgets_chk(char *s, size_t buflen, int size, FILE *f)
{
    FGETS_HOOK(WSL_IO_ID___fgets_chk, s, size > 0 ? size : 0, f, REAL(__fgets_chk)(s, buflen, size, f))
}

#define GETDELIM_HOOK(api, f, call)                                                        \
    int fd = stream_fd(f);                                                                 \
    IO_TIMED_CALL(ssize_t, r, fd, call)                                                    \
    int err = errno;                                                                       \
    io_record_read(t, (api) + off_, t0, t1, r < 0 && f && ferror_unlocked(f), err, fd, (uint32_t)info_, 0, \
              r > 0 ? (uint64_t)r : 0, NO_OFFSET);                                         \
    errno = err;                                                                           \
    return r;

WSL_EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *f)
{
    GETDELIM_HOOK(WSL_IO_ID_getdelim, f, REAL(getdelim)(line, n, delim, f))
}
WSL_EXPORT ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f)
{
    GETDELIM_HOOK(WSL_IO_ID___getdelim, f, REAL(__getdelim)(line, n, delim, f))
}
/* stdio.h may define getline inline (calling __getdelim): the hook gets its
 * symbol name through an asm label so that every compiler exports it. */
WSL_EXPORT ssize_t wsl_io_getline(char **line, size_t *n, FILE *f) __asm__("getline");
WSL_EXPORT ssize_t wsl_io_getline(char **line, size_t *n, FILE *f)
{
    GETDELIM_HOOK(WSL_IO_ID_getline, f, REAL(getline)(line, n, f))
}

/* ---- mmap of files ----------------------------------------------------------------------- */
#define MMAP_HOOK(api, call)                                                               \
    if (fd < 0 || (flags & MAP_ANONYMOUS))                                                 \
        return call;                                                                       \
    IO_TIMED_CALL(void *, r, fd, call)                                                     \
    int err = errno;                                                                       \
    io_record(t, (api) + off_, t0, t1, r == MAP_FAILED, err, fd, (uint32_t)info_, len, (uint64_t)off, \
              (uint64_t)(unsigned)prot);                                                   \
    errno = err;                                                                           \
    return r;

/* Before the constructor resolved it (malloc's early maps), mmap is the system call. */
static void *mmap_raw(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (real.mmap)
        return real.mmap(addr, len, prot, flags, fd, off);
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return (void *)r;
}

WSL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    MMAP_HOOK(WSL_IO_ID_mmap, mmap_raw(addr, len, prot, flags, fd, off))
}
WSL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    MMAP_HOOK(WSL_IO_ID_mmap64, mmap_raw(addr, len, prot, flags, fd, (off_t)off))
}

/* ---- the stat family --------------------------------------------------------------------- */

/* A lookup by path (dirfd-relative) or, with path NULL, of an open fd: its
 * path id, and whether the file is local (from the fd, or from its directory
 * when something in it was opened or looked up before). */
static inline int lookup_begin(struct wsl_thread *t, int dirfd, const char *path, int fd, uint32_t *id,
                               uint64_t *dir_hash)
{
    *dir_hash = 0;
    if (!path) {
        uint64_t info = info_of_fd(fd);
        *id = (uint32_t)info;
        return (info & FD_LOCAL) != 0;
    }
    *id = path_record(t, dirfd, path, dir_hash);
    uint64_t dev = dir_device(*dir_hash);
    return dev && wsl_cfg.io_timing > 1 && dev_is_local(t, dev);
}

#define LOOKUP_CALL(dirfd, path, fd, call)                                                 \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    const char *path_ = (path);                                                            \
    uint32_t id_;                                                                          \
    uint64_t dir_hash_;                                                                    \
    int local_ = lookup_begin(t, dirfd, path_, fd, &id_, &dir_hash_);                      \
    int emu_ = WSL_UNLIKELY(wsl_emu_fs_on) && emu_named(t, dirfd, path_);                  \
    if (WSL_UNLIKELY(emu_))                                                                \
        local_ = 0;                                                                        \
    IO_TIMING(local_)                                                                      \
    IO_CALL_TIMED_EMU(int, r, call, EMU_NAMED(emu_))

#define STAT_HOOK(api, dirfd, path, fd, st, call)                                          \
    LOOKUP_CALL(dirfd, path, fd, call)                                                     \
    /* an untimed fstat of a local file folds (its size is all the fold keeps); the         \
     * recording path leaves errno alone (its slow paths restore it) */                   \
    if (!t0 && r == 0 && !path_ && id_ && (uint64_t)(st)->st_size <= FOLD_VALUE_LIMIT &&    \
        io_fold(t, (api) + off_, fd, id_, (uint64_t)(st)->st_size))                        \
        return r;                                                                          \
    int err = errno;                                                                       \
    uint64_t dev = r == 0 && (st) ? WSL_DEV(major((st)->st_dev), minor((st)->st_dev)) : 0; \
    uint64_t size = r == 0 && (st) ? (uint64_t)(st)->st_size : 0;                          \
    if (dev && path_ && S_ISREG((st)->st_mode) && !dir_device(dir_hash_))                  \
        dir_device_set(dir_hash_, dev); /* a file's folder is on its device */             \
    io_record(t, (api) + off_, t0, t1, r != 0, err, path_ ? -1 : fd, id_, dev, size, WSL_STAT_KIND_STAT); \
    errno = err;                                                                           \
    return r;

WSL_EXPORT int stat(const char *path, struct stat *st)
{
    STAT_HOOK(WSL_IO_ID_stat, AT_FDCWD, path, -1, st, REAL(stat)(path, st))
}
WSL_EXPORT int stat64(const char *path, struct stat64 *st)
{
    STAT_HOOK(WSL_IO_ID_stat64, AT_FDCWD, path, -1, st, REAL(stat64)(path, st))
}
WSL_EXPORT int lstat(const char *path, struct stat *st)
{
    STAT_HOOK(WSL_IO_ID_lstat, AT_FDCWD, path, -1, st, REAL(lstat)(path, st))
}
WSL_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    STAT_HOOK(WSL_IO_ID_lstat64, AT_FDCWD, path, -1, st, REAL(lstat64)(path, st))
}
/* The common case of a call on a local file's fd whose untimed success folds a
 * value (fstat: the size, lseek: the offset), where the hook makes glibc's
 * system call itself (`direct`: seek_direct, fstat_direct): nr with fd, b, c, d. Everything else,
 * timed calls and those that fail or do not fold, goes to the full hook
 * (`full`, a tail call) or, once made, to `rest`; a failed call sets errno as
 * glibc's wrapper does. */
#define FD_FOLD_FAST(type, api, fd, direct, cond, nr, b, c, d, value, rest, full)          \
    struct wsl_thread *t = io_enter_ready();                                               \
    if (WSL_UNLIKELY(!t || !(direct)))                                                     \
        return full;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    if (WSL_UNLIKELY(!(info_ & FD_LOCAL) || t->io_countdown <= 1 || !(cond)))              \
        return full;                                                                       \
    t->io_countdown--;                                                                     \
    wsl_tls_depth = 1;                                                                     \
    long k_ = st_syscall4_kernel(nr, fd, (long)(b), (long)(c), (long)(d));                 \
    type r = (type)k_;                                                                     \
    if (WSL_LIKELY(k_ >= 0 && (uint64_t)(value) <= FOLD_VALUE_LIMIT) &&                    \
        WSL_LIKELY(io_fold_fast(t, (api) + WSL_IO_SAMPLED, fd, (uint32_t)info_, (uint64_t)(value)))) { \
        wsl_tls_depth = 0;                                                                 \
        return r;                                                                          \
    }                                                                                      \
    if (k_ < 0)                                                                            \
        r = (type)wsl_syscall_failed(k_);                                                  \
    rest;                                                                                  \
    return r;

/* The rest of an untimed fstat of a local file (FD_FOLD_FAST). */
static __attribute__((noinline)) void fstat_untimed_rest(struct wsl_thread *t, unsigned api, int fd, uint32_t id,
                                                         int r, uint64_t dev, uint64_t size)
{
    if (r == 0 && id && size <= FOLD_VALUE_LIMIT && io_fold(t, api, fd, id, size))
        return;
    int err = errno;
    io_record(t, api, 0, 0, r != 0, err, fd, id, r == 0 ? dev : 0, r == 0 ? size : 0, WSL_STAT_KIND_STAT);
    errno = err;
}

/* fstat and fstat64: the full hook, and the exported one with its common case inline. */
#define FSTAT_FUNCTIONS(name, type)                                                        \
    static __attribute__((noinline)) int name##_full(int fd, type *st)                     \
    {                                                                                      \
        STAT_HOOK(WSL_IO_ID_##name, AT_FDCWD, (const char *)NULL, fd, st, REAL(name)(fd, st)) \
    }                                                                                      \
    WSL_EXPORT int name(int fd, type *st)                                                  \
    {                                                                                      \
        FD_FOLD_FAST(int, WSL_IO_ID_##name, fd, fstat_direct, st != NULL, SYS_newfstatat, "", st, AT_EMPTY_PATH, \
                     r == 0 ? st->st_size : 0, \
                     fstat_untimed_rest(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, fd, (uint32_t)info_, r, \
                                        r == 0 ? WSL_DEV(major(st->st_dev), minor(st->st_dev)) : 0, \
                                        r == 0 ? (uint64_t)st->st_size : 0),               \
                     name##_full(fd, st))                                                  \
    }
FSTAT_FUNCTIONS(fstat, struct stat)
FSTAT_FUNCTIONS(fstat64, struct stat64)
/* fstatat with AT_EMPTY_PATH and "" is an fstat of dirfd. */
#define AT_PATH(path, flags) ((flags & AT_EMPTY_PATH) && path && !path[0] ? (const char *)NULL : path)
WSL_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    STAT_HOOK(WSL_IO_ID_fstatat, dirfd, AT_PATH(path, flags), dirfd, st, REAL(fstatat)(dirfd, path, st, flags))
}
WSL_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    STAT_HOOK(WSL_IO_ID_fstatat64, dirfd, AT_PATH(path, flags), dirfd, st,
              REAL(fstatat64)(dirfd, path, st, flags))
}
WSL_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
    STAT_HOOK(WSL_IO_ID___xstat, AT_FDCWD, path, -1, st, REAL(__xstat)(ver, path, st))
}
WSL_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
    STAT_HOOK(WSL_IO_ID___xstat64, AT_FDCWD, path, -1, st, REAL(__xstat64)(ver, path, st))
}
WSL_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
    STAT_HOOK(WSL_IO_ID___lxstat, AT_FDCWD, path, -1, st, REAL(__lxstat)(ver, path, st))
}
WSL_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    STAT_HOOK(WSL_IO_ID___lxstat64, AT_FDCWD, path, -1, st, REAL(__lxstat64)(ver, path, st))
}
WSL_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
    STAT_HOOK(WSL_IO_ID___fxstat, AT_FDCWD, (const char *)NULL, fd, st, REAL(__fxstat)(ver, fd, st))
}
WSL_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
    STAT_HOOK(WSL_IO_ID___fxstat64, AT_FDCWD, (const char *)NULL, fd, st, REAL(__fxstat64)(ver, fd, st))
}
WSL_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
    STAT_HOOK(WSL_IO_ID___fxstatat, dirfd, AT_PATH(path, flags), dirfd, st,
              REAL(__fxstatat)(ver, dirfd, path, st, flags))
}
WSL_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
    STAT_HOOK(WSL_IO_ID___fxstatat64, dirfd, AT_PATH(path, flags), dirfd, st,
              REAL(__fxstatat64)(ver, dirfd, path, st, flags))
}

WSL_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *stx)
{
    LOOKUP_CALL(dirfd, AT_PATH(path, flags), dirfd, REAL(statx)(dirfd, path, flags, mask, stx))
    int err = errno;
    uint64_t dev = r == 0 && stx ? WSL_DEV(stx->stx_dev_major, stx->stx_dev_minor) : 0;
    uint64_t size = r == 0 && stx ? stx->stx_size : 0;
    io_record(t, WSL_IO_ID_statx + off_, t0, t1, r != 0, err, path_ ? -1 : dirfd, id_, dev, size, WSL_STAT_KIND_STATX);
    errno = err;
    return r;
}

#define ACCESS_HOOK(api, dirfd, path, call)                                                \
    LOOKUP_CALL(dirfd, path, -1, call)                                                     \
    int err = errno;                                                                       \
    io_record(t, (api) + off_, t0, t1, r != 0, err, -1, id_, 0, 0, WSL_STAT_KIND_ACCESS);     \
    errno = err;                                                                           \
    return r;

WSL_EXPORT int access(const char *path, int mode)
{
    ACCESS_HOOK(WSL_IO_ID_access, AT_FDCWD, path, REAL(access)(path, mode))
}
WSL_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    ACCESS_HOOK(WSL_IO_ID_faccessat, dirfd, path, REAL(faccessat)(dirfd, path, mode, flags))
}

/* ---- seeks and closes -------------------------------------------------------------------- */
#define SEEK_HOOK(api, call)                                                               \
    IO_TIMED_CALL(__typeof__(call), r, fd, call)                                           \
    /* The recording path leaves errno alone (its slow paths restore it). Folds: a tell     \
     * (0, SEEK_CUR) and a seek to an offset (SEEK_SET), which the value says. */         \
    if (!t0 && r >= 0 && (whence == SEEK_SET || (whence == SEEK_CUR && off == 0)) &&        \
        (uint32_t)info_ && (uint64_t)r <= FOLD_VALUE_LIMIT >> 1 &&                         \
        io_fold(t, (api) + off_, fd, (uint32_t)info_, (uint64_t)r << 1 | (whence == SEEK_SET))) \
        return r;                                                                          \
    io_record(t, (api) + off_, t0, t1, r < 0, r < 0 ? errno : 0, fd, (uint32_t)info_, (uint64_t)off, \
              (uint64_t)whence, (uint64_t)r);                                              \
    return r;

/* The rest of an untimed seek on a local file (FD_FOLD_FAST), as SEEK_HOOK's. */
static __attribute__((noinline)) void seek_untimed_rest(struct wsl_thread *t, unsigned api, int fd, uint32_t id,
                                                        int64_t off, int whence, int64_t r)
{
    int err = errno;
    if (r >= 0 && id && (uint64_t)r <= FOLD_VALUE_LIMIT >> 1 &&
        io_fold(t, api, fd, id, (uint64_t)r << 1 | (whence == SEEK_SET)))
        return;
    io_record(t, api, 0, 0, r < 0, r < 0 ? err : 0, fd, id, (uint64_t)off, (uint64_t)whence, (uint64_t)r);
    errno = err;
}

/* a tell (0, SEEK_CUR) or a seek to an offset (SEEK_SET): what folds */
#define SEEK_FOLDS(off, whence) ((whence) == SEEK_SET || ((whence) == SEEK_CUR && (off) == 0))

/* lseek and lseek64: the full hook, and the exported one with its common case inline. */
#define SEEK_FUNCTIONS(name, type)                                                         \
    static __attribute__((noinline)) type name##_full(int fd, type off, int whence)        \
    {                                                                                      \
        SEEK_HOOK(WSL_IO_ID_##name, REAL(name)(fd, off, whence))                           \
    }                                                                                      \
    WSL_EXPORT type name(int fd, type off, int whence)                                     \
    {                                                                                      \
        FD_FOLD_FAST(type, WSL_IO_ID_##name, fd, seek_direct, SEEK_FOLDS(off, whence), SYS_lseek, off, whence, 0, \
                     (uint64_t)r << 1 | (whence == SEEK_SET),                              \
                     seek_untimed_rest(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, fd, (uint32_t)info_, off, whence, r), \
                     name##_full(fd, off, whence))                                         \
    }
SEEK_FUNCTIONS(lseek, off_t)
SEEK_FUNCTIONS(lseek64, off64_t)

/* ---- the shim's own descriptors ------------------------------------------------------------
 * A program may close every descriptor it did not open (daemons, subprocess
 * children, test harnesses): close(), close_range() and closefrom() leave the
 * shim's alone and answer as if they were not open (EBADF for close(), which
 * is what the program would get without the shim). */
static _Atomic int protected_fds[2] = {-1, -1};

void wsl_fd_protect(int slot, int fd) { atomic_store(&protected_fds[slot], fd); }

static inline int fd_protected(int fd)
{
    return fd >= 0 && (fd == atomic_load_explicit(&protected_fds[0], memory_order_relaxed) ||
                       fd == atomic_load_explicit(&protected_fds[1], memory_order_relaxed));
}

static int sys_close_range(unsigned first, unsigned last, int flags)
{
    return (int)syscall(SYS_close_range, first, last, flags);
}

/* close_range over [first, last] minus the protected descriptors, in order. */
static int close_range_around(unsigned first, unsigned last, int flags)
{
    int p[2] = {atomic_load(&protected_fds[0]), atomic_load(&protected_fds[1])};
    if (p[0] > p[1]) {
        int x = p[0];
        p[0] = p[1];
        p[1] = x;
    }
    unsigned from = first;
    for (int i = 0; i < 2; i++) {
        if (p[i] < 0 || (unsigned)p[i] < from || (unsigned)p[i] > last)
            continue;
        if ((unsigned)p[i] > from && sys_close_range(from, (unsigned)p[i] - 1, flags) != 0)
            return -1;
        from = (unsigned)p[i] + 1;
        if (from == 0 || from > last) /* wrapped, or nothing after it */
            return 0;
    }
    return sys_close_range(from, last, flags);
}

WSL_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    if (first > last || (flags & CLOSE_RANGE_CLOEXEC))
        return sys_close_range(first, last, flags); /* errors as the kernel gives them; CLOEXEC is harmless */
    return close_range_around(first, last, flags);
}

WSL_EXPORT void closefrom(int lowfd)
{
    int saved = errno;
    if (lowfd < 0)
        lowfd = 0;
    if (close_range_around((unsigned)lowfd, ~0u, 0) != 0) {
        /* No close_range in this kernel: one by one, up to the limit. */
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = lowfd; fd < (max > 0 ? max : 65536); fd++)
            if (!fd_protected((int)fd))
                REAL(close)((int)fd);
    }
    errno = saved;
}

/* close: fd's recording ends; `call` closes it. */
#define CLOSE_HOOK(call)                                                                   \
    if (WSL_UNLIKELY(fd_protected(fd))) {                                                  \
        errno = EBADF;                                                                     \
        return -1;                                                                         \
    }                                                                                      \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t) {                                                                              \
        fd_forget_passing(fd);                                                             \
        return call;                                                                       \
    }                                                                                      \
    uint64_t info_ = info_of_fd(fd);                                                       \
    fd_set_path(fd, 0); /* before the number can be reused by another thread's open */    \
    IO_TIMING(info_ & FD_LOCAL)                                                            \
    IO_CALL_TIMED(int, r, call)                                                            \
    /* The recording path leaves errno alone (its slow paths restore it). */               \
    if (!io_fold_close(t, fd, (uint32_t)info_, !t0 && r == 0))                             \
        io_record(t, WSL_IO_ID_close + off_, t0, t1, r != 0, r != 0 ? errno : 0, fd, (uint32_t)info_, 0, 0, 0); \
    return r;

static __attribute__((noinline)) int close_st_full(int fd) { CLOSE_HOOK(st_close(fd)) }

/* The rest of an untimed close of the folded file made by close_st below: r
 * is the kernel's answer. As CLOSE_HOOK: the fold ends, with the close in it
 * when it succeeded, else the failed close is an event of its own after it. */
static __attribute__((noinline)) int io_close_folded_kernel(struct wsl_thread *t, int fd, uint32_t path, long r)
{
    if (WSL_LIKELY(r == 0)) {
        fold_end_closed(t);
        wsl_tls_depth = 0;
        return 0;
    }
    fold_next(t, 0, -1, 0);
    io_record(t, WSL_IO_ID_close + WSL_IO_SAMPLED, 0, 0, 1, (int)-r, fd, path, 0, 0, 0);
    errno = (int)-r;
    return -1;
}

/* A close in a single-threaded program: its common case, an untimed close of
 * the file the thread folds (a local file just read), makes the system call
 * inline and saves no registers; anything else goes to the full hook. */
static __attribute__((noinline)) int close_st(int fd)
{
    struct wsl_thread *t = io_enter_ready();
    if (WSL_UNLIKELY(!t))
        return IO_OFF() && !fd_protected(fd) ? (int)st_kernel_result(st_syscall4_kernel(SYS_close, fd, 0, 0, 0))
                                             : close_st_full(fd);
    uint64_t info = info_of_fd(fd);
    uint32_t path = (uint32_t)info;
    if (WSL_UNLIKELY(!(info & FD_LOCAL) || t->io_countdown <= 1 || !path ||
                     FOLD_LD(t->fold_file) != WSL_FOLD_FILE(fd, path) || fd_protected(fd)))
        return close_st_full(fd);
    t->io_countdown--;
    fd_set_path(fd, 0); /* before the number can be reused (CLOSE_HOOK) */
    wsl_tls_depth = 1;
    long r = st_syscall4_kernel(SYS_close, fd, 0, 0, 0);
    return io_close_folded_kernel(t, fd, path, r);
}
static __attribute__((noinline)) int close_mt(int fd) { CLOSE_HOOK(REAL(close)(fd)) }
WSL_EXPORT int close(int fd)
{
    if (PROGRAM_ST())
        return close_st(fd);
    return close_mt(fd);
}

WSL_EXPORT int fclose(FILE *f)
{
    int fd = stream_fd(f);
    struct wsl_thread *t = io_enter();
    if (!t) {
        if (fd >= 0)
            fd_forget_passing(fd);
        return REAL(fclose)(f);
    }
    uint64_t info_ = fd >= 0 ? info_of_fd(fd) : 0;
    if (fd >= 0)
        fd_set_path(fd, 0);
    IO_TIMING(info_ & FD_LOCAL)
    IO_CALL_TIMED(int, r, REAL(fclose)(f))
    int err = errno;
    io_fold_close(t, fd, (uint32_t)info_, 0); /* its folded calls go before the fclose */
    io_record(t, WSL_IO_ID_fclose + off_, t0, t1, r != 0, err, fd, (uint32_t)info_, 0, 0, 0);
    errno = err;
    return r;
}

/* ---- the working directory changes ---------------------------------------------------------- */
WSL_EXPORT int chdir(const char *path)
{
    int r = REAL(chdir)(path);
    if (r == 0)
        atomic_fetch_add(&cwd_generation, 1);
    return r;
}

WSL_EXPORT int fchdir(int fd)
{
    int r = REAL(fchdir)(fd);
    if (r == 0)
        atomic_fetch_add(&cwd_generation, 1);
    return r;
}

/* ---- the mount table, for the writer -------------------------------------------------------- */
size_t wsl_io_read_mounts(char **buf, size_t *cap)
{
    const char *path = getenv("WSLSHIM_MOUNTINFO");
    if (!path || !*path)
        path = "/proc/self/mountinfo";
    int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    wsl_fd_protect(1, fd);
    size_t n = 0;
    for (;;) {
        if (n + 4096 > *cap) {
            size_t ncap = *cap ? *cap * 2 : 65536;
            if (ncap > (16u << 20))
                break; /* a mount table this large is cut; the analyzer warns */
            char *nb = realloc(*buf, ncap);
            if (!nb)
                break;
            *buf = nb;
            *cap = ncap;
        }
        ssize_t r = REAL(read)(fd, *buf + n, *cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    wsl_fd_protect(1, -1);
    REAL(close)(fd);
    return n;
}

/* ---- writes, syncs and folder calls (1.8; docs/io.md) ---------------------------------------
 * Always timed, never folded: an event each. A write on an fd the shim did not
 * see opened (stdout, stderr, a pipe) has path id 0: the report counts it under
 * other descriptors, not data files. The shim's own descriptors (the trace)
 * and its own threads' calls (depth) pass straight through. */
/* A system call as glibc makes it, all inline: run before TSan's runtime is up,
 * where no instrumented code may run (wsl_raw_syscall4's failure path is out of line). */
#if defined(__x86_64__) || defined(__aarch64__)
static inline __attribute__((always_inline)) WSL_NO_TSAN long early_syscall(long nr, long a, long b, long c, long d)
{
    long r = wsl_syscall4_kernel(nr, a, b, c, d);
    if (WSL_UNLIKELY((unsigned long)r > -4096ul)) {
        errno = (int)-r;
        return -1;
    }
    return r;
}
#else
#define early_syscall(nr, a, b, c, d) syscall((nr), (a), (b), (c), (d))
#endif

#define WRITE_HOOK(type, api, fd, ask, off, failed, written, call)                        \
    WRITE_HOOK_EARLY(type, api, fd, ask, off, failed, written, call, call)
/* early: what passes through while TSan's runtime starts (it makes the folder of
 * its log_path and writes the log from inside its start-up, before instrumented
 * code may run: resolving the real function would be such code): the system call. */
#define WRITE_HOOK_EARLY(type, api, fd, ask, off, failed, written, call, early)           \
    if (!wsl_tsan_up())                                                                    \
        return early;                                                                      \
    if (WSL_UNLIKELY(fd_protected(fd)))                                                    \
        return call;                                                                       \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    int timed_ = 1;                                                                        \
    IO_CALL_TIMED_EMU(type, r, call, EMU_FD_BYTES(info_, 1, (failed) ? 0 : (written)))    \
    int err = errno;                                                                       \
    io_record(t, api, t0, t1, (failed), err, fd, (uint32_t)info_, (ask), (failed) ? 0 : (written), (off)); \
    errno = err;                                                                           \
    return r;

WSL_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    WRITE_HOOK_EARLY(ssize_t, WSL_IO_ID_write, fd, n, NO_OFFSET, r < 0, (uint64_t)r, REAL(write)(fd, buf, n),
                     (ssize_t)early_syscall(SYS_write, fd, (long)buf, (long)n, 0))
}
WSL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    WRITE_HOOK(ssize_t, WSL_IO_ID_pwrite, fd, n, (uint64_t)off, r < 0, (uint64_t)r, REAL(pwrite)(fd, buf, n, off))
}
WSL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    WRITE_HOOK(ssize_t, WSL_IO_ID_pwrite64, fd, n, (uint64_t)off, r < 0, (uint64_t)r,
               REAL(pwrite64)(fd, buf, n, off))
}
WSL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    WRITE_HOOK(ssize_t, WSL_IO_ID_writev, fd, iov_bytes(iov, cnt), NO_OFFSET, r < 0, (uint64_t)r,
               REAL(writev)(fd, iov, cnt))
}
WSL_EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
    int fd = stream_fd(f);
    WRITE_HOOK(size_t, WSL_IO_ID_fwrite, fd, (uint64_t)size * n, NO_OFFSET, r < n && f && ferror_unlocked(f),
               (uint64_t)r * size, REAL(fwrite)(buf, size, n, f))
}
WSL_EXPORT int fsync(int fd)
{
    WRITE_HOOK(int, WSL_IO_ID_fsync, fd, 0, WSL_IO_WRITE_SYNC, r != 0, 0, REAL(fsync)(fd))
}
WSL_EXPORT int fdatasync(int fd)
{
    WRITE_HOOK(int, WSL_IO_ID_fdatasync, fd, 0, WSL_IO_WRITE_SYNC, r != 0, 0, REAL(fdatasync)(fd))
}

/* A call that names a path in a folder: the path is recorded (as a lookup's),
 * with its folder's device when a file there was seen. */
#define DIR_HOOK(type, api, dirfd, path, op, failed, call)                                \
    DIR_HOOK_EARLY(type, api, dirfd, path, op, failed, call, call)
#define DIR_HOOK_EARLY(type, api, dirfd, path, op, failed, call, early)                   \
    if (!wsl_tsan_up())                                                                    \
        return early;                                                                      \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t dir_hash_ = 0;                                                                \
    uint32_t id_ = (path) ? path_record(t, dirfd, path, &dir_hash_) : 0;                   \
    uint64_t dev_ = id_ ? dir_device(dir_hash_) : 0;                                       \
    int emu_ = WSL_UNLIKELY(wsl_emu_fs_on) && emu_named(t, dirfd, path);                   \
    int timed_ = 1;                                                                        \
    IO_CALL_TIMED_EMU(type, r, call, EMU_NAMED(emu_))                                      \
    int err = errno;                                                                       \
    io_record(t, api, t0, t1, (failed), err, (dirfd) == AT_FDCWD ? -1 : (dirfd), id_, dev_, (op), 0); \
    errno = err;                                                                           \
    return r;

WSL_EXPORT int rename(const char *from, const char *to)
{
    DIR_HOOK_EARLY(int, WSL_IO_ID_rename, AT_FDCWD, from, WSL_DIR_OP_RENAME, r != 0, REAL(rename)(from, to),
                   (int)early_syscall(SYS_renameat, AT_FDCWD, (long)from, AT_FDCWD, (long)to))
}
WSL_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    DIR_HOOK(int, WSL_IO_ID_renameat, fromfd, from, WSL_DIR_OP_RENAME, r != 0,
             REAL(renameat)(fromfd, from, tofd, to))
}
WSL_EXPORT int unlink(const char *path)
{
    DIR_HOOK_EARLY(int, WSL_IO_ID_unlink, AT_FDCWD, path, WSL_DIR_OP_UNLINK, r != 0, REAL(unlink)(path),
                   (int)early_syscall(SYS_unlinkat, AT_FDCWD, (long)path, 0, 0))
}
WSL_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    DIR_HOOK(int, WSL_IO_ID_unlinkat, dirfd, path, WSL_DIR_OP_UNLINK, r != 0, REAL(unlinkat)(dirfd, path, flags))
}
WSL_EXPORT int mkdir(const char *path, mode_t mode)
{
    DIR_HOOK_EARLY(int, WSL_IO_ID_mkdir, AT_FDCWD, path, WSL_DIR_OP_MKDIR, r != 0, REAL(mkdir)(path, mode),
                   (int)early_syscall(SYS_mkdirat, AT_FDCWD, (long)path, (long)mode, 0))
}
WSL_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    DIR_HOOK(int, WSL_IO_ID_mkdirat, dirfd, path, WSL_DIR_OP_MKDIR, r != 0, REAL(mkdirat)(dirfd, path, mode))
}
WSL_EXPORT DIR *opendir(const char *path)
{
    DIR_HOOK(DIR *, WSL_IO_ID_opendir, AT_FDCWD, path, WSL_DIR_OP_LIST, r == NULL, REAL(opendir)(path))
}
