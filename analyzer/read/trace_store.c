/*
 * One reading per trace (trace_reader.h, "the store"): the chunks of a trace's first reading are
 * kept as they came out of zstd, and later readings replay them through the same chunk parsers,
 * without the file and without zstd.
 *
 * A recording is a list of blocks; each block holds whole chunk records, 16-byte aligned:
 *   u32 type (its top bit: the chunk is in another zstd frame than the record before it, for the
 *   tables EVENTS_BITS chunks carry within a frame), u32 size, u64 bytes_in (compressed bytes read
 *   when the chunk was handed out), then the payload. Only chunks that were handed out are kept (not the skipped or repeated
 *   ones), so a replay hands out the same items. Its end is the first reading's: the result,
 *   message and warnings are copied from it. A reading that stopped with WSL_READ_ERROR, or
 *   was closed before its end, is not kept (the run leaves such a trace out).
 */
#include "trace_reader.h"

#include <stdlib.h>
#include <string.h>

#include "trace_reader_internal.h"
#include "util.h"

#define BLOCK_FIRST (16u << 10)  /* a small trace takes little; blocks double up to BLOCK_MAX */
#define BLOCK_MAX (1u << 20)
#define RECORD_HEADER 16u
#define RECORD_NEW_FRAME 0x80000000u /* in a record's type */
#define ARENA_CHUNK ((size_t)2 << 20)

/* The blocks' memory, carved from the store's arena: 2 MiB mappings in huge pages where the kernel
 * gives them (wsl_huge_alloc), shared by the store's recordings one after another. A run of many
 * traces holds all their recordings (64 ranks: 17.5 MB); each block malloc'd alone was faulted in a
 * page at a time, half of that run's page faults and two thirds of its system time. One recording
 * at a time carves from it (the one that holds it, until its close); another, or a block larger
 * than a chunk, takes malloc's memory as before. The last chunk's room left is the arena's slack,
 * at most one chunk per store. */
struct arena_chunk {
    struct arena_chunk *next;
    uint8_t *base;
};

struct rec_block {
    struct rec_block *next;
    size_t used, cap;
    uint8_t *data;
    bool in_arena;              /* data is the arena's (not freed alone) */
};

struct wsl_recording {
    char *path;
    uint64_t path_hash;
    struct rec_block *first, *last;
    size_t held;                /* bytes of memory, blocks and all */
    uint16_t version_minor;
    uint64_t file_size;
    enum wsl_read_result done;
    char message[WSL_READER_ERRLEN];
    char warnings[READER_WARNINGS_MAX][WSL_READER_ERRLEN];
    size_t warning_count;
    uint64_t bytes_in, bytes_out;
    uint64_t records, last_frame;   /* chunks kept; the frame of the last (RECORD_NEW_FRAME) */
    bool in_arena;              /* holds the arena: its first block there began at mark_chunk + mark_at */
    struct arena_chunk *mark_chunk;
    size_t mark_at;
};

struct wsl_trace_store {
    struct wsl_recording **recs;
    size_t count;
    struct arena_chunk *chunks;     /* newest first: the one carved from */
    size_t chunk_at;                /* the first free byte of chunks */
    const struct wsl_recording *arena_holder; /* the recording that carves from it now, or NULL */
};

/* Every store's recordings together (the analyzer runs on one thread). */
static size_t held_total;

size_t wsl_store_bytes_held(void) { return held_total; }

static uint64_t path_hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211u;
    return h;
}

static void recording_free(struct wsl_recording *rec)
{
    if (!rec)
        return;
    for (struct rec_block *b = rec->first, *next; b; b = next) {
        next = b->next;
        if (!b->in_arena)
            free(b->data);
        free(b);
    }
    free(rec->path);
    free(rec);
}

struct wsl_trace_store *wsl_store_new(void)
{
    return xcalloc(1, sizeof(struct wsl_trace_store));
}

void wsl_store_free(struct wsl_trace_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++) {
        held_total -= s->recs[i]->held;
        recording_free(s->recs[i]);
    }
    for (struct arena_chunk *c = s->chunks, *next; c; c = next) {
        next = c->next;
        wsl_huge_free(c->base, ARENA_CHUNK);
        free(c);
    }
    free(s->recs);
    free(s);
}

static const struct wsl_recording *find(const struct wsl_trace_store *s, const char *path)
{
    if (!s)
        return NULL;
    uint64_t h = path_hash(path);
    for (size_t i = 0; i < s->count; i++)
        if (s->recs[i]->path_hash == h && !strcmp(s->recs[i]->path, path))
            return s->recs[i];
    return NULL;
}

bool wsl_store_holds(const struct wsl_trace_store *s, const char *path) { return find(s, path) != NULL; }

