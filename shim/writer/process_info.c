/*
 * The chunks that say what the process is, written as a trace opens and as
 * things change: PROCESS (pid, host, executable, command line, start in every
 * clock), API_TABLE (the hooked entry points' ids and names), EMULATION (the
 * SPEC in force), MOUNTS (the mount table, again when it changes) and CLOCK
 * (the samples that map the event clock to the system's).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "writer_internal.h"

/* The mount table last written, to write it again only when it changed. */
static char *mounts_buf, *mounts_prev;
static size_t mounts_cap, mounts_prev_len, mounts_prev_cap;

/* The mount points, before the first path is hashed (WSLSHIM_IO_PATHS=hash). */
void wsl_mounts_note_for_hashing(void)
{
    size_t mn = wsl_io_read_mounts(&mounts_buf, &mounts_cap);
    if (mn)
        wsl_path_hash_note_mounts(mounts_buf, mn);
}

/* The mount table, when it changed since the one last written (anew: whatever
 * was written before, a new trace). */
void wsl_emit_mounts_if_changed(int anew)
{
    if (anew)
        mounts_prev_len = 0;
    size_t n = wsl_io_read_mounts(&mounts_buf, &mounts_cap);
    if (!n || (n == mounts_prev_len && !memcmp(mounts_buf, mounts_prev, n)))
        return;
    if (wsl_cfg.io_paths_hash)
        wsl_path_hash_note_mounts(mounts_buf, n);
    wsl_io_note_mounts(mounts_buf, n);
    wsl_emit_chunk(WSL_CHUNK_MOUNTS, mounts_buf, n, NULL, 0);
    if (n > mounts_prev_cap) {
        char *nb = realloc(mounts_prev, n);
        if (!nb)
            return;
        mounts_prev = nb;
        mounts_prev_cap = n;
    }
    memcpy(mounts_prev, mounts_buf, n);
    mounts_prev_len = n;
}

/* Process start, in every clock; reset in a forked child. */
uint64_t wsl_start_ticks, wsl_start_mono, wsl_start_real;

/* The process's start: when the shim was loaded (its settings read), not when its first call
 * was recorded, so a program's start-up before its first hooked call counts as its own (phases). */
void wsl_writer_note_start(void)
{
    if (!wsl_start_mono) {
        wsl_start_ticks = wsl_ticks();
        wsl_start_mono = wsl_mono_ns();
        wsl_start_real = wsl_real_ns();
    }
}

void wsl_emit_clock(void)
{
    struct wsl_clock_sample c;
    c.ticks = wsl_ticks();
    c.mono_ns = wsl_mono_ns();
    c.real_ns = wsl_real_ns();
    wsl_emit_chunk(WSL_CHUNK_CLOCK, &c, sizeof c, NULL, 0);
}

static uint32_t detect_wsl(void)
{
    char rel[256];
    size_t n = wsl_read_small_file("/proc/sys/kernel/osrelease", rel, sizeof rel - 1);
    rel[n] = 0;
    if (!strcasestr(rel, "microsoft"))
        return 0;
    return strstr(rel, "WSL2") || strcasestr(rel, "microsoft-standard") ? WSL_PROC_WSL2 : WSL_PROC_WSL1;
}

/* WSLSHIM_IO_PATHS=hash: arguments that name files (they hold a '/') are
 * hashed like paths; the others (flags, numbers) stay. In place; returns the
 * new length of the NUL-separated list. */
static size_t hash_path_arguments(char *args, size_t len, size_t cap)
{
    static char copy[65536], out[65536];
    if (len > sizeof copy)
        return len;
    memcpy(copy, args, len);
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t l = strnlen(copy + i, len - i);
        if (memchr(copy + i, '/', l)) {
            size_t room = sizeof out - o - 1;
            o += wsl_path_hash(copy + i, l, out + o, room < WSL_PATH_MAX_LENGTH ? room : WSL_PATH_MAX_LENGTH);
        } else {
            size_t c = l < sizeof out - o - 1 ? l : sizeof out - o - 1;
            memcpy(out + o, copy + i, c);
            o += c;
        }
        out[o++] = 0;
        i += l + 1;
        if (o + 2 >= sizeof out)
            break;
    }
    if (o > cap)
        o = cap;
    memcpy(args, out, o);
    return o;
}

