/* mountinfo parsing, lookup by device and path, and filesystem classes, on fixtures. */
#include <stdlib.h>
#include <string.h>

#include "io_scenarios.h"
#include "mounts.h"
#include "unit_test.h"

static struct wsl_mount_table *parse_fixture(const char *name)
{
    char *text = io_fixture(name);
    char err[WSL_MOUNTS_ERRLEN] = "";
    struct wsl_mount_table *t = wsl_mounts_parse(text, strlen(text), err, sizeof err);
    if (!t)
        fprintf(stderr, "%s: %s\n", name, err);
    free(text);
    return t;
}

static const char *find_mp(const struct wsl_mount_table *t, uint64_t dev, const char *path)
{
    const struct wsl_mount *m = wsl_mounts_find(t, dev, path, path ? strlen(path) : 0);
    return m ? m->mount_point : "(none)";
}

static const struct wsl_mount *by_mount_point(const struct wsl_mount_table *t, const char *mp)
{
    for (size_t i = 0; i < t->count; i++)
        if (strcmp(t->mounts[i].mount_point, mp) == 0)
            return &t->mounts[i];
    return NULL;
}

#define CHECK_STR(got, want) CHECKF(strcmp((got), (want)) == 0, "got '%s', expected '%s'", (got), (want))

int test_mounts_wsl2(void)
{
    struct wsl_mount_table *t = parse_fixture("wsl2.mountinfo");
    CHECK(t && t->count == 16);
    const struct wsl_mount *c = by_mount_point(t, "/mnt/c");
    CHECK(c);
    CHECK(c->mount_id == 74 && c->parent_id == 61 && c->dev == WSL_DEV(0, 62));
    CHECK_STR(c->fstype, "9p");
    CHECK_STR(c->source, "C:\\");    /* C:\134 decoded */
    CHECK(strstr(c->super_options, "aname=drvfs;path=C:\\;uid=1000") != NULL);
    CHECK(wsl_mount_classify(c, true) == WSL_FS_WINDOWS_DRIVE);
    CHECK(wsl_mount_classify(c, false) == WSL_FS_WINDOWS_DRIVE); /* aname=drvfs says so, WSL flag or not */
    CHECK(wsl_mount_classify(by_mount_point(t, "/mnt/d"), true) == WSL_FS_WINDOWS_DRIVE); /* source drvfs */
    CHECK(wsl_mount_classify(by_mount_point(t, "/"), true) == WSL_FS_LOCAL);
    CHECK(wsl_mount_classify(by_mount_point(t, "/usr/lib/wsl/drivers"), true) == WSL_FS_WSL_DRIVERS);
    CHECK(wsl_mount_classify(by_mount_point(t, "/usr/lib/wsl/lib"), true) == WSL_FS_OVERLAY);
    CHECK(wsl_mount_classify(by_mount_point(t, "/proc"), true) == WSL_FS_SYSTEM);
    CHECK(wsl_mount_classify(by_mount_point(t, "/sys/fs/cgroup"), true) == WSL_FS_SYSTEM);
    CHECK(wsl_mount_classify(by_mount_point(t, "/dev/shm"), true) == WSL_FS_MEMORY);
    CHECK(wsl_fs_kind_crosses_windows(WSL_FS_WINDOWS_DRIVE) && wsl_fs_kind_crosses_windows(WSL_FS_WSL_DRIVERS));
    CHECK(!wsl_fs_kind_crosses_windows(WSL_FS_LOCAL) && wsl_fs_kind_is_system(WSL_FS_WSL_DRIVERS));

    CHECK_STR(find_mp(t, DEV_WSL2_C, "/mnt/c/Users/me/data/x.jpg"), "/mnt/c");
    CHECK_STR(find_mp(t, DEV_WSL2_C, NULL), "/mnt/c");
    /* symlinked: named under /home but the device is the Windows drive's */
    CHECK_STR(find_mp(t, DEV_WSL2_C, "/home/me/data/x.jpg"), "/mnt/c");
    /* two mounts of 8:48: the one whose mount point prefixes the path, else the first */
    CHECK_STR(find_mp(t, DEV_WSL2_ROOT, "/usr/share/X11/xkb/symbols"), "/usr/share/X11/xkb");
    CHECK_STR(find_mp(t, DEV_WSL2_ROOT, "/home/me"), "/");
    CHECK_STR(find_mp(t, DEV_WSL2_ROOT, NULL), "/");
    /* no device: the most specific mount point */
    CHECK_STR(find_mp(t, 0, "/mnt/c/x"), "/mnt/c");
    CHECK_STR(find_mp(t, 0, "/mnt/cx/y"), "/");
    CHECK_STR(find_mp(t, 0, "/dev/shm/torch_1"), "/dev/shm");
    CHECK_STR(find_mp(t, WSL_DEV(250, 1), "/run/lock/x"), "/run/lock"); /* unknown device */
    CHECK_STR(find_mp(t, WSL_DEV(250, 1), NULL), "(none)");
    wsl_mounts_free(t);
    return 0;
}

