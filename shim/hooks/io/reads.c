/*
 * Reads: read, pread, their fortified, vectored and 64-bit forms, stdio's
 * fread, fgets and getline, and mmap of files. read and pread have fast twins
 * (READ_ST_HOOK: a single-threaded program; READ_MT_HOOK: one with threads)
 * whose common case, an untimed read on a local file folded into the thread's
 * fold, calls nothing out of line.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/sendfile.h>

#include "fold.h"

/* ---- reads ------------------------------------------------------------------------------- */
/* Any other untimed read on a local file: folded into a new slot, or, failed
 * or asking for nothing, an event of its own. errno is the call's. */
static __attribute__((noinline)) void io_read_untimed(struct wsl_thread *t, unsigned api, int fd, uint32_t path,
                                                      uint64_t ask, ssize_t r, uint64_t off)
{
    io_record_read(t, api, 0, 0, r < 0, r < 0 ? errno : 0, fd, path, ask, r > 0 ? (uint64_t)r : 0, off);
}

/* io_read_untimed for READ_MT_HOOK, from the fold's key of the file; returns r. */
static __attribute__((noinline)) ssize_t io_read_untimed_file(struct wsl_thread *t, unsigned api, uint64_t file,
                                                              uint64_t ask, ssize_t r, uint64_t off)
{
    io_read_untimed(t, api, (int)(uint32_t)file, (uint32_t)(file >> 32), ask, r, off);
    return r;
}

/* A read-like call returning ssize_t: bytes asked `ask`, offset `off`. The
 * untimed call on a local file (all but 1 in WSLSHIM_IO_TIMING of them) comes
 * first, and its common case, folded into the slot of the call before, is
 * inline; the rest (timed calls, new slots, failures) as IO_TIMED_CALL. */
#define READ_HOOK(api, fd, ask, off, call)                                                 \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    if (WSL_LIKELY(info_ & FD_LOCAL) && WSL_LIKELY(--t->io_countdown != 0)) {              \
        ssize_t r = call;                                                                  \
        if (WSL_LIKELY(r >= 0 && (ask) != 0) &&                                            \
            WSL_LIKELY(io_fold_fast(t, (api) + WSL_IO_SAMPLED, fd, (uint32_t)info_, (uint64_t)r))) { \
            wsl_tls_depth = 0;                                                             \
            return r;                                                                      \
        }                                                                                  \
        io_read_untimed(t, (api) + WSL_IO_SAMPLED, fd, (uint32_t)info_, ask, r, off);     \
        return r;                                                                          \
    }                                                                                      \
    unsigned off_ = 0;                                                                     \
    if (info_ & FD_LOCAL) {                                                                \
        off_ = WSL_IO_SAMPLED;                                                             \
        t->io_countdown = io_gap(t); /* this is the one in N to time */                   \
    }                                                                                      \
    int timed_ = 1;                                                                        \
    IO_CALL_TIMED_EMU(ssize_t, r, call, EMU_FD_BYTES(info_, 0, r > 0 ? (uint64_t)r : 0))   \
    /* The recording path leaves errno alone (its slow paths restore it). */               \
    io_record_read(t, (api) + off_, t0, t1, r < 0, r < 0 ? errno : 0, fd, (uint32_t)info_, ask, \
                   r > 0 ? (uint64_t)r : 0, off);                                          \
    return r;

/* The rest of an untimed read on a local file made by the fast twin: r is the
 * kernel's answer (-errno on failure), returned as glibc would. */
static __attribute__((noinline)) ssize_t io_read_untimed_kernel(struct wsl_thread *t, unsigned api, int fd,
                                                                uint32_t path, uint64_t ask, long r, uint64_t off)
{
    if (r < 0) {
        io_record_read(t, api, 0, 0, 1, (int)-r, fd, path, ask, 0, off);
        errno = (int)-r;
        return -1;
    }
    io_record_read(t, api, 0, 0, 0, 0, fd, path, ask, (uint64_t)r, off);
    return r;
}

/* io_read_untimed_kernel, from a fast twin that marked the thread busy rather
 * than raising its depth (READ_ST_HOOK); its arguments mostly in the registers
 * they are in already there (x86-64: ask, t and file stay where the system
 * call had them), the fd taken from file (WSL_FOLD_FILE), so that the fast
 * path keeps one register fewer past the system call (noipa: GCC would
 * otherwise drop or reorder its arguments). */
