/*
 * The file hooks' private interface (hooks/io/ only; the rest of the shim sees
 * their shim_internal.h section). What the hooks of several files share: the
 * real libc functions, the single-threaded twins' system calls, the fd table,
 * whether a device is a local filesystem's, the sampled timing, the directory
 * cache, the recording of an event, and the macros that make a hook's first
 * half. Their hot paths are written as static always_inline helpers here, so
 * that each hook compiles to the code it had in one file; the fold's half is
 * fold.h.
 *
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
 *
 * Each file of this folder defines _GNU_SOURCE and includes its system
 * headers before this one.
 */
#ifndef WSLSHIM_HOOKS_IO_HOOKS_H
#define WSLSHIM_HOOKS_IO_HOOKS_H

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
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

/* What this header declares is the file hooks' own (hidden), as shim_internal.h's. */
#pragma GCC visibility push(hidden)

/* ---- the real functions (libc.c) ---------------------------------------------------- */
struct wsl_io_real {
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
    int (*poll)(struct pollfd *, nfds_t, int);
    int (*__poll_chk)(struct pollfd *, nfds_t, int, size_t);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
    int (*__ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
    int (*sem_wait)(sem_t *);
    int (*sem_timedwait)(sem_t *, const struct timespec *);
    int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
    ssize_t (*sendfile)(int, int, off_t *, size_t);
    ssize_t (*sendfile64)(int, int, off64_t *, size_t);
    ssize_t (*copy_file_range)(int, off64_t *, int, off64_t *, size_t, unsigned);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
};
extern struct wsl_io_real wsl_io_real;

/* A slot as it is now (NULL: not resolved yet): an atomic load, as wsl_real_resolve stores it. */
#define REAL_SLOT(name) __atomic_load_n(&wsl_io_real.name, __ATOMIC_RELAXED)
#define REAL(name)                                                                         \
    __extension__({                                                                        \
        __typeof__(wsl_io_real.name) real_slot_ = REAL_SLOT(name);                         \
        WSL_LIKELY(real_slot_ != NULL) ? real_slot_                                        \
                                       : (__typeof__(real_slot_))wsl_real_resolve(#name, (void **)&wsl_io_real.name); \
    })

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

/* glibc's lseek, lseek64, fstat and fstat64 are its system calls and nothing
 * more (not cancellation points; since 2.33 an fstat is newfstatat(fd, "",
 * AT_EMPTY_PATH)): where glibc's come next after the shim, their hooks make
 * the same system call themselves on their common path, in any program,
 * without a call out and back (FD_FOLD_FAST); elsewhere the full hook calls
 * the next one. */
extern int seek_direct, fstat_direct;
#if defined(SYS_newfstatat)
#define WSL_HAVE_NEWFSTATAT 1
#else
#define WSL_HAVE_NEWFSTATAT 0
#define SYS_newfstatat (-1) /* never made: fstat_direct stays 0 */
#endif

/* ---- fd -> path id (fds.c) ------------------------------------------------------------- */
/* Per fd: the path id of its open, and FD_LOCAL when the file is on a local
 * filesystem (its calls' timing is sampled). */
#define FD_TABLE_SIZE 65536
#define FD_LOCAL (1ull << 32)
#define FD_EMU (1ull << 33) /* opened under an emulated path (WSLSHIM_EMULATE fs:PATH=9p): never FD_LOCAL */
/* With FD_LOCAL where glibc's lseek and lseek64 come next (seek_direct): their
 * fast path's one test (FD_FOLD_FAST); FD_FSTAT_DIRECT, the same for fstat. */
#define FD_SEEK_DIRECT (1ull << 34)
#define FD_FSTAT_DIRECT (1ull << 35)
/* what a local file's entry carries: FD_LOCAL, and the two above as they apply (libc.c) */
extern uint64_t fd_local_bits;
extern _Atomic uint64_t fd_info[FD_TABLE_SIZE];

static inline uint64_t info_of_fd(int fd)
{
    return (unsigned)fd < FD_TABLE_SIZE ? atomic_load_explicit(&fd_info[fd], memory_order_relaxed) : 0;
}

static inline uint32_t path_of_fd(int fd) { return (uint32_t)info_of_fd(fd); }

/* local: the file is on a local filesystem, and its calls' timing is sampled (WSLSHIM_IO_TIMING > 1) */
static inline void fd_set_info(int fd, uint32_t id, int local)
{
    if ((unsigned)fd < FD_TABLE_SIZE)
        atomic_store_explicit(&fd_info[fd], id | (local && wsl_cfg.io_timing > 1 ? fd_local_bits : 0),
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

/* ---- which devices are local filesystems (mounts.c) ----------------------------------- */
extern _Atomic uint32_t local_devs_gen; /* bumped with each mount table read; 1: none read yet */
int dev_lookup_local(struct wsl_thread *t, uint64_t dev, uint32_t gen) __attribute__((noinline));

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

/* Is this call on a local file the thread's one to time? */
static inline __attribute__((always_inline)) int io_due(struct wsl_thread *t)
{
    if (WSL_LIKELY(--t->io_countdown != 0))
        return 0;
    t->io_countdown = io_gap(t);
    return 1;
}

/* One more untimed call on a local file, for a fast twin: 1 when this call is
 * not the one to time (the countdown had more than one left, now one fewer),
 * else 0 with the countdown left at 1, for the full hook's io_due to find it
 * due. One subtraction in memory and its test on the common way. */
static inline __attribute__((always_inline)) int io_countdown_untimed(struct wsl_thread *t)
{
    if (WSL_LIKELY(--t->io_countdown != 0))
        return 1;
    t->io_countdown = 1;
    return 0;
}

/* ---- directory -> device (paths.c) --------------------------------------------------------- */
#define DIR_CACHE_SIZE 4096 /* power of two */
struct wsl_dir_device {
    _Atomic uint64_t hash;
    _Atomic uint64_t dev;
};
extern struct wsl_dir_device dir_cache[DIR_CACHE_SIZE];

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

/* Out of line in each file that calls it (opens.c, stat.c), as it was when the
 * hooks were one file: its callers know the few registers it uses, and keep
 * theirs across the call. */
static __attribute__((noinline, unused)) void dir_device_set(uint64_t dir_hash, uint64_t dev)
{
    if (!dir_hash || !dev)
        return;
    unsigned slot = (unsigned)(dir_hash & (DIR_CACHE_SIZE - 1));
    atomic_store_explicit(&dir_cache[slot].hash, 0, memory_order_relaxed);
    atomic_store_explicit(&dir_cache[slot].dev, dev, memory_order_relaxed);
    atomic_store_explicit(&dir_cache[slot].hash, dir_hash, memory_order_release);
}

/* ---- paths (paths.c) ----------------------------------------------------------------------- */
/* Copies `path` (relative to dirfd) into the thread's path ring under a new id;
 * returns the id (0 if none), and through dir_hash the hash of its folder
 * (dir_device's key). path_record is path_record_fast below, out of line;
 * path_record_slow its way for all but the common case. */
uint32_t path_record(struct wsl_thread *t, int dirfd, const char *path, uint64_t *dir_hash) __attribute__((noinline));
uint32_t path_record_slow(struct wsl_thread *t, int dirfd, const char *path, uint64_t *dir_hash)
    __attribute__((noinline));
/* path_record_slow for path_record_fast: the hash through a local of its own,
 * so that the caller's (inline) stays in a register rather than on the stack. */
static inline __attribute__((always_inline)) uint32_t path_record_slow_to(struct wsl_thread *t, int dirfd,
                                                                      const char *path, uint64_t *dir_hash)
{
    uint64_t h;
    uint32_t id = path_record_slow(t, dirfd, path, &h);
    *dir_hash = h;
    return id;
}
extern _Atomic uint64_t cwd_generation; /* bumped by chdir/fchdir */

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

/* memcpy out of line: a copy whose length the compiler knows to be at most
 * 4096 it may expand inline as `rep movs`, slow to start for a path's few
 * dozen bytes on many cores. */
static __attribute__((noinline, unused)) void copy_long(char *d, const char *s, size_t n) { memcpy(d, s, n); }

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

/* memrchr(p, '/', n), inline: a word at a time from the end (a file's name
 * is mostly under 8 bytes: one word), each byte of the word tested exactly
 * (no borrow between bytes), the highest match taken; no byte outside
 * p[0, n) is read. */
static inline __attribute__((always_inline)) const char *last_slash(const char *p, size_t n)
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return memrchr(p, '/', n);
#else
    const uint64_t ones7 = 0x7f7f7f7f7f7f7f7full, slashes = 0x2f2f2f2f2f2f2f2full;
    size_t i = n;
    while (i >= 8) {
        uint64_t x;
        memcpy(&x, p + i - 8, 8);
        x ^= slashes;
        /* a byte's top bit set where its byte of x is 0 (the '/'s) */
        uint64_t z = ~(((x & ones7) + ones7) | x | ones7);
        if (z)
            return p + i - 8 + ((63 - __builtin_clzll(z)) >> 3); /* little-endian: the last match */
        i -= 8;
    }
    while (i--)
        if (p[i] == '/')
            return p + i;
    return NULL;
#endif
}

/* path_record's common case straight (paths.c: path_record_as for a new id): a path named
 * absolute or relative to the working directory (cached), whose entry fits
 * before the small ring's end and leaves it at most half full. The same entry
 * and directory hash as path_record_as, with fewer tests: it runs once per open. */
static inline __attribute__((always_inline)) uint32_t path_record_fast(struct wsl_thread *t, int dirfd,
                                                                   const char *path, uint64_t *dir_hash)
{
    if (WSL_UNLIKELY(!path))
        return path_record_slow_to(t, dirfd, path, dir_hash);
    size_t plen = strnlen(path, WSL_PATH_MAX_LENGTH);
    const char *name = path;
    uint32_t prelen = 0; /* the working directory and its '/' */
    uint64_t seed = DIR_HASH_SEED;
    uint32_t len = (uint32_t)plen; /* an absolute path's: 1 to WSL_PATH_MAX_LENGTH (strnlen) */
    if (path[0] != '/') {
        if (WSL_UNLIKELY(dirfd != AT_FDCWD || !t->cwd_len ||
                         t->cwd_gen != atomic_load_explicit(&cwd_generation, memory_order_acquire)))
            return path_record_slow_to(t, dirfd, path, dir_hash);
        if (plen >= 2 && name[0] == '.' && name[1] == '/')
            name += 2, plen -= 2;
        prelen = t->cwd_len + 1;
        seed = t->cwd_hash;
        len = prelen + (uint32_t)plen;
        if (WSL_UNLIKELY(!plen || len > WSL_PATH_MAX_LENGTH))
            return path_record_slow_to(t, dirfd, path, dir_hash);
    }
    uint32_t need = (uint32_t)((sizeof(struct wsl_path_entry_header) + len + 7) & ~7u);
    uint64_t head = atomic_load_explicit(&t->sp_head, memory_order_relaxed);
    uint32_t off = (uint32_t)(head & (WSL_PATH_SMALL - 1));
    if (WSL_UNLIKELY(t->p_in_big || need > WSL_PATH_SMALL - off ||
                     head + need - atomic_load_explicit(&t->sp_tail, memory_order_acquire) > WSL_PATH_SMALL / 2))
        return path_record_slow_to(t, dirfd, path, dir_hash);
    uint32_t id = wsl_path_id_new(t);
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
    const char *last = last_slash(p, plen);
    *dir_hash = hash_padded_seeded(seed, p, last ? (size_t)(last - p) : 0);
    atomic_store_explicit(&t->sp_head, head + need, memory_order_release);
    return id;
}
/* Whether a call naming `path` (relative to dirfd) names a file under an
 * emulated prefix (WSLSHIM_EMULATE fs:PATH=9p); only when wsl_emu_fs_on. */
int emu_named(struct wsl_thread *t, int dirfd, const char *path) __attribute__((noinline, cold));

/* ---- recording --------------------------------------------------------------------------- */

/* Enters a hook: the thread to record into, or NULL to pass straight through. */
static inline __attribute__((always_inline)) struct wsl_thread *io_enter(void)
{
    if (WSL_UNLIKELY(wsl_tls_depth))
        return NULL;
    /* One test for both: the thread's buffer is of this process (not one from
     * before a fork), and file calls are recorded (wsl_io_gen is 0 when not). */
    struct wsl_thread *t = wsl_tls_thread; /* never NULL (WSL_THREAD_NONE) */
    if (WSL_UNLIKELY(t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed))) {
        if (t->gen != atomic_load_explicit(&wsl_gen, memory_order_relaxed))
            t = wsl_thread_setup();
        if (!t || !wsl_cfg.io) /* the first call may be what loaded WSLSHIM_IO=0 */
            return NULL;
    }
    WSL_NONNULL(t);
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

/* ---- the fast twins' entry (reads.c, fds.c, stat.c) --------------------------------------- */
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
    struct wsl_thread *t = wsl_tls_thread; /* never NULL (WSL_THREAD_NONE) */
    if (WSL_UNLIKELY(t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)))
        return NULL;
    WSL_NONNULL(t); /* the caller's test of NULL is the one above */
    return t;
}

/* ---- what several hooks take from their arguments ------------------------------------------ */
#define NO_OFFSET (~0ull)

/* stdio: the FILE's fd names the file; an error is what ferror reports. */
static inline int stream_fd(FILE *f) { return f ? fileno_unlocked(f) : -1; }

static inline uint64_t iov_bytes(const struct iovec *iov, int cnt)
{
    uint64_t n = 0;
    for (int i = 0; iov && i < cnt && i < 1024; i++)
        n += iov[i].iov_len;
    return n;
}

/* ---- the shim's own descriptors (fds.c) ---------------------------------------------------- */
extern _Atomic int protected_fds[2];

static inline int fd_protected(int fd)
{
    return fd >= 0 && (fd == atomic_load_explicit(&protected_fds[0], memory_order_relaxed) ||
                       fd == atomic_load_explicit(&protected_fds[1], memory_order_relaxed));
}


#pragma GCC visibility pop

#endif /* WSLSHIM_HOOKS_IO_HOOKS_H */
