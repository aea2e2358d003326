/*
 * Interposition of the CUDA driver API, generated from include/wslshim/cuda_api.def.
 *
 * A client reaches a driver function in one of three ways, and each is covered:
 *  1. linked with -lcuda: it calls the exported symbol, which this library
 *     defines first in the search order (wsl_hook_<sym>, resolving the real
 *     one with dlsym(RTLD_NEXT) or through libcuda.so.1);
 *  2. dlsym(handle, "<sym>") on the libcuda handle: the dlsym wrapper below
 *     hands out the same exported wrapper once it knows the real pointer;
 *  3. cuGetProcAddress(base, &fn, cudaVersion, flags) (the runtime, PyTorch,
 *     Triton, CuPy): the real lookup runs first, and the exact pointer it
 *     returned is wrapped (wsl_proc_<sym>), the variant being identified by
 *     that pointer where the driver exports it and otherwise by base name,
 *     version and the per-thread-default-stream flag. A lookup that fails
 *     comes back unchanged.
 * Each variant has two wrappers, one per route, so that each keeps exactly
 * the pointer its route produced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cuda.h>

#include "shim_internal.h"

typedef unsigned int wsl_devptr_v1;         /* the pre-3.2 32-bit device pointer */
typedef struct wsl_legacy_abi_tag *LEGACY;  /* marks rows with no cudaTypedefs.h typedef */

#include <cudaTypedefs.h>

#include "api_ids.h"
_Static_assert(WSL_API_COUNT <= WSL_MAX_API_IDS, "event ids fit the trace format");

#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec) typedef CUresult (*wsl_pfn_##sym) params;
#include "wslshim/cuda_api.def"
#undef WSL_HOOK

