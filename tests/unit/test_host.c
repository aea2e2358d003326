/* Host-side CUDA rules on synthetic traces with exact times: sync_heavy,
 * alloc_churn, small_transfers, pageable_transfers, the NVTX hook, and the
 * wall-time cap over the CUDA host-time rules. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "compare.h"
#include "host_scenarios.h"
#include "mem_scenarios.h"
#include "trace_synth.h"
#include "test_findings.h"
#include "unit_test.h"

#define CHECK_EQ(got, want)                                                                                 \
    CHECKF((uint64_t)(got) == (uint64_t)(want), "%s = %llu, expected %llu", #got, (unsigned long long)(got), \
           (unsigned long long)(want))
/* |got - want| <= tol */
#define CHECK_NEAR(got, want, tol)                                                                          \
    CHECKF((got) + (tol) >= (want) && (got) <= (want) + (tol), "%s = %llu, expected %llu +- %llu", #got,   \
           (unsigned long long)(got), (unsigned long long)(want), (unsigned long long)(tol))

static int analyze(struct wsl_run *run, const char *const *names, size_t n)
{
    wsl_run_init(run);
    for (size_t i = 0; i < n; i++) {
        char path[512], err[WSL_READER_ERRLEN];
        test_path(path, sizeof path, names[i]);
        CHECK(host_scenario_write(path, names[i]));
        CHECKF(wsl_run_add_trace(run, path, err, sizeof err) == 0, "%s: %s", path, err);
    }
    wsl_run_finish(run);
    return 0;
}

static int only(const struct wsl_run *run, const char *id)
{
    CHECKF(run->finding_count == 1 && strcmp(run->findings[0].id, id) == 0, "%zu findings, first %s (want only %s)",
           run->finding_count, run->finding_count ? run->findings[0].id : "-", id);
    return 0;
}

/* loss.item() every step: the refill gap after each wait is charged, not the 1 ms wait. */
int test_rule_sync_heavy(void)
{
    struct wsl_run run;
    const char *names[] = {"sync_item"};
    if (analyze(&run, names, 1) || only(&run, "sync_heavy"))
        return 1;
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK_EQ(h->blocks[WSL_BLOCK_COPY], HOST_SYNC_STEPS);
    CHECK_EQ(h->blocks[WSL_BLOCK_STREAM_SYNC], HOST_SYNC_STEPS);
    CHECK_EQ(wsl_host_blocked_ns(h), HOST_SYNC_STEPS * (1 * HOST_MS + 2 * HOST_US));
    CHECK_EQ(h->unresolved_blocks, 2);                 /* the last step's copy and sync */
    const struct wsl_finding *f = &run.findings[0];
    /* 499 groups x 107 us, less at most 1 ns of rounding per wait */
    CHECK_NEAR(f->time_lost_ns, (HOST_SYNC_STEPS - 1) * HOST_SYNC_GAP_NS, 2 * HOST_SYNC_STEPS);
    CHECK(f->severity == WSL_SEVERITY_MEDIUM);         /* 53 ms of 601 ms */
    CHECK_EQ(evidence(f, "waits")->u64, 2 * HOST_SYNC_STEPS);
    CHECK_EQ(evidence(f, "blocking_copy")->u64, HOST_SYNC_STEPS);
    double per_s = evidence(f, "waits_per_s")->number;
    CHECKF(per_s > 1660 && per_s < 1666, "waits/s %f", per_s);
    const struct wsl_evidence *apis = evidence(f, "apis");
    CHECK(apis && apis->string_count == 2);
    CHECKF(strstr(apis->strings[0], "cuMemcpyDtoHAsync: 500 calls"), "%s", apis->strings[0]);
    CHECK(strstr(f->summary, "500 stream") && strstr(f->summary, "500 blocking copies"));
    CHECK(strstr(f->advice, ".item()") && f->fix && f->how_computed);
    /* the 4-byte copies to pageable memory: counted, not charged (they are waits) */
    CHECK_EQ(h->pageable_dtoh, HOST_SYNC_STEPS);
    CHECK_EQ(h->pageable_lost_ns, 0);
    wsl_run_free(&run);
    return 0;
}

/* Polling with cuStreamQuery: one wait per poll loop, from the first NOT_READY to the success. */
int test_rule_sync_polls(void)
{
    struct wsl_run run;
    const char *names[] = {"polls"};
    if (analyze(&run, names, 1) || only(&run, "sync_heavy"))
        return 1;
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK_EQ(h->polls, 1100);
    CHECK_EQ(h->polls_not_ready, 1000);
    CHECK_EQ(h->blocks[WSL_BLOCK_POLL], 100);
    CHECK_EQ(h->blocked_ns[WSL_BLOCK_POLL], 100 * 1001 * HOST_US);
    CHECK_EQ(run.findings[0].time_lost_ns, 100 * 55 * HOST_US);
    CHECK_EQ(h->unresolved_blocks, 0);
    wsl_run_free(&run);
    return 0;
}

