/*
 * The trace reader's chunk parsers (trace_reader.c has the layers): PROCESS, API_TABLE,
 * DRIVER, EVENTS, EVENTS_PACKED, EVENTS_GAPS and EVENTS_BITS (decoded in batches), MOUNTS, PATHS, RANK,
 * EMULATION.
 * Every length read from the file is checked before it is used, so hostile input ends in
 * WSL_READ_ERROR or WSL_READ_TRUNCATED, never worse.
 */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include "trace_reader_internal.h"

_Static_assert(offsetof(struct wsl_event, api) == 2 * sizeof(uint64_t), "an event's times come first");

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

enum wsl_read_result reader_parse_process(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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
        reader_clock_refit(r);
    }
    return WSL_READ_ITEM;
}

enum wsl_read_result reader_parse_api_table(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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

enum wsl_read_result reader_parse_driver(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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
    /* sizeof *di is a multiple of 16, so the GPU records are aligned in an allocated buffer: a
     * payload read in place in the frame is copied to one first. */
    if ((uintptr_t)r->payload % 16) {
        if (size > r->payload_cap) {
            uint8_t *p = realloc(r->payload_buf, size);
            if (!p)
                return out_of_memory(r, "out of memory for a %u-byte chunk", size);
            r->payload_buf = p;
            r->payload_cap = size;
        }
        memcpy(r->payload_buf, r->payload, size);
        r->payload = r->payload_buf;
    }
    struct wsl_gpu_info *gpus = (struct wsl_gpu_info *)(void *)(r->payload + sizeof *di);
    for (uint32_t i = 0; i < di->devices; i++)
        gpus[i].name[sizeof gpus[i].name - 1] = 0;
    item->driver.gpus = gpus;
    return WSL_READ_ITEM;
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
static bool hand_out_events(struct wsl_reader *r, struct wsl_item *item, struct wsl_event *out, uint32_t n,
                            const uint8_t *ops)
{
    item->type = WSL_CHUNK_EVENTS;
    item->events.ops = ops;
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

enum wsl_read_result reader_next_event_batch(struct wsl_reader *r, struct wsl_item *item)
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
        if (!(p = reader_get_varint(api_p, api_end, &id)) || id >= WSL_MAX_API_IDS)
            goto bad;
        api_p = p;
        if (mask_p >= mask_end)
            goto bad;
        unsigned mask = *mask_p++;
        if (mask & 0xc0)
            goto bad;
        if (!(p = reader_get_varint(dt_p, dt_end, &dt)))
            goto bad;
        dt_p = p;
        if (!(p = reader_get_varint(dur_p, dur_end, &dur)))
            goto bad;
        dur_p = p;
        struct wsl_event *pv = &st->prev[id];
        if (mask) {
            if (mask & 1) {
                if (!(fld_p = reader_get_varint(fld_p, fld_end, &v)))
                    goto bad;
                pv->result = (int32_t)wsl_unzigzag(v);
            }
            if (mask & 2) {
                if (!(fld_p = reader_get_varint(fld_p, fld_end, &v)))
                    goto bad;
                pv->stream ^= v;
            }
            for (unsigned m = mask >> 2; m; m &= m - 1) {
                if (!(fld_p = reader_get_varint(fld_p, fld_end, &v)))
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
    if (hand_out_events(r, item, out, n, NULL)) {
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
    if (!(p = reader_get_varint(in->lit, in->lit_end, &id)) || id >= WSL_MAX_API_IDS || p >= in->lit_end)
        return -1;
    unsigned mask = *p++;
    if (mask & 0xc0)
        return -1;
    struct wsl_event *pv = &st->prev[id];
    if (mask & 1) {
        if (!(p = reader_get_varint(p, in->lit_end, &v)))
            return -1;
        pv->result = (int32_t)wsl_unzigzag(v);
    }
    if (mask & 2) {
        if (!(p = reader_get_varint(p, in->lit_end, &v)))
            return -1;
        pv->stream ^= v;
    }
    for (unsigned m = mask >> 2; m; m &= m - 1) {
        if (!(p = reader_get_varint(p, in->lit_end, &v)))
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

/* The batch loop of reader_next_packed_batch for one layout (gaps: EVENTS_GAPS,
 * else EVENTS_PACKED), the column cursors in locals; returns how many of the n
 * events it decoded: n, or the one that is malformed (*rc -1) or names an api
 * id not in the table (*rc -2). Inlined once per layout, so that each loop
 * tests nothing of the other. */
static inline __attribute__((always_inline)) uint32_t packed_events(struct wsl_reader *r, struct wsl_packed_in *in,
                                                                    uint32_t n, const bool gaps, int *rc)
{
    const uint8_t *op_p = in->op, *dt_p = in->dt, *dur_p = in->dur, *dur_lo = in->dur_lo;
    const uint8_t *const dt_end = in->dt_end, *const dur_end = in->dur_end;
    struct wsl_codec_state *st = r->codec;
    const struct wsl_event *const table = r->pack->table;
    struct wsl_event *out = r->batch;
    uint64_t prev_t = st->prev_t;
    uint32_t entries = r->pack->entries, i;
    *rc = 0;
    /* n <= the events left, and the op column (the dur_lo one too) holds one byte per event: no check per op. */
    for (i = 0; i < n; i++) {
        uint64_t dt, dur;
        const uint8_t *p;
        unsigned op = *op_p++;
        if (!(p = reader_get_varint(dt_p, dt_end, &dt)))
            goto bad;
        dt_p = p;
        if (!(p = reader_get_varint(dur_p, dur_end, &dur)))
            goto bad;
        dur_p = p;
        if (gaps) {
            if (dur >> 56)
                goto bad;
            dur = dur << 8 | *dur_lo++;
        }
        struct wsl_event *ev = &out[i];
        if (__builtin_expect(op - 1 < entries, 1)) {
            *ev = table[op - 1];
        } else {
            if (op != 0)
                goto bad; /* beyond the table */
            int lr = packed_literal(r, in, &entries, ev);
            if (lr) {
                *rc = lr;
                return i;
            }
        }
        if (gaps) { /* the gap from the previous event's end */
            ev->t_start = prev_t + (uint64_t)wsl_unzigzag(dt);
            prev_t = ev->t_end = ev->t_start + dur;
        } else { /* the delta from the previous event's start */
            prev_t += (uint64_t)wsl_unzigzag(dt);
            ev->t_start = prev_t;
            ev->t_end = prev_t + dur;
        }
    }
    st->prev_t = prev_t;
    r->pack->entries = entries;
    in->op = op_p;
    in->dt = dt_p;
    in->dur = dur_p;
    in->dur_lo = dur_lo;
    return n;
bad:
    *rc = -1;
    return i;
}

/* One code (k, q; m the mask of k bits) at the low bits of x, a window whose low 57 bits are the
 * column's: its value and length, false where it does not lie whole in those 57 bits. A Rice code
 * (fewer than q zeros), or an Exp-Golomb rest of nb = zeros - q bits, as wsl_tb_get_slow reads it. */
static inline __attribute__((always_inline)) bool tb_window(uint64_t x, unsigned k, unsigned q, uint64_t m,
                                                            uint64_t *r, unsigned *len)
{
    const uint64_t y = x >> k;
    const unsigned t = (unsigned)__builtin_ctzll(y | 1ull << 63);
    if (t < q) {
        *len = k + t + 1;
        *r = (uint64_t)t << k | (x & m);
        return *len <= 57;
    }
    const unsigned nb = t - q;
    *len = k + t + 1 + nb;
    if (*len > 57)
        return false;
    *r = ((((y >> (t + 1)) & ((1ull << nb) - 1)) | 1ull << nb) + q - 1) << k | (x & m);
    return true;
}

/* An event's two codes from the window x (tbits_events' where they are not both Rice codes within
 * it): their values and total length; false where either does not lie in the 57 bits (wsl_tb_get
 * reads them then: escapes, long codes). Out of line: the batch loop's registers stay its own. */
static __attribute__((noinline)) bool tbits_window_codes(uint64_t x, const struct wsl_tbits_dir *d, uint64_t *rg,
                                                         uint64_t *rd, unsigned *len)
{
    unsigned g_len, d_len;
    if (!tb_window(x, d->gap_k, d->gap_q, (1ull << d->gap_k) - 1, rg, &g_len) ||
        !tb_window(x >> g_len, d->dur_k, d->dur_q, (1ull << d->dur_k) - 1, rd, &d_len) || g_len + d_len > 57)
        return false;
    *len = g_len + d_len;
    return true;
}

/* The batch loop for EVENTS_BITS: packed_events' ops and literals, the times decoded from the bit
 * column (wsl_tb_get: a window of the bits, a count of zeros, a mask), the column's cursor in
 * locals. */
static inline __attribute__((always_inline)) uint32_t tbits_loop(struct wsl_reader *r, struct wsl_packed_in *in,
                                                                 uint32_t n, int *rc, const bool eg)
{
    const uint8_t *op_p = in->op;
    struct wsl_bits_in bits = r->ev_bits;
    const struct wsl_tbits_dir d = r->ev_tdir;
    const uint64_t gc = (uint64_t)d.gap_center, dc = d.dur_center;
    const unsigned gk = d.gap_k, gq = d.gap_q, gs = d.gap_shift, dk = d.dur_k, dq = d.dur_q, ds = d.dur_shift;
    struct wsl_codec_state *st = r->codec;
    const struct wsl_event *const table = r->pack->table;
    struct wsl_event *out = r->batch;
    uint64_t prev_t = st->prev_t;
    uint32_t entries = r->pack->entries, i;
    *rc = 0;
    /* One window of the bits per event: both codes' quotients under their q (a Rice code) and within
     * its 57 bits, as a launch loop's nearly always are; else both codes from the window where they
     * lie in it (tbits_window_codes: Exp-Golomb rests, as jittered or spread times have); else
     * wsl_tb_get (escapes, long codes, the column's last bytes). */
    const uint64_t gm = (1ull << gk) - 1, dm = (1ull << dk) - 1;
    const uint8_t *const base = bits.p;
    const ptrdiff_t window_end = (bits.end - bits.p) - 8; /* a window of 8 bytes from here on is inside */
    uint64_t pos = bits.pos;                              /* in a register: `bits` goes to the slow path */
    for (i = 0; i < n; i++) {
        const unsigned op = *op_p++;
        uint64_t rg, rd;
        const ptrdiff_t at = (ptrdiff_t)(pos >> 3);
        if (__builtin_expect(at <= window_end, 1)) {
            uint64_t x;
            memcpy(&x, base + at, 8);
            x >>= pos & 7;
            if (eg) { /* a column of Exp-Golomb codes: both codes read from the window inline */
                unsigned g_len, d_len;
                if (__builtin_expect(tb_window(x, gk, gq, gm, &rg, &g_len), 1) &&
                    __builtin_expect(tb_window(x >> g_len, dk, dq, dm, &rd, &d_len), 1) &&
                    __builtin_expect(g_len + d_len <= 57, 1)) {
                    pos += g_len + d_len;
                    goto times;
                }
                goto slow;
            }
            const unsigned tg = (unsigned)__builtin_ctzll(x >> gk | 1ull << 63), lg = gk + tg + 1;
            /* lg 64 or more (tg >= gq: the test below fails) shifts by lg & 63, a value not used */
            const uint64_t xd = x >> (lg & 63);
            const unsigned td = (unsigned)__builtin_ctzll(xd >> dk | 1ull << 63), len = lg + dk + td + 1;
            if (__builtin_expect(tg < gq && td < dq && len <= 57, 1)) {
                rg = (uint64_t)tg << gk | (x & gm);
                rd = (uint64_t)td << dk | (xd & dm);
                pos += len;
                goto times;
            }
            unsigned w_len;
            if (tbits_window_codes(x, &d, &rg, &rd, &w_len)) { /* Exp-Golomb rests in the window */
                pos += w_len;
                goto times;
            }
        }
    slow:
        bits.pos = pos;
        rg = wsl_tb_get(&bits, gk, gq);
        rd = wsl_tb_get(&bits, dk, dq);
        pos = bits.pos;
    times:;
        const uint64_t gap = gc + ((uint64_t)wsl_unzigzag(rg) << gs);
        const uint64_t dur = dc + ((uint64_t)wsl_unzigzag(rd) << ds);
        struct wsl_event *ev = &out[i];
        if (__builtin_expect(op - 1 < entries, 1)) {
            /* the entry but its times (the first 16 bytes), written below: 48 bytes, not 64 */
            const size_t past_times = offsetof(struct wsl_event, api);
            memcpy((char *)ev + past_times, (const char *)&table[op - 1] + past_times, sizeof *ev - past_times);
        } else {
            if (op != 0) {
                *rc = -1;
                return i;
            }
            int lr = packed_literal(r, in, &entries, ev);
            if (lr) {
                *rc = lr;
                return i;
            }
        }
        ev->t_start = prev_t + gap;
        prev_t = ev->t_end = ev->t_start + dur;
    }
    st->prev_t = prev_t;
    r->pack->entries = entries;
    in->op = op_p;
    bits.pos = pos;
    r->ev_bits = bits;
    return n;
}

/* The batch loop, inlined twice: for chunks with a column of Exp-Golomb codes (q 0: jittered or
 * spread times) both codes are read from the window inline; for the others, the Rice test first
 * and tbits_window_codes out of line where it fails. */
static inline __attribute__((always_inline)) uint32_t tbits_events_body(struct wsl_reader *r, struct wsl_packed_in *in,
                                                                        uint32_t n, int *rc)
{
    if (r->ev_tdir.gap_q == 0 || r->ev_tdir.dur_q == 0)
        return tbits_loop(r, in, n, rc, true);
    return tbits_loop(r, in, n, rc, false);
}

static __attribute__((noinline)) uint32_t tbits_events_generic(struct wsl_reader *r, struct wsl_packed_in *in,
                                                               uint32_t n, int *rc)
{
    return tbits_events_body(r, in, n, rc);
}

/* The same code for CPUs with BMI1 and BMI2 (x86-64 since 2013-2015): the loop's shifts by a count
 * in a register (the window's bit offset, the codes' lengths) as shrx/shlx, which need no move of
 * the count to cl, the zero counts as tzcnt: 13 instructions fewer an event of mix. Only integer
 * instructions differ, so every result is the same (tests: unit.reader_isa_agree). */
#if defined(__x86_64__) && defined(__GNUC__)
#define READER_HAVE_BMI2_PATH 1
static __attribute__((noinline, target("bmi,bmi2"))) uint32_t tbits_events_bmi2(struct wsl_reader *r,
                                                                                 struct wsl_packed_in *in,
                                                                                 uint32_t n, int *rc)
{
    return tbits_events_body(r, in, n, rc);
}
#endif

bool wsl_reader_generic_only;

bool wsl_reader_bmi2_path(void)
{
#ifdef READER_HAVE_BMI2_PATH
    return !wsl_reader_generic_only && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#else
    return false;
#endif
}

static inline uint32_t tbits_events(struct wsl_reader *r, struct wsl_packed_in *in, uint32_t n, int *rc)
{
#ifdef READER_HAVE_BMI2_PATH
    if (r->bmi2)
        return tbits_events_bmi2(r, in, n, rc);
#endif
    return tbits_events_generic(r, in, n, rc);
}

/* Decodes the next batch of the EVENTS_PACKED or EVENTS_GAPS chunk in progress:
 * the checks of wsl_event_decode_packed and wsl_event_decode_gaps
 * (trace_format.h) in the same order. An event that repeats a table entry is a
 * 64-byte copy and its two times; literals take packed_literal. */
enum wsl_read_result reader_next_packed_batch(struct wsl_reader *r, struct wsl_item *item)
{
    const unsigned long long at = (unsigned long long)r->chunk_offset;
    uint32_t n = r->ev_count - r->ev_done;
    if (n > WSL_READER_BATCH)
        n = WSL_READER_BATCH;
    struct wsl_packed_in in = r->ev_pin;
    const uint8_t *const ops = in.op; /* (the batch's ops: one byte an event) */
    int rc;
    uint32_t done = r->ev_tbits  ? tbits_events(r, &in, n, &rc)
                    : in.dur_lo ? packed_events(r, &in, n, true, &rc)
                                : packed_events(r, &in, n, false, &rc);
    if (rc == -2)
        return r->done;
    if (rc)
        return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (event %u)", at, r->ev_done + done);
    r->ev_pin = in;
    if (hand_out_events(r, item, r->batch, n, ops)) {
        if (r->ev_tbits && !wsl_bits_done(&r->ev_bits))
            return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (the times' %u bytes of bits %s)", at,
                           (unsigned)(r->ev_bits.end - r->ev_bits.p),
                           r->ev_bits.bad ? "hold a malformed code" : "do not end with the last event's");
        if (bytes_left(r, at, wsl_packed_left(&in)))
            return WSL_READ_ERROR;
        if (r->pack->literals != in.literals)
            return corrupt(r, "corrupt chunk at byte %llu: event count mismatch (%u literals, the directory says %u)",
                           at, r->pack->literals, in.literals);
    }
    return WSL_READ_ITEM;
}

enum wsl_read_result reader_parse_events(struct wsl_reader *r, uint32_t type, uint32_t size,
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
    const bool tbits = type == WSL_CHUNK_EVENTS_BITS;
    const bool packed = type == WSL_CHUNK_EVENTS_PACKED || type == WSL_CHUNK_EVENTS_GAPS || tbits;
    struct wsl_tbits_in tin;
    int cs = tbits ? wsl_tbits_open(&tin, r->payload + sizeof eh, eh.encoded_size, eh.count)
             : type == WSL_CHUNK_EVENTS_GAPS
                 ? (int)wsl_gaps_open(&r->ev_pin, r->payload + sizeof eh, eh.encoded_size, eh.count)
             : packed ? (int)wsl_packed_open(&r->ev_pin, r->payload + sizeof eh, eh.encoded_size, eh.count)
                      : (int)wsl_columns_open(&r->ev_in, r->payload + sizeof eh, eh.encoded_size, eh.count);
    if (tbits && cs == WSL_COLUMNS_OK) {
        r->ev_pin = tin.cols;
        r->ev_bits = tin.bits;
        r->ev_tdir = tin.dir;
    }
    if (tbits && cs != WSL_COLUMNS_OK) {
        struct wsl_tbits_dir d;
        if (cs == WSL_COLUMNS_NO_DIRECTORY)
            return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (%u encoded bytes cannot hold the "
                              "%u-byte column directory)", at, eh.encoded_size, WSL_TBITS_DIRECTORY_SIZE);
        memcpy(&d, r->payload + sizeof eh, sizeof d);
        if (cs == WSL_COLUMNS_BAD_PARAMETER)
            return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (time code parameters k %u/%u, q "
                              "%u/%u, shift %u/%u, reserved %u)", at, d.gap_k, d.dur_k, d.gap_q, d.dur_q,
                           d.gap_shift, d.dur_shift, d.reserved);
        if (cs == WSL_COLUMNS_COUNT_TOO_BIG)
            return corrupt(r, "corrupt chunk at byte %llu: event count mismatch (%u events with %u literals cannot "
                              "fit in %u encoded bytes)", at, eh.count, d.literals, eh.encoded_size);
        return corrupt(r, "corrupt chunk at byte %llu: bad event encoding (the event columns run past the "
                          "%u encoded bytes: %u bytes of bits)", at, eh.encoded_size, d.bit_bytes);
    }
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
    if (tbits) { /* the table: its slot's, carried or anew (1.13) */
        const unsigned sl = eh.tid % WSL_TBITS_SLOTS;
        if (r->ev_tdir.reserved & WSL_TBITS_CONTINUES) {
            if (!(r->slot_held >> sl & 1) || r->slot_tid[sl] != eh.tid || r->slot_frame[sl] != r->chunk_frame)
                return corrupt(r, "corrupt chunk at byte %llu: it continues the table of thread %u's chunk before "
                                  "it in the same zstd frame, and there is none", at, eh.tid);
            r->pack = r->slot_pack[sl];
            r->pack->literals = 0;
        } else {
            if (!r->slot_pack[sl] && !(r->slot_pack[sl] = calloc(1, sizeof *r->slot_pack[sl])))
                return out_of_memory(r, "out of memory");
            r->pack = r->slot_pack[sl];
            wsl_pack_reset(r->pack, 0);
            r->slot_tid[sl] = eh.tid;
            r->slot_held |= 1u << sl;
        }
        r->slot_frame[sl] = r->chunk_frame;
    } else if (packed) {
        r->pack = r->pack_own;
        wsl_pack_reset(r->pack, 0);
    }
    r->in_events = true;
    r->ev_packed = packed;
    r->ev_tbits = tbits;
    r->ev_tid = eh.tid;
    r->ev_count = eh.count;
    r->ev_done = 0;
    r->ev_dropped = eh.dropped;
    return packed ? reader_next_packed_batch(r, item) : reader_next_event_batch(r, item);
}

enum wsl_read_result reader_parse_mounts(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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
enum wsl_read_result reader_parse_paths(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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

enum wsl_read_result reader_parse_rank(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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
enum wsl_read_result reader_parse_emulation(struct wsl_reader *r, uint32_t size, struct wsl_item *item)
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