struct wsl_reader *reader_new_replay(void)
{
    struct wsl_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    r->done = WSL_READ_ITEM;
    r->clock.ns_per_tick = 1.0;
    r->clock.rate_known = true;
    r->bmi2 = wsl_reader_bmi2_path();
    r->batch = malloc(WSL_READER_BATCH * sizeof *r->batch);
    r->codec = calloc(1, sizeof *r->codec);
    r->pack = r->pack_own = calloc(1, sizeof *r->pack);
    if (!r->batch || !r->codec || !r->pack) {
        wsl_reader_close(r);
        return NULL;
    }
    return r;
}

struct wsl_reader *wsl_store_open(const struct wsl_trace_store *s, const char *path, char *err, size_t errlen)
{
    const struct wsl_recording *rec = find(s, path);
    if (!rec)
        return wsl_reader_open(path, err, errlen);
    struct wsl_reader *r = reader_new_replay();
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->replay = rec;
    r->replay_block = rec->first;
    r->version_minor = rec->version_minor;
    r->file_size = rec->file_size;
    return r;
}

struct wsl_reader *wsl_store_open_recording(struct wsl_trace_store *s, const char *path, char *err, size_t errlen)
{
    if (!s || find(s, path))
        return wsl_store_open(s, path, err, errlen);
    struct wsl_reader *r = wsl_reader_open(path, err, errlen);
    if (!r)
        return NULL;
    struct wsl_recording *rec = xcalloc(1, sizeof *rec);
    rec->path = xstrdup(path);
    rec->path_hash = path_hash(path);
    rec->held = sizeof *rec + strlen(path) + 1;
    rec->version_minor = r->version_minor;
    rec->file_size = r->file_size;
    r->rec = rec;
    r->rec_store = s;
    return r;
}

int wsl_store_probe(struct wsl_trace_store *s, const char *path, char *err, size_t errlen)
{
    struct wsl_reader *r = wsl_store_open_recording(s, path, err, errlen);
    if (!r)
        return -1;
    struct wsl_item item;
    enum wsl_read_result res;
    bool process = false;
    while ((res = wsl_reader_next(r, &item)) == WSL_READ_ITEM)
        process |= item.type == WSL_CHUNK_PROCESS;
    int rc = process ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "%s", res == WSL_READ_END ? "a trace without its process info" : r->message);
    wsl_reader_close(r);
    return rc;
}

/* ---- recording ------------------------------------------------------------------------ */

/* The arena's memory for a block of cap bytes (need at least), cap lowered to the chunk's room left
 * where need fits in it; NULL where the arena is another recording's, or the block larger than a
 * chunk, or no mapping came. */
static uint8_t *arena_carve(struct wsl_trace_store *s, struct wsl_recording *rec, size_t need, size_t *cap)
{
    if ((s->arena_holder && s->arena_holder != rec) || need > ARENA_CHUNK)
        return NULL;
    if (!s->chunks || ARENA_CHUNK - s->chunk_at < need) {
        struct arena_chunk *c = malloc(sizeof *c);
        uint8_t *base = c ? wsl_huge_alloc(ARENA_CHUNK) : NULL;
        if (!base) {
            free(c);
            return NULL;
        }
        c->base = base;
        c->next = s->chunks;
        s->chunks = c;
        s->chunk_at = 0;
    }
    if (!rec->in_arena) {
        rec->in_arena = true;
        rec->mark_chunk = s->chunks;
        rec->mark_at = s->chunk_at;
        s->arena_holder = rec;
    }
    if (*cap > ARENA_CHUNK - s->chunk_at)
        *cap = ARENA_CHUNK - s->chunk_at;
    uint8_t *p = s->chunks->base + s->chunk_at;
    s->chunk_at += *cap;
    return p;
}

/* A recording that holds the arena lets it go: kept (its last block's room left goes back to the
 * arena), or dropped (the arena back to where the recording began in it). */
static void arena_release(struct wsl_trace_store *s, struct wsl_recording *rec, bool kept)
{
    if (!rec->in_arena)
        return;
    rec->in_arena = false;
    s->arena_holder = NULL;
    if (kept) {
        struct rec_block *b = rec->last;
        if (b->in_arena && b->data + b->cap == s->chunks->base + s->chunk_at) {
            s->chunk_at -= b->cap - b->used;
            rec->held -= b->cap - b->used;
            b->cap = b->used;
        }
        return;
    }
    while (s->chunks != rec->mark_chunk) {
        struct arena_chunk *c = s->chunks;
        s->chunks = c->next;
        wsl_huge_free(c->base, ARENA_CHUNK);
        free(c);
    }
    s->chunk_at = rec->mark_at;
}

static void abandon(struct wsl_reader *r)
{
    arena_release(r->rec_store, r->rec, false);
    recording_free(r->rec);
    r->rec = NULL;
}

