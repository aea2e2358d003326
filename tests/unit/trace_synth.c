#include "trace_synth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

const struct synth_api synth_apis[] = {
#define WSL_HOOK(sym, base, ver, pt, cat, ...) {#sym, #base, cat, pt},
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
#define WSL_IO(sym, base, cat) {#sym, #base, cat, 0},
#include "wslshim/io_api.def"
#undef WSL_IO
#define WSL_NVTX(sym, base, cat) {#sym, #base, cat, 0},
#include "wslshim/nvtx_api.def"
#undef WSL_NVTX
};
const unsigned synth_api_count = sizeof synth_apis / sizeof synth_apis[0];

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("trace_synth: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

uint16_t synth_api_id(const char *symbol)
{
    for (unsigned i = 0; i < synth_api_count; i++)
        if (strcmp(synth_apis[i].symbol, symbol) == 0)
            return (uint16_t)i;
    die("no api %s in cuda_api.def or io_api.def", symbol);
}

struct synth {
    FILE *f;
    struct synth_options opt;
    ZSTD_CCtx *z;
    uint8_t *zout;
    size_t zout_size;
    struct wsl_codec_state *codec;
};

static void z_feed(struct synth *s, const void *data, size_t size, ZSTD_EndDirective mode)
{
    if (s->opt.raw) {
        if (size && fwrite(data, 1, size, s->f) != size)
            die("write failed");
        return;
    }
    ZSTD_inBuffer in = {data, size, 0};
    for (;;) {
        ZSTD_outBuffer out = {s->zout, s->zout_size, 0};
        size_t left = ZSTD_compressStream2(s->z, &out, &in, mode);
        if (ZSTD_isError(left))
            die("zstd: %s", ZSTD_getErrorName(left));
        if (out.pos && fwrite(s->zout, 1, out.pos, s->f) != out.pos)
            die("write failed");
        if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0)
            break;
    }
}

struct synth *synth_open(const char *path, const struct synth_options *opt)
{
    struct synth *s = calloc(1, sizeof *s);
    if (!s)
        die("out of memory");
    s->opt = opt ? *opt : (struct synth_options){.checksum = true};
    if (s->opt.level == 0)
        s->opt.level = s->opt.v12_events ? 1 : WSL_TRACE_ZSTD_LEVEL;
    s->f = fopen(path, "wb");
    if (!s->f)
        die("cannot write %s: %s", path, strerror(errno));
    s->codec = malloc(sizeof *s->codec);
    if (!s->codec)
        die("out of memory");
    if (!s->opt.raw) {
        s->z = ZSTD_createCCtx();
        s->zout_size = ZSTD_CStreamOutSize();
        s->zout = malloc(s->zout_size);
        if (!s->z || !s->zout)
            die("out of memory");
        ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, s->opt.level);
        ZSTD_CCtx_setParameter(s->z, ZSTD_c_checksumFlag, s->opt.checksum);
    }
    return s;
}

static void synth_free(struct synth *s)
{
    if (fclose(s->f) != 0)
        die("close failed");
    ZSTD_freeCCtx(s->z);
    free(s->zout);
    free(s->codec);
    free(s);
}

void synth_close(struct synth *s)
{
    if (!s->opt.raw)
        z_feed(s, NULL, 0, ZSTD_e_end);
    synth_free(s);
}

void synth_abandon(struct synth *s)
{
    synth_free(s);
}

void synth_flush(struct synth *s)
{
    if (!s->opt.raw)
        z_feed(s, NULL, 0, ZSTD_e_flush);
}

void synth_bytes(struct synth *s, const void *data, size_t size) { z_feed(s, data, size, ZSTD_e_continue); }

void synth_frame_end(struct synth *s)
{
    if (!s->opt.raw)
        z_feed(s, NULL, 0, ZSTD_e_end);
}

void synth_chunk_header(struct synth *s, uint32_t type, uint32_t size)
{
    struct wsl_chunk_header h = {type, size};
    synth_bytes(s, &h, sizeof h);
}

