/*
 * io_errors: return values and errno of the hooked file-I/O calls, as the
 * program sees them. Run it with and without the shim: both runs must pass
 * their own checks and print the same lines (io_check.py same-output).
 *
 *   io_errors DIR      (an empty scratch directory)
 *
 * Each line: "<case>: ret=<value> errno=<name>". A case whose result is not
 * what Linux and glibc give prints "FAIL" and the exit status is 1.
 * Covered: failures (ENOENT, EBADF, EINVAL, ESPIPE, EFAULT, EISDIR, ENOTDIR),
 * short reads (EOF, a pipe holding fewer bytes than asked), EINTR from a
 * blocking read interrupted by a signal without SA_RESTART (read, readv,
 * fgets, poll, ppoll, sem_wait, sem_timedwait), and errno left alone by successful calls; poll's and
 * ppoll's results (EFAULT, EINVAL, a timeout, a descriptor ready, an invalid
 * one flagged POLLNVAL); the semaphore waits' (EINVAL, ETIMEDOUT, a
 * posted semaphore).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static char dir[PATH_MAX / 2];

static const char *errno_name(int e)
{
    switch (e) {
    case 0: return "0";
    case 1234: return "1234(untouched)";
    case ENOENT: return "ENOENT";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ESPIPE: return "ESPIPE";
    case EFAULT: return "EFAULT";
    case EISDIR: return "EISDIR";
    case ENOTDIR: return "ENOTDIR";
    case EINTR: return "EINTR";
    case EAGAIN: return "EAGAIN";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EEXIST: return "EEXIST";
    case EACCES: return "EACCES";
    default: {
        static char s[32];
        snprintf(s, sizeof s, "errno%d", e);
        return s;
    }
    }
}

/* Prints the case and checks ret and errno (want_errno -1: not checked). */
static void check(const char *what, long ret, long want_ret, int err, int want_errno)
{
    int ok = ret == want_ret && (want_errno < 0 || err == want_errno);
    printf("%s: ret=%ld errno=%s%s\n", what, ret, errno_name(err), ok ? "" : "  FAIL");
    if (!ok) {
        printf("  expected ret=%ld errno=%s\n", want_ret, want_errno < 0 ? "any" : errno_name(want_errno));
        failures++;
    }
}

static void path_in(char *out, const char *name) { snprintf(out, PATH_MAX, "%s/%s", dir, name); }

static void on_alarm(int sig) { (void)sig; }

