/*
 * The mount table a traced process saw (the text of /proc/self/mountinfo,
 * carried in MOUNTS chunks), parsed, and what each filesystem is: a Linux
 * disk, memory, the network, the kernel's own (proc, sysfs...) or a Windows
 * drive reached across the WSL boundary (docs/io.md explains the classes).
 *
 * mountinfo lines (proc(5)):
 *   36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   id parent major:minor root mountpoint options [optional fields...] - fstype source superoptions
 * Octal escapes (\040 for a space, \134 for a backslash) are decoded in every field.
 */
#ifndef WSLSHIM_MOUNTS_H
#define WSLSHIM_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wsl_fs_kind {
    WSL_FS_UNKNOWN = 0,     /* no mount found (or no mount table) */
    WSL_FS_LOCAL,           /* a Linux disk filesystem: ext4, xfs, btrfs... (WSL1's lxfs too) */
    WSL_FS_OVERLAY,         /* overlay/aufs: container layers over a local disk */
    WSL_FS_MEMORY,          /* tmpfs, ramfs */
    WSL_FS_NETWORK,         /* nfs, cifs, ceph, lustre... */
    WSL_FS_FUSE,            /* fuse, fuse.*, fuseblk */
    WSL_FS_WINDOWS_DRIVE,   /* a Windows drive: 9p drvfs (WSL2), drvfs (WSL1), virtiofs drvfs (WSL2) */
    WSL_FS_WINDOWS_SHARE,   /* other 9p/virtiofs under WSL: served by the Windows host too */
    WSL_FS_WSL_DRIVERS,     /* WSL's driver store (9p aname=drivers, /usr/lib/wsl/drivers) */
    WSL_FS_HOST_SHARE,      /* 9p/virtiofs outside WSL: a VM host's share, not Windows */
    WSL_FS_SYSTEM,          /* the kernel's own: proc, sysfs, devtmpfs, devpts, cgroup... */
    WSL_FS_OTHER,
    WSL_FS_KIND_COUNT
};

struct wsl_mount {
    uint32_t mount_id, parent_id;
    uint64_t dev;               /* WSL_DEV(major, minor) */
    const char *root;           /* the part of the filesystem mounted here */
    const char *mount_point;
    const char *fstype;         /* e.g. "9p", "ext4", "fuse.sshfs" */
    const char *source;         /* e.g. "drvfs", "/dev/sdc", "none" */
    const char *super_options;  /* e.g. "rw,dirsync,aname=drvfs;path=C:\;uid=1000" */
    size_t mount_point_len;
};

struct wsl_mount_table {
    struct wsl_mount *mounts;   /* in mountinfo order (mount order) */
    size_t count;
    uint32_t *by_dev;           /* indices into mounts sorted by (dev, index) */
    char *strings;              /* the decoded fields, NUL-terminated */
};

#define WSL_MOUNTS_ERRLEN 160

/* Parses mountinfo text (size bytes, need not end in a newline; blank lines
 * are skipped). Returns a new table, or NULL with a one-line reason in err
 * ("line 3: no ' - ' separator") for text that is not mountinfo, including
 * NUL bytes. */
struct wsl_mount_table *wsl_mounts_parse(const char *text, size_t size, char *err, size_t errlen);
void wsl_mounts_free(struct wsl_mount_table *t);

/* The mount a file lives on, given the device its stat or open reported (0:
 * unknown) and its path (NULL or "": unknown; a directory path works too).
 * Among the mounts of that device, the most specific one whose mount point
 * prefixes the path, else the first of them; with no mount of that device,
 * the most specific mount point prefixing the path; NULL when none fits. */
const struct wsl_mount *wsl_mounts_find(const struct wsl_mount_table *t, uint64_t dev, const char *path,
                                        size_t path_len);

/* True when mount point mp (length mp_len) is path or a parent directory of it. */
bool wsl_mount_point_prefixes(const char *mp, size_t mp_len, const char *path, size_t path_len);

/* What the filesystem is. `wsl`: the process ran under WSL (PROCESS flags),
 * which decides whether an unmarked 9p or virtiofs share is Windows. */
enum wsl_fs_kind wsl_fs_classify(const char *fstype, const char *source, const char *super_options, bool wsl);
static inline enum wsl_fs_kind wsl_mount_classify(const struct wsl_mount *m, bool wsl)
{
    return wsl_fs_classify(m->fstype, m->source, m->super_options, wsl);
}

/* "local", "windows_drive", ... (the JSON report's names). */
const char *wsl_fs_kind_name(enum wsl_fs_kind kind);
/* Files there are served by the Windows host: every call crosses the VM boundary. */
bool wsl_fs_kind_crosses_windows(enum wsl_fs_kind kind);
/* The kernel's or WSL's own files, never a program's data. (Inline: the file calls' analysis asks
 * it of every call.) */
static inline bool wsl_fs_kind_is_system(enum wsl_fs_kind kind)
{
    return kind == WSL_FS_SYSTEM || kind == WSL_FS_WSL_DRIVERS;
}

#endif /* WSLSHIM_MOUNTS_H */
