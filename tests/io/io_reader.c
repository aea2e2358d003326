/*
 * io_reader: a known data set read by every hooked libc route, with a count
 * of exactly what was done, for the file-I/O preload tests (io_check.py).
 *
 *   io_reader create DIR               write the data set (run without the shim)
 *   io_reader read DIR                 read it by each method; prints EXPECT {json}
 *   io_reader create-n DIR N SIZE      write N files of SIZE bytes (f_00000.bin...)
 *   io_reader read-all DIR BUFSIZE     open/read/close every regular file in DIR;
 *                                      prints EXPECT {json}
 *   io_reader signals DIR N            single-threaded: N read()s of 4 KiB from
 *                                      DIR/a/main.bin (64 KiB, lseek to 0 every 16)
 *                                      while a 20 us interval timer's handler
 *                                      preads 4 KiB of DIR/b/handler.bin; prints
 *                                      EXPECT {main_reads, handler_reads}
 *   io_reader signals-files DIR N      single-threaded: Python's calls per file (open,
 *                                      fstat64, two tells, fstat64, two reads, close)
 *                                      N times on DIR/a/main.bin while the timer's
 *                                      handler makes an fstat, a tell and a pread of
 *                                      DIR/b/handler.bin; prints EXPECT {files,
 *                                      main_bytes, handler_reads}
 *   io_reader fork DIR                 two forked children (one leaving by _exit)
 *                                      and the parent read parts of the data set;
 *                                      prints EXPECT {json} for all three
 *
 * The data set: small_00..small_49.bin (1-8 KiB, deterministic sizes),
 * big_8m.bin (8 MiB), big_33m.bin (33 MiB), text.txt (3000 lines). Every byte
 * is a function of (file seed, offset) and every byte read is checked, so a
 * shim that changes what a call returns fails here, not only in the trace.
 *
 * Creation is a separate invocation so that the traced run opens only to read.
 * The EXPECT line says, as the program saw it:
 *   opens        successful open/openat/fopen calls of data files
 *   files        distinct data files opened
 *   failed_opens opens that failed (one, of a missing file: ENOENT)
 *   reads        read-family calls (read, pread, readv, preadv, preadv2, fread,
 *                fgets, getline), including the ones that hit end of file
 *   eof_reads    of those, calls that returned 0 bytes / NULL / -1 at EOF
 *   bytes_read   bytes the read calls returned (fread: items * size)
 *   by_api       per base name: calls, bytes, eof
 *   mmaps        mmap calls of a data file (an anonymous mmap is also made and
 *                is not counted), mmap_bytes their lengths
 *   stats        per base name: stat, lstat, fstat, fstatat, statx, access
 *   seeks        lseek calls; closes: close + fclose calls of data files
 *   open_calls, open_errors, close_calls   per base name (open, fopen; close, fclose)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SMALL_COUNT 50
#define BIG8_SIZE (8u << 20)
#define BIG33_SIZE (33u << 20)
#define TEXT_LINES 3000

static const char *data_dir;

static void die(const char *what, const char *path)
{
    fprintf(stderr, "io_reader: %s %s: %s\n", what, path ? path : "", strerror(errno));
    exit(1);
}

static uint8_t pattern(unsigned seed, uint64_t off)
{
    return (uint8_t)(off * 131u + seed * 7u + (off >> 12) + (off >> 20) * 3u);
}

static size_t small_size(unsigned i) { return 1024u + (size_t)((i * 2654435761u) % 7169u); }

/* Seeds: small files 0..49, big_8m 100, big_33m 101, create-n files 1000+i. */
static void file_path(char *out, const char *name)
{
    if ((size_t)snprintf(out, PATH_MAX, "%s/%s", data_dir, name) >= PATH_MAX) {
        fprintf(stderr, "io_reader: path too long\n");
        exit(1);
    }
}

static void small_name(char *out, unsigned i)
{
    char name[32];
    snprintf(name, sizeof name, "small_%02u.bin", i);
    file_path(out, name);
}

static void write_pattern_file(const char *path, unsigned seed, uint64_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("create", path);
    static uint8_t buf[1 << 16];
    for (uint64_t off = 0; off < size;) {
        size_t n = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf;
        for (size_t j = 0; j < n; j++)
            buf[j] = pattern(seed, off + j);
        ssize_t w = write(fd, buf, n);
        if (w <= 0)
            die("write", path);
        off += (uint64_t)w;
    }
    if (close(fd) != 0)
        die("close", path);
}

