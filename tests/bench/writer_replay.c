/*
 * writer_replay: the writer's encoding and compression of a natively recorded
 * trace's events, replayed in one thread with nothing else running, so that
 * callgrind counts the same instructions every run (tests/bench/cg_replay.sh).
 *
 *   writer_replay TRACE [bits|gaps|gaps-per-drain|packed][-seq] [LEVEL|-] [OUT]
 *
 * Reads the EVENTS_PACKED, EVENTS_GAPS or EVENTS_BITS chunks of TRACE and encodes their
 * events again as shim/writer/drain.c does (the same inline encoder of
 * trace_format.h, the codec slots reset as there). bits (the default): EVENTS_BITS
 * as the shim writes it now (1.10: the times coded as bits when a chunk closes, and
 * compress.c's choice of raw or Huffman-coded literals per frame, the loops compiled for this
 * CPU as drain.c picks them, REPLAY_V3=0: the base x86-64 ones; REPLAY_BITS_HUFF=0:
 * Huffman-coded always, =N: when the frame's bytes other than ops and bits are 1/N of
 * it or more, 4 as the shim); gaps: EVENTS_GAPS as the shim wrote it in 1.9,
 * a thread's chunk left open across drains up to 4096
 * events and closed before any other chunk or another program thread's events
 * (drain.c's open chunks; the writer's own ring is told by its events, all
 * GPU_KERNEL); gaps-per-drain: one EVENTS_GAPS chunk per chunk of
 * TRACE, as the shim wrote from 1.9 until the chunks stayed open (TRACE's
 * chunks are its drains if it was written so); packed: EVENTS_PACKED as it
 * wrote from 1.4 to 1.8, per chunk of TRACE. The chunks gather in 64 KiB frames
 * compressed with zstd's settings of shim/writer/compress.c (LEVEL, default or
 * -: the shim's) and written to OUT if given (a trace that wslshim-report reads
 * as it reads TRACE: tests/bench/replay_reports_agree.sh). Prints the events and
 * the compressed bytes per event. Why not the shim under callgrind for these figures: valgrind runs the program 20-50
 * times slower and unevenly, and the times it records are what zstd
 * compresses (a plain bench_hook trace recorded under callgrind takes 3.6
 * bytes per event, 1.2 natively). Not a test.
 *
 * -seq (gaps-seq, ...): the same bytes, each frame compressed by frame_seq.h
 * instead of ZSTD_compress2: matches found by its own matcher, except in the
 * columns REPLAY_SEQ_KINDS marks N (default MMMMNMM: the durations' low bytes),
 * which are literals only and a zstd block of their own (docs/overhead.md, "The
 * writer, third pass": measured, not taken). REPLAY_RAW_LITERALS=1: zstd's
 * literals stored raw, in any mode (with bits, unless REPLAY_BITS_HUFF=0 too, the
 * per-frame choice decides). REPLAY_DUMP=FILE: each event's chunk, writer's-ring flag,
 * api, t_start, t_end and a[0] as six u64 (for offline analysis of the times).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "wslshim/trace_format.h"
#include "frame_seq.h"

#define EVENTS_PER_CHUNK 4096u
#define FRAME_BYTES (64u << 10)

static uint8_t col_op[EVENTS_PER_CHUNK], col_time[EVENTS_PER_CHUNK * WSL_COL_DT_MAX], col_dur_lo[EVENTS_PER_CHUNK],
    col_dur[EVENTS_PER_CHUNK * WSL_COL_DUR_MAX], col_lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX];
static struct wsl_codec_state codec;
static struct wsl_pack_state pack;
static uint16_t touched[WSL_MAX_API_IDS];
static uint8_t is_touched[WSL_MAX_API_IDS];
static unsigned touched_count;

/* drain.c's open chunks (gaps) */
struct open_chunk {
    struct wsl_events_header eh;
    struct wsl_gaps_out o;
    uint8_t op[EVENTS_PER_CHUNK], gap[EVENTS_PER_CHUNK * WSL_COL_DT_MAX], dur_lo[EVENTS_PER_CHUNK],
        dur_hi[EVENTS_PER_CHUNK * WSL_COL_DUR_MAX], lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX];
    struct wsl_codec_state codec;
    struct wsl_pack_state pack;
    int open;
};
static struct open_chunk chunks[2];
static int chunks_flushing;

