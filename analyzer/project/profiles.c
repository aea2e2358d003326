/*
 * profiles.c: the built-in platform profiles and the calibration-file loader.
 * Every built-in figure names its source; docs/platform-costs.md gives the
 * full citation and the caveats. Figures nobody has published stay unknown.
 */
#define _GNU_SOURCE
#include "profiles.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_reader.h"

#define UNKNOWN ((struct wsl_figure){-1.0, NULL})
#define FIG(v, s) ((struct wsl_figure){(v), (s)})

/* Sources (docs/platform-costs.md has the details). */
static const char SRC_H200[] =
    "measured by wslshim on an H200, driver 580.159.04, CUDA 13.0, empty kernel via the runtime "
    "(docs/platform-costs.md)";
static const char SRC_KOKKOS[] =
    "kokkos/kokkos#7562: 2.9-3.6 us enqueue throughput, RTX 3060 laptop, HAGS off (one report, other GPU)";
static const char SRC_WSL_PINNED[] =
    "microsoft/WSL#14078, NVIDIA/nvidia-container-toolkit#226: 0.5-1 GB pinned ceilings reported";
static const char SRC_WSL7038[] = "microsoft/WSL#7038: stat() 1.1-1.7 us on ext4, 900-1100 us on /mnt/c";
static const char SRC_ENSO[] = "enso-org/enso#1542: reading 1 GB, ~1.5 GB/s on ext4, ~330 MB/s on /mnt/c";
static const char SRC_PROBE[] = "probe";

const char *const wsl_profile_builtin_names[] = {"native", "wsl2", NULL};

static void profile_clear(struct wsl_profile *p)
{
    memset(p, 0, sizeof *p);
    struct wsl_figure *figs[] = {
        &p->launch_ns, &p->memcpy_ns, &p->sync_ns, &p->alloc_ns, &p->free_ns, &p->launch_sync_ns,
        &p->graph_kernel_ns, &p->event_record_ns, &p->event_query_ns, &p->pool_alloc_ns, &p->pool_free_ns,
        &p->pinned_alloc_ns, &p->pinned_max_bytes, &p->htod_pinned_bytes_per_s, &p->dtoh_pinned_bytes_per_s,
        &p->htod_pageable_bytes_per_s, &p->dtoh_pageable_bytes_per_s,
    };
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        *figs[i] = UNKNOWN;
}

static struct wsl_profile_alloc alloc_pair(uint64_t bytes, struct wsl_figure pair)
{
    return (struct wsl_profile_alloc){bytes, UNKNOWN, UNKNOWN, pair};
}

static struct wsl_profile_fs fs_entry(const char *fstype, const char *kind)
{
    struct wsl_profile_fs f;
    memset(&f, 0, sizeof f);
    snprintf(f.fstype, sizeof f.fstype, "%s", fstype);
    snprintf(f.kind, sizeof f.kind, "%s", kind);
    f.stat_ns = f.open_read_close_ns = f.read_bytes_per_s = UNKNOWN;
    return f;
}

static void builtin_native(struct wsl_profile *p)
{
    snprintf(p->name, sizeof p->name, "native");
    snprintf(p->platform, sizeof p->platform, "native");
    snprintf(p->gpu, sizeof p->gpu, "NVIDIA H200");
    /* Midpoints of the two runs' ranges. */
    p->launch_ns = FIG(4220, SRC_H200);          /* 4.19-4.25 us */
    p->launch_sync_ns = FIG(9330, SRC_H200);     /* 9.28-9.38 us */
    p->sync_ns = FIG(1655, SRC_H200);            /* 1.63-1.68 us */
    p->graph_kernel_ns = FIG(510, SRC_H200);     /* graph of 100 empty kernels */
    /* cudaMalloc + cudaFree were measured as a pair only. */
    p->alloc[p->alloc_count++] = alloc_pair(1ull << 20, FIG(77500, SRC_H200));   /* 75-80 us */
    p->alloc[p->alloc_count++] = alloc_pair(64ull << 20, FIG(131500, SRC_H200)); /* 126-137 us */
    p->alloc[p->alloc_count++] = alloc_pair(1ull << 30, FIG(776500, SRC_H200));  /* 772-781 us */
}

