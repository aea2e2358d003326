/*
 * thread_stress_client: threads at the scale of real programs, against the
 * fake driver (linked with -lcuda), under the shim:
 *   1. 64 threads released at once by a barrier, 1000 cuLaunchKernel each;
 *   2. 10,000 short-lived threads (16 at a time), one cuCtxSynchronize each,
 *      then 10,000 more twice: the resident memory must not grow like a leak
 *      over both (buffers of exited threads are reused);
 *   3. 20 forks while 8 threads keep launching: each child makes 100
 *      cuStreamSynchronize and exits; a child that hangs (a lock held across
 *      fork) is killed by an alarm and the parent reports it.
 * Prints one line: STRESS {"launches": N, "syncs": N, "children": N,
 * "child_failures": N, "rss_kb_after_10k": N, "rss_kb_after_20k": N,
 * "rss_kb_after_30k": N}
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

static CUfunction fn;
static pthread_barrier_t start_line;
static _Atomic long launches, syncs;
static _Atomic int stop_launchers;
static int flood; /* STRESS_FLOOD=1: the launching threads do not pause (fills rings; drops counted) */

static void launch_once(void)
{
    if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
        abort();
    atomic_fetch_add(&launches, 1);
}

static void *burst(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < 1000; i++)
        launch_once();
    return NULL;
}

static void *one_sync(void *arg)
{
    (void)arg;
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        abort();
    atomic_fetch_add(&syncs, 1);
    return NULL;
}

static void *keep_launching(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_launchers)) {
        launch_once();
        if (!flood)
            usleep(20); /* busy, not flooding: the point is threads inside hooks when fork comes */
    }
    return NULL;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static void short_lived(int n)
{
    for (int i = 0; i < n; i += 16) {
        pthread_t t[16];
        for (int k = 0; k < 16; k++)
            pthread_create(&t[k], NULL, one_sync, NULL);
        for (int k = 0; k < 16; k++)
            pthread_join(t[k], NULL);
    }
}

int main(void)
{
    flood = getenv("STRESS_FLOOD") && !strcmp(getenv("STRESS_FLOOD"), "1");
    CUmodule mod;
    if (cuInit(0) != CUDA_SUCCESS || cuModuleLoadData(&mod, "fake cubin") != CUDA_SUCCESS ||
        cuModuleGetFunction(&fn, mod, "stress_kernel") != CUDA_SUCCESS)
        return 1;
    /* 1 */
    pthread_barrier_init(&start_line, NULL, 64);
    pthread_t t[64];
    for (int i = 0; i < 64; i++)
        pthread_create(&t[i], NULL, burst, NULL);
    for (int i = 0; i < 64; i++)
        pthread_join(t[i], NULL);
    /* 2 */
    short_lived(10000);
    long rss10 = rss_kb();
    short_lived(10000);
    long rss20 = rss_kb();
    short_lived(10000);
    long rss30 = rss_kb();
    /* 3 */
    pthread_t busy[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&busy[i], NULL, keep_launching, NULL);
    int children = 0, failures = 0;
    for (int i = 0; i < 20; i++) {
        usleep(2000);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20); /* a deadlocked child dies of SIGALRM */
            for (int k = 0; k < 100; k++)
                if (cuStreamSynchronize(NULL) != CUDA_SUCCESS)
                    _exit(3);
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        children++;
        failures += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    atomic_store(&stop_launchers, 1);
    for (int i = 0; i < 8; i++)
        pthread_join(busy[i], NULL);
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        return 1;
    atomic_fetch_add(&syncs, 1);
    printf("STRESS {\"launches\": %ld, \"syncs\": %ld, \"children\": %d, \"child_failures\": %d, "
           "\"rss_kb_after_10k\": %ld, \"rss_kb_after_20k\": %ld, \"rss_kb_after_30k\": %ld}\n",
           atomic_load(&launches), atomic_load(&syncs), children, failures, rss10, rss20, rss30);
    return 0;
}