static __attribute__((noinline, noipa)) ssize_t io_read_untimed_busy(uint64_t off, unsigned api, uint64_t ask, long r,
                                                              struct wsl_thread *t, uint64_t file)
{
    wsl_tls_depth = 1;
    t->gen &= ~WSL_GEN_BUSY;
    return io_read_untimed_kernel(t, api, (int)(uint32_t)file, (uint32_t)(file >> 32), ask, r, off);
}

/* A read in a single-threaded program (PROGRAM_ST): its common case, an
 * untimed read on a local file folded into the thread's fold, makes no call at
 * all (the system call inline), and keeps what it needs past the system call
 * in registers the call leaves alone, so it saves none; everything else goes
 * to the full hook, `full`, as a tail call, and what follows a read that does
 * not fold to io_read_untimed_kernel. */
#define READ_ST_HOOK(api, fd, ask, off, nr, a3, full)                                      \
    struct wsl_thread *t = wsl_tls.thread;                                                 \
    if (WSL_UNLIKELY(wsl_tls.depth || /* t never NULL */                                                \
                     t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)))   \
        return IO_OFF() && !wsl_tls.depth                                                  \
                   ? st_kernel_result(st_syscall4_kernel(nr, fd, (long)buf, (long)(ask), (long)(a3))) \
                   : full;                                                                 \
    uint64_t info_ = info_of_fd(fd);                                                       \
    if (WSL_UNLIKELY(!(info_ & FD_LOCAL) || !io_countdown_untimed(t)))                     \
        return full; /* a call to time, or not on a local file */                          \
    uint64_t tv_ = (uintptr_t)t, file_ = WSL_FOLD_FILE(fd, (uint32_t)info_);               \
    long r = st_syscall4_keeping(nr, fd, (long)buf, (long)(ask), (long)(a3), &tv_, &file_); \
    t = (struct wsl_thread *)(uintptr_t)tv_;                                               \
    /* Busy from here: a signal handler's calls when the system call returns (where \
     * most signals are taken) are recorded, and the fold is read after them. */           \
    t->gen |= WSL_GEN_BUSY;                                                                \
    if (WSL_LIKELY(r >= 0 && (ask) != 0) &&                                                \
        WSL_LIKELY(io_fold_fast_file(t, (api) + WSL_IO_SAMPLED, file_, (uint64_t)r))) {    \
        t->gen &= ~WSL_GEN_BUSY;                                                           \
        return r;                                                                          \
    }                                                                                      \
    return io_read_untimed_busy(off, (api) + WSL_IO_SAMPLED, ask, r, t, file_);

/* A read in a program with threads: its common case, an untimed read on a
 * local file folded into the thread's fold, calls the real function with the
 * arguments as they came and saves only what the fold needs past the call;
 * everything else goes to the full hook, `full`, as a tail call. */
#define READ_MT_HOOK(api, fd, ask, off, name, args, full)                                  \
    struct wsl_thread *t = wsl_tls.thread;                                                 \
    __typeof__(wsl_io_real.name) real_ = REAL_SLOT(name);                                 \
    if (WSL_UNLIKELY(wsl_tls.depth || /* t never NULL */ !real_ ||                                      \
                     t->gen != atomic_load_explicit(&wsl_io_gen, memory_order_relaxed)))   \
        return full;                                                                       \
    uint64_t info_ = info_of_fd(fd);                                                       \
    if (WSL_UNLIKELY(!(info_ & FD_LOCAL) || !io_countdown_untimed(t)))                     \
        return full; /* a call to time, or not on a local file */                          \
    uint64_t file_ = WSL_FOLD_FILE(fd, (uint32_t)info_);                                   \
    uint64_t ask_ = (ask);                                                                 \
    wsl_tls.depth = 1;                                                                     \
    ssize_t r = real_ args;                                                                \
    if (WSL_LIKELY(r >= 0 && ask_ != 0) &&                                                 \
        WSL_LIKELY(io_fold_fast_file(t, (api) + WSL_IO_SAMPLED, file_, (uint64_t)r))) {    \
        wsl_tls.depth = 0;                                                                 \
        return r;                                                                          \
    }                                                                                      \
    return io_read_untimed_file(t, (api) + WSL_IO_SAMPLED, file_, ask_, r, off);

