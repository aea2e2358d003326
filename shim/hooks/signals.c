/*
 * Fatal and terminating signals: SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT, SIGPIPE
 * (a write to a pipe whose reader has gone: `prog | head -1`).
 *
 * The shim's handler stays installed for these signals whatever the program
 * does: sigaction() and signal() are interposed so that the program's own
 * disposition is stored here and handed back exactly as it set it, while the
 * kernel keeps calling the shim's handler (with the program's mask and flags,
 * SA_SIGINFO added). The handler then does what the program's disposition
 * says:
 *   - a function: call it (with or without siginfo, as the program asked;
 *     SA_RESETHAND resets the stored disposition to SIG_DFL first, as the
 *     kernel would);
 *   - SIG_DFL: the process is about to die. Ask the writer thread to write
 *     out what it has and end the trace (a futex handshake, bounded wait: no
 *     lock, no allocation here), then put SIG_DFL in the kernel and send the
 *     same signal with the same siginfo to this thread: exit status and core
 *     dump are what they would have been without the shim.
 *   - SIG_IGN: the kernel itself ignores it (installed as SIG_IGN).
 * A program that exits by _exit() from its own handler is covered by the
 * _exit hook, which uses the same lock-free flush.
 *
 * Not covered: a program that installs handlers through the raw rt_sigaction
 * system call (not through libc), and SIGKILL (nothing can run; the trace
 * reads up to its last frame). WSLSHIM_SIGNALS=0 leaves signals alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim_internal.h"

#define FINAL_FLUSH_TIMEOUT_MS 2000u

static const int managed_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT, SIGPIPE};
#define N_MANAGED (sizeof managed_signals / sizeof managed_signals[0])

/* The program's view of each managed signal. Updated under `update_lock`
 * with every signal blocked in the updating thread; read by the handler under
 * a sequence count (it never waits on a lock a signal could interrupt). */
struct app_disposition {
    struct sigaction act;
};
static struct app_disposition app[N_MANAGED];
static _Atomic uint32_t app_seq;
static _Atomic int update_lock;
static _Atomic int signals_state; /* 0 not yet, 1 setting up, 2 active, 3 off */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static _Atomic sigaction_fn real_sigaction_fn; /* threads may race to resolve it: same answer */

/* Uninstrumented under TSan: its runtime installs its own handlers through
 * here while it starts (shim_internal.h). */
static WSL_NO_TSAN int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn f = atomic_load_explicit(&real_sigaction_fn, memory_order_relaxed);
    if (!f) {
        f = (sigaction_fn)wsl_real_dlsym(RTLD_NEXT, "sigaction");
        atomic_store_explicit(&real_sigaction_fn, f, memory_order_relaxed);
    }
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(sig, act, old);
}

/* signal(), bsd_signal(), sysv_signal() as libc has them. */
static WSL_NO_TSAN sighandler_t real_set_handler(const char *real_name, int sig, sighandler_t handler)
{
    sighandler_t (*real)(int, sighandler_t) = (sighandler_t(*)(int, sighandler_t))wsl_real_dlsym(RTLD_NEXT, real_name);
    if (!real) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return real(sig, handler);
}

static int managed_index(int sig)
{
    for (unsigned i = 0; i < N_MANAGED; i++)
        if (managed_signals[i] == sig)
            return (int)i;
    return -1;
}

static void shim_handler(int sig, siginfo_t *info, void *uc);

/* abort() kills even when SIGABRT is ignored or its handler returns (glibc
 * then puts SIG_DFL back by itself, unseen): the abort hook marks the thread so
 * that the handler flushes first. */
static WSL_TLS int tls_in_abort;

/* SIGSEGV and SIGBUS from a fault kill even when ignored, and abort() kills
 * whatever SIGABRT's disposition: for these the shim's handler stays in even
 * for SIG_IGN, and ignores what the kernel would have ignored. */
static int ignored_may_kill(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT; }