void wsl_emit_process(void)
{
    static char strings[65536];
    size_t n = 0;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    n += (size_t)snprintf(strings + n, sizeof strings - n, "%s", host) + 1;
    char exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    if (wsl_cfg.io_paths_hash && exe[0]) {
        static char hx[PATH_MAX];
        size_t hl = wsl_path_hash(exe, strlen(exe), hx, sizeof hx - 1);
        hx[hl] = 0;
        snprintf(exe, sizeof exe, "%s", hx);
    }
    n += (size_t)snprintf(strings + n, sizeof strings - n, "%s", exe) + 1;
    struct utsname u;
    if (uname(&u) != 0)
        u.release[0] = 0;
    n += (size_t)snprintf(strings + n, sizeof strings - n, "%s", u.release) + 1;
    size_t cl = wsl_read_small_file("/proc/self/cmdline", strings + n, sizeof strings - n - 1);
    if (cl && strings[n + cl - 1] != 0)
        strings[n + cl++] = 0; /* cut short: keep it NUL-terminated */
    if (wsl_cfg.io_paths_hash)
        cl = hash_path_arguments(strings + n, cl, sizeof strings - n);
    n += cl;

    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = (int32_t)getpid();
    pi.ppid = (int32_t)getppid();
    pi.flags = (uint32_t)wsl_process_flags() | detect_wsl();
    pi.clock_kind = wsl_cfg.use_tsc ? WSL_CLOCK_TSC : WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = wsl_start_ticks;
    pi.start_mono_ns = wsl_start_mono;
    pi.start_real_ns = wsl_start_real;
    pi.strings_size = (uint32_t)n;
    pi.io_timing = (uint32_t)wsl_cfg.io_timing;
    wsl_emit_chunk(WSL_CHUNK_PROCESS, &pi, sizeof pi, strings, n);
}

void wsl_emit_api_table(void)
{
    /* Names are at most 64 bytes each (checked where the table is built), so
     * this buffer always holds the whole table. */
    static uint8_t buf[4 + WSL_MAX_API_IDS * (8 + 2 * 64)];
    size_t n = 4;
    uint32_t count = 0;
    for (unsigned i = 0; i < wsl_api_count; i++) {
        size_t ls = strnlen(wsl_api_table[i].sym, 63) + 1, lb = strnlen(wsl_api_table[i].base, 63) + 1;
        uint16_t id = (uint16_t)i, cat = wsl_api_table[i].category;
        memcpy(buf + n, &id, 2);
        memcpy(buf + n + 2, &cat, 2);
        buf[n + 4] = wsl_api_table[i].per_thread;
        buf[n + 5] = wsl_api_table[i].flags;
        buf[n + 6] = buf[n + 7] = 0;
        memcpy(buf + n + 8, wsl_api_table[i].sym, ls - 1);
        buf[n + 8 + ls - 1] = 0;
        memcpy(buf + n + 8 + ls, wsl_api_table[i].base, lb - 1);
        buf[n + 8 + ls + lb - 1] = 0;
        n += 8 + ls + lb;
        count++;
    }
    memcpy(buf, &count, 4);
    wsl_emit_chunk(WSL_CHUNK_API_TABLE, buf, n, NULL, 0);
}

/* The SPEC and its costs (trace format 1.8), when one is in force. */
void wsl_emit_emulation(void)
{
    if (!wsl_cfg.emulate)
        return;
    struct wsl_emulation_info ei;
    memset(&ei, 0, sizeof ei);
    ei.families = WSL_EMU_FAMILIES;
    for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
        ei.ns[f] = wsl_cfg.emu.ns[f];
    if (wsl_cfg.emu.fs.count) { /* the file system's costs; its paths are in the SPEC */
        ei.families = 8;
        ei.ns[WSL_EMU_INFO_FS_META] = wsl_cfg.emu.fs.meta_ns;
        ei.ns[WSL_EMU_INFO_FS_READ] = wsl_cfg.emu.fs.read_bps;
        ei.ns[WSL_EMU_INFO_FS_WRITE] = wsl_cfg.emu.fs.write_bps;
    }
    ei.spec_size = (uint32_t)strlen(wsl_cfg.emu.text) + 1;
    wsl_emit_chunk(WSL_CHUNK_EMULATION, &ei, sizeof ei, wsl_cfg.emu.text, ei.spec_size);
}
