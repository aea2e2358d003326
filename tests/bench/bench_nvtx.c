/*
 * bench_nvtx: what the shim adds to one NVTX push/pop pair.
 *
 *   bench_nvtx [PAIRS]
 *
 * Pushes and pops a range PAIRS times from a client built with the nvtx3
 * headers. The name is copied into a fresh buffer before each push, as Python
 * hands torch.cuda.nvtx a new string object each call, so the shim cannot
 * recognise it by pointer. Run it with and without LD_PRELOAD=libwslshim.so:
 * the difference of the ns/pair figures is the shim's cost (two records and
 * one name lookup). Not a test: speed is measured, not asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 5000000;
    static const char *const names[] = {"step", "forward", "backward", "optimizer"};
    char buf[64];
    long sum = 0;
    nvtxRangePushA("warm-up"); /* the first call loads the tool */
    nvtxRangePop();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < pairs; i++) {
        strcpy(buf, names[i & 3]);
        sum += nvtxRangePushA(buf);
        sum += nvtxRangePop();
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)pairs;
    printf("{\"pairs\": %ld, \"ns_per_pair\": %.2f, \"returns\": %ld}\n", pairs, ns, sum);
    return 0;
}
