/*
 * NVTX ranges of a run, the run: see nvtx_analysis.h. Each trace's ranges, in its ticks, merged
 * into the run's (by kind, domain and name text) in ns; at the end the ranges sorted, the step
 * chosen (a push range named like one, else the most frequent top-level one) and its instances
 * kept per trace for the phases. A trace's reading: nvtx_analysis.c; the step's figures:
 * nvtx_step.c.
 */
#include "nvtx_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "u64_map.h"
#include "util.h"

/* ---- the run ----------------------------------------------------------------------------- */

/* The index key of a range: its kind, whether it has a domain, and the texts with their 0. */
static uint64_t range_key(unsigned kind, const char *domain, const char *name)
{
    const unsigned char head[2] = {(unsigned char)kind, domain != NULL};
    uint64_t h = wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, head, sizeof head);
    if (domain)
        h = wsl_u64_map_hash_more(h, domain, strlen(domain) + 1);
    if (name)
        h = wsl_u64_map_hash_more(h, name, strlen(name) + 1);
    return wsl_u64_map_hash_key(h);
}

static bool same_text(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static struct wsl_nvtx_range *run_range(struct wsl_nvtx *n, unsigned kind, const char *domain, const char *name)
{
    uint64_t key = range_key(kind, domain, name);
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&n->index, key); s; s = wsl_u64_map_find_next(&n->index, s)) {
        struct wsl_nvtx_range *r = &n->ranges[s->value];
        if (r->kind == kind && same_text(r->domain, domain) && same_text(r->name, name))
            return r;
    }
    if (n->range_count >= WSL_NVTX_MAX_RANGES)
        return NULL;
    n->ranges = xrealloc(n->ranges, (n->range_count + 1) * sizeof *n->ranges);
    struct wsl_nvtx_range *r = &n->ranges[n->range_count];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->id = (uint32_t)n->range_count;
    r->name = xstrdup(name);
    r->domain = domain ? xstrdup(domain) : NULL;
    wsl_u64_map_insert(&n->index, key, n->range_count++);
    return r;
}

/* The text of a string id: "(unnamed)" for 0, NULL for a domain 0. */
static const char *name_of(const struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint32_t id, bool domain)
{
    if (!id)
        return domain ? NULL : "(unnamed)";
    struct wsl_u64_slot *s = wsl_u64_map_find(&t->names, id);
    if (s)
        return t->strs[s->value];
    n->unnamed_ids++;
    return domain ? "(unknown domain)" : "(unknown name)";
}

