/*
 * wslshim trace format: the packed event codecs, EVENTS_PACKED (1.4), EVENTS_GAPS (1.9) and
 * EVENTS_BITS (1.10): an event's arguments as a table of the chunk's argument sets, its times as
 * varint columns (PACKED, GAPS) or as bits (BITS). Part of trace_format.h, which includes it at its
 * end; docs/trace-format.md explains the layouts in prose.
 */
#ifndef WSLSHIM_TRACE_CODEC_H
#define WSLSHIM_TRACE_CODEC_H

#include "wslshim/trace_format.h"

/* ---- EVENTS_PACKED payload (1.4) -------------------------------------------------
 * struct wsl_events_header, then `encoded_size` bytes holding `count` events of
 * one thread. Most calls repeat the arguments of a recent call (the same kernel,
 * grid and stream; the same sync): each distinct argument set (api, result,
 * stream, a[0..3]) is written once per chunk, as a literal, and later events
 * name it with one byte. Only the times stay per event:
 *
 *   u32 dt_bytes, u32 dur_bytes, u32 literals   column directory (12 bytes)
 *   op column      `count` bytes: 0 = the event's arguments are the next literal;
 *                  k = 1..255: they are those of table entry k - 1
 *   dt column      `count` varints: zigzag(t_start - previous event's t_start),
 *                  the first against base_ticks
 *   dur column     `count` varints: t_end - t_start (0 when negative)
 *   literal column the rest, `literals` of them, each: varint api id, a mask byte
 *                  (bit0 result, bit1 stream, bit2..5 a[0..3] differ from the
 *                  previous literal of the same api in this chunk; bits 6, 7 are 0),
 *                  then for each set bit in order varint zigzag(result) |
 *                  varint (value ^ previous)
 *
 * The table starts empty in each chunk (an EVENTS_BITS chunk of 1.13 may carry its thread's
 * instead: WSL_TBITS_CONTINUES, below); each literal is appended to it while it
 * holds fewer than WSL_PACK_TABLE_MAX entries (later literals are not kept). The
 * same checks as EVENTS apply, and: an op beyond the table's entries so far, a
 * literal count that differs from the op column's zeros. The writer also
 * compresses with zstd level -1 from 1.4 on: the packed bytes are dense (times).
 * Its literals were stored raw until issue 26 and are Huffman-coded since (an
 * ordinary zstd frame either way: readers need nothing new). */
#define WSL_TRACE_ZSTD_LEVEL (-1)  /* the writer's zstd level from 1.4 on (1.2: level 1) */
#define WSL_PACK_TABLE_MAX 255u
#define WSL_PACK_HASH_SLOTS 512u     /* writer's lookup of argument sets: a power of two > 2 x table */
#define WSL_COL_OP_MAX 1u
#define WSL_COL_LIT_MAX (WSL_COL_API_MAX + WSL_COL_MASK_MAX + WSL_COL_FIELDS_MAX)
#define WSL_PACKED_EVENT_MAX_ENCODED (WSL_COL_OP_MAX + WSL_COL_DT_MAX + WSL_COL_DUR_MAX + WSL_COL_LIT_MAX)
_Static_assert(WSL_PACK_TABLE_MAX <= 255u, "ops are one byte");
_Static_assert(WSL_PACK_HASH_SLOTS >= 2u * WSL_PACK_TABLE_MAX, "the writer's lookup stays half empty");

/* The chunk's table of argument sets, shared by encoder and decoder (the
 * decoder does not use `slot`). */
struct wsl_pack_state {
    uint32_t entries;                           /* in table */
    uint32_t literals;                          /* written or read in this chunk */
    uint16_t slot[WSL_PACK_HASH_SLOTS];         /* writer: entry index + 1, 0 empty */
    uint8_t last[WSL_MAX_API_IDS];              /* writer: the entry each api used last (a hint,
                                                   zeroed once, checked and compared, never reset) */
    uint8_t prev;                               /* writer: the previous event's entry (255: none) */
    uint8_t armed;                              /* the entries past `entries` hold WSL_PACK_NO_API */
    /* api, result, stream, a[]. The writer's: flags, the entry's op (its index + 1); t_start, the byte
     * offset in table of the entry that came right after it last time (a hint as `last`: a program's
     * step repeats its launches in the same order; wsl_pack_next); table[WSL_PACK_TABLE_MAX], the
     * entry of "none" (after a literal the table had no room for), never an argument set. */
    struct wsl_event table[WSL_PACK_TABLE_MAX + 1];
};
/* The api of the table's entries past `entries`: no event's (the writer's run takes apis under
 * WSL_MAX_API_IDS; the rings' marker is 0xffff), so that a successor hint that names no entry of the
 * chunk fails its compare, and the run checks no bound before it (docs/overhead.md, "The writer,
 * seventh pass"). */
#define WSL_PACK_NO_API 0xfffeu
_Static_assert(WSL_PACK_NO_API >= WSL_MAX_API_IDS, "no event's api");

/* The successor hint of entry i (wsl_pack_state's table), and set to k. */
static inline unsigned wsl_pack_next(const struct wsl_pack_state *ps, unsigned i)
{
    return (unsigned)(ps->table[i].t_start / sizeof(struct wsl_event));
}
static inline void wsl_pack_link(struct wsl_pack_state *ps, unsigned i, unsigned k)
{
    ps->table[i].t_start = (uint64_t)k * sizeof(struct wsl_event);
}

static inline void wsl_pack_reset(struct wsl_pack_state *ps, int with_slots)
{
    const uint32_t used = ps->armed ? (ps->entries < WSL_PACK_TABLE_MAX ? ps->entries : WSL_PACK_TABLE_MAX)
                                    : WSL_PACK_TABLE_MAX + 1;
    for (uint32_t i = 0; i < used; i++)
        ps->table[i].api = (uint16_t)WSL_PACK_NO_API;
    ps->armed = 1;
    ps->entries = 0;
    ps->literals = 0;
    if (with_slots)
        memset(ps->slot, 0, sizeof ps->slot);
}

/* The writer's codec and header anew for a chunk of thread tid whose first event starts at `base`.
 * Each chunk decodes on its own: the codec's per-api slots are reset, only those the last chunk
 * used (the apis of its table's entries; all of them after a full table, whose later literals are
 * not in it), as a full reset is 64 KiB. */
static inline void wsl_chunk_codec_open(struct wsl_pack_state *ps, struct wsl_codec_state *st,
                                        struct wsl_events_header *eh, uint32_t tid, uint64_t base, uint64_t dropped)
{
    if (ps->entries >= WSL_PACK_TABLE_MAX)
        memset(st->prev, 0, sizeof st->prev);
    else
        for (uint32_t i = 0; i < ps->entries; i++)
            memset(&st->prev[ps->table[i].api], 0, sizeof st->prev[0]);
    st->prev_t = base;
    wsl_pack_reset(ps, 1);
    memset(eh, 0, sizeof *eh);
    eh->tid = tid;
    eh->base_ticks = base;
    eh->dropped = dropped;
}

/* After a chunk whose table began with `from` entries (a carried table's, or 0) is written: the
 * codec's per-api slots its literals used back to 0 for the next chunk, whatever table that one
 * takes (the apis of the entries it added; all of them where it wrote a literal the table had no
 * room for). */
static inline void wsl_codec_forget(struct wsl_codec_state *st, const struct wsl_pack_state *ps, uint32_t from)
{
    if (ps->literals > ps->entries - from)
        memset(st->prev, 0, sizeof st->prev);
    else
        for (uint32_t i = from; i < ps->entries; i++)
            memset(&st->prev[ps->table[i].api], 0, sizeof st->prev[0]);
}

/* Whether a and b have the same argument set: api, result, stream and a[], the 48 bytes from api on
 * (flags, reserved, left out), compared 16 bytes at a time (half the instructions of field by field,
 * which the writer pays on each event: docs/overhead.md, "The writer, second pass"). */
static inline int wsl_pack_same(const struct wsl_event *a, const struct wsl_event *b)
{
    typedef uint64_t wsl_u64x2 __attribute__((vector_size(16)));
    _Static_assert(offsetof(struct wsl_event, api) == 16 && offsetof(struct wsl_event, flags) == 18 &&
                       offsetof(struct wsl_event, result) == 20 && offsetof(struct wsl_event, a) == 32,
                   "the argument set is the 48 bytes from api on");
    const char *pa = (const char *)a + offsetof(struct wsl_event, api);
    const char *pb = (const char *)b + offsetof(struct wsl_event, api);
    wsl_u64x2 a0, a1, a2, b0, b1, b2; /* apart, not arrays: an array is kept in memory */
    memcpy(&a0, pa, 16);
    memcpy(&a1, pa + 16, 16);
    memcpy(&a2, pa + 32, 16);
    memcpy(&b0, pb, 16);
    memcpy(&b1, pb + 16, 16);
    memcpy(&b2, pb + 32, 16);
    const wsl_u64x2 no_flags = {~0xffff0000ull, ~0ull};
    const wsl_u64x2 d = ((a0 ^ b0) & no_flags) | (a1 ^ b1) | (a2 ^ b2);
    return (d[0] | d[1]) == 0;
}

static inline unsigned wsl_pack_hash(const struct wsl_event *ev)
{
    uint64_t x = (ev->a[0] ^ ((uint64_t)ev->api << 48 | (uint32_t)ev->result)) * 0x9e3779b97f4a7c15u;
    x = (x ^ ev->stream ^ ev->a[1] ^ ev->a[2] << 9 ^ ev->a[3] << 23) * 0xc2b2ae3d27d4eb4fu;
    return (unsigned)(x >> 55) & (WSL_PACK_HASH_SLOTS - 1);
}

struct wsl_packed_out {
    uint8_t *op, *dt, *dur, *lit;
};

/* The argument set of ev into the op column, and into the literal column when
 * it is new to the chunk's table; st holds the per-api previous literal
 * (reset as for EVENTS). The literal column needs room for WSL_COL_LIT_MAX
 * bytes per event still to be encoded (the api varint may be written one byte
 * past what it keeps). */