/* Large kernels and one final sync, a watchdog thread polling: nothing fires. */
int test_rules_host_quiet(void)
{
    struct wsl_run run;
    const char *names[] = {"quiet"};
    if (analyze(&run, names, 1))
        return 1;
    CHECKF(run.finding_count == 0, "%zu findings, first %s", run.finding_count,
           run.finding_count ? run.findings[0].id : "");
    CHECK_EQ(run.host_cuda.blocks[WSL_BLOCK_CTX_SYNC], 1);
    CHECK_EQ(run.host_cuda.blocks[WSL_BLOCK_POLL], 200);
    CHECK_EQ(wsl_host_block_lost_ns(&run.host_cuda), 0); /* no submission after any of them */
    wsl_run_free(&run);
    return 0;
}

int test_rule_alloc_churn(void)
{
    struct wsl_run run;
    const char *names[] = {"alloc_churn"};
    if (analyze(&run, names, 1) || only(&run, "alloc_churn"))
        return 1;
    const struct wsl_finding *f = &run.findings[0];
    CHECK_EQ(run.mem.churn_reallocs, HOST_CHURN_STEPS - 1);
    CHECK_EQ(f->time_lost_ns, (HOST_CHURN_STEPS - 1) * HOST_CHURN_PAIR_NS);
    CHECK(f->severity == WSL_SEVERITY_MEDIUM);         /* 41.9 ms of 299.4 ms */
    CHECK_EQ(evidence(f, "allocation_calls")->u64, 2 * HOST_CHURN_STEPS);   /* with the stream-ordered ones */
    CHECK_EQ(evidence(f, "free_calls")->u64, 2 * HOST_CHURN_STEPS);
    CHECK_EQ(evidence(f, "stream_ordered_allocations")->u64, HOST_CHURN_STEPS);
    const struct wsl_evidence *sizes = evidence(f, "sizes");
    CHECK(sizes && sizes->string_count == 1 && strcmp(sizes->strings[0], "1M-2M: 600") == 0);
    CHECK(strstr(f->advice, "PYTORCH_NO_CUDA_MEMORY_CACHING"));
    wsl_run_free(&run);
    return 0;
}

int test_rule_small_transfers(void)
{
    struct wsl_run run;
    const char *names[] = {"small_copies"};
    if (analyze(&run, names, 1) || only(&run, "small_transfers"))
        return 1;
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK_EQ(h->small_copies, HOST_SMALL_COPIES);
    CHECK_EQ(h->small_bytes, HOST_SMALL_COPIES * 4096ull);
    CHECK_EQ(h->locked_copies, HOST_SMALL_COPIES);
    CHECK_EQ(h->pageable_copies, 0);
    /* 8,192,000 bytes coalesced = 125 copies of 64 KiB; each copy costs the 20 us from it to the next
     * (its 10 us call and the 10 us of host work around it): (1 - 125/2000) of 2000 x 20 us */
    const struct wsl_finding *f = &run.findings[0];
    CHECK_NEAR(f->time_lost_ns, 37500 * HOST_US, 1);
    CHECK_EQ(evidence(f, "copies_in_runs")->u64, HOST_SMALL_COPIES - 1);
    CHECK(f->severity == WSL_SEVERITY_HIGH);
    CHECK_EQ(evidence(f, "coalesced_copies")->u64, 125);
    double mean = evidence(f, "mean_ns_per_copy")->number;
    CHECKF(mean > 9999 && mean < 10001, "mean %f", mean);
    wsl_run_free(&run);
    return 0;
}

/* Pageable vs pinned vs registered, direction of cuMemcpyAsync from the pointers, ranges in time
 * order across threads (a copy after cuMemFreeHost is pageable). */
