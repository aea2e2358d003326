/*
 * Streaming trace reader. Layers, bottom up:
 *   source      bytes of the compressed file (an fd, or memory)
 *   stream      zstd-decompressed bytes, through one fixed output buffer
 *   chunks      header + payload, the payload read whole into one buffer
 *   items       parsed payloads; EVENTS decoded in batches
 * Every length read from the file is checked before it is used, so hostile
 * input ends in WSL_READ_ERROR or WSL_READ_TRUNCATED, never worse.
 */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define INPUT_BUFFER_SIZE (128u << 10)
#define OUTPUT_BUFFER_SIZE (256u << 10) /* to start with: it grows to hold a whole zstd frame */
#define FRAME_BUFFER_MAX (32u << 20)    /* a frame larger than this is parsed before its checksum
                                           is checked (the shim's are about 1 MiB) */
#define READER_WARNINGS_MAX 4
#define SEQ_TRACKED_MAX (1u << 24)      /* chunk numbers remembered (2 MiB of bits); the shim
                                           writes a few per second and thread */
#define PAYLOAD_INITIAL_SIZE (64u << 10)
#define API_NAME_MAX 255u       /* longer symbol names mean corruption */
#define HEADER_SIZE_MAX 4096u   /* a file header this big means corruption */
#define ZSTD_WINDOW_LOG_MAX 27  /* 128 MiB: the most a frame may make us allocate */

enum api_slot_state {
    API_ABSENT = 0,     /* not in the table: an event using it is corrupt */
    API_PRESENT = 1,    /* in the table, untouched in the current EVENTS chunk */
    API_TOUCHED = 2,    /* in the table, codec slot used in the current chunk */
};

struct wsl_reader {
    /* source */
    int fd;                     /* -1 for a memory source */
    ZSTD_inBuffer in;
    uint8_t *inbuf;
    bool eof;

    /* stream: one zstd frame at a time, whole, so that a frame's checksum is checked
     * before any of it is parsed (a damaged frame hands out nothing) */
    ZSTD_DCtx *dctx;
    uint8_t *outbuf;
    size_t out_pos, out_end, out_cap;
    bool frame_open;            /* the last zstd call left a frame unfinished */
    bool zstd_pending;          /* the last zstd call filled the output: it may hold more */
    bool frame_partial;         /* outbuf holds the start of a frame larger than FRAME_BUFFER_MAX */
    bool damaged;               /* zstd refused a frame: damage_at, damage_why say where and why */
    uint64_t damage_at;         /* byte of the file where the damaged frame starts */
    char damage_why[96];
    uint64_t frame_start;       /* byte of the file where the frame being read starts */
    uint64_t out_frame_at;      /* ... and where the one in outbuf started */
    uint32_t frames_done;       /* complete frames read (checksums checked) */
    uint64_t bytes_in, bytes_out, offset; /* offset: decompressed bytes consumed by the parser */
    uint64_t file_size;         /* of a file source (0: memory or unknown) */

    /* result */
    enum wsl_read_result done;  /* WSL_READ_ITEM while reading */
    char message[WSL_READER_ERRLEN];

    /* chunks */
    bool seen_process, seen_end;
    uint16_t version_minor;
    uint64_t events_read;       /* events handed out */
    uint64_t end_events_written; /* END's count */
    uint64_t end_frame_at;      /* where END's frame starts in the file */
    uint32_t seq_last;          /* the last numbered EVENTS chunk's seq (1.7), 0: none yet */
    uint32_t seq_breaks;        /* numbered chunks out of sequence */
    uint64_t seq_first_break_at;
    uint32_t seq_first_got, seq_first_want;
    uint8_t *seq_seen;          /* a bit per chunk number seen, up to SEQ_TRACKED_MAX */
    size_t seq_seen_bytes;
    uint32_t seq_repeats;       /* chunks whose number was seen before: skipped */
    bool chunk_skipped;         /* parse_events skipped the chunk: read the next one */

    /* warnings about what was read (one line each) */
    char warnings[READER_WARNINGS_MAX][WSL_READER_ERRLEN];
    size_t warning_count;

    uint8_t *payload;
    size_t payload_cap;
    uint64_t chunk_offset;      /* where the current chunk's header starts */

    /* EVENTS chunk being handed out in batches */
    bool in_events;
    uint32_t ev_tid, ev_count, ev_done;
    uint64_t ev_dropped;
    struct wsl_columns_in ev_in;
    bool ev_packed;             /* EVENTS_PACKED: ev_pin and pack, not ev_in */
    struct wsl_packed_in ev_pin;
    struct wsl_pack_state *pack;
    struct wsl_event *batch;
    struct wsl_codec_state *codec;
    uint16_t touched[WSL_MAX_API_IDS]; /* codec slots used in this chunk: reset only those */
    uint32_t touched_count;

    /* API table */
    uint8_t api_state[WSL_MAX_API_IDS];
    struct wsl_api_entry api[WSL_MAX_API_IDS];
    char **name_arenas;
    size_t name_arena_count;
    struct wsl_api_entry *table_items;  /* the entries of the last API_TABLE chunk */

    /* MOUNTS: the table in force */
    struct wsl_mount_table *mounts;

    /* PROCESS argv */
    const char **argv;
    size_t argv_cap;

    /* clock */
    struct wsl_clock_map clock;
    bool have_start_pair, have_first_sample, have_latest_sample;
    struct wsl_clock_sample start_pair, first_sample, latest_sample;
};

static const char *chunk_type_name(uint32_t type)
{
    switch (type) {
    case WSL_CHUNK_PROCESS: return "PROCESS";
    case WSL_CHUNK_API_TABLE: return "API_TABLE";
    case WSL_CHUNK_CLOCK: return "CLOCK";
    case WSL_CHUNK_EVENTS: return "EVENTS";
    case WSL_CHUNK_DRIVER: return "DRIVER";
    case WSL_CHUNK_END: return "END";
    case WSL_CHUNK_STRING: return "STRING";
    case WSL_CHUNK_MOUNTS: return "MOUNTS";
    case WSL_CHUNK_PATHS: return "PATHS";
    case WSL_CHUNK_GPU_MEMORY: return "GPU_MEMORY";
    case WSL_CHUNK_RANK: return "RANK";
    case WSL_CHUNK_EVENTS_PACKED: return "EVENTS_PACKED";
    case WSL_CHUNK_EMULATION: return "EMULATION";
    default: return "unknown";
    }
}

static void add_warning(struct wsl_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Once the read stops: numbered EVENTS chunks (1.7) out of sequence. */
static void seq_warning(struct wsl_reader *r)
{
    if (r->seq_breaks) {
        char skipped[64] = "";
        if (r->seq_repeats)
            snprintf(skipped, sizeof skipped, "; %u repeated chunk%s skipped", r->seq_repeats,
                     r->seq_repeats == 1 ? "" : "s");
        add_warning(r, "%u EVENTS chunk%s out of sequence (the first at decompressed byte %llu: number %u where %u "
                       "was due): frames of the trace were lost, repeated or reordered%s",
                    r->seq_breaks, r->seq_breaks == 1 ? "" : "s", (unsigned long long)r->seq_first_break_at,
                    r->seq_first_got, r->seq_first_want, skipped);
    }
    r->seq_breaks = 0;
}

__attribute__((format(printf, 3, 4)))
static enum wsl_read_result finish(struct wsl_reader *r, enum wsl_read_result res, const char *fmt, ...)
{
    if (r->done != WSL_READ_ITEM)
        return r->done; /* keep the first reason */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    r->done = res;
    r->in_events = false;
    seq_warning(r);
    return res;
}

static enum wsl_read_result clean_end(struct wsl_reader *r)
{
    r->done = WSL_READ_END;
    seq_warning(r);
    return WSL_READ_END;
}

static void add_warning(struct wsl_reader *r, const char *fmt, ...)
{
    if (r->warning_count == READER_WARNINGS_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->warning_count++], WSL_READER_ERRLEN, fmt, ap);
    va_end(ap);
}

/* A chunk that is malformed although its zstd frame's checksum matched was
 * written wrong: the trace is invalid (damage on disk is caught by the
 * checksum, stream_fill). */
#define corrupt(r, ...) finish((r), WSL_READ_ERROR, __VA_ARGS__)
#define out_of_memory(r, ...) finish((r), WSL_READ_ERROR, __VA_ARGS__)

/* ---- source and stream ------------------------------------------------------- */

/* Reads more compressed input; false at end of input or on an I/O error. */
static bool source_more(struct wsl_reader *r)
{
    if (r->eof)
        return false;
    if (r->fd < 0) {
        r->eof = true;
        return false;
    }
    ssize_t got;
    do
        got = read(r->fd, r->inbuf, INPUT_BUFFER_SIZE);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        finish(r, WSL_READ_ERROR, "read error: %s", strerror(errno));
        r->eof = true;
        return false;
    }
    if (got == 0) {
        r->eof = true;
        return false;
    }
    r->in.src = r->inbuf;
    r->in.size = (size_t)got;
    r->in.pos = 0;
    r->bytes_in += (uint64_t)got;
    return true;
}

