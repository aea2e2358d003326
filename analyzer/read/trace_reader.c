/*
 * Streaming trace reader. Layers, bottom up:
 *   source      bytes of the compressed file (an fd, or memory)
 *   stream      zstd-decompressed bytes, through one fixed output buffer
 *   chunks      header + payload, the payload read whole into one buffer
 *   items       parsed payloads; EVENTS decoded in batches
 * Every length read from the file is checked before it is used, so hostile
 * input ends in WSL_READ_ERROR or WSL_READ_TRUNCATED, never worse.
 * Here, the source, the stream, the clock fit, chunks and the reader API; the
 * payload parsers (items) are trace_reader_chunks.c (trace_reader_internal.h
 * between them).
 */
#include "trace_reader.h"
#include "util.h"

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
#include "trace_reader_internal.h"

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
    case WSL_CHUNK_EVENTS_GAPS: return "EVENTS_GAPS";
    case WSL_CHUNK_EVENTS_BITS: return "EVENTS_BITS";
    case WSL_CHUNK_EMULATION: return "EMULATION";
    case WSL_CHUNK_PATHS_DROPPED: return "PATHS_DROPPED";
    default: return "unknown";
    }
}

/* Once the read stops: numbered EVENTS chunks (1.7) out of sequence. */
static void seq_warning(struct wsl_reader *r)
{
    if (r->seq_breaks) {
        char skipped[64] = "";
        if (r->seq_repeats)
            snprintf(skipped, sizeof skipped, "; %u repeated chunk%s skipped", r->seq_repeats,
                     r->seq_repeats == 1 ? "" : "s");
        reader_add_warning(r, "%u EVENTS chunk%s out of sequence (the first at decompressed byte %llu: number %u where %u "
                       "was due): frames of the trace were lost, repeated or reordered%s",
                    r->seq_breaks, r->seq_breaks == 1 ? "" : "s", (unsigned long long)r->seq_first_break_at,
                    r->seq_first_got, r->seq_first_want, skipped);
    }
    r->seq_breaks = 0;
}

__attribute__((format(printf, 3, 4)))
enum wsl_read_result reader_finish(struct wsl_reader *r, enum wsl_read_result res, const char *fmt, ...)
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

void reader_add_warning(struct wsl_reader *r, const char *fmt, ...)
{
    if (r->warning_count == READER_WARNINGS_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->warning_count++], WSL_READER_ERRLEN, fmt, ap);
    va_end(ap);
}

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
        reader_finish(r, WSL_READ_ERROR, "read error: %s", strerror(errno));
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

/* The output buffer, about to grow to FRAME_BUFFER_HUGE or more (a large frame), moved to a mapping
 * of FRAME_BUFFER_MAX bytes at a 2 MiB boundary, asked for as transparent huge pages (madvise): a
 * frame's bytes are written once each into pages never touched before, and a huge page takes one
 * fault and one clear where 512 small ones take 512 (32 MiB: about 5 ms against 16 on this VM).
 * The pages past what frames use are never touched. False where the mapping fails (the buffer
 * grows as before); nothing read depends on which. */
static bool frame_buffer_map(struct wsl_reader *r)
{
    uint8_t *p = wsl_huge_alloc(FRAME_BUFFER_MAX);
    if (!p)
        return false;
    memcpy(p, r->outbuf, r->out_end);
    free(r->outbuf);
    r->outbuf = p;
    r->out_cap = FRAME_BUFFER_MAX;
    r->out_mapped = true;
    return true;
}

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
            if (cap >= FRAME_BUFFER_HUGE && !r->out_mapped && frame_buffer_map(r))
                continue;
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

/* Reads a payload of `size` bytes into r->payload: where it lies in the frame
 * already decompressed, else copied into r->payload_buf, growing the buffer
 * only as bytes arrive (a cut-short file claiming 64 MiB costs nothing). */