/* the same for EVENTS_BITS (mode bits, drain.c now): the times kept whole until the chunk closes */
struct bits_chunk {
    struct wsl_events_header eh;
    struct wsl_tbits_out o;
    uint8_t op[EVENTS_PER_CHUNK], lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX], bits[EVENTS_PER_CHUNK * WSL_COL_TBITS_MAX + 8];
    uint64_t times[2 * EVENTS_PER_CHUNK];
    struct wsl_codec_state codec;
    struct wsl_pack_state pack;
    int open;
};
static struct bits_chunk bchunks[2];
static int use_bits;
static struct wsl_tbits_coder coder; /* drain.c's: for this CPU (REPLAY_V3=0: the base loops) */

static ZSTD_CCtx *zc;
static uint8_t frame_buf[FRAME_BYTES + (1u << 20)], zout[2u << 20];
static size_t frame_len, compressed;
static uint32_t chunk_seq; /* EVENTS chunks written: their seq (1.7), in file order */
static FILE *out_file;     /* OUT: the trace replayed, or NULL */
static int use_seq;        /* -seq modes: frame_seq.h's own matches and ZSTD_compressSequences, not the
                              shim's ZSTD_compress2 */
static struct wsl_zseq zseq;
static struct wsl_zregion regions[1u << 16];
static size_t nregions;

/* The frame's bytes from here on are of `kind` (the -seq modes). */
static void region_mark(uint32_t kind)
{
    if (nregions && regions[nregions - 1].kind == kind)
        return;
    if (nregions && regions[nregions - 1].start == frame_len)
        nregions--;
    if (nregions && regions[nregions - 1].kind == kind)
        return;
    if (nregions == sizeof regions / sizeof regions[0])
        exit(1);
    regions[nregions++] = (struct wsl_zregion){(uint32_t)frame_len, kind};
}

static void flush_open(void);

/* The frame's compression, apart for callgrind (cg_replay.sh): the writer's matcher and zstd. */
static size_t frame_other;   /* bytes of the frame other than EVENTS_BITS chunks' ops and bits (compress.c's
                                zacc_len - wsl_frame_coded_bytes) */
static int bits_policy;      /* mode bits: Huffman literals only for frames whose other bytes are 1/N of them
                                or more, N = 4 as compress.c (REPLAY_BITS_HUFF=N; 0: as set, Huffman) */

static size_t __attribute__((noinline)) compress_frame(void)
{
#ifdef ZSTD_c_literalCompressionMode
    if (bits_policy > 0)
        ZSTD_CCtx_setParameter(zc, ZSTD_c_literalCompressionMode,
                               frame_other * (size_t)bits_policy >= frame_len ? ZSTD_ps_enable : ZSTD_ps_disable);
#endif
    return !use_seq ? ZSTD_compress2(zc, zout, sizeof zout, frame_buf, frame_len)
                    : wsl_zseq_compress(zc, &zseq, zout, sizeof zout, frame_buf, frame_len, regions, nregions);
}

static void __attribute__((noinline)) frame_write(void)
{
    flush_open();
    if (!frame_len)
        return;
    size_t n = compress_frame();
    nregions = 0;
    frame_other = 0;
    if (ZSTD_isError(n)) {
        fprintf(stderr, "writer_replay: %s\n", ZSTD_getErrorName(n));
        exit(1);
    }
    compressed += n;
    frame_len = 0;
    if (out_file && fwrite(zout, 1, n, out_file) != n) {
        fprintf(stderr, "writer_replay: writing OUT failed\n");
        exit(1);
    }
}

