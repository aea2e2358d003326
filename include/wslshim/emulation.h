/*
 * Latency emulation (docs/emulation.md): WSLSHIM_EMULATE=SPEC makes hooked
 * calls cost more, and `wslshim-report --project SPEC` replays a run with the
 * same added costs. This header is shared by the shim (which parses the SPEC
 * once at load: no allocation, libc's string functions only) and the
 * analyzer, so that both read a SPEC the same way.
 *
 * SPEC, one of:
 *   wsl2                  the built-in figures (docs/emulation.md: sources)
 *   FILE (has a '/' or ends in .json)
 *                         calibration JSON (docs/probes.md) with
 *                         "platform": "emulation": its launch_ns, sync_ns,
 *                         alloc_ns, free_ns, memcpy_ns are added costs
 *   KEY=+N[ns|us|ms],...  inline; KEY is launch, sync, alloc, free, copy
 *                         (alloc also sets free unless free is given);
 *                         the '+' is optional; costs cannot be negative.
 *                         Inline items may also be:
 *     wsl2                the built-in figures, then the items after it
 *     fs:PREFIX=9p        files under the absolute path PREFIX behave as
 *                         a Windows drive over 9p: each call naming a path
 *                         there (open, stat, access, mkdir, unlink, rename,
 *                         opendir) and each directory read costs fsmeta, each
 *                         read and write its bytes at fsread / fswrite
 *     fsmeta=+COST        that per-call cost (default: 9p's, below)
 *     fsread=RATE, fswrite=RATE
 *                         bytes per second: N with unit B/s (default), KB/s,
 *                         MB/s, GB/s (powers of 1000) or KiB/s, MiB/s, GiB/s
 */
#ifndef WSLSHIM_EMULATION_H
#define WSLSHIM_EMULATION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wslshim/trace_format.h"

enum wsl_emu_family {
    WSL_EMU_LAUNCH = 0, /* kernel and graph launches (cuLaunchKernel*, cuGraphLaunch, cuLaunchHostFunc not) */
    WSL_EMU_SYNC,       /* stream, context and event synchronizations; blocking copies (with copy) */
    WSL_EMU_ALLOC,      /* device, pool, managed and pinned allocations */
    WSL_EMU_FREE,       /* their frees */
    WSL_EMU_COPY,       /* copy and memset submissions, blocking or not */
    WSL_EMU_FAMILIES
};

static inline const char *wsl_emu_family_name(unsigned f)
{
    static const char *const names[WSL_EMU_FAMILIES] = {"launch", "sync", "alloc", "free", "copy"};
    return f < WSL_EMU_FAMILIES ? names[f] : "?";
}

#define WSL_EMU_SPEC_MAX 512u

/* File-system emulation: up to WSL_EMU_FS_MAX path prefixes made to behave as
 * a 9p Windows drive (WSL2's /mnt/c). */
#define WSL_EMU_FS_MAX 8u
#define WSL_EMU_FS_PATH 256u
struct wsl_emu_fs {
    unsigned count;                             /* prefixes; 0: no file-system emulation */
    uint64_t meta_ns;                           /* per call naming a path there, per directory read */
    uint64_t read_bps, write_bps;               /* bytes per second (0: reads / writes not slowed) */
    char prefix[WSL_EMU_FS_MAX][WSL_EMU_FS_PATH]; /* absolute, no trailing '/' ("" for "/") */
    uint16_t len[WSL_EMU_FS_MAX];
};

/* The built-in 9p figures (docs/platform-costs.md, /work/shared facts): stat()
 * on /mnt/c 900-1100 us (microsoft/WSL#7038), a 1 GB read at ~330 MB/s
 * (enso-org/enso#1542), sequential writes at 293 MB/s (microsoft/WSL#5262). */
#define WSL_EMU_9P_META_NS 1000000u
#define WSL_EMU_9P_READ_BPS 330000000u
#define WSL_EMU_9P_WRITE_BPS 293000000u

