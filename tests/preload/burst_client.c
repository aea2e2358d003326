/*
 * burst_client: N launches as fast as it can, from the program's start, against
 * the fake driver (linked); prints "BURST <n>". preload.ring_full_drops_once
 * and preload.startup_burst_kept check the trace's account of them.
 *   burst_client N
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    CUmodule mod = NULL;
    CUfunction f = NULL;
    if (cuModuleLoadData(&mod, "fake cubin") != CUDA_SUCCESS || cuModuleGetFunction(&f, mod, "burst") != CUDA_SUCCESS)
        return 1;
    for (long i = 0; i < n; i++)
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            return 1;
    printf("BURST %ld\n", n);
    return 0;
}
