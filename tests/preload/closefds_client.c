/* Closes every descriptor above stderr in the way its argument says, between
 * two runs of N driver calls; prints what the program itself can see (how many
 * closes succeeded, the next descriptor it gets), so that the output can be
 * compared with and without the shim.
 *   closefds_client loop|close_range|closefrom [N] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    if (cuInit(0) != CUDA_SUCCESS)
        return 3;
    for (int i = 0; i < n; i++)
        cuCtxSynchronize();
    for (int i = 0; i < 3; i++)
        open("/dev/null", O_RDONLY);
    if (!strcmp(argv[1], "loop")) {
        int ok = 0;
        for (int fd = 3; fd < 4096; fd++)
            ok += close(fd) == 0;
        printf("close() succeeded %d times\n", ok);
    } else if (!strcmp(argv[1], "close_range")) {
        printf("close_range: %d\n", close_range(3, ~0u, 0));
    } else if (!strcmp(argv[1], "closefrom")) {
        closefrom(3);
        printf("closefrom done\n");
    } else {
        return 2;
    }
    int fd = open("/dev/null", O_RDONLY);
    printf("next descriptor: %d\n", fd);
    for (int i = 0; i < n; i++)
        cuCtxSynchronize();
    usleep(100000);
    for (int i = 0; i < n; i++)
        cuCtxSynchronize();
    return 0;
}
