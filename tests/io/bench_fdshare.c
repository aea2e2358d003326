/*
 * bench_fdshare: what a second thread costs a program's read() in the kernel
 * (run by hand on the GPU host; docs/overhead.md). Nothing of the shim's: raw
 * read() system calls of 4 KiB from one page-cached file, back to its start
 * every 1024 reads, in a process that has
 *
 *   bench_fdshare FILE 0 N    one thread
 *   bench_fdshare FILE 1 N    a second, idle thread sharing the descriptor table
 *                             (as the shim's writer thread does)
 *   bench_fdshare FILE 2 N    a second, idle thread with a table of its own
 *                             (unshare(CLONE_FILES)), a copy of the program's:
 *                             the file is then open in both tables
 *   bench_fdshare FILE 3 N    the same, the copy's descriptors closed (as the
 *                             shim's writer thread does: shim/writer/writer.c)
 *
 * prints {"threads": ..., "ns_per_read": ...}. FILE: at least 4 MiB (bench_io
 * create writes loop.bin).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t ready;

static void *idle_thread(void *arg)
{
    int how = (int)(long)arg;
    if (how >= 2 && unshare(CLONE_FILES) != 0)
        perror("bench_fdshare: unshare");
    if (how == 3 && syscall(SYS_close_range, 0u, ~0u, 0u) != 0)
        perror("bench_fdshare: close_range");
    pthread_barrier_wait(&ready);
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    int mode = argc == 4 ? atoi(argv[2]) : -1;
    long n = argc == 4 ? atol(argv[3]) : 0;
    if (mode < 0 || mode > 3 || n <= 0) {
        fprintf(stderr, "usage: bench_fdshare FILE 0|1|2|3 N\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }
    if (mode) {
        pthread_t th;
        pthread_barrier_init(&ready, NULL, 2);
        if (pthread_create(&th, NULL, idle_thread, (void *)(long)mode) != 0) {
            fprintf(stderr, "bench_fdshare: no thread\n");
            return 1;
        }
        pthread_barrier_wait(&ready);
    }
    static char buf[4096];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        if ((i & 1023) == 0)
            syscall(SYS_lseek, fd, 0L, SEEK_SET);
        if (syscall(SYS_read, fd, buf, sizeof buf) != (long)sizeof buf) {
            fprintf(stderr, "bench_fdshare: short read at %ld\n", i);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("{\"threads\": \"%s\", \"ns_per_read\": %.1f}\n",
           mode == 0   ? "one"
           : mode == 1 ? "two, table shared"
           : mode == 2 ? "two, table unshared, file in both"
                       : "two, table unshared, file in one",
           ns / (double)n);
    return 0; /* the idle thread ends with the process */
}