static inline __attribute__((always_inline)) void wsl_pack_arguments_miss(struct wsl_pack_state *ps,
                                                                          struct wsl_codec_state *st,
                                                                          const struct wsl_event *ev,
                                                                          unsigned prev, uint8_t **op_at,
                                                                          uint8_t **lit_at);

static inline __attribute__((always_inline)) void wsl_pack_arguments(struct wsl_pack_state *ps,
                                                                     struct wsl_codec_state *st,
                                                                     const struct wsl_event *ev, uint8_t **op_at,
                                                                     uint8_t **lit_at)
{
    const unsigned prev = ps->prev;
    const unsigned k = wsl_pack_next(ps, prev);
    if (k < ps->entries && wsl_pack_same(&ps->table[k], ev)) { /* the set that followed the previous one */
        *(*op_at)++ = (uint8_t)(k + 1);
        ps->prev = (uint8_t)k;
        return;
    }
    wsl_pack_arguments_miss(ps, st, ev, prev, op_at, lit_at);
}

/* wsl_pack_arguments past its first check (the successor of `prev`, the previous event's entry,
 * was not the set): the api's last set, the hash, or a literal. */
static inline __attribute__((always_inline)) void wsl_pack_arguments_miss(struct wsl_pack_state *ps,
                                                                          struct wsl_codec_state *st,
                                                                          const struct wsl_event *ev,
                                                                          unsigned prev, uint8_t **op_at,
                                                                          uint8_t **lit_at)
{
    const unsigned api = ev->api;
    unsigned k = ps->last[api];
    if (k < ps->entries && wsl_pack_same(&ps->table[k], ev)) { /* a call repeating the api's previous set */
        *(*op_at)++ = (uint8_t)(k + 1);
        wsl_pack_link(ps, prev, k);
        ps->prev = (uint8_t)k;
        return;
    }
    unsigned h = wsl_pack_hash(ev);
    while ((k = ps->slot[h]) != 0) {
        if (wsl_pack_same(&ps->table[k - 1], ev)) {
            *(*op_at)++ = (uint8_t)k;
            wsl_pack_link(ps, prev, k - 1);
            ps->last[api] = ps->prev = (uint8_t)(k - 1);
            return;
        }
        h = (h + 1) & (WSL_PACK_HASH_SLOTS - 1);
    }
    ps->prev = (uint8_t)WSL_PACK_TABLE_MAX; /* a literal: no entry, unless it is added below */
    *(*op_at)++ = 0;
    ps->literals++;
    const unsigned two = api >= 0x80;
    struct wsl_event *pv = &st->prev[api];
    uint8_t *f = *lit_at;
    f[0] = (uint8_t)(api | two << 7);
    f[1] = (uint8_t)(api >> 7);
    f += 1 + two;
    uint8_t *mask_at = f++;
    unsigned mask = 0;
    f = wsl_put_fields(pv, ev, f, &mask);
    *mask_at = (uint8_t)mask;
    *lit_at = f;
    if (ps->entries < WSL_PACK_TABLE_MAX) {
        struct wsl_event *e = &ps->table[ps->entries++];
        memset(e, 0, sizeof *e);
        e->flags = (uint16_t)ps->entries; /* its op */
        e->api = (uint16_t)api;
        e->result = ev->result;
        e->stream = ev->stream;
        memcpy(e->a, ev->a, sizeof e->a);
        ps->slot[h] = (uint16_t)ps->entries;
        wsl_pack_link(ps, prev, ps->entries - 1);
        ps->last[api] = ps->prev = (uint8_t)(ps->entries - 1);
    }
}

/* Appends ev to the packed columns (EVENTS_PACKED, 1.4): its times as the
 * start's delta and the duration, its arguments by wsl_pack_arguments. Each
 * buffer needs room for WSL_COL_*_MAX bytes per event still to be encoded. */
static inline void wsl_event_encode_packed(struct wsl_pack_state *ps, struct wsl_codec_state *st,
                                           const struct wsl_event *ev, struct wsl_packed_out *o)
{
    const uint64_t t = ev->t_start, t_end = ev->t_end;
    o->dt = wsl_put_varint(o->dt, wsl_zigzag((int64_t)(t - st->prev_t)));
    o->dur = wsl_put_varint(o->dur, t_end >= t ? t_end - t : 0);
    st->prev_t = t;
    wsl_pack_arguments(ps, st, ev, &o->op, &o->lit);
}

struct wsl_packed_in {
    const uint8_t *op, *op_end, *dt, *dt_end, *dur, *dur_end, *lit, *lit_end;
    uint32_t literals;      /* the directory's count */
    const uint8_t *dur_lo;  /* EVENTS_GAPS: the durations' low bytes, one per op (dt: the gaps, dur: the
                               durations' high bits); NULL: EVENTS_PACKED */
};

/* The directory's checks and the columns' split, shared by EVENTS_PACKED and EVENTS_GAPS: count
 * must fit the dt (gap) and dur (dur_hi) columns, literals must be at most count and fit the
 * literal column (two bytes at least each); `gaps`: a dur_lo column of count bytes lies between
 * the gap and dur_hi columns (EVENTS_GAPS), else none (in->dur_lo NULL). */
static inline enum wsl_columns_status wsl_pack_columns_open(struct wsl_packed_in *in, const uint8_t *p, size_t size,
                                                            uint32_t count, int gaps)
{
    uint32_t dir[3];
    if (size < WSL_EVENTS_DIRECTORY_SIZE)
        return WSL_COLUMNS_NO_DIRECTORY;
    memcpy(dir, p, sizeof dir);
    if (count > dir[0] || count > dir[1] || dir[2] > count)
        return WSL_COLUMNS_COUNT_TOO_BIG;
    const uint32_t lo = gaps ? count : 0;
    uint64_t used = (uint64_t)WSL_EVENTS_DIRECTORY_SIZE + count + lo + dir[0] + dir[1];
    if (used > size)
        return WSL_COLUMNS_OVERRUN;
    if ((uint64_t)dir[2] * 2 > size - used)
        return WSL_COLUMNS_COUNT_TOO_BIG;
    p += WSL_EVENTS_DIRECTORY_SIZE;
    in->op = p;
    in->op_end = p += count;
    in->dt = p;
    in->dt_end = p += dir[0];
    in->dur_lo = gaps ? p : NULL;
    p += lo;
    in->dur = p;
    in->dur_end = p += dir[1];
    in->lit = p;
    in->lit_end = p + (size - (size_t)used);
    in->literals = dir[2];
    return WSL_COLUMNS_OK;
}

/* Splits the encoded bytes of an EVENTS_PACKED chunk like wsl_columns_open (wsl_pack_columns_open's
 * rules). */
static inline enum wsl_columns_status wsl_packed_open(struct wsl_packed_in *in, const uint8_t *p, size_t size,
                                                      uint32_t count)
{
    return wsl_pack_columns_open(in, p, size, count, 0);
}

/* The next event's op and its two time varints (dt and dur; EVENTS_GAPS: gap and dur_hi), shared
 * by the packed and gaps decoders. Returns 0 on malformed input. */
static inline int wsl_packed_next(struct wsl_packed_in *in, unsigned *op, uint64_t *first, uint64_t *second)
{
    const uint8_t *p;
    if (in->op >= in->op_end)
        return 0;
    *op = *in->op++;
    if (!(p = wsl_get_varint(in->dt, in->dt_end, first)))
        return 0;
    in->dt = p;
    if (!(p = wsl_get_varint(in->dur, in->dur_end, second)))
        return 0;
    in->dur = p;
    return 1;
}

/* The argument set of an event whose op is `op` (a table entry, or 0: the next
 * literal) into *ev, times left to the caller. Returns 0 on malformed input. */
static inline int wsl_unpack_arguments(struct wsl_pack_state *ps, struct wsl_codec_state *st, struct wsl_packed_in *in,
                                       unsigned op, uint32_t api_limit, struct wsl_event *ev)
{
    const uint8_t *p;
    if (op) {
        if (op > ps->entries)
            return 0;
        *ev = ps->table[op - 1];
    } else {
        uint64_t id;
        if (ps->literals >= in->literals)
            return 0;
        ps->literals++;
        if (!(p = wsl_get_varint(in->lit, in->lit_end, &id)) || id >= api_limit || id >= WSL_MAX_API_IDS ||
            p >= in->lit_end)
            return 0;
        unsigned mask = *p++;
        if (mask & 0xc0)
            return 0;
        struct wsl_event *pv = &st->prev[id];
        if (!(p = wsl_apply_fields(pv, mask, p, in->lit_end)))
            return 0;
        in->lit = p;
        *ev = *pv;
        ev->api = (uint16_t)id;
        ev->flags = 0;
        if (ps->entries < WSL_PACK_TABLE_MAX)
            ps->table[ps->entries++] = *ev;
    }
    return 1;
}

/* Decodes the next packed event (the reference decoder; analyzer/trace_reader.c
 * has the same checks in a batch loop). Returns 0 on malformed input. */
static inline int wsl_event_decode_packed(struct wsl_pack_state *ps, struct wsl_codec_state *st,
                                          struct wsl_packed_in *in, uint32_t api_limit, struct wsl_event *ev)
{
    uint64_t dt, dur;
    unsigned op;
    if (!wsl_packed_next(in, &op, &dt, &dur) || !wsl_unpack_arguments(ps, st, in, op, api_limit, ev))
        return 0;
    wsl_decode_times(st, ev, dt, dur);
    return 1;
}

/* Bytes left unread in the packed columns: 0 once `count` events used them up exactly. */
static inline size_t wsl_packed_left(const struct wsl_packed_in *in)
{
    return (size_t)(in->op_end - in->op) + (size_t)(in->dt_end - in->dt) + (size_t)(in->dur_end - in->dur) +
           (size_t)(in->lit_end - in->lit);
}

