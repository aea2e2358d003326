/*
 * io_writer: writes a known amount through every hooked write route, so that
 * io_writes_test.py can check the report's counts exactly.
 *
 *   io_writer DIR N K
 *
 * In DIR: file a: N write()s of K bytes; file b: N pwrite()s of K bytes at
 * increasing offsets; file c: N fwrite()s of K bytes (one item of K); file d:
 * N/2 writev()s of two K-byte pieces; one fsync and one fdatasync on a; then
 * mkdir DIR/sub, rename a -> sub/a2, opendir(DIR), unlink sub/a2. Writes N
 * lines to stdout with write(1) (not data files), and prints the EXPECT line
 * with what it did to stderr. Exit 0 when every call succeeded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: io_writer DIR N K\n");
        return 2;
    }
    const char *dir = argv[1];
    long n = atol(argv[2]), k = atol(argv[3]);
    char *buf = malloc((size_t)k);
    if (!buf)
        die("malloc");
    memset(buf, 'x', (size_t)k);
    char path[4096], path2[4096];

    snprintf(path, sizeof path, "%s/a", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open a");
    for (long i = 0; i < n; i++)
        if (write(fd, buf, (size_t)k) != k)
            die("write");
    if (fsync(fd) != 0 || fdatasync(fd) != 0)
        die("fsync");
    close(fd);

    snprintf(path, sizeof path, "%s/b", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open b");
    for (long i = 0; i < n; i++)
        if (pwrite(fd, buf, (size_t)k, (off_t)(i * k)) != k)
            die("pwrite");
    close(fd);

    snprintf(path, sizeof path, "%s/c", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        die("fopen c");
    for (long i = 0; i < n; i++)
        if (fwrite(buf, (size_t)k, 1, f) != 1)
            die("fwrite");
    fclose(f);

    snprintf(path, sizeof path, "%s/d", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open d");
    struct iovec iov[2] = {{buf, (size_t)k}, {buf, (size_t)k}};
    for (long i = 0; i < n / 2; i++)
        if (writev(fd, iov, 2) != 2 * k)
            die("writev");
    close(fd);

    snprintf(path, sizeof path, "%s/sub", dir);
    if (mkdir(path, 0755) != 0)
        die("mkdir");
    snprintf(path, sizeof path, "%s/a", dir);
    snprintf(path2, sizeof path2, "%s/sub/a2", dir);
    if (rename(path, path2) != 0)
        die("rename");
    DIR *d = opendir(dir);
    if (!d)
        die("opendir");
    closedir(d);
    if (unlink(path2) != 0)
        die("unlink");

    for (long i = 0; i < n; i++)
        if (write(1, "line\n", 5) != 5)
            die("write stdout");
    long writes = n + n + n + n / 2;
    long bytes = n * k * 3 + (n / 2) * 2 * k;
    fprintf(stderr, "EXPECT {\"writes\": %ld, \"bytes_written\": %ld, \"syncs\": 2, \"dir_ops\": 4, "
                    "\"stdout_writes\": %ld, \"stdout_bytes\": %ld}\n",
            writes, bytes, n, n * 5);
    free(buf);
    return 0;
}
