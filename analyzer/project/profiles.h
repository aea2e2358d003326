/*
 * Platform profiles: what the host side of CUDA calls and file access costs
 * on one platform. Two are built in (`native`, `wsl2`), every figure citing
 * where it comes from (docs/platform-costs.md); any other comes from a
 * calibration file written by wslshim-probe (docs/probes.md), read here.
 *
 * A figure is either known (value >= 0) or unknown (value < 0): nothing is
 * published for many costs, and a profile never invents one. A replay that
 * needs an unknown figure must say so and ask for a probe file.
 */
#ifndef WSLSHIM_PROFILES_H
#define WSLSHIM_PROFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One cost. src: where the figure comes from (a citation for built-in
 * figures, "probe" for figures read from a calibration file). */
struct wsl_figure {
    double value;       /* < 0: unknown */
    const char *src;    /* static string; NULL when unknown */
};

static inline bool wsl_figure_known(struct wsl_figure f) { return f.value >= 0; }

#define WSL_PROFILE_MAX_ALLOC 16
#define WSL_PROFILE_MAX_FS 8

/* cuMemAlloc/cuMemFree of one size. Built-in figures are often only known
 * as an alloc+free pair. */
struct wsl_profile_alloc {
    uint64_t bytes;
    struct wsl_figure alloc_ns, free_ns, alloc_free_ns;
};

/* File costs on one filesystem type (the fstype of mountinfo: "ext4", "9p"...). */
struct wsl_profile_fs {
    char fstype[32];
    char kind[32];                          /* wsl_fs_kind_name: "local", "windows_drive"... ("" unknown) */
    struct wsl_figure stat_ns;              /* one stat() of an existing file */
    struct wsl_figure open_read_close_ns;   /* open + read of a small file + close */
    struct wsl_figure read_bytes_per_s;     /* sequential read of a large file (page cache cold if known) */
};

struct wsl_profile {
    char name[64];          /* "native", "wsl2", or the file's "platform" */
    char platform[32];      /* "native", "wsl2", "wsl1" */
    char origin[256];       /* "built-in" or the calibration file's path */
    char gpu[128];          /* the GPU the figures were measured on ("" unknown) */

    /* The contract's five (docs/probes.md: how each is measured). */
    struct wsl_figure launch_ns;    /* one kernel submission, back to back */
    struct wsl_figure memcpy_ns;    /* one small async copy submission */
    struct wsl_figure sync_ns;      /* one synchronize of an idle stream */
    struct wsl_figure alloc_ns;     /* cuMemAlloc of 1 MiB */
    struct wsl_figure free_ns;      /* cuMemFree of it */

    struct wsl_figure launch_sync_ns;       /* launch then synchronize, per pair */
    struct wsl_figure graph_kernel_ns;      /* per kernel of a launched CUDA graph */
    struct wsl_figure event_record_ns, event_query_ns;
    struct wsl_figure pool_alloc_ns, pool_free_ns;   /* cuMemAllocAsync / cuMemFreeAsync, 1 MiB */
    struct wsl_figure pinned_alloc_ns;      /* cuMemHostAlloc of 1 MiB */
    struct wsl_figure pinned_max_bytes;     /* largest pinned allocation that succeeded */
    struct wsl_figure htod_pinned_bytes_per_s, dtoh_pinned_bytes_per_s;
    struct wsl_figure htod_pageable_bytes_per_s, dtoh_pageable_bytes_per_s;

    size_t alloc_count;
    struct wsl_profile_alloc alloc[WSL_PROFILE_MAX_ALLOC];  /* by increasing size */
    size_t fs_count;
    struct wsl_profile_fs fs[WSL_PROFILE_MAX_FS];
};

/* Fills *p from a built-in name ("native", "wsl2") or a calibration file
 * path (anything else; a name containing '/' or ending in ".json" is always
 * a path). Returns 0, or -1 with a one-line reason in err: unknown name,
 * unreadable file, bad JSON, wrong schema, a missing or wrong-typed key. */
int wsl_profile_load(const char *name_or_path, struct wsl_profile *p, char *err, size_t errlen);

/* The same, from calibration JSON text already in memory (origin names it). */
int wsl_profile_parse(const char *text, size_t len, const char *origin, struct wsl_profile *p, char *err,
                      size_t errlen);

/* Names of the built-in profiles, NULL-terminated. */
extern const char *const wsl_profile_builtin_names[];

/* Cost of a cuMemAlloc + cuMemFree pair of `bytes` from the per-size table,
 * interpolated linearly in log(size) between known sizes and clamped at the
 * ends; falls back to alloc_ns + free_ns; < 0 when unknown. */
double wsl_profile_alloc_free_ns(const struct wsl_profile *p, uint64_t bytes);

/* The file costs of fstype, or NULL. */
const struct wsl_profile_fs *wsl_profile_fs_find(const struct wsl_profile *p, const char *fstype);

#endif /* WSLSHIM_PROFILES_H */