struct wsl_emu_spec {
    uint64_t ns[WSL_EMU_FAMILIES]; /* added host cost per call of each family */
    struct wsl_emu_fs fs;          /* file-system emulation (fs.count 0: none) */
    char text[WSL_EMU_SPEC_MAX];   /* the SPEC as given */
};

/* Whether the absolute path p (n bytes) lies under one of fs's prefixes. */
static inline int wsl_emu_fs_match(const struct wsl_emu_fs *fs, const char *p, size_t n)
{
    for (unsigned i = 0; i < fs->count; i++) {
        size_t k = fs->len[i];
        if (n >= k && !memcmp(p, fs->prefix[i], k) && (n == k || p[k] == '/'))
            return 1;
    }
    return 0;
}

/* base (blen bytes, absolute; ignored when path is absolute) joined with path
 * into out (cap bytes), "." and ".." removed by name as the kernel would
 * without symbolic links: its length, or 0 when it does not fit. */
static inline size_t wsl_emu_path_join(char *out, size_t cap, const char *base, size_t blen, const char *path)
{
    size_t n = 0;
    if (path[0] != '/') {
        if (blen >= cap)
            return 0;
        memcpy(out, base, blen);
        n = blen;
    }
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = p;
        while (*e && *e != '/')
            e++;
        size_t k = (size_t)(e - p);
        if (k == 0)
            break;
        if (k == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
        } else if (!(k == 1 && p[0] == '.')) {
            if (n + 1 + k >= cap)
                return 0;
            out[n++] = '/';
            memcpy(out + n, p, k);
            n += k;
        }
        p = e;
    }
    if (n == 0 && cap > 1)
        out[n++] = '/'; /* the root itself */
    out[n < cap ? n : cap - 1] = 0;
    return n;
}

/* ns to move `bytes` at bps bytes per second (0 when bps is 0). */
static inline uint64_t wsl_emu_fs_bytes_ns(uint64_t bps, uint64_t bytes)
{
    return bps ? (uint64_t)((double)bytes * 1e9 / (double)bps + 0.5) : 0;
}

/* What a call of category `cat` gets added: a sum of families. Constant
 * folded when cat is a constant (the hooks). */
static inline __attribute__((always_inline)) uint64_t wsl_emu_cost_of(const uint64_t ns[WSL_EMU_FAMILIES],
                                                                      unsigned cat)
{
    switch (cat) {
    case WSL_CAT_LAUNCH: case WSL_CAT_GRAPH: return ns[WSL_EMU_LAUNCH];
    case WSL_CAT_SYNC_STREAM: case WSL_CAT_SYNC_CTX: case WSL_CAT_SYNC_EVENT: return ns[WSL_EMU_SYNC];
    case WSL_CAT_ALLOC: case WSL_CAT_ALLOC_MANAGED: case WSL_CAT_HOST_ALLOC: return ns[WSL_EMU_ALLOC];
    case WSL_CAT_FREE: case WSL_CAT_HOST_FREE: return ns[WSL_EMU_FREE];
    case WSL_CAT_COPY_ANY: case WSL_CAT_COPY_HTOD: case WSL_CAT_COPY_DTOH:
        return ns[WSL_EMU_COPY] + ns[WSL_EMU_SYNC];
    case WSL_CAT_COPY_ANY_ASYNC: case WSL_CAT_COPY_HTOD_ASYNC: case WSL_CAT_COPY_DTOH_ASYNC:
    case WSL_CAT_COPY_DTOD: case WSL_CAT_COPY_DTOD_ASYNC: case WSL_CAT_MEMSET: case WSL_CAT_MEMSET_ASYNC:
        return ns[WSL_EMU_COPY];
    default: return 0;
    }
}
/* Whether any SPEC can add to a category (a constant for the hooks). */
#define WSL_EMU_CAT(cat)                                                                                    \
    ((cat) == WSL_CAT_LAUNCH || (cat) == WSL_CAT_GRAPH || (cat) == WSL_CAT_SYNC_STREAM ||                   \
     (cat) == WSL_CAT_SYNC_CTX || (cat) == WSL_CAT_SYNC_EVENT || (cat) == WSL_CAT_ALLOC ||                  \
     (cat) == WSL_CAT_ALLOC_MANAGED || (cat) == WSL_CAT_HOST_ALLOC || (cat) == WSL_CAT_FREE ||              \
     (cat) == WSL_CAT_HOST_FREE || ((cat) >= WSL_CAT_COPY_ANY && (cat) <= WSL_CAT_MEMSET_ASYNC))

