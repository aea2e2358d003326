/*
 * bench_io: what the shim's file-I/O hooks add (run by run_io_bench.sh).
 *
 *   bench_io create DIR N      write N files of 4 KiB and one of 4 MiB (loop.bin)
 *   bench_io files DIR N       read the N files end to end: open, read(4096),
 *                              read to EOF (0), close; prints {"files", "ns", "ns_per_file"}
 *   bench_io loop DIR CALLS    read() 4 KiB at a time from loop.bin, CALLS times
 *                              (back to the start with lseek every 1024 reads);
 *                              prints {"calls", "ns_per_call"}
 *   bench_io files-ab DIR N    the files read in 64 rounds, each of two batches of N/128
 *                              files in turn: one through libc (which the shim hooks),
 *                              one by raw system calls (which it does not see), each
 *                              file once; prints the median over pairs of rounds of
 *                              libc/raw time, "ratio" (see pair_median). The shim's cost
 *                              is ratio with it / ratio without it - 1: both batches run
 *                              on the same machine a few ms apart, so a shared host's
 *                              drifting speed cancels out
 *   bench_io files-ab-mt DIR N the same, with an idle second thread
 *   bench_io loop-ab DIR CALLS read() 4 KiB at a time from loop.bin (as loop), in 64 rounds
 *                              of two batches of CALLS/64 reads, through libc and by raw
 *                              system calls in turn; prints the libc/raw "ratio" (pair_median)
 *   bench_io loop-ab-mt DIR CALLS the same, with an idle second thread
 *   bench_io files-mt DIR N    the same as files, and
 *   bench_io loop-mt DIR CALLS the same as loop, in a program with a second (idle) thread,
 *                              as Python, PyTorch and any thread pool have: glibc's
 *                              read() then does its cancellation bookkeeping, which
 *                              a single-threaded program skips (the shim's writer
 *                              thread makes every traced program multi-threaded)
 *
 * Not a test: speed is measured, not asserted. Run it with and without
 * LD_PRELOAD=libwslshim.so; under callgrind the difference of instruction
 * counts between CALLS and 0 is the cost per read().
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../bench/median.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int idle_done;

static void *idle_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&idle_lock);
    while (!idle_done)
        pthread_cond_wait(&idle_cond, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    return NULL;
}

static void write_file(const char *path, size_t size)
{
    static char buf[1 << 16];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    for (size_t off = 0; off < size; off += sizeof buf) {
        size_t n = size - off < sizeof buf ? size - off : sizeof buf;
        memset(buf, (int)(off >> 12), n);
        if (write(fd, buf, n) != (ssize_t)n) {
            perror(path);
            exit(1);
        }
    }
    close(fd);
}

/* Files [from, to) read end to end, through libc (raw 0) or by raw system
 * calls (raw 1); returns the bytes read, or -1. */
static long read_files(const char *dir, long from, long to, int raw)
{
    char path[PATH_MAX];
    static char buf[4096];
    long bytes = 0;
    for (long i = from; i < to; i++) {
        snprintf(path, sizeof path, "%s/f%06ld", dir, i);
        int fd = raw ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY) : open(path, O_RDONLY);
        if (fd < 0)
            return -1;
        ssize_t r;
        while ((r = raw ? syscall(SYS_read, fd, buf, sizeof buf) : read(fd, buf, sizeof buf)) > 0)
            bytes += r;
        if (raw)
            syscall(SYS_close, fd);
        else
            close(fd);
    }
    return bytes;
}


/* The A/B's figure: the median over pairs of rounds of the geometric mean of
 * their two libc/raw ratios. The batch that runs second in a round is faster
 * (on this VM, both made alike: a median ratio of 1.00-1.10 where A went first,
 * 0.90-0.98 where it went second), and which one goes first alternates; a median over single
 * rounds fell anywhere in the gap between the two orders' ratios. A pair has
 * each order once, so that effect cancels in it. ratio[] is reordered. */
static double pair_median(double *ratio, int rounds)
{
    for (int k = 0; k + 1 < rounds; k += 2)
        ratio[k / 2] = sqrt(ratio[k] * ratio[k + 1]);
    return median(ratio, rounds / 2);
}

static int files_ab(const char *dir, long n)
{
    enum { ROUNDS = 64 };
    double raw_ns[ROUNDS], libc_ns[ROUNDS], ratio[ROUNDS];
    long per = n / (2 * ROUNDS);
    if (per < 1) {
        fprintf(stderr, "bench_io: files-ab needs N of at least %d\n", 2 * ROUNDS);
        return 2;
    }
    for (int k = 0; k < ROUNDS; k++) {
        double t[2];
        for (int j = 0; j < 2; j++) {
            /* which goes first alternates; each batch has files of its own (a
             * file read just before by the other would find its kernel
             * structures in the core's caches) */
            int raw = (k + j) & 1;
            long from = (2 * k + j) * per, to = from + per;
            double t0 = now_ns();
            if (read_files(dir, from, to, raw) != per * 4096) {
                fprintf(stderr, "bench_io: short read in %s/f%06ld..\n", dir, from);
                return 1;
            }
            t[raw] = now_ns() - t0;
        }
        libc_ns[k] = t[0] / per;
        raw_ns[k] = t[1] / per;
        ratio[k] = t[0] / t[1];
    }
    double r = pair_median(ratio, ROUNDS);
    printf("{\"files\": %ld, \"libc_ns_per_file\": %.1f, \"raw_ns_per_file\": %.1f, \"ratio\": %.4f}\n",
           2 * per * ROUNDS, median(libc_ns, ROUNDS), median(raw_ns, ROUNDS), r);
    return 0;
}