/* Where the next compressed byte comes from, counted from the start of the file. */
static uint64_t source_offset(const struct wsl_reader *r) { return r->bytes_in - (r->in.size - r->in.pos); }

/* Decompresses the next zstd frame whole into the output buffer: zstd checks a
 * frame's checksum at its end, so nothing of a damaged frame reaches the
 * parser (r->damaged is set instead). At the end of the input, the part of a
 * frame cut short is handed out (its complete blocks: a killed process's last
 * frame); a frame beyond FRAME_BUFFER_MAX is handed out in parts, unchecked.
 * False when nothing more comes (end of input, damage or an error). */
static bool stream_fill(struct wsl_reader *r)
{
    r->out_pos = r->out_end = 0;
    if (r->done == WSL_READ_ERROR || r->damaged)
        return false;
    if (!r->frame_partial && !r->frame_open)
        r->frame_start = source_offset(r);
    r->out_frame_at = r->frame_start;
    r->frame_partial = false;
    for (;;) {
        if (r->in.pos == r->in.size && !r->zstd_pending && !source_more(r)) {
            if (r->done == WSL_READ_ERROR)
                return false;
            r->bytes_out += r->out_end;
            return r->out_end > 0; /* a frame cut short: its complete blocks */
        }
        if (r->out_end == r->out_cap) {
            if (r->out_cap >= FRAME_BUFFER_MAX) {
                r->frame_partial = true;
                r->bytes_out += r->out_end;
                return true;
            }
            size_t cap = r->out_cap * 2 < FRAME_BUFFER_MAX ? r->out_cap * 2 : FRAME_BUFFER_MAX;
            uint8_t *p = realloc(r->outbuf, cap);
            if (!p) {
                out_of_memory(r, "out of memory for a zstd frame of %zu bytes", cap);
                return false;
            }
            r->outbuf = p;
            r->out_cap = cap;
        }
        ZSTD_outBuffer out = {r->outbuf, r->out_cap, r->out_end};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &r->in);
        if (ZSTD_isError(ret)) {
            r->damaged = true;
            r->damage_at = r->frame_start;
            snprintf(r->damage_why, sizeof r->damage_why, "%s", ZSTD_getErrorName(ret));
            r->out_end = 0;
            return false;
        }
        r->out_end = out.pos;
        r->frame_open = ret != 0;
        r->zstd_pending = out.pos == out.size;
        if (ret == 0) { /* the frame ended and its checksum matched */
            r->frames_done++;
            r->zstd_pending = false;
            r->frame_start = source_offset(r);
            if (r->out_end) {
                r->bytes_out += r->out_end;
                return true;
            }
        }
    }
}

/* Copies up to n decompressed bytes to dst (discards them when dst is NULL);
 * returns how many: fewer than n at the end of input or on an error. */
static size_t stream_read(struct wsl_reader *r, void *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        if (r->out_pos == r->out_end && !stream_fill(r))
            break;
        size_t k = r->out_end - r->out_pos;
        if (k > n - got)
            k = n - got;
        if (dst)
            memcpy((uint8_t *)dst + got, r->outbuf + r->out_pos, k);
        r->out_pos += k;
        got += k;
    }
    r->offset += got;
    return got;
}

/* Reads a payload of `size` bytes into r->payload, growing the buffer only as
 * bytes arrive (a cut-short file claiming 64 MiB costs nothing). */
static size_t read_payload(struct wsl_reader *r, size_t size)
{
    size_t have = 0;
    while (have < size) {
        if (r->out_pos == r->out_end && !stream_fill(r))
            break;
        size_t k = r->out_end - r->out_pos;
        if (k > size - have)
            k = size - have;
        if (have + k > r->payload_cap) {
            size_t cap = r->payload_cap * 2;
            if (cap < have + k)
                cap = have + k;
            if (cap > size)
                cap = size;
            uint8_t *p = realloc(r->payload, cap);
            if (!p) {
                out_of_memory(r, "out of memory for a %zu-byte chunk", size);
                break;
            }
            r->payload = p;
            r->payload_cap = cap;
        }
        memcpy(r->payload + have, r->outbuf + r->out_pos, k);
        r->out_pos += k;
        have += k;
    }
    r->offset += have;
    return have;
}

/* The warning for data after the END chunk, or after the trace's last frame. */
static void warn_after_end(struct wsl_reader *r, const char *what, uint64_t at)
{
    add_warning(r, "%s after the END chunk, at byte %llu of the file, is not read: the trace ended before it", what,
                (unsigned long long)at);
}

/* The stream ended (or failed) where a chunk should start or continue. */
static enum wsl_read_result stream_ended(struct wsl_reader *r, bool mid_chunk)
{
    if (r->done != WSL_READ_ITEM)
        return r->done;
    const unsigned long long size = (unsigned long long)(r->file_size ? r->file_size : r->bytes_in);
    if (!r->seen_process) {
        if (r->damaged)
            return finish(r, WSL_READ_ERROR, "not a readable trace: its first zstd frame is damaged (%s)",
                          r->damage_why);
        return finish(r, WSL_READ_ERROR, "too short to be a trace (%llu bytes): it ends before its process info",
                      size);
    }
    if (r->seen_end && !mid_chunk && !(r->frame_open && r->frame_start == r->end_frame_at)) {
        if (r->damaged)
            warn_after_end(r, "data that is not a whole zstd frame", r->damage_at);
        else if (r->frame_open)
            warn_after_end(r, "an incomplete zstd frame", r->frame_start);
        return clean_end(r);
    }
    if (r->damaged)
        return finish(r, WSL_READ_TRUNCATED,
                      "trace damaged at byte %llu of %llu (zstd: %s): read its %u complete frames before it",
                      (unsigned long long)r->damage_at, size, r->damage_why, r->frames_done);
    if (mid_chunk)
        return finish(r, WSL_READ_TRUNCATED,
                      "trace cut short (inside a chunk at byte %llu), read up to its last complete block",
                      (unsigned long long)r->chunk_offset);
    if (r->frame_open)
        return finish(r, WSL_READ_TRUNCATED,
                      "trace cut short (inside a zstd frame), read up to its last complete block");
    return finish(r, WSL_READ_TRUNCATED, "trace cut short (no END chunk), read up to its last complete block");
}