/* Every wrapper has exactly the signature cudaTypedefs.h gives its version. */
#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec)                          \
    _Static_assert(__builtin_types_compatible_p(pfn, LEGACY) ||                            \
                       __builtin_types_compatible_p(wsl_pfn_##sym, pfn),                   \
                   "signature of " #sym " differs from " #pfn);
#include "wslshim/cuda_api.def"
#undef WSL_HOOK

const struct wsl_api_entry wsl_api_table[] = {
#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec) {#sym, #base, cat, pt, ver, 0},
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
#define WSL_IO(sym, base, cat) {#sym, #base, cat, 0, 0, 0},
#include "wslshim/io_api.def"
#undef WSL_IO
    {"wslshim_gpu_kernel", "wslshim_gpu_kernel", WSL_CAT_GPU_KERNEL, 0, 0, 0},
#define WSL_NVTX(sym, base, cat) {#sym, #base, cat, 0, 0, 0},
#include "wslshim/nvtx_api.def"
#undef WSL_NVTX
#define WSL_IO(sym, base, cat) {#sym, #base, cat, 0, 0, WSL_API_IO_SAMPLED},
#include "wslshim/io_api.def"
#undef WSL_IO
    {"wslshim_io_fold", "wslshim_io_fold", WSL_CAT_IO_FOLD, 0, 0, WSL_API_IO_SAMPLED},
    {"wslshim_kernel_name", "wslshim_kernel_name", WSL_CAT_FUNC_NAME, 0, 0, 0},
    {"wslshim_copy_out", "copy_out", WSL_CAT_IO_WRITE, 0, 0, 0},
};
const unsigned wsl_api_count = WSL_API_COUNT;
#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec) \
    _Static_assert(sizeof #sym <= 64 && sizeof #base <= 64, "API names fit the trace's table");
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
_Static_assert(sizeof wsl_api_table / sizeof wsl_api_table[0] == WSL_API_COUNT, "one table row per id");

/* Real pointers: what the exported symbol resolves to, and what
 * cuGetProcAddress returned. Filled once; never changed afterwards. */
static void *_Atomic slot_sym[WSL_ID_COUNT];
static void *_Atomic slot_proc[WSL_ID_COUNT];
static _Atomic unsigned long lookups_left_unwrapped;

/* The library behind the first real pointer kept, held open by the shim for
 * the rest of the process: a program that dlclose()s the driver and loads it
 * again (at another address) would otherwise leave every slot, the GPU-timing
 * functions and the writer's event queries pointing into unmapped memory, and
 * its new pointers unwrapped. Under the shim, dlclose() of the driver drops
 * the program's reference; the driver itself stays until exit. */
static void *_Atomic driver_held;

static void driver_hold(void *p)
{
    if (atomic_load_explicit(&driver_held, memory_order_relaxed))
        return;
    int saved = errno;
    Dl_info info;
    void *h = NULL;
    if (dladdr(p, &info) && info.dli_fname)
        h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    void *expect = NULL;
    if (h && !atomic_compare_exchange_strong(&driver_held, &expect, h))
        dlclose(h); /* another thread holds it already: the same library */
    /* The writer's GPU timing and device queries use the descriptors the driver
     * opens in the program's threads: its table is the program's from now on. */
    wsl_writer_share_table();
    errno = saved;
}

static int slot_claim(void *_Atomic *slot, void *p)
{
    void *expect = NULL;
    if (atomic_compare_exchange_strong(slot, &expect, p)) {
        driver_hold(p);
        return 1;
    }
    return expect == p;
}

/* The exported symbol's real definition: the next one after this library, or
 * the one in an already loaded libcuda.so.1 opened RTLD_LOCAL. */
static void *resolve_slot_sym(unsigned id)
{
    int saved = errno;
    void *p = wsl_real_dlsym(RTLD_NEXT, wsl_api_table[id].sym);
    if (!p) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = wsl_real_dlsym(h, wsl_api_table[id].sym);
            dlclose(h);
        }
    }
    if (p)
        slot_claim(&slot_sym[id], p);
    else
        wsl_log(WSL_LOG_WARN, "%s called but no driver defines it", wsl_api_table[id].sym);
    errno = saved;
    return atomic_load(&slot_sym[id]);
}

static void *resolve_slot_proc(unsigned id) { return atomic_load(&slot_proc[id]); }

/* ---- what a record keeps (see the R(...) column of cuda_api.def) -------------------- */
#define R(s_, a0_, a1_, a2_, a3_)                                                           \
    do {                                                                                   \
        wsl_ev->stream = (s_);                                                             \
        WSL_PUT(&wsl_ev->a[0], a0_);                                                       \
        WSL_PUT(&wsl_ev->a[1], a1_);                                                       \
        WSL_PUT(&wsl_ev->a[2], a2_);                                                       \
        WSL_PUT(&wsl_ev->a[3], a3_);                                                       \
    } while (0)
/* A launch's grid and block are kept as they came, in halves and quarters of
 * their words (two 32-bit and four 16-bit stores), which on a little-endian
 * machine are the bytes WSL_GRID and WSL_BLOCK pack; packing them in a
 * register first took twice the instructions. The stores are volatile so that
 * gcc's store merging does not pack them in a register again. */
typedef uint32_t wsl_u32_alias __attribute__((may_alias));
typedef uint16_t wsl_u16_alias __attribute__((may_alias));
struct wsl_put_grid {
    uint32_t x, y;
};
struct wsl_put_block {
    uint16_t z, bx, by, bz;
};
static inline __attribute__((always_inline)) void wsl_put_u64(uint64_t *d, uint64_t v) { *d = v; }
static inline __attribute__((always_inline)) void wsl_put_grid(uint64_t *d, struct wsl_put_grid v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    *(volatile wsl_u32_alias *)(void *)d = v.x;
    *(volatile wsl_u32_alias *)(void *)((char *)d + 4) = v.y;
#else
    *d = WSL_GRID(v.x, v.y);
#endif
}
static inline __attribute__((always_inline)) void wsl_put_block(uint64_t *d, struct wsl_put_block v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    *(volatile wsl_u16_alias *)(void *)d = v.z;
    *(volatile wsl_u16_alias *)(void *)((char *)d + 2) = v.bx;
    *(volatile wsl_u16_alias *)(void *)((char *)d + 4) = v.by;
    *(volatile wsl_u16_alias *)(void *)((char *)d + 6) = v.bz;
#else
    *d = WSL_BLOCK(v.z, v.bx, v.by, v.bz);
#endif
}
#define WSL_PUT(d, v)                                                                      \
    _Generic((v), struct wsl_put_grid: wsl_put_grid, struct wsl_put_block: wsl_put_block,  \
             default: wsl_put_u64)(d, v)
#define P(x) ((uint64_t)(uintptr_t)(x))
#define OUTP(pp) ((r == CUDA_SUCCESS && (pp)) ? (uint64_t)(uintptr_t) * (pp) : 0)
#define OUTV(p) ((r == CUDA_SUCCESS && (p)) ? (uint64_t) * (p) : 0)
#define GRID(x, y) ((struct wsl_put_grid){(uint32_t)(x), (uint32_t)(y)})
#define BLOCK(z, bx, by, bz) ((struct wsl_put_block){(uint16_t)(z), (uint16_t)(bx), (uint16_t)(by), (uint16_t)(bz)})
_Static_assert(sizeof(struct wsl_put_grid) == 8 && sizeof(struct wsl_put_block) == 8, "a word each");
#define CFG_STREAM(c) ((c) ? P((c)->hStream) : 0)
#define CFG_GRID(c) ((c) ? WSL_GRID((c)->gridDimX, (c)->gridDimY) : 0)
#define CFG_BLOCK(c) ((c) ? WSL_BLOCK((c)->gridDimZ, (c)->blockDimX, (c)->blockDimY, (c)->blockDimZ) : 0)
#define CFG_SHMEM(c) ((c) ? (c)->sharedMemBytes : 0)
#define NAME_ID(s) (r == CUDA_SUCCESS ? wsl_string_record(t, (s)) : 0)

/* A FUNC_NAME hook's record: the handle it names (a kernel's function is named
 * when its kernel is). */
static void wsl_func_note_named(const struct wsl_event *ev)
{
    if (!ev->a[0])
        return;
    if (ev->a[1] || (ev->a[2] && wsl_func_is_named(ev->a[2])))
        wsl_func_named(ev->a[0]);
}

/* Arguments that name a hook are always pasted or stringified, never passed
 * on bare: cuda.h #defines many base names (cuMemAlloc -> cuMemAlloc_v2).
 *
 * The hot path: a TLS load, two clock reads around the real call, a 64-byte
 * store into this thread's ring. Nested calls (the driver calling back into a
 * hooked entry point) and threads that may not record go straight through. */
#define WSL_IS_TIMED(cat) ((cat) == WSL_CAT_LAUNCH || (cat) == WSL_CAT_GRAPH)
#define WSL_IS_CTX_END(id)                                                                      \
    ((id) == WSL_ID_cuCtxDestroy_v2 || (id) == WSL_ID_cuDevicePrimaryCtxRelease ||               \
     (id) == WSL_ID_cuDevicePrimaryCtxRelease_v2 || (id) == WSL_ID_cuDevicePrimaryCtxReset ||    \
     (id) == WSL_ID_cuDevicePrimaryCtxReset_v2)
/* A sampled launch (WSLSHIM_GPU_TIMING): the row's record is evaluated first,
 * for the stream, the function and its grid and block (launch rows never read
 * `r` in it; the sample keeps their wsl_launch_config), then the launch runs
 * between the shim's two events. `cat` and `id` are
 * constants: other rows compile none of this. */
#define WSL_HOOK_BODY(id, pfn_t, cat, pt, slots, args, rec)                                      \
    pfn_t real = (pfn_t)atomic_load_explicit(&slots[id],         \
                                                             memory_order_acquire);        \
    if (WSL_UNLIKELY(!real)) {                                                             \
        real = (pfn_t)resolve_##slots(id);                               \
        if (!real)                                                                         \
            return CUDA_ERROR_NOT_FOUND;                                                   \
    }                                                                                      \
    if (WSL_UNLIKELY(wsl_tls_depth))                                                       \
        return real args;                                                                  \
    struct wsl_thread *t = wsl_thread_get();                                               \
    if (WSL_UNLIKELY(!t))                                                                  \
        return real args;                                                                  \
    wsl_tls_depth = 1;                                                                     \
    struct wsl_gpu_sample wsl_gs;                                                          \
    wsl_gs.active = 0;                                                                     \
    if (WSL_IS_TIMED(cat)) {                                                               \
        CUresult r = CUDA_SUCCESS;                                                         \
        struct wsl_event wsl_pre, *wsl_ev = &wsl_pre;                                      \
        (void)r;                                                                           \
        rec;                                                                               \
        if (WSL_UNLIKELY(wsl_gpu_sample_due(t, wsl_pre.a[0], (void *)real,                 \
                                            (cat) == WSL_CAT_GRAPH)))                      \
            wsl_gpu_sample_begin(&wsl_gs, (void *)real, wsl_pre.stream, wsl_pre.a[0], pt,  \
                                 (cat) == WSL_CAT_GRAPH,                                   \
                                 (cat) == WSL_CAT_GRAPH                                    \
                                     ? 0u                                                  \
                                     : wsl_launch_config(wsl_pre.a[1], wsl_pre.a[2]));     \
    }                                                                                      \
    if (WSL_IS_CTX_END(id))                                                                \
        wsl_gpu_timing_forget_contexts();                                                  \
    uint64_t t0 = wsl_ticks();                                                             \
    CUresult r = real args;                                                                \
    uint64_t t1 = wsl_ticks();                                                             \
    if (WSL_IS_TIMED(cat) && WSL_UNLIKELY(wsl_gs.active))                                  \
        wsl_gpu_sample_end(&wsl_gs, (int)r, t0, t1, t->tid);                               \
    /* WSLSHIM_EMULATE: the added cost, after the call, inside the record */              \
    if (WSL_EMU_CAT(cat) && WSL_UNLIKELY(wsl_emu_cat_ticks[cat]))                          \
        t1 = wsl_emu_spin(t1, wsl_emu_cat_ticks[cat]);                                     \
    /* the depth stays raised until the slot is published: a signal handler's  \
     * recorded call between the slot's reservation and its publication took  \
     * the same slot (its event overwritten, a stale slot published after it) */ \
    struct wsl_event *wsl_ev = wsl_ring_reserve(t);                                        \
    if (WSL_LIKELY(wsl_ev != NULL)) {                                                      \
        wsl_ev->t_start = t0;                                                              \
        wsl_ev->t_end = t1;                                                                \
        wsl_ev->api = id;                                                        \
        wsl_ev->flags = 0;                                                                 \
        wsl_ev->result = (int32_t)r;                                                       \
        rec;                                                                               \
        if ((cat) == WSL_CAT_FUNC_NAME && r == CUDA_SUCCESS)                               \
            wsl_func_note_named(wsl_ev);                                                   \
        wsl_ring_commit(t);                                                                \
    }                                                                                      \
    atomic_signal_fence(memory_order_seq_cst);                                             \
    wsl_tls_depth = 0;                                                                     \
    if ((cat) == WSL_CAT_INIT)                                                             \
        wsl_writer_note_driver((void *)real, (int)r);                                      \
    return r;

/* A launch's common case (issue 26), a row of WSL_IS_TIMED: this thread
 * records, launches take the fast path in this process (wsl_launch_gen: the
 * cycle counter is the clock, no emulation), the thread is in no hooked call
 * and its sampling gap has not run out (one word: depth and launches), its
 * ring has room below its limit, and the function's first launches are behind
 * it (its handle in func_hot). The record is written into the ring's slot
 * before the call, straight from the arguments as they came (nothing of them
 * is kept across the call), the start time too; the end time and the result
 * after it; the slot is published only then. The depth is raised (with the
 * countdown's step, one store) before the ring's head is read, and lowered
 * after the slot is published: a signal handler's hooked calls pass through
 * meanwhile, and nothing else writes this thread's ring; a handler that ran
 * before it finished its calls before this one read anything of the ring.
 * Anything else is the full hook (`slow`), whose record is evaluated again
 * from the arguments (the slot was not published, and the full hook takes it
 * again), with the word as it was. A pointer handed out for the driver's
 * (slot_proc) is never NULL: it was kept before its wrapper was handed out. */
#if (defined(__x86_64__) || defined(__aarch64__)) && !WSL_TSAN && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WSL_FAST_LAUNCH 1
#else
#define WSL_FAST_LAUNCH 0
#endif
/* The cycle counter into a record's time: two 32-bit stores on x86-64, where
 * rdtsc returns the halves (joining them took two more instructions). */
static inline __attribute__((always_inline)) void wsl_cycles_put(uint64_t *d)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    memcpy((char *)d, &lo, 4);
    memcpy((char *)d + 4, &hi, 4);
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    *d = v;
#else
    *d = wsl_ticks();
#endif
}
/* The arguments the ABI passes on the stack (x86-64: from the 7th; arm64: from
 * the 9th), as if changed in memory: gcc then reads them where they are used,
 * in their own stack slots, instead of loading them on entry and keeping them
 * in saved registers until the call (two registers saved less: 3 instructions
 * of the 11-argument launch's). Rows with fewer arguments name a dummy. */
