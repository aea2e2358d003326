/*
 * path_burst_client: N opens of distinct paths (each about 200 bytes, in a
 * folder that does not exist: every open fails with ENOENT) as fast as it can;
 * prints "PATHS <n> <failed with ENOENT>". preload.path_ring_full_drops_once
 * checks the trace's account of them while the writer stalls;
 * preload.path_ring_wait_outlasts_stall with LENGTH 4000 (a few dozen paths fill the ring).
 * preload.path_ring_drops_said_when_killed with HOLD: after the line, it sleeps until killed
 * (SIGKILL: a trace without END).
 *   path_burst_client N [LENGTH [hold]]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000;
    long len = argc > 2 ? atol(argv[2]) : 212; /* the folder's 32 bytes, then the number's digits */
    long enoent = 0;
    char path[4200];
    if (len < 40 || len > 4096)
        return 2;
    for (long i = 0; i < n; i++) {
        /* the digits in names of at most 200 (NAME_MAX 255): "/nonexistent-wslshim-path-burst/000...0i" */
        int at = snprintf(path, sizeof path, "/nonexistent-wslshim-path-burst/%0*ld", (int)(len - 32), i);
        for (int c = 32 + 200; c < at; c += 201)
            path[c] = '/';
        int fd = open(path, O_RDONLY);
        if (fd >= 0)
            close(fd);
        else if (errno == ENOENT)
            enoent++;
    }
    printf("PATHS %ld %ld\n", n, enoent);
    if (argc > 3 && strcmp(argv[3], "hold") == 0) {
        fflush(stdout);
        for (;;)
            pause();
    }
    return 0;
}