/* ---- clock ---------------------------------------------------------------------- */

uint64_t wsl_clock_duration_ns(const struct wsl_clock_map *m, uint64_t ticks)
{
    if (m->ns_per_tick == 1.0)
        return ticks;
    double ns = (double)ticks * m->ns_per_tick;
    if (!(ns < 18446744073709551615.0))
        return UINT64_MAX;
    return (uint64_t)llround(ns);
}

uint64_t wsl_clock_to_ns(const struct wsl_clock_map *m, uint64_t ticks)
{
    if (m->ns_per_tick == 1.0)
        return m->ns0 + (ticks - m->ticks0);
    double delta = ticks >= m->ticks0 ? (double)(ticks - m->ticks0) : -(double)(m->ticks0 - ticks);
    double ns = (double)m->ns0 + delta * m->ns_per_tick;
    if (!(ns > 0))
        return 0;
    if (!(ns < 18446744073709551615.0))
        return UINT64_MAX;
    return (uint64_t)llround(ns);
}

/* TSC: a line through the first CLOCK sample and the latest one; with a single
 * sample, through the process start pair and that sample. */
static void clock_refit(struct wsl_reader *r)
{
    struct wsl_clock_map *m = &r->clock;
    if (m->kind != WSL_CLOCK_TSC)
        return;
    const struct wsl_clock_sample *a = NULL, *b = NULL;
    if (r->have_first_sample && r->have_latest_sample) {
        a = &r->first_sample;
        b = &r->latest_sample;
    } else if (r->have_first_sample && r->have_start_pair) {
        a = &r->start_pair;
        b = &r->first_sample;
    }
    if (a && b && b->ticks > a->ticks && b->mono_ns > a->mono_ns) {
        double rate = (double)(b->mono_ns - a->mono_ns) / (double)(b->ticks - a->ticks);
        if (isfinite(rate) && rate > 0) {
            m->ticks0 = a->ticks;
            m->ns0 = a->mono_ns;
            m->ns_per_tick = rate;
            m->rate_known = true;
            return;
        }
    }
    const struct wsl_clock_sample *anchor = r->have_first_sample ? &r->first_sample : &r->start_pair;
    m->ticks0 = anchor->ticks;
    m->ns0 = anchor->mono_ns;
    m->ns_per_tick = 1.0;
    m->rate_known = false;
}

static void clock_add_sample(struct wsl_reader *r, const struct wsl_clock_sample *s)
{
    if (!r->have_first_sample) {
        r->first_sample = *s;
        r->have_first_sample = true;
    } else {
        /* A sample not after the latest one (a corrupt or reordered chunk) is ignored. */
        const struct wsl_clock_sample *last = r->have_latest_sample ? &r->latest_sample : &r->first_sample;
        if (s->ticks > last->ticks && s->mono_ns > last->mono_ns) {
            r->latest_sample = *s;
            r->have_latest_sample = true;
        }
    }
    clock_refit(r);
}

/* ---- payload parsers ---------------------------------------------------------------- */

/* The NUL-terminated string at *p within end, advancing *p past it; NULL if unterminated. */
static const char *take_string(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nul = memchr(*p, 0, (size_t)(end - *p));
    if (!nul)
        return NULL;
    const char *s = (const char *)*p;
    *p = nul + 1;
    return s;
}

static enum wsl_read_result parse_process(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    if (r->seen_process)
        return corrupt(r, "corrupt chunk at byte %llu: a second PROCESS chunk", at);
    if (size < sizeof(struct wsl_process_info))
        return corrupt(r, "corrupt chunk at byte %llu: PROCESS payload of %u bytes is too small", at, size);
    struct wsl_process_info *pi = &item->process.info;
    memcpy(pi, r->payload, sizeof *pi);
    if (pi->strings_size > size - sizeof *pi)
        return corrupt(r, "corrupt chunk at byte %llu: PROCESS strings run past the chunk", at);
    if (pi->clock_kind != WSL_CLOCK_MONOTONIC_NS && pi->clock_kind != WSL_CLOCK_TSC)
        return corrupt(r, "corrupt chunk at byte %llu: unknown clock kind %u", at, pi->clock_kind);

    const uint8_t *p = r->payload + sizeof *pi, *end = p + pi->strings_size;
    const char *host = take_string(&p, end), *exe = host ? take_string(&p, end) : NULL,
               *rel = exe ? take_string(&p, end) : NULL;
    if (!rel)
        return corrupt(r, "corrupt chunk at byte %llu: PROCESS strings not NUL-terminated", at);
    if (p < end && end[-1] != 0)
        return corrupt(r, "corrupt chunk at byte %llu: PROCESS command line not NUL-terminated", at);
    size_t argc = 0;
    for (const uint8_t *q = p; q < end; q++)
        argc += *q == 0;
    if (argc + 1 > r->argv_cap) {
        const char **v = realloc(r->argv, (argc + 1) * sizeof *v);
        if (!v)
            return out_of_memory(r, "out of memory");
        r->argv = v;
        r->argv_cap = argc + 1;
    }
    for (size_t i = 0; i < argc; i++)
        r->argv[i] = take_string(&p, end);
    r->argv[argc] = NULL;

    item->process.host = host;
    item->process.exe = exe;
    item->process.kernel_release = rel;
    item->process.argc = (uint32_t)argc;
    item->process.argv = r->argv;
    r->seen_process = true;

    r->clock.kind = pi->clock_kind;
    r->clock.ticks0 = 0;
    r->clock.ns0 = 0;
    r->clock.ns_per_tick = 1.0;
    r->clock.rate_known = true;
    if (pi->clock_kind == WSL_CLOCK_TSC) {
        r->start_pair = (struct wsl_clock_sample){pi->start_ticks, pi->start_mono_ns, pi->start_real_ns};
        r->have_start_pair = true;
        clock_refit(r);
    }
    return WSL_READ_ITEM;
}