static void builtin_wsl2(struct wsl_profile *p)
{
    snprintf(p->name, sizeof p->name, "wsl2");
    snprintf(p->platform, sizeof p->platform, "wsl2");
    p->launch_ns = FIG(3250, SRC_KOKKOS);
    p->pinned_max_bytes = FIG((double)(512ull << 20), SRC_WSL_PINNED);
    struct wsl_profile_fs ext4 = fs_entry("ext4", "local");
    ext4.stat_ns = FIG(1400, SRC_WSL7038);
    ext4.read_bytes_per_s = FIG(1.5e9, SRC_ENSO);
    struct wsl_profile_fs drvfs = fs_entry("9p", "windows_drive");
    drvfs.stat_ns = FIG(1000000, SRC_WSL7038);
    drvfs.read_bytes_per_s = FIG(330e6, SRC_ENSO);
    p->fs[p->fs_count++] = ext4;
    p->fs[p->fs_count++] = drvfs;
}

/* ---- calibration files ---- */

struct loader {
    char *err;
    size_t errlen;
    int failed;
};

static void lfail(struct loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lfail(struct loader *L, const char *fmt, ...)
{
    if (L->failed)
        return;
    L->failed = 1;
    if (L->err && L->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err, L->errlen, fmt, ap);
        va_end(ap);
    }
}

/* An optional object member: NULL when absent or null; an error if it has
 * another type than want. */
static const struct wsl_json *member(struct loader *L, const struct wsl_json *obj, const char *path,
                                     const char *key, enum wsl_json_type want)
{
    const struct wsl_json *v = wsl_json_get(obj, key);
    if (!v || v->type == WSL_JSON_NULL)
        return NULL;
    if (v->type != want) {
        lfail(L, "\"%s%s\": expected %s, found %s", path, key, wsl_json_type_name(want),
              wsl_json_type_name(v->type));
        return NULL;
    }
    return v;
}

/* A cost: a non-negative number (or null / absent: unknown). */
static struct wsl_figure cost(struct loader *L, const struct wsl_json *obj, const char *path, const char *key)
{
    const struct wsl_json *v = member(L, obj, path, key, WSL_JSON_NUMBER);
    if (!v)
        return UNKNOWN;
    if (v->number < 0) {
        lfail(L, "\"%s%s\": a cost cannot be negative (%g)", path, key, v->number);
        return UNKNOWN;
    }
    return FIG(v->number, SRC_PROBE);
}

/* The median of a statistics object {"median_ns": ...} at obj[key]. */
static struct wsl_figure median(struct loader *L, const struct wsl_json *obj, const char *path, const char *key)
{
    const struct wsl_json *s = member(L, obj, path, key, WSL_JSON_OBJECT);
    if (!s)
        return UNKNOWN;
    char sub[128];
    snprintf(sub, sizeof sub, "%s%s.", path, key);
    return cost(L, s, sub, "median_ns");
}

static void copy_string(struct loader *L, const struct wsl_json *obj, const char *path, const char *key, char *out,
                        size_t size)
{
    const struct wsl_json *v = member(L, obj, path, key, WSL_JSON_STRING);
    if (v)
        snprintf(out, size, "%s", v->string);
}

static void load_allocs(struct loader *L, struct wsl_profile *p, const struct wsl_json *root)
{
    const struct wsl_json *a = member(L, root, "", "alloc_by_size", WSL_JSON_ARRAY);
    for (size_t i = 0; a && i < a->count && !L->failed; i++) {
        const struct wsl_json *e = &a->items[i];
        char path[64];
        snprintf(path, sizeof path, "alloc_by_size[%zu].", i);
        if (e->type != WSL_JSON_OBJECT) {
            lfail(L, "\"alloc_by_size[%zu]\": expected object, found %s", i, wsl_json_type_name(e->type));
            return;
        }
        struct wsl_figure bytes = cost(L, e, path, "bytes");
        if (!L->failed && (!wsl_figure_known(bytes) || bytes.value < 1 || bytes.value > 1e18 ||
                           bytes.value != floor(bytes.value))) {
            lfail(L, "\"%sbytes\": expected a whole number of bytes", path);
            return;
        }
        if (p->alloc_count == WSL_PROFILE_MAX_ALLOC) {
            lfail(L, "\"alloc_by_size\": more than %d sizes", WSL_PROFILE_MAX_ALLOC);
            return;
        }
        struct wsl_profile_alloc *pa = &p->alloc[p->alloc_count];
        pa->bytes = (uint64_t)bytes.value;
        if (p->alloc_count && pa->bytes <= p->alloc[p->alloc_count - 1].bytes) {
            lfail(L, "\"alloc_by_size\": sizes must increase");
            return;
        }
        pa->alloc_ns = median(L, e, path, "alloc");
        pa->free_ns = median(L, e, path, "free");
        pa->alloc_free_ns = wsl_figure_known(pa->alloc_ns) && wsl_figure_known(pa->free_ns)
                                ? FIG(pa->alloc_ns.value + pa->free_ns.value, SRC_PROBE)
                                : UNKNOWN;
        p->alloc_count++;
    }
}

