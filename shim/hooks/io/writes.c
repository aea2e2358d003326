/*
 * Writes, syncs and folder calls (trace format 1.8; docs/io.md): write, pwrite,
 * writev, fwrite, fsync, fdatasync, rename, unlink, mkdir and their *at forms,
 * opendir.
 *
 * Always timed, never folded: an event each. A write on an fd the shim did not
 * see opened (stdout, stderr, a pipe) has path id 0: the report counts it under
 * other descriptors, not data files. The shim's own descriptors (the trace)
 * and its own threads' calls (depth) pass straight through.
 */
#define _GNU_SOURCE

#include "io_hooks.h"

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
