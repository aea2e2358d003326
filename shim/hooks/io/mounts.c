/*
 * Which devices are local filesystems: from the mount table, which the writer
 * reads (wsl_io_read_mounts, at start and whenever it changes) and hands back
 * here (wsl_io_note_mounts); a hook asks dev_is_local (io_hooks.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "io_hooks.h"

/* ---- which devices are local filesystems --------------------------------------------------
 * From the mount table the writer reads (at start and whenever it changes): a
 * small array of (device, local) keys, read without a lock. A reader that sees
 * it mid-update may time a call it could have sampled, or the reverse; the
 * events say which it did, so the figures stay right either way. */
#define LOCAL_DEVS_MAX 512
static _Atomic uint64_t local_devs[LOCAL_DEVS_MAX]; /* (major << 20 | minor) << 1 | local */
static _Atomic uint32_t local_dev_count;
_Atomic uint32_t local_devs_gen = 1; /* io_hooks.h: dev_is_local */

static uint64_t dev_key(uint64_t dev) { return ((dev >> 32) << 20 | (dev & 0xfffff)) << 1; }

/* Filesystems whose calls cost what the page cache and a local disk cost. */
static int fstype_is_local(const char *t, size_t n)
{
    static const char *const local[] = {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs", "nilfs2",
        "vfat", "msdos", "exfat", "ntfs3", "squashfs", "erofs", "iso9660", "udf", "lxfs", "wslfs",
        "tmpfs", "ramfs", "overlay", "aufs", "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2",
        "mqueue", "hugetlbfs", "debugfs", "tracefs", "securityfs", "bpf", "configfs", "pstore",
        "efivarfs", "binfmt_misc", "nsfs", "fusectl", "rpc_pipefs", "selinuxfs",
    };
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if (strlen(local[i]) == n && !memcmp(local[i], t, n))
            return 1;
    return 0;
}

void wsl_io_note_mounts(const char *text, size_t n)
{
    uint32_t count = 0;
    const char *p = text, *end = text + n;
    while (p < end && count < LOCAL_DEVS_MAX) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        /* "36 35 98:0 /root /mnt opts - fstype source superopts" */
        unsigned major, minor;
        const char *dash = NULL;
        for (const char *q = p; q + 3 <= eol; q++)
            if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
                dash = q + 3;
                break;
            }
        char line[64];
        size_t ll = (size_t)(eol - p) < sizeof line - 1 ? (size_t)(eol - p) : sizeof line - 1;
        memcpy(line, p, ll);
        line[ll] = 0;
        if (dash && sscanf(line, "%*u %*u %u:%u", &major, &minor) == 2) {
            const char *ft = dash, *fe = memchr(ft, ' ', (size_t)(eol - ft));
            if (!fe)
                fe = eol;
            uint64_t key = dev_key((uint64_t)major << 32 | minor) | (uint64_t)fstype_is_local(ft, (size_t)(fe - ft));
            atomic_store_explicit(&local_devs[count++], key, memory_order_relaxed);
        }
        p = eol + 1;
    }
    atomic_store_explicit(&local_dev_count, count, memory_order_release);
    atomic_fetch_add_explicit(&local_devs_gen, 1, memory_order_release);
}

/* The first question comes before the writer read the mount table: read it
 * here, once (the writer reads it again and keeps it current). */
static void mounts_first_read(void)
{
    static _Atomic int reading;
    static char buf[256 << 10]; /* no malloc here: an allocator's own start-up may be reading a file */
    if (atomic_exchange(&reading, 1))
        return; /* another thread is at it: its answer comes soon, time these calls meanwhile */
    const char *path = wsl_getenv("WSLSHIM_MOUNTINFO");
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path && *path ? path : "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t n = 0;
    for (;;) {
        ssize_t r = syscall(SYS_read, fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    syscall(SYS_close, fd);
    if (n && atomic_load(&local_devs_gen) == 1)
        wsl_io_note_mounts(buf, n); /* a table past the buffer: its first mounts, until the writer's read */
}

/* Is dev a local filesystem's? The table's answer (dev_is_local, io_hooks.h, remembers it per thread). */
__attribute__((noinline)) int dev_lookup_local(struct wsl_thread *t, uint64_t dev, uint32_t gen)
{
    if (WSL_UNLIKELY(gen == 1)) {
        int saved = errno;
        mounts_first_read();
        errno = saved;
        gen = atomic_load_explicit(&local_devs_gen, memory_order_acquire);
    }
    uint64_t key = dev_key(dev);
    int local = 0;
    uint32_t count = atomic_load_explicit(&local_dev_count, memory_order_acquire);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t k = atomic_load_explicit(&local_devs[i], memory_order_relaxed);
        if ((k & ~1ull) == key) {
            local = (int)(k & 1); /* the first mount of a device names its filesystem */
            break;
        }
    }
    t->io_memo_dev = dev;
    t->io_memo_gen = gen;
    t->io_memo_local = (uint32_t)local;
    /* an open's fold value on it, less the flags' bits (WSL_FOLD_OPEN_VALUE: where it fits a
     * slot, as opens.c's open_fold_value), marked by bit 63: for the opens' fast twins, which
     * fold an open only with no path emulated and the timing sampled (the settings, read
     * before any hook records: 0 otherwise) */
    uint64_t major = dev >> 32, minor = (uint32_t)dev;
    t->io_memo_open = local && major < 4096 && minor < (1u << 20) && !wsl_emu_fs_on && wsl_cfg.io_timing > 1
                          ? WSL_FOLD_OPEN_VALUE(major, minor, 0) | 1ull << 63
                          : 0;
    return local;
}

/* ---- the mount table, for the writer -------------------------------------------------------- */
/* Its text into *buf (grown as needed, up to 16 MiB): the length read, 0 for none. */
size_t wsl_io_read_mounts(char **buf, size_t *cap)
{
    const char *path = wsl_getenv("WSLSHIM_MOUNTINFO");
    if (!path || !*path)
        path = "/proc/self/mountinfo";
    int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    wsl_fd_protect(1, fd);
    size_t n = 0;
    for (;;) {
        if (n + 4096 > *cap) {
            size_t ncap = *cap ? *cap * 2 : 65536;
            if (ncap > (16u << 20))
                break; /* a mount table this large is cut; the analyzer warns */
            char *nb = realloc(*buf, ncap);
            if (!nb)
                break;
            *buf = nb;
            *cap = ncap;
        }
        ssize_t r = REAL(read)(fd, *buf + n, *cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    wsl_fd_protect(1, -1);
    REAL(close)(fd);
    return n;
}