/* The built-in `wsl2` emulation, as deltas over native Linux. Only the launch
 * has a published WSL2 figure against a native one of the same order
 * (docs/emulation.md): ~8.25 us per launch on WSL2 (RTX 4080 S, a user
 * report) against 4.22 us measured natively on the H200 (facts: 4.19-4.25 us).
 * Synchronization and allocation deltas are not published: 0. */
#define WSL_EMU_WSL2_LAUNCH_NS 4000u

static inline int wsl_emu_fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, a, b);
    return -1;
}

/* A cost "N", "+N", with an optional unit ns (default), us, ms; *out in ns. */
static inline int wsl_emu_cost_parse(const char *s, size_t n, uint64_t *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    const char *p = buf;
    if (*p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    char *end;
    double v = strtod(p, &end);
    double mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "ns"))
        mul = 1;
    else if (!strcmp(end, "us"))
        mul = 1e3;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else
        return -1;
    v *= mul;
    if (!(v >= 0) || v > 1e10) /* at most 10 s a call */
        return -1;
    *out = (uint64_t)(v + 0.5);
    return 0;
}

/* A rate "N[unit]" with unit B/s (default), KB/s, MB/s, GB/s (x1000) or
 * KiB/s, MiB/s, GiB/s (x1024); *out in bytes per second, at least 1. */
static inline int wsl_emu_rate_parse(const char *s, size_t n, uint64_t *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (buf[0] < '0' || buf[0] > '9')
        return -1;
    char *end;
    double v = strtod(buf, &end);
    static const struct { const char *unit; double mul; } units[] = {
        {"", 1}, {"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9},
        {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            v *= units[i].mul;
            if (!(v >= 1) || v > 1e15)
                return -1;
            *out = (uint64_t)(v + 0.5);
            return 0;
        }
    return -1;
}

/* An fs:PREFIX=TYPE item's prefix (p, n bytes) and type (ty, tn bytes) into fs. */
static inline int wsl_emu_fs_add(struct wsl_emu_fs *fs, const char *p, size_t n, const char *ty, size_t tn,
                                 const char *item, char *err, size_t errlen)
{
    if (tn != 2 || memcmp(ty, "9p", 2) != 0)
        return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': the only file-system type emulated is 9p%s", item, "");
    if (n == 0 || p[0] != '/')
        return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': the path is absolute (fs:/data=9p)%s", item, "");
    while (n > 1 && p[n - 1] == '/')
        n--;
    if (n == 1)
        n = 0; /* "/": every path */
    if (n >= WSL_EMU_FS_PATH)
        return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': the path is longer than %s bytes", item, "255");
    if (fs->count == WSL_EMU_FS_MAX)
        return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': at most %s fs: paths", item, "8");
    memcpy(fs->prefix[fs->count], p, n);
    fs->prefix[fs->count][n] = 0;
    fs->len[fs->count] = (uint16_t)n;
    fs->count++;
    return 0;
}

/* A number after "key": in JSON text (top level or not: the calibration
 * format keeps these five at the top); 1 found, 0 absent or null, -1 bad. */
static inline int wsl_emu_json_number(const char *text, const char *key, double *out)
{
    char pat[48];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(text, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p++ != ':')
        return -1;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!strncmp(p, "null", 4))
        return 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p || !(v >= 0) || v > 1e10)
        return -1;
    *out = v;
    return 1;
}