static uint64_t wsl_arg_pad;
#define WSL_UNPAREN(...) __VA_ARGS__
#if defined(__x86_64__)
#define WSL_STACK_ARGS_M(a1, a2, a3, a4, a5, a6, b1, b2, b3, b4, b5, ...)                   \
    "+m"(b1), "+m"(b2), "+m"(b3), "+m"(b4), "+m"(b5)
#else
#define WSL_STACK_ARGS_M(a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, b3, ...) "+m"(b1), "+m"(b2), "+m"(b3)
#endif
#define WSL_STACK_ARGS_M_(...) WSL_STACK_ARGS_M(__VA_ARGS__)
#define WSL_STACK_ARGS_IN_MEMORY(args)                                                     \
    __asm__ volatile("" : WSL_STACK_ARGS_M_(WSL_UNPAREN args, wsl_arg_pad, wsl_arg_pad, wsl_arg_pad, \
                                            wsl_arg_pad, wsl_arg_pad, wsl_arg_pad, wsl_arg_pad, \
                                            wsl_arg_pad, wsl_arg_pad, wsl_arg_pad, wsl_arg_pad))
#define WSL_LAUNCH_FAST_BODY(id, pfn_t, cat, slots, resolved, args, rec, slow)                 \
    struct wsl_thread *t = wsl_tls_thread;                                                 \
    uint64_t word = wsl_tls.launches_depth; /* launches | depth << 32 */                  \
    /* word - 2 < WSL_LAUNCHES_MAX - 1: depth 0 and launches >= 2 */                       \
    if (WSL_UNLIKELY((!(resolved) && !atomic_load_explicit(&slots[id], memory_order_relaxed)) || \
                     t->gen != atomic_load_explicit(&wsl_launch_gen, memory_order_relaxed) || \
                     word - 2 >= WSL_LAUNCHES_MAX - 1))                                    \
        goto wsl_full;                                                                     \
    wsl_tls.launches = (uint32_t)word - 1;                                                 \
    wsl_tls_depth = 1;                                                                     \
    WSL_STACK_ARGS_IN_MEMORY(args);                                                        \
    atomic_signal_fence(memory_order_seq_cst);                                             \
    uint64_t h = t->head_local;                                                            \
    struct wsl_event *wsl_ev = &t->cur_ev[h & t->cur_mask];                                \
    if (WSL_UNLIKELY(h >= t->limit))                                                       \
        goto wsl_slow;                                                                     \
    {                                                                                      \
        CUresult r = CUDA_SUCCESS;                                                         \
        (void)r;                                                                           \
        rec;                                                                               \
    }                                                                                      \
    uint32_t apiflags = (id); /* api, flags 0: one store */                                \
    memcpy(&wsl_ev->api, &apiflags, sizeof apiflags);                                      \
    if (WSL_UNLIKELY(t->func_hot[WSL_FUNC_SLOT(wsl_ev->a[0])] != wsl_ev->a[0]))             \
        goto wsl_slow;                                                                     \
    wsl_cycles_put(&wsl_ev->t_start);                                                      \
    wsl_ev->result = (int32_t)((pfn_t)atomic_load_explicit(&slots[id], memory_order_acquire))args; \
    wsl_cycles_put(&wsl_ev->t_end);                                                        \
    /* nothing but the slot kept across the call: the thread and head read again */        \
    t = wsl_tls_thread;                                                                    \
    h = t->head_local + 1;                                                                 \
    t->head_local = h;                                                                     \
    atomic_store_explicit(t->cur_head, h, memory_order_release);                           \
    atomic_signal_fence(memory_order_seq_cst);                                             \
    wsl_tls_depth = 0;                                                                     \
    /* the result as stored (nothing but the slot kept across the clock read) */           \
    return (CUresult) * (volatile int32_t *)&wsl_ev->result;                               \
