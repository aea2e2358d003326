/*
 * The real libc functions behind the file hooks: their table, resolved at
 * load (wsl_io_init) or at a hook's first call (REAL), and whether glibc's own
 * come next after the shim, which decides where the hooks may make glibc's
 * system call themselves (the single-threaded twins; seek_direct, fstat_direct).
 */
#define _GNU_SOURCE
#include <gnu/libc-version.h>
#include <stdio.h>

#include "io_hooks.h"

struct wsl_io_real wsl_io_real; /* io_hooks.h: REAL */

/* Whether the functions the single-threaded twins replace by system calls
 * would otherwise reach glibc's own: where another library after the shim
 * (an interposer preloaded after it: a file-I/O profiler, a path rewriter)
 * defines one of them, that library must see every call, so glibc's path is
 * kept. *who: that library's file. */
int wsl_io_libc_is_next(const char **who)
{
    static const char *const names[] = {"read", "pread", "pread64", "open", "open64", "openat", "openat64", "close"};
    void **slots[] = {(void **)&wsl_io_real.read, (void **)&wsl_io_real.pread, (void **)&wsl_io_real.pread64, (void **)&wsl_io_real.open,
                      (void **)&wsl_io_real.open64, (void **)&wsl_io_real.openat, (void **)&wsl_io_real.openat64, (void **)&wsl_io_real.close};
    _Static_assert(sizeof names / sizeof names[0] == sizeof slots / sizeof slots[0], "one slot per name");
    *who = "?";
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!libc)
        return 0;
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof names / sizeof names[0]; i++) {
        void *next = __atomic_load_n(slots[i], __ATOMIC_RELAXED);
        if (!next)
            next = wsl_real_resolve(names[i], slots[i]);
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

int seek_direct, fstat_direct; /* io_hooks.h */
uint64_t fd_local_bits = FD_LOCAL; /* io_hooks.h: and FD_SEEK_DIRECT, FD_FSTAT_DIRECT once known */

static void fd_calls_direct_init(void)
{
#if (defined(__x86_64__) || defined(__aarch64__)) && !WSL_TSAN
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!libc)
        return;
    seek_direct = REAL_SLOT(lseek) && REAL_SLOT(lseek) == wsl_real_dlsym(libc, "lseek") &&
                  REAL_SLOT(lseek64) == wsl_real_dlsym(libc, "lseek64");
    unsigned major = 0, minor = 0; /* an older glibc makes fstat another system call: left its own */
    fstat_direct = WSL_HAVE_NEWFSTATAT && sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) == 2 &&
                   (major > 2 || (major == 2 && minor >= 33)) && REAL_SLOT(fstat) &&
                   REAL_SLOT(fstat) == wsl_real_dlsym(libc, "fstat") && REAL_SLOT(fstat64) == wsl_real_dlsym(libc, "fstat64");
    dlclose(libc);
    fd_local_bits = FD_LOCAL | (seek_direct ? FD_SEEK_DIRECT : 0) | (fstat_direct ? FD_FSTAT_DIRECT : 0);
#endif
}

void wsl_io_init(void)
{
#define R(name) wsl_real_resolve(#name, (void **)&wsl_io_real.name);
    R(open) R(open64) R(__open_2) R(__open64_2) R(openat) R(openat64) R(__openat_2) R(__openat64_2)
    R(creat) R(creat64) R(fopen) R(fopen64) R(read) R(__read_chk) R(pread) R(pread64) R(__pread_chk)
    R(__pread64_chk) R(readv) R(preadv) R(preadv64) R(preadv2) R(preadv64v2) R(fread) R(fread_unlocked)
    R(__fread_chk) R(fgets) R(__fgets_chk) R(getdelim) R(__getdelim) R(getline) R(mmap) R(mmap64)
    R(stat) R(stat64) R(lstat) R(lstat64) R(fstat) R(fstat64) R(fstatat) R(fstatat64) R(__xstat)
    R(__xstat64) R(__lxstat) R(__lxstat64) R(__fxstat) R(__fxstat64) R(__fxstatat) R(__fxstatat64)
    R(statx) R(access) R(faccessat) R(lseek) R(lseek64) R(close) R(fclose) R(chdir) R(fchdir)
    R(poll) R(__poll_chk) R(ppoll) R(__ppoll_chk) R(sem_wait) R(sem_timedwait) R(sem_clockwait)
    R(dup) R(dup2) R(dup3) R(fcntl) R(fcntl64) R(sendfile) R(sendfile64) R(copy_file_range)
#undef R
    fd_calls_direct_init();
}