static void load_bandwidth(struct loader *L, struct wsl_profile *p, const struct wsl_json *root)
{
    const struct wsl_json *a = member(L, root, "", "bandwidth", WSL_JSON_ARRAY);
    for (size_t i = 0; a && i < a->count && !L->failed; i++) {
        const struct wsl_json *e = &a->items[i];
        char path[64];
        snprintf(path, sizeof path, "bandwidth[%zu].", i);
        if (e->type != WSL_JSON_OBJECT) {
            lfail(L, "\"bandwidth[%zu]\": expected object, found %s", i, wsl_json_type_name(e->type));
            return;
        }
        char dir[16] = "", host[16] = "";
        copy_string(L, e, path, "direction", dir, sizeof dir);
        copy_string(L, e, path, "host", host, sizeof host);
        struct wsl_figure bw = cost(L, e, path, "bytes_per_s");
        struct wsl_figure *slot = NULL;
        if (!strcmp(dir, "htod"))
            slot = !strcmp(host, "pinned") ? &p->htod_pinned_bytes_per_s
                   : !strcmp(host, "pageable") ? &p->htod_pageable_bytes_per_s : NULL;
        else if (!strcmp(dir, "dtoh"))
            slot = !strcmp(host, "pinned") ? &p->dtoh_pinned_bytes_per_s
                   : !strcmp(host, "pageable") ? &p->dtoh_pageable_bytes_per_s : NULL;
        if (!L->failed && !slot) {
            lfail(L, "\"%s\": direction must be htod or dtoh and host pinned or pageable", path);
            return;
        }
        if (slot)
            *slot = bw;
    }
}

static void load_files(struct loader *L, struct wsl_profile *p, const struct wsl_json *root)
{
    const struct wsl_json *file = member(L, root, "", "file", WSL_JSON_OBJECT);
    const struct wsl_json *by_fs = file ? member(L, file, "file.", "by_fs", WSL_JSON_OBJECT) : NULL;
    for (size_t i = 0; by_fs && i < by_fs->count && !L->failed; i++) {
        const struct wsl_json *e = &by_fs->items[i];
        const char *fstype = by_fs->keys[i];
        char path[96];
        snprintf(path, sizeof path, "file.by_fs.%.40s.", fstype);
        if (e->type != WSL_JSON_OBJECT) {
            lfail(L, "\"file.by_fs.%.40s\": expected object, found %s", fstype, wsl_json_type_name(e->type));
            return;
        }
        if (!*fstype || strlen(fstype) >= sizeof p->fs[0].fstype) {
            lfail(L, "\"file.by_fs\": bad filesystem name \"%.40s\"", fstype);
            return;
        }
        if (p->fs_count == WSL_PROFILE_MAX_FS) {
            lfail(L, "\"file.by_fs\": more than %d filesystems", WSL_PROFILE_MAX_FS);
            return;
        }
        struct wsl_profile_fs f = fs_entry(fstype, "");
        copy_string(L, e, path, "kind", f.kind, sizeof f.kind);
        f.stat_ns = median(L, e, path, "stat");
        f.open_read_close_ns = median(L, e, path, "open_read_close");
        const struct wsl_json *seq = member(L, e, path, "seq_read", WSL_JSON_OBJECT);
        if (seq) {
            char sub[128];
            snprintf(sub, sizeof sub, "%sseq_read.", path);
            f.read_bytes_per_s = cost(L, seq, sub, "cold_bytes_per_s");
            if (!wsl_figure_known(f.read_bytes_per_s))
                f.read_bytes_per_s = cost(L, seq, sub, "warm_bytes_per_s");
        }
        p->fs[p->fs_count++] = f;
    }
}

