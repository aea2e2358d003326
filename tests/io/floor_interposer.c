/*
 * floor_interposer: the least a preloaded library can do per file and still
 * record what issue 3 asks of every file, built at five levels to find the
 * floor under its budget "4 KiB page-cached files end to end under 2%"
 * (docs/overhead.md, "The floor"). Not the shim and not a test: a measuring
 * instrument for tests/io/ab_floor.sh.
 *
 *   FLOOR_LEVEL 0  pass: open/openat/read/lseek/fstat/close call glibc's
 *                  (found with dlsym at load) and nothing else
 *   FLOOR_LEVEL 1  count: and each call is counted into its fd's slot of a
 *                  table (calls, bytes): what "file id, bytes" per call needs
 *   FLOOR_LEVEL 2  path: and every open copies its path, made absolute with a
 *                  cached working directory, into a byte ring under a new id
 *   FLOOR_LEVEL 3  record: and every close writes one 32-byte record of the
 *                  file (id, calls, bytes) into a second ring
 *   FLOOR_LEVEL 4  recorder: and what a recorder cannot do without: a
 *                  consumer thread that drains both rings every millisecond
 *                  (reads each byte, as an encoder would; the producer never
 *                  overwrites what it has not read), where each file lives
 *                  (a hash of its folder looked up in a cache of devices,
 *                  fstat on a miss) and one call in 32 timed with the cycle
 *                  counter into an event of its own
 *
 * Levels 0-3 have no consumer (the program stays as single-threaded as it
 * was) and their rings wrap over themselves: a lower bound on what recording
 * costs, not a recorder. Only the first thread that opens a file records
 * paths (enough for the single-threaded A/B programs). FLOOR_RING_SHIFT sets
 * the rings' size (2^shift bytes each; the shim's are 1 MiB of events and 256
 * KiB of paths). FLOOR_THREAD 1 starts an idle thread at load, where a
 * recorder's writer would be. FLOOR_RAW 1 (for single-threaded programs, as
 * the shim does while a program has no thread of its own): the hooks make
 * the system calls themselves, which glibc brackets with its cancellation
 * bookkeeping once a process has a second thread, and the consumer thread
 * leaves the program's descriptor table (which Linux charges on every
 * descriptor call while two threads share it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#ifndef FLOOR_LEVEL
#define FLOOR_LEVEL 3
#endif
#ifndef FLOOR_RING_SHIFT
#define FLOOR_RING_SHIFT 16
#endif
#ifndef FLOOR_THREAD
#define FLOOR_THREAD 0
#endif
#ifndef FLOOR_RAW
#define FLOOR_RAW 0
#endif
#define RING (1u << FLOOR_RING_SHIFT)
#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#undef fstat
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static ssize_t (*real_read)(int, void *, size_t);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_fstat)(int, struct stat *);
static int (*real_close)(int);

/* ---- the rings, and the consumer of level 4 ---------------------------------------------- */
static struct {
    _Atomic uint64_t head, rec_head; /* producer */
    char pad[48];
    _Atomic uint64_t tail, rec_tail; /* consumer */
    char pad2[48];
    uint64_t limit, rec_limit;       /* producer: heads may grow to these before a look at the tails */
    uint64_t dropped, sum;
    uint32_t next_id, cwd_len;
    uint64_t cwd_hash;
    uint32_t countdown;
    char cwd[4096];
} R;
static uint8_t path_ring[RING], rec_ring[RING];
static _Atomic int owner_taken;
static TLS int owner; /* 1: this thread records paths; -1: it does not */

static void *idle(void *arg)
{
    for (;;)
        pause();
    return arg;
}

#if FLOOR_LEVEL >= 4
/* Reads [tail, head) of a ring, every byte, and gives the room back. */
static uint64_t drain(const uint8_t *ring, _Atomic uint64_t *head, _Atomic uint64_t *tail)
{
    uint64_t h = atomic_load_explicit(head, memory_order_acquire), t = atomic_load_explicit(tail, memory_order_relaxed);
    uint64_t sum = 0;
    for (; t < h; t += 8) {
        uint64_t w;
        memcpy(&w, ring + (t & (RING - 1)), 8);
        sum = (sum ^ w) * 0x9e3779b97f4a7c15ull;
    }
    atomic_store_explicit(tail, h, memory_order_release);
    return sum;
}

static void *consumer(void *arg)
{
    struct timespec ms = {0, 1000000};
    if (FLOOR_RAW) {
        /* a table of its own, holding none of the program's descriptors */
        unshare(CLONE_FILES);
        syscall(SYS_close_range, 0, ~0u, 0);
    }
    for (;;) {
        nanosleep(&ms, NULL);
        R.sum += drain(path_ring, &R.head, &R.tail) + drain(rec_ring, &R.rec_head, &R.rec_tail);
    }
    return arg;
}
#endif