static enum wsl_read_result parse_api_table(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    uint32_t count;
    if (size < 4)
        return corrupt(r, "corrupt chunk at byte %llu: API_TABLE payload too small", at);
    memcpy(&count, r->payload, 4);
    if (count > WSL_MAX_API_IDS)
        return corrupt(r, "corrupt chunk at byte %llu: API table of %u entries (at most %u)", at, count,
                       WSL_MAX_API_IDS);
    /* The names must outlive the payload buffer: copy the part the entries use. */
    const uint8_t *p = r->payload + 4, *end = r->payload + size;
    for (uint32_t i = 0; i < count; i++) {
        if (end - p < 8)
            return corrupt(r, "corrupt chunk at byte %llu: API table cut short at entry %u", at, i);
        p += 8;
        const char *sym = take_string(&p, end), *base = sym ? take_string(&p, end) : NULL;
        if (!base)
            return corrupt(r, "corrupt chunk at byte %llu: API table names not NUL-terminated", at);
        if (strlen(sym) > API_NAME_MAX || strlen(base) > API_NAME_MAX || !*sym)
            return corrupt(r, "corrupt chunk at byte %llu: bad API name in entry %u", at, i);
    }
    size_t used = (size_t)(p - r->payload);
    char *arena = malloc(used ? used : 1);
    char **arenas = realloc(r->name_arenas, (r->name_arena_count + 1) * sizeof *arenas);
    struct wsl_api_entry *items = realloc(r->table_items, (count ? count : 1) * sizeof *items);
    if (arenas)
        r->name_arenas = arenas;
    if (items)
        r->table_items = items;
    if (!arena || !arenas || !items) {
        free(arena);
        return out_of_memory(r, "out of memory");
    }
    memcpy(arena, r->payload, used);
    r->name_arenas[r->name_arena_count++] = arena;

    const uint8_t *q = (const uint8_t *)arena + 4;
    for (uint32_t i = 0; i < count; i++) {
        struct wsl_api_entry e;
        memcpy(&e.id, q, 2);
        memcpy(&e.category, q + 2, 2);
        e.per_thread_stream = q[4];
        e.flags = q[5];
        q += 8;
        e.symbol = (const char *)q;
        q += strlen(e.symbol) + 1;
        e.base = (const char *)q;
        q += strlen(e.base) + 1;
        if (!*e.base)
            e.base = e.symbol;
        if (e.id >= WSL_MAX_API_IDS)
            return corrupt(r, "corrupt chunk at byte %llu: api id %u out of range", at, e.id);
        if (r->api_state[e.id] != API_ABSENT)
            return corrupt(r, "corrupt chunk at byte %llu: api id %u defined twice", at, e.id);
        r->api_state[e.id] = API_PRESENT;
        r->api[e.id] = e;
        r->table_items[i] = e;
    }
    item->api_table.count = count;
    item->api_table.entries = r->table_items;
    return WSL_READ_ITEM;
}

static enum wsl_read_result parse_driver(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    struct wsl_driver_info *di = &item->driver.info;
    if (size < sizeof *di)
        return corrupt(r, "corrupt chunk at byte %llu: DRIVER payload of %u bytes is too small", at, size);
    memcpy(di, r->payload, sizeof *di);
    di->libcuda_path[sizeof di->libcuda_path - 1] = 0;
    if (di->devices > (size - sizeof *di) / sizeof(struct wsl_gpu_info))
        return corrupt(r, "corrupt chunk at byte %llu: DRIVER lists %u GPUs, the chunk holds fewer", at,
                       di->devices);
    /* sizeof *di is a multiple of 16, so the GPU records are aligned in the buffer. */
    struct wsl_gpu_info *gpus = (struct wsl_gpu_info *)(void *)(r->payload + sizeof *di);
    for (uint32_t i = 0; i < di->devices; i++)
        gpus[i].name[sizeof gpus[i].name - 1] = 0;
    item->driver.gpus = gpus;
    return WSL_READ_ITEM;
}

/* A varint of the checked decoder's common lengths (1 and 2 bytes), else
 * wsl_get_varint itself: the same result and position for every input. */
static inline const uint8_t *get_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    if (__builtin_expect(end - p >= 2, 1)) {
        unsigned b0 = p[0];
        if (b0 < 0x80) {
            *out = b0;
            return p + 1;
        }
        unsigned b1 = p[1];
        if (b1 < 0x80) {
            *out = (uint64_t)(b0 & 0x7f) | (uint64_t)b1 << 7;
            return p + 2;
        }
    }
    return wsl_get_varint(p, end, out);
}

/* Decodes the next batch of the EVENTS chunk in progress. The loop is
 * wsl_event_decode_columns (trace_format.h) written out with the column
 * cursors in locals, so that they stay in registers: the same checks in the
 * same order, hence the same events and the same first error. */

/* After a chunk's last batch: bytes its columns still hold mean its count was
 * wrong. Returns true (the error recorded) when there are any. */
static bool bytes_left(struct wsl_reader *r, unsigned long long at, size_t left)
{
    if (left)
        corrupt(r, "corrupt chunk at byte %llu: event count mismatch (%zu bytes left after %u events)", at, left,
                r->ev_count);
    return left != 0;
}

/* Hands out n decoded events of the current chunk; true when they were its last. */
static bool hand_out_events(struct wsl_reader *r, struct wsl_item *item, struct wsl_event *out, uint32_t n)
{
    item->type = WSL_CHUNK_EVENTS;
    item->events.tid = r->ev_tid;
    item->events.chunk_start = r->ev_done == 0;
    item->events.dropped = r->ev_done == 0 ? r->ev_dropped : 0;
    item->events.count = n;
    item->events.events = out;
    r->ev_done += n;
    r->events_read += n;
    if (r->ev_done != r->ev_count)
        return false;
    r->in_events = false;
    return true;
}

static enum wsl_read_result next_event_batch(struct wsl_reader *r, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    uint32_t n = r->ev_count - r->ev_done;
    if (n > WSL_READER_BATCH)
        n = WSL_READER_BATCH;
    struct wsl_columns_in in = r->ev_in;
    const uint8_t *api_p = in.api, *mask_p = in.mask, *dt_p = in.dt, *dur_p = in.dur, *fld_p = in.fld;
    const uint8_t *const api_end = in.api_end, *const mask_end = in.mask_end, *const dt_end = in.dt_end,
                         *const dur_end = in.dur_end, *const fld_end = in.fld_end;
    struct wsl_codec_state *st = r->codec;
    struct wsl_event *out = r->batch;
    uint64_t prev_t = st->prev_t;
    const uint8_t *api_at = api_p;
    uint32_t i;
    for (i = 0; i < n; i++) {
        uint64_t id, dt, dur, v;
        api_at = api_p;
        const uint8_t *p;
        if (!(p = get_varint(api_p, api_end, &id)) || id >= WSL_MAX_API_IDS)
            goto bad;
        api_p = p;
        if (mask_p >= mask_end)
            goto bad;
        unsigned mask = *mask_p++;
        if (mask & 0xc0)
            goto bad;
        if (!(p = get_varint(dt_p, dt_end, &dt)))
            goto bad;
        dt_p = p;
        if (!(p = get_varint(dur_p, dur_end, &dur)))
            goto bad;
        dur_p = p;
        struct wsl_event *pv = &st->prev[id];
        if (mask) {
            if (mask & 1) {
                if (!(fld_p = get_varint(fld_p, fld_end, &v)))
                    goto bad;
                pv->result = (int32_t)wsl_unzigzag(v);
            }
            if (mask & 2) {
                if (!(fld_p = get_varint(fld_p, fld_end, &v)))
                    goto bad;
                pv->stream ^= v;
            }
            for (unsigned m = mask >> 2; m; m &= m - 1) {
                if (!(fld_p = get_varint(fld_p, fld_end, &v)))
                    goto bad;
                pv->a[__builtin_ctz(m)] ^= v;
            }
        }
        struct wsl_event *ev = &out[i];
        *ev = *pv;
        ev->api = (uint16_t)id;
        prev_t += (uint64_t)wsl_unzigzag(dt);
        ev->t_start = prev_t;
        ev->t_end = prev_t + dur;
        if (__builtin_expect(r->api_state[id] != API_TOUCHED, 0)) {
            if (r->api_state[id] == API_ABSENT)
                return corrupt(r, "corrupt chunk at byte %llu: api id %u not in the API table", at, (unsigned)id);
            r->api_state[id] = API_TOUCHED;
            r->touched[r->touched_count++] = (uint16_t)id;
        }
    }
    st->prev_t = prev_t;
    in.api = api_p;
    in.mask = mask_p;
    in.dt = dt_p;
    in.dur = dur_p;
    in.fld = fld_p;
    r->ev_in = in;
    if (hand_out_events(r, item, out, n)) {
        if (bytes_left(r, at, wsl_columns_left(&in)))
            return WSL_READ_ERROR;
    }
    return WSL_READ_ITEM;
bad: /* event i is malformed; api_at is where its api id starts */
    if (api_at == api_end)
        return corrupt(r, "corrupt chunk at byte %llu: event count mismatch (header says %u, "
                          "the encoded bytes hold %u)", at, r->ev_count, r->ev_done + i);
    return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (event %u)", at, r->ev_done + i);
}