static void text_line(char *out, size_t cap, unsigned k)
{
    int n = snprintf(out, cap, "line %05u ", k);
    unsigned extra = (k * 37u) % 120u;
    for (unsigned j = 0; j < extra; j++)
        out[n++] = (char)('a' + (k + j) % 26);
    out[n++] = '\n';
    out[n] = 0;
}

static int cmd_create(void)
{
    char path[PATH_MAX];
    mkdir(data_dir, 0755);
    for (unsigned i = 0; i < SMALL_COUNT; i++) {
        small_name(path, i);
        write_pattern_file(path, i, small_size(i));
    }
    file_path(path, "big_8m.bin");
    write_pattern_file(path, 100, BIG8_SIZE);
    file_path(path, "big_33m.bin");
    write_pattern_file(path, 101, BIG33_SIZE);
    file_path(path, "text.txt");
    FILE *f = fopen(path, "w");
    if (!f)
        die("create", path);
    char line[256];
    for (unsigned k = 0; k < TEXT_LINES; k++) {
        text_line(line, sizeof line, k);
        fputs(line, f);
    }
    if (fclose(f) != 0)
        die("close", path);
    printf("created %s\n", data_dir);
    return 0;
}

/* ---- counting what the read run does ---------------------------------------- */
enum api { A_READ, A_PREAD, A_READV, A_PREADV, A_PREADV2, A_FREAD, A_FGETS, A_GETLINE, A_COUNT };
static const char *api_names[A_COUNT] = {"read", "pread", "readv", "preadv", "preadv2", "fread", "fgets", "getline"};
static struct {
    uint64_t calls, bytes, eof;
} api[A_COUNT];
enum stat_kind { S_STAT, S_LSTAT, S_FSTAT, S_FSTATAT, S_STATX, S_ACCESS, S_COUNT };
static const char *stat_names[S_COUNT] = {"stat", "lstat", "fstat", "fstatat", "statx", "access"};
static uint64_t stats[S_COUNT];
static uint64_t opens, failed_opens, mmaps, mmap_bytes, seeks, closes;
static uint64_t open_calls, fopen_calls, close_calls, fclose_calls; /* per base name */
static char opened[128][PATH_MAX];
static unsigned opened_count;

static void note_read(enum api a, uint64_t bytes)
{
    api[a].calls++;
    api[a].bytes += bytes;
    if (!bytes)
        api[a].eof++;
}

static void note_open(const char *path)
{
    opens++;
    for (unsigned i = 0; i < opened_count; i++)
        if (!strcmp(opened[i], path))
            return;
    if (opened_count == sizeof opened / sizeof opened[0]) {
        fprintf(stderr, "io_reader: too many distinct files\n");
        exit(1);
    }
    strcpy(opened[opened_count++], path);
}

static int open_data(const char *path)
{
    int fd = open(path, O_RDONLY);
    open_calls++;
    if (fd < 0)
        die("open", path);
    note_open(path);
    return fd;
}

static FILE *fopen_data(const char *path, const char *mode)
{
    FILE *f = fopen(path, mode);
    fopen_calls++;
    if (!f)
        die("fopen", path);
    note_open(path);
    return f;
}

static void close_data(int fd)
{
    if (close(fd) != 0)
        die("close", NULL);
    closes++;
    close_calls++;
}

static void fclose_data(FILE *f)
{
    if (fclose(f) != 0)
        die("fclose", NULL);
    closes++;
    fclose_calls++;
}

static void check_bytes(const char *path, unsigned seed, uint64_t off, const uint8_t *buf, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (buf[j] != pattern(seed, off + j)) {
            fprintf(stderr, "io_reader: %s: wrong byte at offset %llu\n", path, (unsigned long long)(off + j));
            exit(1);
        }
}

static void expect_total(const char *path, uint64_t got, uint64_t want)
{
    if (got != want) {
        fprintf(stderr, "io_reader: %s: read %llu bytes, file has %llu\n", path, (unsigned long long)got,
                (unsigned long long)want);
        exit(1);
    }
}

