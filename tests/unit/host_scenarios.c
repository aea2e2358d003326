#include "host_scenarios.h"

#include <string.h>

#include "mem_scenarios.h"

#define MIB (1ull << 20)
#define DEV_BASE 0x7f0000000000ull      /* device allocations */
#define PINNED_BASE 0x7e0000000000ull   /* cuMemHostAlloc */
#define PAGEABLE_BASE 0x5555000000ull   /* ordinary malloc'd memory */
#define STREAM 0x1234ull

static void launch(struct mem_builder *b, unsigned thread, uint64_t t)
{
    mb_call_args(b, thread, t, HOST_LAUNCH_NS, "cuLaunchKernel", 0, STREAM, 0xf00d, 1, 1, 0);
}

static void copy(struct mem_builder *b, unsigned thread, uint64_t t, uint64_t dur, const char *symbol, uint64_t dst,
                 uint64_t src, uint64_t bytes)
{
    mb_call_args(b, thread, t, dur, symbol, 0, STREAM, dst, src, bytes, 0);
}

/* Each step: 10 launches (5 us, every 10 us), then loss.item(): a 4-byte cuMemcpyDtoHAsync to a
 * pageable scalar that waits 1 ms for the GPU, a 2 us cuStreamSynchronize, and 100 us of Python
 * before the next step's first launch. Group [copy, sync]: refill gap = 2 + 100 + 5 us = 107 us,
 * host time 1002 us: charge 107 us; the last step's group has no later submission (0). */
static void sync_item(struct mem_builder *b)
{
    mb_call(b, 0, 0, 50 * HOST_US, "cuMemAlloc_v2", 0, DEV_BASE, 64 * MIB);
    uint64_t t = 100 * HOST_US;
    for (unsigned s = 0; s < HOST_SYNC_STEPS; s++) {
        for (unsigned k = 0; k < 10; k++, t += 10 * HOST_US)
            launch(b, 0, t);
        copy(b, 0, t, 1 * HOST_MS, "cuMemcpyDtoHAsync_v2", PAGEABLE_BASE + 64, DEV_BASE + 4096, 4);
        t += 1 * HOST_MS;
        mb_call_args(b, 0, t, 2 * HOST_US, "cuStreamSynchronize", 0, STREAM, 0, 0, 0, 0);
        t += 2 * HOST_US + 100 * HOST_US;
    }
}

/* Each 1 ms step: cuMemAlloc 1 MiB (80 us), a launch, cuMemFree (60 us); the pointer
 * alternates between two addresses. Also 300 stream-ordered pairs, which do not count. */
static void alloc_churn(struct mem_builder *b, unsigned thread, uint64_t t0, unsigned steps)
{
    uint64_t t = t0;
    for (unsigned s = 0; s < steps; s++, t += HOST_MS) {
        uint64_t p = DEV_BASE + (s % 2) * 16 * MIB;
        mb_call(b, thread, t, 80 * HOST_US, "cuMemAlloc_v2", 0, p, MIB);
        launch(b, thread, t + 100 * HOST_US);
        mb_call(b, thread, t + 200 * HOST_US, 60 * HOST_US, "cuMemFree_v2", 0, p, 0);
        mb_call_args(b, thread, t + 300 * HOST_US, 2 * HOST_US, "cuMemAllocAsync", 0, STREAM, DEV_BASE + 64 * MIB,
                     MIB, 0, 0);
        mb_call_args(b, thread, t + 400 * HOST_US, 2 * HOST_US, "cuMemFreeAsync", 0, STREAM, DEV_BASE + 64 * MIB, 0,
                     0, 0);
    }
}

/* 2000 copies of 4 KiB (10 us each, every 20 us) from inside a 16 MiB pinned buffer to the GPU. */
static void small_copies(struct mem_builder *b)
{
    mb_call(b, 0, 0, 50 * HOST_US, "cuMemAlloc_v2", 0, DEV_BASE, 64 * MIB);
    mb_call(b, 0, 100 * HOST_US, 500 * HOST_US, "cuMemHostAlloc", 0, PINNED_BASE, 16 * MIB);
    uint64_t t = HOST_MS;
    for (unsigned i = 0; i < HOST_SMALL_COPIES; i++, t += 20 * HOST_US)
        copy(b, 0, t, HOST_SMALL_COPY_NS, "cuMemcpyHtoDAsync_v2", DEV_BASE + i * 4096ull, PINNED_BASE + i * 4096ull,
             4096);
}