/* kinds: each part's WSL_ZR_* (NULL: all WSL_ZR_MATCH) */
static void emit(uint32_t type, const void *const *parts, const size_t *sizes, const uint8_t *kinds, unsigned count)
{
    if (type != WSL_CHUNK_EVENTS_GAPS && type != WSL_CHUNK_EVENTS_BITS)
        flush_open();
    size_t total = 0;
    for (unsigned i = 0; i < count; i++)
        total += sizes[i];
    if (frame_len && frame_len + sizeof(struct wsl_chunk_header) + total > FRAME_BYTES)
        frame_write();
    if (frame_len + sizeof(struct wsl_chunk_header) + total > sizeof frame_buf)
        exit(1);
    struct wsl_chunk_header h = {type, (uint32_t)total};
    if (type != WSL_CHUNK_EVENTS_BITS)
        frame_other += sizeof h + total;
    region_mark(WSL_ZR_MATCH);
    memcpy(frame_buf + frame_len, &h, sizeof h);
    frame_len += sizeof h;
    for (unsigned i = 0; i < count; i++) {
        region_mark(kinds ? kinds[i] : WSL_ZR_MATCH);
        memcpy(frame_buf + frame_len, parts[i], sizes[i]);
        frame_len += sizes[i];
    }
}

/* The -seq modes: an EVENTS_GAPS chunk's parts (header, directory, op, gap, dur_lo, dur_hi, literals),
 * searched for matches (M) or not (N); REPLAY_SEQ_KINDS=MMMMNMM (the default) or another 7 letters. */
static uint8_t gaps_kinds[] = {WSL_ZR_MATCH, WSL_ZR_MATCH, WSL_ZR_MATCH, WSL_ZR_MATCH,
                               WSL_ZR_NOISE, WSL_ZR_MATCH, WSL_ZR_MATCH};

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
    eh.seq = ++chunk_seq;
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
        emit(WSL_CHUNK_EVENTS_GAPS, parts, sizes, gaps_kinds, 7);
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
        static const uint8_t kinds[] = {WSL_ZR_MATCH, WSL_ZR_MATCH, WSL_ZR_MATCH, WSL_ZR_NOISE, WSL_ZR_NOISE, WSL_ZR_MATCH};
        emit(WSL_CHUNK_EVENTS_PACKED, parts, sizes, kinds, 6);
    }
}

/* drain.c's chunk_close, chunk_open, wsl_events_flush and append_events. */
static void chunk_close(struct open_chunk *c)
{
    if (!c->open)
        return;
    c->open = 0;
    struct wsl_events_header eh = c->eh;
    eh.seq = ++chunk_seq;
    uint32_t dir[3] = {(uint32_t)(c->o.gap - c->gap), (uint32_t)(c->o.dur_hi - c->dur_hi), c->pack.literals};
    eh.encoded_size = (uint32_t)(sizeof dir + 2u * eh.count + dir[0] + dir[1] + (size_t)(c->o.lit - c->lit));
    const void *parts[] = {&eh, dir, c->op, c->gap, c->dur_lo, c->dur_hi, c->lit};
    const size_t sizes[] = {sizeof eh, sizeof dir, eh.count, dir[0], eh.count, dir[1], (size_t)(c->o.lit - c->lit)};
    const int was = chunks_flushing;
    chunks_flushing = 1;
    emit(WSL_CHUNK_EVENTS_GAPS, parts, sizes, gaps_kinds, 7);
    chunks_flushing = was;
}

static void chunk_open(struct open_chunk *c, uint32_t tid, uint64_t base, uint64_t dropped)
{
    wsl_chunk_codec_open(&c->pack, &c->codec, &c->eh, tid, base, dropped);
    c->o = (struct wsl_gaps_out){c->op, c->gap, c->dur_lo, c->dur_hi, c->lit};
    c->open = 1;
}

/* The -seq modes: an EVENTS_BITS chunk's parts (header, directory, op, bits, literals). */
static uint8_t bits_kinds[] = {WSL_ZR_MATCH, WSL_ZR_MATCH, WSL_ZR_MATCH, WSL_ZR_NOISE, WSL_ZR_MATCH};

