/* Two runs side by side and the wall-time difference split into causes (compare.h). */
#include "compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wslshim/trace_format.h"

static const char *const groups[] = {"launches", "synchronizations", "allocations", "copies", "memsets", "events",
                                     "other"};
#define GROUP_COUNT (sizeof groups / sizeof groups[0])

static int group_index(unsigned c)
{
    switch (c) {
    case WSL_CAT_LAUNCH:
    case WSL_CAT_GRAPH:
    case WSL_CAT_HOSTFN:
        return 0;
    case WSL_CAT_SYNC_STREAM:
    case WSL_CAT_SYNC_CTX:
    case WSL_CAT_SYNC_EVENT:
    case WSL_CAT_STREAM_WAIT:
    case WSL_CAT_QUERY:
        return 1;
    case WSL_CAT_ALLOC:
    case WSL_CAT_ALLOC_MANAGED:
    case WSL_CAT_FREE:
    case WSL_CAT_HOST_ALLOC:
    case WSL_CAT_HOST_FREE:
    case WSL_CAT_HOST_REGISTER:
    case WSL_CAT_HOST_UNREGISTER:
        return 2;
    case WSL_CAT_COPY_ANY:
    case WSL_CAT_COPY_ANY_ASYNC:
    case WSL_CAT_COPY_HTOD:
    case WSL_CAT_COPY_HTOD_ASYNC:
    case WSL_CAT_COPY_DTOH:
    case WSL_CAT_COPY_DTOH_ASYNC:
    case WSL_CAT_COPY_DTOD:
    case WSL_CAT_COPY_DTOD_ASYNC:
        return 3;
    case WSL_CAT_MEMSET:
    case WSL_CAT_MEMSET_ASYNC:
        return 4;
    case WSL_CAT_EVENT_RECORD:
        return 5;
    default:
        return wsl_is_io_category(c) ? -1 : 6;
    }
}

const char *wsl_api_group(unsigned category)
{
    int g = group_index(category);
    return g < 0 ? NULL : groups[g];
}

/* "1234", "12.3 k", "1.20 M" */
static const char *format_count(char *buf, size_t size, double n)
{
    double a = fabs(n);
    if (a >= 1e9)
        snprintf(buf, size, "%.2f G", n / 1e9);
    else if (a >= 1e6)
        snprintf(buf, size, "%.2f M", n / 1e6);
    else if (a >= 1e4)
        snprintf(buf, size, "%.1f k", n / 1e3);
    else
        snprintf(buf, size, "%.0f", n);
    return buf;
}

static const char *format_ns_d(char *buf, size_t size, double ns)
{
    return wsl_format_ns(buf, size, ns > 0 ? (uint64_t)(ns + 0.5) : 0);
}

static void add_cause(struct wsl_compare *c, enum wsl_cause_kind kind, const char *name, double estimate, char *text)
{
    if (fabs(estimate) < WSL_COMPARE_MIN_CAUSE_NS) {
        free(text);
        return;
    }
    c->causes = xrealloc(c->causes, (c->cause_count + 1) * sizeof *c->causes);
    c->causes[c->cause_count++] = (struct wsl_cause){
        .kind = kind, .name = name, .estimate_ns = (int64_t)llround(estimate), .text = text};
}

struct group_sum {
    uint64_t calls_a, calls_b, ns_a, ns_b;
};