void wsl_nvtx_trace_merge(const struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint64_t unclosed, double ns_per_tick,
                          const char *path)
{
    uint32_t *run_id = xmalloc((t->range_count + 1) * sizeof *run_id);
    for (size_t i = 0; i < t->range_count; i++) {
        struct local_range *lr = &t->ranges[i];
        struct wsl_nvtx_range *r = run_range(n, lr->kind, name_of(t, n, lr->domain_id, true),
                                             name_of(t, n, lr->name_id, false));
        run_id[i] = r ? r->id : NONE;
        if (!r) {
            n->dropped++;
            continue;
        }
        r->count += lr->count;
        r->unclosed += lr->unclosed;
        r->top_level += lr->top_level;
        if (lr->max_depth > r->max_depth)
            r->max_depth = lr->max_depth;
        wsl_hist_merge_scaled(&r->ns, &lr->ticks, ns_per_tick);
        wsl_nvtx_counts_add_scaled(&r->self, &lr->self, ns_per_tick);
        wsl_nvtx_counts_add_scaled(&r->incl, &lr->incl, ns_per_tick);
    }
    bool capped = t->tops_capped;
    if (t->top_count && path) { /* the windows, by run-wide range id; only of ranges that may be the step */
        size_t kept = 0;
        for (size_t i = 0; i < t->top_count; i++)
            kept += run_id[t->tops[i].range] != NONE && t->ranges[t->tops[i].range].count >= 2;
        if (n->window_total + kept > WSL_NVTX_MAX_RUN_WINDOWS) {
            capped = true;
            kept = 0;
        }
        if (kept) {
            struct wsl_nvtx_window *w = xmalloc(kept * sizeof *w);
            size_t m = 0;
            for (size_t i = 0; i < t->top_count; i++)
                if (run_id[t->tops[i].range] != NONE && t->ranges[t->tops[i].range].count >= 2) {
                    w[m] = t->tops[i];
                    w[m++].range = run_id[t->tops[i].range];
                }
            n->window_total += kept;
            n->traces = xrealloc(n->traces, (n->trace_count + 1) * sizeof *n->traces);
            struct wsl_nvtx_trace_windows *tw = &n->traces[n->trace_count++];
            *tw = (struct wsl_nvtx_trace_windows){xstrdup(path), ns_per_tick, w, kept, NULL, 0};
            for (size_t g = 0; g < t->guess_count; g++) {
                uint32_t lr = t->guess[g].range, rid = run_id[lr];
                bool alone = rid != NONE; /* (two of the trace's ranges the run holds as one: their windows join) */
                for (size_t j = 0; j < t->range_count && alone; j++)
                    alone = j == lr || run_id[j] != rid;
                if (!alone)
                    continue;
                if (!tw->guess)
                    tw->guess = xmalloc(t->guess_count * sizeof *tw->guess);
                tw->guess[tw->guess_count].range = rid;
                tw->guess[tw->guess_count++].c = t->guess[g].c;
            }
        }
    }
    n->windows_capped |= capped;
    free(run_id);
    for (size_t i = 0; i < t->mark_count; i++) {
        const char *domain = name_of(t, n, t->marks[i].domain_id, true);
        const char *name = name_of(t, n, t->marks[i].name_id, false);
        size_t k = 0;
        while (k < n->mark_count && !(same_text(n->marks[k].domain, domain) && same_text(n->marks[k].name, name)))
            k++;
        if (k == n->mark_count) {
            if (n->mark_count >= WSL_NVTX_MAX_RANGES) {
                n->dropped++;
                continue;
            }
            n->marks = xrealloc(n->marks, (n->mark_count + 1) * sizeof *n->marks);
            n->marks[k] = (struct wsl_nvtx_mark){xstrdup(name), domain ? xstrdup(domain) : NULL, 0};
            n->mark_count++;
        }
        n->marks[k].count += t->marks[i].count;
    }
    n->pushes += t->pushes;
    n->pops += t->pops;
    n->starts += t->starts_total;
    n->ends += t->ends;
    n->marks_total += t->marks_total;
    n->unmatched_pops += t->unmatched_pops;
    n->unmatched_ends += t->unmatched_ends;
    n->unclosed += unclosed;
    n->gpu_unattributed += t->gpu_unattributed;
    n->dropped += t->dropped;
    n->lost += t->lost;
}

void wsl_nvtx_trace_end(struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint64_t end_ticks, double ns_per_tick,
                        const char *path)
{
    wsl_nvtx_trace_merge(t, n, wsl_nvtx_trace_close(t, end_ticks), ns_per_tick, path);
    wsl_nvtx_trace_discard(t);
}

