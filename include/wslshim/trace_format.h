/*
 * wslshim trace format, version 1. Shared by the shim (writer) and the
 * analyzer (reader); docs/trace-format.md explains it in prose.
 *
 * A trace file is one zstd stream (one or more frames). Decompressed, it is:
 *
 *   struct wsl_file_header                       (fixed, 32 bytes)
 *   chunk, chunk, ...                            (each: wsl_chunk_header + payload)
 *
 * Integers are in the writing host's byte order (little-endian on x86-64 and
 * aarch64 Linux); the file header's byte_order field lets a reader refuse the
 * other byte order with a clear message. Chunks are self-contained: a reader that meets a chunk cut
 * short (a killed process) stops there and keeps everything before it.
 * The writer ends a zstd block (ZSTD_e_flush) at least every second, so a
 * killed process loses at most about a second of events.
 */
#ifndef WSLSHIM_TRACE_FORMAT_H
#define WSLSHIM_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WSL_TRACE_MAGIC "WSLSHIM"          /* 7 chars + NUL = 8 bytes */
#define WSL_TRACE_BYTE_ORDER 0x01020304u
#define WSL_TRACE_VERSION_MAJOR 1u         /* readers refuse a newer major */
#define WSL_TRACE_VERSION_MINOR 1u         /* additions readers may skip (1: file I/O) */

/* No chunk payload may exceed this; a reader treats larger as corruption. */
#define WSL_CHUNK_MAX_PAYLOAD (64u << 20)

struct wsl_file_header {
    char magic[8];          /* WSL_TRACE_MAGIC, NUL-terminated */
    uint32_t byte_order;    /* WSL_TRACE_BYTE_ORDER as the writer stored it */
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size;   /* sizeof(struct wsl_file_header) */
    uint32_t record_size;   /* sizeof(struct wsl_event) */
    uint64_t reserved;
};
_Static_assert(sizeof(struct wsl_file_header) == 32, "file header is 32 bytes");

enum wsl_chunk_type {
    WSL_CHUNK_PROCESS = 1,  /* who wrote this trace; first chunk */
    WSL_CHUNK_API_TABLE = 2,/* event id -> symbol, base name, category */
    WSL_CHUNK_CLOCK = 3,    /* a (ticks, monotonic ns, realtime ns) sample */
    WSL_CHUNK_EVENTS = 4,   /* encoded events of one thread */
    WSL_CHUNK_DRIVER = 5,   /* driver version and GPUs, once the driver is up */
    WSL_CHUNK_END = 6,      /* clean close: totals; absent after a kill */
    WSL_CHUNK_STRING = 7,   /* id -> string (kernel names: later) */
    WSL_CHUNK_MOUNTS = 8,   /* the mount table the process sees (mountinfo text) */
    WSL_CHUNK_PATHS = 9,    /* path id -> path of files the program opened or looked up */
};

struct wsl_chunk_header {
    uint32_t type;          /* enum wsl_chunk_type; unknown types are skipped */
    uint32_t size;          /* payload bytes that follow, <= WSL_CHUNK_MAX_PAYLOAD */
};
_Static_assert(sizeof(struct wsl_chunk_header) == 8, "chunk header is 8 bytes");

/* ---- PROCESS payload: this fixed part, then strings (see strings_size) ---- */
enum wsl_clock_kind {
    WSL_CLOCK_MONOTONIC_NS = 0, /* ticks are CLOCK_MONOTONIC nanoseconds */
    WSL_CLOCK_TSC = 1,          /* ticks are a cycle counter; CLOCK chunks map them */
};
#define WSL_PROC_WSL1 1u        /* flags: running under WSL 1 */
#define WSL_PROC_WSL2 2u        /* running under WSL 2 */
#define WSL_PROC_FORKED 4u      /* started by fork() of a traced parent */
#define WSL_PROC_EXECED 8u      /* the image of a traced process that called exec */

struct wsl_process_info {
    int32_t pid;
    int32_t ppid;
    uint32_t flags;         /* WSL_PROC_* */
    uint32_t clock_kind;    /* enum wsl_clock_kind */
    uint64_t start_ticks;   /* in the event clock */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC at start */
    uint64_t start_real_ns; /* CLOCK_REALTIME at start (Unix epoch) */
    uint32_t strings_size;  /* bytes of strings that follow */
    uint32_t reserved;
    /* then NUL-terminated strings, in order: host name, executable path,
     * kernel release (uname -r), then the command line as argc NUL-terminated
     * arguments filling the rest of strings_size. */
};
_Static_assert(sizeof(struct wsl_process_info) == 48, "process info is 48 bytes");