int test_mounts_virtiofs(void)
{
    struct wsl_mount_table *t = parse_fixture("wsl2_virtiofs.mountinfo");
    CHECK(t && t->count == 7);
    const struct wsl_mount *c = by_mount_point(t, "/mnt/c");
    CHECK(c && strcmp(c->fstype, "virtiofs") == 0 && strcmp(c->source, "drvfsC0") == 0);
    CHECK(wsl_mount_classify(c, true) == WSL_FS_WINDOWS_DRIVE);
    CHECK(wsl_mount_classify(by_mount_point(t, "/mnt/shared"), true) == WSL_FS_WINDOWS_SHARE);
    CHECK(wsl_mount_classify(by_mount_point(t, "/mnt/shared"), false) == WSL_FS_HOST_SHARE);
    const struct wsl_mount *e = by_mount_point(t, "/mnt/e");
    CHECK(e && strcmp(e->root, "/5d3f0c1a-e") == 0 && wsl_mount_classify(e, true) == WSL_FS_WINDOWS_DRIVE);
    /* one virtiofs device behind the hidden aggregate mount and its bind mount /mnt/e */
    CHECK_STR(find_mp(t, WSL_DEV(0, 72), "/mnt/e/data/a.bin"), "/mnt/e");
    CHECK_STR(find_mp(t, WSL_DEV(0, 72), "/home/me/link/a.bin"), "/run/wsl/virtiofs-mounts/drvfsa");
    wsl_mounts_free(t);
    return 0;
}

int test_mounts_wsl1(void)
{
    struct wsl_mount_table *t = parse_fixture("wsl1.mountinfo");
    CHECK(t && t->count == 8);
    const struct wsl_mount *c = by_mount_point(t, "/mnt/c");
    CHECK(c && strcmp(c->fstype, "drvfs") == 0 && strcmp(c->source, "C:\\") == 0);
    CHECK(wsl_mount_classify(c, true) == WSL_FS_WINDOWS_DRIVE);
    CHECK(wsl_mount_classify(by_mount_point(t, "/"), true) == WSL_FS_LOCAL); /* lxfs */
    CHECK(wsl_mount_classify(by_mount_point(t, "/dev/pts"), true) == WSL_FS_SYSTEM);
    CHECK_STR(find_mp(t, WSL_DEV(0, 16), "/mnt/d/x"), "/mnt/d");
    wsl_mounts_free(t);
    return 0;
}

int test_mounts_native(void)
{
    struct wsl_mount_table *t = parse_fixture("native_docker.mountinfo");
    CHECK(t && t->count == 15);
    CHECK(wsl_mount_classify(by_mount_point(t, "/"), false) == WSL_FS_OVERLAY);
    CHECK(wsl_mount_classify(by_mount_point(t, "/data"), false) == WSL_FS_LOCAL);
    CHECK(wsl_mount_classify(by_mount_point(t, "/data/scratch"), false) == WSL_FS_LOCAL);
    CHECK(wsl_mount_classify(by_mount_point(t, "/mnt/nfs"), false) == WSL_FS_NETWORK);
    CHECK(wsl_mount_classify(by_mount_point(t, "/mnt/s3"), false) == WSL_FS_FUSE);
    CHECK(wsl_mount_classify(by_mount_point(t, "/mnt/vmshare"), false) == WSL_FS_HOST_SHARE);
    CHECK(wsl_mount_classify(by_mount_point(t, "/dev/mqueue"), false) == WSL_FS_SYSTEM);
    CHECK(wsl_mount_classify(by_mount_point(t, "/sys/fs/cgroup"), false) == WSL_FS_SYSTEM);
    const struct wsl_mount *data = by_mount_point(t, "/data");
    CHECK(data && strcmp(data->root, "/home/alice/datasets") == 0);
    /* 259:2 is behind /data and two single-file mounts */
    CHECK_STR(find_mp(t, WSL_DEV(259, 2), "/data/train/a.jpg"), "/data");
    CHECK_STR(find_mp(t, WSL_DEV(259, 2), "/etc/hostname"), "/etc/hostname");
    CHECK_STR(find_mp(t, WSL_DEV(259, 2), "/etc"), "/data"); /* no prefix: the first */
    CHECK_STR(find_mp(t, WSL_DEV(259, 3), "/data/scratch/a"), "/data/scratch");
    CHECK_STR(find_mp(t, 0, "/data/scratch/b"), "/data/scratch");
    CHECK_STR(find_mp(t, 0, "/data/scratchy"), "/data");
    CHECK_STR(find_mp(t, WSL_DEV(0, 123), "/usr/lib/x"), "/");
    CHECK_STR(find_mp(t, WSL_DEV(9, 9), "/mnt/nfs/a"), "/mnt/nfs");
    wsl_mounts_free(t);
    return 0;
}

