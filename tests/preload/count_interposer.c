/* Preloaded after libwslshim.so: counts the read(), lseek() and fstat() calls
 * that reach it, that is the calls the shim passes on to glibc's (dlsym(RTLD_NEXT)
 * from the shim finds this one first), and prints the counts at exit on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static long reached, seeks, stats;

ssize_t read(int fd, void *buf, size_t n)
{
    ssize_t (*next)(int, void *, size_t) = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    __atomic_add_fetch(&reached, 1, __ATOMIC_RELAXED);
    return next(fd, buf, n);
}

off_t lseek(int fd, off_t off, int whence)
{
    off_t (*next)(int, off_t, int) = (off_t(*)(int, off_t, int))dlsym(RTLD_NEXT, "lseek");
    __atomic_add_fetch(&seeks, 1, __ATOMIC_RELAXED);
    return next(fd, off, whence);
}

off64_t lseek64(int fd, off64_t off, int whence)
{
    off64_t (*next)(int, off64_t, int) = (off64_t(*)(int, off64_t, int))dlsym(RTLD_NEXT, "lseek64");
    __atomic_add_fetch(&seeks, 1, __ATOMIC_RELAXED);
    return next(fd, off, whence);
}

int fstat(int fd, struct stat *st)
{
    int (*next)(int, struct stat *) = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
    __atomic_add_fetch(&stats, 1, __ATOMIC_RELAXED);
    return next(fd, st);
}

int fstat64(int fd, struct stat64 *st)
{
    int (*next)(int, struct stat64 *) = (int (*)(int, struct stat64 *))dlsym(RTLD_NEXT, "fstat64");
    __atomic_add_fetch(&stats, 1, __ATOMIC_RELAXED);
    return next(fd, st);
}

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "count_interposer: %ld read() calls reached glibc through it\n",
            __atomic_load_n(&reached, __ATOMIC_RELAXED));
    fprintf(stderr, "count_interposer: %ld lseek() and %ld fstat() calls\n", __atomic_load_n(&seeks, __ATOMIC_RELAXED),
            __atomic_load_n(&stats, __ATOMIC_RELAXED));
}
