/*
 * Streaming reader of wslshim traces: the only code that parses the format
 * defined in include/wslshim/trace_format.h (docs/trace-format.md in prose).
 *
 * Usage:
 *
 *   char err[WSL_READER_ERRLEN];
 *   struct wsl_reader *r = wsl_reader_open(path, err, sizeof err);
 *   if (!r) { complain(err); }
 *   struct wsl_item item;
 *   enum wsl_read_result res;
 *   while ((res = wsl_reader_next(r, &item)) == WSL_READ_ITEM)
 *       use(&item);
 *   // res: WSL_READ_END (clean), WSL_READ_TRUNCATED (a prefix was read),
 *   // WSL_READ_ERROR; wsl_reader_message(r) says why for the last two,
 *   // wsl_reader_warning(r, i) what else was wrong (data after END...).
 *   wsl_reader_close(r);
 *
 * Memory stays bounded whatever the input: fixed-size zstd buffers, one chunk
 * payload at a time (at most WSL_CHUNK_MAX_PAYLOAD, grown only as bytes
 * actually arrive), events handed out in batches of at most
 * WSL_READER_BATCH. A chunk is handed out only once all of its bytes were
 * read; an EVENTS chunk found malformed part-way ends the read after earlier
 * batches of it were handed out.
 *
 * Damage (docs/reliability.md, "Bad input to the tools"). The file is read one
 * zstd frame at a time, each whole before any of it is parsed (frames up to
 * 32 MiB; the shim writes about 1 MiB), so a frame whose checksum or encoding
 * is wrong hands out nothing. Once the trace's PROCESS chunk was read, such
 * damage ends the read as a cut does: WSL_READ_TRUNCATED, everything before it
 * kept, the message naming where ("trace damaged at byte N of M (zstd: ...)").
 * Before it, the file is not a usable trace: WSL_READ_ERROR ("too short to be
 * a trace (N bytes) ..."). A chunk malformed inside a frame whose checksum
 * matched was written so: WSL_READ_ERROR ("corrupt chunk at byte N: ...",
 * after the items before it were handed out). After END, nothing
 * more is read: data there (chunks, another trace, bytes that are no frame)
 * is a warning. Warnings also say when END's events_written differs from the
 * events read, and when numbered EVENTS chunks (1.7) are out of sequence.
 *
 * MOUNTS chunks are handed out parsed (mounts.h); PATHS chunks checked
 * whole, their entries read with wsl_paths_next. Either one malformed ends
 * the read with WSL_READ_ERROR ("corrupt chunk at byte N: ...").
 *
 * Times in events are raw ticks of the trace's event clock; struct
 * wsl_clock_map turns them into CLOCK_MONOTONIC nanoseconds. Take the map
 * after the whole trace was read: the fit improves with every CLOCK chunk.
 */
#ifndef WSLSHIM_TRACE_READER_H
#define WSLSHIM_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mounts.h"
#include "wslshim/emulation.h"
#include "wslshim/trace_format.h"

#define WSL_READER_ERRLEN 256
#define WSL_READER_BATCH 256   /* events per EVENTS item, at most */
#define WSL_READER_MAJOR WSL_TRACE_VERSION_MAJOR /* the major version this reader reads */

enum wsl_read_result {
    WSL_READ_ITEM,      /* *item was filled */
    WSL_READ_END,       /* clean end: END chunk seen, stream complete */
    WSL_READ_TRUNCATED, /* stream cut short or damaged; everything before it was handed out */
    WSL_READ_ERROR,     /* not a usable trace, or unreadable; wsl_reader_message says why */
};

struct wsl_api_entry {
    uint16_t id;
    uint16_t category;          /* enum wsl_category; unknown values possible */
    uint8_t per_thread_stream;
    uint8_t flags;              /* WSL_API_* (1.3); 0 in older traces */
    const char *symbol;         /* e.g. "cuLaunchKernel_ptsz" */
    const char *base;           /* e.g. "cuLaunchKernel"; the symbol if the table had none */
};

/* Maps event ticks to CLOCK_MONOTONIC ns: ns = ns0 + (ticks - ticks0) * ns_per_tick. */
struct wsl_clock_map {
    uint32_t kind;              /* enum wsl_clock_kind */
    bool rate_known;            /* false: TSC with fewer than two usable samples (ns_per_tick is 1) */
    uint64_t ticks0, ns0;
    double ns_per_tick;
};

