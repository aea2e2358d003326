/*
 * Descriptors: the fd -> path id table, seeks (lseek, lseek64), closes (close,
 * fclose, close_range, closefrom), and the shim's own descriptors, which the
 * program's closes leave alone.
 */
#define _GNU_SOURCE
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdlib.h>

#include "fold.h"

/* Per fd: its path id and flags (io_hooks.h, info_of_fd). */
_Atomic uint64_t fd_info[FD_TABLE_SIZE];

/* ---- seeks ------------------------------------------------------------------------------- */
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

/* lseek and lseek64: the full hook, the rest of an untimed one made by the
 * exported hook (k: the kernel's answer), and the exported one with its common
 * case inline. */
#define SEEK_FUNCTIONS(name, type)                                                         \
    static __attribute__((noinline)) type name##_full(int fd, type off, int whence)        \
    {                                                                                      \
        SEEK_HOOK(WSL_IO_ID_##name, REAL(name)(fd, off, whence))                           \
    }                                                                                      \
    /* (fd: file's low half, WSL_FOLD_FILE: one register fewer kept in the fast path) */ \
    static __attribute__((noinline)) type name##_rest(struct wsl_thread *t, uint64_t file, long k, type off, \
                                                      int whence)                          \
    {                                                                                      \
        type r = k < 0 ? (type)wsl_syscall_failed(k) : (type)k;                            \
        seek_untimed_rest(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, (int)(uint32_t)file, (uint32_t)(file >> 32), off, \
                          whence, r);                                                      \
        return r;                                                                          \
    }                                                                                      \
    /* a tell, lseek(fd, 0, SEEK_CUR) (Python's open() makes two): the same, with two   \
     * values fewer to keep */                                                            \
    static inline __attribute__((always_inline)) type name##_tell(int fd)                  \
    {                                                                                      \
        FD_FOLD_FAST(type, WSL_IO_ID_##name, fd, seek_direct, FD_SEEK_DIRECT, 1, SYS_lseek, 0, SEEK_CUR, 0, (uint64_t)r << 1, \
                     fold_meta_tell(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, file_, 0, SEEK_CUR, r), \
                     name##_rest(t, file_, k_, 0, SEEK_CUR), name##_full(fd, 0, SEEK_CUR)) \
    }                                                                                      \
    /* any other seek */                                                                  \
    static __attribute__((noinline)) type name##_seek(int fd, type off, int whence)        \
    {                                                                                      \
        FD_FOLD_FAST(type, WSL_IO_ID_##name, fd, seek_direct, FD_SEEK_DIRECT, SEEK_FOLDS(off, whence), SYS_lseek, off, whence, 0, \
                     (uint64_t)r << 1 | (whence == SEEK_SET),                              \
                     /* off is 0 where whence is SEEK_CUR (SEEK_FOLDS) */                  \
                     fold_meta_tell(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, file_, 0, whence, r), \
                     name##_rest(t, file_, k_, off, whence),                           \
                     name##_full(fd, off, whence))                                         \
    }                                                                                      \
    /* a tell inline, any other seek a tail call: neither pays for the other's registers */ \
    WSL_EXPORT type name(int fd, type off, int whence)                                     \
    {                                                                                      \
        if (whence != SEEK_CUR || off != 0)                                                \
            return name##_seek(fd, off, whence);                                           \
        return name##_tell(fd);                                                            \
    }
SEEK_FUNCTIONS(lseek, off_t)
SEEK_FUNCTIONS(lseek64, off64_t)

/* ---- the shim's own descriptors ------------------------------------------------------------
 * A program may close every descriptor it did not open (daemons, subprocess
 * children, test harnesses): close(), close_range() and closefrom() leave the
 * shim's alone and answer as if they were not open (EBADF for close(), which
 * is what the program would get without the shim). */
_Atomic int protected_fds[2] = {-1, -1}; /* io_hooks.h: fd_protected */

void wsl_fd_protect(int slot, int fd) { atomic_store(&protected_fds[slot], fd); }

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

/* ---- duplicates ---------------------------------------------------------------------------
 * A descriptor made by dup, dup2, dup3 or fcntl's F_DUPFD and F_DUPFD_CLOEXEC
 * is the same open file: it takes the fd table's entry of the one it copies,
 * so that reads through it name that file (GNU dd opens its input and moves
 * it to 0; Python's os.dup is fcntl(F_DUPFD_CLOEXEC)). Where dup2 or dup3 put
 * it over a descriptor the table knew, that entry goes, as a close's would
 * (the kernel closed that file). The calls are not events of their own, and
 * errno and the results are the real calls'. The writer's descriptors, while
 * it has a table of its own, are not the program's (wsl_tls.own_fds). dup2 or
 * dup3 onto one of the shim's own descriptors still takes it (reliability.md). */
static void fd_copied(int from, int to)
{
    /* A vfork()ed child (CPython's subprocess puts a file on the child's stdout
     * so) shares the parent's memory: the table is the parent's, whose
     * descriptors did not change. */
    if (to >= 0 && WSL_LIKELY(!wsl_tls.own_fds) && (unsigned)to < FD_TABLE_SIZE && !wsl_exec_in_vfork_child())
        atomic_store_explicit(&fd_info[to], info_of_fd(from), memory_order_relaxed);
}

WSL_EXPORT int dup(int oldfd)
{
    int r = REAL(dup)(oldfd);
    fd_copied(oldfd, r);
    return r;
}

WSL_EXPORT int dup2(int oldfd, int newfd)
{
    int r = REAL(dup2)(oldfd, newfd);
    if (r >= 0 && oldfd != newfd) /* (dup2 of a descriptor onto itself changes nothing) */
        fd_copied(oldfd, r);
    return r;
}

WSL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    int r = REAL(dup3)(oldfd, newfd, flags);
    fd_copied(oldfd, r);
    return r;
}

/* fcntl's third argument, where its command takes one, is an int or a pointer:
 * passed on as a word, as glibc's own fcntl reads it (one it does not take is
 * a register's leftover, passed on and never read by the kernel). */
#define FCNTL_HOOK(real)                                                                   \
    va_list ap;                                                                            \
    va_start(ap, cmd);                                                                     \
    void *arg = va_arg(ap, void *);                                                        \
    va_end(ap);                                                                            \
    int r = (real)(fd, cmd, arg);                                                          \
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)                                          \
        fd_copied(fd, r);                                                                  \
    return r;