wsl_slow:                                                                                  \
    atomic_signal_fence(memory_order_seq_cst);                                             \
    wsl_tls.launches_depth += 1 - (1ull << 32); /* the word as it was: depth 0, the launch back */ \
wsl_full:;                                                                                 \
    /* not a tail call: one would have the arguments on the stack loaded on entry */       \
    CUresult full = slow args;                                                             \
    __asm__("" : "+r"(full));                                                              \
    return full;
_Static_assert(offsetof(struct wsl_event, api) == 16 && offsetof(struct wsl_event, flags) == 18,
               "api and flags are one 4-byte word");

/* The rows with a launch's fast path (WSL_IS_TIMED), chosen by the category's
 * name: a row's `args` is its parameters' names only there. Every category
 * has its line (a row of a category missing here does not compile). */
#define WSL_ROW_WSL_CAT_OTHER WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_INIT WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_LAUNCH WSL_ROW_FAST
#define WSL_ROW_WSL_CAT_GRAPH WSL_ROW_FAST
#define WSL_ROW_WSL_CAT_HOSTFN WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_ALLOC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_ALLOC_MANAGED WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_FREE WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_HOST_ALLOC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_HOST_FREE WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_HOST_REGISTER WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_HOST_UNREGISTER WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_SYNC_STREAM WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_SYNC_CTX WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_SYNC_EVENT WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_STREAM_WAIT WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_QUERY WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_EVENT_RECORD WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_ANY WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_ANY_ASYNC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_HTOD WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_HTOD_ASYNC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_DTOH WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_DTOH_ASYNC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_DTOD WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_COPY_DTOD_ASYNC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_MEMSET WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_MEMSET_ASYNC WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_OPEN WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_READ WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_MMAP WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_STAT WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_SEEK WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_CLOSE WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_FUNC_NAME WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_GPU_KERNEL WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_NVTX_PUSH WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_NVTX_POP WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_NVTX_START WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_NVTX_END WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_NVTX_MARK WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_NVTX_NAME_THREAD WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_FOLD WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_WRITE WSL_ROW_PLAIN
#define WSL_ROW_WSL_CAT_IO_DIR WSL_ROW_PLAIN
#define WSL_ROW_KIND(cat) WSL_ROW_##cat

