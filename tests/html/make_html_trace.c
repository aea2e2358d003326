/*
 * make_html_trace: writes a synthetic WSL2 trace for html_check.py: a
 * launch-bound phase, a GPU-bound phase, sampled GPU times and file reads on
 * two filesystems; --hostile plants HTML and script in every string the trace
 * carries (kernel name, paths, command line, host name), with a byte that is
 * not UTF-8 and a control character. Prints what it wrote as JSON.
 *
 *   make_html_trace OUT [--pid N] [--start-ns NS] [--launches N] [--sample N] [--hostile]
 *
 * Workload, times in ns after start, thread pid:
 *   +1000, +2000  cuModuleGetFunction names 0xf1 (string 7) and 0xf2 (string 8)
 *   small phase   `launches` cuLaunchKernel of 0xf1, one every 6 us from +20 us,
 *                 each 4 us long; every `sample`th timed on the GPU (GPU_KERNEL,
 *                 idle at submit) for 1000 + 300 (i % 7) ns, from its end + 500
 *   big phase     40 launches of 0xf2 every 210 us after it, every `sample`th timed, 200 us
 * Thread pid+1 opens /data/train.bin (ext4, 8:48) and a file on /mnt/c (9p,
 * 0:62) and reads 65536 bytes from each every 5 ms over the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_synth.h"

struct list {
    struct wsl_event *ev;
    size_t n, cap;
};

static struct wsl_event *add(struct list *l, uint16_t api, uint64_t t0, uint64_t dur)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
        if (!l->ev)
            abort();
    }
    struct wsl_event *e = &l->ev[l->n++];
    memset(e, 0, sizeof *e);
    e->api = api;
    e->t_start = t0;
    e->t_end = t0 + dur;
    return e;
}

/* The shim's table plus one GPU_KERNEL entry (its id: synth_api_count). */
static void api_table(struct synth *s)
{
    size_t cap = 1 << 16, n = 4;
    uint8_t *buf = malloc(cap);
    uint32_t count = synth_api_count + 1;
    memcpy(buf, &count, 4);
    for (uint32_t i = 0; i < count; i++) {
        const char *sym = i < synth_api_count ? synth_apis[i].symbol : "gpu_kernel";
        const char *base = i < synth_api_count ? synth_apis[i].base : "gpu_kernel";
        uint16_t id = (uint16_t)i, cat = i < synth_api_count ? synth_apis[i].category : WSL_CAT_GPU_KERNEL;
        uint8_t pt = i < synth_api_count ? synth_apis[i].per_thread_stream : 0;
        size_t need = 8 + strlen(sym) + strlen(base) + 2;
        if (n + need > cap)
            abort();
        memcpy(buf + n, &id, 2);
        memcpy(buf + n + 2, &cat, 2);
        buf[n + 4] = pt;
        memset(buf + n + 5, 0, 3);
        n += 8;
        memcpy(buf + n, sym, strlen(sym) + 1);
        n += strlen(sym) + 1;
        memcpy(buf + n, base, strlen(base) + 1);
        n += strlen(base) + 1;
    }
    synth_chunk(s, WSL_CHUNK_API_TABLE, buf, n);
    free(buf);
}

static void timed(struct list *gpu, uint16_t api, const struct wsl_event *launch, uint64_t start, uint64_t dur,
                  uint32_t flags, int32_t tid)
{
    struct wsl_event *k = add(gpu, api, start, dur);
    k->stream = launch->stream;
    k->a[0] = launch->a[0];
    k->a[1] = launch->t_start;
    k->a[2] = (uint64_t)(flags | WSL_GPU_MAPPED) | (uint64_t)(uint32_t)tid << 32;
    k->a[3] = dur;
}