/*
 * Thread 0: a device buffer, 16 MiB pinned (cuMemHostAlloc), 16 MiB registered, one launch (5 us:
 * the submission cost). Then, every 3 ms:
 *   100 cuMemcpyHtoDAsync of 8 MiB from pageable memory, 2 ms each            -> pageable
 *   100 cuMemcpyHtoDAsync of 8 MiB from the registered buffer, 200 us each     -> pinned
 * Thread 1 (its chunk written first): cuMemcpyAsync of 1 MiB into the middle of the device buffer
 * from the pinned buffer (pinned; allocated by thread 0 earlier), after cuMemFreeHost from pageable
 * memory at that very address (pageable), and a DtoH cuMemcpyAsync to pageable memory (counted,
 * not charged: a wait).
 */
static void pageable(struct mem_builder *b)
{
    mb_call(b, 0, 0, 50 * HOST_US, "cuMemAlloc_v2", 0, DEV_BASE, 256 * MIB);
    mb_call(b, 0, 100 * HOST_US, 500 * HOST_US, "cuMemHostAlloc", 0, PINNED_BASE, 16 * MIB);
    mb_call_args(b, 0, 700 * HOST_US, 500 * HOST_US, "cuMemHostRegister_v2", 0, 0, PINNED_BASE + 64 * MIB, 16 * MIB,
                 0, 0);
    launch(b, 0, 1300 * HOST_US);
    uint64_t t = 2 * HOST_MS;
    for (unsigned i = 0; i < HOST_PAGEABLE_COPIES; i++, t += 3 * HOST_MS) {
        copy(b, 0, t, HOST_PAGEABLE_COPY_NS, "cuMemcpyHtoDAsync_v2", DEV_BASE, PAGEABLE_BASE + i * 8 * MIB, 8 * MIB);
        copy(b, 0, t + 2100 * HOST_US, 200 * HOST_US, "cuMemcpyHtoDAsync_v2", DEV_BASE + 8 * MIB,
             PINNED_BASE + 64 * MIB, 8 * MIB);
    }
    uint64_t end = t;
    mb_call(b, 0, end, 100 * HOST_US, "cuMemFreeHost", 0, PINNED_BASE, 0);
    /* thread 1 */
    copy(b, 1, 5 * HOST_MS, 300 * HOST_US, "cuMemcpyAsync", DEV_BASE + 100 * MIB, PINNED_BASE + 4 * MIB, MIB);
    copy(b, 1, end + HOST_MS, 300 * HOST_US, "cuMemcpyAsync", DEV_BASE + 100 * MIB, PINNED_BASE + 4 * MIB, MIB);
    copy(b, 1, end + 2 * HOST_MS, 300 * HOST_US, "cuMemcpyAsync", PAGEABLE_BASE, DEV_BASE + 8, MIB);
}

/* Large kernels: 100 launches 10 ms apart, one cuCtxSynchronize of 1 s at the end; thread 1 polls
 * cuStreamQuery every 5 ms (a watchdog) and never submits anything. */
static void quiet(struct mem_builder *b)
{
    for (unsigned i = 0; i < 100; i++)
        launch(b, 0, i * 10 * HOST_MS);
    mb_call(b, 0, 1000 * HOST_MS, 1000 * HOST_MS, "cuCtxSynchronize", 0, 0, 0);
    for (unsigned i = 0; i < 400; i++)
        mb_call_args(b, 1, i * 5 * HOST_MS, 1 * HOST_US, "cuStreamQuery", i % 2 ? 0 : 600, STREAM, 0, 0, 0, 0);
}

/* 100 rounds: a launch, then cuStreamQuery NOT_READY x 10 (every 100 us), then one CUDA_SUCCESS,
 * then 50 us until the next launch. Poll wait = first not-ready start to the success's end:
 * 10 x 100 us + 1 us = 1001 us; gap = 50 + 5 us = 55 us. */
static void polls(struct mem_builder *b)
{
    uint64_t t = 0;
    for (unsigned r = 0; r < 100; r++) {
        launch(b, 0, t);
        t += 10 * HOST_US;
        for (unsigned q = 0; q < 10; q++, t += 100 * HOST_US)
            mb_call_args(b, 0, t, 1 * HOST_US, "cuStreamQuery", 600, STREAM, 0, 0, 0, 0);
        mb_call_args(b, 0, t, 1 * HOST_US, "cuStreamQuery", 0, STREAM, 0, 0, 0, 0);
        t += 1 * HOST_US + 50 * HOST_US;
    }
    launch(b, 0, t);
}

