/*
 * Synthetic traces with file I/O, for the unit tests and make_io_trace: a
 * small builder that writes calls one after another on one thread (each
 * call starts IO_GAP_NS after the previous one ended), and named scenarios.
 * Mount tables come from tests/unit/fixtures (WSLSHIM_FIXTURE_DIR).
 */
#ifndef WSLSHIM_IO_SCENARIOS_H
#define WSLSHIM_IO_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_synth.h"

#define IO_GAP_NS 1000u
#define IO_START_NS 7000000000u
#define IO_TSC_TICKS_PER_NS 3u
#define IO_TSC_OFFSET 500000000u

/* Devices of the fixtures' mounts */
#define DEV_WSL2_ROOT WSL_DEV(8, 48)     /* wsl2.mountinfo: / and /usr/share/X11/xkb, ext4 */
#define DEV_WSL2_C WSL_DEV(0, 62)        /* /mnt/c, 9p drvfs */
#define DEV_WSL2_PROC WSL_DEV(0, 57)
#define DEV_WSL2_SHM WSL_DEV(0, 61)      /* /dev/shm, tmpfs */

/* The text of tests/unit/fixtures/NAME (a new string). */
char *io_fixture(const char *name);

struct io_builder;

struct io_builder_options {
    uint32_t flags;             /* WSL_PROC_* */
    bool tsc;                   /* ticks = IO_TSC_OFFSET + 3 * ns, else CLOCK_MONOTONIC ns */
    const char *mountinfo;      /* MOUNTS text written after the API table; NULL: none */
    const char *rank_vars;      /* a RANK chunk's entries ("RANK=0\0WORLD_SIZE=2\0"), written after the
                                   PROCESS chunk; NULL: none */
    size_t rank_vars_len;
};

struct io_builder *iob_open(const char *path, const struct io_builder_options *o);
/* A WSL2 process's trace (WSL_PROC_WSL2) with the mounts of fixtures/wsl2.mountinfo. */
struct io_builder *iob_open_wsl2(const char *path, bool tsc);
/* Writes the pending events and the END chunk, closes the file. */
void iob_close(struct io_builder *b);

/* Queues a path (written in a PATHS chunk before the next EVENTS chunk). */
void iob_path(struct io_builder *b, uint32_t id, const char *path);
/* Writes the pending events, then a MOUNTS chunk. */
void iob_mounts(struct io_builder *b, const char *mountinfo);
/* Writes queued paths and events now. */
void iob_flush(struct io_builder *b);
/* Writes queued paths and events, then a chunk of any type as given. */
void iob_chunk(struct io_builder *b, uint32_t type, const void *payload, size_t size);
/* Writes queued paths and events and closes the file without an END chunk (a killed process). */
void iob_cut(struct io_builder *b);

/* One call lasting dur_ns: the raw form and the usual shapes. */
void iob_call(struct io_builder *b, const char *symbol, int64_t fd, int32_t result, uint64_t dur_ns, uint64_t a0,
              uint64_t a1, uint64_t a2, uint64_t a3);
void iob_openat(struct io_builder *b, int fd, uint32_t path, uint64_t dev, uint64_t size, uint64_t dur_ns);
void iob_open_fails(struct io_builder *b, uint32_t path, int err, uint64_t dur_ns);
void iob_read(struct io_builder *b, int fd, uint32_t path, uint64_t asked, uint64_t got, uint64_t dur_ns);
void iob_close_fd(struct io_builder *b, int fd, uint32_t path, uint64_t dur_ns);
/* start of the first call and end of the last, CLOCK_MONOTONIC ns */
uint64_t iob_first_ns(const struct io_builder *b);
uint64_t iob_last_ns(const struct io_builder *b);

/* Writes scenario `name` to path; false when there is no such scenario.
 * Names: drvfs, ext4, small_files, large_files (rule cases, WSL2), many_files (1 M files, for
 * benchmarks: docs/overhead.md),
 * bad_paths_length, bad_paths_past_end, bad_paths_zero_id, bad_paths_cut, bad_paths_nul,
 * bad_mounts_text, bad_mounts_nul (malformed chunks). */
bool io_scenario_write(const char *path, const char *name);

#endif /* WSLSHIM_IO_SCENARIOS_H */