static void arm_timer_ms(int ms)
{
    struct itimerval it = {{0, 0}, {0, ms * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: io_errors DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0755);
    char path[PATH_MAX], missing[PATH_MAX];
    path_in(path, "data.bin");
    path_in(missing, "no/such/file");
    char buf[4096];
    long r;

    /* a 100-byte file to read */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    memset(buf, 'd', 100);
    if (fd < 0 || write(fd, buf, 100) != 100 || close(fd) != 0) {
        perror("io_errors: setup");
        return 1;
    }

    /* ---- failures ---- */
    errno = 0; r = open(missing, O_RDONLY); check("open missing", r, -1, errno, ENOENT);
    errno = 0; r = open(missing, O_RDONLY | O_CREAT, 0644); check("open O_CREAT in missing dir", r, -1, errno, ENOENT);
    errno = 0; r = openat(AT_FDCWD, missing, O_RDONLY); check("openat missing", r, -1, errno, ENOENT);
    errno = 0; r = openat(-5, "relative", O_RDONLY); check("openat bad dirfd", r, -1, errno, EBADF);
    errno = 0; r = creat(missing, 0644); check("creat in missing dir", r, -1, errno, ENOENT);
    errno = 0; r = open(path, O_RDONLY | O_DIRECTORY); check("open O_DIRECTORY of a file", r, -1, errno, ENOTDIR);
    errno = 0; r = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644); check("open O_EXCL existing", r, -1, errno, EEXIST);
    errno = 0;
    FILE *f = fopen(missing, "r");
    check("fopen missing", f != NULL, 0, errno, ENOENT);
    errno = 0; f = fopen(path, "q"); check("fopen bad mode", f != NULL, 0, errno, EINVAL);

    errno = 0; r = read(-1, buf, 10); check("read fd -1", r, -1, errno, EBADF);
    errno = 0; r = read(987, buf, 10); check("read unopened fd", r, -1, errno, EBADF);
    errno = 0; r = pread(-1, buf, 10, 0); check("pread fd -1", r, -1, errno, EBADF);
    struct iovec iov = {buf, 10};
    errno = 0; r = readv(-1, &iov, 1); check("readv fd -1", r, -1, errno, EBADF);
    errno = 0; r = preadv(-1, &iov, 1, 0); check("preadv fd -1", r, -1, errno, EBADF);
    errno = 0; r = lseek(-1, 0, SEEK_SET); check("lseek fd -1", r, -1, errno, EBADF);
    errno = 0; r = close(-1); check("close fd -1", r, -1, errno, EBADF);

    errno = 0; fd = open(path, O_RDONLY); check("open data", fd >= 0, 1, errno, 0);
    errno = 0; r = lseek(fd, 0, 12345); check("lseek bad whence", r, -1, errno, EINVAL);
    errno = 0; r = lseek(fd, -10, SEEK_SET); check("lseek negative", r, -1, errno, EINVAL);
    void *volatile bad_buffer = (void *)8;
    errno = 0; r = read(fd, bad_buffer, 10); check("read into a bad buffer", r, -1, errno, EFAULT);
    errno = 0; r = pread(fd, buf, 10, -1); check("pread negative offset", r, -1, errno, EINVAL);
    errno = 0; r = preadv2(fd, &iov, 1, 0, 0x7fff0000); check("preadv2 bad flags", r, -1, errno, EOPNOTSUPP);
    errno = 0; r = (long)mmap(NULL, 0, PROT_READ, MAP_PRIVATE, fd, 0); check("mmap length 0", r, -1, errno, EINVAL);
    errno = 0; r = (long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0); check("mmap fd -1", r, -1, errno, EBADF);
    errno = 0; r = (long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 3); check("mmap unaligned offset", r, -1, errno, EINVAL);

    /* ---- short reads ---- */
    errno = 0; r = read(fd, buf, sizeof buf); check("read whole file, asked 4096", r, 100, errno, 0);
    errno = 0; r = read(fd, buf, sizeof buf); check("read at EOF", r, 0, errno, 0);
    errno = 0; r = pread(fd, buf, 10, 1000); check("pread past EOF", r, 0, errno, 0);
    errno = 0; r = pread(fd, buf, 50, 90); check("pread across EOF", r, 10, errno, 0);
    errno = 0; r = lseek(fd, 0, SEEK_END); check("lseek SEEK_END", r, 100, errno, 0);
    close(fd);
    errno = 0; r = read(fd, buf, 10); check("read closed fd", r, -1, errno, EBADF);
    errno = 0; r = close(fd); check("close twice", r, -1, errno, EBADF);

    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    errno = 0; r = read(dfd, buf, 10); check("read a directory", r, -1, errno, EISDIR);
    close(dfd);

    int p[2];
    if (pipe(p) != 0) {
        perror("pipe");
        return 1;
    }
    errno = 0; r = write(p[1], "hello", 5); check("pipe write 5", r, 5, errno, 0);
    errno = 0; r = read(p[0], buf, 100); check("pipe read, 5 of 100 available", r, 5, errno, 0);
    errno = 0; r = pread(p[0], buf, 10, 0); check("pread on a pipe", r, -1, errno, ESPIPE);
    errno = 0; r = lseek(p[0], 0, SEEK_SET); check("lseek on a pipe", r, -1, errno, ESPIPE);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    errno = 0; r = read(p[0], buf, 10); check("read empty non-blocking pipe", r, -1, errno, EAGAIN);
    fcntl(p[0], F_SETFL, 0);

    /* ---- EINTR: blocking reads interrupted by SIGALRM without SA_RESTART ---- */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, NULL);
    arm_timer_ms(50);
    errno = 0; r = read(p[0], buf, 10); check("read empty pipe, interrupted", r, -1, errno, EINTR);
    arm_timer_ms(50);
    errno = 0; r = readv(p[0], &iov, 1); check("readv empty pipe, interrupted", r, -1, errno, EINTR);
    FILE *pf = fdopen(dup(p[0]), "r");
    arm_timer_ms(50);
    errno = 0;
    char *s = fgets(buf, 10, pf);
    check("fgets empty pipe, interrupted", s != NULL, 0, errno, EINTR);
    check("  ferror after EINTR", ferror(pf) != 0, 1, 0, -1);
    clearerr(pf);
    arm_timer_ms(50);
    errno = 0; r = (long)fread(buf, 1, 10, pf); check("fread empty pipe, interrupted", r, 0, errno, EINTR);
    fclose(pf);
    struct pollfd pfd = {p[0], POLLIN, 0};
    arm_timer_ms(50);
    errno = 0; r = poll(&pfd, 1, 5000); check("poll empty pipe, interrupted", r, -1, errno, EINTR);
    struct timespec five = {5, 0};
    arm_timer_ms(50);
    errno = 0; r = ppoll(&pfd, 1, &five, NULL); check("ppoll empty pipe, interrupted", r, -1, errno, EINTR);

    sem_t sem;
    sem_init(&sem, 0, 0);
    arm_timer_ms(50);
    errno = 0; r = sem_wait(&sem); check("sem_wait empty, interrupted", r, -1, errno, EINTR);
    struct timespec later;
    clock_gettime(CLOCK_REALTIME, &later);
    later.tv_sec += 5;
    arm_timer_ms(50);
    errno = 0; r = sem_timedwait(&sem, &later); check("sem_timedwait empty, interrupted", r, -1, errno, EINTR);

    /* ---- poll, ppoll ---- */
    struct pollfd *volatile nowhere = NULL; /* (volatile: no compile-time check of the call) */
    errno = 0; r = poll(nowhere, 1, 0); check("poll NULL array", r, -1, errno, EFAULT);
    errno = 1234; r = poll(&pfd, 1, 10); check("poll empty pipe, timeout", r, 0, errno, 1234);
    errno = 1234; r = poll(NULL, 0, 1); check("poll no descriptors", r, 0, errno, 1234);
    struct timespec bad = {0, 2000000000L};
    errno = 0; r = ppoll(&pfd, 1, &bad, NULL); check("ppoll bad timeout", r, -1, errno, EINVAL);
    struct timespec ms = {0, 1000000L};
    errno = 1234; r = ppoll(&pfd, 1, &ms, NULL); check("ppoll empty pipe, timeout", r, 0, errno, 1234);
    if (write(p[1], "x", 1) != 1)
        check("  pipe write", 0, 1, errno, -1);
    errno = 1234; pfd.revents = 0; r = poll(&pfd, 1, 1000);
    check("poll pipe with a byte", r, 1, errno, 1234);
    check("  revents POLLIN", (pfd.revents & POLLIN) != 0, 1, 0, -1);
    errno = 1234; pfd.revents = 0; r = ppoll(&pfd, 1, NULL, NULL);
    check("ppoll pipe with a byte", r, 1, errno, 1234);
    if (read(p[0], buf, 1) != 1)
        check("  pipe read", 0, 1, errno, -1);
    struct pollfd nv = {987, POLLIN, 0};
    errno = 1234; r = poll(&nv, 1, 0); check("poll unopened fd", r, 1, errno, 1234);
    check("  revents POLLNVAL", nv.revents == POLLNVAL, 1, 0, -1);

    /* ---- semaphore waits ---- */
    struct timespec past = {1, 0}, badns = {0, 2000000000L}, soon;
    errno = 0; r = sem_timedwait(&sem, &badns); check("sem_timedwait bad time", r, -1, errno, EINVAL);
    errno = 0; r = sem_timedwait(&sem, &past); check("sem_timedwait empty, past", r, -1, errno, ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &soon);
    soon.tv_nsec += 2000000L;
    if (soon.tv_nsec >= 1000000000L)
        soon.tv_sec++, soon.tv_nsec -= 1000000000L;
    errno = 0; r = sem_clockwait(&sem, CLOCK_MONOTONIC, &soon); check("sem_clockwait empty, timeout", r, -1, errno, ETIMEDOUT);
    errno = 0; r = sem_clockwait(&sem, (clockid_t)12345, &soon); check("sem_clockwait bad clock", r, -1, errno, EINVAL);
    sem_post(&sem);
    sem_post(&sem);
    sem_post(&sem);
    errno = 1234; r = sem_wait(&sem); check("sem_wait posted", r, 0, errno, 1234);
    errno = 1234; r = sem_timedwait(&sem, &past); check("sem_timedwait posted, past", r, 0, errno, 1234);
    errno = 1234; r = sem_clockwait(&sem, CLOCK_MONOTONIC, &past); check("sem_clockwait posted", r, 0, errno, 1234);
    sem_destroy(&sem);

    /* with SA_RESTART the interrupted read resumes and returns what a child writes later */
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);

    pid_t child = fork();
    if (child == 0) {
        usleep(200 * 1000);
        _exit(write(p[1], "abc", 3) == 3 ? 0 : 1);
    }
    arm_timer_ms(30);
    errno = 0; r = read(p[0], buf, 10); check("read empty pipe, interrupted, SA_RESTART", r, 3, errno, 0);
    int status = -1;
    waitpid(child, &status, 0);
    check("  writer child exit", status, 0, 0, -1);
    close(p[0]);
    close(p[1]);

    /* ---- stat family ---- */
    struct stat st;
    errno = 0; r = stat(missing, &st); check("stat missing", r, -1, errno, ENOENT);
    errno = 0; r = lstat(missing, &st); check("lstat missing", r, -1, errno, ENOENT);
    errno = 0; r = fstat(-1, &st); check("fstat fd -1", r, -1, errno, EBADF);
    errno = 0; r = fstatat(AT_FDCWD, missing, &st, 0); check("fstatat missing", r, -1, errno, ENOENT);
    errno = 0; r = fstatat(-5, "relative", &st, 0); check("fstatat bad dirfd", r, -1, errno, EBADF);
    errno = 0; r = access(missing, F_OK); check("access missing", r, -1, errno, ENOENT);
    errno = 0; r = faccessat(AT_FDCWD, missing, R_OK, 0); check("faccessat missing", r, -1, errno, ENOENT);
    struct statx sx;
    errno = 0; r = statx(AT_FDCWD, missing, 0, STATX_SIZE, &sx); check("statx missing", r, -1, errno, ENOENT);
    errno = 0; r = stat("", &st); check("stat empty path", r, -1, errno, ENOENT);

    /* ---- successful calls leave errno alone ---- */
    errno = 1234; fd = open(path, O_RDONLY); check("open ok", fd >= 0, 1, errno, 1234);
    errno = 1234; r = read(fd, buf, 30); check("read ok", r, 30, errno, 1234);
    errno = 1234; r = pread(fd, buf, 30, 80); check("pread ok (short)", r, 20, errno, 1234);
    errno = 1234; r = readv(fd, &iov, 1); check("readv ok", r, 10, errno, 1234);
    errno = 1234; r = preadv(fd, &iov, 1, 5); check("preadv ok", r, 10, errno, 1234);
    errno = 1234; r = lseek(fd, 0, SEEK_CUR); check("lseek ok", r, 40, errno, 1234);
    errno = 1234; r = read(fd, buf, sizeof buf); check("read ok, rest", r, 60, errno, 1234);
    errno = 1234; r = read(fd, buf, sizeof buf); check("read ok, EOF", r, 0, errno, 1234);
    errno = 1234; r = fstat(fd, &st); check("fstat ok", r, 0, errno, 1234);
    check("  fstat size", st.st_size, 100, 0, -1);
    {   /* the hook may make the system call itself: every field as glibc's stat gives it */
        struct stat st2;
        memset(&st2, 0xa5, sizeof st2);
        r = stat(path, &st2);
        check("  fstat is stat, every byte", r == 0 && memcmp(&st, &st2, sizeof st) == 0, 1, 0, -1);
    }
    errno = 1234; r = lseek(fd, 97, SEEK_SET); check("lseek ok, SEEK_SET", r, 97, errno, 1234);
    errno = 1234; r = read(fd, buf, 10); check("  read from there (short)", r, 3, errno, 1234);
    errno = 1234;
    void *m = mmap(NULL, 100, PROT_READ, MAP_PRIVATE, fd, 0);
    check("mmap ok", m != MAP_FAILED, 1, errno, 1234);
    if (m != MAP_FAILED) {
        check("  mapped byte", ((char *)m)[99], 'd', 0, -1);
        munmap(m, 100);
    }
    errno = 1234; r = close(fd); check("close ok", r, 0, errno, 1234);
    errno = 1234; r = stat(path, &st); check("stat ok", r, 0, errno, 1234);
    errno = 1234; r = lstat(path, &st); check("lstat ok", r, 0, errno, 1234);
    errno = 1234; r = access(path, R_OK); check("access ok", r, 0, errno, 1234);
    errno = 1234; r = faccessat(AT_FDCWD, path, R_OK, 0); check("faccessat ok", r, 0, errno, 1234);
    errno = 1234; r = fstatat(AT_FDCWD, path, &st, 0); check("fstatat ok", r, 0, errno, 1234);
    errno = 1234; r = statx(AT_FDCWD, path, 0, STATX_SIZE, &sx); check("statx ok", r, 0, errno, 1234);
    check("  statx size", (long)sx.stx_size, 100, 0, -1);

    errno = 1234; f = fopen(path, "r"); check("fopen ok", f != NULL, 1, errno, 1234);
    if (f) {
        errno = 1234; r = (long)fread(buf, 1, 60, f); check("fread ok", r, 60, errno, 1234);
        errno = 1234; s = fgets(buf, 30, f); check("fgets ok", s ? (long)strlen(s) : -1, 29, errno, 1234);
        char *lp = NULL;
        size_t cap = 0;
        errno = 1234; r = getline(&lp, &cap, f); check("getline ok (rest, no newline)", r, 11, errno, 1234);
        errno = 1234; r = getline(&lp, &cap, f); check("getline at EOF", r, -1, errno, 1234);
        errno = 1234; r = (long)fread(buf, 1, 10, f); check("fread at EOF", r, 0, errno, 1234);
        errno = 1234; s = fgets(buf, 30, f); check("fgets at EOF", s != NULL, 0, errno, 1234);
        check("  feof", feof(f) != 0, 1, 0, -1);
        free(lp);
        errno = 1234; r = fclose(f); check("fclose ok", r, 0, errno, 1234);
    }
    errno = 1234; fd = creat(path, 0644); check("creat ok (truncates)", fd >= 0, 1, errno, 1234);
    errno = 1234; r = fstat(fd, &st); check("fstat after creat", st.st_size, 0, errno, 1234);
    close(fd);

    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