/* The literal of the EVENTS_PACKED event being decoded into *ev (times left
 * to the caller), appended to the table while it has room. Out of the batch
 * loop so that the loop's registers stay with the common case. Returns 0, or
 * -1 for a bad encoding, or -2 when the reader already failed (an api id not
 * in the table). */
static __attribute__((noinline)) int packed_literal(struct wsl_reader *r, struct wsl_packed_in *in,
                                                    uint32_t *entries, struct wsl_event *ev)
{
    struct wsl_codec_state *st = r->codec;
    struct wsl_pack_state *ps = r->pack;
    uint64_t id, v;
    const uint8_t *p;
    if (ps->literals >= in->literals)
        return -1;
    ps->literals++;
    if (!(p = get_varint(in->lit, in->lit_end, &id)) || id >= WSL_MAX_API_IDS || p >= in->lit_end)
        return -1;
    unsigned mask = *p++;
    if (mask & 0xc0)
        return -1;
    struct wsl_event *pv = &st->prev[id];
    if (mask & 1) {
        if (!(p = get_varint(p, in->lit_end, &v)))
            return -1;
        pv->result = (int32_t)wsl_unzigzag(v);
    }
    if (mask & 2) {
        if (!(p = get_varint(p, in->lit_end, &v)))
            return -1;
        pv->stream ^= v;
    }
    for (unsigned m = mask >> 2; m; m &= m - 1) {
        if (!(p = get_varint(p, in->lit_end, &v)))
            return -1;
        pv->a[__builtin_ctz(m)] ^= v;
    }
    in->lit = p;
    if (r->api_state[id] != API_TOUCHED) {
        if (r->api_state[id] == API_ABSENT) {
            corrupt(r, "corrupt chunk at byte %llu: api id %u not in the API table",
                    (unsigned long long)r->chunk_offset, (unsigned)id);
            return -2;
        }
        r->api_state[id] = API_TOUCHED;
        r->touched[r->touched_count++] = (uint16_t)id;
    }
    *ev = *pv;
    ev->api = (uint16_t)id;
    ev->flags = 0;
    if (*entries < WSL_PACK_TABLE_MAX)
        ps->table[(*entries)++] = *ev;
    return 0;
}

/* Decodes the next batch of the EVENTS_PACKED chunk in progress: the checks of
 * wsl_event_decode_packed (trace_format.h) in the same order, with the column
 * cursors in locals. An event that repeats a table entry is a 64-byte copy and
 * its two times; literals take packed_literal. */
static enum wsl_read_result next_packed_batch(struct wsl_reader *r, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    uint32_t n = r->ev_count - r->ev_done;
    if (n > WSL_READER_BATCH)
        n = WSL_READER_BATCH;
    struct wsl_packed_in in = r->ev_pin;
    const uint8_t *op_p = in.op, *dt_p = in.dt, *dur_p = in.dur;
    const uint8_t *const dt_end = in.dt_end, *const dur_end = in.dur_end;
    struct wsl_codec_state *st = r->codec;
    const struct wsl_event *const table = r->pack->table;
    struct wsl_event *out = r->batch;
    uint64_t prev_t = st->prev_t;
    uint32_t entries = r->pack->entries, i;
    /* n <= the events left, and the op column holds one byte per event: no check per op. */
    for (i = 0; i < n; i++) {
        uint64_t dt, dur;
        const uint8_t *p;
        unsigned op = *op_p++;
        if (!(p = get_varint(dt_p, dt_end, &dt)))
            goto bad;
        dt_p = p;
        if (!(p = get_varint(dur_p, dur_end, &dur)))
            goto bad;
        dur_p = p;
        struct wsl_event *ev = &out[i];
        if (__builtin_expect(op - 1 < entries, 1)) {
            *ev = table[op - 1];
        } else {
            if (op != 0)
                goto bad; /* beyond the table */
            int rc = packed_literal(r, &in, &entries, ev);
            if (rc == -2)
                return r->done;
            if (rc)
                goto bad;
        }
        prev_t += (uint64_t)wsl_unzigzag(dt);
        ev->t_start = prev_t;
        ev->t_end = prev_t + dur;
    }
    st->prev_t = prev_t;
    r->pack->entries = entries;
    in.op = op_p;
    in.dt = dt_p;
    in.dur = dur_p;
    r->ev_pin = in;
    if (hand_out_events(r, item, out, n)) {
        if (bytes_left(r, at, wsl_packed_left(&in)))
            return WSL_READ_ERROR;
        if (r->pack->literals != in.literals)
            return corrupt(r, "corrupt chunk at byte %llu: event count mismatch (%u literals, the directory says %u)",
                           at, r->pack->literals, in.literals);
    }
    return WSL_READ_ITEM;
bad:
    return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (event %u)", at, r->ev_done + i);
}

