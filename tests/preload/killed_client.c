/* 1000 driver calls, 1.5 s for the writer to write them out, 1000 more, then
 * SIGKILL: the trace must still read, with at least the first 1000. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cuda.h>

int main(void)
{
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < 1000; i++)
        cuCtxSynchronize();
    usleep(1500000);
    for (int i = 0; i < 1000; i++)
        cuCtxSynchronize();
    raise(SIGKILL);
    return 0;
}