/* An emulation file's text (NUL-terminated): 0, or -1 with err. */
static inline int wsl_emu_parse_json(const char *text, const char *origin, struct wsl_emu_spec *s, char *err,
                                     size_t errlen)
{
    const char *p = strstr(text, "\"platform\"");
    if (p) {
        p += 10;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ':')
            p++;
    }
    if (!p || strncmp(p, "\"emulation\"", 11) != 0)
        return wsl_emu_fail(err, errlen, "%s: an emulation file has \"platform\": \"emulation\"%s", origin, "");
    static const char *const keys[WSL_EMU_FAMILIES] = {"launch_ns", "sync_ns", "alloc_ns", "free_ns",
                                                         "memcpy_ns"};
    for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++) {
        double v = 0;
        int got = wsl_emu_json_number(text, keys[f], &v);
        if (got < 0)
            return wsl_emu_fail(err, errlen, "%s: \"%s\": expected a cost in ns (a number >= 0, or null)", origin,
                                keys[f]);
        s->ns[f] = got ? (uint64_t)(v + 0.5) : 0;
    }
    return 0;
}

/* Whether SPEC names a file rather than inline costs or a built-in name. */
static inline int wsl_emu_spec_is_file(const char *spec)
{
    size_t n = strlen(spec);
    return strchr(spec, '=') == NULL &&
           (strchr(spec, '/') != NULL || (n > 5 && !strcmp(spec + n - 5, ".json")));
}

/* Whether SPEC is inline costs (KEY=COST,...). */
static inline int wsl_emu_spec_is_inline(const char *spec) { return strchr(spec, '=') != NULL; }

/* Parses a built-in name or inline SPEC (files: the caller reads the text and
 * calls wsl_emu_parse_json). 0, or -1 with a one-line reason in err. */