/* ---- EVENTS_GAPS payload (1.9) ---------------------------------------------------
 * The header, ops and literals of EVENTS_PACKED; only the times differ:
 *
 *   u32 gap_bytes, u32 dur_hi_bytes, u32 literals   column directory (12 bytes)
 *   op column      `count` bytes, as in EVENTS_PACKED
 *   gap column     `count` varints: zigzag(t_start - the previous event's t_end),
 *                  the first against base_ticks (t_end: t_start + its duration)
 *   dur_lo column  `count` bytes: the low byte of t_end - t_start (0 when negative)
 *   dur_hi column  `count` varints: the rest of it (duration >> 8)
 *   literal column the rest, as in EVENTS_PACKED
 *
 * A thread's calls follow one another: the gap from the previous call's end is
 * the program's own time between them, where the start's delta also holds the
 * previous call's duration, twice the noise. A duration's low byte is noise at
 * the cycle counter's resolution, and its high bits repeat: apart, zstd's
 * Huffman stage codes those in a few bits, and its match finder skips fewer
 * bytes (issue 26, docs/overhead.md). Malformed, besides the rules of
 * EVENTS_PACKED: a dur_hi value above 2^56 - 1. */
#define WSL_COL_DUR_LO_MAX 1u
#define WSL_GAPS_EVENT_MAX_ENCODED (WSL_PACKED_EVENT_MAX_ENCODED + WSL_COL_DUR_LO_MAX)

struct wsl_gaps_out {
    uint8_t *op, *gap, *dur_lo, *dur_hi, *lit;
};

/* Appends ev to the EVENTS_GAPS columns; st->prev_t is the previous event's
 * end (base_ticks at the chunk's start). Each buffer needs room for its
 * WSL_COL_*_MAX bytes per event still to be encoded (gap: WSL_COL_DT_MAX,
 * dur_hi: WSL_COL_DUR_MAX). */
static inline __attribute__((always_inline)) void wsl_event_encode_gaps(struct wsl_pack_state *ps,
                                                                       struct wsl_codec_state *st,
                                                                       const struct wsl_event *ev,
                                                                       struct wsl_gaps_out *o)
{
    const uint64_t t = ev->t_start, t_end = ev->t_end, dur = t_end >= t ? t_end - t : 0;
    o->gap = wsl_put_varint(o->gap, wsl_zigzag((int64_t)(t - st->prev_t)));
    *o->dur_lo++ = (uint8_t)dur;
    o->dur_hi = wsl_put_varint(o->dur_hi, dur >> 8);
    st->prev_t = t + dur;
    wsl_pack_arguments(ps, st, ev, &o->op, &o->lit);
}

/* Appends the events [ev, end) to the EVENTS_GAPS columns as wsl_event_encode_gaps would one by one
 * (the same bytes), skipping those whose api is api_count or above. What every event reads and
 * writes (the previous end, the previous entry, the table's size, the column pointers) stays in
 * registers across the run: the columns are bytes, and a byte store may alias anything, so one
 * event at a time the compiler loads and stores them again around each store (docs/overhead.md,
 * "The writer, third pass": 7 to 9 instructions an event). */
static inline __attribute__((always_inline)) void wsl_encode_gaps_run(struct wsl_pack_state *ps,
                                                                     struct wsl_codec_state *st,
                                                                     const struct wsl_event *ev,
                                                                     const struct wsl_event *end,
                                                                     uint32_t api_count, struct wsl_gaps_out *o)
{
    uint8_t *op = o->op, *gap = o->gap, *lo = o->dur_lo, *hi = o->dur_hi;
    uint64_t prev_t = st->prev_t;
    unsigned prev = ps->prev, entries = ps->entries;
    for (; ev < end; ev++) {
        if (__builtin_expect(ev->api >= api_count, 0))
            continue;
        const uint64_t t = ev->t_start, t_end = ev->t_end, dur = t_end >= t ? t_end - t : 0;
        gap = wsl_put_varint(gap, wsl_zigzag((int64_t)(t - prev_t)));
        *lo++ = (uint8_t)dur;
        hi = wsl_put_varint(hi, dur >> 8);
        prev_t = t + dur;
        const unsigned k = wsl_pack_next(ps, prev);
        if (__builtin_expect(k < entries && wsl_pack_same(&ps->table[k], ev), 1)) {
            *op++ = (uint8_t)(k + 1);
            prev = k;
            continue;
        }
        ps->prev = (uint8_t)prev;
        wsl_pack_arguments_miss(ps, st, ev, prev, &op, &o->lit);
        prev = ps->prev;
        entries = ps->entries;
    }
    st->prev_t = prev_t;
    ps->prev = (uint8_t)prev;
    o->op = op;
    o->gap = gap;
    o->dur_lo = lo;
    o->dur_hi = hi;
}

/* Splits the encoded bytes of an EVENTS_GAPS chunk as wsl_packed_open does an
 * EVENTS_PACKED chunk's (dt: the gap column, dur: dur_hi, dur_lo set). */
static inline enum wsl_columns_status wsl_gaps_open(struct wsl_packed_in *in, const uint8_t *p, size_t size,
                                                    uint32_t count)
{
    return wsl_pack_columns_open(in, p, size, count, 1);
}

/* Decodes the next EVENTS_GAPS event (the reference decoder, as
 * wsl_event_decode_packed). Returns 0 on malformed input. */
static inline int wsl_event_decode_gaps(struct wsl_pack_state *ps, struct wsl_codec_state *st,
                                        struct wsl_packed_in *in, uint32_t api_limit, struct wsl_event *ev)
{
    uint64_t gap, hi;
    unsigned op;
    if (!wsl_packed_next(in, &op, &gap, &hi) || hi >> 56)
        return 0;
    const uint64_t dur = hi << 8 | *in->dur_lo++;
    if (!wsl_unpack_arguments(ps, st, in, op, api_limit, ev))
        return 0;
    ev->t_start = st->prev_t + (uint64_t)wsl_unzigzag(gap);
    ev->t_end = ev->t_start + dur;
    st->prev_t = ev->t_end;
    return 1;
}

/* ---- EVENTS_BITS payload (1.10) --------------------------------------------------
 * The header, ops and literals of EVENTS_PACKED; the times (EVENTS_GAPS' gap and
 * duration) coded by the writer as bits, which zstd then stores as they are:
 *
 *   u32 bit_bytes, u32 literals                   column directory (32 bytes in all)
 *   i64 gap_center, u64 dur_center
 *   u8 gap_k, u8 gap_shift, u8 dur_k, u8 dur_shift, u8 gap_q, u8 dur_q, u16 0 (reserved)
 *   op column      `count` bytes, as in EVENTS_PACKED
 *   bit column     bit_bytes bytes: for each event its gap's code, then its duration's,
 *                  least significant bit first; the last byte's unused bits are 0
 *   literal column the rest, `literals` of them, as in EVENTS_PACKED
 *
 * gap: t_start - the previous event's end (base_ticks for the first), as a 64-bit two's
 * complement value; duration: t_end - t_start (0 when negative); an event's end is its
 * t_start + duration (as EVENTS_GAPS). A column's value v is coded as
 * r = zigzag((int64)(v - center) >> shift), where v - center has its low `shift` bits 0
 * (the writer picks shift so: a clock may tick by 2 or more); decoded,
 * v = center + (unzigzag(r) << shift), modulo 2^64. r is written with the column's k and
 * q (Q below), least significant bit first, as the low k bits of r and then its quotient
 * u = r >> k: a Rice code while u is under Q, an Exp-Golomb code beyond (Q = 0: an
 * Exp-Golomb code of order k; a large Q: a Rice code):
 *
 *   u < Q:          u zero bits, a one bit
 *   else y = u - Q + 1 < 2^32, nb = floor(log2(y)): Q + nb zero bits, a one bit, the
 *                   low nb bits of y
 *   else (escape):  Q + 32 zero bits, a one bit, the 64 bits of r (its low k bits again)
 *
 * The writer picks each column's center (a median of up to 64 of the chunk's values),
 * shift (the zero low bits all its values share), k and Q (the cheapest over the same
 * sample: Rice codes where the times are alike, as a launch loop's, Exp-Golomb where
 * they spread over orders of magnitude, as file calls') when it closes the chunk. A duration's or a gap's noise at the clock's
 * resolution is then a few bits an event that zstd need neither search for matches
 * nor Huffman-code (issue 26; docs/overhead.md, "The writer, fourth pass"). Malformed,
 * besides EVENTS_PACKED's rules: k > 32, Q > 32, shift > 63, a reserved bit set (all but
 * WSL_TBITS_CONTINUES), a code with more than Q + 32 zero bits after its low k bits, codes
 * that run past the bit column or end before its last byte.
 *
 * Carried tables (1.13): the directory's last u16 holds WSL_TBITS_CONTINUES where the chunk's
 * table of argument sets is not empty at its start but the one the last EVENTS_BITS chunk of the
 * same zstd frame in the same slot (tid % WSL_TBITS_SLOTS) ended with, which must be of the same
 * tid; its literals are appended to it while it has room. A program's threads take turns in the
 * file, a few dozen events at a time, and each turn wrote its kernels' sets as literals again
 * (docs/overhead.md, "Carried tables"). Each chunk's literals still XOR against the previous
 * literal of their api in that chunk alone. A chunk that claims a table its slot does not hold in
 * this frame is malformed. */
#define WSL_TBITS_DIRECTORY_SIZE 32u
#define WSL_TBITS_CONTINUES 1u /* wsl_tbits_dir.reserved: the table continues its slot's (1.13) */
#define WSL_TBITS_SLOTS 16u    /* a thread's slot: tid % WSL_TBITS_SLOTS */
#define WSL_TBITS_K_MAX 32u
#define WSL_TBITS_Q_MAX 32u
#define WSL_TBITS_SAMPLE 64u /* the writer's sample of a column for its center and k */
#define WSL_COL_TBITS_MAX 40u /* bytes of the bit column an event may take: two escapes of k + q + 97 bits,
                                 k <= 31 where a value can escape (r >= 2^(k + 32)), q <= 32: 2 x 160 bits */

struct wsl_tbits_dir {
    uint32_t bit_bytes;
    uint32_t literals;
    int64_t gap_center;
    uint64_t dur_center;
    uint8_t gap_k, gap_shift, dur_k, dur_shift;
    uint8_t gap_q, dur_q;
    uint16_t reserved;
};
_Static_assert(sizeof(struct wsl_tbits_dir) == WSL_TBITS_DIRECTORY_SIZE, "the directory is 32 bytes");