static uint8_t buf[1 << 20];

/* Sizes the compiler cannot see through, so that a fortified build
 * (io_reader_fortify) calls the checked entry points: __read_chk, __pread_chk,
 * __fread_chk, __fgets_chk. */
static volatile size_t read_chunk = 4093, pread_chunk = 1500, fread_items = 1000, fgets_size = 256;

/* read() in a loop with an odd buffer size (the last read is short), then the
 * read that returns 0 at end of file. */
static void read_loop(const char *path, unsigned seed, uint64_t size)
{
    int fd = open_data(path);
    uint64_t off = 0;
    for (;;) {
        ssize_t r = read(fd, buf, read_chunk);
        if (r < 0)
            die("read", path);
        note_read(A_READ, (uint64_t)r);
        if (r == 0)
            break;
        check_bytes(path, seed, off, buf, (size_t)r);
        off += (uint64_t)r;
    }
    expect_total(path, off, size);
    if (seed == 100) { /* back to the start once and read again */
        if (lseek(fd, 0, SEEK_SET) != 0)
            die("lseek", path);
        seeks++;
        ssize_t r = read(fd, buf, 4093);
        if (r != 4093)
            die("read after lseek", path);
        note_read(A_READ, (uint64_t)r);
        check_bytes(path, seed, 0, buf, (size_t)r);
    }
    close_data(fd);
}

static void read_pread_small(const char *path, unsigned seed)
{
    int fd = open_data(path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        die("fstat", path);
    stats[S_FSTAT]++;
    uint64_t off = 0;
    while (off < (uint64_t)st.st_size) { /* exactly the file: no read at EOF here */
        size_t chunk = pread_chunk;
        size_t want = st.st_size - off < chunk ? (size_t)(st.st_size - off) : chunk;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r <= 0)
            die("pread", path);
        note_read(A_PREAD, (uint64_t)r);
        check_bytes(path, seed, off, buf, (size_t)r);
        off += (uint64_t)r;
    }
    ssize_t r = pread(fd, buf, 100, (off_t)off); /* at EOF: 0 */
    if (r != 0)
        die("pread at EOF", path);
    note_read(A_PREAD, 0);
    expect_total(path, off, small_size(seed));
    close_data(fd);
}

static void read_pread_big(const char *path)
{
    int fd = open_data(path);
    for (unsigned k = 0; k <= 10; k++) {
        uint64_t off = (uint64_t)k * (3u << 20);
        ssize_t r = pread(fd, buf, 1u << 20, (off_t)off);
        if (r != (1 << 20))
            die("pread", path);
        note_read(A_PREAD, (uint64_t)r);
        check_bytes(path, 101, off, buf, (size_t)r);
    }
    close_data(fd);
}

static void read_readv(const char *path)
{
    int fd = open_data(path);
    static uint8_t a[4096], b[65536], c[12345];
    struct iovec iov[3] = {{a, sizeof a}, {b, sizeof b}, {c, sizeof c}};
    uint64_t off = 0;
    for (;;) {
        ssize_t r = readv(fd, iov, 3);
        if (r < 0)
            die("readv", path);
        note_read(A_READV, (uint64_t)r);
        if (r == 0)
            break;
        size_t left = (size_t)r;
        for (int i = 0; i < 3 && left; i++) {
            size_t n = left < iov[i].iov_len ? left : iov[i].iov_len;
            check_bytes(path, 101, off, iov[i].iov_base, n);
            off += n;
            left -= n;
        }
    }
    expect_total(path, off, BIG33_SIZE);
    close_data(fd);
}

