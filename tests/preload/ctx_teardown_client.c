/*
 * ctx_teardown_client: the shim's own CUDA calls against a program tearing
 * contexts down, against the fake driver (linked with -lcuda), under the shim
 * with every launch timed on the GPU (WSLSHIM_GPU_TIMING=1):
 *   6 threads launch 3000 kernels each (every launch records a pair of the
 *   shim's events and the writer thread queries them), while a seventh calls
 *   cuCtxDestroy and cuDevicePrimaryCtxReset 1000 times each (each makes the
 *   shim let go of its events first, waiting for the writer's queries to end).
 *   An alarm of 60 s kills a deadlocked run.
 * Prints one line: TEARDOWN {"launches": N, "destroys": N, "resets": N}
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>

static CUfunction fn;
static CUcontext ctx;
static pthread_barrier_t start_line;
static _Atomic long launches, destroys, resets;

static void *launcher(void *arg)
{
    (void)arg;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        abort();
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < 3000; i++) {
        if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            abort();
        atomic_fetch_add(&launches, 1);
    }
    return NULL;
}

static void *teardown(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < 1000; i++) {
        if (cuCtxDestroy(ctx) != CUDA_SUCCESS || cuDevicePrimaryCtxReset(0) != CUDA_SUCCESS)
            abort();
        atomic_fetch_add(&destroys, 1);
        atomic_fetch_add(&resets, 1);
        if (i % 16 == 0)
            usleep(200); /* let the writer poll in between */
    }
    return NULL;
}

int main(void)
{
    alarm(60);
    CUmodule mod;
    if (cuInit(0) != CUDA_SUCCESS || cuCtxGetCurrent(&ctx) != CUDA_SUCCESS ||
        cuModuleLoadData(&mod, "fake cubin") != CUDA_SUCCESS ||
        cuModuleGetFunction(&fn, mod, "teardown_kernel") != CUDA_SUCCESS)
        return 1;
    pthread_barrier_init(&start_line, NULL, 7);
    pthread_t t[7];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, launcher, NULL);
    pthread_create(&t[6], NULL, teardown, NULL);
    for (int i = 0; i < 7; i++)
        pthread_join(t[i], NULL);
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        return 1;
    printf("TEARDOWN {\"launches\": %ld, \"destroys\": %ld, \"resets\": %ld}\n", atomic_load(&launches),
           atomic_load(&destroys), atomic_load(&resets));
    return 0;
}