static inline int wsl_emu_parse(const char *spec, struct wsl_emu_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (strlen(spec) >= sizeof s->text)
        return wsl_emu_fail(err, errlen, "emulation SPEC is longer than %s bytes%s", "511", "");
    strcpy(s->text, spec);
    if (!strcmp(spec, "wsl2")) {
        s->ns[WSL_EMU_LAUNCH] = WSL_EMU_WSL2_LAUNCH_NS;
        return 0;
    }
    if (!wsl_emu_spec_is_inline(spec))
        return wsl_emu_fail(err, errlen, "emulation SPEC '%.120s': expected wsl2, a file, or KEY=+COST,...%s", spec, "");
    int free_given = 0, meta_given = 0, read_given = 0, write_given = 0, fs_cost_given = 0;
    const char *p = spec;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char item[128]; /* the item as quoted in an error: its first 120 bytes */
        snprintf(item, sizeof item, "%.*s", (int)(n < 120 ? n : 120), p);
        if (n == 4 && !strncmp(p, "wsl2", 4)) {
            s->ns[WSL_EMU_LAUNCH] = WSL_EMU_WSL2_LAUNCH_NS;
            p = e ? e + 1 : p + n;
            continue;
        }
        if (n >= 3 && !strncmp(p, "fs:", 3)) { /* fs:PREFIX=TYPE: the type after the last '=' */
            const char *eq = NULL;
            for (const char *q = p + 3; q < p + n; q++)
                if (*q == '=')
                    eq = q;
            if (!eq)
                return wsl_emu_fail(err, errlen, "emulation SPEC: '%s' is not fs:PATH=9p%s", item, "");
            if (wsl_emu_fs_add(&s->fs, p + 3, (size_t)(eq - p - 3), eq + 1, (size_t)(p + n - eq - 1), item, err,
                               errlen) != 0)
                return -1;
            p = e ? e + 1 : p + n;
            continue;
        }
        const char *eq = memchr(p, '=', n);
        if (!eq)
            return wsl_emu_fail(err, errlen, "emulation SPEC: '%s' is not KEY=COST%s", item, "");
        size_t kn = (size_t)(eq - p);
        if (kn == 6 && !strncmp(p, "fsmeta", 6)) {
            if (wsl_emu_cost_parse(eq + 1, n - kn - 1, &s->fs.meta_ns) != 0)
                return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': expected a cost such as +400us, 1ms%s",
                                    item, "");
            meta_given = fs_cost_given = 1;
            p = e ? e + 1 : p + n;
            continue;
        }
        if ((kn == 6 && !strncmp(p, "fsread", 6)) || (kn == 7 && !strncmp(p, "fswrite", 7))) {
            uint64_t *dst = kn == 6 ? &s->fs.read_bps : &s->fs.write_bps;
            if (wsl_emu_rate_parse(eq + 1, n - kn - 1, dst) != 0)
                return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': expected a rate such as 330MB/s, 1GiB/s%s",
                                    item, "");
            if (kn == 6)
                read_given = 1;
            else
                write_given = 1;
            fs_cost_given = 1;
            p = e ? e + 1 : p + n;
            continue;
        }
        int fam = -1;
        for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
            if (strlen(wsl_emu_family_name(f)) == kn && !strncmp(p, wsl_emu_family_name(f), kn))
                fam = (int)f;
        if (fam < 0)
            return wsl_emu_fail(err, errlen,
                                "emulation SPEC: unknown key in '%s' (expected launch, sync, alloc, free, copy, "
                                "fs:PATH=9p, fsmeta, fsread, fswrite)%s",
                                item, "");
        uint64_t v;
        if (wsl_emu_cost_parse(eq + 1, n - kn - 1, &v) != 0)
            return wsl_emu_fail(err, errlen, "emulation SPEC: '%s': expected a cost such as +8us, 500ns, 1ms%s",
                                item, "");
        s->ns[fam] = v;
        if (fam == WSL_EMU_FREE)
            free_given = 1;
        if (fam == WSL_EMU_ALLOC && !free_given)
            s->ns[WSL_EMU_FREE] = v;
        p = e ? e + 1 : p + n;
    }
    if (fs_cost_given && !s->fs.count)
        return wsl_emu_fail(err, errlen, "emulation SPEC: fsmeta, fsread and fswrite need an fs:PATH=9p item%s%s",
                            "", "");
    if (s->fs.count) { /* 9p's figures where not given */
        if (!meta_given)
            s->fs.meta_ns = WSL_EMU_9P_META_NS;
        if (!read_given)
            s->fs.read_bps = WSL_EMU_9P_READ_BPS;
        if (!write_given)
            s->fs.write_bps = WSL_EMU_9P_WRITE_BPS;
    }
    return 0;
}

/* ---- EMULATION chunk payload (trace format 1.8): this, then the SPEC text
 * (spec_size bytes, NUL-terminated). Written after PROCESS when the process
 * ran under WSLSHIM_EMULATE. */
struct wsl_emulation_info {
    uint32_t families;             /* entries of ns that follow: WSL_EMU_FAMILIES, or 8 with the file system's */
    uint32_t spec_size;            /* bytes of SPEC text after this struct, its NUL included */
    uint64_t ns[8];                /* added ns per call, by enum wsl_emu_family; unused entries 0; then
                                    * (families 8) WSL_EMU_INFO_FS_META, _FS_READ, _FS_WRITE: the file
                                    * system's fsmeta (ns), fsread and fswrite (bytes/s); its paths are
                                    * in the SPEC text */
};
enum { WSL_EMU_INFO_FS_META = 5, WSL_EMU_INFO_FS_READ = 6, WSL_EMU_INFO_FS_WRITE = 7 };
_Static_assert(sizeof(struct wsl_emulation_info) == 72, "emulation info is 72 bytes");
_Static_assert(WSL_EMU_FAMILIES <= 8, "families fit the chunk");

#endif /* WSLSHIM_EMULATION_H */