int test_mounts_escapes(void)
{
    struct wsl_mount_table *t = parse_fixture("escapes.mountinfo");
    CHECK(t && t->count == 4); /* the blank line is skipped */
    const struct wsl_mount *m = &t->mounts[1];
    CHECK_STR(m->mount_point, "/mnt/my disk");
    CHECK_STR(m->root, "/my data");
    CHECK_STR(m->fstype, "ext4");      /* four optional fields before " - " */
    CHECK_STR(m->source, "/dev/sda2");
    CHECK(m->mount_point_len == strlen("/mnt/my disk"));
    CHECK_STR(t->mounts[2].mount_point, "/mnt/tab\tdir\\x");
    CHECK_STR(t->mounts[2].super_options, "rw,aname=drvfs;path=E:\\;uid=1000");
    CHECK(wsl_mount_classify(&t->mounts[2], false) == WSL_FS_WINDOWS_DRIVE);
    CHECK_STR(t->mounts[3].super_options, ""); /* no super options at all */
    CHECK_STR(find_mp(t, WSL_DEV(8, 2), "/mnt/my disk/file"), "/mnt/my disk");
    CHECK_STR(find_mp(t, 0, "/mnt/tab\tdir\\x/f"), "/mnt/tab\tdir\\x");
    wsl_mounts_free(t);

    char err[WSL_MOUNTS_ERRLEN];
    t = wsl_mounts_parse("", 0, err, sizeof err);   /* empty: a table without mounts */
    CHECK(t && t->count == 0 && wsl_mounts_find(t, WSL_DEV(8, 1), "/x", 2) == NULL);
    wsl_mounts_free(t);
    const char *no_newline = "1 0 8:1 / / rw - ext4 /dev/sda1 rw";
    t = wsl_mounts_parse(no_newline, strlen(no_newline), err, sizeof err);
    CHECK(t && t->count == 1);
    wsl_mounts_free(t);
    return 0;
}