static __attribute__((noinline)) ssize_t read_st_full(int fd, void *buf, size_t n)
{
    READ_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, st_read(fd, buf, n))
}
/* inline in the exported read below: its twin's choice and the fast path one
 * function, read_mt a tail call (a jump fewer per read) */
static inline __attribute__((always_inline)) ssize_t read_st(int fd, void *buf, size_t n)
{
    READ_ST_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, SYS_read, 0, read_st_full(fd, buf, n))
}
static __attribute__((noinline)) ssize_t read_mt_full(int fd, void *buf, size_t n)
{
    READ_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, REAL(read)(fd, buf, n))
}
static __attribute__((noinline)) ssize_t read_mt(int fd, void *buf, size_t n)
{
    READ_MT_HOOK(WSL_IO_ID_read, fd, n, NO_OFFSET, read, (fd, buf, n), read_mt_full(fd, buf, n))
}
WSL_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    if (PROGRAM_ST())
        return read_st(fd, buf, n);
    return read_mt(fd, buf, n);
}
WSL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    READ_HOOK(WSL_IO_ID___read_chk, fd, n, NO_OFFSET, REAL(__read_chk)(fd, buf, n, buflen))
}
/* pread and pread64 (name, its id, the offset's type): the twins and the export */
#define PREAD_TWINS(name, api, off_type)                                                   \
    static __attribute__((noinline)) ssize_t name##_st_full(int fd, void *buf, size_t n, off_type off) \
    {                                                                                      \
        READ_HOOK(api, fd, n, (uint64_t)off, st_pread(fd, buf, n, (off_t)off))             \
    }                                                                                      \
    static __attribute__((noinline)) ssize_t name##_st(int fd, void *buf, size_t n, off_type off) \
    {                                                                                      \
        READ_ST_HOOK(api, fd, n, (uint64_t)off, SYS_pread64, off, name##_st_full(fd, buf, n, off)) \
    }                                                                                      \
    static __attribute__((noinline)) ssize_t name##_mt_full(int fd, void *buf, size_t n, off_type off) \
    {                                                                                      \
        READ_HOOK(api, fd, n, (uint64_t)off, REAL(name)(fd, buf, n, off))                  \
    }                                                                                      \
    static __attribute__((noinline)) ssize_t name##_mt(int fd, void *buf, size_t n, off_type off) \
    {                                                                                      \
        READ_MT_HOOK(api, fd, n, (uint64_t)off, name, (fd, buf, n, off), name##_mt_full(fd, buf, n, off)) \
    }                                                                                      \
    WSL_EXPORT ssize_t name(int fd, void *buf, size_t n, off_type off)                     \
    {                                                                                      \
        if (PROGRAM_ST())                                                                  \
            return name##_st(fd, buf, n, off);                                             \
        return name##_mt(fd, buf, n, off);                                                 \
    }
PREAD_TWINS(pread, WSL_IO_ID_pread, off_t)
PREAD_TWINS(pread64, WSL_IO_ID_pread64, off64_t)
WSL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    READ_HOOK(WSL_IO_ID___pread_chk, fd, n, (uint64_t)off, REAL(__pread_chk)(fd, buf, n, off, buflen))
}
WSL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    READ_HOOK(WSL_IO_ID___pread64_chk, fd, n, (uint64_t)off, REAL(__pread64_chk)(fd, buf, n, off, buflen))
}


WSL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    READ_HOOK(WSL_IO_ID_readv, fd, iov_bytes(iov, cnt), NO_OFFSET, REAL(readv)(fd, iov, cnt))
}
WSL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    READ_HOOK(WSL_IO_ID_preadv, fd, iov_bytes(iov, cnt), (uint64_t)off, REAL(preadv)(fd, iov, cnt, off))
}
WSL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    READ_HOOK(WSL_IO_ID_preadv64, fd, iov_bytes(iov, cnt), (uint64_t)off, REAL(preadv64)(fd, iov, cnt, off))
}
WSL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    READ_HOOK(WSL_IO_ID_preadv2, fd, iov_bytes(iov, cnt), (uint64_t)off, REAL(preadv2)(fd, iov, cnt, off, flags))
}
WSL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    READ_HOOK(WSL_IO_ID_preadv64v2, fd, iov_bytes(iov, cnt), (uint64_t)off,
              REAL(preadv64v2)(fd, iov, cnt, off, flags))
}

