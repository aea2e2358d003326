/*
 * Opens: open, openat and their 64-bit, fortified and creat forms, fopen. An
 * open names its file (paths.c), finds its device (the folder's, cached, or
 * one fstat) and whether that is a local filesystem's, and keeps its path id
 * and locality in the fd table; an untimed open of a local file begins the
 * file's fold with itself as the first slot.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/sysmacros.h>

#include "fold.h"

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

/* Whether an open (flags) on device dev folds as its file's first slot, with
 * the slot's value in *v: no path emulated, timing sampled, dev local and the
 * flags fitting (open_fold_value && dev_is_local); from the thread's memo of
 * the device (dev_lookup_local: io_memo_open, 0 where any of that fails for
 * every open: settings read once) when it holds and the flags are the common
 * ones (the access mode, O_CLOEXEC): the opens' fast twins. */
static inline __attribute__((always_inline)) int open_folds_local(struct wsl_thread *t, uint64_t dev, int flags,
                                                                  uint64_t *v)
{
    uint32_t gen = atomic_load_explicit(&local_devs_gen, memory_order_acquire);
    if (WSL_LIKELY(t->io_memo_dev == dev && t->io_memo_gen == gen) && WSL_LIKELY(!(flags & ~(O_ACCMODE | O_CLOEXEC)))) {
        uint64_t m = t->io_memo_open;
        /* m's mark, bit 63, left in: the value goes only into the slot (OPEN_FAST),
         * WSL_FOLD_SLOT's shift by 24 takes it out */
        *v = m | (unsigned)(flags & O_ACCMODE) | (flags & O_CLOEXEC ? WSL_FOLD_OPEN_CLOEXEC : 0);
        return m != 0;
    }
    return !wsl_emu_fs_on && wsl_cfg.io_timing > 1 && open_fold_value(dev, flags, v) && dev_is_local(t, dev);
}

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

/* The open twins (open, open64, openat, openat64: single-threaded and usual).
 * Their common case, an untimed open of a local file in a folder whose device
 * is known and whose flags fit its fold slot, goes straight from the path's
 * record to the system call and the fold's first slot (OPEN_FAST); anything
 * else continues in name##_rest as OPEN_HOOK does after the path's record
 * (OPEN_REST): the same path id, the same events. */
#define OPEN_REST(api, dirfd, path, flags, call)                                           \
    uint64_t dirdev_ = dir_device(dir_hash_);                                              \
    int emu_ = WSL_UNLIKELY(wsl_emu_fs_on) && emu_named(t, dirfd, path);                   \
    int local_ = !emu_ && dirdev_ && wsl_cfg.io_timing > 1 && dev_is_local(t, dirdev_);    \
    IO_TIMING(local_)                                                                      \
    IO_CALL_TIMED_EMU(int, fd, call, EMU_NAMED(emu_))                                      \
    record_open(t, (api) + off_, t0, t1, fd, id_, dir_hash_, flags, dirdev_, local_, emu_); \
    return fd;

#define OPEN_FAST(api, dirfd, path, flags, call, rest)                                     \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t dir_hash_, v_;                                                                \
    uint32_t id_ = path_record_fast(t, dirfd, path, &dir_hash_);                          \
    uint64_t dirdev_ = dir_device(dir_hash_);                                              \
    /* the untimed open of a local file that begins its fold (record_open's common case) */ \
    if (WSL_UNLIKELY(!id_ || !dirdev_ || !open_folds_local(t, dirdev_, flags, &v_) ||       \
                     !io_countdown_untimed(t)))                                            \
        return rest;                                                                       \
    int fd = call;                                                                         \
    if (WSL_UNLIKELY(fd < 0)) {                                                            \
        record_open_event(t, (api) + WSL_IO_SAMPLED, 0, 0, fd, id_, dir_hash_, flags, dirdev_, 1, 0); \
        return fd;                                                                         \
    }                                                                                      \
    if ((unsigned)fd < FD_TABLE_SIZE) /* fd_set_info, io_timing > 1 known */               \
        atomic_store_explicit(&fd_info[fd], id_ | fd_local_bits, memory_order_relaxed);    \
    fold_begin(t, fd, id_); /* another file's fold ends */                                 \
    FOLD_ST(t->fold_slot[0], WSL_FOLD_SLOT((api) + WSL_IO_SAMPLED, 1, v_)); /* v_ < 2^40 but bit 63 */ \
    t->fold_last = &t->fold_slot[0];                                                       \
    atomic_store_explicit(&t->fold_used, 1, memory_order_release); /* after the slot */   \
    wsl_tls_depth = 0;                                                                     \
    return fd;

/* name (open, open64: relative to the working directory) with `call` */
#define OPEN_TWIN(name, api, call)                                                         \
    static __attribute__((noinline)) int name##_rest(struct wsl_thread *t, const char *path, int flags, \
                                                     mode_t mode, uint32_t id_, uint64_t dir_hash_) \
    {                                                                                      \
        OPEN_REST(api, AT_FDCWD, path, flags, call)                                        \
    }                                                                                      \
    static __attribute__((noinline)) int name(const char *path, int flags, mode_t mode)    \
    {                                                                                      \
        OPEN_FAST(api, AT_FDCWD, path, flags, call, name##_rest(t, path, flags, mode, id_, dir_hash_)) \
    }
/* name (openat, openat64: relative to dirfd) with `call` */
#define OPENAT_TWIN(name, api, call)                                                       \
    static __attribute__((noinline)) int name##_rest(struct wsl_thread *t, int dirfd, const char *path, \
                                                     int flags, mode_t mode, uint32_t id_, uint64_t dir_hash_) \
    {                                                                                      \
        OPEN_REST(api, dirfd, path, flags, call)                                           \
    }                                                                                      \
    static __attribute__((noinline)) int name(int dirfd, const char *path, int flags, mode_t mode) \
    {                                                                                      \
        OPEN_FAST(api, dirfd, path, flags, call, name##_rest(t, dirfd, path, flags, mode, id_, dir_hash_)) \
    }

OPEN_TWIN(open_st, WSL_IO_ID_open, st_openat(AT_FDCWD, path, flags, mode))
OPEN_TWIN(open_mt, WSL_IO_ID_open, REAL(open)(path, flags, mode))
WSL_EXPORT int open(const char *path, int flags, ...)
{
    MODE_ARG(flags)
    if (PROGRAM_ST())
        return open_st(path, flags, mode);
    return open_mt(path, flags, mode);
}
OPEN_TWIN(open64_st, WSL_IO_ID_open64, st_openat(AT_FDCWD, path, flags, mode))
OPEN_TWIN(open64_mt, WSL_IO_ID_open64, REAL(open64)(path, flags, mode))
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
OPENAT_TWIN(openat_st, WSL_IO_ID_openat, st_openat(dirfd, path, flags, mode))
OPENAT_TWIN(openat_mt, WSL_IO_ID_openat, REAL(openat)(dirfd, path, flags, mode))
WSL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags)
    if (PROGRAM_ST())
        return openat_st(dirfd, path, flags, mode);
    return openat_mt(dirfd, path, flags, mode);
}
OPENAT_TWIN(openat64_st, WSL_IO_ID_openat64, st_openat(dirfd, path, flags, mode))
OPENAT_TWIN(openat64_mt, WSL_IO_ID_openat64, REAL(openat64)(dirfd, path, flags, mode))
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

