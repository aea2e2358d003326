/*
 * writer_replay: the writer's encoding and compression of a natively recorded
 * trace's events, replayed in one thread with nothing else running, so that
 * callgrind counts the same instructions every run (tests/bench/cg_replay.sh).
 *
 *   writer_replay TRACE [gaps|packed] [LEVEL]
 *
 * Reads the EVENTS_PACKED or EVENTS_GAPS chunks of TRACE, encodes each one again
 * as shim/writer/drain.c does (the same inline encoder of trace_format.h, the
 * codec slots reset as there; gaps: EVENTS_GAPS as the shim writes from 1.9 on,
 * packed: EVENTS_PACKED as it wrote from 1.4 to 1.8), gathers the chunks in
 * 64 KiB frames and compresses each with zstd's settings of
 * shim/writer/compress.c (LEVEL, default the shim's). Prints the events and the
 * compressed bytes per event. Why not the shim under callgrind for these
 * figures: valgrind runs the program 20-50 times slower and unevenly, and the
 * times it records are what zstd compresses (a plain bench_hook trace recorded
 * under callgrind takes 3.6 bytes per event, 1.2 natively). Not a test.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "wslshim/trace_format.h"

#define EVENTS_PER_CHUNK 4096u
#define FRAME_BYTES (64u << 10)

static uint8_t col_op[EVENTS_PER_CHUNK], col_time[EVENTS_PER_CHUNK * WSL_COL_DT_MAX], col_dur_lo[EVENTS_PER_CHUNK],
    col_dur[EVENTS_PER_CHUNK * WSL_COL_DUR_MAX], col_lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX];
static struct wsl_codec_state codec;
static struct wsl_pack_state pack;
static uint16_t touched[WSL_MAX_API_IDS];
static uint8_t is_touched[WSL_MAX_API_IDS];
static unsigned touched_count;

static ZSTD_CCtx *zc;
static uint8_t frame_buf[FRAME_BYTES + (1u << 20)], zout[2u << 20];
static size_t frame_len, compressed;

static void __attribute__((noinline)) frame_write(void)
{
    if (!frame_len)
        return;
    size_t n = ZSTD_compress2(zc, zout, sizeof zout, frame_buf, frame_len);
    if (ZSTD_isError(n)) {
        fprintf(stderr, "writer_replay: %s\n", ZSTD_getErrorName(n));
        exit(1);
    }
    compressed += n;
    frame_len = 0;
}

static void emit(uint32_t type, const void *const *parts, const size_t *sizes, unsigned count)
{
    size_t total = 0;
    for (unsigned i = 0; i < count; i++)
        total += sizes[i];
    if (frame_len && frame_len + sizeof(struct wsl_chunk_header) + total > FRAME_BYTES)
        frame_write();
    if (frame_len + sizeof(struct wsl_chunk_header) + total > sizeof frame_buf)
        exit(1);
    struct wsl_chunk_header h = {type, (uint32_t)total};
    memcpy(frame_buf + frame_len, &h, sizeof h);
    frame_len += sizeof h;
    for (unsigned i = 0; i < count; i++) {
        memcpy(frame_buf + frame_len, parts[i], sizes[i]);
        frame_len += sizes[i];
    }
}

/* One chunk's events, encoded as drain.c's emit_event_chunk does. */
static void __attribute__((noinline)) encode_chunk(const struct wsl_event *ev, uint32_t n, struct wsl_events_header eh,
                                                   int gaps)
{
    for (unsigned i = 0; i < touched_count; i++) {
        memset(&codec.prev[touched[i]], 0, sizeof codec.prev[0]);
        is_touched[touched[i]] = 0;
    }
    touched_count = 0;
    codec.prev_t = eh.base_ticks;
    wsl_pack_reset(&pack, 1);
    uint32_t dir[3];
    if (gaps) {
        struct wsl_gaps_out o = {col_op, col_time, col_dur_lo, col_dur, col_lit};
        for (uint32_t i = 0; i < n; i++) {
            if (!is_touched[ev[i].api]) {
                is_touched[ev[i].api] = 1;
                touched[touched_count++] = ev[i].api;
            }
            wsl_event_encode_gaps(&pack, &codec, &ev[i], &o);
        }
        dir[0] = (uint32_t)(o.gap - col_time);
        dir[1] = (uint32_t)(o.dur_hi - col_dur);
        dir[2] = pack.literals;
        eh.encoded_size = (uint32_t)(sizeof dir + 2u * n + dir[0] + dir[1] + (size_t)(o.lit - col_lit));
        const void *parts[] = {&eh, dir, col_op, col_time, col_dur_lo, col_dur, col_lit};
        const size_t sizes[] = {sizeof eh, sizeof dir, n, dir[0], n, dir[1], (size_t)(o.lit - col_lit)};
        emit(WSL_CHUNK_EVENTS_GAPS, parts, sizes, 7);
    } else {
        struct wsl_packed_out o = {col_op, col_time, col_dur, col_lit};
        for (uint32_t i = 0; i < n; i++) {
            if (!is_touched[ev[i].api]) {
                is_touched[ev[i].api] = 1;
                touched[touched_count++] = ev[i].api;
            }
            wsl_event_encode_packed(&pack, &codec, &ev[i], &o);
        }
        dir[0] = (uint32_t)(o.dt - col_time);
        dir[1] = (uint32_t)(o.dur - col_dur);
        dir[2] = pack.literals;
        eh.encoded_size = (uint32_t)(sizeof dir + n + dir[0] + dir[1] + (size_t)(o.lit - col_lit));
        const void *parts[] = {&eh, dir, col_op, col_time, col_dur, col_lit};
        const size_t sizes[] = {sizeof eh, sizeof dir, n, dir[0], dir[1], (size_t)(o.lit - col_lit)};
        emit(WSL_CHUNK_EVENTS_PACKED, parts, sizes, 6);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: writer_replay TRACE [gaps|packed] [LEVEL]\n");
        return 2;
    }
    const int gaps = argc < 3 || strcmp(argv[2], "packed") != 0;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t zcap = 1u << 20, zn = 0, got;
    uint8_t *z = malloc(zcap);
    while (z && (got = fread(z + zn, 1, zcap - zn, f)) > 0)
        if ((zn += got) == zcap)
            z = realloc(z, zcap *= 2);
    fclose(f);
    size_t cap = zn * 16 + (1u << 20), dn = 0;
    uint8_t *d = malloc(cap);
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    if (!z || !d || !dc)
        return 1;
    ZSTD_inBuffer ib = {z, zn, 0};
    while (ib.pos < ib.size) {
        if (dn == cap && !(d = realloc(d, cap *= 2)))
            return 1;
        ZSTD_outBuffer ob = {d + dn, cap - dn, 0};
        size_t r = ZSTD_decompressStream(dc, &ob, &ib);
        dn += ob.pos;
        if (ZSTD_isError(r))
            break;
    }
    zc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, argc > 3 ? atoi(argv[3]) : WSL_TRACE_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 1);
