/*
 * Latency emulation (docs/emulation.md): WSLSHIM_EMULATE=SPEC, read once at
 * load, adds host time to hooked CUDA calls so that the program runs as if
 * those calls cost more. The hooks spin on the event clock after the real
 * call returned (its result and side effects are the driver's own), inside
 * the recorded call, so the trace shows the cost the program saw.
 *
 * A spin, not a sleep: nanosleep of a few microseconds overshoots by tens of
 * microseconds (timer slack, scheduler wake-up); reading the cycle counter in
 * a loop ends within a few dozen ns of the target.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim_internal.h"

uint64_t wsl_emu_cat_ticks[WSL_CAT_COUNT];
int wsl_emu_fs_on;
static uint64_t fs_meta_ticks;
static double fs_ticks_per_byte[2]; /* read, write */

uint64_t wsl_emu_spin(uint64_t from, uint64_t ticks)
{
    uint64_t until = from + ticks, now;
    while ((now = wsl_ticks()) < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
    }
    return now;
}

void wsl_emu_fs_meta(void)
{
    if (fs_meta_ticks)
        wsl_emu_spin(wsl_ticks(), fs_meta_ticks);
}

void wsl_emu_fs_bytes(int write, uint64_t bytes)
{
    double t = (double)bytes * fs_ticks_per_byte[write != 0];
    if (t >= 1)
        wsl_emu_spin(wsl_ticks(), (uint64_t)(t + 0.5));
}

/* Ticks of the event clock per ns: 1 for the monotonic clock, else the cycle
 * counter against CLOCK_MONOTONIC over 5 ms (at load, and only when emulating). */
static double ticks_per_ns(void)
{
    if (!wsl_cfg.use_tsc)
        return 1.0;
    uint64_t m0 = wsl_mono_ns(), t0 = wsl_ticks(), m1, t1;
    do {
        m1 = wsl_mono_ns();
        t1 = wsl_ticks();
    } while (m1 - m0 < 5000000u);
    return (double)(t1 - t0) / (double)(m1 - m0);
}

static int read_spec_file(const char *path, struct wsl_emu_spec *s, char *err, size_t errlen)
{
    static char text[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot be opened", path);
        return -1;
    }
    size_t n = 0;
    ssize_t got;
    while (n < sizeof text - 1 && (got = read(fd, text + n, sizeof text - 1 - n)) > 0)
        n += (size_t)got;
    close(fd);
    text[n] = 0;
    memset(s, 0, sizeof *s);
    snprintf(s->text, sizeof s->text, "%s", path);
    return wsl_emu_parse_json(text, path, s, err, errlen);
}

void wsl_emulation_load(const char *spec)
{
    char err[256];
    struct wsl_emu_spec s;
    int rc = wsl_emu_spec_is_file(spec) ? read_spec_file(spec, &s, err, sizeof err)
                                        : wsl_emu_parse(spec, &s, err, sizeof err);
    if (rc != 0) {
        wsl_log(WSL_LOG_ERROR, "WSLSHIM_EMULATE: %s; the run is not emulated", err);
        return;
    }
    wsl_cfg.emu = s;
    wsl_cfg.emulate = 1;
    double tpn = ticks_per_ns();
    for (unsigned c = 0; c < WSL_CAT_COUNT; c++) {
        uint64_t ns = wsl_emu_cost_of(s.ns, c);
        wsl_emu_cat_ticks[c] = ns ? (uint64_t)((double)ns * tpn + 0.5) : 0;
    }
    if (s.fs.count) {
        fs_meta_ticks = (uint64_t)((double)s.fs.meta_ns * tpn + 0.5);
        fs_ticks_per_byte[0] = s.fs.read_bps ? 1e9 * tpn / (double)s.fs.read_bps : 0;
        fs_ticks_per_byte[1] = s.fs.write_bps ? 1e9 * tpn / (double)s.fs.write_bps : 0;
        wsl_emu_fs_on = 1;
    }
    wsl_log(WSL_LOG_INFO, "emulating %s: launch +%llu ns, sync +%llu ns, alloc +%llu ns, free +%llu ns, copy +%llu ns",
            s.text, (unsigned long long)s.ns[WSL_EMU_LAUNCH], (unsigned long long)s.ns[WSL_EMU_SYNC],
            (unsigned long long)s.ns[WSL_EMU_ALLOC], (unsigned long long)s.ns[WSL_EMU_FREE],
            (unsigned long long)s.ns[WSL_EMU_COPY]);
}
