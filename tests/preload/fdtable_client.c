/*
 * fdtable_client: the kernel's descriptor table is grown at load, not when
 * the trace opens.
 *
 *   fdtable_client grown FILE     under the shim: the table already holds
 *                                 1024 descriptors when main starts, and the
 *                                 first recorded call (a read of FILE, made
 *                                 after a second thread exists) neither grows
 *                                 it nor leaves the trace's descriptor low
 *   fdtable_client default FILE   without the shim: under 1024 at main (the
 *                                 kernel starts at 64), so the check above fails
 *
 * Why it matters: growing a table that threads share makes Linux wait for an
 * RCU grace period (5-30 ms measured), inside whatever call of the program
 * first recorded something. Exit 0 when it holds, 1 when not, 77 to skip
 * (a descriptor limit under 1024, where the shim keeps the trace low).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* From /proc/self/status, by raw system calls: a call the shim records would
 * open the trace (and grow the table) before the measurement. */
static long fd_table_size(void)
{
    char buf[4096];
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC), n = 0, r;
    if (fd < 0)
        return -1;
    while (n < (long)sizeof buf - 1 && (r = syscall(SYS_read, fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += r;
    syscall(SYS_close, fd);
    buf[n] = 0;
    const char *p = strstr(buf, "\nFDSize:");
    return p ? strtol(p + 8, NULL, 10) : -1;
}

/* The highest open descriptor that names a file whose name holds ".trace" (-1: none). */
static int trace_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    int best = -1;
    struct dirent *e;
    char link[64], target[4096];
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        if (strstr(target, ".trace") && fd > best)
            best = fd;
    }
    if (d)
        closedir(d);
    return best;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done;

static void *idle(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!done)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "grown") && strcmp(argv[1], "default"))) {
        fprintf(stderr, "usage: fdtable_client grown|default FILE\n");
        return 2;
    }
    long at_main = fd_table_size();
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1024) {
        printf("SKIP: descriptor limit %llu under 1024\n", (unsigned long long)rl.rlim_cur);
        return 77;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, idle, NULL) != 0)
        return 1;
    /* the first recorded call, with the table shared by two threads */
    char buf[4096];
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0 || read(fd, buf, sizeof buf) < 0) {
        perror(argv[2]);
        return 1;
    }
    close(fd);
    long after = fd_table_size();
    int tfd = trace_fd();
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(th, NULL);
    printf("FDSize at main %ld, after the first recorded call %ld; trace descriptor %d\n", at_main, after, tfd);
    int ok = !strcmp(argv[1], "grown") ? at_main >= 1024 && after == at_main && tfd >= 64
                                       : at_main < 1024 && tfd < 0;
    if (!ok)
        printf("FAIL: expected %s\n", !strcmp(argv[1], "grown")
                                          ? "a table of at least 1024 at main, the same after, the trace at 64 or above"
                                          : "a table under 1024 at main, and no trace");
    return ok ? 0 : 1;
}
