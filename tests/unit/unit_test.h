/* A minimal test harness: each test is `int test_x(void)` returning 0 on
 * success; CHECK prints where and what failed and returns 1. */
#ifndef WSLSHIM_UNIT_TEST_H
#define WSLSHIM_UNIT_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_reader.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

/* CHECK with a printf-style explanation. */
#define CHECKF(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            return 1;                                                                \
        }                                                                            \
    } while (0)

/* A path for `name` in this test process's temporary directory (removed at exit). */
void test_path(char *buf, size_t size, const char *name);

/* Deterministic pseudo-random numbers (splitmix64). */
void rng_seed(uint64_t seed);
uint64_t rng_next(void);
uint64_t rng_below(uint64_t n);

/* ---- generated traces ---- */
struct gen_options {
    unsigned threads;
    unsigned events_per_thread;
    unsigned chunk_events;      /* events per EVENTS chunk */
    uint32_t clock_kind;        /* WSL_CLOCK_* */
    double ticks_per_ns;        /* TSC only */
    uint64_t tick_offset;       /* TSC only: ticks at mono 0 */
    bool end;                   /* write the END chunk */
    bool flush_each_chunk;
    bool extras;                /* DRIVER, STRING and an unknown chunk type too */
    bool v12;                   /* EVENTS chunks in the 1.2 layout (older shims) instead of EVENTS_BITS */
    bool v14;                   /* EVENTS_PACKED chunks (shims of 1.4 to 1.8) instead of EVENTS_BITS */
    bool v19;                   /* EVENTS_GAPS chunks (shims of 1.9) instead of EVENTS_BITS */
    uint64_t seed;
};

struct gen_result {
    struct wsl_event *events;   /* in the order the reader hands them out */
    uint32_t *tids;
    size_t count;
    uint64_t dropped;           /* sum over chunks */
    size_t chunks;              /* EVENTS chunks */
    uint64_t start_mono_ns;
};

/* Writes a trace with several threads' events interleaved chunk by chunk. */
void gen_trace(const char *path, const struct gen_options *o, struct gen_result *out);
void gen_result_free(struct gen_result *g);

/* Everything a reader handed out, for comparisons. */
struct read_all {
    bool opened;
    char open_error[WSL_READER_ERRLEN];
    enum wsl_read_result result;
    char message[WSL_READER_ERRLEN];
    size_t items[16];           /* by chunk type */
    struct wsl_event *events;
    uint32_t *tids;
    size_t count, cap;
    uint64_t dropped;
    size_t batches, chunk_starts;
    struct wsl_process_info process;
    char host[64], exe[256], kernel_release[256], argv1[64];
    uint32_t argc;
    uint32_t api_entries;
    char api_symbol_7[64], api_base_7[64];  /* entry with id 7 */
    struct wsl_driver_info driver;
    char gpu0_name[256];
    uint64_t gpu1_mem;
    struct wsl_end_info end;
    char string1[64];
    struct wsl_clock_map clock;
};

void read_all_file(const char *path, struct read_all *ra);
void read_all_mem(const void *data, size_t size, struct read_all *ra);
void read_all_free(struct read_all *ra);

/* Index of the first field where a and b differ, -1 if equal ("t_start"... in *what). */
int event_diff(const struct wsl_event *a, const struct wsl_event *b, const char **what);

#endif /* WSLSHIM_UNIT_TEST_H */
