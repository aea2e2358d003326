/*
 * Synthetic traces for the host-side CUDA rules (sync_heavy, alloc_churn,
 * small_transfers, pageable_transfers), written with mem_scenarios.h's
 * builder; times are exact (CLOCK_MONOTONIC ns ticks), so the tests check
 * exact figures. host_scenarios.c documents each scenario and its figures.
 */
#ifndef WSLSHIM_HOST_SCENARIOS_H
#define WSLSHIM_HOST_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

#define HOST_US 1000ull
#define HOST_MS 1000000ull

/* sync_item: 500 steps of 10 launches, a 4-byte copy to pageable memory waiting 1 ms, a 2 us
 * cuStreamSynchronize, then 100 us before the next launch: sync_heavy loses 499 x 107 us. */
#define HOST_SYNC_STEPS 500u
#define HOST_SYNC_GAP_NS (107 * HOST_US)
/* alloc_churn: 300 steps of cuMemAlloc 1 MiB (80 us), a launch, cuMemFree (60 us): 299 re-allocations. */
#define HOST_CHURN_STEPS 300u
#define HOST_CHURN_PAIR_NS (140 * HOST_US)
/* small_copies: 2000 cuMemcpyHtoDAsync of 4 KiB (10 us) from pinned memory. */
#define HOST_SMALL_COPIES 2000u
#define HOST_SMALL_COPY_NS (10 * HOST_US)
/* pageable: 100 copies of 8 MiB from pageable memory (2 ms each), 100 from registered memory. */
#define HOST_PAGEABLE_COPIES 100u
#define HOST_PAGEABLE_COPY_NS (2 * HOST_MS)
#define HOST_LAUNCH_NS (5 * HOST_US)

/* Writes scenario `name`; false when there is none. Names: sync_item, alloc_churn, small_copies,
 * pageable, quiet (large kernels, one final sync, a polling watchdog thread), polls, plus the
 * wall-time cap pair churn_parallel (process 1 of 2) and sync_parallel (process 2 of 2), and for
 * --compare: cmp_a (1000 launches of 5 us, wall 11.901 ms), cmp_b (3000 of 8 us, wall 61.901 ms),
 * cmp_b_parallel (4 threads x 1000 launches of 50 us back to back, wall 51.901 ms); each ends with
 * 10 cuStreamSynchronize of 100 us. */
bool host_scenario_write(const char *path, const char *name);

#endif /* WSLSHIM_HOST_SCENARIOS_H */
