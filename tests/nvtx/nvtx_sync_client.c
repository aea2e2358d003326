/*
 * Waits for the GPU inside NVTX ranges, against the fake driver (linked with
 * -lcuda) and the nvtx3 headers alone: nvtx_sync_check.py derives from the
 * arguments how many waits each range holds and compares them with the
 * report's cuda_host.by_range and sync_heavy's by_range evidence.
 *
 *   nvtx_sync_client STEPS FORWARD_SYNCS METRIC_READS PREFETCH_SYNCS
 *
 * Main thread, STEPS times, in a range "step":
 *   "forward": 4 launches, then FORWARD_SYNCS x (cuStreamSynchronize, 50 us of
 *              host work, a launch)
 *   "metrics": METRIC_READS x (a launch, a 4-byte cuMemcpyDtoH: loss.item(),
 *              20 us of host work)
 *   then one cuCtxSynchronize in "step" itself; 50 us of host work after it.
 * A second thread, meanwhile, in a range "prefetch" of the domain "loader":
 *   PREFETCH_SYNCS x (a launch, cuStreamSynchronize, 50 us of host work).
 * Last, one cuCtxSynchronize in no range, and a launch.
 * The fake driver's costs come from FAKE_CUDA_*_NS (set by the check).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>
#include <nvtx3/nvToolsExt.h>

#define OK(call)                                                                    \
    do {                                                                            \
        CUresult rc_ = (call);                                                      \
        if (rc_ != CUDA_SUCCESS) {                                                  \
            fprintf(stderr, "nvtx_sync_client: %s failed: %d\n", #call, (int)rc_); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static CUfunction fn;
static CUdeviceptr dev;

static void host_work_ns(long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void launch(void)
{
    OK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
}

static void *prefetch(void *arg)
{
    int n = *(int *)arg;
    nvtxDomainHandle_t loader = nvtxDomainCreateA("loader");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "prefetch";
    nvtxDomainRangePushEx(loader, &a);
    for (int i = 0; i < n; i++) {
        launch();
        OK(cuStreamSynchronize(NULL));
        host_work_ns(50000);
    }
    nvtxDomainRangePop(loader);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: nvtx_sync_client STEPS FORWARD_SYNCS METRIC_READS PREFETCH_SYNCS\n");
        return 2;
    }
    int steps = atoi(argv[1]), forward_syncs = atoi(argv[2]), metric_reads = atoi(argv[3]);
    int prefetch_syncs = atoi(argv[4]);
    OK(cuInit(0));
    CUmodule mod;
    static const char image[] = "fake module";
    OK(cuModuleLoadData(&mod, image));
    OK(cuModuleGetFunction(&fn, mod, "step_kernel"));
    OK(cuMemAlloc(&dev, 1 << 20));
    /* NVTX's one-time set-up (nvtxInitOnce, in the nvtx3 headers) is not safe against two threads'
     * first calls at once (ThreadSanitizer reports it): done here, before the second thread. */
    nvtxInitialize(NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, prefetch, &prefetch_syncs) != 0)
        return 1;
    float loss = 0, sum = 0;
    for (int s = 0; s < steps; s++) {
        nvtxRangePushA("step");
        nvtxRangePushA("forward");
        for (int k = 0; k < 4; k++)
            launch();
        for (int k = 0; k < forward_syncs; k++) {
            OK(cuStreamSynchronize(NULL));
            host_work_ns(50000);
            launch();
        }
        nvtxRangePop();
        nvtxRangePushA("metrics");
        for (int k = 0; k < metric_reads; k++) {
            launch();
            OK(cuMemcpyDtoH(&loss, dev, sizeof loss)); /* loss.item() */
            sum += loss;
            host_work_ns(20000);
        }
        nvtxRangePop();
        OK(cuCtxSynchronize());
        nvtxRangePop();
        host_work_ns(50000);
    }
    pthread_join(th, NULL);
    OK(cuCtxSynchronize());
    launch();
    printf("steps %d sum %f\n", steps, (double)sum);
    return 0;
}