void synth_chunk(struct synth *s, uint32_t type, const void *payload, size_t size)
{
    synth_chunk_header(s, type, (uint32_t)size);
    synth_bytes(s, payload, size);
    if (s->opt.flush_each_chunk)
        synth_flush(s);
}

struct wsl_file_header synth_default_header(void)
{
    struct wsl_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, WSL_TRACE_MAGIC, sizeof h.magic);
    h.byte_order = WSL_TRACE_BYTE_ORDER;
    h.version_major = WSL_TRACE_VERSION_MAJOR;
    h.version_minor = WSL_TRACE_VERSION_MINOR;
    h.header_size = sizeof h;
    h.record_size = sizeof(struct wsl_event);
    return h;
}

void synth_file_header(struct synth *s, const struct wsl_file_header *h)
{
    struct wsl_file_header def = synth_default_header();
    if (s->opt.v12_events)
        def.version_minor = 2;
    else if (s->opt.v14_events)
        def.version_minor = 8;
    else if (s->opt.v19_events)
        def.version_minor = 9;
    synth_bytes(s, h ? h : &def, sizeof def);
}

void synth_process(struct synth *s, const struct wsl_process_info *pi, const char *host, const char *exe,
                   const char *kernel_release, int argc, const char *const *argv)
{
    size_t n = strlen(host) + strlen(exe) + strlen(kernel_release) + 3;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    uint8_t *buf = malloc(sizeof *pi + n);
    if (!buf)
        die("out of memory");
    struct wsl_process_info info = *pi;
    info.strings_size = (uint32_t)n;
    memcpy(buf, &info, sizeof info);
    char *p = (char *)buf + sizeof info;
    p = stpcpy(p, host) + 1;
    p = stpcpy(p, exe) + 1;
    p = stpcpy(p, kernel_release) + 1;
    for (int i = 0; i < argc; i++)
        p = stpcpy(p, argv[i]) + 1;
    synth_chunk(s, WSL_CHUNK_PROCESS, buf, sizeof info + n);
    free(buf);
}

void synth_api_table(struct synth *s)
{
    size_t n = 4;
    for (unsigned i = 0; i < synth_api_count; i++)
        n += 8 + strlen(synth_apis[i].symbol) + 1 + strlen(synth_apis[i].base) + 1;
    uint8_t *buf = calloc(1, n), *p = buf + 4;
    if (!buf)
        die("out of memory");
    uint32_t count = synth_api_count;
    memcpy(buf, &count, 4);
    for (unsigned i = 0; i < synth_api_count; i++) {
        uint16_t id = (uint16_t)i, cat = synth_apis[i].category;
        memcpy(p, &id, 2);
        memcpy(p + 2, &cat, 2);
        p[4] = synth_apis[i].per_thread_stream;
        p += 8;
        p = (uint8_t *)stpcpy((char *)p, synth_apis[i].symbol) + 1;
        p = (uint8_t *)stpcpy((char *)p, synth_apis[i].base) + 1;
    }
    synth_chunk(s, WSL_CHUNK_API_TABLE, buf, n);
    free(buf);
}

void synth_clock(struct synth *s, uint64_t ticks, uint64_t mono_ns, uint64_t real_ns)
{
    struct wsl_clock_sample c = {ticks, mono_ns, real_ns};
    synth_chunk(s, WSL_CHUNK_CLOCK, &c, sizeof c);
}

/* The encoded columns, one after the other, into buf; returns the bytes written. */
struct part {
    const void *p;
    size_t n;
};

static size_t concat(uint8_t *buf, const struct part *parts, size_t count)
{
    size_t size = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(buf + size, parts[i].p, parts[i].n);
        size += parts[i].n;
    }
    return size;
}