static void read_preadv(const char *path)
{
    int fd = open_data(path);
    static uint8_t a[1000], b[3000], c[8192];
    struct iovec iov[2] = {{a, sizeof a}, {b, sizeof b}};
    for (unsigned k = 0; k < 5; k++) {
        uint64_t off = (uint64_t)k * (1u << 20) + k * 7u;
        ssize_t r = preadv(fd, iov, 2, (off_t)off);
        if (r != 4000)
            die("preadv", path);
        note_read(A_PREADV, (uint64_t)r);
        check_bytes(path, 100, off, a, sizeof a);
        check_bytes(path, 100, off + sizeof a, b, sizeof b);
    }
    struct iovec one = {c, sizeof c};
    for (unsigned k = 0; k < 3; k++) {
        uint64_t off = (2u << 20) + k * 8192u;
        ssize_t r = preadv2(fd, &one, 1, (off_t)off, 0);
        if (r != (ssize_t)sizeof c)
            die("preadv2", path);
        note_read(A_PREADV2, (uint64_t)r);
        check_bytes(path, 100, off, c, sizeof c);
    }
    ssize_t r = preadv2(fd, &one, 1, (off_t)BIG8_SIZE, 0); /* at EOF: 0 */
    if (r != 0)
        die("preadv2 at EOF", path);
    note_read(A_PREADV2, 0);
    close_data(fd);
}

static void read_fread(const char *path, unsigned seed, uint64_t size, size_t item, size_t nitems)
{
    FILE *f = fopen_data(path, "rb");
    uint64_t off = 0;
    for (;;) {
        size_t got = fread(buf, item, nitems == 1000 ? fread_items : nitems, f);
        note_read(A_FREAD, (uint64_t)got * item);
        if (got == 0)
            break;
        check_bytes(path, seed, off, buf, got * item);
        off += (uint64_t)got * item;
    }
    if (ferror(f))
        die("fread", path);
    expect_total(path, off, size);
    fclose_data(f);
}

static void read_text(const char *path)
{
    char want[256];
    FILE *f = fopen_data(path, "r");
    char line[256];
    unsigned k = 0;
    for (;;) {
        char *s = fgets(line, (int)fgets_size, f);
        if (!s) {
            note_read(A_FGETS, 0);
            break;
        }
        note_read(A_FGETS, strlen(s));
        text_line(want, sizeof want, k++);
        if (strcmp(s, want)) {
            fprintf(stderr, "io_reader: fgets line %u differs\n", k - 1);
            exit(1);
        }
    }
    if (k != TEXT_LINES)
        die("fgets: short", path);
    fclose_data(f);

    f = fopen_data(path, "r");
    char *lp = NULL;
    size_t cap = 0;
    k = 0;
    for (;;) {
        ssize_t n = getline(&lp, &cap, f);
        if (n < 0) {
            note_read(A_GETLINE, 0);
            break;
        }
        note_read(A_GETLINE, (uint64_t)n);
        text_line(want, sizeof want, k++);
        if (strcmp(lp, want)) {
            fprintf(stderr, "io_reader: getline line %u differs\n", k - 1);
            exit(1);
        }
    }
    free(lp);
    if (k != TEXT_LINES)
        die("getline: short", path);
    fclose_data(f);
}

static void map_file(const char *path, unsigned seed, uint64_t off, uint64_t len)
{
    int fd = open_data(path);
    uint8_t *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, (off_t)off);
    if (p == MAP_FAILED)
        die("mmap", path);
    mmaps++;
    mmap_bytes += len;
    for (uint64_t j = 0; j < len; j += 4096)
        check_bytes(path, seed, off + j, p + j, 1);
    check_bytes(path, seed, off + len - 1, p + len - 1, 1);
    munmap(p, len);
    close_data(fd);
}

static void stat_all(void)
{
    char path[PATH_MAX];
    struct stat st;
    for (unsigned i = 0; i < SMALL_COUNT; i++) {
        small_name(path, i);
        if (stat(path, &st) != 0 || (size_t)st.st_size != small_size(i))
            die("stat", path);
        stats[S_STAT]++;
        if (lstat(path, &st) != 0 || (size_t)st.st_size != small_size(i))
            die("lstat", path);
        stats[S_LSTAT]++;
        if (access(path, R_OK) != 0)
            die("access", path);
        stats[S_ACCESS]++;
    }
    file_path(path, "big_8m.bin");
    if (fstatat(AT_FDCWD, path, &st, 0) != 0 || st.st_size != BIG8_SIZE)
        die("fstatat", path);
    stats[S_FSTATAT]++;
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_SIZE, &sx) != 0 || sx.stx_size != BIG8_SIZE)
        die("statx", path);
    stats[S_STATX]++;
}