int wsl_profile_parse(const char *text, size_t len, const char *origin, struct wsl_profile *p, char *err,
                      size_t errlen)
{
    struct loader L = {err, errlen, 0};
    char jerr[200];
    profile_clear(p);
    snprintf(p->origin, sizeof p->origin, "%s", origin ? origin : "");
    struct wsl_json *root = wsl_json_parse(text, len, jerr, sizeof jerr);
    if (!root) {
        lfail(&L, "%s: not valid JSON: %s", p->origin, jerr);
        return -1;
    }
    if (root->type != WSL_JSON_OBJECT) {
        lfail(&L, "%s: a calibration file is a JSON object, found %s", p->origin, wsl_json_type_name(root->type));
        goto out;
    }
    const struct wsl_json *schema = wsl_json_get(root, "schema");
    if (!schema || schema->type != WSL_JSON_NUMBER || schema->number != 1) {
        lfail(&L, "%s: not a calibration file of schema 1 (\"schema\": 1 missing)", p->origin);
        goto out;
    }
    const struct wsl_json *platform = wsl_json_get(root, "platform");
    if (!platform || platform->type != WSL_JSON_STRING || !*platform->string) {
        lfail(&L, "%s: \"platform\" must be a non-empty string", p->origin);
        goto out;
    }
    snprintf(p->platform, sizeof p->platform, "%s", platform->string);
    snprintf(p->name, sizeof p->name, "%s", platform->string);
    static const char *const required[] = {"launch_ns", "memcpy_ns", "sync_ns", "alloc_ns", "free_ns"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        const struct wsl_json *v = wsl_json_get(root, required[i]);
        if (!v || (v->type != WSL_JSON_NUMBER && v->type != WSL_JSON_NULL)) {
            lfail(&L, "%s: \"%s\" must be a number (or null when not measured)", p->origin, required[i]);
            goto out;
        }
    }
    p->launch_ns = cost(&L, root, "", "launch_ns");
    p->memcpy_ns = cost(&L, root, "", "memcpy_ns");
    p->sync_ns = cost(&L, root, "", "sync_ns");
    p->alloc_ns = cost(&L, root, "", "alloc_ns");
    p->free_ns = cost(&L, root, "", "free_ns");

    const struct wsl_json *machine = member(&L, root, "", "machine", WSL_JSON_OBJECT);
    if (machine)
        copy_string(&L, machine, "machine.", "gpu", p->gpu, sizeof p->gpu);
    const struct wsl_json *launch = member(&L, root, "", "launch", WSL_JSON_OBJECT);
    if (launch)
        p->launch_sync_ns = median(&L, launch, "launch.", "with_sync");
    const struct wsl_json *graph = member(&L, root, "", "graph", WSL_JSON_OBJECT);
    if (graph)
        p->graph_kernel_ns = cost(&L, graph, "graph.", "per_kernel_ns");
    const struct wsl_json *event = member(&L, root, "", "event", WSL_JSON_OBJECT);
    if (event) {
        p->event_record_ns = median(&L, event, "event.", "record");
        p->event_query_ns = median(&L, event, "event.", "query");
    }
    const struct wsl_json *pool = member(&L, root, "", "pool_alloc", WSL_JSON_OBJECT);
    if (pool) {
        p->pool_alloc_ns = median(&L, pool, "pool_alloc.", "alloc");
        p->pool_free_ns = median(&L, pool, "pool_alloc.", "free");
    }
    const struct wsl_json *pinned = member(&L, root, "", "pinned", WSL_JSON_OBJECT);
    if (pinned) {
        p->pinned_alloc_ns = median(&L, pinned, "pinned.", "alloc_1mib");
        p->pinned_max_bytes = cost(&L, pinned, "pinned.", "max_bytes");
    }
    load_allocs(&L, p, root);
    load_bandwidth(&L, p, root);
    load_files(&L, p, root);
    if (L.failed && err && errlen) {
        /* Name the file in front of the key-level reason. */
        char reason[256];
        snprintf(reason, sizeof reason, "%s", err);
        snprintf(err, errlen, "%s: %s", p->origin, reason);
    }
out:
    wsl_json_free(root);
    return L.failed ? -1 : 0;
}