size_t synth_encode_events(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    uint8_t *api = malloc((size_t)n * WSL_COL_API_MAX + 1), *mask = malloc((size_t)n + 1),
            *dt = malloc((size_t)n * WSL_COL_DT_MAX + 1), *dur = malloc((size_t)n * WSL_COL_DUR_MAX + 1),
            *fld = malloc((size_t)n * WSL_COL_FIELDS_MAX + 1);
    uint8_t *buf = malloc(WSL_EVENTS_DIRECTORY_SIZE + (size_t)n * WSL_EVENT_MAX_ENCODED + 1);
    if (!st || !api || !mask || !dt || !dur || !fld || !buf)
        die("out of memory");
    wsl_codec_reset(st, base_ticks);
    struct wsl_columns_out o = {api, mask, dt, dur, fld};
    for (uint32_t i = 0; i < n; i++)
        wsl_event_encode_columns(st, &ev[i], &o);
    uint32_t dir[3] = {(uint32_t)(o.api - api), (uint32_t)(o.dt - dt), (uint32_t)(o.dur - dur)};
    const struct part parts[] = {{dir, sizeof dir}, {api, dir[0]}, {mask, n}, {dt, dir[1]}, {dur, dir[2]},
                                 {fld, (size_t)(o.fld - fld)}};
    size_t size = concat(buf, parts, sizeof parts / sizeof parts[0]);
    free(st);
    free(api);
    free(mask);
    free(dt);
    free(dur);
    free(fld);
    *out = buf;
    return size;
}

size_t synth_encode_packed(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    struct wsl_pack_state *ps = calloc(1, sizeof *ps);
    uint8_t *op = malloc((size_t)n + 1), *dt = malloc((size_t)n * WSL_COL_DT_MAX + 1),
            *dur = malloc((size_t)n * WSL_COL_DUR_MAX + 1), *lit = malloc((size_t)n * WSL_COL_LIT_MAX + 1);
    uint8_t *buf = malloc(WSL_EVENTS_DIRECTORY_SIZE + (size_t)n * WSL_PACKED_EVENT_MAX_ENCODED + 1);
    if (!st || !ps || !op || !dt || !dur || !lit || !buf)
        die("out of memory");
    wsl_codec_reset(st, base_ticks);
    wsl_pack_reset(ps, 1);
    struct wsl_packed_out o = {op, dt, dur, lit};
    for (uint32_t i = 0; i < n; i++)
        wsl_event_encode_packed(ps, st, &ev[i], &o);
    uint32_t dir[3] = {(uint32_t)(o.dt - dt), (uint32_t)(o.dur - dur), ps->literals};
    const struct part parts[] = {{dir, sizeof dir}, {op, n}, {dt, dir[0]}, {dur, dir[1]}, {lit, (size_t)(o.lit - lit)}};
    size_t size = concat(buf, parts, sizeof parts / sizeof parts[0]);
    free(st);
    free(ps);
    free(op);
    free(dt);
    free(dur);
    free(lit);
    *out = buf;
    return size;
}

size_t synth_encode_gaps(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    struct wsl_pack_state *ps = calloc(1, sizeof *ps);
    uint8_t *op = malloc((size_t)n + 1), *gap = malloc((size_t)n * WSL_COL_DT_MAX + 1), *lo = malloc((size_t)n + 1),
            *hi = malloc((size_t)n * WSL_COL_DUR_MAX + 1), *lit = malloc((size_t)n * WSL_COL_LIT_MAX + 1);
    uint8_t *buf = malloc(WSL_EVENTS_DIRECTORY_SIZE + (size_t)n * WSL_GAPS_EVENT_MAX_ENCODED + 1);
    if (!st || !ps || !op || !gap || !lo || !hi || !lit || !buf)
        die("out of memory");
    wsl_codec_reset(st, base_ticks);
    wsl_pack_reset(ps, 1);
    struct wsl_gaps_out o = {op, gap, lo, hi, lit};
    for (uint32_t i = 0; i < n; i++)
        wsl_event_encode_gaps(ps, st, &ev[i], &o);
    uint32_t dir[3] = {(uint32_t)(o.gap - gap), (uint32_t)(o.dur_hi - hi), ps->literals};
    const struct part parts[] = {{dir, sizeof dir}, {op, n}, {gap, dir[0]}, {lo, n}, {hi, dir[1]},
                                 {lit, (size_t)(o.lit - lit)}};
    size_t size = concat(buf, parts, sizeof parts / sizeof parts[0]);
    free(st);
    free(ps);
    free(op);
    free(gap);
    free(lo);
    free(hi);
    free(lit);
    *out = buf;
    return size;
}