int test_rule_pageable_transfers(void)
{
    struct wsl_run run;
    const char *names[] = {"pageable"};
    if (analyze(&run, names, 1) || only(&run, "pageable_transfers"))
        return 1;
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK_EQ(h->pageable_copies, HOST_PAGEABLE_COPIES + 2);
    CHECK_EQ(h->pageable_htod, HOST_PAGEABLE_COPIES + 1);
    CHECK_EQ(h->pageable_dtoh, 1);
    CHECK_EQ(h->locked_copies, HOST_PAGEABLE_COPIES + 1);
    CHECK_EQ(h->htod, 2 * HOST_PAGEABLE_COPIES + 2);
    CHECK_EQ(h->dtoh, 1);
    CHECK_EQ(h->submit_ns, HOST_LAUNCH_NS);
    const struct wsl_finding *f = &run.findings[0];
    /* thread 1's three cuMemcpyAsync count as waits while read (they may copy to the host); once
     * classified, the two to the GPU are submissions again: their wait charge is taken back and the
     * pageable one is charged as pageable. The copy to the host stays a wait, with no later
     * submission on its thread (charged 0). */
    CHECK_EQ(h->blocks[WSL_BLOCK_COPY], 1);
    CHECK_EQ(h->block_lost_ns[WSL_BLOCK_COPY], 0);
    CHECK_EQ(h->blocked_ns[WSL_BLOCK_COPY], 300 * HOST_US);
    CHECK_EQ(h->unresolved_blocks, 1);
    CHECK_EQ(f->time_lost_ns, HOST_PAGEABLE_COPIES * (HOST_PAGEABLE_COPY_NS - HOST_LAUNCH_NS) +
                                  (300 * HOST_US - HOST_LAUNCH_NS));
    CHECK(f->severity == WSL_SEVERITY_HIGH);
    CHECK(strstr(f->advice, "pin_memory=True"));
    wsl_run_free(&run);
    return 0;
}

/* Two processes over the same 400 ms losing 93% and 50% of it: scaled together to the wall. */
int test_rules_host_wall_cap(void)
{
    struct wsl_run run;
    const char *names[] = {"churn_parallel", "sync_parallel"};
    if (analyze(&run, names, 2))
        return 1;
    const struct wsl_finding *c = finding(&run, "alloc_churn"), *s = finding(&run, "sync_heavy");
    CHECK(c && s && run.finding_count == 2);
    CHECK(c->scaled_to_wall && s->scaled_to_wall);
    CHECKF(c->time_lost_ns + s->time_lost_ns <= run.wall_ns, "%llu + %llu > %llu",
           (unsigned long long)c->time_lost_ns, (unsigned long long)s->time_lost_ns, (unsigned long long)run.wall_ns);
    CHECKF(c->time_lost_ns + s->time_lost_ns >= run.wall_ns - 2, "scaled too far");
    /* the ratio is kept: churn 140/150, sync ~1/2 */
    double ratio = (double)c->time_lost_ns / (double)s->time_lost_ns;
    CHECKF(ratio > 1.80 && ratio < 1.90, "ratio %f", ratio);
    CHECK(run.findings[0].time_lost_ns >= run.findings[1].time_lost_ns);
    wsl_run_free(&run);
    return 0;
}

static const char *range_name(const void *ctx, uint32_t range)
{
    return ((const char *const *)ctx)[range];
}

/* The NVTX hook: waits credited to the range innermost on their thread when they happen, read
 * where the NVTX analysis keeps it; two indices of one name (two domains) are one range. */
int test_host_ranges_hook(void)
{
    static const char *const names[] = {"train_step", "eval", "h2d", "eval"};
    uint32_t innermost = WSL_HOST_NO_RANGE;
    struct wsl_host_trace *t = wsl_host_trace_begin();
    struct wsl_event ev;
    memset(&ev, 0, sizeof ev);
    uint64_t now = 0;
#define EVENT(cat, dur, gap)                                                                                     \
    do {                                                                                                         \
        ev.t_start = now;                                                                                        \
        ev.t_end = now + (dur);                                                                                  \
        wsl_host_trace_event(t, (cat), &ev);                                                                  \
        now = ev.t_end + (gap);                                                                                  \
    } while (0)
    wsl_host_trace_thread(t, 1, &innermost);
    innermost = 0;
    for (int i = 0; i < 10; i++) {
        EVENT(WSL_CAT_LAUNCH, 5, 0);
        EVENT(WSL_CAT_SYNC_STREAM, 1000, 20);   /* gap to the next launch's end: 25 */
    }
    innermost = 1;
    EVENT(WSL_CAT_LAUNCH, 5, 0);                /* ends train_step's last group */
    EVENT(WSL_CAT_SYNC_CTX, 300, 100);
    innermost = WSL_HOST_NO_RANGE;
    EVENT(WSL_CAT_SYNC_STREAM, 7, 0);           /* in no range */
    EVENT(WSL_CAT_LAUNCH, 5, 0);
    /* a cuMemcpyAsync from pageable memory into device memory: a wait while read, a submission
     * once classified; the range's figures are taken back with it */
    ev.a[0] = 0x10000;
    ev.a[1] = 4096;
    EVENT(WSL_CAT_ALLOC, 50, 0);
    innermost = 2;
    ev.a[0] = 0x10800;
    ev.a[1] = 0x5000000;
    ev.a[2] = 64;
    EVENT(WSL_CAT_COPY_ANY_ASYNC, 40, 10);
    memset(ev.a, 0, sizeof ev.a);
    EVENT(WSL_CAT_LAUNCH, 5, 0);
    uint32_t other = 3;                         /* another thread, inside another domain's "eval" */
    wsl_host_trace_thread(t, 2, &other);
    EVENT(WSL_CAT_SYNC_EVENT, 60, 0);
    EVENT(WSL_CAT_LAUNCH, 5, 0);
#undef EVENT
    wsl_host_trace_name_ranges(t, range_name, names);
    struct wsl_clock_map clock;
    memset(&clock, 0, sizeof clock);
    clock.ns_per_tick = 1.0;
    clock.rate_known = true;
    struct wsl_host_summary s;
    wsl_host_trace_end(t, &clock, 0, &s);
    CHECK_EQ(s.range_count, 2);                 /* h2d's only wait was taken back: not listed */
    CHECK_EQ(s.pageable_copies, 1);
    CHECK_EQ(s.pageable_lost_ns, 40);           /* its whole host time: no submission cost given */
    CHECK_EQ(s.blocks[WSL_BLOCK_COPY], 0);
    CHECK(strcmp(s.ranges[0].name, "train_step") == 0 && strcmp(s.ranges[1].name, "eval") == 0);
    CHECK_EQ(s.ranges[0].blocks, 10);
    CHECK_EQ(s.ranges[0].blocked_ns, 10000);
    CHECK_EQ(s.ranges[0].lost_ns, 10 * 25);
    CHECK_EQ(s.ranges[1].blocks, 2);
    CHECK_EQ(s.ranges[1].blocked_ns, 360);
    /* one group with the unranged sync after it: min(300 + 7, 100 + 7 + 5) = 112, 300/307 of it;
     * thread 2's: min(60, 5) */
    CHECK_EQ(s.ranges[1].lost_ns, 109 + 5);
    CHECK_EQ(wsl_host_blocks(&s), 13);
    wsl_host_free(&s);
    return 0;
}

