/*
 * writer_fds_client: the shim's writer thread has a descriptor table of its
 * own while the program has one thread and no driver, and shares the
 * program's from the program's second thread or its first driver call on
 * (shim/writer/writer.c, writer_table_own). Run under the shim:
 *
 *   writer_fds_client thread FILE   opens FILE after recording began, then
 *                                   makes a thread
 *   writer_fds_client driver FILE   the same, then dlopen of libcuda.so.1 (the
 *                                   fake driver, on LD_LIBRARY_PATH) and cuInit
 *   writer_fds_client pipe FILE     makes a pipe, then opens and reads FILE (the
 *                                   writer starts), closes the pipe's write end
 *                                   and waits (3 s at most) for end of file
 *
 * pipe prints "writer holds: none" when the writer's table has none of the
 * program's descriptors (stdin, stdout, stderr, FILE's, the pipe's ends), else
 * their numbers, then "pipe eof: yes" when the reader saw end of file.
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
#include <poll.h>
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

/* The pipe's reader sees end of file once its write end is closed: no copy
 * of it lives on in the writer's table. */
static int pipe_mode(const char *file)
{
    int p[2];
    char buf[512];
    if (pipe(p) != 0)
        return 1;
    int fd = open(file, O_RDONLY); /* recording begins: the writer starts */
    if (fd < 0 || read(fd, buf, sizeof buf) < 0)
        return 1;
    usleep(50000); /* the writer has set itself up */
    pid_t w = writer_task();
    if (!w) {
        printf("no writer\n");
    } else {
        int mine[] = {0, 1, 2, fd, p[0], p[1]}, held = 0;
        printf("writer holds:");
        for (unsigned i = 0; i < sizeof mine / sizeof mine[0]; i++) {
            char q[64];
            snprintf(q, sizeof q, "/proc/self/task/%d/fd/%d", (int)w, mine[i]);
            if (access(q, F_OK) == 0) {
                printf(" %d", mine[i]);
                held = 1;
            }
        }
        printf("%s\n", held ? "" : " none");
    }
    close(p[1]);
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int eof = poll(&pf, 1, 3000) == 1 && read(p[0], buf, 1) == 0;
    printf("pipe eof: %s\n", eof ? "yes" : "no");
    close(p[0]);
    close(fd);
    printf("reads 1\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "pipe"))
        return pipe_mode(argv[2]);
    if (argc != 3 || (strcmp(argv[1], "thread") && strcmp(argv[1], "driver"))) {
        fprintf(stderr, "usage: writer_fds_client thread|driver|pipe FILE\n");
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
