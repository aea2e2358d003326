/*
 * mountinfo parsing and filesystem classification. Used by the trace reader
 * (which checks MOUNTS chunks with it), so it reports failures instead of
 * exiting: no x* allocation helpers here.
 */
#include "mounts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wslshim/trace_format.h"

#define FIELDS_BEFORE_SEPARATOR 6   /* id parent major:minor root mountpoint options */

__attribute__((format(printf, 4, 5)))
static void set_error(char *err, size_t errlen, size_t line, const char *fmt, ...)
{
    int n = snprintf(err, errlen, "line %zu: ", line);
    if (n < 0 || (size_t)n >= errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Decodes the kernel's octal escapes (\ooo) in place; a backslash not followed
 * by three octal digits (9p's "path=C:\;") is kept as it is, and so is \000. */
static void decode_escapes(char *s)
{
    char *out = s;
    for (const char *in = s; *in;) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' &&
            in[3] <= '7') {
            int v = (in[1] - '0') << 6 | (in[2] - '0') << 3 | (in[3] - '0');
            if (v != 0) {
                *out++ = (char)v;
                in += 4;
                continue;
            }
        }
        *out++ = *in++;
    }
    *out = 0;
}

static bool parse_u32(const char *s, const char *end, uint32_t *out)
{
    if (s == end)
        return false;
    uint64_t v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > UINT32_MAX)
            return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Splits a line (NUL-terminated, modified in place) at runs of spaces and
 * tabs; returns the number of fields, at most max (more: max + 1). */
static size_t split_fields(char *line, char **fields, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            *p++ = 0;
        if (!*p)
            return n;
        if (n == max)
            return max + 1;
        fields[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
}

/* Fills m from one line; false with err set. */
static bool parse_line(char *line, size_t line_no, struct wsl_mount *m, char *err, size_t errlen)
{
    enum { MAX_FIELDS = 64 };   /* optional fields are few (shared:N master:N propagate_from:N unbindable) */
    char *f[MAX_FIELDS];
    size_t n = split_fields(line, f, MAX_FIELDS);
    if (n > MAX_FIELDS) {
        set_error(err, errlen, line_no, "more than %d fields", MAX_FIELDS);
        return false;
    }
    size_t sep = FIELDS_BEFORE_SEPARATOR;
    while (sep < n && strcmp(f[sep], "-") != 0)
        sep++;
    if (n < FIELDS_BEFORE_SEPARATOR || sep == n) {
        set_error(err, errlen, line_no, "no ' - ' separator after %d fields", FIELDS_BEFORE_SEPARATOR);
        return false;
    }
    size_t after = n - sep - 1; /* fstype source [superoptions] */
    if (after < 2 || after > 3) {
        set_error(err, errlen, line_no, "%zu fields after ' - ' (expected fstype, source, options)", after);
        return false;
    }
    char *colon = strchr(f[2], ':');
    uint32_t major, minor;
    if (!parse_u32(f[0], f[0] + strlen(f[0]), &m->mount_id) ||
        !parse_u32(f[1], f[1] + strlen(f[1]), &m->parent_id)) {
        set_error(err, errlen, line_no, "mount ids are not numbers");
        return false;
    }
    if (!colon || !parse_u32(f[2], colon, &major) || !parse_u32(colon + 1, colon + 1 + strlen(colon + 1), &minor)) {
        set_error(err, errlen, line_no, "bad major:minor");
        return false;
    }
    m->dev = WSL_DEV(major, minor);
    for (size_t i = 3; i < n; i++)
        decode_escapes(f[i]);
    m->root = f[3];
    m->mount_point = f[4];
    m->mount_point_len = strlen(f[4]);
    m->fstype = f[sep + 1];
    m->source = f[sep + 2];
    m->super_options = after == 3 ? f[sep + 3] : "";
    if (m->mount_point[0] != '/') {
        set_error(err, errlen, line_no, "mount point is not an absolute path");
        return false;
    }
    return true;
}

struct dev_index {
    uint64_t dev;
    uint32_t index;
};

static int by_dev_then_index(const void *a, const void *b)
{
    const struct dev_index *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static bool build_dev_index(struct wsl_mount_table *t)
{
    struct dev_index *tmp = malloc((t->count ? t->count : 1) * sizeof *tmp);
    t->by_dev = malloc((t->count ? t->count : 1) * sizeof *t->by_dev);
    if (!tmp || !t->by_dev) {
        free(tmp);
        return false;
    }
    for (size_t i = 0; i < t->count; i++)
        tmp[i] = (struct dev_index){t->mounts[i].dev, (uint32_t)i};
    if (t->count)
        qsort(tmp, t->count, sizeof *tmp, by_dev_then_index);
    for (size_t i = 0; i < t->count; i++)
        t->by_dev[i] = tmp[i].index;
    free(tmp);
    return true;
}

struct wsl_mount_table *wsl_mounts_parse(const char *text, size_t size, char *err, size_t errlen)
{
    if (memchr(text, 0, size)) {
        snprintf(err, errlen, "a NUL byte in the mount table text");
        return NULL;
    }
    struct wsl_mount_table *t = calloc(1, sizeof *t);
    if (t)
        t->strings = malloc(size + 1);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    if (t)
        t->mounts = calloc(lines, sizeof *t->mounts);
    if (!t || !t->strings || !t->mounts) {
        snprintf(err, errlen, "out of memory for a mount table of %zu bytes", size);
        wsl_mounts_free(t);
        return NULL;
    }
    memcpy(t->strings, text, size);
    t->strings[size] = 0;

    char *line = t->strings;
    for (size_t line_no = 1; line; line_no++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (line[strspn(line, " \t\r")] != 0) {
            if (!parse_line(line, line_no, &t->mounts[t->count], err, errlen)) {
                wsl_mounts_free(t);
                return NULL;
            }
            t->count++;
        }
        line = nl ? nl + 1 : NULL;
    }
    if (!build_dev_index(t)) {
        snprintf(err, errlen, "out of memory for a mount table of %zu bytes", size);
        wsl_mounts_free(t);
        return NULL;
    }
    return t;
}

void wsl_mounts_free(struct wsl_mount_table *t)
{
    if (!t)
        return;
    free(t->mounts);
    free(t->by_dev);
    free(t->strings);
    free(t);
}

bool wsl_mount_point_prefixes(const char *mp, size_t mp_len, const char *path, size_t path_len)
{
    if (mp_len == 1 && mp[0] == '/')
        return path_len > 0 && path[0] == '/';
    return path_len >= mp_len && memcmp(mp, path, mp_len) == 0 && (path_len == mp_len || path[mp_len] == '/');
}

/* Of a and b (either may be NULL), the more specific for path: the longer
 * mount point; on a tie the later mount (it hides the earlier one). */
static const struct wsl_mount *more_specific(const struct wsl_mount *a, const struct wsl_mount *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (a->mount_point_len != b->mount_point_len)
        return a->mount_point_len > b->mount_point_len ? a : b;
    return a > b ? a : b;
}

const struct wsl_mount *wsl_mounts_find(const struct wsl_mount_table *t, uint64_t dev, const char *path,
                                        size_t path_len)
{
    if (!t || t->count == 0)
        return NULL;
    if (!path)
        path_len = 0;
    if (dev) {
        size_t lo = 0, hi = t->count; /* the first by_dev entry with that device */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (t->mounts[t->by_dev[mid]].dev < dev)
                lo = mid + 1;
            else
                hi = mid;
        }
        const struct wsl_mount *first = NULL, *best = NULL;
        for (size_t i = lo; i < t->count && t->mounts[t->by_dev[i]].dev == dev; i++) {
            const struct wsl_mount *m = &t->mounts[t->by_dev[i]];
            if (!first)
                first = m;  /* by_dev keeps table order within a device */
            if (wsl_mount_point_prefixes(m->mount_point, m->mount_point_len, path, path_len))
                best = more_specific(best, m);
        }
        if (first)
            return best ? best : first;
    }
    const struct wsl_mount *best = NULL;
    for (size_t i = 0; i < t->count; i++) {
        const struct wsl_mount *m = &t->mounts[i];
        if (wsl_mount_point_prefixes(m->mount_point, m->mount_point_len, path, path_len))
            best = more_specific(best, m);
    }
    return best;
}

/* ---- classification ------------------------------------------------------------ */

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

/* The value of a 9p-style option ("aname=drvfs;path=C:\" inside "rw,aname=...,msize=...")
 * equals value: options are separated by ',' and 9p's own by ';'. */
static bool has_option_value(const char *options, const char *name, const char *value)
{
    size_t name_len = strlen(name), value_len = strlen(value);
    for (const char *p = options; (p = strstr(p, name)); p += name_len) {
        if (p != options && p[-1] != ',' && p[-1] != ';')
            continue;
        const char *v = p + name_len;
        if (strncmp(v, value, value_len) == 0 && (v[value_len] == 0 || v[value_len] == ';' || v[value_len] == ','))
            return true;
    }
    return false;
}

enum wsl_fs_kind wsl_fs_classify(const char *fstype, const char *source, const char *super_options, bool wsl)
{
    static const char *const local[] = {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "jfs", "reiserfs",
                                        "bcachefs", "nilfs2", "vfat", "exfat", "ntfs", "ntfs3", "iso9660",
                                        "squashfs", "erofs", "udf", "lxfs", "wslfs", NULL};
    static const char *const overlay[] = {"overlay", "aufs", NULL};
    static const char *const memory[] = {"tmpfs", "ramfs", "rootfs", NULL};
    static const char *const network[] = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre",
                                          "beegfs", "gpfs", "afs", "ocfs2", "gfs2", NULL};
    static const char *const system[] = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2",
                                         "securityfs", "debugfs", "tracefs", "pstore", "bpf", "mqueue",
                                         "hugetlbfs", "configfs", "fusectl", "binfmt_misc", "autofs", "efivarfs",
                                         "nsfs", "rpc_pipefs", "selinuxfs", NULL};
    if (strcmp(fstype, "drvfs") == 0)
        return WSL_FS_WINDOWS_DRIVE;    /* WSL1 */
    if (strcmp(fstype, "9p") == 0 || strcmp(fstype, "virtiofs") == 0) {
        /* WSL2: "9p drvfs ... aname=drvfs;path=C:\"; with virtiofs "virtiofs drvfsC0" */
        if (strncmp(source, "drvfs", 5) == 0 || has_option_value(super_options, "aname=", "drvfs"))
            return WSL_FS_WINDOWS_DRIVE;
        if (has_option_value(super_options, "aname=", "drivers"))
            return WSL_FS_WSL_DRIVERS;
        return wsl ? WSL_FS_WINDOWS_SHARE : WSL_FS_HOST_SHARE;
    }
    if (in_list(fstype, local))
        return WSL_FS_LOCAL;
    if (in_list(fstype, overlay))
        return WSL_FS_OVERLAY;
    if (in_list(fstype, memory))
        return WSL_FS_MEMORY;
    if (in_list(fstype, network))
        return WSL_FS_NETWORK;
    if (strcmp(fstype, "fuse") == 0 || strcmp(fstype, "fuseblk") == 0 || strncmp(fstype, "fuse.", 5) == 0)
        return WSL_FS_FUSE;
    if (in_list(fstype, system) || strncmp(fstype, "cgroup", 6) == 0)
        return WSL_FS_SYSTEM;
    return WSL_FS_OTHER;
}

const char *wsl_fs_kind_name(enum wsl_fs_kind kind)
{
    static const char *const names[WSL_FS_KIND_COUNT] = {
        [WSL_FS_UNKNOWN] = "unknown",
        [WSL_FS_LOCAL] = "local",
        [WSL_FS_OVERLAY] = "overlay",
        [WSL_FS_MEMORY] = "memory",
        [WSL_FS_NETWORK] = "network",
        [WSL_FS_FUSE] = "fuse",
        [WSL_FS_WINDOWS_DRIVE] = "windows_drive",
        [WSL_FS_WINDOWS_SHARE] = "windows_share",
        [WSL_FS_WSL_DRIVERS] = "wsl_drivers",
        [WSL_FS_HOST_SHARE] = "host_share",
        [WSL_FS_SYSTEM] = "system",
        [WSL_FS_OTHER] = "other",
    };
    return (unsigned)kind < WSL_FS_KIND_COUNT ? names[kind] : "unknown";
}

bool wsl_fs_kind_crosses_windows(enum wsl_fs_kind kind)
{
    return kind == WSL_FS_WINDOWS_DRIVE || kind == WSL_FS_WINDOWS_SHARE || kind == WSL_FS_WSL_DRIVERS;
}

