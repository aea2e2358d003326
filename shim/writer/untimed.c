/*
 * Untimed file calls (io_hooks.c: sampled timing), on the writer thread. Their
 * events come without times: each gets one no earlier than the thread's
 * previous event and than `floor`, when its ring was drained before (it was
 * recorded after that). Folded calls (WSL_CAT_IO_FOLD) are counted by the
 * thread without events until its fold ends; so that a killed program loses
 * no more of them than of other calls, each drain takes the calls the thread's
 * open fold counted since the drain before (wsl_fold_take) and writes them as
 * fold events of their own, and the fold's events, when they come, are lowered
 * by what was written ahead (fold_settle): each call is in exactly one event.
 * The tells and fstats a fold counts apart from its slots (format 1.11) are
 * not written ahead: they come with the fold's last event, as the file's
 * close does (a killed program loses those of the file it had open).
 */
#include <string.h>

#include "api_ids.h"
#include "writer_internal.h"

static struct wsl_fold_track *fold_tracked(struct wsl_thread *t, uint32_t id)
{
    for (int k = 0; k < 2; k++)
        if (t->w_fold[k].live && t->w_fold[k].id == id)
            return &t->w_fold[k];
    return NULL;
}

/* A fold event from the ring, less the calls written ahead of it; 0 when none
 * are left and it carries no close (it is dropped). */
static int fold_settle(struct wsl_thread *t, struct wsl_event *ev)
{
    struct wsl_fold_track *f = fold_tracked(t, WSL_FOLD_ID(ev->result));
    if (!f)
        return 1;
    int left = ev->result & WSL_FOLD_CLOSED;
    for (uint32_t k = 0; k < WSL_FOLD_SLOTS_PER_EVENT; k++) {
        uint32_t j = WSL_FOLD_INDEX(ev->result) + k;
        uint64_t s = ev->a[1 + k];
        if (s && j + 1 < f->slots)
            s = 0; /* written ahead, all of it */
        else if (s && j + 1 == f->slots)
            s = WSL_FOLD_CALLS(s) > f->calls ? s - ((uint64_t)f->calls << 10) : 0;
        ev->a[1 + k] = s;
        left |= s != 0;
    }
    left |= (ev->a[0] >> 32) != 0; /* calls counted apart (1.11): never written ahead */
    if (ev->result & WSL_FOLD_LAST)
        f->live = 0; /* the fold's last event: done with */
    return left;
}

/* The calls the thread's open fold counted since the last drain, as up to two
 * fold events at time `at` into out; returns how many. Only when the thread
 * published no event since the drain (its rings' heads are where the drain
 * ended): then every event it recorded before those calls (the file's open) is
 * out before them. */
unsigned wsl_fold_take(struct wsl_thread *t, struct wsl_event out[2], uint64_t at)
{
    uint32_t seq = atomic_load_explicit(&t->fold_seq, memory_order_acquire);
    uint32_t used = atomic_load_explicit(&t->fold_used, memory_order_acquire);
    if ((seq & 1) || !used || used > WSL_FOLD_SLOTS)
        return 0;
    uint64_t file = atomic_load_explicit(&t->fold_file, memory_order_relaxed), sl[WSL_FOLD_SLOTS];
    int64_t fd = (int32_t)(uint32_t)file;
    uint64_t path = file >> 32;
    for (uint32_t i = 0; i < used; i++)
        sl[i] = atomic_load_explicit(&t->fold_slot[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&t->fold_seq, memory_order_relaxed) != seq)
        return 0; /* it ended meanwhile: its events are in the ring */
    if (!wsl_rings_drained(t))
        return 0; /* events came since the drain: the next one takes these calls after them */
    uint32_t id = seq >> 1 & 0x3ffffffu;
    struct wsl_fold_track *f = fold_tracked(t, id);
    if (!f) { /* a fold not followed yet; the one followed before waits aside for its events */
        if (t->w_fold[0].live)
            t->w_fold[1] = t->w_fold[0];
        f = &t->w_fold[0];
        *f = (struct wsl_fold_track){id, 0, 0, 1};
    }
    uint32_t from = f->slots ? f->slots - 1 : 0;
    if (from >= used || (used == f->slots && WSL_FOLD_CALLS(sl[used - 1]) == f->calls))
        return 0; /* nothing new */
    uint64_t d[WSL_FOLD_SLOTS];
    unsigned nd = 0, base = from;
    for (uint32_t j = from; j < used; j++) {
        uint64_t s = sl[j];
        if (j + 1 == f->slots)
            s = WSL_FOLD_CALLS(s) > f->calls ? s - ((uint64_t)f->calls << 10) : 0;
        if (!s && nd == 0) {
            base = j + 1;
            continue;
        }
        d[nd++] = s;
    }
    f->slots = used;
    f->calls = WSL_FOLD_CALLS(sl[used - 1]);
    unsigned n = 0;
    for (unsigned i = 0; i < nd; i += WSL_FOLD_SLOTS_PER_EVENT, n++) {
        struct wsl_event *e = &out[n];
        memset(e, 0, sizeof *e);
        e->t_start = e->t_end = at;
        e->api = WSL_ID_IO_FOLD;
        e->result = WSL_FOLD_RESULT(id, base + i, 0);
        e->stream = (uint64_t)fd;
        e->a[0] = path;
        for (unsigned k = 0; k < WSL_FOLD_SLOTS_PER_EVENT && i + k < nd; k++)
            e->a[1 + k] = d[i + k];
    }
    return n;
}

/* Times the untimed events of [from, to) and settles the fold events among
 * them; the ring there is the writer's until it moves the tail. Returns the
 * new end (dropped fold events close the gap). */
uint64_t wsl_settle_untimed(struct wsl_thread *t, struct wsl_event *ring, uint64_t mask, uint64_t from, uint64_t to,
                            uint64_t floor)
{
    uint64_t last = t->w_last_ticks, w = from;
    for (uint64_t i = from; i < to; i++) {
        struct wsl_event *ev = &ring[i & mask];
        if (WSL_LIKELY(ev->t_start != 0)) {
            if (ev->t_end > last)
                last = ev->t_end;
        } else {
            uint64_t at = last > floor ? last : floor;
            ev->t_start = ev->t_end = last = at;
            if (ev->api == WSL_ID_IO_FOLD && !fold_settle(t, ev))
                continue;
        }
        if (w != i)
            ring[w & mask] = *ev;
        w++;
    }
    t->w_last_ticks = last;
    return w;
}