static size_t read_payload(struct wsl_reader *r, size_t size)
{
    if (r->out_end - r->out_pos >= size) { /* the usual case: the whole chunk in this frame */
        r->payload = r->outbuf + r->out_pos;
        r->out_pos += size;
        r->offset += size;
        return size;
    }
    r->payload = r->payload_buf;
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
            uint8_t *p = realloc(r->payload_buf, cap);
            if (!p) {
                out_of_memory(r, "out of memory for a %zu-byte chunk", size);
                break;
            }
            r->payload = r->payload_buf = p;
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
    reader_add_warning(r, "%s after the END chunk, at byte %llu of the file, is not read: the trace ended before it", what,
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
            return reader_finish(r, WSL_READ_ERROR, "not a readable trace: its first zstd frame is damaged (%s)",
                          r->damage_why);
        return reader_finish(r, WSL_READ_ERROR, "too short to be a trace (%llu bytes): it ends before its process info",
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
        return reader_finish(r, WSL_READ_TRUNCATED,
                      "trace damaged at byte %llu of %llu (zstd: %s): read its %u complete frames before it",
                      (unsigned long long)r->damage_at, size, r->damage_why, r->frames_done);
    if (mid_chunk)
        return reader_finish(r, WSL_READ_TRUNCATED,
                      "trace cut short (inside a chunk at byte %llu), read up to its last complete block",
                      (unsigned long long)r->chunk_offset);
    if (r->frame_open)
        return reader_finish(r, WSL_READ_TRUNCATED,
                      "trace cut short (inside a zstd frame), read up to its last complete block");
    return reader_finish(r, WSL_READ_TRUNCATED, "trace cut short (no END chunk), read up to its last complete block");
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
void reader_clock_refit(struct wsl_reader *r)
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
    reader_clock_refit(r);
}

/* ---- public ---------------------------------------------------------------------------- */

/* The next chunk of the file into ch and r->payload: WSL_READ_ITEM, else how the read ended. */
static enum wsl_read_result file_chunk(struct wsl_reader *r, struct wsl_chunk_header *chp)
{
    for (;;) {
        struct wsl_chunk_header ch;
        r->chunk_offset = r->offset;
        size_t got = stream_read(r, &ch, sizeof ch);
        r->chunk_frame = r->out_frame_at;
        const unsigned long long at = (unsigned long long)r->chunk_offset;
        if (got == sizeof ch && memcmp(&ch, WSL_TRACE_MAGIC, sizeof ch) == 0) {
            /* another trace's file header where a chunk should start: `cat a b` */
            if (r->seen_end) {
                reader_add_warning(r, "a second trace follows its END (at byte %llu of the file): traces were "
                               "concatenated (cat a b?); only the first is read, give each trace as its own file",
                            (unsigned long long)r->out_frame_at);
                return clean_end(r);
            }
            return reader_finish(r, WSL_READ_TRUNCATED, "trace cut short (no END chunk) and a second trace follows (at "
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
                                              ch.type != WSL_CHUNK_EMULATION && ch.type != WSL_CHUNK_EVENTS_GAPS &&
                                              ch.type != WSL_CHUNK_EVENTS_BITS && ch.type != WSL_CHUNK_PATHS_DROPPED)) {
            if (stream_read(r, NULL, ch.size) < ch.size)   /* a later minor version's chunk */
                return stream_ended(r, true);
            continue;
        }
        if (read_payload(r, ch.size) < ch.size)
            return stream_ended(r, true);
        *chp = ch;
        return WSL_READ_ITEM;
    }
}

/* Parses the chunk in r->payload into *item. */
static enum wsl_read_result parse_chunk(struct wsl_reader *r, const struct wsl_chunk_header *chp,
                                        struct wsl_item *item)
{
    const struct wsl_chunk_header ch = *chp;
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    memset(item, 0, sizeof *item);
    item->type = (enum wsl_chunk_type)ch.type;
    /* Fixed-size payloads may be longer in a later minor version: the rest is skipped. */
    switch (ch.type) {
    case WSL_CHUNK_PROCESS:
        return reader_parse_process(r, ch.size, item);
    case WSL_CHUNK_API_TABLE:
        return reader_parse_api_table(r, ch.size, item);
    case WSL_CHUNK_CLOCK:
        if (ch.size < sizeof item->clock)
            return corrupt(r, "corrupt chunk at byte %llu: CLOCK payload too small", at);
        memcpy(&item->clock, r->payload, sizeof item->clock);
        clock_add_sample(r, &item->clock);
        return WSL_READ_ITEM;
    case WSL_CHUNK_EVENTS:
    case WSL_CHUNK_EVENTS_PACKED:
    case WSL_CHUNK_EVENTS_GAPS:
    case WSL_CHUNK_EVENTS_BITS:
        return reader_parse_events(r, ch.type, ch.size, item);
    case WSL_CHUNK_DRIVER:
        return reader_parse_driver(r, ch.size, item);
    case WSL_CHUNK_END:
        if (ch.size < sizeof item->end)
            return corrupt(r, "corrupt chunk at byte %llu: END payload too small", at);
        memcpy(&item->end, r->payload, sizeof item->end);
        r->seen_end = true;
        r->end_frame_at = r->out_frame_at;
        r->end_events_written = item->end.events_written;
        if (item->end.events_written != r->events_read)
            reader_add_warning(r, "its END says %llu events were written, %llu were read: frames of the trace were "
                           "lost or repeated", (unsigned long long)item->end.events_written,
                        (unsigned long long)r->events_read);
        return WSL_READ_ITEM;
    case WSL_CHUNK_PATHS_DROPPED:
        if (ch.size < sizeof item->paths_dropped)
            return corrupt(r, "corrupt chunk at byte %llu: PATHS_DROPPED payload too small (%u bytes)", at, ch.size);
        memcpy(&item->paths_dropped, r->payload, sizeof item->paths_dropped);
        return WSL_READ_ITEM;
    case WSL_CHUNK_STRING:
        if (ch.size < 4)
            return corrupt(r, "corrupt chunk at byte %llu: STRING payload too small", at);
        memcpy(&item->string.id, r->payload, 4);
        item->string.size = ch.size - 4;
        item->string.bytes = (const char *)r->payload + 4;
        return WSL_READ_ITEM;
    case WSL_CHUNK_MOUNTS:
        return reader_parse_mounts(r, ch.size, item);
    case WSL_CHUNK_PATHS:
        return reader_parse_paths(r, ch.size, item);
    case WSL_CHUNK_GPU_MEMORY:
        if (ch.size < sizeof item->gpu_memory)
            return corrupt(r, "corrupt chunk at byte %llu: GPU_MEMORY payload too small", at);
        memcpy(&item->gpu_memory, r->payload, sizeof item->gpu_memory);
        return WSL_READ_ITEM;
    case WSL_CHUNK_RANK:
        return reader_parse_rank(r, ch.size, item);
    case WSL_CHUNK_EMULATION:
        return reader_parse_emulation(r, ch.size, item);
    }
    return corrupt(r, "corrupt chunk at byte %llu: unknown type %u", at, ch.type); /* file_chunk skips these */
}

enum wsl_read_result wsl_reader_next(struct wsl_reader *r, struct wsl_item *item)
{
    if (r->done != WSL_READ_ITEM)
        return r->done;
    if (r->in_events)
        return r->ev_packed ? reader_next_packed_batch(r, item) : reader_next_event_batch(r, item);
    for (;;) {
        struct wsl_chunk_header ch;
        if (__builtin_expect(r->replay != NULL, 0)) {
            if (!store_replay_chunk(r, &ch))
                return store_replay_end(r);
        } else {
            enum wsl_read_result res = file_chunk(r, &ch);
            if (res != WSL_READ_ITEM)
                return res;
        }
        enum wsl_read_result res = parse_chunk(r, &ch, item);
        if (r->chunk_skipped) { /* a repeated EVENTS chunk: its events were handed out already */
            r->chunk_skipped = false;
            continue;
        }
        if (r->rec && res == WSL_READ_ITEM)
            store_record_chunk(r, &ch);
        return res;
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

struct wsl_reader *reader_new(void)
{
    struct wsl_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    r->done = WSL_READ_ITEM;
    r->frame_open = true;
    r->clock.ns_per_tick = 1.0;
    r->clock.rate_known = true;
    r->bmi2 = wsl_reader_bmi2_path();
    r->dctx = ZSTD_createDCtx();
    r->outbuf = malloc(OUTPUT_BUFFER_SIZE);
    r->out_cap = OUTPUT_BUFFER_SIZE;
    r->payload = r->payload_buf = malloc(PAYLOAD_INITIAL_SIZE);
    r->payload_cap = PAYLOAD_INITIAL_SIZE;
    r->batch = malloc(WSL_READER_BATCH * sizeof *r->batch);
    r->codec = calloc(1, sizeof *r->codec);
    r->pack = r->pack_own = calloc(1, sizeof *r->pack);
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

static uint64_t files_opened;

uint64_t wsl_reader_files_opened(void) { return files_opened; }

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
    files_opened++;
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
    store_close(r);
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->inbuf);
    if (r->out_mapped)
        wsl_huge_free(r->outbuf, FRAME_BUFFER_MAX);
    else
        free(r->outbuf);
    free(r->payload_buf);
    free(r->batch);
    free(r->codec);
    free(r->pack_own);
    for (unsigned i = 0; i < WSL_TBITS_SLOTS; i++)
        free(r->slot_pack[i]);
    for (size_t i = 0; i < r->name_arena_count; i++)
        free(r->name_arenas[i]);
    free(r->name_arenas);
    free(r->table_items);
    free(r->argv);
    free(r->seq_seen);
    wsl_mounts_free(r->mounts);
    free(r);
}
