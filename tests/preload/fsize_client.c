/* Writes its own file of 8 KiB in 1 KiB writes between many driver calls and
 * prints what each write returned, so that its output can be compared with
 * and without the shim while the trace hits a file-size limit or a full disk.
 *   fsize_client OUT CALLS */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int calls = atoi(argv[2]);
    if (cuInit(0) != CUDA_SUCCESS)
        return 3;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 4;
    char block[1024];
    for (int i = 0; i < (int)sizeof block; i++)
        block[i] = (char)('a' + i % 26);
    for (int w = 0; w < 8; w++) {
        for (int i = 0; i < calls / 8; i++)
            cuCtxSynchronize();
        usleep(150000); /* let the writer write (and fail) in between */
        printf("write %d: %zd\n", w, write(fd, block, sizeof block));
    }
    printf("close: %d\n", close(fd));
    return 0;
}