void store_record_chunk(struct wsl_reader *r, const struct wsl_chunk_header *ch)
{
    struct wsl_recording *rec = r->rec;
    size_t need = RECORD_HEADER + (((size_t)ch->size + 15) & ~(size_t)15);
    struct rec_block *b = rec->last;
    if (!b || b->cap - b->used < need) {
        size_t cap = b ? (b->cap < BLOCK_MAX ? 2 * b->cap : BLOCK_MAX) : BLOCK_FIRST;
        if (cap < need)
            cap = need;
        if (held_total + rec->held + cap + sizeof *b > WSL_STORE_MAX_BYTES ||
            rec->held + cap + sizeof *b > WSL_STORE_MAX_TRACE_BYTES) {
            abandon(r); /* past the budget: later readings read the file */
            return;
        }
        struct rec_block *nb = xcalloc(1, sizeof *nb);
        size_t want = cap;
        nb->data = arena_carve(r->rec_store, rec, need, &cap);
        nb->in_arena = nb->data != NULL;
        if (!nb->data)
            nb->data = xmalloc(cap = want);
        nb->cap = cap;
        if (b)
            b->next = nb;
        else
            rec->first = nb;
        rec->last = b = nb;
        rec->held += cap + sizeof *nb;
    }
    uint8_t *p = b->data + b->used;
    const uint32_t type = ch->type | (rec->records && r->chunk_frame == rec->last_frame ? 0 : RECORD_NEW_FRAME);
    rec->records++;
    rec->last_frame = r->chunk_frame;
    memcpy(p, &type, 4);
    memcpy(p + 4, &ch->size, 4);
    memcpy(p + 8, &r->bytes_in, 8);
    memcpy(p + RECORD_HEADER, r->payload, ch->size);
    b->used += need;
}

/* ---- replay ----------------------------------------------------------------------------- */

bool store_replay_chunk(struct wsl_reader *r, struct wsl_chunk_header *ch)
{
    const struct rec_block *b = r->replay_block;
    while (b && r->replay_at >= b->used) {
        b = r->replay_block = b->next;
        r->replay_at = 0;
    }
    if (!b)
        return false;
    const uint8_t *p = b->data + r->replay_at;
    memcpy(&ch->type, p, 4);
    memcpy(&ch->size, p + 4, 4);
    memcpy(&r->bytes_in, p + 8, 8);
    if (ch->type & RECORD_NEW_FRAME) {
        ch->type &= ~RECORD_NEW_FRAME;
        r->chunk_frame++;
    }
    r->replay_at += RECORD_HEADER + (((size_t)ch->size + 15) & ~(size_t)15);
    if (ch->type == WSL_CHUNK_EVENTS || ch->type == WSL_CHUNK_EVENTS_PACKED || ch->type == WSL_CHUNK_EVENTS_GAPS ||
        ch->type == WSL_CHUNK_EVENTS_BITS) {
        r->payload = (uint8_t *)(uintptr_t)(p + RECORD_HEADER); /* only read: no copy */
        return true;
    }
    /* the other parsers may write their payload (DRIVER terminates names): a copy */
    if (ch->size > r->payload_cap) {
        r->payload_buf = xrealloc(r->payload_buf, ch->size);
        r->payload_cap = ch->size;
    }
    memcpy(r->payload_buf, p + RECORD_HEADER, ch->size);
    r->payload = r->payload_buf;
    return true;
}

enum wsl_read_result store_replay_end(struct wsl_reader *r)
{
    const struct wsl_recording *rec = r->replay;
    r->done = rec->done;
    r->in_events = false;
    memcpy(r->message, rec->message, sizeof r->message);
    memcpy(r->warnings, rec->warnings, sizeof r->warnings);
    r->warning_count = rec->warning_count;
    r->bytes_in = rec->bytes_in;
    r->bytes_out = rec->bytes_out;
    return r->done;
}

void store_close(struct wsl_reader *r)
{
    if (r->replay)
        return;
    struct wsl_recording *rec = r->rec;
    if (!rec)
        return;
    r->rec = NULL;
    if (r->done != WSL_READ_END && r->done != WSL_READ_TRUNCATED) {
        arena_release(r->rec_store, rec, false);
        recording_free(rec); /* closed before its end, or not a usable trace */
        return;
    }
    rec->done = r->done;
    memcpy(rec->message, r->message, sizeof rec->message);
    memcpy(rec->warnings, r->warnings, sizeof rec->warnings);
    rec->warning_count = r->warning_count;
    rec->bytes_in = r->bytes_in;
    rec->bytes_out = r->bytes_out;
    arena_release(r->rec_store, rec, true);
    struct rec_block *b = rec->last; /* the last block's room left is given back */
    if (b && !b->in_arena && b->used < b->cap) {
        uint8_t *d = realloc(b->data, b->used ? b->used : 1);
        if (d) {
            rec->held -= b->cap - b->used;
            b->data = d;
            b->cap = b->used;
        }
    }
    struct wsl_trace_store *s = r->rec_store;
    s->recs = xrealloc(s->recs, (s->count + 1) * sizeof *s->recs);
    s->recs[s->count++] = rec;
    held_total += rec->held;
}