static int by_total(const void *a, const void *b)
{
    const struct wsl_nvtx_range *x = a, *y = b;
    if (x->ns.sum != y->ns.sum)
        return x->ns.sum > y->ns.sum ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_count(const void *a, const void *b)
{
    const struct wsl_nvtx_mark *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Names a training loop gives its iteration range. */
static bool named_like_step(const char *name)
{
    static const char *const names[] = {"step", "train_step", "training_step", "train step", "training step",
                                        "iteration", "iter", "train_iteration", "train_iter"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(name, names[i]))
            return true;
    return false;
}

void wsl_nvtx_finish(struct wsl_nvtx *n, const struct wsl_trace_store *store, bool process_figures)
{
    wsl_u64_map_free(&n->index);
    if (n->range_count)
        qsort(n->ranges, n->range_count, sizeof *n->ranges, by_total);
    if (n->mark_count)
        qsort(n->marks, n->mark_count, sizeof *n->marks, by_count);
    /* The step: a push range named like one, else the most frequent top-level push range. */
    n->step = -1;
    long by_name = -1, by_top = -1;
    for (size_t i = 0; i < n->range_count; i++) {
        const struct wsl_nvtx_range *r = &n->ranges[i];
        if (r->kind != WSL_NVTX_PUSH || r->count < 2)
            continue;
        if (named_like_step(r->name) && (by_name < 0 || r->count > n->ranges[by_name].count))
            by_name = (long)i;
        if (r->top_level >= 2 && (by_top < 0 || r->top_level > n->ranges[by_top].top_level))
            by_top = (long)i;
    }
    n->step = by_name >= 0 ? by_name : by_top;
    if (n->step >= 0 && n->ranges[n->step].kind == WSL_NVTX_PUSH)
        wsl_nvtx_step_process_figures(n, store, process_figures);
    for (size_t i = 0; i < n->trace_count; i++) {
        struct wsl_nvtx_trace_windows *tw = &n->traces[i];
        size_t steps = 0;
        for (size_t k = 0; n->step >= 0 && k < tw->count; k++)
            steps += tw->w[k].range == n->ranges[n->step].id;
        if (steps && !n->windows_capped) { /* the step's instances of this trace, for the phases */
            n->step_traces = xrealloc(n->step_traces, (n->step_trace_count + 1) * sizeof *n->step_traces);
            struct wsl_nvtx_step_trace *st = &n->step_traces[n->step_trace_count++];
            st->path = tw->path;
            tw->path = NULL;
            st->t0 = xmalloc(steps * sizeof *st->t0);
            st->t1 = xmalloc(steps * sizeof *st->t1);
            st->count = 0;
            for (size_t k = 0; k < tw->count; k++)
                if (tw->w[k].range == n->ranges[n->step].id) {
                    st->t0[st->count] = tw->w[k].t0;
                    st->t1[st->count++] = tw->w[k].t1;
                }
        }
        free(tw->path);
        free(tw->w);
        free(tw->guess);
    }
    free(n->traces);
    n->traces = NULL;
    n->trace_count = 0;
}

void wsl_nvtx_free(struct wsl_nvtx *n)
{
    for (size_t i = 0; i < n->step_trace_count; i++) {
        free(n->step_traces[i].path);
        free(n->step_traces[i].t0);
        free(n->step_traces[i].t1);
    }
    free(n->step_traces);
    for (size_t i = 0; i < n->range_count; i++) {
        free(n->ranges[i].name);
        free(n->ranges[i].domain);
        wsl_hist_free(&n->ranges[i].ns);
    }
    free(n->ranges);
    for (size_t i = 0; i < n->mark_count; i++) {
        free(n->marks[i].name);
        free(n->marks[i].domain);
    }
    free(n->marks);
    wsl_u64_map_free(&n->index);
    for (size_t i = 0; i < n->trace_count; i++) {
        free(n->traces[i].path);
        free(n->traces[i].w);
        free(n->traces[i].guess);
    }
    free(n->traces);
    wsl_nvtx_free_pending(n);
    free(n->track_pool.segs);
    free(n->track_pool.gpus);
    memset(n, 0, sizeof *n);
    n->step = -1;
}

uint64_t wsl_nvtx_mean_ns(const struct wsl_nvtx_range *r)
{
    if (!r->ns.count)
        return 0;
    uint64_t q = r->ns.sum / r->ns.count, rem = r->ns.sum % r->ns.count;
    return q + (rem >= r->ns.count - rem);
}
