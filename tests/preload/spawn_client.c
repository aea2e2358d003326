/*
 * Processes made every other way, and a driver loaded and unloaded at odd
 * times, each making a known number of driver calls (the fake driver, found
 * by dlopen("libcuda.so.1") through LD_LIBRARY_PATH):
 *
 *   parent:   2 threads at once, each 100 times: dlopen the driver, cuInit,
 *             3 cuCtxSynchronize, dlclose (600 in all; the driver may be
 *             unloaded between any two of them, and then a page is mapped at
 *             its old base, so that the next load lands elsewhere);
 *   spawned:  posix_spawn of itself with an environment of LD_LIBRARY_PATH
 *             alone (the shim must come back into it): 11 syncs, reads FILE;
 *   vforked:  vfork + execve of itself, the same environment: 13 syncs;
 *   daemon:   fork, setsid, fork again, the middle process exits; the
 *             grandchild changes to /, closes every descriptor, puts
 *             /dev/null on 0-2, reads FILE, makes 17 syncs and writes MARK;
 *             the parent waits for MARK (10 s at most).
 *
 *   spawn_client FILE MARK          (the parent; prints one line per stage)
 *   spawn_client child N FILE       (spawned/vforked: N syncs, FILE read)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*sync_fn)(void);

/* Loads the driver, makes n syncs, unloads it: 0 on success. */
static int driver_round(int n)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -1;
    init_fn init = (init_fn)dlsym(lib, "cuInit");
    sync_fn sync = (sync_fn)dlsym(lib, "cuCtxSynchronize");
    int bad = !init || !sync || init(0) != CUDA_SUCCESS;
    for (int i = 0; !bad && i < n; i++)
        bad = sync() != CUDA_SUCCESS;
    /* the driver's base from its link map (dladdr of a symbol would name the shim's wrapper) */
    struct link_map *lm = NULL;
    void *base = dlinfo(lib, RTLD_DI_LINKMAP, &lm) == 0 && lm ? (void *)lm->l_addr : NULL;
    dlclose(lib);
    /* Where the driver was unloaded, a page of nothing at its old base: the next load lands
     * elsewhere, as it may in any program, and a pointer kept into the old one would fault. */
    if (base)
        mmap(base, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    return bad ? -1 : 0;
}

static long read_file(const char *path)
{
    char buf[4096];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    long total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += n;
    close(fd);
    return total;
}

static void *rounds(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++)
        if (driver_round(3) != 0)
            return (void *)1;
    return NULL;
}

static int wait_ok(pid_t pid)
{
    int status = 0;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "child")) {
        int n = atoi(argv[2]);
        return driver_round(n) == 0 && read_file(argv[3]) > 0 ? 0 : 1;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: spawn_client FILE MARK\n");
        return 2;
    }
    const char *file = argv[1], *mark = argv[2];
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return 1;
    self[sl] = 0;

    pthread_t th[2];
    void *res[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, rounds, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], &res[i]);
    printf("driver rounds: %s\n", res[0] || res[1] ? "failed" : "ok");
    fflush(stdout);

    /* the child's environment: the driver's folder alone (no LD_PRELOAD, no WSLSHIM_*) */
    char ldpath[8192];
    const char *lp = getenv("LD_LIBRARY_PATH");
    snprintf(ldpath, sizeof ldpath, "LD_LIBRARY_PATH=%s", lp ? lp : "");
    char *env[] = {ldpath, NULL};

    char *spawn_args[] = {self, "child", "11", (char *)file, NULL};
    pid_t pid;
    int err = posix_spawn(&pid, self, NULL, NULL, spawn_args, env);
    printf("posix_spawn: %s\n", err == 0 && wait_ok(pid) ? "ok" : "failed");
    fflush(stdout);

    char *vfork_args[] = {self, "child", "13", (char *)file, NULL};
    pid = vfork();
    if (pid == 0) {
        execve(self, vfork_args, env);
        _exit(127);
    }
    printf("vfork+execve: %s\n", pid > 0 && wait_ok(pid) ? "ok" : "failed");
    fflush(stdout);

    unlink(mark);
    pid = fork();
    if (pid == 0) {
        setsid();
        if (fork() != 0)
            _exit(0); /* the middle process; the grandchild is the daemon */
        if (chdir("/") != 0)
            _exit(1);
        syscall(SYS_close_range, 0u, ~0u, 0u);
        int fd = open("/dev/null", O_RDWR); /* 0 */
        if (fd != 0 || dup(0) != 1 || dup(0) != 2)
            _exit(1);
        int ok = driver_round(17) == 0 && read_file(file) > 0;
        int m = open(mark, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (m >= 0) {
            if (write(m, ok ? "ok\n" : "failed\n", ok ? 3 : 7) < 0)
                ok = 0;
            close(m);
        }
        exit(ok ? 0 : 1);
    }
    int daemon_ok = pid > 0 && wait_ok(pid);
    char got[16] = "";
    for (int i = 0; i < 1000; i++) { /* 10 s */
        int m = open(mark, O_RDONLY);
        if (m >= 0) {
            ssize_t n = read(m, got, sizeof got - 1);
            close(m);
            if (n > 0) {
                got[n] = 0;
                break;
            }
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    printf("daemon: %s\n", daemon_ok && !strcmp(got, "ok\n") ? "ok" : "failed");
    return 0;
}