size_t synth_encode_tbits(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks, uint8_t **out)
{
    struct wsl_pack_state *ps = calloc(1, sizeof *ps);
    if (!ps)
        die("out of memory");
    size_t size = synth_encode_tbits_table(ev, n, base_ticks, ps, false, out);
    free(ps);
    return size;
}

size_t synth_encode_tbits_table(const struct wsl_event *ev, uint32_t n, uint64_t base_ticks,
                                struct wsl_pack_state *ps, bool carry, uint8_t **out)
{
    struct wsl_codec_state *st = malloc(sizeof *st);
    uint8_t *op = malloc((size_t)n + 1), *lit = malloc((size_t)n * WSL_COL_LIT_MAX + 1),
            *bits = malloc((size_t)n * WSL_COL_TBITS_MAX + 8);
    uint64_t *times = malloc(((size_t)n + 1) * 2 * sizeof *times);
    uint8_t *buf = malloc(WSL_TBITS_DIRECTORY_SIZE + (size_t)n * (1 + WSL_COL_TBITS_MAX + WSL_COL_LIT_MAX) + 1);
    if (!st || !ps || !op || !lit || !bits || !times || !buf)
        die("out of memory");
    wsl_codec_reset(st, base_ticks);
    if (carry)
        ps->literals = 0;
    else
        wsl_pack_reset(ps, 1);
    struct wsl_tbits_out o = {op, lit, times};
    wsl_encode_tbits_run(ps, st, ev, ev + n, WSL_MAX_API_IDS, &o);
    struct wsl_tbits_dir dir;
    dir.literals = ps->literals;
    wsl_tbits_close(&dir, bits, times, n);
    dir.reserved = carry ? WSL_TBITS_CONTINUES : 0;
    const struct part parts[] = {{&dir, sizeof dir}, {op, n}, {bits, dir.bit_bytes}, {lit, (size_t)(o.lit - lit)}};
    size_t size = concat(buf, parts, sizeof parts / sizeof parts[0]);
    free(st);
    free(op);
    free(lit);
    free(bits);
    free(times);
    *out = buf;
    return size;
}

void synth_events(struct synth *s, uint32_t tid, uint64_t dropped, const struct wsl_event *ev, uint32_t n)
{
    struct wsl_events_header eh;
    memset(&eh, 0, sizeof eh);
    eh.tid = tid;
    eh.count = n;
    eh.base_ticks = n ? ev[0].t_start : 0;
    eh.dropped = dropped;
    uint8_t *enc;
    size_t size = s->opt.v12_events   ? synth_encode_events(ev, n, eh.base_ticks, &enc)
                  : s->opt.v14_events ? synth_encode_packed(ev, n, eh.base_ticks, &enc)
                  : s->opt.v19_events ? synth_encode_gaps(ev, n, eh.base_ticks, &enc)
                                      : synth_encode_tbits(ev, n, eh.base_ticks, &enc);
    eh.encoded_size = (uint32_t)size;
    synth_chunk_header(s, s->opt.v12_events   ? WSL_CHUNK_EVENTS
                          : s->opt.v14_events ? WSL_CHUNK_EVENTS_PACKED
                          : s->opt.v19_events ? WSL_CHUNK_EVENTS_GAPS
                                              : WSL_CHUNK_EVENTS_BITS,
                       (uint32_t)(sizeof eh + size));
    synth_bytes(s, &eh, sizeof eh);
    synth_bytes(s, enc, size);
    if (s->opt.flush_each_chunk)
        synth_flush(s);
    free(enc);
}

void synth_driver(struct synth *s, int32_t version, int32_t init_result, const char *libcuda,
                  const struct wsl_gpu_info *gpus, uint32_t count)
{
    size_t n = sizeof(struct wsl_driver_info) + count * sizeof(struct wsl_gpu_info);
    uint8_t *buf = calloc(1, n);
    if (!buf)
        die("out of memory");
    struct wsl_driver_info di;
    memset(&di, 0, sizeof di);
    di.driver_version = version;
    di.init_result = init_result;
    di.devices = count;
    snprintf(di.libcuda_path, sizeof di.libcuda_path, "%s", libcuda);
    memcpy(buf, &di, sizeof di);
    if (count)
        memcpy(buf + sizeof di, gpus, count * sizeof *gpus);
    synth_chunk(s, WSL_CHUNK_DRIVER, buf, n);
    free(buf);
}