struct wsl_item {
    enum wsl_chunk_type type;
    union {
        struct {
            struct wsl_process_info info;
            const char *host, *exe, *kernel_release;
            uint32_t argc;
            const char *const *argv;
        } process;
        struct {
            uint32_t count;                     /* entries in this chunk */
            const struct wsl_api_entry *entries;
        } api_table;
        struct wsl_clock_sample clock;
        struct {
            struct wsl_driver_info info;        /* libcuda_path NUL-terminated */
            const struct wsl_gpu_info *gpus;    /* info.devices of them; names NUL-terminated */
        } driver;
        struct {
            uint32_t tid;
            bool chunk_start;                   /* first batch of its chunk */
            uint64_t dropped;                   /* the chunk's dropped count, on its first batch; else 0 */
            uint32_t count;                     /* may be 0 (a chunk that only reports drops) */
            const struct wsl_event *events;
            /* Each event's op in its chunk's table of argument sets (EVENTS_PACKED, EVENTS_GAPS,
             * EVENTS_BITS; NULL for EVENTS chunks): 0 a literal, k the set of the chunk's op k
             * (the same api, result, stream and arguments wherever k comes in the chunk). */
            const uint8_t *ops;
        } events;
        struct wsl_end_info end;
        struct wsl_paths_dropped_info paths_dropped; /* the count so far (1.12): never falls */
        struct wsl_gpu_memory gpu_memory;
        struct {
            uint32_t count;                     /* entries; read them with wsl_rank_next */
            uint32_t size;
            const char *data;                   /* checked: NUL-terminated KEY=VALUE entries */
        } rank;
        struct {
            uint64_t ns[WSL_EMU_FAMILIES];      /* added ns per call, by enum wsl_emu_family */
            uint64_t fs_meta_ns, fs_read_bps, fs_write_bps; /* file-system emulation (0: none) */
            const char *spec;                   /* NUL-terminated SPEC text */
        } emulation;
        struct {
            uint32_t id;
            uint32_t size;
            const char *bytes;                  /* not NUL-terminated */
        } string;
        struct {
            /* The parsed table; it stays valid until the next MOUNTS item
             * replaces it (or the reader is closed). */
            const struct wsl_mount_table *table;
        } mounts;
        struct {
            uint32_t count;                     /* entries; read them with wsl_paths_next */
            const uint8_t *data;                /* checked: every entry is whole and valid */
            size_t size;
        } paths;
    };
};

/* One entry of a PATHS chunk: id (never 0) -> path of 1..WSL_PATH_MAX_LENGTH
 * bytes without NULs, not NUL-terminated. */
struct wsl_path_ref {
    uint32_t id;
    uint32_t length;
    const char *bytes;
};

/* Reads the PATHS entry at *pos (start with 0) into *ref and moves *pos past
 * it; false after the last entry. */
static inline bool wsl_paths_next(const struct wsl_item *item, size_t *pos, struct wsl_path_ref *ref)
{
    if (*pos + sizeof(struct wsl_path_entry_header) > item->paths.size)
        return false;
    struct wsl_path_entry_header h;
    memcpy(&h, item->paths.data + *pos, sizeof h);
    ref->id = h.id;
    ref->length = h.length;
    ref->bytes = (const char *)item->paths.data + *pos + sizeof h;
    *pos += sizeof h + h.length;
    return true;
}

/* Reads the RANK entry at *pos (start with 0): *key (key_len bytes, not
 * terminated) and *value (NUL-terminated); false after the last entry. */
static inline bool wsl_rank_next(const struct wsl_item *item, size_t *pos, const char **key, size_t *key_len,
                                 const char **value)
{
    if (*pos >= item->rank.size)
        return false;
    const char *e = item->rank.data + *pos, *eq = strchr(e, '=');
    *key = e;
    *key_len = (size_t)(eq - e);
    *value = eq + 1;
    *pos += strlen(e) + 1;
    return true;
}

struct wsl_reader;

/* Opens a trace file and checks its file header. Returns NULL with a one-line
 * reason in err (e.g. "not a zstd file (not a wslshim trace)", "newer format
 * major version 2 (this reader reads 1)", "too short to be a trace (20
 * bytes): ...") when it cannot be read at all. Only regular files are read: a
 * FIFO or device is refused at once, never waited on. */
struct wsl_reader *wsl_reader_open(const char *path, char *err, size_t errlen);

/* Trace files wsl_reader_open opened in this process (what the store saves is counted here). */
uint64_t wsl_reader_files_opened(void);

/* Whether path is a trace with something to read: it opens and its PROCESS
 * chunk reads. Returns 0, or -1 with a one-line reason in err. */