static void bits_close(struct bits_chunk *c)
{
    if (!c->open)
        return;
    c->open = 0;
    struct wsl_events_header eh = c->eh;
    eh.seq = ++chunk_seq;
    struct wsl_tbits_dir dir;
    dir.literals = c->pack.literals;
    const size_t lit = (size_t)(c->o.lit - c->lit);
    /* as drain.c: the bit column coded in place at the frame's end, unless the frame goes out first
       (not in the -seq modes, whose regions emit() marks) */
    const size_t head = sizeof(struct wsl_chunk_header) + sizeof eh + sizeof dir + eh.count;
    uint8_t *const at = use_seq || frame_len + head + (size_t)eh.count * WSL_COL_TBITS_MAX + 8 + lit > sizeof frame_buf
                            ? NULL
                            : frame_buf + frame_len;
    coder.close(&dir, at ? at + head : c->bits, c->times, eh.count);
    frame_other += lit;
    eh.encoded_size = (uint32_t)(sizeof dir + eh.count + dir.bit_bytes + lit);
    const size_t whole = sizeof(struct wsl_chunk_header) + sizeof eh + eh.encoded_size;
    const int was = chunks_flushing;
    chunks_flushing = 1;
    if (at && (!frame_len || frame_len + whole <= FRAME_BYTES)) {
        const struct wsl_chunk_header h = {WSL_CHUNK_EVENTS_BITS, (uint32_t)(sizeof eh + eh.encoded_size)};
        memcpy(at, &h, sizeof h);
        memcpy(at + sizeof h, &eh, sizeof eh);
        memcpy(at + sizeof h + sizeof eh, &dir, sizeof dir);
        memcpy(at + sizeof h + sizeof eh + sizeof dir, c->op, eh.count);
        memcpy(at + head + dir.bit_bytes, c->lit, lit);
        frame_len += whole;
    } else {
        if (at)
            memcpy(c->bits, at + head, dir.bit_bytes);
        const void *parts[] = {&eh, &dir, c->op, c->bits, c->lit};
        const size_t sizes[] = {sizeof eh, sizeof dir, eh.count, dir.bit_bytes, lit};
        emit(WSL_CHUNK_EVENTS_BITS, parts, sizes, bits_kinds, 5);
    }
    chunks_flushing = was;
}

static void bits_open(struct bits_chunk *c, uint32_t tid, uint64_t base, uint64_t dropped)
{
    wsl_chunk_codec_open(&c->pack, &c->codec, &c->eh, tid, base, dropped);
    c->o = (struct wsl_tbits_out){c->op, c->lit, c->times};
    c->open = 1;
}

static void flush_open(void)
{
    if (chunks_flushing)
        return;
    chunks_flushing = 1;
    chunk_close(&chunks[0]);
    chunk_close(&chunks[1]);
    bits_close(&bchunks[0]);
    bits_close(&bchunks[1]);
    chunks_flushing = 0;
}

/* encode_chunk_open for EVENTS_BITS (drain.c's append_events now) */
static void __attribute__((noinline)) encode_chunk_bits(const struct wsl_event *ev, uint32_t n, uint32_t tid,
                                                        uint64_t dropped, int own)
{
    struct bits_chunk *c = &bchunks[own];
    if (c->open && (c->eh.tid != tid || dropped))
        flush_open();
    if (!c->open)
        bits_open(c, tid, n ? ev[0].t_start : 0, dropped);
    for (uint32_t from = 0; from < n;) {
        if (c->eh.count == EVENTS_PER_CHUNK) {
            flush_open();
            bits_open(c, tid, ev[from].t_start, 0);
        }
        uint32_t k = n - from, room = EVENTS_PER_CHUNK - c->eh.count;
        k = k < room ? k : room;
        struct wsl_tbits_out o = c->o;
        coder.run(&c->pack, &c->codec, ev + from, ev + from + k, &o);
        c->o = o;
        c->eh.count = (uint32_t)(o.op - c->op);
        from += k;
    }
}