static void print_expect(void)
{
    char real[PATH_MAX];
    if (!realpath(data_dir, real))
        die("realpath", data_dir);
    uint64_t reads = 0, bytes = 0, eof = 0, nstats = 0;
    for (int a = 0; a < A_COUNT; a++) {
        reads += api[a].calls;
        bytes += api[a].bytes;
        eof += api[a].eof;
    }
    printf("EXPECT {\"dir\": \"%s\", \"opens\": %llu, \"files\": %u, \"failed_opens\": %llu, \"reads\": %llu, "
           "\"eof_reads\": %llu, \"bytes_read\": %llu, \"by_api\": {",
           real, (unsigned long long)opens, opened_count, (unsigned long long)failed_opens,
           (unsigned long long)reads, (unsigned long long)eof, (unsigned long long)bytes);
    int first = 1;
    for (int a = 0; a < A_COUNT; a++) {
        if (!api[a].calls)
            continue;
        printf("%s\"%s\": {\"calls\": %llu, \"bytes\": %llu, \"eof\": %llu}", first ? "" : ", ", api_names[a],
               (unsigned long long)api[a].calls, (unsigned long long)api[a].bytes, (unsigned long long)api[a].eof);
        first = 0;
    }
    printf("}, \"mmaps\": %llu, \"mmap_bytes\": %llu, \"stats\": {", (unsigned long long)mmaps,
           (unsigned long long)mmap_bytes);
    for (int s = 0; s < S_COUNT; s++) {
        printf("%s\"%s\": %llu", s ? ", " : "", stat_names[s], (unsigned long long)stats[s]);
        nstats += stats[s];
    }
    printf("}, \"stat_calls\": %llu, \"seeks\": %llu, \"closes\": %llu, \"open_calls\": {\"open\": %llu, "
           "\"fopen\": %llu}, \"open_errors\": {\"open\": %llu}, \"close_calls\": {\"close\": %llu, \"fclose\": %llu}}\n",
           (unsigned long long)nstats, (unsigned long long)seeks, (unsigned long long)closes,
           (unsigned long long)open_calls, (unsigned long long)fopen_calls, (unsigned long long)failed_opens,
           (unsigned long long)close_calls, (unsigned long long)fclose_calls);
}

static int cmd_read(void)
{
    char path[PATH_MAX];
    unsigned i = 0;

    /* a missing file: a failed open, not a file opened */
    file_path(path, "missing.bin");
    errno = 0;
    if (open(path, O_RDONLY) != -1 || errno != ENOENT)
        die("open of a missing file did not fail with ENOENT:", path);
    open_calls++;
    failed_opens++;

    for (; i < 25; i++) {
        small_name(path, i);
        read_loop(path, i, small_size(i));
    }
    file_path(path, "big_8m.bin");
    read_loop(path, 100, BIG8_SIZE);

    for (; i < 35; i++) {
        small_name(path, i);
        read_pread_small(path, i);
    }
    file_path(path, "big_33m.bin");
    read_pread_big(path);

    read_readv(path);
    file_path(path, "big_8m.bin");
    read_preadv(path);

    for (; i < 45; i++) {
        small_name(path, i);
        read_fread(path, i, small_size(i), 1, 1000);
    }
    file_path(path, "big_8m.bin");
    read_fread(path, 100, BIG8_SIZE, 8, 1000);

    file_path(path, "text.txt");
    read_text(path);

    file_path(path, "big_8m.bin");
    map_file(path, 100, 0, BIG8_SIZE);
    file_path(path, "big_33m.bin");
    map_file(path, 101, 1u << 20, 4u << 20);
    void *anon = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (anon == MAP_FAILED)
        die("anonymous mmap", NULL);
    memset(anon, 1, 1u << 20);
    munmap(anon, 1u << 20);

    stat_all();
    print_expect();
    return 0;
}

