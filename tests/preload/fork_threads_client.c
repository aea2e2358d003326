/*
 * fork_threads_client: the writer thread does not live across fork().
 *
 *   fork_threads_client FILE N
 *
 * Reads FILE N times (recorded: the writer thread runs), forks (the child
 * reads it N times and leaves by _exit), counts its own threads right after
 * fork() returns, as CPython 3.12 does to warn about forking a multi-threaded
 * process, then reads FILE N more times after 20 ms (the writer is back by
 * then). Prints "threads after fork: T" and "reads: parent P, child C".
 * Built as CPython 3.12 (AS_CPYTHON_312: it exports Py_GetVersion), T must be
 * what it is without the shim (1, or 2 in a TSan build, whose runtime has a
 * thread of its own); built plain, one more: the writer came back before
 * fork() returned. Exit 0 when every read succeeded.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Field 20 of /proc/self/stat, by raw system calls (as unseen as can be). */
static int thread_count(void)
{
    char buf[1024];
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC), n;
    if (fd < 0)
        return -1;
    n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the name may hold spaces */
    for (int field = 2; p && field < 20; field++)
        p = strchr(p + 1, ' ');
    return p ? atoi(p + 1) : -1;
}

static int read_file(const char *path, int times)
{
    char buf[4096];
    int n = 0;
    for (int i = 0; i < times; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            return -1;
        while (read(fd, buf, sizeof buf) > 0)
            ;
        close(fd);
        n++;
    }
    return n;
}

#ifdef AS_CPYTHON_312
/* What the shim looks for to tell CPython 3.12 or later (exported: -rdynamic),
 * which counts its threads right after fork(): the writer stays away then. */
__attribute__((visibility("default"))) const char *Py_GetVersion(void) { return "3.12.3 (fork_threads_client)"; }
#endif

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fork_threads_client FILE N\n");
        return 2;
    }
    int times = atoi(argv[2]);
    int before = read_file(argv[1], times);
    pid_t pid = fork();
    if (pid == 0)
        _exit(read_file(argv[1], times) == times ? 0 : 1);
    int threads = thread_count();
    int status = 0;
    waitpid(pid, &status, 0);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    int after = read_file(argv[1], times);
    printf("threads after fork: %d\nreads: parent %d, child %d\n", threads, before + after,
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? times : -1);
    return threads > 0 && before == times && after == times ? 0 : 1;
}
