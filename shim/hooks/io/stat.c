/*
 * The stat family (stat, lstat, fstat, fstatat, the __xstat forms, statx) and
 * access, faccessat: a lookup by path records the path as an open does; an
 * untimed fstat of a local file folds (its size).
 */
#define _GNU_SOURCE
#include <sys/sysmacros.h>

#include "fold.h"

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
    /* (fd: file's low half, WSL_FOLD_FILE: one register fewer kept in the fast path) */ \
    static __attribute__((noinline)) int name##_rest(struct wsl_thread *t, uint64_t file, long k, type *st) \
    {                                                                                      \
        int r = k < 0 ? (int)wsl_syscall_failed(k) : (int)k;                              \
        fstat_untimed_rest(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, (int)(uint32_t)file, (uint32_t)(file >> 32), r, \
                           r == 0 ? WSL_DEV(major(st->st_dev), minor(st->st_dev)) : 0,     \
                           r == 0 ? (uint64_t)st->st_size : 0);                            \
        return r;                                                                          \
    }                                                                                      \
    WSL_EXPORT int name(int fd, type *st)                                                  \
    {                                                                                      \
        FD_FOLD_FAST(int, WSL_IO_ID_##name, fd, fstat_direct, FD_FSTAT_DIRECT, st != NULL, SYS_newfstatat, "", st, AT_EMPTY_PATH, \
                     r == 0 ? st->st_size : 0,                                             \
                     fold_meta_stat(t, WSL_IO_ID_##name + WSL_IO_SAMPLED, file_, (uint64_t)st->st_size), \
                     name##_rest(t, file_, k_, st), name##_full(fd, st))               \
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