static int cmd_create_n(long n, long size)
{
    char path[PATH_MAX], name[32];
    mkdir(data_dir, 0755);
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "f_%05ld.bin", i);
        file_path(path, name);
        write_pattern_file(path, 1000u + (unsigned)i, (uint64_t)size);
    }
    printf("created %ld files of %ld bytes in %s\n", n, size, data_dir);
    return 0;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int cmd_read_all(size_t bufsize)
{
    if (bufsize == 0 || bufsize > sizeof buf) {
        fprintf(stderr, "io_reader: BUFSIZE must be 1..%zu\n", sizeof buf);
        return 2;
    }
    DIR *d = opendir(data_dir);
    if (!d)
        die("opendir", data_dir);
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 256;
            names = realloc(names, cap * sizeof *names);
            if (!names)
                die("realloc", NULL);
        }
        names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, name_cmp);
    char path[PATH_MAX];
    for (size_t k = 0; k < count; k++) {
        file_path(path, names[k]);
        int fd = open(path, O_RDONLY);
        open_calls++;
        if (fd < 0)
            die("open", path);
        opens++;
        for (;;) {
            ssize_t r = read(fd, buf, bufsize);
            if (r < 0)
                die("read", path);
            note_read(A_READ, (uint64_t)r);
            if (r == 0)
                break;
        }
        close_data(fd);
        free(names[k]);
    }
    free(names);
    opened_count = (unsigned)count; /* every file once */
    print_expect();
    return 0;
}

/* fork DIR: two forked children read half of the small files each with read();
 * one leaves with _exit (as multiprocessing workers and exec failures do), the
 * other with exit; the parent reads text.txt with fgets. Each child sends its
 * counts over a socket pair (send/recv: not file I/O, not hooked), so the
 * EXPECT line covers all three processes. */
struct child_counts {
    uint64_t opens, reads, bytes, eof, closes;
};

static int cmd_fork(void)
{
    char path[PATH_MAX];
    uint64_t files = 0;
    for (int c = 0; c < 2; c++) {
        int p[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) != 0)
            die("socketpair", NULL);
        pid_t pid = fork();
        if (pid < 0)
            die("fork", NULL);
        if (pid == 0) {
            opens = closes = 0; /* this child's own counts */
            memset(&api[A_READ], 0, sizeof api[A_READ]);
            for (unsigned i = c * 25u; i < c * 25u + 25u; i++) {
                small_name(path, i);
                read_loop(path, i, small_size(i));
            }
            struct child_counts cc = {opens, api[A_READ].calls, api[A_READ].bytes, api[A_READ].eof, closes};
            if (send(p[1], &cc, sizeof cc, 0) != (ssize_t)sizeof cc)
                _exit(3);
            if (c == 0)
                _exit(0);
            exit(0);
        }
        struct child_counts cc; /* the socket pair stays open: a close would be a hooked call */
        ssize_t r = recv(p[0], &cc, sizeof cc, MSG_WAITALL);
        int status = -1;
        waitpid(pid, &status, 0);
        if (r != (ssize_t)sizeof cc || status != 0) {
            fprintf(stderr, "io_reader: child %d failed (status %d)\n", c, status);
            return 1;
        }
        opens += cc.opens;
        api[A_READ].calls += cc.reads;
        api[A_READ].bytes += cc.bytes;
        api[A_READ].eof += cc.eof;
        closes += cc.closes;
        close_calls += cc.closes;
        open_calls += cc.opens;
        files += cc.opens;
    }
    file_path(path, "text.txt");
    FILE *f = fopen_data(path, "r");
    char line[256];
    for (;;) {
        char *s = fgets(line, sizeof line, f);
        note_read(A_FGETS, s ? strlen(s) : 0);
        if (!s)
            break;
    }
    fclose_data(f);
    opened_count += (unsigned)files;
    print_expect();
    return 0;
}

/* signals: a handler's reads land between (and inside) the hooked reads of the
 * program's one thread; every read of main.bin must still be counted exactly. */
static int handler_fd = -1;
static volatile sig_atomic_t handler_reads, handler_errors;
static char handler_buf[4096];

static void handler_pread(void)
{
    if (pread(handler_fd, handler_buf, sizeof handler_buf, 0) == (ssize_t)sizeof handler_buf)
        handler_reads++;
    else
        handler_errors++;
}

static void on_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    handler_pread();
    errno = saved;
}

/* Opens DIR/b/handler.bin for the handler and starts a 20 us timer that calls it. */
static void handler_start(void (*handler)(int))
{
    char b[PATH_MAX];
    snprintf(b, sizeof b, "%s/b/handler.bin", data_dir);
    handler_fd = open(b, O_RDONLY);
    if (handler_fd < 0)
        die("open", b);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void handler_stop(void)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_IGN);
    close(handler_fd);
}