/* sym is pasted before it is passed on (cuda.h #defines many base names):
 * name the exported symbol's string, id its WSL_ID_, pfn its type, hook and
 * proc its two wrappers, fhook and fproc their full hooks. */
#define WSL_ROW_PLAIN(name, id, pfn, hook, proc, fhook, fproc, cat, pt, params, args, rec)  \
    WSL_EXPORT CUresult hook params __asm__(name);                                         \
    WSL_EXPORT CUresult hook params { WSL_HOOK_BODY(id, pfn, cat, pt, slot_sym, args, rec) } \
    static CUresult proc params { WSL_HOOK_BODY(id, pfn, cat, pt, slot_proc, args, rec) }

#if WSL_FAST_LAUNCH
#define WSL_ROW_FAST(name, id, pfn, hook, proc, fhook, fproc, cat, pt, params, args, rec)   \
    WSL_EXPORT CUresult hook params __asm__(name);                                         \
    static __attribute__((noinline)) CUresult fhook params                                 \
    {                                                                                      \
        WSL_HOOK_BODY(id, pfn, cat, pt, slot_sym, args, rec)                               \
    }                                                                                      \
    static __attribute__((noinline)) CUresult fproc params                                 \
    {                                                                                      \
        WSL_HOOK_BODY(id, pfn, cat, pt, slot_proc, args, rec)                              \
    }                                                                                      \
    WSL_EXPORT CUresult hook params { WSL_LAUNCH_FAST_BODY(id, pfn, cat, slot_sym, 0, args, rec, fhook) } \
    static CUresult proc params { WSL_LAUNCH_FAST_BODY(id, pfn, cat, slot_proc, 1, args, rec, fproc) }