/* CALLS reads of 4 KiB from fd, back to the start every 1024, through libc
 * (raw 0) or by raw system calls (raw 1); returns 0, or -1 on a short read. */
static int read_loop(int fd, long calls, int raw)
{
    static char buf[4096];
    for (long i = 0; i < calls; i++) {
        if ((i & 1023) == 0 && (raw ? syscall(SYS_lseek, fd, 0, SEEK_SET) : lseek(fd, 0, SEEK_SET)) != 0)
            return -1;
        if ((raw ? syscall(SYS_read, fd, buf, sizeof buf) : read(fd, buf, sizeof buf)) != (ssize_t)sizeof buf)
            return -1;
    }
    return 0;
}

static int loop_ab(const char *dir, long n)
{
    enum { ROUNDS = 64 };
    double ratio[ROUNDS], libc_ns[ROUNDS], raw_ns[ROUNDS];
    long per = n / ROUNDS;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/loop.bin", dir);
    if (per < 1) {
        fprintf(stderr, "bench_io: loop-ab needs CALLS of at least %d\n", ROUNDS);
        return 2;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    for (int k = 0; k < ROUNDS; k++) {
        double t[2];
        for (int j = 0; j < 2; j++) {
            int raw = (k + j) & 1; /* which goes first alternates */
            double t0 = now_ns();
            if (read_loop(fd, per, raw) != 0) {
                fprintf(stderr, "bench_io: short read in %s\n", path);
                return 1;
            }
            t[raw] = now_ns() - t0;
        }
        libc_ns[k] = t[0] / per;
        raw_ns[k] = t[1] / per;
        ratio[k] = t[0] / t[1];
    }
    close(fd);
    printf("{\"calls\": %ld, \"libc_ns_per_call\": %.1f, \"raw_ns_per_call\": %.1f, \"ratio\": %.4f}\n",
           per * ROUNDS, median(libc_ns, ROUNDS), median(raw_ns, ROUNDS), pair_median(ratio, ROUNDS));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_io create|files|files-mt|files-ab|files-ab-mt|loop|loop-mt|loop-ab|loop-ab-mt DIR N\n");
        return 2;
    }
    const char *dir = argv[2];
    long n = atol(argv[3]);
    char path[PATH_MAX];
    static char buf[4096];

    if (!strcmp(argv[1], "create")) {
        mkdir(dir, 0755);
        for (long i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/f%06ld", dir, i);
            write_file(path, 4096);
        }
        snprintf(path, sizeof path, "%s/loop.bin", dir);
        write_file(path, 4u << 20);
        return 0;
    }
    pthread_t idle;
    int mt = !strcmp(argv[1], "files-mt") || !strcmp(argv[1], "loop-mt") || !strcmp(argv[1], "files-ab-mt") ||
             !strcmp(argv[1], "loop-ab-mt");
    if (mt && pthread_create(&idle, NULL, idle_thread, NULL) != 0) {
        fprintf(stderr, "bench_io: no thread\n");
        return 1;
    }
    if (!strcmp(argv[1], "files-ab") || !strcmp(argv[1], "files-ab-mt"))
        return files_ab(dir, n); /* an idle thread (files-ab-mt) ends with the process */
    if (!strcmp(argv[1], "loop-ab") || !strcmp(argv[1], "loop-ab-mt"))
        return loop_ab(dir, n);
    if (!strcmp(argv[1], "files") || !strcmp(argv[1], "files-mt")) {
        double t0 = now_ns();
        long bytes = 0;
        for (long i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/f%06ld", dir, i);
            int fd = open(path, O_RDONLY);
            if (fd < 0) {
                perror(path);
                return 1;
            }
            ssize_t r;
            while ((r = read(fd, buf, sizeof buf)) > 0)
                bytes += r;
            close(fd);
        }
        double ns = now_ns() - t0;
        if (bytes != n * 4096) {
            fprintf(stderr, "bench_io: read %ld bytes, expected %ld\n", bytes, n * 4096);
            return 1;
        }
        printf("{\"files\": %ld, \"ns\": %.0f, \"ns_per_file\": %.1f}\n", n, ns, ns / (n ? n : 1));
        return 0; /* an idle thread (files-mt) ends with the process */
    }
    if (!strcmp(argv[1], "loop") || !strcmp(argv[1], "loop-mt")) {
        snprintf(path, sizeof path, "%s/loop.bin", dir);
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            perror(path);
            return 1;
        }
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            if ((i & 1023) == 0 && i)
                lseek(fd, 0, SEEK_SET);
            if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
                fprintf(stderr, "bench_io: short read at %ld\n", i);
                return 1;
            }
        }
        double ns = now_ns() - t0;
        close(fd);
        printf("{\"calls\": %ld, \"ns_per_call\": %.2f}\n", n, ns / (n ? n : 1));
        return 0; /* an idle thread (loop-mt) ends with the process */
    }
    fprintf(stderr, "usage: bench_io create|files|files-mt|files-ab|files-ab-mt|loop|loop-mt|loop-ab|loop-ab-mt DIR N\n");
    return 2;
}
