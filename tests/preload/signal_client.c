/* Makes N driver calls, then dies of (or survives) a signal in the way its
 * arguments say; everything it prints comes from its own handlers, so that
 * its output, exit status and signal can be compared with and without the
 * shim.
 *   signal_client SIG HOW [N]
 * SIG: SEGV BUS ABRT TERM INT (how it is raised: a real fault for SEGV and BUS,
 *      abort() for ABRT, kill() for TERM and INT)
 * HOW: dfl            no handler of its own
 *      ign            SIG_IGN, then the signal (a fault still kills)
 *      handler_exit   sigaction SA_SIGINFO handler: prints, _exit(40)
 *      signal_exit    signal() handler: prints, _exit(41)
 *      resethand      SA_RESETHAND handler that prints and returns; the signal
 *                     comes again (a fault comes back by itself): default action
 *      reraise        like Python's faulthandler: prints, puts back the
 *                     disposition it replaced, raises again
 *      thread         no handler; the signal happens in a second thread
 *      query          what sigaction()/signal() report back; exits 0
 *      quick_exit     no signal: quick_exit(3) after an at_quick_exit handler
 *      thread_exit    no signal: exit(4) from a second thread */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda.h>

static int sig;
static const char *sig_name;
static struct sigaction replaced;

static void say(const char *s)
{
    ssize_t w = write(1, s, strlen(s));
    (void)w;
}

static void generate(void)
{
    if (sig == SIGSEGV) {
        /* a page with no access: a real fault, and no undefined behaviour to a sanitizer */
        volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            _exit(91);
        *page = 1;
    } else if (sig == SIGBUS) {
        char path[] = "/tmp/wslshim-sigbus-XXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            _exit(90);
        p[0] = 1; /* the file is empty: SIGBUS */
    } else if (sig == SIGABRT) {
        abort();
    } else {
        kill(getpid(), sig);
    }
}

static void on_signal_info(int s, siginfo_t *info, void *uc)
{
    (void)uc;
    char buf[128];
    snprintf(buf, sizeof buf, "handler(siginfo) %s: signo=%d matches=%d\n", sig_name, info->si_signo, s == sig);
    say(buf);
    _exit(40);
}

static void on_signal_plain(int s)
{
    char buf[96];
    snprintf(buf, sizeof buf, "handler(signal) %s: matches=%d\n", sig_name, s == sig);
    say(buf);
    _exit(41);
}

static void on_signal_return(int s)
{
    (void)s;
    say("handler(resethand) returns\n");
}

static void on_signal_reraise(int s)
{
    say("handler(reraise) puts the old disposition back\n");
    sigaction(s, &replaced, NULL);
    if (s != SIGSEGV && s != SIGBUS)
        raise(s);
}

static void *thread_generate(void *arg)
{
    (void)arg;
    generate();
    return NULL;
}

static void *thread_exit(void *arg)
{
    (void)arg;
    say("exit from a thread\n");
    exit(4);
}

static void at_qe(void) { say("at_quick_exit handler\n"); }

static int query(void)
{
    struct sigaction cur, mine, back;
    sigaction(sig, NULL, &cur);
    printf("initial: %s flags_siginfo=%d\n", cur.sa_handler == SIG_DFL ? "SIG_DFL" : cur.sa_handler == SIG_IGN ? "SIG_IGN" : "other",
           !!(cur.sa_flags & SA_SIGINFO));
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_signal_info;
    mine.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&mine.sa_mask);
    sigaddset(&mine.sa_mask, SIGUSR1);
    if (sigaction(sig, &mine, NULL) != 0)
        return 10;
    sigaction(sig, NULL, &back);
    printf("set: mine=%d flags_equal=%d usr1_masked=%d usr2_masked=%d\n", back.sa_sigaction == on_signal_info,
           (back.sa_flags & (SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_RESETHAND | SA_NODEFER)) ==
               (SA_SIGINFO | SA_RESTART | SA_ONSTACK),
           sigismember(&back.sa_mask, SIGUSR1), sigismember(&back.sa_mask, SIGUSR2));
    sighandler_t prev = signal(sig, on_signal_plain);
    printf("signal() returned the previous: %d\n", (uintptr_t)prev == (uintptr_t)on_signal_info);
    sigaction(sig, NULL, &back);
    printf("after signal(): plain=%d siginfo=%d\n", back.sa_handler == on_signal_plain, !!(back.sa_flags & SA_SIGINFO));
    prev = signal(sig, SIG_IGN);
    printf("ign: prev_plain=%d\n", prev == on_signal_plain);
    sigaction(sig, NULL, &back);
    printf("now: ign=%d\n", back.sa_handler == SIG_IGN);
    if (sig == SIGTERM || sig == SIGINT) {
        kill(getpid(), sig);
        printf("ignored %s survived\n", sig_name);
    }
    prev = signal(sig, SIG_DFL);
    printf("dfl: prev_ign=%d\n", prev == SIG_IGN);
    errno = 0;
    printf("signal(0): err=%d, sigaction(SIGKILL) with a handler: %d\n", signal(0, SIG_IGN) == SIG_ERR,
           sigaction(SIGKILL, &mine, NULL));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    sig_name = argv[1];
    sig = !strcmp(argv[1], "SEGV") ? SIGSEGV : !strcmp(argv[1], "BUS") ? SIGBUS : !strcmp(argv[1], "ABRT") ? SIGABRT
        : !strcmp(argv[1], "TERM") ? SIGTERM : !strcmp(argv[1], "INT") ? SIGINT : 0;
    const char *how = argv[2];
    int n = argc > 3 ? atoi(argv[3]) : 1000;
    if (!sig)
        return 2;
    if (cuInit(0) != CUDA_SUCCESS)
        return 3;
    for (int i = 0; i < n; i++)
        cuCtxSynchronize();
    setvbuf(stdout, NULL, _IONBF, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (!strcmp(how, "dfl")) {
        generate();
    } else if (!strcmp(how, "ign")) {
        signal(sig, SIG_IGN);
        generate();
        say("survived\n");
        return 0;
    } else if (!strcmp(how, "handler_exit")) {
        sa.sa_sigaction = on_signal_info;
        sa.sa_flags = SA_SIGINFO;
        sigaction(sig, &sa, NULL);
        generate();
    } else if (!strcmp(how, "signal_exit")) {
        signal(sig, on_signal_plain);
        generate();
    } else if (!strcmp(how, "resethand")) {
        sa.sa_handler = on_signal_return;
        sa.sa_flags = SA_RESETHAND;
        sigaction(sig, &sa, NULL);
        generate();
        say("after the first signal\n");
        struct sigaction now;
        sigaction(sig, NULL, &now);
        if (now.sa_handler != SIG_DFL)
            say("not reset to SIG_DFL\n");
        generate();
    } else if (!strcmp(how, "reraise")) {
        sa.sa_handler = on_signal_reraise;
        sigaction(sig, &sa, &replaced);
        generate();
    } else if (!strcmp(how, "thread")) {
        pthread_t th;
        pthread_create(&th, NULL, thread_generate, NULL);
        pthread_join(th, NULL);
        pause();
    } else if (!strcmp(how, "query")) {
        return query();
    } else if (!strcmp(how, "quick_exit")) {
        at_quick_exit(at_qe);
        quick_exit(3);
    } else if (!strcmp(how, "thread_exit")) {
        pthread_t th;
        pthread_create(&th, NULL, thread_exit, NULL);
        for (;;)
            pause();
    } else {
        return 2;
    }
    say("still running\n");
    return 0;
}