/* stdio: the FILE's fd names the file; an error is what ferror reports. */
#define FREAD_HOOK(api, size, n, f, call)                                                  \
    int fd = stream_fd(f);                                                                 \
    IO_TIMED_CALL_EMU(size_t, r, fd, call, EMU_FD_BYTES(info_, 0, (uint64_t)r * (size)))   \
    int err = errno;                                                                       \
    int failed = r < (n) && f && ferror_unlocked(f);                                       \
    io_record_read(t, (api) + off_, t0, t1, failed, err, fd, (uint32_t)info_, (uint64_t)(size) * (n), \
              (uint64_t)r * (size), NO_OFFSET);                                            \
    errno = err;                                                                           \
    return r;

WSL_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
    FREAD_HOOK(WSL_IO_ID_fread, size, n, f, REAL(fread)(buf, size, n, f))
}
WSL_EXPORT size_t fread_unlocked(void *buf, size_t size, size_t n, FILE *f)
{
    FREAD_HOOK(WSL_IO_ID_fread_unlocked, size, n, f, REAL(fread_unlocked)(buf, size, n, f))
}
WSL_EXPORT size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *f)
{
    FREAD_HOOK(WSL_IO_ID___fread_chk, size, n, f, REAL(__fread_chk)(buf, buflen, size, n, f))
}

#define FGETS_HOOK(api, s, size, f, call)                                                  \
    int fd = stream_fd(f);                                                                 \
    IO_TIMED_CALL(char *, r, fd, call)                                                     \
    int err = errno;                                                                       \
    io_record_read(t, (api) + off_, t0, t1, !r && f && ferror_unlocked(f), err, fd, (uint32_t)info_, \
              (uint64_t)(size), r ? strlen(r) : 0, NO_OFFSET);                             \
    errno = err;                                                                           \
    return r;

WSL_EXPORT char *fgets(char *s, int size, FILE *f)
{
    FGETS_HOOK(WSL_IO_ID_fgets, s, size > 0 ? size : 0, f, REAL(fgets)(s, size, f))
}
WSL_EXPORT char *__fgets_chk(char *s, size_t buflen, int size, FILE *f)
{
    FGETS_HOOK(WSL_IO_ID___fgets_chk, s, size > 0 ? size : 0, f, REAL(__fgets_chk)(s, buflen, size, f))
}

#define GETDELIM_HOOK(api, f, call)                                                        \
    int fd = stream_fd(f);                                                                 \
    IO_TIMED_CALL(ssize_t, r, fd, call)                                                    \
    int err = errno;                                                                       \
    io_record_read(t, (api) + off_, t0, t1, r < 0 && f && ferror_unlocked(f), err, fd, (uint32_t)info_, 0, \
              r > 0 ? (uint64_t)r : 0, NO_OFFSET);                                         \
    errno = err;                                                                           \
    return r;

WSL_EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *f)
{
    GETDELIM_HOOK(WSL_IO_ID_getdelim, f, REAL(getdelim)(line, n, delim, f))
}
WSL_EXPORT ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f)
{
    GETDELIM_HOOK(WSL_IO_ID___getdelim, f, REAL(__getdelim)(line, n, delim, f))
}
/* stdio.h may define getline inline (calling __getdelim): the hook gets its
 * symbol name through an asm label so that every compiler exports it. */
WSL_EXPORT ssize_t wsl_io_getline(char **line, size_t *n, FILE *f) __asm__("getline");
WSL_EXPORT ssize_t wsl_io_getline(char **line, size_t *n, FILE *f)
{
    GETDELIM_HOOK(WSL_IO_ID_getline, f, REAL(getline)(line, n, f))
}

/* ---- copies in the kernel ----------------------------------------------------------------
 * sendfile and copy_file_range (cp, Python's shutil.copyfile and os.copy_file_range) move a
 * file's bytes without a read or a write in the program: each call is two events, timed, never
 * folded or sampled, a read on the source (its id: the bytes asked and copied, the offset) and a
 * write on the destination (WSL_ID_IO_COPY_OUT, "copy_out": the same bytes). The call's time
 * goes to one of them, the other taking none: the destination's where only it is known to be off
 * the local filesystems (a copy to /mnt/c), else the source's (a dataset copied from /mnt/c, or
 * nothing known: with WSLSHIM_IO_TIMING=1 no file is marked local). The event with the earlier
 * start goes first. The emulation (WSLSHIM_EMULATE fs:) adds its cost for the bytes read from
 * an emulated path and for those written to one. */