/* For the wall-time cap: two processes over the same 400 ms. churn_parallel spends 140 us of
 * every 150 us re-allocating; sync_parallel waits 1 ms with a 1 ms refill gap every 1.1 ms. */
static void churn_parallel(struct mem_builder *b)
{
    uint64_t t = 0;
    for (unsigned s = 0; t < 400 * HOST_MS; s++, t += 150 * HOST_US) {
        mb_call(b, 0, t, 80 * HOST_US, "cuMemAlloc_v2", 0, DEV_BASE, MIB);
        mb_call(b, 0, t + 80 * HOST_US, 60 * HOST_US, "cuMemFree_v2", 0, DEV_BASE, 0);
    }
}

static void sync_parallel(struct mem_builder *b)
{
    uint64_t t = 0;
    launch(b, 0, t);
    for (t = 10 * HOST_US; t < 400 * HOST_MS; t += 2 * HOST_MS) {
        mb_call_args(b, 0, t, 1 * HOST_MS, "cuStreamSynchronize", 0, STREAM, 0, 0, 0, 0);
        launch(b, 0, t + 2 * HOST_MS - HOST_LAUNCH_NS - 1);
    }
}

/* For --compare: `launches` launches of `launch_ns` every `every_ns` on each of `threads` threads,
 * then 10 cuStreamSynchronize of 100 us every 200 us on thread 0. */
static void compare_run(struct mem_builder *b, unsigned threads, unsigned launches, uint64_t launch_ns,
                        uint64_t every_ns)
{
    uint64_t end = 0;
    for (unsigned th = 0; th < threads; th++)
        for (unsigned i = 0; i < launches; i++) {
            uint64_t t = i * every_ns;
            mb_call_args(b, th, t, launch_ns, "cuLaunchKernel", 0, STREAM, 0xf00d, 1, 1, 0);
            if (t + every_ns > end)
                end = t + every_ns;
        }
    for (unsigned k = 0; k < 10; k++)
        mb_call_args(b, 0, end + k * 200 * HOST_US, 100 * HOST_US, "cuStreamSynchronize", 0, STREAM, 0, 0, 0, 0);
}

static void cmp_a(struct mem_builder *b) { compare_run(b, 1, 1000, 5 * HOST_US, 10 * HOST_US); }
static void cmp_b(struct mem_builder *b) { compare_run(b, 1, 3000, 8 * HOST_US, 20 * HOST_US); }
static void cmp_b_parallel(struct mem_builder *b) { compare_run(b, 4, 1000, 50 * HOST_US, 50 * HOST_US); }

bool host_scenario_write(const char *path, const char *name)
{
    static const struct {
        const char *name;
        void (*write)(struct mem_builder *);
        int32_t pid;
        uint32_t flags;
    } scenarios[] = {
        {"sync_item", sync_item, 7001, WSL_PROC_WSL2},
        {"small_copies", small_copies, 7003, 0},
        {"pageable", pageable, 7004, WSL_PROC_WSL2},
        {"quiet", quiet, 7005, 0},
        {"polls", polls, 7006, 0},
        {"churn_parallel", churn_parallel, 7007, 0},
        {"sync_parallel", sync_parallel, 7008, 0},
        {"cmp_a", cmp_a, 7101, 0},
        {"cmp_b", cmp_b, 7102, WSL_PROC_WSL2},
        {"cmp_b_parallel", cmp_b_parallel, 7103, WSL_PROC_WSL2},
    };
    if (strcmp(name, "alloc_churn") == 0) {
        struct mem_builder *b = mb_open(path, 7002, WSL_PROC_WSL2, 80ull << 30);
        alloc_churn(b, 0, 0, HOST_CHURN_STEPS);
        mb_close(b, NULL);
        return true;
    }
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(name, scenarios[i].name) == 0) {
            struct mem_builder *b = mb_open(path, scenarios[i].pid, scenarios[i].flags, 80ull << 30);
            scenarios[i].write(b);
            const unsigned order[] = {1, 0, 2, 3};      /* thread 1's chunk first: order must not matter */
            mb_close(b, order);
            return true;
        }
    return false;
}
