/* Preloaded after libwslshim.so: counts the read() calls that reach it, that is
 * the calls the shim passes on to glibc's read() (dlsym(RTLD_NEXT) from the
 * shim finds this one first), and prints the count at exit on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static long reached;

ssize_t read(int fd, void *buf, size_t n)
{
    ssize_t (*next)(int, void *, size_t) = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    __atomic_add_fetch(&reached, 1, __ATOMIC_RELAXED);
    return next(fd, buf, n);
}

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "count_interposer: %ld read() calls reached glibc through it\n",
            __atomic_load_n(&reached, __ATOMIC_RELAXED));
}