/* What the kernel gets for the program's disposition `a` of `sig`. */
static void kernel_action(int sig, const struct sigaction *a, struct sigaction *k)
{
    if (a->sa_handler == SIG_IGN && !ignored_may_kill(sig)) {
        *k = *a; /* ignored: the kernel drops it, nothing to flush */
        return;
    }
    memset(k, 0, sizeof *k);
    k->sa_sigaction = shim_handler;
    if (a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN) {
        /* SA_RESTART: an ignored signal interrupts no system call. */
        sigemptyset(&k->sa_mask);
        k->sa_flags = SA_SIGINFO | SA_ONSTACK | (a->sa_handler == SIG_IGN ? SA_RESTART : 0);
        return;
    }
    k->sa_mask = a->sa_mask;
    k->sa_flags = a->sa_flags | SA_SIGINFO;
}

static void lock_updates(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
    int expect = 0;
    while (!atomic_compare_exchange_weak_explicit(&update_lock, &expect, 1, memory_order_acquire,
                                                  memory_order_relaxed))
        expect = 0;
}

static void unlock_updates(const sigset_t *old)
{
    atomic_store_explicit(&update_lock, 0, memory_order_release);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Sets the stored disposition; update_lock held. */
static void app_store(int i, const struct sigaction *a)
{
    atomic_fetch_add_explicit(&app_seq, 1, memory_order_acq_rel); /* odd: being written */
    app[i].act = *a;
    atomic_fetch_add_explicit(&app_seq, 1, memory_order_acq_rel);
}

static void app_load(int i, struct sigaction *a)
{
    for (;;) {
        uint32_t s = atomic_load_explicit(&app_seq, memory_order_acquire);
        if (s & 1)
            continue;
        *a = app[i].act;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&app_seq, memory_order_relaxed) == s)
            return;
    }
}

/* Takes over the managed signals once: what was there (an earlier library's
 * handler, or SIG_IGN inherited across exec) becomes the program's stored
 * disposition. */
static void signals_ensure(void)
{
    if (atomic_load_explicit(&signals_state, memory_order_acquire) >= 2)
        return;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&signals_state, &expect, 1)) {
        while (atomic_load_explicit(&signals_state, memory_order_acquire) < 2)
            ;
        return;
    }
    const char *v = wsl_getenv("WSLSHIM_SIGNALS");
    if (v && !strcmp(v, "0")) {
        atomic_store_explicit(&signals_state, 3, memory_order_release);
        return;
    }
    sigset_t old;
    lock_updates(&old);
    for (unsigned i = 0; i < N_MANAGED; i++) {
        struct sigaction cur, k;
        if (real_sigaction(managed_signals[i], NULL, &cur) != 0) {
            memset(&cur, 0, sizeof cur);
            cur.sa_handler = SIG_DFL;
        }
        app_store((int)i, &cur);
        if (cur.sa_handler == SIG_IGN && !ignored_may_kill(managed_signals[i]))
            continue;
        kernel_action(managed_signals[i], &cur, &k);
        real_sigaction(managed_signals[i], &k, NULL);
    }
    unlock_updates(&old);
    atomic_store_explicit(&signals_state, 2, memory_order_release);
}

void wsl_signals_init(void) { signals_ensure(); }

static int signals_active(void)
{
    signals_ensure();
    return atomic_load_explicit(&signals_state, memory_order_acquire) == 2;
}

/* ---- the handler ----------------------------------------------------------------------- */

/* The process dies of `sig` as it would have without the shim: the kernel's
 * default action, with the original siginfo (kept in a core dump). */
static void die_as_default(int sig, siginfo_t *info)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(sig, &dfl, NULL);
    pid_t pid = getpid();
    long tid = syscall(SYS_gettid);
    if (!info || syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, info) != 0)
        syscall(SYS_tgkill, pid, tid, sig);
    /* Pending and blocked while this handler runs: delivered on return. In
     * case this handler was entered with the signal unblocked (SA_NODEFER),
     * it has been delivered already and this line is not reached. */
}