/* Calibration files are small; anything past this is not one. */
#define PROFILE_MAX_FILE (4u << 20)

int wsl_profile_load(const char *name_or_path, struct wsl_profile *p, char *err, size_t errlen)
{
    struct loader L = {err, errlen, 0};
    if (!name_or_path || !*name_or_path) {
        lfail(&L, "no profile named");
        return -1;
    }
    int is_path = strchr(name_or_path, '/') != NULL ||
                  (strlen(name_or_path) > 5 && !strcmp(name_or_path + strlen(name_or_path) - 5, ".json"));
    if (!is_path) {
        profile_clear(p);
        snprintf(p->origin, sizeof p->origin, "built-in");
        if (!strcmp(name_or_path, "native")) {
            builtin_native(p);
            return 0;
        }
        if (!strcmp(name_or_path, "wsl2")) {
            builtin_wsl2(p);
            return 0;
        }
        if (access(name_or_path, F_OK) != 0) {
            lfail(&L, "unknown profile '%s' (built-in: native, wsl2; or a calibration file from wslshim-probe)",
                  name_or_path);
            return -1;
        }
    }
    int fd = open(name_or_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        lfail(&L, "%s: %s", name_or_path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        lfail(&L, "%s: not a regular file", name_or_path);
        return -1;
    }
    if (st.st_size > (off_t)PROFILE_MAX_FILE) {
        close(fd);
        lfail(&L, "%s: too large for a calibration file (%lld bytes)", name_or_path, (long long)st.st_size);
        return -1;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *text = malloc(cap);
    if (!text) {
        close(fd);
        lfail(&L, "%s: out of memory", name_or_path);
        return -1;
    }
    for (;;) {
        ssize_t r = read(fd, text + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            lfail(&L, "%s: %s", name_or_path, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) { /* grew since fstat */
            lfail(&L, "%s: file changed while being read", name_or_path);
            break;
        }
    }
    close(fd);
    int rc = L.failed ? -1 : wsl_profile_parse(text, n, name_or_path, p, err, errlen);
    free(text);
    return rc;
}

double wsl_profile_alloc_free_ns(const struct wsl_profile *p, uint64_t bytes)
{
    /* Sizes with a known pair cost. */
    uint64_t sz[WSL_PROFILE_MAX_ALLOC];
    double ns[WSL_PROFILE_MAX_ALLOC];
    size_t n = 0;
    for (size_t i = 0; i < p->alloc_count; i++) {
        const struct wsl_profile_alloc *a = &p->alloc[i];
        double v = wsl_figure_known(a->alloc_free_ns) ? a->alloc_free_ns.value
                   : wsl_figure_known(a->alloc_ns) && wsl_figure_known(a->free_ns)
                       ? a->alloc_ns.value + a->free_ns.value
                       : -1;
        if (v >= 0) {
            sz[n] = a->bytes;
            ns[n++] = v;
        }
    }
    if (!n)
        return wsl_figure_known(p->alloc_ns) && wsl_figure_known(p->free_ns) ? p->alloc_ns.value + p->free_ns.value
                                                                           : -1;
    if (bytes <= sz[0])
        return ns[0];
    if (bytes >= sz[n - 1])
        return ns[n - 1];
    size_t k = 1;
    while (sz[k] < bytes)
        k++;
    double t = (log((double)bytes) - log((double)sz[k - 1])) / (log((double)sz[k]) - log((double)sz[k - 1]));
    return ns[k - 1] + t * (ns[k] - ns[k - 1]);
}

const struct wsl_profile_fs *wsl_profile_fs_find(const struct wsl_profile *p, const char *fstype)
{
    for (size_t i = 0; fstype && i < p->fs_count; i++)
        if (!strcmp(p->fs[i].fstype, fstype))
            return &p->fs[i];
    return NULL;
}