/* drain.c's encode_run (the helper processes' loop aside) */
static inline __attribute__((always_inline)) void encode_run(struct open_chunk *c, const struct wsl_event *ev,
                                                             size_t n)
{
    struct wsl_gaps_out o = c->o;
    const struct wsl_event *const end = ev + n;
    const uint32_t api_count = WSL_MAX_API_IDS;
    wsl_encode_gaps_run(&c->pack, &c->codec, ev, end, api_count, &o);
    c->o = o;
    c->eh.count = (uint32_t)(o.op - c->op);
}

/* A drain's events of one thread (drain.c's append_events): `own`, the writer's
 * own ring's (GPU_KERNEL events only), go to the second open chunk. */
static void __attribute__((noinline)) encode_chunk_open(const struct wsl_event *ev, uint32_t n, uint32_t tid,
                                                        uint64_t dropped, int own)
{
    struct open_chunk *c = &chunks[own];
    if (c->open && (c->eh.tid != tid || dropped))
        flush_open();
    if (!c->open)
        chunk_open(c, tid, n ? ev[0].t_start : 0, dropped);
    for (uint32_t from = 0; from < n;) {
        if (c->eh.count == EVENTS_PER_CHUNK) {
            flush_open();
            chunk_open(c, tid, ev[from].t_start, 0);
        }
        uint32_t k = n - from, room = EVENTS_PER_CHUNK - c->eh.count;
        k = k < room ? k : room;
        encode_run(c, ev + from, k);
        from += k;
    }
}

/* A chunk of the trace read: its events (type WSL_CHUNK_EVENTS_GAPS, whichever layout they had) or its payload. */
struct record {
    uint32_t type;
    struct wsl_events_header eh;
    size_t first; /* its events' index */
    int own;      /* its events are all GPU_KERNEL: the writer's own ring's (drain.c's second open chunk) */
    const uint8_t *data;
    size_t size;
};

/* The writer's work on the chunks read: mode 2 as drain.c now, 1 a chunk per
 * chunk read (EVENTS_GAPS), 0 EVENTS_PACKED. Returns the events. */
static uint64_t __attribute__((noinline)) replay(const struct record *recs, size_t nrec, const struct wsl_event *evs,
                                                 int mode)
{
    uint64_t events = 0;
    for (size_t i = 0; i < nrec; i++) {
        const struct record *rc = &recs[i];
        if (rc->type == WSL_CHUNK_EVENTS_GAPS) {
            if (mode == 3)
                encode_chunk_bits(evs + rc->first, rc->eh.count, rc->eh.tid, rc->eh.dropped, rc->own);
            else if (mode == 2)
                encode_chunk_open(evs + rc->first, rc->eh.count, rc->eh.tid, rc->eh.dropped, rc->own);
            else
                encode_chunk(evs + rc->first, rc->eh.count, rc->eh, mode);
            events += rc->eh.count;
        } else {
            const void *parts[] = {rc->data};
            const size_t sizes[] = {rc->size};
            emit(rc->type, parts, sizes, NULL, 1);
        }
    }
    frame_write();
    return events;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: writer_replay TRACE [bits|gaps|gaps-per-drain|packed][-seq] [LEVEL|-] [OUT]\n");
        return 2;
    }
    const char *mode = argc > 2 ? argv[2] : "bits";
    const size_t ml = strlen(mode);
    if (ml > 4 && !strcmp(mode + ml - 4, "-seq"))
        use_seq = 1;
    const char *kinds = getenv("REPLAY_SEQ_KINDS");
    for (unsigned i = 0; kinds && i < sizeof gaps_kinds && kinds[i]; i++)
        gaps_kinds[i] = kinds[i] == 'N' ? WSL_ZR_NOISE : WSL_ZR_MATCH;
    const char *rkinds = getenv("REPLAY_BITS_KINDS");
    for (unsigned i = 0; rkinds && i < sizeof bits_kinds && rkinds[i]; i++)
        bits_kinds[i] = rkinds[i] == 'N' ? WSL_ZR_NOISE : WSL_ZR_MATCH;
    const int gaps = strncmp(mode, "packed", 6) != 0;
    use_bits = !strncmp(mode, "bits", 4);
    coder = wsl_tbits_coder_pick(!getenv("REPLAY_V3") || atoi(getenv("REPLAY_V3")) != 0);
    bits_policy = use_bits ? 4 : 0;
    if (getenv("REPLAY_BITS_HUFF"))
        bits_policy = atoi(getenv("REPLAY_BITS_HUFF"));
    const int per_drain = !strncmp(mode, "gaps-per-drain", 14);
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
    ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel,
                           argc > 3 && strcmp(argv[3], "-") != 0 ? atoi(argv[3]) : WSL_TRACE_ZSTD_LEVEL);
    if (argc > 4 && !(out_file = fopen(argv[4], "wb"))) {
        perror(argv[4]);
        return 1;
    }
    ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 1);
    wsl_zseq_setup(zc);