/* ---- API_TABLE payload: u32 count, then per entry:
 *      u16 id, u16 category, u8 per_thread_stream, 3 reserved bytes,
 *      then NUL-terminated symbol and base name. ------------------------------ */

/* ---- CLOCK payload ---------------------------------------------------------- */
struct wsl_clock_sample {
    uint64_t ticks;
    uint64_t mono_ns;
    uint64_t real_ns;
};
_Static_assert(sizeof(struct wsl_clock_sample) == 24, "clock sample is 24 bytes");

/* ---- DRIVER payload: this, then `devices` x wsl_gpu_info ------------------ */
struct wsl_driver_info {
    int32_t driver_version; /* cuDriverGetVersion, e.g. 13000 */
    int32_t init_result;    /* CUresult of the first cuInit */
    uint32_t devices;
    uint32_t reserved;
    char libcuda_path[256]; /* the libcuda.so.1 this process loaded */
};
struct wsl_gpu_info {
    char name[256];
    uint64_t total_mem;
    int32_t cc_major, cc_minor;
};
_Static_assert(sizeof(struct wsl_driver_info) == 272, "driver info is 272 bytes");
_Static_assert(sizeof(struct wsl_gpu_info) == 272, "gpu info is 272 bytes");

/* ---- END payload ------------------------------------------------------------ */
struct wsl_end_info {
    uint64_t end_ticks;
    uint64_t events_written;
    uint64_t events_dropped; /* events lost to full buffers, all threads */
    uint32_t threads;        /* threads that recorded anything */
    uint32_t reserved;
};
_Static_assert(sizeof(struct wsl_end_info) == 32, "end info is 32 bytes");

/* ---- STRING payload: u32 id, then bytes (not NUL-terminated) ---------------- */

/* ---- MOUNTS payload: the text of /proc/self/mountinfo (or of the file named by
 * WSLSHIM_MOUNTINFO) as the process saw it. Written at start and again whenever
 * the table changes (mounts made after start); each one replaces the previous
 * one for the events that follow it. Lines: "id parent major:minor root
 * mountpoint options [optional fields] - fstype source superoptions". -------- */

/* ---- PATHS payload: a sequence of entries, each
 *      u32 id, u32 length, then `length` bytes of path (not NUL-terminated),
 * as the program named the file (relative paths are made absolute with the
 * working directory at the time). Ids are unique in a process and never 0; an
 * I/O event's a0 refers to one. An entry is written before any EVENTS chunk
 * that refers to it in the same thread. ------------------------------------- */
struct wsl_path_entry_header {
    uint32_t id;
    uint32_t length;
};
#define WSL_PATH_MAX_LENGTH 4096u
#define WSL_DEV(major, minor) ((uint64_t)(major) << 32 | (uint32_t)(minor))

/* ---- Events ------------------------------------------------------------------
 * In memory an event is this fixed 64-byte record; the per-thread buffers hold
 * them and the reader hands them out. Field use by category:
 *
 *   category          stream  a0             a1              a2            a3
 *   LAUNCH            stream  CUfunction     GRID            BLOCK         shared mem
 *   GRAPH             stream  CUgraphExec
 *   HOSTFN            stream  host function
 *   ALLOC(_MANAGED)   stream  device pointer bytes           pool / flags  pitch
 *   FREE              stream  device pointer
 *   HOST_ALLOC        -       host pointer   bytes           flags
 *   HOST_FREE         -       host pointer
 *   HOST_(UN)REGISTER -       host pointer   bytes           flags
 *   SYNC_*            stream  event / ctx
 *   STREAM_WAIT       stream  event                                        flags
 *   EVENT_RECORD      stream  event                                        flags
 *   QUERY             stream
 *   COPY_*            stream  destination    source          bytes
 *   MEMSET(_ASYNC)    stream  destination                    bytes         value
 *   INIT              -       flags
 *
 * File I/O (libc calls; result is 0 on success or -errno):
 *   category   stream          a0        a1                 a2              a3
 *   IO_OPEN    fd (-1 failed)  path id   device (WSL_DEV)   open flags      file size at open
 *   IO_READ    fd              path id   bytes asked        bytes read      offset, or ~0 (file position)
 *   IO_MMAP    fd              path id   length             offset          prot
 *   IO_STAT    fd, or ~0       path id   device of result   file size       what (0 stat, 1 access, 2 statx)
 *   IO_SEEK    fd              path id   offset             whence          resulting position
 *   IO_CLOSE   fd              path id
 * path id 0: unknown (an fd the shim did not see opened). Reads through stdio
 * (fread, fgets, getline...) are IO_READ with the FILE's fd. Device 0: a failed
 * open or stat. File size ~0 at open: not known there (the shim asks fstat only
 * for the first file opened in each directory); a later IO_STAT of the fd or
 * the bytes read up to end of file give it. A path relative to a directory fd
 * other than the working directory is written "<fd N>/name". In a forked child
 * the files inherited from the parent keep their ids and are named again.
 *
 * GRID = gridX | gridY << 32; BLOCK = gridZ | blockX << 16 | blockY << 32 | blockZ << 48.
 */