/* The writer's open chunk: ops and literals as EVENTS_PACKED, the times kept whole until the chunk
 * closes (its parameters come from all of them). */
struct wsl_tbits_out {
    uint8_t *op, *lit;
    uint64_t *times; /* each event's gap (as uint64) and duration, one after the other */
};

/* Appends the events [ev, end) as wsl_encode_gaps_run does (the same ops and literals, the same
 * gaps and durations), the times into the times array (gap, duration), skipping those whose api is
 * api_count or above (api_count at most WSL_MAX_API_IDS, the same for every run of a chunk: a set
 * of the table then has an api under it). st->prev_t: the previous event's end. */
typedef int (*wsl_pack_same_fn)(const struct wsl_event *a, const struct wsl_event *b);

/* wsl_encode_tbits_run with the successor check's compare `same` (a constant: inlined). */
static inline __attribute__((always_inline)) void wsl_encode_tbits_run_with(struct wsl_pack_state *ps,
                                                                           struct wsl_codec_state *st,
                                                                           const struct wsl_event *ev,
                                                                           const struct wsl_event *end,
                                                                           uint32_t api_count,
                                                                           struct wsl_tbits_out *o,
                                                                           wsl_pack_same_fn same)
{
    uint8_t *op = o->op;
    uint64_t *times = o->times;
    uint64_t prev_t = st->prev_t;
    const char *const table = (const char *)ps->table;
    uint64_t at = (uint64_t)ps->prev * sizeof(struct wsl_event); /* the previous event's entry, in bytes */
    for (; ev < end; ev++) {
        /* the successor check first, by byte offsets (no index to scale; the op is the entry's flags):
           a set of the table has an api under api_count (the api is checked where the set is not the
           successor, before the event is taken); an entry past `entries` (WSL_PACK_NO_API) or "none"
           matches no event */
        const uint64_t next = ((const struct wsl_event *)(table + at))->t_start;
        const struct wsl_event *const e = (const struct wsl_event *)(table + next);
        if (__builtin_expect(same(e, ev), 1)) {
            *op++ = (uint8_t)e->flags;
            at = next;
        } else {
            if (__builtin_expect(ev->api >= api_count, 0))
                continue;
            const unsigned prev = (unsigned)(at / sizeof(struct wsl_event));
            ps->prev = (uint8_t)prev;
            wsl_pack_arguments_miss(ps, st, ev, prev, &op, &o->lit);
            at = (uint64_t)ps->prev * sizeof(struct wsl_event);
        }
        const uint64_t t = ev->t_start, t_end = ev->t_end, dur = t_end >= t ? t_end - t : 0;
        times[0] = t - prev_t; /* one pointer for both: a register less in a loop that spills */
        times[1] = dur;
        times += 2;
        prev_t = t + dur;
    }
    st->prev_t = prev_t;
    ps->prev = (uint8_t)(at / sizeof(struct wsl_event));
    o->op = op;
    o->times = times;
}

static inline __attribute__((always_inline)) void wsl_encode_tbits_run(struct wsl_pack_state *ps,
                                                                      struct wsl_codec_state *st,
                                                                      const struct wsl_event *ev,
                                                                      const struct wsl_event *end,
                                                                      uint32_t api_count, struct wsl_tbits_out *o)
{
    wsl_encode_tbits_run_with(ps, st, ev, end, api_count, o, wsl_pack_same);
}

/* The k-th smallest of v[0..n) (k < n), v reordered (Hoare's partition: equal values, common in a
 * column of times, keep it linear). */
static inline int64_t wsl_tbits_select(int64_t *v, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int64_t pivot = v[k];
        int i = lo, j = hi;
        do {
            while (v[i] < pivot)
                i++;
            while (pivot < v[j])
                j--;
            if (i <= j) {
                const int64_t x = v[i];
                v[i++] = v[j];
                v[j--] = x;
            }
        } while (i <= j);
        if (j < k)
            lo = i;
        if (k < i)
            hi = j;
    }
    return v[k];
}

/* Bits of r's code with parameters k and q. */
static inline unsigned wsl_tb_bits(uint64_t r, unsigned k, unsigned q)
{
    const uint64_t u = r >> k;
    if (u < q)
        return k + (unsigned)u + 1;
    const uint64_t y = u - q + 1;
    if (y - 1 >= 0xffffffffu) /* y >= 2^32, or 2^64 wrapped to 0 (q = 0, u = 2^64 - 1): an escape */
        return k + q + 97;
    const unsigned nb = 63 ^ (unsigned)__builtin_clzll(y);
    return k + q + 2 * nb + 1;
}

/* The sample's bits with parameters k and q (the straightforward sum, one code at a time). */
static inline uint64_t wsl_tb_cost(const int64_t *s, unsigned m, unsigned k, unsigned q)
{
    uint64_t cost = 0;
    for (unsigned i = 0; i < m; i++)
        cost += wsl_tb_bits((uint64_t)s[i], k, q);
    return cost;
}

/* A cost function: wsl_tb_cost or one that returns the same for every sample (s padded with zeros to
 * a multiple of 8 values, as wsl_tbits_params_with leaves it). */
typedef uint64_t (*wsl_tb_cost_fn)(const int64_t *s, unsigned m, unsigned k, unsigned q);

/* The sample's bits with q 1 from count[L], its residuals of bit length L (0..hi): a residual of bit
 * length L <= k takes k + 1 bits (u = 0); else u >= 1, y = u, nb = L - k - 1: 2 L - k bits, or
 * k + 98 where y escapes (L - k > 32). The sum wsl_tb_cost makes, in a step per bit length. */
static inline uint64_t wsl_tb_cost_q1(const uint8_t *count, unsigned hi, unsigned k)
{
    uint64_t cost = 0;
    for (unsigned len = 0; len <= hi; len++)
        cost += count[len] * (uint64_t)(len <= k ? k + 1 : len - k <= 32 ? 2 * len - k : k + 98);
    return cost;
}

/* The k, from *k on, that makes the sample cheapest with q (a neighbour while it is cheaper);
 * returns its cost. count: as wsl_tb_cost_q1's, for q 1 (NULL: cost_fn for every q). */
static inline __attribute__((always_inline)) uint64_t wsl_tb_best_k_with(const int64_t *s, unsigned m, unsigned *k,
                                                                         unsigned q, wsl_tb_cost_fn cost_fn,
                                                                         const uint8_t *count, unsigned hi)
{
#define WSL_TB_COST(k_) (count && q == 1 ? wsl_tb_cost_q1(count, hi, (k_)) : cost_fn(s, m, (k_), q))
    uint64_t cost_k = WSL_TB_COST(*k);
    const unsigned k0 = *k;
    for (int dir = -1; dir <= 1; dir += 2)
        for (;;) {
            const unsigned k2 = *k + (unsigned)dir;
            if ((dir < 0 && *k == 0) || k2 > WSL_TBITS_K_MAX || (dir > 0 && *k < k0))
                break; /* (up from a k below k0: its neighbour above cost more, it was left for it) */
            const uint64_t cost = WSL_TB_COST(k2);
            if (cost >= cost_k)
                break;
            *k = k2;
            cost_k = cost;
        }
#undef WSL_TB_COST
    return cost_k;
}

/* wsl_tbits_params with the cost function cost_fn (a constant: inlined). */
static inline __attribute__((always_inline)) void wsl_tbits_params_with(const uint64_t *v, unsigned n, uint64_t v_or,
                                                                        uint64_t *center, uint8_t *k_out,
                                                                        uint8_t *shift_out, uint8_t *q_out,
                                                                        wsl_tb_cost_fn cost_fn)
{
    const unsigned shift = v_or ? (unsigned)__builtin_ctzll(v_or) : 0;
    int64_t s[WSL_TBITS_SAMPLE] __attribute__((aligned(32)));
    const unsigned stride = (n + WSL_TBITS_SAMPLE - 1) / WSL_TBITS_SAMPLE, m = (n + stride - 1) / stride;
    for (unsigned i = 0; i < m; i++, v += 2 * stride)
        s[i] = (int64_t)*v;
    for (unsigned i = m; i & 7; i++)
        s[i] = 0; /* the padding to 8 values (wsl_tb_cost_v3's steps): a 0 costs k + 1 bits with any q */
    const uint64_t c = (uint64_t)wsl_tbits_select(s, (int)m, (int)(m / 2)) & ~((1ull << shift) - 1);
    /* k from the bit length of the residuals' median (the m/2-th smallest as int64: those of 2^63 and
     * more first), found from the count of residuals of each bit length, not by a select; q: a Rice
     * code (16), an Exp-Golomb one (0) or between (4), each with its best k */
    uint8_t count[65] = {0};
    uint64_t r_or = 0;
    uint64_t floor_bits = m; /* sum of (bit length + 1): no code of a value takes fewer bits, with any k
                                and q (wsl_tb_bits: k + u + 1 or k + q + 2 nb + 1 >= k + bit length of
                                u + 1) */
    for (unsigned i = 0; i < m; i++) { /* (in the select's order: the costs and the median are the same) */
        const uint64_t r = wsl_zigzag((int64_t)((uint64_t)s[i] - c) >> shift);
        s[i] = (int64_t)r;
        const unsigned len = r ? 64 - (unsigned)__builtin_clzll(r) : 0;
        count[len]++;
        floor_bits += len;
        r_or |= r;
    }
    const unsigned hi = r_or ? 64 - (unsigned)__builtin_clzll(r_or) : 0; /* the longest residual's bit length */
    unsigned len = 0, upto = count[64] + count[0];
    if (count[64] > m / 2)
        len = 64;
    else
        while (upto <= m / 2)
            upto += count[++len];
    unsigned k = len ? len - 1 : 0, best_k, best_q = 16;
    k = k > WSL_TBITS_K_MAX ? WSL_TBITS_K_MAX : k;
    const uint64_t rice = wsl_tb_best_k_with(s, m, &k, 16, cost_fn, count, hi);
    uint64_t best = rice - rice / 16; /* a Rice code's loop is the writer's cheaper one: another q must
                                         save a sixteenth of the bits */
    best_k = k;
    static const unsigned qs[] = {4, 1, 0};
    /* (where no code of any k can save the sixteenth, the searches of q 4, 1 and 0 would change
       nothing: not made) */
    for (unsigned j = 0; j < sizeof qs / sizeof qs[0] && floor_bits < best; j++) {
        const uint64_t cost = wsl_tb_best_k_with(s, m, &k, qs[j], cost_fn, count, hi);
        if (cost < best) {
            best = cost;
            best_k = k;
            best_q = qs[j];
        }
    }
    *center = c;
    *k_out = (uint8_t)best_k;
    *shift_out = (uint8_t)shift;
    *q_out = (uint8_t)best_q;
}

