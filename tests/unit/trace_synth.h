/*
 * Test-only writer of synthetic wslshim traces: the same bytes the shim
 * writes (file header, chunks, events encoded with trace_format.h's codec,
 * zstd-compressed), plus knobs to break them: any header field, raw chunk
 * headers with absurd sizes, uncompressed output, and file surgery (cut at a
 * byte offset, flip a byte). Failures abort: this is test code.
 */
#ifndef WSLSHIM_TRACE_SYNTH_H
#define WSLSHIM_TRACE_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wslshim/trace_format.h"

/* The shim's API table: the rows of cuda_api.def, io_api.def, then nvtx_api.def; id = row index. */
struct synth_api {
    const char *symbol, *base;
    uint16_t category;
    uint8_t per_thread_stream;
};
extern const struct synth_api synth_apis[];
extern const unsigned synth_api_count;
/* The id of symbol in synth_apis; aborts when there is none. */
uint16_t synth_api_id(const char *symbol);

struct synth_options {
    int level;              /* zstd level; 0 means what the shim uses (1 with v12_events) */
    bool v12_events;        /* EVENTS chunks in the 1.2 column layout, file header 1.2 (older shims) */
    bool v14_events;        /* EVENTS_PACKED chunks, file header 1.8 (shims before 1.9) */
    bool v19_events;        /* EVENTS_GAPS chunks, file header 1.9; none of these: EVENTS_BITS (1.10) */
    bool checksum;          /* zstd frame checksum (the shim turns it on) */
    bool raw;               /* write the decompressed bytes, no zstd */
    bool flush_each_chunk;  /* end a zstd block after every chunk */
};

struct synth;

/* Opens path for writing; opt may be NULL (level 1, checksum on). */
struct synth *synth_open(const char *path, const struct synth_options *opt);
/* Finishes the zstd frame and closes the file. */
void synth_close(struct synth *s);
/* Closes the file without finishing the frame: what a killed process leaves. */
void synth_abandon(struct synth *s);
/* Ends a zstd block, as the shim does about every second. */
void synth_flush(struct synth *s);
/* Ends the zstd frame; what comes next is in a new one (the shim writes a frame per 64 KiB of chunks). */
void synth_frame_end(struct synth *s);

/* ---- raw pieces ---- */
void synth_bytes(struct synth *s, const void *data, size_t size);
void synth_chunk_header(struct synth *s, uint32_t type, uint32_t size);
void synth_chunk(struct synth *s, uint32_t type, const void *payload, size_t size);

/* ---- well-formed pieces ---- */
struct wsl_file_header synth_default_header(void);
void synth_file_header(struct synth *s, const struct wsl_file_header *h); /* NULL: the default */
void synth_process(struct synth *s, const struct wsl_process_info *pi, const char *host, const char *exe,
                   const char *kernel_release, int argc, const char *const *argv);
void synth_api_table(struct synth *s);  /* all of synth_apis */
/* An API table of just these rows (a scenario's own), ids 0..n-1 in order. */
struct synth_row {
    const char *sym, *base;
    uint16_t cat;
    uint8_t flags;          /* WSL_API_* */
};
void synth_api_rows(struct synth *s, const struct synth_row *rows, uint16_t n);
void synth_clock(struct synth *s, uint64_t ticks, uint64_t mono_ns, uint64_t real_ns);
/* One EVENTS chunk; base_ticks is the first event's t_start (0 when n is 0). */
void synth_events(struct synth *s, uint32_t tid, uint64_t dropped, const struct wsl_event *ev, uint32_t n);
void synth_driver(struct synth *s, int32_t version, int32_t init_result, const char *libcuda,
                  const struct wsl_gpu_info *gpus, uint32_t count);
void synth_string(struct synth *s, uint32_t id, const char *bytes);
/* A MOUNTS chunk holding mountinfo text. */
void synth_mounts(struct synth *s, const char *mountinfo);
/* One PATHS chunk with n entries. */
void synth_paths(struct synth *s, const uint32_t *ids, const char *const *paths, uint32_t n);
void synth_end(struct synth *s, uint64_t end_ticks, uint64_t written, uint64_t dropped, uint32_t threads);

/* Encodes events into a new buffer the way EVENTS chunks hold them after the
 * header (column directory, then the columns); returns its size (encoded_size). */
size_t synth_encode_events(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out);
/* The same for EVENTS_PACKED chunks (what the shim wrote from format 1.4 to 1.8). */
size_t synth_encode_packed(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out);
/* The same for EVENTS_GAPS chunks (what the shim wrote in format 1.9). */
size_t synth_encode_gaps(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out);
/* The same for EVENTS_BITS chunks (what the shim writes from format 1.10 on). */
size_t synth_encode_tbits(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out);
/* The same with the table ps: carried (its entries kept, WSL_TBITS_CONTINUES set, format 1.13) or
 * anew; ps holds the chunk's table at its end. */
struct wsl_pack_state;
size_t synth_encode_tbits_table(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks,
                                struct wsl_pack_state *ps, bool carry, uint8_t **out);

/* ---- files ---- */
off_t synth_file_size(const char *path);
void synth_truncate_file(const char *path, off_t size);
void synth_flip_byte(const char *path, off_t at, uint8_t xor_mask);
/* Reads a whole file into a new buffer. */
uint8_t *synth_read_file(const char *path, size_t *size);
void synth_write_file(const char *path, const void *data, size_t size);

#endif /* WSLSHIM_TRACE_SYNTH_H */