struct wsl_event {
    uint64_t t_start;       /* event clock ticks */
    uint64_t t_end;
    uint16_t api;           /* id in this trace's API table */
    uint16_t flags;         /* reserved, 0 */
    int32_t result;         /* CUresult (or -errno for libc calls, later) */
    uint64_t stream;
    uint64_t a[4];
};
_Static_assert(sizeof(struct wsl_event) == 64, "event record is 64 bytes");

enum wsl_category {
    WSL_CAT_OTHER = 0,
    WSL_CAT_INIT,
    WSL_CAT_LAUNCH,
    WSL_CAT_GRAPH,
    WSL_CAT_HOSTFN,
    WSL_CAT_ALLOC,
    WSL_CAT_ALLOC_MANAGED,
    WSL_CAT_FREE,
    WSL_CAT_HOST_ALLOC,
    WSL_CAT_HOST_FREE,
    WSL_CAT_HOST_REGISTER,
    WSL_CAT_HOST_UNREGISTER,
    WSL_CAT_SYNC_STREAM,
    WSL_CAT_SYNC_CTX,
    WSL_CAT_SYNC_EVENT,
    WSL_CAT_STREAM_WAIT,
    WSL_CAT_QUERY,
    WSL_CAT_EVENT_RECORD,
    WSL_CAT_COPY_ANY,
    WSL_CAT_COPY_ANY_ASYNC,
    WSL_CAT_COPY_HTOD,
    WSL_CAT_COPY_HTOD_ASYNC,
    WSL_CAT_COPY_DTOH,
    WSL_CAT_COPY_DTOH_ASYNC,
    WSL_CAT_COPY_DTOD,
    WSL_CAT_COPY_DTOD_ASYNC,
    WSL_CAT_MEMSET,
    WSL_CAT_MEMSET_ASYNC,
    WSL_CAT_IO_OPEN,
    WSL_CAT_IO_READ,
    WSL_CAT_IO_MMAP,
    WSL_CAT_IO_STAT,
    WSL_CAT_IO_SEEK,
    WSL_CAT_IO_CLOSE,
    WSL_CAT_COUNT
};

#define WSL_GRID(gx, gy) ((uint64_t)(gx) | (uint64_t)(gy) << 32)
#define WSL_BLOCK(gz, bx, by, bz) \
    ((uint64_t)((gz) & 0xffffu) | (uint64_t)((bx) & 0xffffu) << 16 | \
     (uint64_t)((by) & 0xffffu) << 32 | (uint64_t)((bz) & 0xffffu) << 48)

/* ---- EVENTS payload -----------------------------------------------------------
 * struct wsl_events_header, then `count` encoded events. Encoding, per event,
 * against the previous event of the same api id in this chunk (all zero at the
 * chunk's start) and the previous event's t_start (base_ticks at the start):
 *
 *   varint api
 *   u8     mask: bit0 result, bit1 stream, bit2..5 a[0..3] differ from previous
 *   varint zigzag(t_start - previous t_start)
 *   varint t_end - t_start
 *   for each set bit, in order: varint zigzag(result) | varint (value ^ previous)
 *
 * Decoding needs no state from other chunks. */