#else
#define WSL_ROW_FAST WSL_ROW_PLAIN
#endif

#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec)                          \
    WSL_ROW_KIND(cat)(#sym, WSL_ID_##sym, wsl_pfn_##sym, wsl_hook_##sym, wsl_proc_##sym, wsl_full_hook_##sym, \
                      wsl_full_proc_##sym, cat, pt, params, args, rec)
#include "wslshim/cuda_api.def"
#undef WSL_HOOK

static void *const hook_exported[WSL_ID_COUNT] = {
#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec) (void *)wsl_hook_##sym,
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
};
static void *const hook_proc[WSL_ID_COUNT] = {
#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec) (void *)wsl_proc_##sym,
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
};

static int id_is_hooked(const char *base)
{
    if (!strcmp(base, "cuGetProcAddress"))
        return 1;
    for (unsigned i = 0; i < WSL_ID_COUNT; i++)
        if (!strcmp(wsl_api_table[i].base, base))
            return 1;
    return 0;
}

static int find_sym(const char *name)
{
    for (unsigned i = 0; i < WSL_ID_COUNT; i++)
        if (!strcmp(wsl_api_table[i].sym, name))
            return (int)i;
    return -1;
}

/* ---- cuGetProcAddress ------------------------------------------------------------------ */

/* The libcuda that handed out `p`, opened once (RTLD_NOLOAD), to learn which of
 * its exported variants `p` is. */
static void *_Atomic libcuda_handle;
static void *_Atomic slot_export[WSL_ID_COUNT];
#define EXPORT_ABSENT ((void *)1)

static void *libcuda_for(void *sample)
{
    void *h = atomic_load(&libcuda_handle);
    if (h)
        return h;
    Dl_info info;
    if (!dladdr(sample, &info) || !info.dli_fname)
        return NULL;
    h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *expect = NULL;
    if (!atomic_compare_exchange_strong(&libcuda_handle, &expect, h)) {
        dlclose(h);
        h = expect;
    }
    return h;
}

static void *exported_address(unsigned id, void *sample)
{
    void *ex = atomic_load(&slot_export[id]);
    if (ex)
        return ex == EXPORT_ABSENT ? NULL : ex;
    void *h = libcuda_for(sample);
    if (!h)
        return NULL;
    ex = wsl_real_dlsym(h, wsl_api_table[id].sym);
    atomic_store(&slot_export[id], ex ? ex : EXPORT_ABSENT);
    return ex;
}

/* Which variant of `base` a lookup at (version, flags) returned. */
static int identify_variant(const char *base, void *p, int version, cuuint64_t flags)
{
    int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    int best_pt = -1, best_plain = -1;
    for (unsigned i = 0; i < WSL_ID_COUNT; i++) {
        if (strcmp(wsl_api_table[i].base, base) != 0)
            continue;
        if (exported_address(i, p) == p)
            return (int)i; /* the exact pointer: no doubt which ABI it has */
        if (wsl_api_table[i].version > version)
            continue;
        int *best = wsl_api_table[i].per_thread ? &best_pt : &best_plain;
        if (*best < 0 || wsl_api_table[*best].version < wsl_api_table[i].version)
            *best = (int)i;
    }
    return want_pt && best_pt >= 0 ? best_pt : best_plain;
}

CUresult wsl_hook_gpa_v1(const char *, void **, int, cuuint64_t) __asm__("cuGetProcAddress");
CUresult wsl_hook_gpa_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *)
    __asm__("cuGetProcAddress_v2");
