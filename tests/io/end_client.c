/*
 * end_client: a program's last file calls and the ways it can end
 * (tests/io/endings_check.py; docs/reliability.md, "However a process ends").
 *
 *   end_client preads FILE N OFFSETS END
 *       N preads of 4096 bytes of FILE, cycling over OFFSETS offsets (0, 4096...),
 *       the file left open, then END.
 *   end_client fork FILE N WHO END THREADS
 *       10 preads, fork(); WHO (parent or child) makes N preads and ends by END,
 *       the other one is quiet (the child leaves by _exit(0), the parent waits
 *       for the child and returns). THREADS 1: a second thread that made one
 *       pread is alive in the parent throughout.
 *   end_client exec FILE N
 *       10 preads, then execs itself as "preads FILE N 1 exit" (the same pid).
 *   end_client handoff DIR FILES END
 *       one thread opens DIR/f0 .. f(FILES-1) and hands each descriptor to a
 *       second thread, which preads it 4 times and closes it: 3 rounds and
 *       exit (END exit), or rounds for ever after printing "ready" (END idle).
 *
 * END: return (from main), exit, _exit, sigterm (raise, default action),
 * sigpipe (a write to stdout, a pipe whose reader is gone; default action),
 * idle (prints "ready" and pauses until killed).
 * Prints "EXPECT {"pid": P, "reads": R, "bytes": B}" for the process that ends
 * by END, before it ends (the other process prints nothing).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static long preads(int fd, long n, int offsets, long *bytes)
{
    char buf[4096];
    long ok = 0;
    for (long i = 0; i < n; i++) {
        ssize_t r = pread(fd, buf, sizeof buf, (off_t)(i % offsets) * (off_t)sizeof buf);
        if (r > 0) {
            ok++;
            *bytes += r;
        }
    }
    return ok;
}

static int finish(const char *end, long reads, long bytes)
{
    int sigpipe = !strcmp(end, "sigpipe");
    if (!sigpipe)
        printf("EXPECT {\"pid\": %d, \"reads\": %ld, \"bytes\": %ld}\n", (int)getpid(), reads, bytes);
    else
        fprintf(stderr, "EXPECT {\"pid\": %d, \"reads\": %ld, \"bytes\": %ld}\n", (int)getpid(), reads, bytes);
    fflush(stdout);
    if (!strcmp(end, "return"))
        return 0;
    if (!strcmp(end, "exit"))
        exit(0);
    if (!strcmp(end, "_exit"))
        _exit(0);
    if (!strcmp(end, "sigterm"))
        raise(SIGTERM);
    if (sigpipe) {
        /* the reader of stdout has gone (the test closes it): SIGPIPE */
        for (int i = 0; i < 1000; i++)
            if (write(1, "x\n", 2) < 0)
                break;
        fprintf(stderr, "no SIGPIPE\n");
        return 3;
    }
    if (!strcmp(end, "idle")) {
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    fprintf(stderr, "unknown END %s\n", end);
    return 2;
}

static void *idle_thread(void *arg)
{
    long bytes = 0;
    preads(*(int *)arg, 1, 1, &bytes);
    for (;;)
        pause();
    return NULL;
}

/* handoff: one thread opens files, another reads and closes them. */
static int handoff_pipe[2], handoff_back[2]; /* descriptors there, a byte back per close */
static long handoff_rounds;
#define HANDOFF_OUTSTANDING 64 /* descriptors open at once at most (RLIMIT_NOFILE) */

static void *handoff_reader(void *arg)
{
    (void)arg;
    int fd;
    long bytes = 0;
    while (read(handoff_pipe[0], &fd, sizeof fd) == (ssize_t)sizeof fd) {
        preads(fd, 4, 1, &bytes);
        close(fd);
        if (write(handoff_back[1], "", 1) != 1)
            break;
    }
    return NULL;
}

static int handoff(const char *dir, long files, const char *end)
{
    if (pipe(handoff_pipe) != 0 || pipe(handoff_back) != 0)
        return 2;
    long sent = 0;
    char token;
    pthread_t th;
    pthread_create(&th, NULL, handoff_reader, NULL);
    char path[4096];
    for (long round = 0; handoff_rounds == 0 || round < handoff_rounds; round++) {
        for (long i = 0; i < files; i++) {
            snprintf(path, sizeof path, "%s/f%ld", dir, i);
            if (sent++ >= HANDOFF_OUTSTANDING && read(handoff_back[0], &token, 1) != 1)
                return 2;
            int fd = open(path, O_RDONLY);
            if (fd < 0 || write(handoff_pipe[1], &fd, sizeof fd) != (ssize_t)sizeof fd) {
                perror(path);
                return 2;
            }
        }
        if (round == 0 && !strcmp(end, "idle")) {
            printf("ready\n");
            fflush(stdout);
        }
    }
    close(handoff_pipe[1]);
    pthread_join(th, NULL);
    printf("done\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "handoff")) {
        /* handoff DIR FILES END: END exit (rounds: 3) or idle (for ever, until killed) */
        handoff_rounds = strcmp(argv[4], "idle") ? 3 : 0;
        return handoff(argv[2], atol(argv[3]), argv[4]);
    }
    if (argc < 4) {
        fprintf(stderr, "usage: end_client preads FILE N OFFSETS END | fork FILE N WHO END THREADS | exec FILE N\n");
        return 2;
    }
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        perror(argv[2]);
        return 2;
    }
    long n = atol(argv[3]), bytes = 0;
    if (!strcmp(argv[1], "preads") && argc == 6) {
        long reads = preads(fd, n, atoi(argv[4]), &bytes);
        return finish(argv[5], reads, bytes);
    }
    if (!strcmp(argv[1], "fork") && argc == 7) {
        if (atoi(argv[6])) {
            pthread_t th;
            static int tfd;
            tfd = fd;
            pthread_create(&th, NULL, idle_thread, &tfd);
            usleep(20000); /* its pread made */
        }
        long before = preads(fd, 10, 1, &bytes);
        int child_ends = !strcmp(argv[4], "child");
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 2;
        }
        if ((pid == 0) == child_ends) {
            long b = pid == 0 ? 0 : bytes, r = pid == 0 ? 0 : before;
            r += preads(fd, n, 2, &b);
            return finish(argv[5], r + (pid != 0 && atoi(argv[6]) ? 1 : 0), b + (pid != 0 && atoi(argv[6]) ? 4096 : 0));
        }
        if (pid == 0)
            _exit(0);
        waitpid(pid, NULL, 0); /* the quiet parent: gone with its child */
        return 0;
    }
    if (!strcmp(argv[1], "exec") && argc == 4) {
        preads(fd, 10, 1, &bytes);
        char *args[] = {argv[0], "preads", argv[2], argv[3], "1", "exit", NULL};
        execv("/proc/self/exe", args);
        perror("execv");
        return 2;
    }
    fprintf(stderr, "bad arguments\n");
    return 2;
}