static int cmd_signals(long n)
{
    char a[PATH_MAX];
    snprintf(a, sizeof a, "%s/a/main.bin", data_dir);
    int fd = open(a, O_RDONLY);
    if (fd < 0)
        die("open", a);
    handler_start(on_alarm);
    static char buf[4096];
    unsigned long long bytes = 0;
    for (long i = 0; i < n; i++) {
        if (i % 16 == 0 && lseek(fd, 0, SEEK_SET) != 0)
            die("lseek", a);
        ssize_t r = read(fd, buf, sizeof buf);
        if (r != (ssize_t)sizeof buf)
            die("read", a);
        bytes += (unsigned long long)r;
    }
    handler_stop();
    close(fd);
    if (handler_errors)
        fprintf(stderr, "io_reader: %d handler reads failed\n", (int)handler_errors);
    printf("EXPECT {\"main_reads\": %ld, \"main_bytes\": %llu, \"handler_reads\": %d}\n", n, bytes,
           (int)handler_reads);
    return handler_errors ? 1 : 0;
}

/* signals-files: Python's calls per file (open, fstat64, two tells, fstat64, a
 * read of the size and one to its end, close) on DIR/a/main.bin, N times,
 * while the 20 us timer's handler makes an fstat, a tell and a pread of
 * DIR/b/handler.bin (fstat and lseek: other names than the program's): the
 * fast paths' counts apart and slots must stay exact beside a handler's calls
 * on another file, which land inside their system calls and busy windows. */
static volatile sig_atomic_t handler_meta_errors;

static void on_alarm_meta(int sig)
{
    (void)sig;
    int saved = errno;
    struct stat st;
    if (fstat(handler_fd, &st) != 0 || st.st_size != 4096 || lseek(handler_fd, 0, SEEK_CUR) != 0)
        handler_meta_errors++;
    handler_pread();
    errno = saved;
}

static int cmd_signals_files(long n)
{
    char a[PATH_MAX];
    snprintf(a, sizeof a, "%s/a/main.bin", data_dir);
    handler_start(on_alarm_meta);
    static char buf[65536 + 1];
    unsigned long long bytes = 0;
    for (long i = 0; i < n; i++) {
        int fd = open(a, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die("open", a);
        struct stat64 st;
        if (fstat64(fd, &st) != 0 || lseek64(fd, 0, SEEK_CUR) != 0 || lseek64(fd, 0, SEEK_CUR) != 0 ||
            fstat64(fd, &st) != 0)
            die("fstat64/lseek64", a);
        ssize_t r = read(fd, buf, (size_t)st.st_size + 1);
        if (r != st.st_size || read(fd, buf, 1) != 0)
            die("read", a);
        bytes += (unsigned long long)r;
        if (close(fd) != 0)
            die("close", a);
    }
    handler_stop();
    if (handler_errors || handler_meta_errors)
        fprintf(stderr, "io_reader: %d handler reads and %d fstats or tells failed\n", (int)handler_errors,
                (int)handler_meta_errors);
    printf("EXPECT {\"files\": %ld, \"main_bytes\": %llu, \"handler_reads\": %d}\n", n, bytes,
           (int)handler_reads);
    return handler_errors || handler_meta_errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3) {
        data_dir = argv[2];
        if (!strcmp(argv[1], "create") && argc == 3)
            return cmd_create();
        if (!strcmp(argv[1], "read") && argc == 3)
            return cmd_read();
        if (!strcmp(argv[1], "create-n") && argc == 5)
            return cmd_create_n(atol(argv[3]), atol(argv[4]));
        if (!strcmp(argv[1], "fork") && argc == 3)
            return cmd_fork();
        if (!strcmp(argv[1], "read-all") && argc == 4)
            return cmd_read_all((size_t)atol(argv[3]));
        if (!strcmp(argv[1], "signals") && argc == 4)
            return cmd_signals(atol(argv[3]));
        if (!strcmp(argv[1], "signals-files") && argc == 4)
            return cmd_signals_files(atol(argv[3]));
    }
    fprintf(stderr, "usage: io_reader create DIR | read DIR | create-n DIR N SIZE | read-all DIR BUFSIZE | "
                    "signals DIR N | signals-files DIR N\n");
    return 2;
}