static int load(struct wsl_run *run, const char *name)
{
    const char *names[] = {name};
    return analyze(run, names, 1);
}

static const struct wsl_cause *cause(const struct wsl_compare *c, enum wsl_cause_kind kind, const char *name)
{
    for (size_t i = 0; i < c->cause_count; i++)
        if (c->causes[i].kind == kind && strcmp(c->causes[i].name, name) == 0)
            return &c->causes[i];
    return NULL;
}

/* Known differences give the expected causes: +2000 launches x 5 us, +3 us x 3000 launches, the
 * syncs (equal) nowhere, the rest unexplained; the other way round, the same with signs flipped. */
int test_compare_causes(void)
{
    struct wsl_run a, b;
    if (load(&a, "cmp_a") || load(&b, "cmp_b"))
        return 1;
    CHECK_EQ(a.wall_ns, 11901 * HOST_US);
    CHECK_EQ(b.wall_ns, 61901 * HOST_US);
    struct wsl_compare c;
    wsl_compare_build(&c, &a, &b);
    CHECK(c.wall_diff_ns == 50 * (int64_t)HOST_MS);
    CHECK(c.cause_count == 2 && c.scale == 1.0);
    const struct wsl_cause *calls = cause(&c, WSL_CAUSE_API_CALLS, "launches");
    const struct wsl_cause *time = cause(&c, WSL_CAUSE_API_TIME, "launches");
    CHECK(calls && time && !cause(&c, WSL_CAUSE_API_CALLS, "synchronizations"));
    CHECK(calls->estimate_ns == 10 * (int64_t)HOST_MS && calls->attributed_ns == calls->estimate_ns);
    CHECK(time->estimate_ns == 9 * (int64_t)HOST_MS && time->attributed_ns == time->estimate_ns);
    CHECKF(strstr(calls->text, "2000 more launches in B (1000 -> 3000) x 5.00 us each"), "%s", calls->text);
    CHECKF(strstr(time->text, "launches 3.00 us slower each in B (5.00 us -> 8.00 us) x 3000 calls"), "%s",
           time->text);
    CHECK(c.causes == calls);                   /* the largest first */
    CHECK(c.explained_ns == 19 * (int64_t)HOST_MS && c.unexplained_ns == 31 * (int64_t)HOST_MS);
    CHECK(c.api_count == 2 && strcmp(c.apis[0].name, "cuLaunchKernel") == 0);
    CHECK_EQ(c.apis[0].a->ns.count, 1000);
    CHECK_EQ(c.apis[0].b->ns.count, 3000);
    wsl_compare_free(&c);

    wsl_compare_build(&c, &b, &a);              /* B faster than A */
    CHECK(c.wall_diff_ns == -50 * (int64_t)HOST_MS);
    calls = cause(&c, WSL_CAUSE_API_CALLS, "launches");
    time = cause(&c, WSL_CAUSE_API_TIME, "launches");
    CHECK(calls && calls->estimate_ns == -16 * (int64_t)HOST_MS);   /* -2000 x 8 us */
    CHECK(time && time->estimate_ns == -3 * (int64_t)HOST_MS);      /* 1000 x -3 us */
    CHECK(c.unexplained_ns == -31 * (int64_t)HOST_MS);
    wsl_compare_free(&c);
    wsl_run_free(&a);
    wsl_run_free(&b);
    return 0;
}