/* A column's center, shift, k and q from a sample of its n values, v[0], v[2], ... (a column of the
 * times array: n >= 1; as uint64, the gaps' two's complement): v_or, all of them ORed. The costs one
 * code at a time, for any x86-64 (wsl_tbits_params_v3: in AVX2); both pick what the straightforward
 * search of the fifth pass picked (unit.tbits_params_agree; docs/overhead.md, "The writer, sixth
 * pass"). */
static __attribute__((noinline, unused)) void wsl_tbits_params(const uint64_t *v, unsigned n, uint64_t v_or,
                                                                uint64_t *center, uint8_t *k_out, uint8_t *shift_out,
                                                                uint8_t *q_out)
{
    wsl_tbits_params_with(v, n, v_or, center, k_out, shift_out, q_out, wsl_tb_cost);
}

typedef void (*wsl_tbits_params_fn)(const uint64_t *v, unsigned n, uint64_t v_or, uint64_t *center, uint8_t *k_out,
                                    uint8_t *shift_out, uint8_t *q_out);

/* Appends the low len bits of code (the rest 0; len <= 56) to the bits (acc, n < 8) at p; writes
 * 8 bytes at p. */
#define WSL_BITS_PUT(p, acc, n, code, len)                                                                             \
    do {                                                                                                               \
        (acc) |= (code) << (n);                                                                                        \
        (n) += (len);                                                                                                  \
        memcpy((p), &(acc), 8);                                                                                        \
        (p) += (n) >> 3;                                                                                               \
        (acc) >>= (n) & 56;                                                                                            \
        (n) &= 7;                                                                                                      \
    } while (0)

/* Where the bits stand between events: the next byte to write (its low `bits` bits written, the
 * rest 0). */
struct wsl_bits_at {
    uint8_t *p;
    unsigned bits;
};

/* Appends `zeros` zero bits and a one bit. */
#define WSL_BITS_ZEROS_ONE(p, acc, n, zeros)                                                                           \
    do {                                                                                                               \
        unsigned z_ = (zeros);                                                                                         \
        for (; z_ > 48; z_ -= 48)                                                                                      \
            WSL_BITS_PUT(p, acc, n, 0, 48);                                                                            \
        WSL_BITS_PUT(p, acc, n, 1ull << z_, z_ + 1);                                                                   \
    } while (0)

/* r's code with k and q appended at w, in puts of at most 56 bits (escapes included). */
static inline struct wsl_bits_at wsl_tb_put(struct wsl_bits_at w, uint64_t r, unsigned k, unsigned q)
{
    uint8_t *p = w.p;
    uint64_t a = *p;
    unsigned b = w.bits;
    WSL_BITS_PUT(p, a, b, r & ((1ull << k) - 1), k);
    const uint64_t u = r >> k;
    if (u < q)
        WSL_BITS_ZEROS_ONE(p, a, b, (unsigned)u);
    else {
        const uint64_t y = u - q + 1;
        if (y - 1 >= 0xffffffffu) { /* y >= 2^32 or wrapped to 0 (wsl_tb_bits) */
            WSL_BITS_ZEROS_ONE(p, a, b, q + 32);
            WSL_BITS_PUT(p, a, b, r & 0xffffffffu, 32);
            WSL_BITS_PUT(p, a, b, r >> 32, 32);
        } else {
            const unsigned nb = 63 ^ (unsigned)__builtin_clzll(y);
            WSL_BITS_ZEROS_ONE(p, a, b, q + nb);
            WSL_BITS_PUT(p, a, b, y & ((1ull << nb) - 1), nb);
        }
    }
    return (struct wsl_bits_at){p, b};
}

/* An event's two codes one after the other (wsl_tbits_write's less common case). */
static __attribute__((noinline, unused)) struct wsl_bits_at wsl_tb_put2(struct wsl_bits_at w, uint64_t rg,
                                                                       uint64_t rd, const struct wsl_tbits_dir *d)
{
    return wsl_tb_put(wsl_tb_put(w, rg, d->gap_k, d->gap_q), rd, d->dur_k, d->dur_q);
}

/* r's code with k and q (r < 2^32) as one value of *len bits (the caller checks *len <= 56): the
 * low k bits, then u = r >> k as u zeros and a one (u < q) or as q + nb zeros, a one and the low
 * nb bits of y = u - q + 1; no branch. */
static inline __attribute__((always_inline)) uint64_t wsl_tb_code(uint64_t r, unsigned k, uint64_t m, unsigned q,
                                                                  unsigned *len)
{
    const uint64_t u = r >> k;
    const int rice = u < q;
    const uint64_t y = rice ? 1 : u - q + 1;
    const unsigned nb = 63 ^ (unsigned)__builtin_clzll(y), zeros = rice ? (unsigned)u : q + nb;
    const unsigned one = k + zeros; /* the one bit's place */
    *len = one + 1 + nb;
    if (__builtin_expect(*len > 56, 0))
        return 0; /* the caller puts it otherwise (and a shift of 64 or more is undefined) */
    return (r & m) | 1ull << one | (y ^ 1ull << nb) << (one + 1);
}

/* The column's code of r with k and q (a Rice code: q >= 16, u = r >> k under 16, the caller checks;
 * else r < 2^32, wsl_tb_code) and its length (0: the caller puts it otherwise). */
static inline __attribute__((always_inline)) uint64_t wsl_tb_code_col(uint64_t r, unsigned k, uint64_t m, unsigned q,
                                                                      unsigned *len, const int rice)
{
    if (rice) {
        const uint64_t u = r >> k;
        *len = u < 16 ? k + (unsigned)u + 1 : 0;
        return u < 16 ? (r & m) | 1ull << (k + u) : 0;
    }
    if (r >> 32) {
        *len = 0;
        return 0;
    }
    const uint64_t c = wsl_tb_code(r, k, m, q, len);
    *len = *len <= 56 ? *len : 0;
    return c;
}

/* wsl_tbits_write's loop past its first byte, each column's code Rice (g_rice, d_rice: q >= 16)
 * or general; the two codes one put when they take 56 bits or less. */
static inline __attribute__((always_inline)) struct wsl_bits_at wsl_tbits_write_mixed(uint8_t *p,
                                                                                     const uint64_t *times,
                                                                                     unsigned n,
                                                                                     const struct wsl_tbits_dir *d,
                                                                                     const int g_rice,
                                                                                     const int d_rice)
{
    uint64_t acc = 0;
    unsigned bits = 0;
    const uint64_t gc = (uint64_t)d->gap_center, dc = d->dur_center;
    const unsigned gk = d->gap_k, gs = d->gap_shift, dk = d->dur_k, ds = d->dur_shift, gq = d->gap_q, dq = d->dur_q;
    const uint64_t gm = (1ull << gk) - 1, dm = (1ull << dk) - 1;
    for (const uint64_t *t = times, *const end = times + 2 * (size_t)n; t < end; t += 2) {
        const uint64_t rg = wsl_zigzag((int64_t)(t[0] - gc) >> gs);
        const uint64_t rd = wsl_zigzag((int64_t)(t[1] - dc) >> ds);
        unsigned lg, ld;
        const uint64_t cg = wsl_tb_code_col(rg, gk, gm, gq, &lg, g_rice);
        const uint64_t cd = wsl_tb_code_col(rd, dk, dm, dq, &ld, d_rice);
        if (__builtin_expect(lg && ld && lg + ld <= 56, 1)) {
            WSL_BITS_PUT(p, acc, bits, cg | cd << lg, lg + ld);
            continue;
        }
        const struct wsl_bits_at w = wsl_tb_put2((struct wsl_bits_at){p, bits}, rg, rd, d);
        p = w.p;
        bits = w.bits;
        acc = *p;
    }
    return (struct wsl_bits_at){p, bits};
}

/* The bit column of n events' gaps and durations (times: gap, duration, gap, ...) at out (room for
 * n * WSL_COL_TBITS_MAX + 8 bytes); returns its bytes. The common event (both values under 2^32, the two codes 56 bits or less) is
 * one put with the bits kept in registers. */
static inline __attribute__((always_inline)) size_t wsl_tbits_write(uint8_t *out, const uint64_t *times,
                                                                     unsigned n,
                                                                     const struct wsl_tbits_dir *d)
{
    uint8_t *p = out;
    uint64_t acc = 0;
    unsigned bits = 0;
    *out = 0; /* the bits so far, for wsl_tb_put */
    const uint64_t gc = (uint64_t)d->gap_center, dc = d->dur_center;
    const unsigned gk = d->gap_k, gs = d->gap_shift, dk = d->dur_k, ds = d->dur_shift, gq = d->gap_q, dq = d->dur_q;
    const uint64_t gm = (1ull << gk) - 1, dm = (1ull << dk) - 1;
    if (gq >= 16 && dq >= 16 && gk + dk + 34 <= 56) {
        /* Rice codes (a launch loop's times): the quotients under 16 in one put, no Exp-Golomb part
         * to compute (23 instructions an event fewer on bench_hook's mix) */
        for (const uint64_t *t = times, *const end = times + 2 * (size_t)n; t < end; t += 2) {
            const uint64_t rg = wsl_zigzag((int64_t)(t[0] - gc) >> gs);
            const uint64_t rd = wsl_zigzag((int64_t)(t[1] - dc) >> ds);
            const uint64_t ug = rg >> gk, ud = rd >> dk;
            if (__builtin_expect((ug | ud) < 16, 1)) {
                const unsigned lg = gk + (unsigned)ug + 1;
                const uint64_t code = ((rd & dm) | 1ull << (dk + ud)) << lg | (rg & gm) | 1ull << (gk + ug);
                WSL_BITS_PUT(p, acc, bits, code, lg + dk + (unsigned)ud + 1);
                continue;
            }
            const struct wsl_bits_at w = wsl_tb_put2((struct wsl_bits_at){p, bits}, rg, rd, d);
            p = w.p;
            bits = w.bits;
            acc = *p;
        }
        return (size_t)(p - out) + (bits != 0);
    }
    /* a column with q >= 16 takes the Rice code alone (its quotient under 16), the other the general
       one (7 instructions an event fewer than both general, on plain launches: a Rice duration and an
       Exp-Golomb gap) */
    const struct wsl_bits_at w =
        gq >= 16 ? (dq >= 16 ? wsl_tbits_write_mixed(p, times, n, d, 1, 1) : wsl_tbits_write_mixed(p, times, n, d, 1, 0))
                 : dq >= 16 ? wsl_tbits_write_mixed(p, times, n, d, 0, 1) : wsl_tbits_write_mixed(p, times, n, d, 0, 0);
    return (size_t)(w.p - out) + (w.bits != 0);
}