#ifdef ZSTD_c_literalCompressionMode
    ZSTD_CCtx_setParameter(zc, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
#endif
    if (dn < sizeof(struct wsl_file_header))
        return 1;
    const void *fh[] = {d};
    const size_t fh_size = sizeof(struct wsl_file_header);
    memcpy(frame_buf, fh[0], fh_size);
    frame_len = fh_size;
    size_t at = fh_size;
    uint64_t events = 0;
    static struct wsl_event evs[EVENTS_PER_CHUNK];
    static struct wsl_codec_state dcodec;
    static struct wsl_pack_state dpack;
    while (at + sizeof(struct wsl_chunk_header) <= dn) {
        struct wsl_chunk_header h;
        memcpy(&h, d + at, sizeof h);
        const uint8_t *p = d + at + sizeof h;
        if (h.size > dn - at - sizeof h)
            break; /* cut short */
        struct wsl_events_header eh;
        if ((h.type == WSL_CHUNK_EVENTS_PACKED || h.type == WSL_CHUNK_EVENTS_GAPS) && h.size >= sizeof eh) {
            memcpy(&eh, p, sizeof eh);
            struct wsl_packed_in in;
            const int g = h.type == WSL_CHUNK_EVENTS_GAPS;
            if (eh.count > EVENTS_PER_CHUNK || eh.encoded_size > h.size - sizeof eh ||
                (g ? wsl_gaps_open : wsl_packed_open)(&in, p + sizeof eh, eh.encoded_size, eh.count) != WSL_COLUMNS_OK)
                return 1;
            wsl_codec_reset(&dcodec, eh.base_ticks);
            wsl_pack_reset(&dpack, 0);
            for (uint32_t i = 0; i < eh.count; i++)
                if (!(g ? wsl_event_decode_gaps : wsl_event_decode_packed)(&dpack, &dcodec, &in, WSL_MAX_API_IDS, &evs[i]))
                    return 1;
            encode_chunk(evs, eh.count, eh, gaps);
            events += eh.count;
        } else {
            const void *parts[] = {p};
            const size_t sizes[] = {h.size};
            emit(h.type, parts, sizes, 1);
        }
        at += sizeof h + h.size;
    }
    frame_write();
    printf("%s: %llu events, %.4f compressed bytes per event\n", gaps ? "gaps" : "packed", (unsigned long long)events,
           events ? (double)compressed / (double)events : 0.0);
    return 0;
}