static enum wsl_read_result parse_events(struct wsl_reader *r, uint32_t type, uint32_t size,
                                        struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    struct wsl_events_header eh;
    if (size < sizeof eh)
        return corrupt(r, "corrupt chunk at byte %llu: EVENTS payload of %u bytes is too small", at, size);
    memcpy(&eh, r->payload, sizeof eh);
    if (eh.encoded_size > size - sizeof eh)
        return corrupt(r, "corrupt chunk at byte %llu: encoded events run past the chunk", at);
    /* Each event takes at least a byte of the api, dt and dur columns: a count
     * beyond any of them is refused before anything loops over it. */
    const bool packed = type == WSL_CHUNK_EVENTS_PACKED;
    enum wsl_columns_status cs = packed ? wsl_packed_open(&r->ev_pin, r->payload + sizeof eh, eh.encoded_size, eh.count)
                                        : wsl_columns_open(&r->ev_in, r->payload + sizeof eh, eh.encoded_size, eh.count);
    switch (cs) {
    case WSL_COLUMNS_OK:
        break;
    case WSL_COLUMNS_NO_DIRECTORY:
        return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (%u encoded bytes cannot hold the "
                          "%u-byte column directory)", at, eh.encoded_size, WSL_EVENTS_DIRECTORY_SIZE);
    case WSL_COLUMNS_COUNT_TOO_BIG: {
        uint32_t dir[3];
        memcpy(dir, r->payload + sizeof eh, sizeof dir);
        if (packed)
            return corrupt(r, "corrupt chunk at byte %llu: event count mismatch (%u events with %u literals cannot "
                              "fit in columns of %u time and %u duration bytes and the rest)", at, eh.count, dir[2],
                           dir[0], dir[1]);
        return corrupt(r, "corrupt chunk at byte %llu: event count mismatch (%u events cannot fit in columns of "
                          "%u api, %u time and %u duration bytes)", at, eh.count, dir[0], dir[1], dir[2]);
    }
    case WSL_COLUMNS_OVERRUN:
        return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (the event columns run past the "
                          "%u encoded bytes)", at, eh.encoded_size);
    }
    /* Reset only the codec slots the previous chunk used: a full reset costs
     * 64 KiB per chunk, which tiny hostile chunks would turn into a hang. */
    for (uint32_t i = 0; i < r->touched_count; i++) {
        uint16_t id = r->touched[i];
        memset(&r->codec->prev[id], 0, sizeof r->codec->prev[id]);
        r->api_state[id] = API_PRESENT;
    }
    r->touched_count = 0;
    r->codec->prev_t = eh.base_ticks;

    if (eh.seq && r->version_minor >= 7) { /* numbered chunks: each one more than the last */
        uint32_t want = r->seq_last + 1;
        if (eh.seq != want && r->seq_breaks++ == 0) {
            r->seq_first_break_at = r->chunk_offset;
            r->seq_first_got = eh.seq;
            r->seq_first_want = want;
        }
        r->seq_last = eh.seq;
        if (eh.seq < SEQ_TRACKED_MAX) {
            size_t byte = eh.seq / 8;
            if (byte >= r->seq_seen_bytes) {
                size_t n = r->seq_seen_bytes ? r->seq_seen_bytes : 64;
                while (n <= byte)
                    n *= 2;
                uint8_t *p = realloc(r->seq_seen, n);
                if (!p)
                    return out_of_memory(r, "out of memory");
                memset(p + r->seq_seen_bytes, 0, n - r->seq_seen_bytes);
                r->seq_seen = p;
                r->seq_seen_bytes = n;
            }
            uint8_t bit = (uint8_t)(1u << (eh.seq % 8));
            if (r->seq_seen[byte] & bit) { /* a repeated frame: its events were handed out already */
                r->seq_repeats++;
                r->chunk_skipped = true;
                return WSL_READ_ITEM;
            }
            r->seq_seen[byte] |= bit;
        }
    }
    r->in_events = true;
    r->ev_packed = packed;
    if (packed)
        wsl_pack_reset(r->pack, 0);
    r->ev_tid = eh.tid;
    r->ev_count = eh.count;
    r->ev_done = 0;
    r->ev_dropped = eh.dropped;
    return packed ? next_packed_batch(r, item) : next_event_batch(r, item);
}

static enum wsl_read_result parse_mounts(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    char why[WSL_MOUNTS_ERRLEN];
    struct wsl_mount_table *t = wsl_mounts_parse((const char *)r->payload, size, why, sizeof why);
    if (!t)
        return corrupt(r, "corrupt chunk at byte %llu: MOUNTS is not a mount table (%s)",
                       (unsigned long long)r->chunk_offset, why);
    wsl_mounts_free(r->mounts);
    r->mounts = t;
    item->mounts.table = t;
    return WSL_READ_ITEM;
}

/* Checks every entry (whole, id not 0, 1..WSL_PATH_MAX_LENGTH bytes, no NUL)
 * before handing the chunk out. */
static enum wsl_read_result parse_paths(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    uint32_t count = 0;
    size_t pos = 0;
    while (pos < size) {
        struct wsl_path_entry_header h;
        if (size - pos < sizeof h)
            return corrupt(r, "corrupt chunk at byte %llu: PATHS entry %u is cut short", at, count);
        memcpy(&h, r->payload + pos, sizeof h);
        if (h.id == 0)
            return corrupt(r, "corrupt chunk at byte %llu: PATHS entry %u has path id 0", at, count);
        if (h.length == 0 || h.length > WSL_PATH_MAX_LENGTH)
            return corrupt(r, "corrupt chunk at byte %llu: PATHS entry %u (id %u) has length %u (1 to %u allowed)",
                           at, count, h.id, h.length, WSL_PATH_MAX_LENGTH);
        if (h.length > size - pos - sizeof h)
            return corrupt(r, "corrupt chunk at byte %llu: PATHS entry %u (id %u) runs past the chunk", at, count,
                           h.id);
        if (memchr(r->payload + pos + sizeof h, 0, h.length))
            return corrupt(r, "corrupt chunk at byte %llu: PATHS entry %u (id %u) holds a NUL byte", at, count,
                           h.id);
        pos += sizeof h + h.length;
        count++;
    }
    item->paths.count = count;
    item->paths.data = r->payload;
    item->paths.size = size;
    return WSL_READ_ITEM;
}

/* ---- public ---------------------------------------------------------------------------- */

/* RANK: "KEY=VALUE" strings, each NUL-terminated, with a non-empty key. */
static enum wsl_read_result parse_rank(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    if (size > WSL_RANK_MAX_PAYLOAD)
        return corrupt(r, "corrupt chunk at byte %llu: RANK payload of %u bytes exceeds %u", at, size,
                       WSL_RANK_MAX_PAYLOAD);
    const char *p = (const char *)r->payload, *end = p + size;
    uint32_t count = 0;
    while (p < end) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        if (!nul)
            return corrupt(r, "corrupt chunk at byte %llu: RANK entry not NUL-terminated", at);
        const char *eq = memchr(p, '=', (size_t)(nul - p));
        if (!eq || eq == p)
            return corrupt(r, "corrupt chunk at byte %llu: RANK entry is not KEY=VALUE", at);
        count++;
        p = nul + 1;
    }
    item->rank.count = count;
    item->rank.data = (const char *)r->payload;
    item->rank.size = size;
    return WSL_READ_ITEM;
}

/* EMULATION (1.8): the fixed part, then the SPEC text. A later minor version
 * may have more families: those this reader knows are read. */
static enum wsl_read_result parse_emulation(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    struct wsl_emulation_info ei;
    if (size < sizeof ei)
        return corrupt(r, "corrupt chunk at byte %llu: EMULATION payload too small", at);
    memcpy(&ei, r->payload, sizeof ei);
    if (ei.spec_size == 0 || ei.spec_size > size - sizeof ei ||
        ((const char *)r->payload)[sizeof ei + ei.spec_size - 1] != 0)
        return corrupt(r, "corrupt chunk at byte %llu: EMULATION SPEC not NUL-terminated", at);
    for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
        item->emulation.ns[f] = f < ei.families && f < 8 ? ei.ns[f] : 0;
    int fs = ei.families >= 8;
    item->emulation.fs_meta_ns = fs ? ei.ns[WSL_EMU_INFO_FS_META] : 0;
    item->emulation.fs_read_bps = fs ? ei.ns[WSL_EMU_INFO_FS_READ] : 0;
    item->emulation.fs_write_bps = fs ? ei.ns[WSL_EMU_INFO_FS_WRITE] : 0;
    item->emulation.spec = (const char *)r->payload + sizeof ei;
    return WSL_READ_ITEM;
}

