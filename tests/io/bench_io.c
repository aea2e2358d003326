/*
 * bench_io: what the shim's file-I/O hooks add (run by run_io_bench.sh).
 *
 *   bench_io create DIR N      write N files of 4 KiB and one of 4 MiB (loop.bin)
 *   bench_io files DIR N       read the N files end to end: open, read(4096),
 *                              read to EOF (0), close; prints {"files", "ns", "ns_per_file"}
 *   bench_io loop DIR CALLS    read() 4 KiB at a time from loop.bin, CALLS times
 *                              (back to the start with lseek every 1024 reads);
 *                              prints {"calls", "ns_per_call"}
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_io create|files|files-mt|loop|loop-mt DIR N\n");
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
    int mt = !strcmp(argv[1], "files-mt") || !strcmp(argv[1], "loop-mt");
    if (mt && pthread_create(&idle, NULL, idle_thread, NULL) != 0) {
        fprintf(stderr, "bench_io: no thread\n");
        return 1;
    }
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
    fprintf(stderr, "usage: bench_io create|files|files-mt|loop|loop-mt DIR N\n");
    return 2;
}
