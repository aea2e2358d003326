/*
 * Does the program have threads of its own? (The shim's writer thread does not count.)
 *
 * glibc makes every blocking call that is a cancellation point (read, open,
 * close...) do its cancellation bookkeeping, two locked instructions around the
 * system call, once a process has ever had a second thread; a single-threaded
 * process skips it. The shim's writer thread would turn that on in every
 * single-threaded program: about 20 ns more per read() of 4 KiB, 7-10% of a
 * page-cached one (docs/overhead.md). So while the program has no thread of its
 * own, the file hooks make those calls as glibc makes them in a single-threaded
 * process, the system call alone (hooks/io/), and the program sees what it
 * would see without the shim: the same results and errno, and no cancellation
 * point acted on there, as glibc acts on none in a single-threaded process.
 *
 * "No thread of its own": glibc said the process was single-threaded before
 * the shim's writer first started (__libc_single_threaded, sampled once per
 * program, inherited by forked children), and no call since has asked glibc for
 * a thread: pthread_create and thrd_create, and the calls whose glibc helper
 * threads run the program's code (timer_create and mq_notify with SIGEV_THREAD,
 * the aio family, getaddrinfo_a), all wrapped here, nor pthread_cancel (glibc
 * turns cancellation points on for a process that cancels itself). Any of them,
 * once, and the hooks call glibc as before, for good.
 *
 * Only where those functions would reach glibc's own: another library
 * preloaded after the shim that defines one of them (an interposer of its own:
 * a file-I/O profiler, a path rewriter) sees every call, as without the shim.
 */
#define _GNU_SOURCE
#include "shim_internal.h"

#include <aio.h>
#include <dlfcn.h>
#include <mqueue.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <threads.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define HAVE_SINGLE_THREADED 1
#endif
#endif

_Atomic int wsl_program_threads; /* WSL_PROGRAM_THREADS_* */
static WSL_TLS int creating_writer;

void wsl_note_program_threads(void)
{
    if (atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) != WSL_PROGRAM_THREADS_UNKNOWN)
        return;
    int state = WSL_PROGRAM_THREADS_MANY;
#if HAVE_SINGLE_THREADED && !WSL_TSAN && (defined(__x86_64__) || defined(__aarch64__))
    if (__libc_single_threaded) {
        const char *who;
        if (wsl_io_libc_is_next(&who)) {
            state = WSL_PROGRAM_THREADS_ONE;
            wsl_log(WSL_LOG_DEBUG, "single-threaded program: read, pread, open, openat and close are made as "
                                   "glibc makes them there, the system call alone");
        } else {
            wsl_log(WSL_LOG_DEBUG, "single-threaded program, but its file calls go on to %s after the shim: "
                                   "made through it, as without the shim", who);
        }
    }
#endif
    int unknown = WSL_PROGRAM_THREADS_UNKNOWN;
    atomic_compare_exchange_strong(&wsl_program_threads, &unknown, state);
}

void wsl_writer_thread_creating(int on) { creating_writer = on; }

__attribute__((noinline, cold)) long wsl_syscall_failed(long r)
{
    errno = (int)-r; /* as glibc's wrappers set it */
    return -1;
}

#if !defined(__x86_64__) && !defined(__aarch64__)
/* Elsewhere never called (wsl_program_threads never says ONE there), but hooks/io/ names it. */
long wsl_raw_syscall4(long nr, long a, long b, long c, long d) { return syscall(nr, a, b, c, d); }
#endif

static inline void program_threads(void)
{
    if (!creating_writer &&
        atomic_exchange_explicit(&wsl_program_threads, WSL_PROGRAM_THREADS_MANY, memory_order_relaxed) ==
            WSL_PROGRAM_THREADS_ONE)
        wsl_writer_share_table(); /* before the thread: the writer gives its own descriptor table up */
}

#define NEXT(type, name) ((type)wsl_real_dlsym(RTLD_NEXT, name))

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(pthread_create_fn) real_pthread_create; /* looked up once: programs make many threads */

WSL_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    program_threads();
    pthread_create_fn next = atomic_load_explicit(&real_pthread_create, memory_order_relaxed);
    if (!next) {
        next = NEXT(pthread_create_fn, "pthread_create");
        atomic_store_explicit(&real_pthread_create, next, memory_order_relaxed);
    }
    return next ? next(th, attr, fn, arg) : EAGAIN;
}

