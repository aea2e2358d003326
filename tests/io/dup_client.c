/*
 * dup_client DIR: reads DIR/a/data (A bytes) and DIR/b/data (B bytes) through
 * descriptors made by dup, dup2, dup3 and fcntl (F_DUPFD, F_DUPFD_CLOEXEC),
 * each after the descriptor it copies is closed or taken over, and prints what
 * each call returned and the errno of those that fail, for dup_check.py:
 *   1. dup of a's: a read whole                 (a +A)
 *   2. F_DUPFD_CLOEXEC of b's, from 100: b whole  (b +B)
 *   3. dup2 of a's over b's open descriptor: a whole through b's number (a +A)
 *   4. dup3 of b's over a fresh descriptor of a's, O_CLOEXEC: b whole    (b +B)
 *   5. F_DUPFD of a's: a whole                    (a +A)
 * and calls that fail or change nothing: dup(-1), dup2(fd, fd), dup3(fd, fd, 0),
 * fcntl F_GETFD, F_SETFL, F_GETLK (a pointer argument), fcntl on a closed fd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char path_a[4096], path_b[4096];

static int open_or_die(const char *p)
{
    int fd = open(p, O_RDONLY);
    if (fd < 0) {
        perror(p);
        _exit(1);
    }
    return fd;
}

/* reads fd to its end from the start; the bytes */
static long read_all(int fd)
{
    char buf[4096];
    long n = 0, r;
    lseek(fd, 0, SEEK_SET);
    while ((r = read(fd, buf, sizeof buf)) > 0)
        n += r;
    return r < 0 ? -1 : n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dup_client DIR\n");
        return 2;
    }
    snprintf(path_a, sizeof path_a, "%s/a/data", argv[1]);
    snprintf(path_b, sizeof path_b, "%s/b/data", argv[1]);

    int fa = open_or_die(path_a), d = dup(fa);
    close(fa);
    printf("dup: %s, a %ld\n", d > 2 ? "ok" : "FAIL", read_all(d));
    close(d);

    int fb = open_or_die(path_b);
    d = fcntl(fb, F_DUPFD_CLOEXEC, 100);
    close(fb);
    printf("F_DUPFD_CLOEXEC: %s, cloexec %d, b %ld\n", d >= 100 ? "ok" : "FAIL", fcntl(d, F_GETFD) & FD_CLOEXEC,
           read_all(d));
    close(d);

    fa = open_or_die(path_a);
    fb = open_or_die(path_b);
    int r = dup2(fa, fb);
    close(fa);
    printf("dup2: %s, a %ld\n", r == fb ? "ok" : "FAIL", read_all(fb));
    close(fb);

    fb = open_or_die(path_b);
    fa = open_or_die(path_a);
    r = dup3(fb, fa, O_CLOEXEC);
    close(fb);
    printf("dup3: %s, cloexec %d, b %ld\n", r == fa ? "ok" : "FAIL", fcntl(fa, F_GETFD) & FD_CLOEXEC, read_all(fa));
    close(fa);

    fa = open_or_die(path_a);
    d = fcntl(fa, F_DUPFD, 0);
    close(fa);
    printf("F_DUPFD: %s, a %ld\n", d > 2 ? "ok" : "FAIL", read_all(d));

    /* what fails or changes nothing, with and without the shim alike */
    errno = 0;
    r = dup(-1);
    printf("dup(-1): %d errno %s\n", r, strerrorname_np(errno));
    r = dup2(d, d);
    printf("dup2(fd, fd): %s\n", r == d ? "fd" : "FAIL");
    errno = 0;
    r = dup3(d, d, 0);
    printf("dup3(fd, fd, 0): %d errno %s\n", r, strerrorname_np(errno));
    errno = 0;
    r = dup2(d, -5);
    printf("dup2(fd, -5): %d errno %s\n", r, strerrorname_np(errno));
    int fl = fcntl(d, F_GETFL);
    r = fcntl(d, F_SETFL, fl | O_NONBLOCK);
    printf("F_SETFL: %d, nonblock %d\n", r, (fcntl(d, F_GETFL) & O_NONBLOCK) != 0);
    struct flock lk = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
    r = fcntl(d, F_GETLK, &lk);
    printf("F_GETLK: %d, type %s\n", r, lk.l_type == F_UNLCK ? "unlocked" : "?");
    close(d);
    errno = 0;
    r = fcntl(d, F_GETFD);
    printf("F_GETFD on a closed fd: %d errno %s\n", r, strerrorname_np(errno));
    return 0;
}