static CUresult wsl_proc_gpa_v1(const char *, void **, int, cuuint64_t);
static CUresult wsl_proc_gpa_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static void *_Atomic slot_gpa_sym_v1, *_Atomic slot_gpa_sym_v2;
static void *_Atomic slot_gpa_proc_v1, *_Atomic slot_gpa_proc_v2;

static int is_own_wrapper(void *p)
{
    if (p == (void *)wsl_hook_gpa_v1 || p == (void *)wsl_hook_gpa_v2 || p == (void *)wsl_proc_gpa_v1 ||
        p == (void *)wsl_proc_gpa_v2)
        return 1;
    for (unsigned i = 0; i < WSL_ID_COUNT; i++)
        if (p == hook_exported[i] || p == hook_proc[i])
            return 1;
    return 0;
}

static void *wrap_looked_up(const char *symbol, void *p, int version, cuuint64_t flags)
{
    if (!p || !symbol || symbol[0] != 'c' || symbol[1] != 'u')
        return p;
    int saved = errno;
    void *out = p;
    if (is_own_wrapper(p)) {
        /* A driver whose own table refers to its exported names through the
         * dynamic linker hands out this library's definitions: already wrapped. */
    } else if (!strcmp(symbol, "cuGetProcAddress")) {
        /* The runtime asks for the lookup function itself: 11030 gets the
         * 4-argument one, 12000 and later the 5-argument _v2. */
        int v2 = version >= 12000;
        void *h = libcuda_for(p);
        if (h && p == wsl_real_dlsym(h, "cuGetProcAddress"))
            v2 = 0;
        else if (h && p == wsl_real_dlsym(h, "cuGetProcAddress_v2"))
            v2 = 1;
        if (slot_claim(v2 ? &slot_gpa_proc_v2 : &slot_gpa_proc_v1, p))
            out = v2 ? (void *)wsl_proc_gpa_v2 : (void *)wsl_proc_gpa_v1;
    } else {
        int id = identify_variant(symbol, p, version, flags);
        if (id >= 0 && slot_claim(&slot_proc[id], p))
            out = hook_proc[id];
    }
    if (out == p && id_is_hooked(symbol) && !is_own_wrapper(p))
        atomic_fetch_add(&lookups_left_unwrapped, 1);
    errno = saved;
    return out;
}

