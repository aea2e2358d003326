/*
 * Waits on descriptors: poll and ppoll (and their fortified forms). A program
 * that takes its data from other processes (a PyTorch DataLoader's workers: a
 * multiprocessing queue's get() polls the pipe, then reads what is ready)
 * spends its wait here, not in the read that follows; the report's
 * dataloader_wait counts the launching thread's waits on pipes and sockets
 * (docs/io.md). Always timed, an event each (WSL_CAT_IO_WAIT): the first
 * descriptor polled and its path id (0: a pipe, a socket, an fd not seen
 * opened), how many were polled, the timeout, how many were ready.
 *
 * Waits on semaphores: sem_wait, sem_timedwait and sem_clockwait. A Python
 * queue.Queue.get() that blocks waits in one (CPython's locks are semaphores):
 * a DataLoader with pin_memory=True hands each batch from its pin-memory
 * thread (which polls the workers' pipe) to the training loop through such a
 * queue, so the loop's wait for data is a semaphore wait, not a poll. Always
 * timed, an event each (WSL_CAT_IO_WAIT, told apart by the id): stream -1,
 * a0 0, a1 0, a2 the clock of a timed wait (-1: none), a3 0. Only a wait that
 * blocks reaches these: CPython tries the lock first without waiting.
 *
 * Nothing the caller passed is read before the call: the pollfd array only
 * once the call succeeded (the kernel read all of it then), ppoll's timeout
 * only then too (glibc read it before the system call); a semaphore never.
 */
#define _GNU_SOURCE

#include <semaphore.h>

#include "io_hooks.h"

/* ThreadSanitizer builds: a program's poll or semaphore wait reaches these hooks from inside TSan's
 * blocking interceptor (libtsan is preloaded first), where TSan does not see the synchronization of
 * atomics; the ring's hand-over declares its own (wsl_ring_commit_tsan), the thread's set-up does not,
 * so a thread not set up yet passes through here (its later calls set it up). */
#if WSL_TSAN
static inline struct wsl_thread *wait_enter(void)
{
    struct wsl_thread *t = wsl_tls_thread;
    if (t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)) /* never NULL */
        return NULL;
    return io_enter();
}
#else
#define wait_enter io_enter
#endif

/* The call, timed, into r (its errno in err), in t; straight through when not recorded. */
#define WAIT_CALL(call)                                                                    \
    if (!wsl_tsan_up())                                                                    \
        return call;                                                                       \
    struct wsl_thread *t = wait_enter();                                                   \
    if (!t)                                                                                \
        return call;                                                                       \
    int timed_ = 1;                                                                        \
    IO_CALL_TIMED(int, r, call)                                                            \
    int err = errno;

#define WAIT_HOOK(api, fds, nfds, timeout_ms, call)                                       \
    WAIT_CALL(call)                                                                        \
    int fd_ = r >= 0 && (nfds) > 0 ? (fds)[0].fd : -1;                                     \
    uint64_t info_ = fd_ >= 0 ? info_of_fd(fd_) : 0;                                       \
    io_record(t, api, t0, t1, r < 0, err, fd_, (uint32_t)info_, (uint64_t)(nfds),         \
              (uint64_t)(int64_t)(r >= 0 ? (timeout_ms) : -2), r > 0 ? (uint64_t)r : 0);  \
    errno = err;                                                                           \
    return r;

/* ppoll's timeout in ms (-1: none); read only after a successful call */
static int64_t ts_ms(const struct timespec *ts)
{
    return ts ? (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000 : -1;
}

WSL_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    WAIT_HOOK(WSL_IO_ID_poll, fds, nfds, timeout, REAL(poll)(fds, nfds, timeout))
}
WSL_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
    WAIT_HOOK(WSL_IO_ID___poll_chk, fds, nfds, timeout, REAL(__poll_chk)(fds, nfds, timeout, fdslen))
}
WSL_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask)
{
    WAIT_HOOK(WSL_IO_ID_ppoll, fds, nfds, ts_ms(tmo), REAL(ppoll)(fds, nfds, tmo, mask))
}
WSL_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *mask,
                           size_t fdslen)
{
    WAIT_HOOK(WSL_IO_ID___ppoll_chk, fds, nfds, ts_ms(tmo), REAL(__ppoll_chk)(fds, nfds, tmo, mask, fdslen))
}

#define SEM_HOOK(api, clock, call)                                                         \
    WAIT_CALL(call)                                                                        \
    io_record(t, api, t0, t1, r != 0, err, -1, 0, 0, (uint64_t)(int64_t)(clock), 0);       \
    errno = err;                                                                           \
    return r;

WSL_EXPORT int sem_wait(sem_t *sem)
{
    SEM_HOOK(WSL_IO_ID_sem_wait, -1, REAL(sem_wait)(sem))
}
WSL_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
    SEM_HOOK(WSL_IO_ID_sem_timedwait, CLOCK_REALTIME, REAL(sem_timedwait)(sem, abstime))
}
WSL_EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
    SEM_HOOK(WSL_IO_ID_sem_clockwait, clock, REAL(sem_clockwait)(sem, clock, abstime))
}
