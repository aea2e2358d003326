/*
 * path_burst_client: N opens of distinct paths (each about 200 bytes, in a
 * folder that does not exist: every open fails with ENOENT) as fast as it can;
 * prints "PATHS <n> <failed with ENOENT>". preload.path_ring_full_drops_once
 * checks the trace's account of them while the writer stalls.
 *   path_burst_client N
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000;
    long enoent = 0;
    char path[256];
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path,
                 "/nonexistent-wslshim-path-burst/%0180ld", i);
        int fd = open(path, O_RDONLY);
        if (fd >= 0)
            close(fd);
        else if (errno == ENOENT)
            enoent++;
    }
    printf("PATHS %ld %ld\n", n, enoent);
    return 0;
}