int wsl_reader_probe(const char *path, char *err, size_t errlen);

/* The same for a trace already in memory (data must outlive the reader). */
struct wsl_reader *wsl_reader_open_mem(const void *data, size_t size, char *err, size_t errlen);

/* Fills *item with the next chunk-level item; pointers in it stay valid until
 * the next call. After anything but WSL_READ_ITEM, further calls return the
 * same result. Unknown chunk types are skipped. */
enum wsl_read_result wsl_reader_next(struct wsl_reader *r, struct wsl_item *item);

/* Why the read stopped (truncated or error); "" while reading or after a clean end. */
const char *wsl_reader_message(const struct wsl_reader *r);

/* The i-th warning about what was read (one line), NULL past the last: data
 * after END, END's event count against the events read, EVENTS chunks out of
 * sequence. Complete once the read has stopped. */
const char *wsl_reader_warning(const struct wsl_reader *r, size_t i);

/* The latest mount table of the trace (NULL before its first MOUNTS chunk). */
const struct wsl_mount_table *wsl_reader_mounts(const struct wsl_reader *r);

/* The API table entry for id, or NULL when the trace did not define it. */
const struct wsl_api_entry *wsl_reader_api(const struct wsl_reader *r, uint16_t id);

/* The tick -> ns map as of the chunks read so far. */
const struct wsl_clock_map *wsl_reader_clock(const struct wsl_reader *r);

/* Compressed bytes consumed and decompressed bytes produced so far. */
uint64_t wsl_reader_bytes_in(const struct wsl_reader *r);
uint64_t wsl_reader_bytes_out(const struct wsl_reader *r);

void wsl_reader_close(struct wsl_reader *r);

/* Whether readers opened from now on decode EVENTS_BITS batches with their loop's BMI2 build
 * (x86-64 CPUs with BMI1 and BMI2; the same events as the generic one). Tests set
 * wsl_reader_generic_only to read with the generic build. */
bool wsl_reader_bmi2_path(void);
extern bool wsl_reader_generic_only;

/* ---- one reading per trace: the store (trace_store.c) -------------------------------------
 *
 * The analysis reads a trace more than once: the run's pass, then the passes that need the
 * whole run first (NVTX step windows, the steady state, a rank's own run, the timeline of
 * --html, --sqlite, --project). A store keeps the chunks of a trace's first reading, as they
 * came out of zstd (5-10 bytes per event),
 * so that the later readings replay them: no file, no zstd, the same items, clock, mounts,
 * warnings and result. Recordings are kept while all stores together hold at most
 * WSL_STORE_MAX_BYTES and each at most WSL_STORE_MAX_TRACE_BYTES (a large trace's analysis holds
 * the most memory itself); a trace past either is not kept and its later readings read the file. */
#define WSL_STORE_MAX_BYTES (32u << 20)
#define WSL_STORE_MAX_TRACE_BYTES (8u << 20)

struct wsl_trace_store;

struct wsl_trace_store *wsl_store_new(void);
void wsl_store_free(struct wsl_trace_store *s);

/* A reader of path: the replay of its recording when s holds one (err untouched), else
 * wsl_reader_open(path) (also when s is NULL). */
struct wsl_reader *wsl_store_open(const struct wsl_trace_store *s, const char *path, char *err, size_t errlen);

/* The same, and a trace s does not hold yet is recorded as it is read: once read to its end
 * (WSL_READ_END or WSL_READ_TRUNCATED) and closed, s holds it. */
struct wsl_reader *wsl_store_open_recording(struct wsl_trace_store *s, const char *path, char *err, size_t errlen);

/* wsl_reader_probe, reading the whole trace into s (a trace s holds already is replayed). */
int wsl_store_probe(struct wsl_trace_store *s, const char *path, char *err, size_t errlen);

/* Whether s holds path's recording (tests). */
bool wsl_store_holds(const struct wsl_trace_store *s, const char *path);

/* Bytes held by the recordings of every store. */
size_t wsl_store_bytes_held(void);

/* ns = ns0 + (ticks - ticks0) * ns_per_tick, saturated to [0, UINT64_MAX]. */
uint64_t wsl_clock_to_ns(const struct wsl_clock_map *m, uint64_t ticks);
/* A duration of `ticks` ticks in ns, saturated. */
uint64_t wsl_clock_duration_ns(const struct wsl_clock_map *m, uint64_t ticks);

#endif /* WSLSHIM_TRACE_READER_H */
