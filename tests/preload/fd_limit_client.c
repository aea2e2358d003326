/*
 * fd_limit_client: opens /dev/null until the descriptor limit stops it, and
 * prints "opened N, then EMFILE" (or the errno that stopped it). Under the
 * shim, where the hard limit lies above the soft one, the program gets as many
 * descriptors as without it: the trace's lies past the soft limit
 * (shim/writer/trace_file.c, fd_dup_high). Run by fd_limit_check.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    long n = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        n++;
    int err = errno;
    printf("opened %ld, then %s\n", n, err == EMFILE ? "EMFILE" : strerror(err));
    return 0;
}