static __attribute__((noinline)) void io_record_copy(struct wsl_thread *t, unsigned api, uint64_t t0, uint64_t t1,
                                                     ssize_t r, int err, int in_fd, uint64_t in, int out_fd,
                                                     uint64_t out, uint64_t ask, uint64_t off)
{
    uint64_t got = r > 0 ? (uint64_t)r : 0;
    int failed = r < 0, to_out = (in & FD_LOCAL) && !(out & FD_LOCAL) && (uint32_t)out != 0;
    if (to_out) {
        io_record(t, WSL_ID_IO_COPY_OUT, t0, t1, failed, err, out_fd, (uint32_t)out, ask, got, NO_OFFSET);
        wsl_tls_depth = 1;
        io_record_read(t, api, t1, t1, failed, err, in_fd, (uint32_t)in, ask, got, off);
    } else {
        io_record_read(t, api, t0, t1, failed, err, in_fd, (uint32_t)in, ask, got, off);
        wsl_tls_depth = 1;
        io_record(t, WSL_ID_IO_COPY_OUT, t1, t1, failed, err, out_fd, (uint32_t)out, ask, got, NO_OFFSET);
    }
}

#define COPY_HOOK(api, in_fd, out_fd, ask, off, call)                                       \
    struct wsl_thread *t = io_enter();                                                     \
    if (!t)                                                                                \
        return call;                                                                       \
    uint64_t in_ = info_of_fd(in_fd), out_ = info_of_fd(out_fd);                           \
    int timed_ = 1;                                                                        \
    IO_CALL_TIMED_EMU(ssize_t, r, call, {                                                  \
        EMU_FD_BYTES(in_, 0, r > 0 ? (uint64_t)r : 0);                                     \
        EMU_FD_BYTES(out_, 1, r > 0 ? (uint64_t)r : 0);                                    \
    })                                                                                     \
    int err = errno;                                                                       \
    io_record_copy(t, api, t0, t1, r, r < 0 ? err : 0, in_fd, in_, out_fd, out_, ask, off); \
    errno = err;                                                                           \
    return r;

WSL_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
    COPY_HOOK(WSL_IO_ID_sendfile, in_fd, out_fd, count, offset ? (uint64_t)*offset : NO_OFFSET,
              REAL(sendfile)(out_fd, in_fd, offset, count))
}
WSL_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
    COPY_HOOK(WSL_IO_ID_sendfile64, in_fd, out_fd, count, offset ? (uint64_t)*offset : NO_OFFSET,
              REAL(sendfile64)(out_fd, in_fd, offset, count))
}
WSL_EXPORT ssize_t copy_file_range(int in_fd, off64_t *in_off, int out_fd, off64_t *out_off, size_t len,
                                   unsigned flags)
{
    COPY_HOOK(WSL_IO_ID_copy_file_range, in_fd, out_fd, len, in_off ? (uint64_t)*in_off : NO_OFFSET,
              REAL(copy_file_range)(in_fd, in_off, out_fd, out_off, len, flags))
}

/* ---- mmap of files ----------------------------------------------------------------------- */
#define MMAP_HOOK(api, call)                                                               \
    if (fd < 0 || (flags & MAP_ANONYMOUS))                                                 \
        return call;                                                                       \
    IO_TIMED_CALL(void *, r, fd, call)                                                     \
    int err = errno;                                                                       \
    io_record(t, (api) + off_, t0, t1, r == MAP_FAILED, err, fd, (uint32_t)info_, len, (uint64_t)off, \
              (uint64_t)(unsigned)prot);                                                   \
    errno = err;                                                                           \
    return r;

/* Before the constructor resolved it (malloc's early maps), mmap is the system call. */
static void *mmap_raw(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    __typeof__(wsl_io_real.mmap) real = REAL_SLOT(mmap);
    if (real)
        return real(addr, len, prot, flags, fd, off);
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return (void *)r;
}

WSL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    MMAP_HOOK(WSL_IO_ID_mmap, mmap_raw(addr, len, prot, flags, fd, off))
}
WSL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    MMAP_HOOK(WSL_IO_ID_mmap64, mmap_raw(addr, len, prot, flags, fd, (off_t)off))
}

