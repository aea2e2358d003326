/*
 * writer_fds_client: the shim's writer thread has a descriptor table of its
 * own while the program has one thread and no driver, and shares the
 * program's from the program's second thread or its first driver call on
 * (shim/writer.c, writer_table_own). Run under the shim:
 *
 *   writer_fds_client thread FILE   opens FILE after recording began, then
 *                                   makes a thread
 *   writer_fds_client driver FILE   the same, then dlopen of libcuda.so.1 (the
 *                                   fake driver, on LD_LIBRARY_PATH) and cuInit
 *
 * Prints, for each stage, whether the writer thread (the process's task that
 * is not one of the program's) has FILE's descriptor in its table
 * (/proc/self/task/TID/fd/N), and the number of reads made of FILE, which the
 * trace must hold: "single: writer sees it: no", then "thread: ...: yes" or
 * "driver: ...: yes". Without the shim there is no such task: "no writer".
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static _Atomic pid_t idle_tid;

static void *idle_thread(void *arg)
{
    (void)arg;
    idle_tid = (pid_t)syscall(SYS_gettid);
    for (;;)
        pause();
    return NULL;
}

/* The task that is neither the main thread nor the program's idle thread: the writer. */
static pid_t writer_task(void)
{
    DIR *d = opendir("/proc/self/task");
    pid_t found = 0, self = getpid();
    struct dirent *e;
    while (d && (e = readdir(d))) {
        pid_t t = (pid_t)atoi(e->d_name);
        if (t > 0 && t != self && t != idle_tid)
            found = t;
    }
    if (d)
        closedir(d);
    return found;
}

static void stage(const char *name, int fd)
{
    usleep(50000); /* a writer started just now has set itself up */
    pid_t w = writer_task();
    if (!w) {
        printf("%s: no writer\n", name);
        return;
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/self/task/%d/fd/%d", (int)w, fd);
    printf("%s: writer sees it: %s\n", name, access(p, F_OK) == 0 ? "yes" : "no");
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "thread") && strcmp(argv[1], "driver"))) {
        fprintf(stderr, "usage: writer_fds_client thread|driver FILE\n");
        return 2;
    }
    char buf[512];
    int reads = 0;
    int fd0 = open(argv[2], O_RDONLY); /* recording begins: the writer starts */
    if (fd0 < 0 || read(fd0, buf, sizeof buf) < 0)
        return 1;
    reads++;
    usleep(50000); /* the writer, started by that open, has set itself up */
    int fd = open(argv[2], O_RDONLY); /* a number the writer's table, copied before, lacks */
    if (fd < 0)
        return 1;
    stage("single", fd);
    if (pread(fd, buf, sizeof buf, 0) < 0)
        return 1;
    reads++;
    if (!strcmp(argv[1], "thread")) {
        pthread_t th;
        if (pthread_create(&th, NULL, idle_thread, NULL) != 0)
            return 1;
        while (!idle_tid)
            usleep(1000);
    } else {
        void *h = dlopen("libcuda.so.1", RTLD_NOW);
        CUresult (*init)(unsigned) = h ? (CUresult(*)(unsigned))dlsym(h, "cuInit") : NULL;
        if (!init || init(0) != CUDA_SUCCESS)
            return 1;
    }
    stage(argv[1], fd);
    for (int i = 0; i < 100; i++) {
        if (pread(fd, buf, sizeof buf, 0) < 0)
            return 1;
        reads++;
    }
    close(fd);
    close(fd0);
    printf("reads %d\n", reads);
    fflush(stdout);
    return 0; /* the idle thread ends with the process */
}
