/* trace_reader_internal.h: shared by the files of trace_reader.c's split (private to them). */
#ifndef TRACE_READER_INTERNAL_H
#define TRACE_READER_INTERNAL_H

#include "trace_reader.h"

#include <stdio.h>
#include <string.h>
#include <zstd.h>

#define INPUT_BUFFER_SIZE (128u << 10)
#define OUTPUT_BUFFER_SIZE (256u << 10) /* to start with: it grows to hold a whole zstd frame */
#define FRAME_BUFFER_MAX (32u << 20)    /* a frame larger than this is parsed before its checksum
                                           is checked (the shim's are about 1 MiB) */
#define FRAME_BUFFER_HUGE (4u << 20)    /* a frame buffer growing to this size or more: one mapping
                                           of huge pages (frame_buffer_map) */
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
    bool out_mapped;            /* outbuf is wsl_huge_alloc's (frame_buffer_map), not malloc's */
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

    uint8_t *payload;           /* the chunk being parsed: in outbuf when it lies there whole (no copy),
                                   else in payload_buf (or, replayed, in the recording) */
    uint8_t *payload_buf;
    size_t payload_cap;
    uint64_t chunk_offset;      /* where the current chunk's header starts */

    /* EVENTS chunk being handed out in batches */
    bool bmi2;                  /* EVENTS_BITS batches take the BMI2 build of their loop (wsl_reader_bmi2_path) */
    bool in_events;
    uint32_t ev_tid, ev_count, ev_done;
    uint64_t ev_dropped;
    struct wsl_columns_in ev_in;
    bool ev_packed;             /* EVENTS_PACKED, EVENTS_GAPS or EVENTS_BITS: ev_pin and pack, not ev_in */
    struct wsl_packed_in ev_pin;
    bool ev_tbits;              /* EVENTS_BITS: the times in ev_bits, coded with ev_tdir's parameters */
    struct wsl_bits_in ev_bits;
    struct wsl_tbits_dir ev_tdir;
    struct wsl_pack_state *pack;          /* the chunk's table: pack_own, or its slot's (EVENTS_BITS) */
    struct wsl_pack_state *pack_own;      /* EVENTS_PACKED and EVENTS_GAPS chunks' */
    /* Carried tables (1.13, WSL_TBITS_CONTINUES): per slot (tid % WSL_TBITS_SLOTS), the table the last
     * EVENTS_BITS chunk in it ended with, its tid and frame; allocated at a slot's first use. */
    struct wsl_pack_state *slot_pack[WSL_TBITS_SLOTS];
    uint32_t slot_tid[WSL_TBITS_SLOTS];
    uint64_t slot_frame[WSL_TBITS_SLOTS];
    uint32_t slot_held;                   /* bit i: slot i holds a table */
    uint64_t chunk_frame;                 /* the frame of the chunk being parsed: where it starts in the
                                             file; replayed, a count of the frames (trace_store.c) */
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

    /* one reading per trace (trace_store.c) */
    struct wsl_recording *rec;          /* the chunks handed out are kept here (NULL: not recorded) */
    struct wsl_trace_store *rec_store;  /* which takes rec once the read has stopped and r is closed */
    const struct wsl_recording *replay; /* the chunks come from this recording instead of a file */
    const struct rec_block *replay_block;
    size_t replay_at;                   /* within replay_block */
};

/* A varint of the checked decoder's common lengths (1 and 2 bytes, then 3 and 4: times in ticks
 * take 3 or 4, a gap of 20 us is 60,000 TSC ticks), else wsl_get_varint itself: the same result
 * and position for every input. */
static inline const uint8_t *reader_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
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
        if (end - p >= 4) {
            unsigned b2 = p[2];
            uint64_t v = (uint64_t)(b0 & 0x7f) | (uint64_t)(b1 & 0x7f) << 7;
            if (b2 < 0x80) {
                *out = v | (uint64_t)b2 << 14;
                return p + 3;
            }
            unsigned b3 = p[3];
            if (b3 < 0x80) {
                *out = v | (uint64_t)(b2 & 0x7f) << 14 | (uint64_t)b3 << 21;
                return p + 4;
            }
        }
    }
    return wsl_get_varint(p, end, out);
}

/* A chunk that is malformed although its zstd frame's checksum matched was
 * written wrong: the trace is invalid (damage on disk is caught by the
 * checksum, stream_fill). */
#define corrupt(r, ...) reader_finish((r), WSL_READ_ERROR, __VA_ARGS__)
#define out_of_memory(r, ...) reader_finish((r), WSL_READ_ERROR, __VA_ARGS__)

/* The read stops (the first reason is kept); a warning (at most READER_WARNINGS_MAX). */
enum wsl_read_result reader_finish(struct wsl_reader *r, enum wsl_read_result res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void reader_add_warning(struct wsl_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void reader_clock_refit(struct wsl_reader *r);
enum wsl_read_result reader_parse_process(struct wsl_reader *r, uint32_t size, struct wsl_item *item);
enum wsl_read_result reader_parse_api_table(struct wsl_reader *r, uint32_t size, struct wsl_item *item);
enum wsl_read_result reader_parse_driver(struct wsl_reader *r, uint32_t size, struct wsl_item *item);
enum wsl_read_result reader_next_event_batch(struct wsl_reader *r, struct wsl_item *item);
enum wsl_read_result reader_next_packed_batch(struct wsl_reader *r, struct wsl_item *item);
enum wsl_read_result reader_parse_events(struct wsl_reader *r, uint32_t type, uint32_t size,
                                        struct wsl_item *item);
enum wsl_read_result reader_parse_mounts(struct wsl_reader *r, uint32_t size, struct wsl_item *item);
enum wsl_read_result reader_parse_paths(struct wsl_reader *r, uint32_t size, struct wsl_item *item);
enum wsl_read_result reader_parse_rank(struct wsl_reader *r, uint32_t size, struct wsl_item *item);
enum wsl_read_result reader_parse_emulation(struct wsl_reader *r, uint32_t size, struct wsl_item *item);

/* trace_store.c: the replay's next chunk into ch and r->payload (false after the last one), the
 * replay's end (the recorded result, message and warnings), a chunk handed out kept in the
 * recording, and what wsl_reader_close does for both. */
bool store_replay_chunk(struct wsl_reader *r, struct wsl_chunk_header *ch);
enum wsl_read_result store_replay_end(struct wsl_reader *r);
void store_record_chunk(struct wsl_reader *r, const struct wsl_chunk_header *ch);
void store_close(struct wsl_reader *r);
struct wsl_reader *reader_new(void);
struct wsl_reader *reader_new_replay(void);

#endif