__attribute__((constructor)) static void floor_init(void)
{
    real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    real_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    real_lseek = (off_t(*)(int, off_t, int))dlsym(RTLD_NEXT, "lseek");
    real_fstat = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
    real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    R.limit = R.rec_limit = RING;
    R.countdown = 32;
    pthread_t th;
#if FLOOR_LEVEL >= 4
    R.limit = R.rec_limit = RING / 2;
    pthread_create(&th, NULL, consumer, NULL);
    pthread_detach(th);
#endif
    if (FLOOR_THREAD) {
        pthread_create(&th, NULL, idle, NULL);
        pthread_detach(th);
    }
}

/* FLOOR_DEBUG=1: what was recorded and dropped, at exit (to check the instrument). */
#include <stdio.h>
#include <stdlib.h>
__attribute__((destructor)) static void floor_report(void)
{
    if (getenv("FLOOR_DEBUG"))
        fprintf(stderr, "floor: level %d, %u paths, path bytes %llu (read %llu), records %llu (read %llu), dropped %llu\n",
                FLOOR_LEVEL, R.next_id, (unsigned long long)R.head, (unsigned long long)R.tail,
                (unsigned long long)R.rec_head / 32, (unsigned long long)R.rec_tail / 32, (unsigned long long)R.dropped);
}

/* Room for `need` more bytes at *head: levels 0-3 always (they wrap over
 * themselves); level 4 as far as the consumer gave room back, else the
 * entry is dropped. */
static inline int room(_Atomic uint64_t *head, uint64_t *limit, _Atomic uint64_t *tail, uint32_t need)
{
    uint64_t h = atomic_load_explicit(head, memory_order_relaxed);
    if (__builtin_expect(h + need <= *limit, 1))
        return 1;
    *limit = atomic_load_explicit(tail, memory_order_acquire) + RING;
    if (FLOOR_LEVEL < 4)
        *limit = h + RING;
    if (h + need <= *limit)
        return 1;
    R.dropped++;
    return 0;
}

/* ---- per fd: its file's id and counts ---------------------------------------------------- */
#if FLOOR_LEVEL >= 1
#define FDS 4096
static struct fd_slot {
    uint32_t id, calls;
    uint64_t bytes;
    uint32_t local, pad;
} fds[FDS];
static inline void count(int fd, uint64_t bytes)
{
    if ((unsigned)fd < FDS) {
        fds[fd].calls++;
        fds[fd].bytes += bytes;
    }
}
#else
#define count(fd, bytes) ((void)0)
#endif

static inline int recording(void)
{
    if (__builtin_expect(owner != 0, 1))
        return owner > 0;
    int expect = 0;
    owner = atomic_compare_exchange_strong(&owner_taken, &expect, 1) ? 1 : -1;
    return owner > 0;
}

#if FLOOR_LEVEL >= 4
/* A folder's hash (word at a time), and the cache of the devices seen in folders. */
static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return (h ^ h >> 29) | 1;
}
#define DIRS 4096
static struct {
    uint64_t hash, dev;
} dirs[DIRS];
static uint64_t dir_hash_of;

/* One call in 32 timed: an event of its own (32 bytes) in the record ring. */
static inline int due(void)
{
    if (__builtin_expect(--R.countdown != 0, 1))
        return 0;
    R.countdown = 32;
    return 1;
}
static void timed_event(int fd, uint64_t t0, uint64_t t1, uint64_t v)
{
    if (!room(&R.rec_head, &R.rec_limit, &R.rec_tail, 32))
        return;
    uint64_t h = atomic_load_explicit(&R.rec_head, memory_order_relaxed);
    uint64_t *r = (uint64_t *)(rec_ring + (h & (RING - 1)));
    r[0] = (uint64_t)(unsigned)fd | 1ull << 63;
    r[1] = t0;
    r[2] = t1;
    r[3] = v;
    atomic_store_explicit(&R.rec_head, h + 32, memory_order_release);
}
#define TIMED(fd, type, var, call)                                                        \
    type var;                                                                              \
    if (__builtin_expect(due(), 0)) {                                                      \
        uint64_t t0 = __rdtsc();                                                           \
        var = call;                                                                        \
        timed_event(fd, t0, __rdtsc(), (uint64_t)var);                                     \
    } else {                                                                               \
        var = call;                                                                        \
    }
#else
#define TIMED(fd, type, var, call) type var = call;
#endif