#define HOSTILE "<script>alert(1)</script><img src=\"http://evil.example/x.png\" onerror='alert(2)'>&amp;"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: make_html_trace OUT [--pid N] [--start-ns NS] [--launches N] [--sample N] "
                        "[--hostile]\n");
        return 2;
    }
    int32_t pid = 6000;
    uint64_t start = 9000000000ull;
    unsigned launches = 3000, sample = 4;
    int hostile = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--pid") && i + 1 < argc)
            pid = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--start-ns") && i + 1 < argc)
            start = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            launches = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sample") && i + 1 < argc)
            sample = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hostile"))
            hostile = 1;
        else
            return 2;
    }
    if (sample == 0)
        sample = 1;
    /* kernel names do not start with / or < (those are paths) */
    const char *small_name = hostile ? "evil" HOSTILE "\xff\x1b[31m</svg></style>" : "_Z12small_kernelPfi";
    const char *big_name = "_Z4gemmPKfS0_Pfi";
    const char *ext4_path = hostile ? "/data/" HOSTILE ".bin" : "/data/train.bin";
    const char *win_path = hostile ? "/mnt/c/Users/" HOSTILE "/shard-0001.bin" : "/mnt/c/Users/me/data/shard-0001.bin";

    const uint16_t gpu_api = (uint16_t)synth_api_count;
    const uint16_t launch_api = synth_api_id("cuLaunchKernel");
    struct list main_thread = {0}, io_thread = {0}, gpu = {0};
    uint64_t timed_count = 0, timed_ns = 0, big_ns = 0, big_timed = 0;

    struct wsl_event *e = add(&main_thread, synth_api_id("cuModuleGetFunction"), start + 1000, 500);
    e->a[0] = 0xf1;
    e->a[1] = 7;
    e->a[2] = 0xabc;
    e = add(&main_thread, synth_api_id("cuModuleGetFunction"), start + 2000, 500);
    e->a[0] = 0xf2;
    e->a[1] = 8;
    e->a[2] = 0xabc;
    uint64_t t = start + 20000;
    for (unsigned i = 0; i < launches; i++, t += 6000) {
        e = add(&main_thread, launch_api, t, 4000);
        e->stream = 0x5000;
        e->a[0] = 0xf1;
        e->a[1] = WSL_GRID(4, 1);
        e->a[2] = WSL_BLOCK(1, 128, 1, 1);
        if (i % sample == 0) {
            uint64_t dur = 1000 + 300 * (i % 7);
            timed(&gpu, gpu_api, e, e->t_end + 500, dur, WSL_GPU_IDLE_AT_SUBMIT, pid);
            timed_count++;
            timed_ns += dur;
        }
    }
    for (unsigned i = 0; i < 40; i++, t += 210000) {
        e = add(&main_thread, launch_api, t, 4000);
        e->stream = 0x5000;
        e->a[0] = 0xf2;
        e->a[1] = WSL_GRID(1024, 1);
        e->a[2] = WSL_BLOCK(1, 256, 1, 1);
        if (i % sample == 0) {
            timed(&gpu, gpu_api, e, e->t_end + 500, 200000, 0, pid);
            big_ns += 200000;
            big_timed++;
        }
    }
    uint64_t end = t + 1000000;

    /* file reads over the run, on ext4 and on the Windows drive */
    e = add(&io_thread, synth_api_id("open"), start + 5000, 3000);
    e->stream = 5;
    e->a[0] = 3;
    e->a[1] = WSL_DEV(8, 48);
    e->a[3] = 1u << 30;
    e = add(&io_thread, synth_api_id("open"), start + 9000, 30000);
    e->stream = 6;
    e->a[0] = 4;
    e->a[1] = WSL_DEV(0, 62);
    e->a[3] = 1u << 30;
    uint64_t reads = 0, bytes = 0;
    for (uint64_t at = start + 100000; at + 200000 < end; at += 5000000) {
        for (int f = 0; f < 2; f++) {
            e = add(&io_thread, synth_api_id("read"), at + (uint64_t)f * 100000, f ? 90000 : 20000);
            e->stream = f ? 6 : 5;
            e->a[0] = f ? 4 : 3;
            e->a[1] = 65536;
            e->a[2] = 65536;
            e->a[3] = ~0ull;
            reads++;
            bytes += 65536;
        }
    }

    struct synth_options so = {.level = 1, .checksum = true};
    struct synth *s = synth_open(argv[1], &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = 1;
    pi.flags = WSL_PROC_WSL2;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = start;
    pi.start_mono_ns = start;
    pi.start_real_ns = 1700000000000000000ull;
    const char *args[] = {"/usr/bin/python3", hostile ? "train.py --tag=" HOSTILE : "train.py"};
    synth_process(s, &pi, hostile ? "host<b>\"x\"</b>" : "testhost", "/usr/bin/python3",
                  "5.15.167.4-microsoft-standard-WSL2", 2, args);
    api_table(s);
    synth_mounts(s, "61 45 8:48 / / rw,relatime - ext4 /dev/sdd rw\n"
                    "74 61 0:62 / /mnt/c rw,noatime - 9p C:\\134 rw,aname=drvfs;path=C:\\;uid=1000\n");
    synth_clock(s, start, start, 0);
    uint32_t ids[4] = {7, 8, 3, 4};
    const char *names[4] = {small_name, big_name, ext4_path, win_path};
    synth_paths(s, ids, names, 4);
    synth_events(s, (uint32_t)pid, 0, main_thread.ev, (uint32_t)main_thread.n);
    synth_events(s, (uint32_t)pid + 1, 0, io_thread.ev, (uint32_t)io_thread.n);
    synth_events(s, (uint32_t)pid + 2, 0, gpu.ev, (uint32_t)gpu.n);
    synth_clock(s, end, end, 0);
    synth_end(s, end, main_thread.n + io_thread.n + gpu.n, 0, 3);
    synth_close(s);
    /* the GPU busy estimate the report should draw: every timed kernel
     * stands for launches / timed of the process's launches */
    uint64_t all_launches = launches + 40, all_timed = timed_count + big_timed;
    double scale = (double)all_launches / (double)all_timed;
    printf("{\"pid\": %d, \"launches\": %llu, \"timed\": %llu, \"reads\": %llu, \"bytes_read\": %llu, "
           "\"gpu_busy_ns\": %.3f, \"small_kernel\": \"%s\", \"wall_ns\": %llu}\n",
           pid, (unsigned long long)all_launches, (unsigned long long)all_timed, (unsigned long long)reads,
           (unsigned long long)bytes, (double)(timed_ns + big_ns) * scale,
           hostile ? "hostile" : small_name, (unsigned long long)(end - start));
    free(main_thread.ev);
    free(io_thread.ev);
    free(gpu.ev);
    return 0;
}