typedef size_t (*wsl_tbits_write_fn)(uint8_t *out, const uint64_t *times, unsigned n, const struct wsl_tbits_dir *d);

/* The n events' gaps ORed into *gap_or and their durations into *dur_or (their common zero low bits:
 * each column's shift), for any x86-64. */
static inline __attribute__((always_inline)) void wsl_tbits_or(const uint64_t *times, unsigned n, uint64_t *gap_or,
                                                              uint64_t *dur_or)
{
    uint64_t g = 0, d = 0;
    for (const uint64_t *t = times, *const end = times + 2 * (size_t)n; t < end; t += 2) {
        g |= t[0];
        d |= t[1];
    }
    *gap_or = g;
    *dur_or = d;
}
typedef void (*wsl_tbits_or_fn)(const uint64_t *times, unsigned n, uint64_t *gap_or, uint64_t *dur_or);

/* wsl_tbits_close with the parameters' search `params`, the bits' loop `write` and the columns' OR
 * `or_fn` (constants: inlined). */
static inline __attribute__((always_inline)) size_t wsl_tbits_close_with(struct wsl_tbits_dir *d, uint8_t *out,
                                                                          const uint64_t *times, unsigned n,
                                                                          wsl_tbits_params_fn params,
                                                                          wsl_tbits_write_fn write,
                                                                          wsl_tbits_or_fn or_fn)
{
    uint64_t gc = 0, dc = 0, gap_or, dur_or;
    d->gap_k = d->gap_shift = d->dur_k = d->dur_shift = d->gap_q = d->dur_q = 0;
    d->reserved = 0;
    if (n) {
        or_fn(times, n, &gap_or, &dur_or);
        params(times, n, gap_or, &gc, &d->gap_k, &d->gap_shift, &d->gap_q);
        params(times + 1, n, dur_or, &dc, &d->dur_k, &d->dur_shift, &d->dur_q);
    }
    d->gap_center = (int64_t)gc;
    d->dur_center = dc;
    return d->bit_bytes = (uint32_t)write(out, times, n, d);
}

/* Fills d's parameters for the n events' times (gap, duration, gap, ...) and writes their bit column
 * at out; returns its bytes (d->literals is the caller's). */
static inline __attribute__((always_inline)) size_t wsl_tbits_close(struct wsl_tbits_dir *d, uint8_t *out,
                                                                     const uint64_t *times, unsigned n)
{
    return wsl_tbits_close_with(d, out, times, n, wsl_tbits_params, wsl_tbits_write, wsl_tbits_or);
}

/* ---- The writer's two loops, compiled twice ------------------------------------------
 * The events' run (wsl_encode_tbits_run) and a chunk's close (wsl_tbits_close), as functions
 * for any x86-64 and for x86-64-v3 (AVX2, BMI1, BMI2: shifts by a register other than cl,
 * shlx/shrx, no moves to cl; loads folded into VEX operations, ptest), the same bytes; the writer
 * picks one at start (wsl_tbits_coder_pick; docs/overhead.md, "The writer, fifth pass"). */
typedef void (*wsl_tbits_run_fn)(struct wsl_pack_state *ps, struct wsl_codec_state *st, const struct wsl_event *ev,
                                 const struct wsl_event *end, struct wsl_tbits_out *o);
typedef size_t (*wsl_tbits_close_fn)(struct wsl_tbits_dir *d, uint8_t *out, const uint64_t *times, unsigned n);
struct wsl_tbits_coder {
    wsl_tbits_run_fn run;     /* wsl_encode_tbits_run, api_count WSL_MAX_API_IDS (a constant: the caller
                                 passes the ids of its table only) */
    wsl_tbits_close_fn close; /* wsl_tbits_close */
    wsl_tbits_write_fn write; /* wsl_tbits_write (its loop, which close inlines: for the tests) */
    const char *name;         /* "x86-64-v3" or "base" */
};

static __attribute__((noinline, unused)) void wsl_tbits_run_base(struct wsl_pack_state *ps,
                                                                struct wsl_codec_state *st,
                                                                const struct wsl_event *ev,
                                                                const struct wsl_event *end,
                                                                struct wsl_tbits_out *o)
{
    wsl_encode_tbits_run(ps, st, ev, end, WSL_MAX_API_IDS, o);
}

static __attribute__((noinline, unused)) size_t wsl_tbits_close_base(struct wsl_tbits_dir *d, uint8_t *out,
                                                                    const uint64_t *times, unsigned n)
{
    return wsl_tbits_close(d, out, times, n);
}