/* Four threads launching at once: 195 ms of extra host time in a 40 ms longer run. The causes are
 * scaled so that they explain the 40 ms, never more. */
int test_compare_never_more_than_difference(void)
{
    struct wsl_run a, b;
    if (load(&a, "cmp_a") || load(&b, "cmp_b_parallel"))
        return 1;
    struct wsl_compare c;
    wsl_compare_build(&c, &a, &b);
    CHECK(c.wall_diff_ns == 40 * (int64_t)HOST_MS);
    const struct wsl_cause *calls = cause(&c, WSL_CAUSE_API_CALLS, "launches");
    const struct wsl_cause *time = cause(&c, WSL_CAUSE_API_TIME, "launches");
    CHECK(calls && calls->estimate_ns == 15 * (int64_t)HOST_MS);     /* +3000 x 5 us */
    CHECK(time && time->estimate_ns == 180 * (int64_t)HOST_MS);      /* 4000 x +45 us */
    CHECKF(c.scale > 0.2051 && c.scale < 0.2052, "scale %f", c.scale); /* 40 / 195 */
    CHECK(c.explained_ns <= c.wall_diff_ns && c.wall_diff_ns - c.explained_ns <= 2);
    CHECK(calls->attributed_ns + time->attributed_ns == c.explained_ns);
    CHECK(c.unexplained_ns >= 0 && c.unexplained_ns <= 2);
    wsl_compare_free(&c);
    wsl_run_free(&a);
    wsl_run_free(&b);
    return 0;
}

/* Copies classified against live ranges, checked against a brute-force model over random
 * allocations, frees and copies (the treap of live ranges, address reuse, interior pointers). */
int test_host_classify_random(void)
{
    enum { SLOTS = 64, STEPS = 6000 };
    const uint64_t base = 0x7e0000000000ull, span = 32ull << 20;
    int kind[SLOTS] = {0};                  /* 0 free, 1 pinned, 2 registered, 3 device */
    uint64_t size[SLOTS] = {0};
    uint64_t want_pageable = 0, want_locked = 0, want_htod = 0, want_dtoh = 0, want_dtod = 0, want_unknown = 0;
    char path[512];
    test_path(path, sizeof path, "classify_random");
    struct mem_builder *b = mb_open(path, 9001, 0, 80ull << 30);
    rng_seed(42);
    uint64_t t = 0;
    static const char *const alloc_api[] = {NULL, "cuMemHostAlloc", "cuMemHostRegister_v2", "cuMemAlloc_v2"};
    static const char *const free_api[] = {NULL, "cuMemFreeHost", "cuMemHostUnregister", "cuMemFree_v2"};
    for (int step = 0; step < STEPS; step++, t += 10 * HOST_US) {
        unsigned op = (unsigned)rng_below(10), s = (unsigned)rng_below(SLOTS);
        uint64_t slot_base = base + s * span;
        if (op < 3) {                       /* allocate (again, even over a live one: address reuse) */
            int k = 1 + (int)rng_below(3);
            uint64_t bytes = 1 + rng_below(16ull << 20);
            mb_call(b, 0, t, 1 * HOST_US, alloc_api[k], 0, slot_base, bytes);
            kind[s] = k;
            size[s] = bytes;
        } else if (op < 5) {                /* free what is there (a failed free changes nothing) */
            if (!kind[s])
                continue;
            bool failed = rng_below(8) == 0;
            mb_call(b, 0, t, 1 * HOST_US, free_api[kind[s]], failed ? 1 : 0, slot_base, 0);
            if (!failed)
                kind[s] = 0;
        } else {                            /* a copy from a random address, maybe inside a range */
            unsigned s2 = (unsigned)rng_below(SLOTS);
            uint64_t p1 = slot_base + rng_below(24ull << 20), p2 = base + s2 * span + rng_below(24ull << 20);
            int k1 = kind[s] && p1 - slot_base < size[s] ? kind[s] : 0;
            int k2 = kind[s2] && p2 - (base + s2 * span) < size[s2] ? kind[s2] : 0;
            if (op < 8) {                   /* cuMemcpyHtoDAsync from p1 */
                mb_call_args(b, 0, t, 1 * HOST_US, "cuMemcpyHtoDAsync_v2", 0, 0, p2, p1, 4096, 0);
                want_htod++;
                want_pageable += k1 == 0;
                want_locked += k1 == 1 || k1 == 2;
            } else {                        /* cuMemcpyAsync p1 -> p2: direction from the pointers */
                mb_call_args(b, 0, t, 1 * HOST_US, "cuMemcpyAsync", 0, 0, p2, p1, 4096, 0);
                bool dev_dst = k2 == 3, dev_src = k1 == 3;
                int host = dev_dst && !dev_src ? k1 : dev_src && !dev_dst ? k2 : -1;
                want_htod += dev_dst && !dev_src;
                want_dtoh += dev_src && !dev_dst;
                want_dtod += dev_src && dev_dst;
                want_unknown += !dev_src && !dev_dst;
                want_pageable += host == 0;
                want_locked += host == 1 || host == 2;
            }
        }
    }
    mb_close(b, NULL);
    struct wsl_run run;
    wsl_run_init(&run);
    char err[WSL_READER_ERRLEN];
    CHECKF(wsl_run_add_trace(&run, path, err, sizeof err) == 0, "%s", err);
    wsl_run_finish(&run);
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECKF(want_pageable > 100 && want_locked > 100 && want_dtoh > 10 && want_dtod > 1, "%llu %llu %llu %llu", (unsigned long long)want_pageable, (unsigned long long)want_locked, (unsigned long long)want_dtoh, (unsigned long long)want_dtod);
    CHECK_EQ(h->htod, want_htod);
    CHECK_EQ(h->dtoh, want_dtoh);
    CHECK_EQ(h->dtod, want_dtod);
    CHECK_EQ(h->unknown_direction, want_unknown);
    CHECK_EQ(h->pageable_copies, want_pageable);
    CHECK_EQ(h->locked_copies, want_locked);
    CHECK_EQ(h->unclassified_copies, 0);
    wsl_run_free(&run);
    return 0;
}

