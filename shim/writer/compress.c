/*
 * The trace's compression: whole chunks gather in one buffer, and each frame
 * of them is compressed by zstd in one call and written to the trace file
 * (trace_file.c). The compressor's settings (level, Huffman-coded literals,
 * checksums) are chosen here; docs/overhead.md gives the measurements behind
 * them.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

/* ZSTD_c_literalCompressionMode (experimental in zstd 1.5; the shim links libzstd.a where there is one) */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "writer_internal.h"

static ZSTD_CCtx *zctx;
static uint8_t *zout;
static size_t zout_size;

/* Whole chunks gather in zacc and are compressed in one call per frame
 * (ZSTD_compress2): ZACC_TARGET bytes, or what came in the last second. One-shot
 * compression of a contiguous buffer is cheaper than feeding the streaming
 * compressor chunk by chunk, and every frame holds only whole chunks, so a
 * killed process leaves a trace readable up to its last frame. */
/* 64 KiB: with zstd level -1 (no entropy stage) a frame of noisy event times
 * can compress little, and a cut trace (disk full, RLIMIT_FSIZE, SIGKILL) reads
 * only up to its last whole block; small frames keep that loss small
 * (preload.trace_write_fails_program_goes_on, 48 KiB limit). The price: about
 * 50 instructions more per hooked call than with 1 MiB frames (tests/bench/run_bench.sh:
 * 405 added with 1 MiB, 451-459 with 64 KiB; 256 KiB costs as much and fails that test
 * now and then under TSan). */
#define ZACC_TARGET (64u << 10)
static uint8_t *zacc;
static size_t zacc_len, zacc_cap;
size_t wsl_frame_coded_bytes; /* of zacc: EVENTS_BITS chunks less their literal columns (drain.c) */
uint32_t wsl_frame_gen;

void wsl_frame_write(void)
{
    wsl_events_flush(); /* the events drained so far are in the frame */
    wsl_frame_gen++;    /* what comes next is in another frame: no chunk's table carries into it */
    if (!zacc_len || wsl_trace_write_failed || !zctx) {
        zacc_len = 0;
        wsl_frame_coded_bytes = 0;
        return;
    }
    size_t bound = ZSTD_compressBound(zacc_len);
    if (bound > zout_size) {
        uint8_t *nb = realloc(zout, bound);
        if (!nb) {
            wsl_trace_write_failed = 1;
            wsl_log(WSL_LOG_ERROR, "out of memory compressing the trace; recording stopped");
            return;
        }
        zout = nb;
        zout_size = bound;
    }
#ifdef ZSTD_c_literalCompressionMode
    /* Huffman-coded literals where a quarter of the frame or more is other than the events' ops and
     * coded times (their literal columns, paths, kernel names: file I/O), raw literals where the
     * frame is nearly all of them (a launch loop): zstd finds no code for the bits, and trying costs
     * the writer about 35 instructions per event (docs/overhead.md, "The writer, fourth pass"). */
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_literalCompressionMode,
                           (zacc_len - wsl_frame_coded_bytes) * 4 >= zacc_len ? ZSTD_ps_enable : ZSTD_ps_disable);
#endif
    size_t n = ZSTD_compress2(zctx, zout, zout_size, zacc, zacc_len);
    zacc_len = 0;
    wsl_frame_coded_bytes = 0;
    if (ZSTD_isError(n)) {
        wsl_trace_write_failed = 1;
        wsl_log(WSL_LOG_ERROR, "compressing the trace failed: %s", ZSTD_getErrorName(n));
        return;
    }
    wsl_trace_write(zout, n);
}

static int zacc_reserve(size_t more)
{
    if (zacc_len + more <= zacc_cap)
        return 0;
    size_t cap = zacc_cap ? zacc_cap : ZACC_TARGET + (ZACC_TARGET >> 2);
    while (cap < zacc_len + more)
        cap *= 2;
    uint8_t *nb = realloc(zacc, cap);
    if (!nb)
        return -1;
    zacc = nb;
    zacc_cap = cap;
    return 0;
}

void wsl_frame_append(const void *data, size_t size)
{
    if (wsl_trace_write_failed || !size)
        return;
    if (zacc_reserve(size) != 0) {
        wsl_trace_write_failed = 1;
        wsl_log(WSL_LOG_ERROR, "out of memory buffering the trace; recording stopped");
        return;
    }
    memcpy(zacc + zacc_len, data, size);
    zacc_len += size;
}

uint8_t *wsl_frame_room(size_t size)
{
    if (wsl_trace_write_failed || zacc_reserve(size) != 0)
        return NULL;
    return zacc + zacc_len;
}

int wsl_frame_fits(size_t size) { return !zacc_len || zacc_len + size <= ZACC_TARGET; }

void wsl_frame_take(size_t size) { zacc_len += size; }

/* One chunk whose payload is the parts, in order. */
void wsl_emit_chunk_parts(uint32_t type, const struct wsl_chunk_part *parts, unsigned count)
{
    if (type != WSL_CHUNK_EVENTS_BITS)
        wsl_events_flush(); /* the events drained before this chunk come before it */
    size_t total = 0;
    for (unsigned i = 0; i < count; i++)
        total += parts[i].size;
    if (zacc_len && zacc_len + sizeof(struct wsl_chunk_header) + total > ZACC_TARGET)
        wsl_frame_write();
    struct wsl_chunk_header h = {type, (uint32_t)total};
    wsl_frame_append(&h, sizeof h);
    for (unsigned i = 0; i < count; i++)
        wsl_frame_append(parts[i].data, parts[i].size);
}

void wsl_emit_chunk(uint32_t type, const void *a, size_t na, const void *b, size_t nb)
{
    const struct wsl_chunk_part parts[2] = {{a, na}, {b, nb}};
    wsl_emit_chunk_parts(type, parts, 2);
}

void wsl_emit_one(uint32_t type, const void *data, size_t size) { wsl_emit_chunk(type, data, size, NULL, 0); }


/* The compressor for a new trace, the frame buffer empty; 0, or -1 (out of memory). */
int wsl_compress_open(void)
{
    zctx = ZSTD_createCCtx();
    zacc_len = 0;
    wsl_frame_coded_bytes = 0;
    if (!zout) {
        zout_size = ZSTD_compressBound(ZACC_TARGET + (ZACC_TARGET >> 2));
        zout = malloc(zout_size);
    }
    if (!zctx || !zout)
        return -1;
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_compressionLevel, WSL_TRACE_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_checksumFlag, 1);
    /* Level -1 stores literals raw; the time columns are nearly all literals,
     * whose high bytes repeat: Huffman-coded literals took a launch mix from 3.83
     * to 3.12 bytes per event for about 0.6 ns per input byte (issue 26,
     * docs/overhead.md). A libzstd without the parameter keeps raw literals. */
#ifdef ZSTD_c_literalCompressionMode
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
#endif
    return 0;
}

/* At the trace's end, its last frame written. */
void wsl_compress_close(void)
{
    ZSTD_freeCCtx(zctx);
    zctx = NULL;
}

/* In a forked child: the parent's compressor and its unwritten chunks are the
 * parent's, not the child's to use or free. */
void wsl_compress_after_fork_child(void)
{
    wsl_events_after_fork_child();
    wsl_frame_gen++;
    zctx = NULL;
    zout = NULL;
    zout_size = 0;
    zacc = NULL;
    zacc_len = zacc_cap = 0;
    wsl_frame_coded_bytes = 0;
}