static void *real_gpa(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (!p) {
        p = wsl_real_dlsym(RTLD_NEXT, name);
        if (!p) {
            void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
            if (h) {
                p = wsl_real_dlsym(h, name);
                dlclose(h);
            }
        }
        if (p)
            slot_claim(slot, p);
        p = atomic_load(slot);
    }
    return p;
}

#define GPA_BODY_V1(slot, name)                                                            \
    gpa_v1_fn real = (gpa_v1_fn)real_gpa(slot, name);                                              \
    if (!real)                                                                             \
        return CUDA_ERROR_NOT_FOUND;                                                       \
    CUresult r = real(symbol, pfn, version, flags);                                        \
    if (r == CUDA_SUCCESS && pfn)                                                          \
        *pfn = wrap_looked_up(symbol, *pfn, version, flags);                               \
    return r;
#define GPA_BODY_V2(slot, name)                                                            \
    gpa_v2_fn real = (gpa_v2_fn)real_gpa(slot, name);                                   \
    if (!real)                                                                             \
        return CUDA_ERROR_NOT_FOUND;                                                       \
    CUresult r = real(symbol, pfn, version, flags, status);                                \
    if (r == CUDA_SUCCESS && pfn)                                                          \
        *pfn = wrap_looked_up(symbol, *pfn, version, flags);                               \
    return r;

WSL_EXPORT CUresult wsl_hook_gpa_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
    __asm__("cuGetProcAddress");
WSL_EXPORT CUresult wsl_hook_gpa_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    GPA_BODY_V1(&slot_gpa_sym_v1, "cuGetProcAddress")
}
WSL_EXPORT CUresult wsl_hook_gpa_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) __asm__("cuGetProcAddress_v2");
WSL_EXPORT CUresult wsl_hook_gpa_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    GPA_BODY_V2(&slot_gpa_sym_v2, "cuGetProcAddress_v2")
}
static CUresult wsl_proc_gpa_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    GPA_BODY_V1(&slot_gpa_proc_v1, NULL)
}
static CUresult wsl_proc_gpa_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult *status)
{
    GPA_BODY_V2(&slot_gpa_proc_v2, NULL)
}

/* ---- dlsym --------------------------------------------------------------------------- */

static void *dlsym_on_handle(wsl_dlsym_fn real, void *handle, const char *name)
{
    void *p = real(handle, name);
    if (!p || !name || name[0] != 'c' || name[1] != 'u')
        return p;
    int saved = errno;
    void *_Atomic *slot = NULL;
    void *wrapper = NULL;
    if (!strcmp(name, "cuGetProcAddress")) {
        slot = &slot_gpa_sym_v1;
        wrapper = (void *)wsl_hook_gpa_v1;
    } else if (!strcmp(name, "cuGetProcAddress_v2")) {
        slot = &slot_gpa_sym_v2;
        wrapper = (void *)wsl_hook_gpa_v2;
    } else {
        int id = find_sym(name);
        if (id >= 0) {
            slot = &slot_sym[id];
            wrapper = hook_exported[id];
        }
    }
    void *out = p;
    if (slot) {
        if (p == wrapper) {
            /* The lookup found this library's own definition first (RTLD_DEFAULT):
             * hand it out only if a real one exists behind it, as without us. */
            void *next = real(RTLD_NEXT, name);
            if (!next)
                out = NULL;
            else
                slot_claim(slot, next);
        } else if (slot_claim(slot, p)) {
            out = wrapper;
        }
    }
    errno = saved;
    return out;
}

/* A lookup relative to the caller (RTLD_NEXT) must reach the real dlsym as a
 * tail call, so that it still sees its caller's return address. */
#if defined(__GNUC__) && !defined(__clang__)
#define WSL_TAILCALLS __attribute__((optimize("O2", "optimize-sibling-calls")))
#else
#define WSL_TAILCALLS
#endif
WSL_EXPORT WSL_TAILCALLS void *dlsym(void *handle, const char *name)
{
    wsl_dlsym_fn real = wsl_real_dlsym_fn(); /* common/real.c */
    if (WSL_UNLIKELY(!real))
        return NULL;
    if (handle == RTLD_NEXT || !wsl_tsan_up())
        return real(handle, name);
    return dlsym_on_handle(real, handle, name);
}