/* Past the limits, copies are counted but not classified, and the rules still work from counts. */
int test_host_limits(void)
{
    wsl_host_set_limits(100, 4);        /* all 4 allocation calls kept, 100 copies of 203 */
    struct wsl_run run;
    const char *names[] = {"pageable"};
    int rc = analyze(&run, names, 1);
    wsl_host_set_limits(0, 0);
    if (rc)
        return 1;
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK_EQ(h->copies, 2 * HOST_PAGEABLE_COPIES + 3);
    CHECK_EQ(h->unclassified_copies, 2 * HOST_PAGEABLE_COPIES + 3 - 100);
    CHECK_EQ(h->htod + h->dtoh + h->dtod + h->unknown_direction, 100);
    CHECK_EQ(h->pageable_copies + h->locked_copies, 100);   /* thread 1's 3 (its chunk came first), then 97 */
    wsl_run_free(&run);

    /* only 2 allocation calls kept: from the third one's time (700 us) on nothing is classified,
     * and pageable_transfers, which needs classified copies, stays silent */
    wsl_host_set_limits(0, 2);
    rc = analyze(&run, names, 1);
    wsl_host_set_limits(0, 0);
    if (rc)
        return 1;
    h = &run.host_cuda;
    CHECK_EQ(h->unclassified_copies, 2 * HOST_PAGEABLE_COPIES + 3);
    CHECK_EQ(h->pageable_copies + h->locked_copies, 0);
    CHECK_EQ(h->htod + h->dtoh + h->dtod + h->unknown_direction, 0);
    CHECK(!finding(&run, "pageable_transfers"));
    wsl_run_free(&run);
    return 0;
}

/* Random CUDA calls (any API, any arguments and results, 4 threads, times out of order between
 * threads): whatever comes, the invariants hold. */