int test_mounts_malformed(void)
{
    static const struct {
        const char *text;
        const char *why;
    } cases[] = {
        {"36 35 98:0 / /mnt rw ext4 /dev/x rw\n", "line 1: no ' - ' separator"},
        {"1 0 8:1 / / rw - ext4 a b\n36 35 98-0 / /mnt rw - ext4 /dev/x rw\n", "line 2: bad major:minor"},
        {"36 35 98:0 / /mnt rw - ext4\n", "line 1: 1 fields after ' - '"},
        {"36 35 98:0 / /mnt rw - ext4 a b c\n", "line 1: 4 fields after ' - '"},
        {"x 35 98:0 / / rw - ext4 a b\n", "line 1: mount ids are not numbers"},
        {"36 35 98:0 / - rw - ext4 a b\n", "line 1: mount point is not an absolute path"},
        {"36 35 98:99999999999 / /a rw - ext4 a b\n", "line 1: bad major:minor"},
        {"this is not a mount table\n", "line 1: no ' - ' separator"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[WSL_MOUNTS_ERRLEN] = "";
        struct wsl_mount_table *t = wsl_mounts_parse(cases[i].text, strlen(cases[i].text), err, sizeof err);
        CHECKF(!t, "case %zu parsed", i);
        CHECKF(strncmp(err, cases[i].why, strlen(cases[i].why)) == 0, "case %zu: '%s'", i, err);
    }
    char err[WSL_MOUNTS_ERRLEN] = "";
    static const char nul_text[] = "1 0 8:1 / / rw - ext4 a b\n\0";
    CHECK(!wsl_mounts_parse(nul_text, sizeof nul_text - 1, err, sizeof err));
    CHECK(strstr(err, "NUL") != NULL);
    return 0;
}

int test_mounts_classify(void)
{
    static const struct {
        const char *fstype, *source, *options;
        bool wsl;
        enum wsl_fs_kind kind;
    } cases[] = {
        {"ext4", "/dev/sdc", "rw", true, WSL_FS_LOCAL},
        {"xfs", "/dev/nvme0n1", "rw", false, WSL_FS_LOCAL},
        {"btrfs", "/dev/sda3", "rw,subvol=/@home", false, WSL_FS_LOCAL},
        {"overlay", "overlay", "rw,lowerdir=/a", false, WSL_FS_OVERLAY},
        {"tmpfs", "tmpfs", "rw", false, WSL_FS_MEMORY},
        {"nfs", "srv:/x", "rw", false, WSL_FS_NETWORK},
        {"nfs4", "srv:/x", "rw", false, WSL_FS_NETWORK},
        {"fuse.sshfs", "me@host:", "rw", false, WSL_FS_FUSE},
        {"fuseblk", "/dev/sdb1", "rw", false, WSL_FS_FUSE},
        {"9p", "drvfs", "rw,aname=drvfs;path=C:\\", true, WSL_FS_WINDOWS_DRIVE},
        {"9p", "C:\\", "rw,dirsync,aname=drvfs;path=C:\\;uid=1000", true, WSL_FS_WINDOWS_DRIVE},
        {"9p", "drvfsa", "rw,trans=virtio", true, WSL_FS_WINDOWS_DRIVE},
        {"9p", "none", "ro,aname=drivers;fmask=222", true, WSL_FS_WSL_DRIVERS},
        {"9p", "share", "rw,trans=virtio", true, WSL_FS_WINDOWS_SHARE},
        {"9p", "share", "rw,trans=virtio", false, WSL_FS_HOST_SHARE},
        {"9p", "x", "rw,aname=drvfsx", true, WSL_FS_WINDOWS_SHARE}, /* not aname=drvfs */
        {"drvfs", "C:\\", "rw,case=off", true, WSL_FS_WINDOWS_DRIVE},
        {"virtiofs", "drvfsC0", "rw", true, WSL_FS_WINDOWS_DRIVE},
        {"virtiofs", "myshare", "rw", false, WSL_FS_HOST_SHARE},
        {"proc", "proc", "rw", true, WSL_FS_SYSTEM},
        {"sysfs", "sysfs", "rw", true, WSL_FS_SYSTEM},
        {"devtmpfs", "none", "rw", true, WSL_FS_SYSTEM},
        {"devpts", "devpts", "rw", true, WSL_FS_SYSTEM},
        {"cgroup", "cgroup", "rw", true, WSL_FS_SYSTEM},
        {"cgroup2", "cgroup2", "rw", true, WSL_FS_SYSTEM},
        {"zonefs", "x", "rw", true, WSL_FS_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum wsl_fs_kind k = wsl_fs_classify(cases[i].fstype, cases[i].source, cases[i].options, cases[i].wsl);
        CHECKF(k == cases[i].kind, "%s %s %s: %s, expected %s", cases[i].fstype, cases[i].source, cases[i].options,
               wsl_fs_kind_name(k), wsl_fs_kind_name(cases[i].kind));
    }
    CHECK(strcmp(wsl_fs_kind_name(WSL_FS_WINDOWS_DRIVE), "windows_drive") == 0);
    return 0;
}

/* Damaged mount tables (characters the parser cares about, put anywhere)
 * parse or fail with a reason, never crash; lookups on what parsed hold up. */
int test_mounts_fuzz(void)
{
    static const char *const fixtures[] = {"wsl2.mountinfo", "wsl2_virtiofs.mountinfo", "wsl1.mountinfo",
                                           "native_docker.mountinfo", "escapes.mountinfo"};
    static const char alphabet[] = " -\\0123:/\n\t7a";
    rng_seed(99);
    size_t parsed = 0, failed = 0;
    for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
        char *text = io_fixture(fixtures[f]);
        size_t size = strlen(text);
        char *work = malloc(size + 1);
        CHECK(work);
        for (int iter = 0; iter < 2000; iter++) {
            memcpy(work, text, size + 1);
            size_t n = size;
            for (int m = 0, count = 1 + (int)rng_below(3); m < count; m++) {
                size_t at = rng_below(n);
                if (rng_below(4) == 0)
                    n = at; /* cut */
                else
                    work[at] = alphabet[rng_below(sizeof alphabet - 1)];
            }
            char err[WSL_MOUNTS_ERRLEN] = "";
            struct wsl_mount_table *t = wsl_mounts_parse(work, n, err, sizeof err);
            if (!t) {
                CHECK(err[0] && !strchr(err, '\n'));
                failed++;
                continue;
            }
            parsed++;
            for (size_t i = 0; i < t->count; i++) {
                const struct wsl_mount *m = &t->mounts[i];
                CHECK(m->mount_point[0] == '/' && m->mount_point_len == strlen(m->mount_point));
                CHECK(m->fstype[0] && m->source[0]);
                const struct wsl_mount *found = wsl_mounts_find(t, m->dev, m->mount_point, m->mount_point_len);
                CHECK(found && found->dev == m->dev);
            }
            wsl_mounts_find(t, 0, "/mnt/c/x", 8);
            wsl_mounts_free(t);
        }
        free(work);
        free(text);
    }
    CHECKF(parsed > 1000 && failed > 1000, "parsed %zu, failed %zu", parsed, failed);
    return 0;
}
