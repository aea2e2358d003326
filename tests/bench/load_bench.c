/*
 * load_bench: sustained event load on the shim. THREADS threads together make
 * RATE driver calls per second (cuCtxSynchronize against the fake driver, which
 * does nothing) for SECONDS, paced in batches; prints one JSON line with the
 * calls actually made, so that a script can check the trace's account:
 * events written + events dropped == calls made, exactly.
 *   load_bench THREADS RATE SECONDS
 * Not a test: run by tests/bench/run_load.py.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

static double rate_per_thread, seconds;
static _Atomic unsigned long long total_calls;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    (void)arg;
    unsigned long long calls = 0;
    double t0 = now_s();
    for (;;) {
        double t = now_s() - t0;
        if (t >= seconds)
            break;
        double due = t * rate_per_thread;
        if ((double)calls >= due) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
            continue;
        }
        for (int i = 0; i < 1000; i++)
            cuCtxSynchronize();
        calls += 1000;
    }
    atomic_fetch_add(&total_calls, calls);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int threads = atoi(argv[1]);
    double rate = atof(argv[2]);
    seconds = atof(argv[3]);
    if (threads < 1 || threads > 256 || rate <= 0 || seconds <= 0)
        return 2;
    rate_per_thread = rate / threads;
    if (cuInit(0) != CUDA_SUCCESS)
        return 3;
    pthread_t th[256];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double el = now_s() - t0;
    unsigned long long n = atomic_load(&total_calls) + 1; /* + cuInit */
    printf("{\"threads\": %d, \"calls\": %llu, \"seconds\": %.3f, \"calls_per_s\": %.0f}\n", threads, n, el, n / el);
    return 0;
}