int test_host_random_invariants(void)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        char path[512];
        test_path(path, sizeof path, "random_calls");
        struct mem_builder *b = mb_open(path, 9100 + (int32_t)seed, WSL_PROC_WSL2, 80ull << 30);
        rng_seed(seed);
        uint64_t t[MEM_MAX_THREADS] = {0};
        for (int i = 0; i < 20000; i++) {
            unsigned th = (unsigned)rng_below(MEM_MAX_THREADS), id;
            do
                id = (unsigned)rng_below(synth_api_count);
            while (synth_apis[id].category >= WSL_CAT_IO_OPEN);     /* the CUDA rows */
            static const uint64_t ptrs[] = {0, 1, 0x7f0000000000ull, 0x7f0000001000ull, 0x7e0000000000ull,
                                            0x5555000000ull, UINT64_MAX, UINT64_MAX - 4096};
            uint64_t a0 = rng_below(3) ? ptrs[rng_below(8)] + rng_below(1u << 20) : rng_next();
            uint64_t a1 = rng_below(2) ? rng_below(1ull << 26) : ptrs[rng_below(8)];
            uint64_t a2 = rng_below(4) ? rng_below(1ull << 20) : rng_next();
            int32_t result = rng_below(6) ? 0 : rng_below(2) ? 600 : (int32_t)rng_next();
            uint64_t dur = rng_below(5) ? rng_below(20000) : rng_below(5000000);
            mb_call_args(b, th, t[th], dur, synth_apis[id].symbol, result, rng_below(3), a0, a1, a2, rng_next());
            t[th] += dur + rng_below(10000);
        }
        const unsigned order[] = {3, 1, 0, 2};
        mb_close(b, order);
        struct wsl_run run;
        wsl_run_init(&run);
        char err[WSL_READER_ERRLEN];
        CHECKF(wsl_run_add_trace(&run, path, err, sizeof err) == 0, "%s", err);
        wsl_run_finish(&run);
        const struct wsl_host_summary *h = &run.host_cuda;
        uint64_t cuda_host_sum = 0;
        for (size_t i = 0; i < run.finding_count; i++) {
            const struct wsl_finding *f = &run.findings[i];
            CHECK(f->time_lost_ns <= run.wall_ns);
            CHECK(i == 0 || f->time_lost_ns <= run.findings[i - 1].time_lost_ns);
            if (!strcmp(f->id, "sync_heavy") || !strcmp(f->id, "alloc_churn") || !strcmp(f->id, "small_transfers") ||
                !strcmp(f->id, "pageable_transfers"))
                cuda_host_sum += f->time_lost_ns;
        }
        CHECKF(cuda_host_sum <= run.wall_ns, "seed %llu: %llu > wall %llu", (unsigned long long)seed,
               (unsigned long long)cuda_host_sum, (unsigned long long)run.wall_ns);
        for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
            CHECKF(h->block_lost_ns[k] <= h->blocked_ns[k] + 2, "seed %llu kind %u: lost %llu > blocked %llu",
                   (unsigned long long)seed, k, (unsigned long long)h->block_lost_ns[k],
                   (unsigned long long)h->blocked_ns[k]);
        CHECK(h->pageable_copies + h->locked_copies <= h->htod + h->dtoh);
        CHECK(h->htod + h->dtoh + h->dtod + h->unknown_direction + h->unclassified_copies == h->copies);
        CHECK(h->pageable_lost_ns <= h->pageable_ns + 2);
        CHECK(h->small_left_ns <= h->small_ns + 2);
        CHECK(h->unresolved_blocks <= wsl_host_blocks(h));
        CHECK(run.mem.churn_reallocs <= run.mem.allocations + run.mem.pinned.allocations);
        wsl_run_free(&run);
    }
    return 0;
}

/* More copies than a classification window (65,536) from two threads whose chunks overlap in time
 * (read: thread 1's whole chunk, then thread 0's), so that a flush sorts copies that are not in
 * order and keeps half of them; allocation calls at the very time of a copy (applied before it) and
 * two of one slot at one time (applied in the order read: a test that fails if ties are reordered);
 * thread 0's blocking copies charged by its next copy, one of them pending at the flush. Checked
 * against a model of the live ranges and of each copy's charge. backwards: thread 2 adds 1,000
 * copies written from the last to the first (a thread's copies out of order: sorted, not merged). */
