/*
 * rules_client MODE: driver-API loops (against the fake driver, linked with
 * -lcuda) that each show one host-side bottleneck, for rules_check.py:
 *   sync      300 steps: 8 launches, cuStreamSynchronize, 100 us of host
 *             work before the next step                               -> sync_heavy
 *   item      the same with a 4-byte cuMemcpyDtoH into a stack variable
 *             before the synchronize (loss.item())                    -> sync_heavy
 *   pageable  200 cuMemcpyHtoDAsync of 256 KiB from malloc'd memory and 200
 *             from cuMemHostAlloc'd memory, 10 launches first          -> pageable_transfers
 *   churn     300 x (cuMemAlloc 1 MiB, a launch, cuMemFree)            -> alloc_churn
 *   quiet     200 launches, then one cuCtxSynchronize                  -> none
 * The fake driver's costs come from FAKE_CUDA_*_NS (set by the check).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#define OK(call)                                                                    \
    do {                                                                            \
        CUresult rc_ = (call);                                                      \
        if (rc_ != CUDA_SUCCESS) {                                                  \
            fprintf(stderr, "rules_client: %s failed: %d\n", #call, (int)rc_);      \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static void host_work_ns(long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static CUfunction fn;

static void launch(void)
{
    OK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rules_client sync|item|pageable|churn|quiet\n");
        return 2;
    }
    const char *mode = argv[1];
    OK(cuInit(0));
    CUmodule mod;
    static const char image[] = "fake module";
    OK(cuModuleLoadData(&mod, image));
    OK(cuModuleGetFunction(&fn, mod, "step_kernel"));
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 1 << 20));
    if (!strcmp(mode, "item") || !strcmp(mode, "sync")) {
        float loss = 0, sum = 0;
        for (int step = 0; step < 300; step++) {
            for (int k = 0; k < 8; k++)
                launch();
            if (!strcmp(mode, "item"))
                OK(cuMemcpyDtoH(&loss, d, sizeof loss));    /* loss.item() */
            OK(cuStreamSynchronize(NULL));
            sum += loss;
            host_work_ns(100000);                       /* the next step's Python */
        }
        printf("sum %f\n", (double)sum);
    } else if (!strcmp(mode, "pageable")) {
        size_t n = 256 << 10;
        char *pageable = malloc(n);
        void *pinned;
        OK(cuMemHostAlloc(&pinned, n, 0));
        memset(pageable, 1, n);
        memset(pinned, 2, n);
        for (int k = 0; k < 10; k++)
            launch();
        for (int i = 0; i < 200; i++) {
            OK(cuMemcpyHtoDAsync(d, pageable, n, NULL));
            OK(cuMemcpyHtoDAsync(d + n, (char *)pinned + 4096, n - 4096, NULL));
        }
        OK(cuCtxSynchronize());
        OK(cuMemFreeHost(pinned));
        free(pageable);
    } else if (!strcmp(mode, "churn")) {
        for (int i = 0; i < 300; i++) {
            CUdeviceptr p;
            OK(cuMemAlloc(&p, 1 << 20));
            launch();
            OK(cuMemFree(p));
        }
    } else if (!strcmp(mode, "quiet")) {
        for (int i = 0; i < 200; i++)
            launch();
        OK(cuCtxSynchronize());
    } else {
        fprintf(stderr, "rules_client: unknown mode %s\n", mode);
        return 2;
    }
    OK(cuMemFree(d));
    return 0;
}