static void api_causes(struct wsl_compare *c)
{
    struct group_sum g[GROUP_COUNT];
    memset(g, 0, sizeof g);
    for (size_t i = 0; i < c->api_count; i++) {
        const struct wsl_compare_api *x = &c->apis[i];
        int k = group_index(x->category);
        if (k < 0)
            continue;
        if (x->a) {
            g[k].calls_a += x->a->ns.count;
            g[k].ns_a += x->a->ns.sum;
        }
        if (x->b) {
            g[k].calls_b += x->b->ns.count;
            g[k].ns_b += x->b->ns.sum;
        }
    }
    for (size_t k = 0; k < GROUP_COUNT; k++) {
        double na = (double)g[k].calls_a, nb = (double)g[k].calls_b;
        double ma = na ? (double)g[k].ns_a / na : 0, mb = nb ? (double)g[k].ns_b / nb : 0;
        if (!na && !nb)
            continue;
        /* with no calls in A, the calls term carries B's whole time (mean_a := mean_b) */
        double ref = na ? ma : mb;
        double calls_term = (nb - na) * ref, time_term = nb * (mb - ref);
        char n1[32], n2[32], n3[32], t1[32], t2[32];
        add_cause(c, WSL_CAUSE_API_CALLS, groups[k], calls_term,
                  xasprintf("%s %s %s in B (%s -> %s) x %s each", format_count(n1, sizeof n1, fabs(nb - na)),
                            nb >= na ? "more" : "fewer", groups[k], format_count(n2, sizeof n2, na),
                            format_count(n3, sizeof n3, nb), format_ns_d(t1, sizeof t1, ref)));
        add_cause(c, WSL_CAUSE_API_TIME, groups[k], time_term,
                  xasprintf("%s %s %s each in B (%s -> %s) x %s calls", groups[k],
                            format_ns_d(t1, sizeof t1, fabs(mb - ref)), mb >= ref ? "slower" : "faster",
                            format_ns_d(t2, sizeof t2, ref),
                            format_ns_d(n3, sizeof n3, mb), format_count(n1, sizeof n1, nb)));
    }
}

static void io_causes(struct wsl_compare *c)
{
    for (size_t i = 0; i < c->fs_count; i++) {
        const struct wsl_compare_fs *f = &c->fs[i];
        uint64_t ta = f->a ? wsl_io_time(&f->a->all) : 0, tb = f->b ? wsl_io_time(&f->b->all) : 0;
        const struct wsl_io_fs *side = f->b ? f->b : f->a;
        const struct wsl_io *io = f->b ? &c->b->io : &c->a->io;
        const char *mount = side->mount_count ? io->mounts[side->mounts[0]].mount_point : "";
        char a[32], b[32], n[32], bytes[32];
        const struct wsl_io_counts *cb = f->b ? &f->b->all : &f->a->all;
        add_cause(c, WSL_CAUSE_IO, f->fstype, (double)tb - (double)ta,
                  xasprintf("file I/O on %s%s%s%s%s: %s in B vs %s in A (%s files opened, %s read in %s)",
                            f->fstype, *mount ? " (" : "", mount, *mount ? ")" : "",
                            side->crosses_windows ? ", a Windows drive" : "", wsl_format_ns(b, sizeof b, tb),
                            wsl_format_ns(a, sizeof a, ta), format_count(n, sizeof n, (double)cb->files_opened),
                            wsl_format_bytes(bytes, sizeof bytes, cb->bytes_read), f->b ? "B" : "A"));
    }
}

/* Scales the causes in the difference's direction so that the signed sum never exceeds it. */
static void attribute(struct wsl_compare *c)
{
    int64_t d = c->wall_diff_ns;
    int sign = d >= 0 ? 1 : -1;
    double same = 0, other = 0;
    for (size_t i = 0; i < c->cause_count; i++) {
        double e = (double)c->causes[i].estimate_ns * sign;
        if (e > 0)
            same += e;
        else
            other -= e;
    }
    double room = fabs((double)d) + other;
    c->scale = same > room ? room / same : 1.0;
    int64_t explained = 0;
    for (size_t i = 0; i < c->cause_count; i++) {
        struct wsl_cause *k = &c->causes[i];
        double e = (double)k->estimate_ns * sign;
        k->attributed_ns = e > 0 ? (int64_t)floor((double)k->estimate_ns * sign * c->scale) * sign : k->estimate_ns;
        explained += k->attributed_ns;
    }
    c->explained_ns = explained;
    c->unexplained_ns = d - explained;
}

static int by_attributed(const void *x, const void *y)
{
    const struct wsl_cause *a = x, *b = y;
    int64_t p = llabs(a->attributed_ns), q = llabs(b->attributed_ns);
    if (p != q)
        return p > q ? -1 : 1;
    return strcmp(a->name, b->name);
}

static uint64_t api_total(const struct wsl_compare_api *x)
{
    uint64_t a = x->a ? x->a->ns.sum : 0, b = x->b ? x->b->ns.sum : 0;
    return a > b ? a : b;
}