static int sort_window_case(bool backwards)
{
    enum { SLOTS = 16, STEPS = 45001 };         /* thread 1: one copy a step; thread 0: two */
    const uint64_t base = 0x7e0000000000ull, span = 1ull << 20;
    bool pinned[SLOTS] = {false}, (*pinned_at)[SLOTS] = calloc(STEPS, sizeof *pinned_at);
    uint64_t want_pageable = 0, want_locked = 0, want_htod = 0, want_dtoh = 0, want_small_left = 0, want_lost = 0;
    uint64_t want_pageable_lost = 0;
    uint64_t ties = 0, same_time_pairs = 0;
    char path[512];
    test_path(path, sizeof path, "sort_window_ties");
    struct mem_builder *b = mb_open(path, 9200, 0, 80ull << 30);
    rng_seed(7);
    for (uint64_t k = 0; k < STEPS; k++) {
        uint64_t t = k * 20 * HOST_US;
        unsigned s = (unsigned)rng_below(SLOTS), op = (unsigned)rng_below(8);
        uint64_t slot = base + s * span;
        if (op == 0 || op == 1) {           /* thread 0: an allocation call at t, a copy of thread 1's time */
            mb_call(b, 0, t, 0, pinned[s] ? "cuMemFreeHost" : "cuMemHostAlloc", 0, slot, pinned[s] ? 0 : span);
            pinned[s] = !pinned[s];
            ties++;
            if (op == 1) {                  /* and the opposite call at the same time: the read order decides */
                mb_call(b, 0, t, 0, pinned[s] ? "cuMemFreeHost" : "cuMemHostAlloc", 0, slot, pinned[s] ? 0 : span);
                pinned[s] = !pinned[s];
                same_time_pairs++;
            }
        }
        memcpy(pinned_at[k], pinned, sizeof pinned);
        /* thread 1 at t: an HtoD copy from the slot (after the call above), or every 7th step a
         * blocking DtoH to it (4 us) and a launch 1 us after it (1 us): charged 2 us */
        uint64_t p = slot + rng_below(span);
        if (k % 7 == 3) {
            mb_call_args(b, 1, t, 4 * HOST_US, "cuMemcpyDtoH_v2", 0, 0, p, 0x100000000ull, 4096, 0);
            mb_call_args(b, 1, t + 5 * HOST_US, 1 * HOST_US, "cuLaunchKernel", 0, 0, 0x1000, 0x10001, 0x100, 0);
            want_dtoh++;
            want_small_left += 2 * HOST_US;
            want_lost += 2 * HOST_US;
        } else {
            mb_call_args(b, 1, t, 1 * HOST_US, "cuMemcpyHtoDAsync_v2", 0, 0, 0x100000000ull, p, 4096, 0);
            want_htod++;
            want_small_left += 1 * HOST_US;     /* pinned: 1 us; pageable: min(1 us, a launch's 1 us) */
        }
        want_pageable += !pinned[s];
        want_locked += pinned[s];
        /* thread 0 at t (with thread 1's copy: a tie): a blocking DtoH (4 us) to the slot, then at
         * its end an HtoD (1.5 us), which charges it 1.5 us: 2.5 us left; the HtoD's 1.5 us,
         * pageable, is a launch's 1 us and 0.5 us lost to pageable memory (a charge given to
         * another copy changes both sums) */
        unsigned s0 = (unsigned)rng_below(SLOTS);
        uint64_t p0 = base + s0 * span + rng_below(span);
        mb_call_args(b, 0, t, 4 * HOST_US, "cuMemcpyDtoH_v2", 0, 0, p0, 0x100000000ull, 4096, 0);
        mb_call_args(b, 0, t + 4 * HOST_US, 3 * HOST_US / 2, "cuMemcpyHtoDAsync_v2", 0, 0, 0x100000000ull, p0, 4096, 0);
        want_dtoh++;
        want_htod++;
        want_pageable += 2 * !pinned[s0];
        want_locked += 2 * pinned[s0];
        want_small_left += 5 * HOST_US / 2 + (pinned[s0] ? 3 * HOST_US / 2 : 1 * HOST_US);
        want_pageable_lost += pinned[s0] ? 0 : HOST_US / 2;
        want_lost += 3 * HOST_US / 2;
    }
    for (uint64_t i = 0; backwards && i < 1000; i++) {   /* 1 us after steps 44,955, 44,910, ... */
        uint64_t k = STEPS - 1 - 45 * i, t = k * 20 * HOST_US + 1 * HOST_US;
        unsigned s2 = (unsigned)(k % SLOTS);
        mb_call_args(b, 2, t, 1 * HOST_US, "cuMemcpyHtoDAsync_v2", 0, 0, 0x100000000ull, base + s2 * span, 4096, 0);
        want_htod++;
        want_small_left += 1 * HOST_US;
        want_pageable += !pinned_at[k][s2];
        want_locked += pinned_at[k][s2];
    }
    const unsigned order[] = {1, 2, 0, 3};  /* the flush: at thread 0's 20,535th or 19,535th copy, an HtoD */
    mb_close(b, order);
    free(pinned_at);
    struct wsl_run run;
    wsl_run_init(&run);
    char err[WSL_READER_ERRLEN];
    CHECKF(wsl_run_add_trace(&run, path, err, sizeof err) == 0, "%s", err);
    wsl_run_finish(&run);
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK(ties > 1000 && same_time_pairs > 1000);
    CHECK_EQ(h->copies, 3 * STEPS + (backwards ? 1000 : 0));
    CHECK_EQ(h->htod, want_htod);
    CHECK_EQ(h->dtoh, want_dtoh);
    CHECK_EQ(h->pageable_copies, want_pageable);
    CHECK_EQ(h->locked_copies, want_locked);
    CHECK_EQ(h->unclassified_copies, 0);
    CHECK_EQ(h->unresolved_blocks, 0);
    CHECK_NEAR(h->block_lost_ns[WSL_BLOCK_COPY], want_lost, 2);
    CHECK_NEAR(h->small_left_ns, want_small_left, 2);
    CHECK_NEAR(h->pageable_lost_ns, want_pageable_lost, 2);
    wsl_run_free(&run);
    return 0;
}

int test_host_sort_window_ties(void)
{
    return sort_window_case(false) || sort_window_case(true);
}