enum wsl_read_result wsl_reader_next(struct wsl_reader *r, struct wsl_item *item)
{
    if (r->done != WSL_READ_ITEM)
        return r->done;
    if (r->in_events)
        return r->ev_packed ? next_packed_batch(r, item) : next_event_batch(r, item);
    for (;;) {
        struct wsl_chunk_header ch;
        r->chunk_offset = r->offset;
        size_t got = stream_read(r, &ch, sizeof ch);
        const unsigned long long at = (unsigned long long)r->chunk_offset;
        if (got == sizeof ch && memcmp(&ch, WSL_TRACE_MAGIC, sizeof ch) == 0) {
            /* another trace's file header where a chunk should start: `cat a b` */
            if (r->seen_end) {
                add_warning(r, "a second trace follows its END (at byte %llu of the file): traces were "
                               "concatenated (cat a b?); only the first is read, give each trace as its own file",
                            (unsigned long long)r->out_frame_at);
                return clean_end(r);
            }
            return finish(r, WSL_READ_TRUNCATED, "trace cut short (no END chunk) and a second trace follows (at "
                                                 "byte %llu of the file): traces were concatenated (cat a b?); only "
                                                 "the first is read, give each trace as its own file",
                          (unsigned long long)r->out_frame_at);
        }
        if (r->seen_end && got > 0) { /* chunks after END (END is the last chunk): not counted twice */
            warn_after_end(r, "data", r->out_frame_at);
            return clean_end(r);
        }
        if (got < sizeof ch)
            return stream_ended(r, got > 0);
        if (ch.size > WSL_CHUNK_MAX_PAYLOAD)
            return corrupt(r, "corrupt chunk at byte %llu: size %u exceeds the %u-byte limit", at, ch.size,
                           WSL_CHUNK_MAX_PAYLOAD);
        if (!r->seen_process && ch.type != WSL_CHUNK_PROCESS)
            return corrupt(r, "corrupt chunk at byte %llu: the first chunk is %s (type %u), not PROCESS", at,
                           chunk_type_name(ch.type), ch.type);
        if (ch.type < WSL_CHUNK_PROCESS || (ch.type > WSL_CHUNK_RANK && ch.type != WSL_CHUNK_EVENTS_PACKED &&
                                              ch.type != WSL_CHUNK_EMULATION)) {
            if (stream_read(r, NULL, ch.size) < ch.size)   /* a later minor version's chunk */
                return stream_ended(r, true);
            continue;
        }
        if (read_payload(r, ch.size) < ch.size)
            return stream_ended(r, true);

        memset(item, 0, sizeof *item);
        item->type = (enum wsl_chunk_type)ch.type;
        /* Fixed-size payloads may be longer in a later minor version: the rest is skipped. */
        switch (ch.type) {
        case WSL_CHUNK_PROCESS:
            return parse_process(r, ch.size, item);
        case WSL_CHUNK_API_TABLE:
            return parse_api_table(r, ch.size, item);
        case WSL_CHUNK_CLOCK:
            if (ch.size < sizeof item->clock)
                return corrupt(r, "corrupt chunk at byte %llu: CLOCK payload too small", at);
            memcpy(&item->clock, r->payload, sizeof item->clock);
            clock_add_sample(r, &item->clock);
            return WSL_READ_ITEM;
        case WSL_CHUNK_EVENTS:
        case WSL_CHUNK_EVENTS_PACKED:
        {
            enum wsl_read_result res = parse_events(r, ch.type, ch.size, item);
            if (r->chunk_skipped) {
                r->chunk_skipped = false;
                continue;
            }
            return res;
        }
        case WSL_CHUNK_DRIVER:
            return parse_driver(r, ch.size, item);
        case WSL_CHUNK_END:
            if (ch.size < sizeof item->end)
                return corrupt(r, "corrupt chunk at byte %llu: END payload too small", at);
            memcpy(&item->end, r->payload, sizeof item->end);
            r->seen_end = true;
            r->end_frame_at = r->out_frame_at;
            r->end_events_written = item->end.events_written;
            if (item->end.events_written != r->events_read)
                add_warning(r, "its END says %llu events were written, %llu were read: frames of the trace were "
                               "lost or repeated", (unsigned long long)item->end.events_written,
                            (unsigned long long)r->events_read);
            return WSL_READ_ITEM;
        case WSL_CHUNK_STRING:
            if (ch.size < 4)
                return corrupt(r, "corrupt chunk at byte %llu: STRING payload too small", at);
            memcpy(&item->string.id, r->payload, 4);
            item->string.size = ch.size - 4;
            item->string.bytes = (const char *)r->payload + 4;
            return WSL_READ_ITEM;
        case WSL_CHUNK_MOUNTS:
            return parse_mounts(r, ch.size, item);
        case WSL_CHUNK_PATHS:
            return parse_paths(r, ch.size, item);
        case WSL_CHUNK_GPU_MEMORY:
            if (ch.size < sizeof item->gpu_memory)
                return corrupt(r, "corrupt chunk at byte %llu: GPU_MEMORY payload too small", at);
            memcpy(&item->gpu_memory, r->payload, sizeof item->gpu_memory);
            return WSL_READ_ITEM;
        case WSL_CHUNK_RANK:
            return parse_rank(r, ch.size, item);
        case WSL_CHUNK_EMULATION:
            return parse_emulation(r, ch.size, item);
        }
    }
}

static bool is_zstd_magic(const uint8_t *b, size_t n)
{
    static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    if (n < 4)
        return memcmp(b, zstd_magic, n) == 0; /* a cut-short prefix of it */
    uint32_t m = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return m == 0xfd2fb528u || (m & 0xfffffff0u) == 0x184d2a50u; /* a frame or a skippable frame */
}