static __attribute__((noinline, unused)) size_t wsl_tbits_write_base(uint8_t *out, const uint64_t *times, unsigned n,
                                                                    const struct wsl_tbits_dir *d)
{
    return wsl_tbits_write(out, times, n, d);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WSL_TBITS_V3 1
#define WSL_TARGET_V3 __attribute__((target("avx2,bmi,bmi2")))
#include <immintrin.h>
/* wsl_pack_same in two 32-byte compares and a ptest: bytes 16..47 (api, flags masked out, result,
 * stream, a[0], a[1]) and 32..63 (a[0..3]), 8 instructions where the 16-byte one takes 13. */
static inline __attribute__((always_inline)) WSL_TARGET_V3 int wsl_pack_same_v3(const struct wsl_event *a,
                                                                               const struct wsl_event *b)
{
    typedef long long wsl_i64x4 __attribute__((vector_size(32)));
    const char *pa = (const char *)a + offsetof(struct wsl_event, api);
    const char *pb = (const char *)b + offsetof(struct wsl_event, api);
    wsl_i64x4 a0, a1, b0, b1;
    memcpy(&a0, pa, 32);
    memcpy(&a1, pa + 16, 32);
    memcpy(&b0, pb, 32);
    memcpy(&b1, pb + 16, 32);
    const wsl_i64x4 no_flags = {(long long)~0xffff0000ull, -1, -1, -1};
    const wsl_i64x4 d = ((a0 ^ b0) & no_flags) | (a1 ^ b1);
    return __builtin_ia32_ptestz256(d, d);
}

static __attribute__((noinline, unused)) WSL_TARGET_V3 void wsl_tbits_run_v3(struct wsl_pack_state *ps,
                                                                            struct wsl_codec_state *st,
                                                                            const struct wsl_event *ev,
                                                                            const struct wsl_event *end,
                                                                            struct wsl_tbits_out *o)
{
    wsl_encode_tbits_run_with(ps, st, ev, end, WSL_MAX_API_IDS, o, wsl_pack_same_v3);
}

/* wsl_tb_cost_v3's sum over the sample, eight values a step (s padded with zeros to a multiple of 8):
 * per value, u = r >> k; u < q: u; else y = u - q + 1: 96 + q where y escapes (>= 2^32), else
 * q + 2 nb with nb = floor(log2(y)), the exponent of y as a double (y < 2^32 is exact: y's low 32
 * bits ORed into 2^52's mantissa, less 2^52; never a value that is not a number, never rounded,
 * whatever the FP environment). The compares are signed: u < 2^63 where k > 0; top (k = 0) takes
 * the values of 2^63 or more (u as large) as escapes. */
static inline __attribute__((always_inline)) WSL_TARGET_V3 uint64_t wsl_tb_sum_v3(const int64_t *s, unsigned m,
                                                                                  unsigned k, unsigned q,
                                                                                  const int top)
{
    typedef long long wsl_s64x4 __attribute__((vector_size(32)));
    typedef unsigned long long wsl_u64x4 __attribute__((vector_size(32)));
    typedef double wsl_f64x4 __attribute__((vector_size(32)));
    typedef char wsl_c32 __attribute__((vector_size(32)));
    const long long two52 = 0x4330000000000000ll; /* 2^52 as a double */
    const long long qm1 = (long long)q - 1, eg0 = (long long)q - 2046, esc = q + 96ll, lim = (1ll << 32) + q - 2;
    const wsl_s64x4 magic = {two52, two52, two52, two52}, low32 = {0xffffffffll, 0xffffffffll, 0xffffffffll,
                                                                    0xffffffffll};
    const wsl_f64x4 magic_d = {0x1p52, 0x1p52, 0x1p52, 0x1p52};
    const wsl_s64x4 qm1v = {qm1, qm1, qm1, qm1}, eg0v = {eg0, eg0, eg0, eg0},
                    escv = {esc, esc, esc, esc}, limv = {lim, lim, lim, lim}, zero = {0, 0, 0, 0};
    wsl_s64x4 acc0 = zero, acc1 = zero;
#define WSL_TB_SUM_STEP(acc, i)                                                                                        \
    do {                                                                                                               \
        wsl_s64x4 r_;                                                                                                  \
        memcpy(&r_, s + (i), sizeof r_);                                                                               \
        const wsl_s64x4 u_ = (wsl_s64x4)((unsigned long long __attribute__((vector_size(32))))r_ >> k);                \
        wsl_s64x4 coded_ = u_ > qm1v, esc_ = u_ > limv; /* coded_: u >= q, not a Rice code */                     \
        if (top) {                                                                                                     \
            esc_ |= u_ < zero;                                                                                         \
            coded_ |= u_ < zero;                                                                                       \
        }                                                                                                              \
        /* (unsigned: u of 2^63 - 1 less q - 1 = -1 wraps, an escape masked below; signed it would overflow) */     \
        const wsl_s64x4 y_ = (wsl_s64x4)((wsl_u64x4)u_ - (wsl_u64x4)qm1v);                                          \
        const wsl_f64x4 d_ = (wsl_f64x4)((y_ & low32) | magic) - magic_d;                                              \
        const wsl_s64x4 e_ = (wsl_s64x4)((unsigned long long __attribute__((vector_size(32))))d_ >> 52);               \
        const wsl_s64x4 eg_ = e_ + e_ + eg0v; /* q + 2 nb */                                                           \
        const wsl_s64x4 t_ = (wsl_s64x4)__builtin_ia32_pblendvb256((wsl_c32)eg_, (wsl_c32)escv, (wsl_c32)esc_);        \
        acc += (wsl_s64x4)__builtin_ia32_pblendvb256((wsl_c32)u_, (wsl_c32)t_, (wsl_c32)coded_);                       \
    } while (0)
    for (unsigned i = 0; i < m; i += 8) {
        WSL_TB_SUM_STEP(acc0, i);
        WSL_TB_SUM_STEP(acc1, i + 4);
    }
#undef WSL_TB_SUM_STEP
    acc0 += acc1;
    return (uint64_t)(acc0[0] + acc0[1] + acc0[2] + acc0[3]);
}

/* wsl_tb_cost in AVX2 (s padded with zeros to a multiple of 8 values: a zero's code, u = 0, costs
 * k + 1 bits with any q, the m (k + 1) added here): the same sum. */
static inline __attribute__((always_inline)) WSL_TARGET_V3 uint64_t wsl_tb_cost_v3(const int64_t *s, unsigned m,
                                                                                  unsigned k, unsigned q)
{
    return (uint64_t)m * (k + 1) + (k ? wsl_tb_sum_v3(s, m, k, q, 0) : wsl_tb_sum_v3(s, m, 0, q, 1));
}

/* wsl_tbits_params with wsl_tb_cost_v3: the same center, shift, k and q. */
static __attribute__((noinline, unused)) WSL_TARGET_V3 void wsl_tbits_params_v3(const uint64_t *v, unsigned n,
                                                                               uint64_t v_or, uint64_t *center,
                                                                               uint8_t *k_out, uint8_t *shift_out,
                                                                               uint8_t *q_out)
{
    wsl_tbits_params_with(v, n, v_or, center, k_out, shift_out, q_out, wsl_tb_cost_v3);
}

/* wsl_tbits_write in AVX2: the codes of two events a step (gap, duration, gap, duration in the four
 * lanes), then one put an event with the bits in registers. Per lane, the residual
 * r = zigzag((v - center) >> shift) as ((x ^ s) >> shift << 1) - s, x = v - center, s its sign
 * (-1 or 0: AVX2 has no 64-bit arithmetic shift); u = r >> k; the code of wsl_tb_code (the low k bits,
 * u zeros and a one where u < q, else q + nb zeros, a one and y's low nb bits, y = u - q + 1, nb its
 * bit length less one, as wsl_tb_sum_v3 takes it from y as a double). An event whose residuals are
 * 2^31 or more (all_rice: a quotient of 16 or more), or whose two codes take more than 56 bits, gets
 * length 0 and is put by wsl_tb_put2, as wsl_tbits_write puts it: the same bits. all_rice (both
 * q >= 16: Rice codes, u under 16 or wsl_tb_put2) leaves out the Exp-Golomb part. The step's two
 * puts follow in the same loop (docs/overhead.md, "The writer, seventh pass"). */
static inline __attribute__((always_inline)) WSL_TARGET_V3 struct wsl_bits_at
wsl_tbits_vec_loop_v3(struct wsl_bits_at w, const uint64_t *times, unsigned n, const struct wsl_tbits_dir *d,
                      const int all_rice)
{
    const __m256i center = _mm256_setr_epi64x(d->gap_center, (long long)d->dur_center, d->gap_center,
                                              (long long)d->dur_center);
    const __m256i shift = _mm256_setr_epi64x(d->gap_shift, d->dur_shift, d->gap_shift, d->dur_shift);
    const __m256i k = _mm256_setr_epi64x(d->gap_k, d->dur_k, d->gap_k, d->dur_k);
    const __m256i mask = _mm256_sub_epi64(_mm256_sllv_epi64(_mm256_set1_epi64x(1), k), _mm256_set1_epi64x(1));
    const __m256i q = _mm256_setr_epi64x(d->gap_q, d->dur_q, d->gap_q, d->dur_q);
    const __m256i qm1 = _mm256_sub_epi64(q, _mm256_set1_epi64x(1));
    const __m256i one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256();
    const __m256i k4 = _mm256_add_epi64(k, _mm256_set1_epi64x(4)), len_max = _mm256_set1_epi64x(57);
    const __m256i dur_lanes = _mm256_setr_epi64x(0, -1, 0, -1);
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000ll); /* 2^52 as a double */
    const __m256d magic_d = _mm256_set1_pd(0x1p52);
    const __m256i bias = _mm256_set1_epi64x(1023);
    uint8_t *p = w.p;
    unsigned bits = w.bits;
    uint64_t acc = *p;
    for (const uint64_t *t = times, *const end = times + 2 * (size_t)n; t < end; t += 4) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)t);
        const __m256i x = _mm256_sub_epi64(v, center);
        const __m256i s = _mm256_cmpgt_epi64(zero, x);
        const __m256i r = _mm256_sub_epi64(_mm256_slli_epi64(_mm256_srlv_epi64(_mm256_xor_si256(x, s), shift), 1), s);
        const __m256i u = _mm256_srlv_epi64(r, k);
        __m256i code, len, good;
        if (all_rice) {
            good = _mm256_cmpeq_epi64(_mm256_srlv_epi64(r, k4), zero); /* u < 16 (unsigned) */
            const __m256i at = _mm256_add_epi64(k, u); /* the one bit's place */
            code = (r & mask) | _mm256_sllv_epi64(one, at);
            len = _mm256_add_epi64(at, one);
        } else {
            good = _mm256_cmpeq_epi64(_mm256_srli_epi64(r, 31), zero);
            const __m256i rice = _mm256_cmpgt_epi64(q, u); /* u < q (u < 2^31 where not bad) */
            const __m256i y = _mm256_blendv_epi8(_mm256_sub_epi64(u, qm1), one, rice);
            const __m256d yd = _mm256_sub_pd(_mm256_castsi256_pd(y | magic), magic_d);
            const __m256i nb = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(yd), 52), bias);
            const __m256i zeros = _mm256_blendv_epi8(_mm256_add_epi64(q, nb), u, rice);
            const __m256i at = _mm256_add_epi64(k, zeros), at1 = _mm256_add_epi64(at, one);
            code = (r & mask) | _mm256_sllv_epi64(one, at) |
                   _mm256_sllv_epi64(_mm256_xor_si256(y, _mm256_sllv_epi64(one, nb)), at1);
            len = _mm256_add_epi64(at1, nb);
        }
        /* the duration's code after the gap's: lanes 0 and 2 hold the events' codes and lengths */
        const __m256i len_sw = _mm256_shuffle_epi32(len, 0x4e);
        const __m256i c2 = _mm256_sllv_epi64(code, len_sw & dur_lanes);
        const __m256i ev_code = c2 | _mm256_shuffle_epi32(c2, 0x4e);
        const __m256i ev_len = _mm256_add_epi64(len, len_sw);
        good = good & _mm256_shuffle_epi32(good, 0x4e) & _mm256_cmpgt_epi64(len_max, ev_len);
        /* code, length, code, length of the two events */
        uint64_t two[4] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)two, _mm256_unpacklo_epi64(ev_code, good & ev_len));
#define WSL_TBITS_VEC_PUT(e)                                                                                           \
    do {                                                                                                               \
        const unsigned l_ = (unsigned)two[2 * (e) + 1];                                                                \
        if (__builtin_expect(l_ != 0, 1)) {                                                                            \
            WSL_BITS_PUT(p, acc, bits, two[2 * (e)], l_);                                                              \
        } else {                                                                                                       \
            const uint64_t rg_ = wsl_zigzag((int64_t)(t[2 * (e)] - (uint64_t)d->gap_center) >> d->gap_shift);         \
            const uint64_t rd_ = wsl_zigzag((int64_t)(t[2 * (e) + 1] - d->dur_center) >> d->dur_shift);               \
            const struct wsl_bits_at b_ = wsl_tb_put2((struct wsl_bits_at){p, bits}, rg_, rd_, d);                     \
            p = b_.p;                                                                                                  \
            bits = b_.bits;                                                                                            \
            acc = *p;                                                                                                  \
        }                                                                                                              \
    } while (0)
        WSL_TBITS_VEC_PUT(0);
        WSL_TBITS_VEC_PUT(1);
#undef WSL_TBITS_VEC_PUT
    }
    return (struct wsl_bits_at){p, bits};
}

static inline __attribute__((always_inline)) WSL_TARGET_V3 size_t wsl_tbits_write_vec_v3(uint8_t *out,
                                                                                         const uint64_t *times,
                                                                                         unsigned n,
                                                                                         const struct wsl_tbits_dir *d)
{
    struct wsl_bits_at w = {out, 0};
    *out = 0; /* the bits so far, for wsl_tb_put */
    const unsigned even = n & ~1u;
    w = d->gap_q >= 16 && d->dur_q >= 16 ? wsl_tbits_vec_loop_v3(w, times, even, d, 1)
                                         : wsl_tbits_vec_loop_v3(w, times, even, d, 0);
    if (n & 1) { /* the last event of an odd count: the lanes past it are not read */
        const uint64_t *t = times + 2 * (size_t)even;
        w = wsl_tb_put2(w, wsl_zigzag((int64_t)(t[0] - (uint64_t)d->gap_center) >> d->gap_shift),
                        wsl_zigzag((int64_t)(t[1] - d->dur_center) >> d->dur_shift), d);
    }
    return (size_t)(w.p - out) + (w.bits != 0);
}