void synth_string(struct synth *s, uint32_t id, const char *bytes)
{
    size_t len = strlen(bytes);
    uint8_t *buf = malloc(4 + len);
    if (!buf)
        die("out of memory");
    memcpy(buf, &id, 4);
    memcpy(buf + 4, bytes, len);
    synth_chunk(s, WSL_CHUNK_STRING, buf, 4 + len);
    free(buf);
}

void synth_mounts(struct synth *s, const char *mountinfo)
{
    synth_chunk(s, WSL_CHUNK_MOUNTS, mountinfo, strlen(mountinfo));
}

void synth_paths(struct synth *s, const uint32_t *ids, const char *const *paths, uint32_t n)
{
    size_t size = 0;
    for (uint32_t i = 0; i < n; i++)
        size += sizeof(struct wsl_path_entry_header) + strlen(paths[i]);
    uint8_t *buf = malloc(size ? size : 1), *p = buf;
    if (!buf)
        die("out of memory");
    for (uint32_t i = 0; i < n; i++) {
        struct wsl_path_entry_header h = {ids[i], (uint32_t)strlen(paths[i])};
        memcpy(p, &h, sizeof h);
        memcpy(p + sizeof h, paths[i], h.length);
        p += sizeof h + h.length;
    }
    synth_chunk(s, WSL_CHUNK_PATHS, buf, size);
    free(buf);
}

void synth_end(struct synth *s, uint64_t end_ticks, uint64_t written, uint64_t dropped, uint32_t threads)
{
    struct wsl_end_info e;
    memset(&e, 0, sizeof e);
    e.end_ticks = end_ticks;
    e.events_written = written;
    e.events_dropped = dropped;
    e.threads = threads;
    synth_chunk(s, WSL_CHUNK_END, &e, sizeof e);
}

/* ---- files ---- */

off_t synth_file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        die("stat %s: %s", path, strerror(errno));
    return st.st_size;
}

void synth_truncate_file(const char *path, off_t size)
{
    if (truncate(path, size) != 0)
        die("truncate %s: %s", path, strerror(errno));
}

void synth_flip_byte(const char *path, off_t at, uint8_t xor_mask)
{
    int fd = open(path, O_RDWR);
    uint8_t b;
    if (fd < 0 || pread(fd, &b, 1, at) != 1)
        die("read %s: %s", path, strerror(errno));
    b ^= xor_mask;
    if (pwrite(fd, &b, 1, at) != 1)
        die("write %s: %s", path, strerror(errno));
    close(fd);
}

uint8_t *synth_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            die("out of memory");
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *size = n;
    return buf;
}

void synth_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        die("write %s failed", path);
}

void synth_api_rows(struct synth *s, const struct synth_row *rows, uint16_t n)
{
    size_t cap = 4, off = 4;
    for (uint16_t i = 0; i < n; i++)
        cap += 8 + strlen(rows[i].sym) + 1 + strlen(rows[i].base) + 1;
    uint8_t *table = calloc(1, cap);
    uint32_t count = n;
    memcpy(table, &count, 4);
    for (uint16_t i = 0; i < n; i++) {
        uint8_t head[8] = {0};
        memcpy(head, &i, 2);
        memcpy(head + 2, &rows[i].cat, 2);
        head[5] = rows[i].flags;
        memcpy(table + off, head, 8);
        off += 8;
        size_t ls = strlen(rows[i].sym) + 1, lb = strlen(rows[i].base) + 1;
        memcpy(table + off, rows[i].sym, ls);
        off += ls;
        memcpy(table + off, rows[i].base, lb);
        off += lb;
    }
    synth_chunk(s, WSL_CHUNK_API_TABLE, table, off);
    free(table);
}