static void shim_handler(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    int i = managed_index(sig);
    struct sigaction a;
    if (i < 0) {
        errno = saved;
        return;
    }
    app_load(i, &a);
    if (a.sa_handler == SIG_DFL) {
        wsl_writer_keep_trace(); /* a signal ended it: never a helper to drop */
        wsl_writer_final_flush(FINAL_FLUSH_TIMEOUT_MS);
        die_as_default(sig, info);
        errno = saved;
        return;
    }
    if (a.sa_handler == SIG_IGN) {
        if ((sig == SIGSEGV || sig == SIGBUS) && info && info->si_code > 0) {
            /* A fault: the kernel would have forced the default action. */
            wsl_writer_keep_trace(); /* a signal ended it: never a helper to drop */
            wsl_writer_final_flush(FINAL_FLUSH_TIMEOUT_MS);
            die_as_default(sig, info);
        } else if (sig == SIGABRT && tls_in_abort) {
            wsl_writer_keep_trace(); /* a signal ended it: never a helper to drop */
            wsl_writer_final_flush(FINAL_FLUSH_TIMEOUT_MS); /* abort() kills next */
        }
        errno = saved;
        return;
    }
    if (a.sa_flags & SA_RESETHAND) {
        /* The kernel reset its entry to SIG_DFL (the flag was passed on):
         * the program's view follows, and the shim's handler goes back in so
         * that a second signal still flushes before the default action. */
        struct sigaction dfl, k;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigset_t old;
        lock_updates(&old);
        app_store(i, &dfl);
        kernel_action(sig, &dfl, &k);
        real_sigaction(sig, &k, NULL);
        unlock_updates(&old);
    }
    errno = saved;
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, info, uc);
    else
        a.sa_handler(sig);
    if (sig == SIGABRT && tls_in_abort) {
        /* The program's handler returned inside abort(), which kills next. */
        saved = errno;
        wsl_writer_keep_trace(); /* a signal ended it: never a helper to drop */
        wsl_writer_final_flush(FINAL_FLUSH_TIMEOUT_MS);
        errno = saved;
    }
}

WSL_EXPORT void abort(void)
{
    void (*real)(void) = (void (*)(void))wsl_real_dlsym(RTLD_NEXT, "abort");
    tls_in_abort = 1;
    if (real)
        real();
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGKILL); /* never reached */
    __builtin_unreachable();
}

/* ---- the interposed calls ------------------------------------------------------------------ */

WSL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
    if (!wsl_tsan_up())
        return real_sigaction(sig, act, oldact);
    int i = managed_index(sig);
    if (i < 0 || !signals_active())
        return real_sigaction(sig, act, oldact);
    if (wsl_exec_in_vfork_child()) {
        /* Shares the parent's memory but not its kernel table: the stored
         * dispositions stay the parent's. */
        struct sigaction prev;
        app_load(i, &prev);
        int r = real_sigaction(sig, act, NULL);
        if (r == 0 && oldact)
            *oldact = prev;
        return r;
    }
    sigset_t old;
    lock_updates(&old);
    struct sigaction prev;
    app_load(i, &prev);
    int r = 0;
    if (act) {
        struct sigaction k;
        kernel_action(sig, act, &k);
        r = real_sigaction(sig, &k, NULL);
        if (r == 0) {
            app_store(i, act);
        }
    }
    int err = errno;
    unlock_updates(&old);
    if (r == 0 && oldact)
        *oldact = prev;
    errno = err;
    return r;
}

static sighandler_t set_handler(int sig, sighandler_t handler, int flags, int mask_self, const char *real_name)
{
    int i = managed_index(sig);
    if (i < 0 || !signals_active())
        return real_set_handler(real_name, sig, handler);
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (mask_self)
        sigaddset(&act.sa_mask, sig);
    act.sa_flags = flags;
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* glibc's signal() has BSD semantics: restarting calls, the signal blocked in its handler. */
WSL_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    if (!wsl_tsan_up())
        return real_set_handler("signal", sig, handler);
    return set_handler(sig, handler, SA_RESTART, 1, "signal");
}

WSL_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
    if (!wsl_tsan_up())
        return real_set_handler("bsd_signal", sig, handler);
    return set_handler(sig, handler, SA_RESTART, 1, "bsd_signal");
}

/* System V semantics: reset to default on delivery, not blocked in the handler. */
WSL_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
    if (!wsl_tsan_up())
        return real_set_handler("sysv_signal", sig, handler);
    return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, 0, "sysv_signal");
}