WSL_EXPORT int fcntl(int fd, int cmd, ...) { FCNTL_HOOK(REAL(fcntl)) }

/* glibc 2.28 on: fcntl for programs built with 64-bit file offsets (CPython among them) */
WSL_EXPORT int fcntl64(int fd, int cmd, ...)
{
    FCNTL_HOOK(REAL_SLOT(fcntl64) || wsl_real_resolve("fcntl64", (void **)&wsl_io_real.fcntl64)
                   ? REAL_SLOT(fcntl64) : REAL(fcntl))
}

/* ---- closes ------------------------------------------------------------------------------ */
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
    fold_next(t, -1, 0);
    return 0;
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
 * when it succeeded, else the failed close is an event of its own after it.
 * The file's path id is the fold's (close_st found it so, and the fold does not
 * change under the depth set around the system call): one register fewer kept
 * there. */
static __attribute__((noinline)) int io_close_folded_kernel(struct wsl_thread *t, int fd, long r)
{
    uint32_t path = (uint32_t)(FOLD_LD(t->fold_file) >> 32);
    if (WSL_LIKELY(r == 0)) {
        fold_end_closed(t);
        wsl_tls_depth = 0;
        return 0;
    }
    fold_next(t, -1, 0);
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
    if (WSL_UNLIKELY(!(info & FD_LOCAL) || !path || FOLD_LD(t->fold_file) != WSL_FOLD_FILE(fd, path) ||
                     fd_protected(fd) || !io_countdown_untimed(t)))
        return close_st_full(fd);
    fd_set_path(fd, 0); /* before the number can be reused (CLOSE_HOOK) */
    wsl_tls_depth = 1;
    long r = st_syscall4_kernel(SYS_close, fd, 0, 0, 0);
    if (WSL_LIKELY(r == 0) && WSL_LIKELY(fold_end_closed_fast(t))) {
        io_depth_clear_reloaded();
        return 0;
    }
    return io_close_folded_kernel(t, fd, r);
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