/* wsl_tbits_or in AVX2, eight values a step (two events a lane pair: gap, duration, gap, duration). */
static inline __attribute__((always_inline)) WSL_TARGET_V3 void wsl_tbits_or_v3(const uint64_t *times, unsigned n,
                                                                                uint64_t *gap_or, uint64_t *dur_or)
{
    __m256i a = _mm256_setzero_si256(), b = a;
    const unsigned even = n & ~1u;
    unsigned i = 0;
    for (; i + 4 <= even; i += 4) {
        a |= _mm256_loadu_si256((const __m256i *)(times + 2 * (size_t)i));
        b |= _mm256_loadu_si256((const __m256i *)(times + 2 * (size_t)i + 4));
    }
    a |= b;
    __m128i h = _mm256_castsi256_si128(a) | _mm256_extracti128_si256(a, 1);
    uint64_t g = (uint64_t)_mm_cvtsi128_si64(h), d = (uint64_t)_mm_extract_epi64(h, 1);
    for (; i < n; i++) {
        g |= times[2 * (size_t)i];
        d |= times[2 * (size_t)i + 1];
    }
    *gap_or = g;
    *dur_or = d;
}

static __attribute__((noinline, unused)) WSL_TARGET_V3 size_t wsl_tbits_close_v3(struct wsl_tbits_dir *d,
                                                                                uint8_t *out,
                                                                                const uint64_t *times, unsigned n)
{
    return wsl_tbits_close_with(d, out, times, n, wsl_tbits_params_v3, wsl_tbits_write_vec_v3, wsl_tbits_or_v3);
}

static __attribute__((noinline, unused)) WSL_TARGET_V3 size_t wsl_tbits_write_v3(uint8_t *out, const uint64_t *times,
                                                                                unsigned n,
                                                                                const struct wsl_tbits_dir *d)
{
    return wsl_tbits_write_vec_v3(out, times, n, d);
}
#endif

/* The loops for this CPU (v3: 0 the base ones whatever the CPU, as a test forces them). */
static inline __attribute__((unused)) struct wsl_tbits_coder wsl_tbits_coder_pick(int v3)
{
#ifdef WSL_TBITS_V3
    __builtin_cpu_init();
    if (v3 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
        return (struct wsl_tbits_coder){wsl_tbits_run_v3, wsl_tbits_close_v3, wsl_tbits_write_v3, "x86-64-v3"};
#else
    (void)v3;
#endif
    return (struct wsl_tbits_coder){wsl_tbits_run_base, wsl_tbits_close_base, wsl_tbits_write_base, "base"};
}

struct wsl_bits_in {
    const uint8_t *p, *end; /* the bit column */
    uint64_t pos;           /* bits read */
    unsigned bad;           /* a malformed code was read */
};

/* The 57 bits or more from pos on (0 past the column's end). */
static inline __attribute__((always_inline)) uint64_t wsl_bits_peek(const struct wsl_bits_in *b)
{
    const uint8_t *q = b->p + (b->pos >> 3);
    uint64_t x = 0;
    if (__builtin_expect(b->end - q >= 8, 1))
        memcpy(&x, q, 8);
    else if (q < b->end)
        memcpy(&x, q, (size_t)(b->end - q));
    return x >> (b->pos & 7);
}

/* The code at b->pos past its low k bits (`low`, read): its quotient's zeros counted a window at a
 * time, then an Exp-Golomb rest or an escape. */
static __attribute__((noinline, unused)) uint64_t wsl_tb_get_slow(struct wsl_bits_in *b, uint64_t low, unsigned k,
                                                                 unsigned q)
{
    b->pos += k;
    unsigned zeros = 0;
    for (;;) {
        const uint64_t x = wsl_bits_peek(b) & ((1ull << 48) - 1);
        if (x) {
            const unsigned t = (unsigned)__builtin_ctzll(x);
            zeros += t;
            b->pos += t + 1;
            break;
        }
        zeros += 48;
        b->pos += 48;
        if (zeros > q + 32) {
            b->bad = 1;
            return 0;
        }
    }
    if (zeros < q)
        return (uint64_t)zeros << k | low;
    const unsigned nb = zeros - q;
    if (nb > 32) {
        b->bad = 1;
        return 0;
    }
    if (nb == 32) { /* an escape: the 64 bits of r */
        uint64_t r = wsl_bits_peek(b) & 0xffffffffu;
        b->pos += 32;
        r |= wsl_bits_peek(b) << 32;
        b->pos += 32;
        return r;
    }
    const uint64_t y = (wsl_bits_peek(b) & ((1ull << nb) - 1)) | 1ull << nb;
    b->pos += nb;
    return (y + q - 1) << k | low;
}

/* The next code with k (<= WSL_TBITS_K_MAX) and q. Reads nothing past the column; a code that runs
 * past it reads zeros (the caller checks the column at its end). */
static inline __attribute__((always_inline)) uint64_t wsl_tb_get(struct wsl_bits_in *b, unsigned k, unsigned q)
{
    const uint64_t x = wsl_bits_peek(b), low = x & ((1ull << k) - 1), y = x >> k;
    const unsigned t = y ? (unsigned)__builtin_ctzll(y) : 64;
    if (__builtin_expect(t < q && k + t + 1 <= 57, 1)) {
        b->pos += k + t + 1;
        return (uint64_t)t << k | low;
    }
    return wsl_tb_get_slow(b, low, k, q);
}

struct wsl_tbits_in {
    struct wsl_packed_in cols; /* op and literal columns (dt, dur unused) */
    struct wsl_bits_in bits;
    struct wsl_tbits_dir dir;
};

enum { WSL_COLUMNS_BAD_PARAMETER = WSL_COLUMNS_OVERRUN + 1 }; /* EVENTS_BITS: k, shift or reserved */

/* Splits the encoded bytes of an EVENTS_BITS chunk: wsl_pack_columns_open's rules (literals at most
 * count, two bytes at least each), and the directory's parameters in range. */
static inline int wsl_tbits_open(struct wsl_tbits_in *in, const uint8_t *p, size_t size, uint32_t count)
{
    struct wsl_tbits_dir d;
    if (size < WSL_TBITS_DIRECTORY_SIZE)
        return WSL_COLUMNS_NO_DIRECTORY;
    memcpy(&d, p, sizeof d);
    if (d.gap_k > WSL_TBITS_K_MAX || d.dur_k > WSL_TBITS_K_MAX || d.gap_shift > 63 || d.dur_shift > 63 ||
        d.gap_q > WSL_TBITS_Q_MAX || d.dur_q > WSL_TBITS_Q_MAX || (d.reserved & ~WSL_TBITS_CONTINUES) != 0)
        return WSL_COLUMNS_BAD_PARAMETER;
    if (d.literals > count)
        return WSL_COLUMNS_COUNT_TOO_BIG;
    const uint64_t used = (uint64_t)WSL_TBITS_DIRECTORY_SIZE + count + d.bit_bytes;
    if (used > size)
        return WSL_COLUMNS_OVERRUN;
    if ((uint64_t)d.literals * 2 > size - used)
        return WSL_COLUMNS_COUNT_TOO_BIG;
    p += WSL_TBITS_DIRECTORY_SIZE;
    memset(&in->cols, 0, sizeof in->cols);
    in->cols.op = p;
    in->cols.op_end = p += count;
    in->bits.p = p;
    in->bits.end = p += d.bit_bytes;
    in->bits.pos = 0;
    in->bits.bad = 0;
    in->cols.lit = p;
    in->cols.lit_end = p + (size - (size_t)used);
    in->cols.literals = d.literals;
    in->dir = d;
    return WSL_COLUMNS_OK;
}

/* The next event's gap and duration. */
static inline __attribute__((always_inline)) void wsl_tbits_times(struct wsl_tbits_in *in, uint64_t *gap,
                                                                  uint64_t *dur)
{
    const struct wsl_tbits_dir *d = &in->dir;
    *gap = (uint64_t)d->gap_center +
           ((uint64_t)wsl_unzigzag(wsl_tb_get(&in->bits, d->gap_k, d->gap_q)) << d->gap_shift);
    *dur = d->dur_center + ((uint64_t)wsl_unzigzag(wsl_tb_get(&in->bits, d->dur_k, d->dur_q)) << d->dur_shift);
}

/* Decodes the next EVENTS_BITS event (the reference decoder). Returns 0 on malformed input; the bit
 * column as a whole is checked by wsl_tbits_left. */
static inline int wsl_event_decode_tbits(struct wsl_pack_state *ps, struct wsl_codec_state *st,
                                         struct wsl_tbits_in *in, uint32_t api_limit, struct wsl_event *ev)
{
    uint64_t gap, dur;
    if (in->cols.op >= in->cols.op_end)
        return 0;
    const unsigned op = *in->cols.op++;
    wsl_tbits_times(in, &gap, &dur);
    if (!wsl_unpack_arguments(ps, st, &in->cols, op, api_limit, ev))
        return 0;
    ev->t_start = st->prev_t + gap;
    ev->t_end = ev->t_start + dur;
    st->prev_t = ev->t_end;
    return 1;
}

/* Whether the codes read were well formed and end in the bit column's last byte (0 when they run
 * past it or stop short of it). */
static inline int wsl_bits_done(const struct wsl_bits_in *b)
{
    const uint64_t bytes = (uint64_t)(b->end - b->p);
    return !b->bad && b->pos <= bytes * 8 && (b->pos + 7) / 8 == bytes;
}

/* Bytes left unread in the op and literal columns, or 1 more when the bit column was not read
 * exactly: 0 once `count` events used them up. */
static inline size_t wsl_tbits_left(const struct wsl_tbits_in *in)
{
    return (size_t)(in->cols.op_end - in->cols.op) + (size_t)(in->cols.lit_end - in->cols.lit) +
           !wsl_bits_done(&in->bits);
}

#endif /* WSLSHIM_TRACE_CODEC_H */