static int by_api_total(const void *x, const void *y)
{
    uint64_t a = api_total(x), b = api_total(y);
    if (a != b)
        return a > b ? -1 : 1;
    return strcmp(((const struct wsl_compare_api *)x)->name, ((const struct wsl_compare_api *)y)->name);
}

static uint64_t finding_lost(const struct wsl_compare_finding *f)
{
    uint64_t a = f->a ? f->a->time_lost_ns : 0, b = f->b ? f->b->time_lost_ns : 0;
    return a > b ? a : b;
}

static int by_finding_lost(const void *x, const void *y)
{
    uint64_t a = finding_lost(x), b = finding_lost(y);
    if (a != b)
        return a > b ? -1 : 1;
    return strcmp(((const struct wsl_compare_finding *)x)->id, ((const struct wsl_compare_finding *)y)->id);
}

void wsl_compare_build(struct wsl_compare *c, const struct wsl_run *a, const struct wsl_run *b)
{
    memset(c, 0, sizeof *c);
    c->a = a;
    c->b = b;
    c->wall_diff_ns = (int64_t)b->wall_ns - (int64_t)a->wall_ns;

    /* APIs: both runs' names (few: a linear search is fine) */
    const struct wsl_run *runs[2] = {a, b};
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < runs[r]->api_count; i++) {
            const struct wsl_api_stats *s = &runs[r]->apis[i];
            if (!s->ns.count)
                continue;
            struct wsl_compare_api *x = NULL;
            for (size_t k = 0; k < c->api_count && !x; k++)
                if (strcmp(c->apis[k].name, s->name) == 0)
                    x = &c->apis[k];
            if (!x) {
                c->apis = xrealloc(c->apis, (c->api_count + 1) * sizeof *c->apis);
                x = &c->apis[c->api_count++];
                memset(x, 0, sizeof *x);
                x->name = s->name;
                x->category = s->category;
            }
            if (r == 0)
                x->a = s;
            else
                x->b = s;
        }
    if (c->api_count > 1)
        qsort(c->apis, c->api_count, sizeof *c->apis, by_api_total);

    /* filesystems with data calls */
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < runs[r]->io.fs_count; i++) {
            const struct wsl_io_fs *fs = &runs[r]->io.fs[i];
            if (wsl_io_calls(&fs->all) == 0)
                continue;
            struct wsl_compare_fs *x = NULL;
            for (size_t k = 0; k < c->fs_count && !x; k++)
                if (strcmp(c->fs[k].fstype, fs->fstype) == 0)
                    x = &c->fs[k];
            if (!x) {
                c->fs = xrealloc(c->fs, (c->fs_count + 1) * sizeof *c->fs);
                x = &c->fs[c->fs_count++];
                memset(x, 0, sizeof *x);
                x->fstype = fs->fstype;
            }
            if (r == 0)
                x->a = fs;
            else
                x->b = fs;
        }

    /* bottlenecks of either run */
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < runs[r]->finding_count; i++) {
            const struct wsl_finding *f = &runs[r]->findings[i];
            struct wsl_compare_finding *x = NULL;
            for (size_t k = 0; k < c->finding_count && !x; k++)
                if (strcmp(c->findings[k].id, f->id) == 0)
                    x = &c->findings[k];
            if (!x) {
                c->findings = xrealloc(c->findings, (c->finding_count + 1) * sizeof *c->findings);
                x = &c->findings[c->finding_count++];
                memset(x, 0, sizeof *x);
                x->id = f->id;
            }
            if (r == 0)
                x->a = f;
            else
                x->b = f;
        }
    if (c->finding_count > 1)
        qsort(c->findings, c->finding_count, sizeof *c->findings, by_finding_lost);

    api_causes(c);
    io_causes(c);
    attribute(c);
    if (c->cause_count > 1)
        qsort(c->causes, c->cause_count, sizeof *c->causes, by_attributed);
}

void wsl_compare_free(struct wsl_compare *c)
{
    for (size_t i = 0; i < c->cause_count; i++)
        free(c->causes[i].text);
    free(c->causes);
    free(c->apis);
    free(c->fs);
    free(c->findings);
    memset(c, 0, sizeof *c);
}