#if FLOOR_LEVEL >= 2
/* The path into the ring (absolute: the working directory's cached copy first). */
static uint32_t path_copy(const char *path)
{
    if (!path || !recording())
        return 0;
    size_t n = strlen(path);
    uint32_t pre = 0;
    if (path[0] != '/') {
        if (!R.cwd_len && getcwd(R.cwd, sizeof R.cwd)) {
            R.cwd_len = (uint32_t)strlen(R.cwd);
#if FLOOR_LEVEL >= 4
            R.cwd_hash = hash_bytes(0x2545f4914f6cdd1dull, R.cwd, R.cwd_len);
#endif
        }
        pre = R.cwd_len + 1;
    }
    uint32_t need = (uint32_t)((8 + pre + n + 7) & ~(size_t)7);
    uint64_t h = atomic_load_explicit(&R.head, memory_order_relaxed);
    uint64_t off = h & (RING - 1);
    if (need > RING / 4 || !room(&R.head, &R.limit, &R.tail, need + (RING - off < need ? RING - off : 0)))
        return 0;
    if (RING - off < need) {
        memset(path_ring + off, 0, 8); /* id 0: pads to the end */
        h += RING - off, off = 0;
    }
    uint32_t id = ++R.next_id;
    uint8_t *d = path_ring + off;
    uint32_t hd[2] = {id, (uint32_t)(pre + n)};
    memcpy(d, hd, 8);
    if (pre) {
        memcpy(d + 8, R.cwd, pre - 1);
        d[8 + pre - 1] = '/';
    }
    memcpy(d + 8 + pre, path, n);
#if FLOOR_LEVEL >= 4
    const char *slash = memrchr(path, '/', n);
    dir_hash_of = hash_bytes(pre ? R.cwd_hash : 0x9e3779b97f4a7c15ull, path, slash ? (size_t)(slash - path) : 0);
#endif
    atomic_store_explicit(&R.head, h + need, memory_order_release);
    return id;
}
static inline void opened(int fd, const char *path)
{
    if ((unsigned)fd < FDS) {
        fds[fd].id = path_copy(path);
        fds[fd].calls = 1;
        fds[fd].bytes = 0;
#if FLOOR_LEVEL >= 4
        /* where the file lives: its folder's device, asked of fstat once */
        unsigned slot = (unsigned)(dir_hash_of & (DIRS - 1));
        uint64_t dev = dirs[slot].hash == dir_hash_of ? dirs[slot].dev : 0;
        if (!dev) {
            struct stat st;
            if (real_fstat(fd, &st) == 0) {
                dev = st.st_dev | 1ull << 63;
                dirs[slot].hash = dir_hash_of;
                dirs[slot].dev = dev;
            }
        }
        fds[fd].local = (uint32_t)(dev >> 8) != 0x9999; /* a stand-in for the filesystem's type */
#endif
    }
}
#else
static inline void opened(int fd, const char *path)
{
    (void)path;
    count(fd, 0);
}
#endif

#if FLOOR_LEVEL >= 3
static inline void closed(int fd)
{
    if ((unsigned)fd >= FDS || !fds[fd].id || !room(&R.rec_head, &R.rec_limit, &R.rec_tail, 32))
        return;
    uint64_t h = atomic_load_explicit(&R.rec_head, memory_order_relaxed);
    uint64_t *r = (uint64_t *)(rec_ring + (h & (RING - 1)));
    r[0] = (uint64_t)fds[fd].id << 32 | (uint32_t)fd;
    r[1] = fds[fd].calls + 1;
    r[2] = fds[fd].bytes;
    r[3] = fds[fd].local;
    fds[fd].id = 0;
    atomic_store_explicit(&R.rec_head, h + 32, memory_order_release);
}
#else
#define closed(fd) count(fd, 0)
#endif

/* ---- the hooks ---------------------------------------------------------------------------- */
#if FLOOR_RAW
static inline long raw4(long nr, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    if ((unsigned long)r > -4096ul) {
        errno = (int)-r;
        return -1;
    }
    return r;
}
#define real_open(p, f, m) (int)raw4(SYS_openat, AT_FDCWD, (long)(p), (f), (m))
#define real_openat(d, p, f, m) (int)raw4(SYS_openat, (d), (long)(p), (f), (m))
#define real_read(fd, b, n) (ssize_t) raw4(SYS_read, (fd), (long)(b), (long)(n), 0)
#define real_lseek(fd, o, w) (off_t) raw4(SYS_lseek, (fd), (o), (w), 0)
#define real_fstat(fd, st) (int)raw4(SYS_newfstatat, (fd), (long)"", (long)(st), AT_EMPTY_PATH)
#define real_close(fd) (int)raw4(SYS_close, (fd), 0, 0, 0)
#endif

static inline mode_t mode_of(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    TIMED(-1, int, fd, real_open(path, flags, mode))
    if (fd >= 0)
        opened(fd, path);
    return fd;
}
EXPORT int open64(const char *path, int flags, ...) __attribute__((alias("open")));

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    TIMED(-1, int, fd, real_openat(dirfd, path, flags, mode))
    if (fd >= 0)
        opened(fd, path);
    return fd;
}
EXPORT int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    TIMED(fd, ssize_t, r, real_read(fd, buf, n))
    if (r >= 0)
        count(fd, (uint64_t)r);
    return r;
}

EXPORT off_t lseek(int fd, off_t off, int whence)
{
    TIMED(fd, off_t, r, real_lseek(fd, off, whence))
    count(fd, 0);
    return r;
}
EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
    TIMED(fd, off_t, r, real_lseek(fd, (off_t)off, whence))
    count(fd, 0);
    return r;
}

EXPORT int fstat(int fd, struct stat *st)
{
    TIMED(fd, int, r, real_fstat(fd, st))
    count(fd, 0);
    return r;
}
EXPORT int fstat64(int fd, struct stat64 *st)
{
    TIMED(fd, int, r, real_fstat(fd, (struct stat *)st)) /* the same layout on 64-bit Linux */
    count(fd, 0);
    return r;
}

EXPORT int close(int fd)
{
    closed(fd);
    TIMED(fd, int, r, real_close(fd))
    return r;
}