struct wsl_events_header {
    uint32_t tid;
    uint32_t count;
    uint64_t base_ticks;
    uint64_t dropped;       /* events this thread lost since its previous chunk */
    uint32_t encoded_size;  /* bytes of encoded events that follow */
    uint32_t reserved;
};
_Static_assert(sizeof(struct wsl_events_header) == 32, "events header is 32 bytes");

#define WSL_MAX_API_IDS 1024u
#define WSL_EVENT_MAX_ENCODED (2 + 1 + 10 + 10 + 5 + 5 * 10)

static inline uint8_t *wsl_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Returns the byte after the varint, or NULL when it runs past end or is
 * longer than 10 bytes. */
static inline const uint8_t *wsl_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return NULL;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

static inline uint64_t wsl_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t wsl_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Per-chunk codec state, one slot per api id, shared by encoder and decoder. */
struct wsl_codec_state {
    uint64_t prev_t;
    struct wsl_event prev[WSL_MAX_API_IDS];
};

static inline void wsl_codec_reset(struct wsl_codec_state *st, uint64_t base_ticks)
{
    memset(st, 0, sizeof *st);
    st->prev_t = base_ticks;
}

/* Encodes ev into p (at least WSL_EVENT_MAX_ENCODED bytes); returns the end.
 * ev->api must be < WSL_MAX_API_IDS. */
static inline uint8_t *wsl_event_encode(struct wsl_codec_state *st, const struct wsl_event *ev, uint8_t *p)
{
    struct wsl_event *pv = &st->prev[ev->api];
    uint8_t mask = 0;
    mask |= (uint8_t)(ev->result != pv->result) << 0;
    mask |= (uint8_t)(ev->stream != pv->stream) << 1;
    mask |= (uint8_t)(ev->a[0] != pv->a[0]) << 2;
    mask |= (uint8_t)(ev->a[1] != pv->a[1]) << 3;
    mask |= (uint8_t)(ev->a[2] != pv->a[2]) << 4;
    mask |= (uint8_t)(ev->a[3] != pv->a[3]) << 5;
    p = wsl_put_varint(p, ev->api);
    *p++ = mask;
    p = wsl_put_varint(p, wsl_zigzag((int64_t)(ev->t_start - st->prev_t)));
    p = wsl_put_varint(p, ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0);
    if (mask & 1)
        p = wsl_put_varint(p, wsl_zigzag(ev->result));
    if (mask & 2)
        p = wsl_put_varint(p, ev->stream ^ pv->stream);
    for (int i = 0; i < 4; i++)
        if (mask & (4u << i))
            p = wsl_put_varint(p, ev->a[i] ^ pv->a[i]);
    st->prev_t = ev->t_start;
    *pv = *ev;
    return p;
}

/* Decodes one event; returns the byte after it, or NULL on malformed input
 * (ids >= api_limit, bad varints, reserved mask bits). */
static inline const uint8_t *wsl_event_decode(struct wsl_codec_state *st, const uint8_t *p,
                                              const uint8_t *end, uint32_t api_limit,
                                              struct wsl_event *ev)
{
    uint64_t v;
    if (!(p = wsl_get_varint(p, end, &v)) || v >= api_limit || v >= WSL_MAX_API_IDS)
        return NULL;
    struct wsl_event *pv = &st->prev[v];
    *ev = *pv;
    ev->api = (uint16_t)v;
    if (p >= end)
        return NULL;
    uint8_t mask = *p++;
    if (mask & 0xc0)
        return NULL;
    if (!(p = wsl_get_varint(p, end, &v)))
        return NULL;
    ev->t_start = st->prev_t + (uint64_t)wsl_unzigzag(v);
    if (!(p = wsl_get_varint(p, end, &v)))
        return NULL;
    ev->t_end = ev->t_start + v;
    if (mask & 1) {
        if (!(p = wsl_get_varint(p, end, &v)))
            return NULL;
        ev->result = (int32_t)wsl_unzigzag(v);
    }
    if (mask & 2) {
        if (!(p = wsl_get_varint(p, end, &v)))
            return NULL;
        ev->stream = pv->stream ^ v;
    }
    for (int i = 0; i < 4; i++)
        if (mask & (4u << i)) {
            if (!(p = wsl_get_varint(p, end, &v)))
                return NULL;
            ev->a[i] = pv->a[i] ^ v;
        }
    st->prev_t = ev->t_start;
    *pv = *ev;
    return p;
}

#endif /* WSLSHIM_TRACE_FORMAT_H */
