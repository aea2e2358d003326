/*
 * Paths: a file's name made absolute (the thread's cached working directory,
 * a directory fd's path) and copied into the thread's path ring under a new
 * id, the hash of its folder, which keys the directory -> device cache, and
 * whether a path lies under an emulated prefix (WSLSHIM_EMULATE fs:PATH=9p).
 * The working directory's changes (chdir, fchdir) are hooked here.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "io_hooks.h"

_Atomic uint64_t cwd_generation = 1; /* bumped by chdir/fchdir (io_hooks.h) */

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
__attribute__((noinline, cold)) int emu_named(struct wsl_thread *t, int dirfd, const char *path)
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
    if (path[0] != '/') {
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
    uint32_t id = given_id ? given_id : wsl_path_id_new(t);
    uint64_t head = wsl_paths_reserve(t, need);
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

/* path_record_fast's way for everything else (io_hooks.h) */
__attribute__((noinline)) uint32_t path_record_slow(struct wsl_thread *t, int dirfd, const char *path,
                                                    uint64_t *dir_hash)
{
    return path_record_as(t, 0, dirfd, path, dir_hash);
}

/* path_record_fast out of line, for the hooks other than the opens' fast twins (io_hooks.h). */
__attribute__((noinline)) uint32_t path_record(struct wsl_thread *t, int dirfd, const char *path,
                                               uint64_t *dir_hash)
{
    return path_record_fast(t, dirfd, path, dir_hash);
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

/* The device of each folder an open or a lookup found a regular file in, by
 * the hash of the folder's path (dir_device, dir_device_set: io_hooks.h):
 * later opens there need no fstat. */
struct wsl_dir_device dir_cache[DIR_CACHE_SIZE];

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

