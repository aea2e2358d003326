/*
 * cancel_client: what the shim's single-threaded fast path must not change
 * (program_threads.c). Run without and with the shim; the output must match.
 *
 *   cancel_client pthread   a thread made by pthread_create blocks in read() on an
 *                           empty pipe and is cancelled: read() must stay a
 *                           cancellation point ("cancelled")
 *   cancel_client thrd      the same with C11 thrd_create
 *   cancel_client calls N   a single-threaded program's open/read/pread/lseek/fstat/close, with
 *                           their results and errno (N rounds; with the counting
 *                           interposer after the shim, counts what reaches glibc)
 *   cancel_client calls-mt N  the same after starting a thread of its own
 *   cancel_client main-exit [worker]  reads a file, then ends main() with pthread_exit;
 *                           with "worker", a thread reads a file after that: glibc
 *                           ends the process with exit(0) when the last thread ends
 * An alarm ends a run that hangs (exit 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <threads.h>
#include <unistd.h>

static int pipe_fd[2];

static void *blocked_reader(void *arg)
{
    (void)arg;
    char c;
    for (;;)
        if (read(pipe_fd[0], &c, 1) >= 0) /* never returns: nothing is written */
            break;
    return (void *)1;
}

static int thrd_reader(void *arg) { return blocked_reader(arg) ? 1 : 0; }

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "cancel_client: hung\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

static int cancel_test(int use_thrd)
{
    if (pipe(pipe_fd) != 0)
        return 1;
    pthread_t th;
    if (use_thrd) {
        thrd_t t;
        if (thrd_create(&t, thrd_reader, NULL) != thrd_success)
            return 1;
        th = (pthread_t)t;
    } else if (pthread_create(&th, NULL, blocked_reader, NULL) != 0) {
        return 1;
    }
    usleep(50000); /* let it block in read() */
    if (pthread_cancel(th) != 0)
        return 1;
    void *ret = NULL;
    if (pthread_join(th, &ret) != 0)
        return 1;
    printf("%s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
    return 0;
}

static void show(const char *what, long r, int err) { printf("%s = %ld errno %s\n", what, r, r < 0 ? strerror(err) : "-"); }

static int calls_test(long rounds, const char *self)
{
    char buf[64];
    for (long i = 0; i < rounds; i++) {
        int fd = open(self, O_RDONLY);
        ssize_t r = read(fd, buf, sizeof buf);
        ssize_t p = pread(fd, buf, 16, 4);
        off_t s = lseek(fd, 0, SEEK_CUR);
        struct stat st;
        int f = fstat(fd, &st);
        int c = close(fd);
        if (i == 0) {
            show("open(self)", fd >= 0 ? 1 : fd, errno);
            show("read", (long)r, errno);
            show("pread", (long)p, errno);
            show("lseek", (long)s, errno);
            show("fstat", f == 0 ? (long)st.st_size : f, errno);
            show("close", c, errno);
        }
    }
    errno = 0;
    long r = open("/nonexistent/cancel_client", O_RDONLY);
    show("open(missing)", r, errno);
    r = openat(AT_FDCWD, "/nonexistent/cancel_client", O_RDONLY);
    show("openat(missing)", r, errno);
    r = read(-1, buf, sizeof buf);
    show("read(-1)", r, errno);
    r = pread(0, buf, 1, -1);
    show("pread(off -1)", r, errno);
    r = close(987);
    show("close(987)", r, errno);
    int fd = open(self, O_RDONLY | O_DIRECTORY);
    show("open(file, O_DIRECTORY)", fd, errno);
    return 0;
}

/* The thread running it (the program's last, natively) takes signals as the program's threads do. */
static void at_exit_print(void)
{
    sigset_t cur;
    sigemptyset(&cur);
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    printf("atexit ran, SIGTERM %s\n", sigismember(&cur, SIGTERM) ? "blocked" : "not blocked");
}

static int read_line(const char *path)
{
    char b[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(b, sizeof b, f) != NULL;
    fclose(f);
    return ok;
}

static void *late_worker(void *arg)
{
    usleep(100000);
    printf("worker read %d\n", read_line(arg));
    fflush(stdout);
    return NULL;
}

static int main_exit(const char *self, int worker)
{
    atexit(at_exit_print);
    printf("main read %d\n", read_line(self));
    fflush(stdout);
    /* A file opened once recording has begun, written through stdio and left for
     * exit's flush: the thread that calls exit(0) must have the program's descriptors. */
    const char *out = getenv("MAIN_EXIT_FILE");
    FILE *o = out ? fopen(out, "w") : NULL;
    if (o)
        fprintf(o, "flushed at exit\n");
    pthread_t th;
    if (worker && pthread_create(&th, NULL, late_worker, (void *)self) != 0)
        return 1;
    pthread_exit(NULL);
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    alarm(10);
    if (argc >= 2 && !strcmp(argv[1], "pthread"))
        return cancel_test(0);
    if (argc >= 2 && !strcmp(argv[1], "thrd"))
        return cancel_test(1);
    if (argc >= 3 && !strcmp(argv[1], "calls"))
        return calls_test(atol(argv[2]), argv[0]);
    if (argc >= 2 && !strcmp(argv[1], "main-exit")) {
        alarm(0); /* the main thread ends: a pending SIGALRM could find no thread to take it */
        return main_exit(argv[0], argc >= 3);
    }
    if (argc >= 3 && !strcmp(argv[1], "calls-mt")) {
        pthread_t th;
        if (pipe(pipe_fd) != 0 || pthread_create(&th, NULL, blocked_reader, NULL) != 0)
            return 1;
        return calls_test(atol(argv[2]), argv[0]); /* the blocked thread ends with the process */
    }
    fprintf(stderr, "usage: cancel_client pthread|thrd|calls N|calls-mt N|main-exit [worker]\n");
    return 2;
}