/* Checks the start of the compressed input and the file header; false with r->message set. */
static bool read_file_header(struct wsl_reader *r)
{
    if (r->in.size == 0) {
        snprintf(r->message, sizeof r->message, "empty file (not a wslshim trace)");
        return false;
    }
    const uint8_t *head = (const uint8_t *)r->in.src;
    if (!is_zstd_magic(head, r->in.size)) {
        if (r->in.size >= 8 && memcmp(head, WSL_TRACE_MAGIC, 8) == 0)
            snprintf(r->message, sizeof r->message,
                     "uncompressed wslshim data; traces are zstd-compressed (.trace.zst)");
        else
            snprintf(r->message, sizeof r->message, "not a zstd file (not a wslshim trace)");
        return false;
    }
    struct wsl_file_header h;
    size_t got = stream_read(r, &h, sizeof h);
    if (r->done == WSL_READ_ERROR)
        return false;
    size_t cmp = got < sizeof h.magic ? got : sizeof h.magic;
    if (memcmp(&h, WSL_TRACE_MAGIC, cmp) != 0 || (got == 0 && !r->frame_open)) {
        snprintf(r->message, sizeof r->message, "not a wslshim trace (zstd data without a wslshim header)");
        return false;
    }
    if (got < sizeof h) {
        if (r->damaged)
            snprintf(r->message, sizeof r->message, "not a readable trace: its first zstd frame is damaged (%s)",
                     r->damage_why);
        else
            snprintf(r->message, sizeof r->message, "too short to be a trace (%llu bytes): it ends inside its file header",
                     (unsigned long long)(r->file_size ? r->file_size : r->bytes_in));
        return false;
    }
    if (h.byte_order == __builtin_bswap32(WSL_TRACE_BYTE_ORDER)) {
        snprintf(r->message, sizeof r->message, "trace written in the other byte order (not readable on this host)");
        return false;
    }
    if (h.byte_order != WSL_TRACE_BYTE_ORDER) {
        snprintf(r->message, sizeof r->message, "corrupt file header (byte order mark 0x%08x)", h.byte_order);
        return false;
    }
    if (h.version_major != WSL_READER_MAJOR) {
        snprintf(r->message, sizeof r->message, "%s format major version %u (this reader reads %u)",
                 h.version_major > WSL_READER_MAJOR ? "newer" : "unsupported", h.version_major,
                 WSL_READER_MAJOR);
        return false;
    }
    if (h.version_minor < WSL_TRACE_VERSION_MINOR_FIRST) {
        snprintf(r->message, sizeof r->message,
                 "unsupported format version %u.%u (a development build's; this reader reads %u.%u and later)",
                 h.version_major, h.version_minor, WSL_READER_MAJOR, WSL_TRACE_VERSION_MINOR_FIRST);
        return false;
    }
    if (h.header_size < sizeof h || h.header_size > HEADER_SIZE_MAX || h.record_size != sizeof(struct wsl_event)) {
        snprintf(r->message, sizeof r->message, "corrupt file header (header_size %u, record_size %u)",
                 h.header_size, h.record_size);
        return false;
    }
    r->version_minor = h.version_minor;
    size_t extra = h.header_size - sizeof h; /* a later minor version's header fields */
    if (stream_read(r, NULL, extra) < extra)
        stream_ended(r, true);
    return true;
}

static struct wsl_reader *reader_new(void)
{
    struct wsl_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    r->done = WSL_READ_ITEM;
    r->frame_open = true;
    r->clock.ns_per_tick = 1.0;
    r->clock.rate_known = true;
    r->dctx = ZSTD_createDCtx();
    r->outbuf = malloc(OUTPUT_BUFFER_SIZE);
    r->out_cap = OUTPUT_BUFFER_SIZE;
    r->payload = malloc(PAYLOAD_INITIAL_SIZE);
    r->payload_cap = PAYLOAD_INITIAL_SIZE;
    r->batch = malloc(WSL_READER_BATCH * sizeof *r->batch);
    r->codec = calloc(1, sizeof *r->codec);
    r->pack = calloc(1, sizeof *r->pack);
    if (!r->dctx || !r->outbuf || !r->payload || !r->batch || !r->codec || !r->pack) {
        wsl_reader_close(r);
        return NULL;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX);
    return r;
}

static struct wsl_reader *open_common(struct wsl_reader *r, char *err, size_t errlen)
{
    if (!read_file_header(r)) {
        snprintf(err, errlen, "%s", r->message);
        wsl_reader_close(r);
        return NULL;
    }
    return r;
}

struct wsl_reader *wsl_reader_open(const char *path, char *err, size_t errlen)
{
    struct wsl_reader *r = reader_new();
    if (r)
        r->inbuf = malloc(INPUT_BUFFER_SIZE);
    if (!r || !r->inbuf) {
        snprintf(err, errlen, "out of memory");
        wsl_reader_close(r);
        return NULL;
    }
    /* O_NONBLOCK: a FIFO without a writer must not block the open; anything but
     * a regular file is refused (a FIFO or device would block or never end, and
     * the report reads each trace more than once). */
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (r->fd < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        wsl_reader_close(r);
        return NULL;
    }
    struct stat st;
    int stat_errno = fstat(r->fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (stat_errno) {
        snprintf(err, errlen, "cannot read: %s", strerror(stat_errno));
        wsl_reader_close(r);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        const char *what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                           : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket"
                           : "not a regular file";
        snprintf(err, errlen, "not a trace file: it is %s (a trace is a regular file; copy it to one first)", what);
        wsl_reader_close(r);
        return NULL;
    }
    r->file_size = (uint64_t)st.st_size;
    fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) & ~O_NONBLOCK);
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* Gather the first bytes (a pipe may give fewer) to check the zstd magic. */
    size_t have = 0;
    while (have < 8) {
        ssize_t got = read(r->fd, r->inbuf + have, INPUT_BUFFER_SIZE - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(err, errlen, "read error: %s", strerror(errno));
            wsl_reader_close(r);
            return NULL;
        }
        if (got == 0)
            break;
        have += (size_t)got;
    }
    r->in.src = r->inbuf;
    r->in.size = have;
    r->in.pos = 0;
    r->bytes_in = have;
    return open_common(r, err, errlen);
}

struct wsl_reader *wsl_reader_open_mem(const void *data, size_t size, char *err, size_t errlen)
{
    struct wsl_reader *r = reader_new();
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->in.src = size ? data : "";
    r->in.size = size;
    r->in.pos = 0;
    r->bytes_in = size;
    r->eof = true;
    return open_common(r, err, errlen);
}

const char *wsl_reader_warning(const struct wsl_reader *r, size_t i)
{
    return i < r->warning_count ? r->warnings[i] : NULL;
}

int wsl_reader_probe(const char *path, char *err, size_t errlen)
{
    struct wsl_reader *r = wsl_reader_open(path, err, errlen);
    if (!r)
        return -1;
    struct wsl_item item;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &item)) == WSL_READ_ITEM)
        if (item.type == WSL_CHUNK_PROCESS)
            break;
    int rc = res == WSL_READ_ITEM ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "%s", res == WSL_READ_END ? "a trace without its process info" : r->message);
    wsl_reader_close(r);
    return rc;
}

const char *wsl_reader_message(const struct wsl_reader *r)
{
    return r->done == WSL_READ_ITEM || r->done == WSL_READ_END ? "" : r->message;
}

const struct wsl_api_entry *wsl_reader_api(const struct wsl_reader *r, uint16_t id)
{
    return id < WSL_MAX_API_IDS && r->api_state[id] != API_ABSENT ? &r->api[id] : NULL;
}

const struct wsl_mount_table *wsl_reader_mounts(const struct wsl_reader *r) { return r->mounts; }
const struct wsl_clock_map *wsl_reader_clock(const struct wsl_reader *r) { return &r->clock; }
uint64_t wsl_reader_bytes_in(const struct wsl_reader *r) { return r->bytes_in; }
uint64_t wsl_reader_bytes_out(const struct wsl_reader *r) { return r->bytes_out; }

void wsl_reader_close(struct wsl_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->inbuf);
    free(r->outbuf);
    free(r->payload);
    free(r->batch);
    free(r->codec);
    free(r->pack);
    for (size_t i = 0; i < r->name_arena_count; i++)
        free(r->name_arenas[i]);
    free(r->name_arenas);
    free(r->table_items);
    free(r->argv);
    free(r->seq_seen);
    wsl_mounts_free(r->mounts);
    free(r);
}
