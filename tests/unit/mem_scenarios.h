/*
 * Synthetic traces with memory calls, for the unit tests and make_mem_trace:
 * a builder that takes calls per thread at given times (CLOCK_MONOTONIC ns
 * from MEM_START_NS) and writes each thread's calls as one EVENTS chunk, the
 * threads in the order asked (so chunks need not arrive in time order), and
 * named scenarios.
 */
#ifndef WSLSHIM_MEM_SCENARIOS_H
#define WSLSHIM_MEM_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_synth.h"

#define MEM_START_NS 9000000000u
#define MEM_MAX_THREADS 4
#define MEM_GIB (1ull << 30)
#define MEM_MIB (1ull << 20)

struct mem_builder;

/* flags: WSL_PROC_*; gpu_total: GPU 0's total_mem in a DRIVER chunk (0: no DRIVER chunk). */
struct mem_builder *mb_open(const char *path, int32_t pid, uint32_t flags, uint64_t gpu_total);
/* A call on thread `thread` (0..MEM_MAX_THREADS-1) starting at t_ns from the start, lasting dur_ns. */
void mb_call(struct mem_builder *b, unsigned thread, uint64_t t_ns, uint64_t dur_ns, const char *symbol,
             int32_t result, uint64_t a0, uint64_t a1);
/* mb_call with all four arguments and the stream. */
void mb_call_args(struct mem_builder *b, unsigned thread, uint64_t t_ns, uint64_t dur_ns, const char *symbol,
                  int32_t result, uint64_t stream, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);
/* Writes a PATHS chunk now (so before every EVENTS chunk, which mb_close writes). */
void mb_paths(struct mem_builder *b, const uint32_t *ids, const char *const *strings, uint32_t n);
/* Writes one EVENTS chunk per thread, in order[0], order[1]... (NULL: 0, 1, ...), then END; closes. */
void mb_close(struct mem_builder *b, const unsigned *order);

/* Writes scenario `name`; false when there is none. Names (docs in mem_scenarios.c):
 * mixed (WSL2, 80 GiB card: device, async, pinned, managed, OOMs), peak90, peak97, peak50 (one
 * allocation of that share of the card, WSL2), native_pinned (600 MiB pinned, 2 MiB managed, native). */
bool mem_scenario_write(const char *path, const char *name);

#endif /* WSLSHIM_MEM_SCENARIOS_H */