#ifdef ZSTD_c_literalCompressionMode
    /* REPLAY_RAW_LITERALS=1: literals stored raw (level -1's own default; with -seq and
     * REPLAY_SEQ_KINDS=NNNNNNN, no match and no entropy stage: zstd's floor, its frame and checksum) */
    ZSTD_CCtx_setParameter(zc, ZSTD_c_literalCompressionMode,
                           getenv("REPLAY_RAW_LITERALS") ? ZSTD_ps_disable : ZSTD_ps_enable);
#endif
    if (dn < sizeof(struct wsl_file_header))
        return 1;
    /* First every chunk read and its events decoded (not counted), then the writer's work, in replay(). */
    size_t at = sizeof(struct wsl_file_header), nrec = 0, reccap = 1024, nev = 0, evcap = 1u << 16;
    struct record *recs = malloc(reccap * sizeof *recs);
    struct wsl_event *evs = malloc(evcap * sizeof *evs);
    static struct wsl_codec_state dcodec;
    static struct wsl_pack_state dpack;
    static uint16_t category[WSL_MAX_API_IDS];
    while (recs && evs && at + sizeof(struct wsl_chunk_header) <= dn) {
        struct wsl_chunk_header h;
        memcpy(&h, d + at, sizeof h);
        const uint8_t *p = d + at + sizeof h;
        if (h.size > dn - at - sizeof h)
            break; /* cut short */
        if (nrec == reccap && !(recs = realloc(recs, (reccap *= 2) * sizeof *recs)))
            return 1;
        if (h.type == WSL_CHUNK_API_TABLE && h.size >= 4) { /* u32 count, entries: u16 id, u16 category, 4 bytes, 2 names */
            uint32_t n;
            memcpy(&n, p, 4);
            for (size_t q = 4; n-- && q + 8 <= h.size;) {
                uint16_t id, cat;
                memcpy(&id, p + q, 2);
                memcpy(&cat, p + q + 2, 2);
                if (id < WSL_MAX_API_IDS)
                    category[id] = cat;
                q += 8;
                for (int names = 0; names < 2 && q < h.size; q++)
                    names += p[q] == 0;
            }
        }
        struct record *rc = &recs[nrec++];
        rc->type = h.type;
        rc->data = p;
        rc->size = h.size;
        if (h.type == WSL_CHUNK_EVENTS_BITS && h.size >= sizeof rc->eh) {
            memcpy(&rc->eh, p, sizeof rc->eh);
            struct wsl_tbits_in in;
            if (rc->eh.count > EVENTS_PER_CHUNK || rc->eh.encoded_size > h.size - sizeof rc->eh ||
                wsl_tbits_open(&in, p + sizeof rc->eh, rc->eh.encoded_size, rc->eh.count) != WSL_COLUMNS_OK)
                return 1;
            while (nev + rc->eh.count > evcap)
                if (!(evs = realloc(evs, (evcap *= 2) * sizeof *evs)))
                    return 1;
            wsl_codec_reset(&dcodec, rc->eh.base_ticks);
            wsl_pack_reset(&dpack, 0);
            for (uint32_t i = 0; i < rc->eh.count; i++)
                if (!wsl_event_decode_tbits(&dpack, &dcodec, &in, WSL_MAX_API_IDS, &evs[nev + i]))
                    return 1;
            if (wsl_tbits_left(&in))
                return 1;
            rc->type = WSL_CHUNK_EVENTS_GAPS;
            rc->own = rc->eh.count > 0;
            for (uint32_t i = 0; i < rc->eh.count; i++)
                rc->own &= evs[nev + i].api < WSL_MAX_API_IDS && category[evs[nev + i].api] == WSL_CAT_GPU_KERNEL;
            rc->first = nev;
            nev += rc->eh.count;
        } else if ((h.type == WSL_CHUNK_EVENTS_PACKED || h.type == WSL_CHUNK_EVENTS_GAPS) && h.size >= sizeof rc->eh) {
            memcpy(&rc->eh, p, sizeof rc->eh);
            struct wsl_packed_in in;
            const int g = h.type == WSL_CHUNK_EVENTS_GAPS;
            if (rc->eh.count > EVENTS_PER_CHUNK || rc->eh.encoded_size > h.size - sizeof rc->eh ||
                (g ? wsl_gaps_open : wsl_packed_open)(&in, p + sizeof rc->eh, rc->eh.encoded_size, rc->eh.count) !=
                    WSL_COLUMNS_OK)
                return 1;
            while (nev + rc->eh.count > evcap)
                if (!(evs = realloc(evs, (evcap *= 2) * sizeof *evs)))
                    return 1;
            wsl_codec_reset(&dcodec, rc->eh.base_ticks);
            wsl_pack_reset(&dpack, 0);
            for (uint32_t i = 0; i < rc->eh.count; i++)
                if (!(g ? wsl_event_decode_gaps : wsl_event_decode_packed)(&dpack, &dcodec, &in, WSL_MAX_API_IDS,
                                                                           &evs[nev + i]))
                    return 1;
            rc->type = WSL_CHUNK_EVENTS_GAPS; /* an events chunk, whichever layout */
            rc->own = rc->eh.count > 0;
            for (uint32_t i = 0; i < rc->eh.count; i++)
                rc->own &= evs[nev + i].api < WSL_MAX_API_IDS && category[evs[nev + i].api] == WSL_CAT_GPU_KERNEL;
            rc->first = nev;
            nev += rc->eh.count;
        }
        at += sizeof h + h.size;
    }
    if (!recs || !evs)
        return 1;
    memcpy(frame_buf, d, sizeof(struct wsl_file_header));
    frame_len = sizeof(struct wsl_file_header);
    regions[nregions++] = (struct wsl_zregion){0, WSL_ZR_MATCH};
    if (getenv("REPLAY_DUMP")) { /* analysis: per event rec index, own, api, t_start, t_end, a[0] */
        FILE *df = fopen(getenv("REPLAY_DUMP"), "wb");
        for (size_t r = 0; df && r < nrec; r++)
            if (recs[r].type == WSL_CHUNK_EVENTS_GAPS)
                for (uint32_t i = 0; i < recs[r].eh.count; i++) {
                    const struct wsl_event *e = &evs[recs[r].first + i];
                    uint64_t row[6] = {r, (uint64_t)recs[r].own, e->api, e->t_start, e->t_end, e->a[0]};
                    fwrite(row, sizeof row, 1, df);
                }
        if (df)
            fclose(df);
    }
    const uint64_t events = replay(recs, nrec, evs, use_bits ? 3 : gaps && !per_drain ? 2 : gaps);
    if (out_file && fclose(out_file) != 0)
        return 1;
    printf("%s: %llu events, %.4f compressed bytes per event\n", mode, (unsigned long long)events,
           events ? (double)compressed / (double)events : 0.0);
    free(evs);
    free(recs);
    free(d);
    free(z);
    ZSTD_freeDCtx(dc);
    ZSTD_freeCCtx(zc);
    return 0;
}