/* The program's one thread ends while the process goes on (the writer thread
 * then calls exit(0) in its place, shim/writer/writer.c): the writer shares the
 * program's descriptor table first, for the atexit handlers that flush the
 * program's files. thrd_exit is glibc's pthread_exit by an internal call. */
WSL_EXPORT void pthread_exit(void *ret)
{
    if (atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) == WSL_PROGRAM_THREADS_ONE)
        wsl_writer_share_table();
    void (*next)(void *) = NEXT(void (*)(void *), "pthread_exit");
    if (next)
        next(ret);
    syscall(SYS_exit, 0); /* no pthread_exit after the shim: the thread ends all the same */
    __builtin_unreachable();
}

WSL_EXPORT void thrd_exit(int res)
{
    if (atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) == WSL_PROGRAM_THREADS_ONE)
        wsl_writer_share_table();
    void (*next)(int) = NEXT(void (*)(int), "thrd_exit");
    if (next)
        next(res);
    syscall(SYS_exit, 0);
    __builtin_unreachable();
}

WSL_EXPORT int pthread_cancel(pthread_t th)
{
    program_threads();
    int (*next)(pthread_t) = NEXT(int (*)(pthread_t), "pthread_cancel");
    return next ? next(th) : ESRCH;
}

WSL_EXPORT int thrd_create(thrd_t *th, thrd_start_t fn, void *arg)
{
    program_threads();
    int (*next)(thrd_t *, thrd_start_t, void *) = NEXT(int (*)(thrd_t *, thrd_start_t, void *), "thrd_create");
    return next ? next(th, fn, arg) : thrd_error;
}

WSL_EXPORT int timer_create(clockid_t clock, struct sigevent *sev, timer_t *timer)
{
    if (sev && sev->sigev_notify == SIGEV_THREAD)
        program_threads();
    int (*next)(clockid_t, struct sigevent *, timer_t *) =
        NEXT(int (*)(clockid_t, struct sigevent *, timer_t *), "timer_create");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    return next(clock, sev, timer);
}

WSL_EXPORT int mq_notify(mqd_t mq, const struct sigevent *sev)
{
    if (sev && sev->sigev_notify == SIGEV_THREAD)
        program_threads();
    int (*next)(mqd_t, const struct sigevent *) = NEXT(int (*)(mqd_t, const struct sigevent *), "mq_notify");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    return next(mq, sev);
}

/* glibc's aio runs requests on helper threads. */
#define AIO_WRAP(ret, name, params, args)                                                   \
    WSL_EXPORT ret name params                                                              \
    {                                                                                       \
        program_threads();                                                                  \
        ret(*next) params = NEXT(ret(*) params, #name);                                     \
        if (!next) {                                                                        \
            errno = ENOSYS;                                                                 \
            return -1;                                                                      \
        }                                                                                   \
        return next args;                                                                   \
    }
AIO_WRAP(int, aio_read, (struct aiocb * cb), (cb))
AIO_WRAP(int, aio_write, (struct aiocb * cb), (cb))
AIO_WRAP(int, aio_fsync, (int op, struct aiocb *cb), (op, cb))
AIO_WRAP(int, lio_listio, (int mode, struct aiocb *const list[], int n, struct sigevent *sev), (mode, list, n, sev))
AIO_WRAP(int, aio_read64, (struct aiocb64 * cb), (cb))
AIO_WRAP(int, aio_write64, (struct aiocb64 * cb), (cb))
AIO_WRAP(int, aio_fsync64, (int op, struct aiocb64 *cb), (op, cb))
AIO_WRAP(int, lio_listio64, (int mode, struct aiocb64 *const list[], int n, struct sigevent *sev),
         (mode, list, n, sev))

WSL_EXPORT int getaddrinfo_a(int mode, struct gaicb *list[], int n, struct sigevent *sev)
{
    program_threads();
    int (*next)(int, struct gaicb *[], int, struct sigevent *) =
        NEXT(int (*)(int, struct gaicb *[], int, struct sigevent *), "getaddrinfo_a");
    return next ? next(mode, list, n, sev) : EAI_SYSTEM;
}
