/*
 * Sampled GPU timing with CUDA events (WSLSHIM_GPU_TIMING=N: every Nth kernel
 * or graph launch of a thread). docs/gpu-timing.md explains the method.
 *
 * The program's thread, around a sampled launch (sample_begin/sample_end):
 *   - skips streams being captured into a graph (cuStreamIsCapturing says
 *     so, or cannot tell) and streams of another context than the current one;
 *   - asks whether the stream's earlier work is all done (cuStreamQuery: the
 *     GPU had nothing queued ahead of the kernel on that stream, it was idle
 *     at submit), records a pooled event e0 into the stream, lets the launch
 *     run, records e1, and queues the pair. These calls run in the relaxed
 *     stream-capture mode (queries are "unsafe" while another thread captures
 *     in global mode).
 * The writer thread, every few milliseconds (wsl_gpu_timing_poll):
 *   - queries e1 of each queued pair, never blocking; once done, reads the
 *     elapsed time of the pair and places it on the host clock through a
 *     reference event it records on a stream of its own about twice a second;
 *   - writes a GPU_KERNEL event and returns the events to their pool.
 * On a program's thread no CUDA call runs under a lock of the shim's: the
 * pool and queue locks guard only the pools and the queue. The writer's event
 * queries run under poll_lock, which a program's thread takes only in the
 * hooks that destroy or reset a context, before it calls the driver (so it
 * holds no driver lock while it waits), and at exit. The writer's thread uses
 * the relaxed stream-capture mode, so its queries never invalidate a capture
 * running in a program thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda.h>

#include "api_ids.h"
#include "shim_internal.h"

/* ---- the driver functions the shim calls itself ---------------------------------- */
struct driver_fns {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*stream_get_ctx)(CUstream, CUcontext *);
    CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_query)(CUevent);
    CUresult (*event_elapsed)(float *, CUevent, CUevent);
    CUresult (*exchange_capture_mode)(CUstreamCaptureMode *);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*stream_query)(CUstream);
};
static struct driver_fns fn; /* read only once fns_state is FNS_OK */
enum { FNS_UNKNOWN = 0, FNS_OK, FNS_MISSING, FNS_PUBLISHING };
static _Atomic int fns_state;
static WSL_TLS int tls_publishing_fns;

/* Resolved without a lock (dlopen takes the loader's lock, which a program
 * thread may hold while it launches). Racing threads each look the functions
 * up into their own copy; one publishes it (a copy of a few pointers) and the
 * others wait for that, unless they interrupted it from a signal handler. */
static int resolve_fns(void *real_launch)
{
    int st = atomic_load_explicit(&fns_state, memory_order_acquire);
    if (WSL_LIKELY(st == FNS_OK || st == FNS_MISSING))
        return st == FNS_OK;
    struct driver_fns got;
    memset(&got, 0, sizeof got);
    Dl_info info;
    void *h = NULL;
    if (dladdr(real_launch, &info) && info.dli_fname)
        h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD); /* kept open: the pointers stay valid */
    int ok = 0;
    if (h) {
#define GET(field, name) *(void **)&got.field = wsl_real_dlsym(h, name)
        GET(ctx_get_current, "cuCtxGetCurrent");
        GET(ctx_set_current, "cuCtxSetCurrent");
        GET(ctx_get_device, "cuCtxGetDevice");
        GET(stream_get_ctx, "cuStreamGetCtx");
        GET(stream_is_capturing, "cuStreamIsCapturing");
        GET(stream_create, "cuStreamCreate");
        GET(event_create, "cuEventCreate");
        GET(event_record, "cuEventRecord");
        GET(event_query, "cuEventQuery");
        GET(event_elapsed, "cuEventElapsedTime_v2");
        if (!got.event_elapsed)
            GET(event_elapsed, "cuEventElapsedTime");
        GET(exchange_capture_mode, "cuThreadExchangeStreamCaptureMode");
        GET(mem_get_info, "cuMemGetInfo_v2");
        GET(stream_query, "cuStreamQuery");
#undef GET
        ok = got.ctx_get_current && got.stream_get_ctx && got.stream_is_capturing && got.event_create &&
             got.event_record && got.event_query && got.event_elapsed && got.stream_query &&
             got.exchange_capture_mode;
    }
    int expect = FNS_UNKNOWN;
    if (atomic_compare_exchange_strong(&fns_state, &expect, FNS_PUBLISHING)) {
        tls_publishing_fns = 1;
        if (ok)
            fn = got;
        else if (h)
            wsl_log(WSL_LOG_WARN, "GPU timing off: the driver lacks an event or capture entry point");
        atomic_store_explicit(&fns_state, ok ? FNS_OK : FNS_MISSING, memory_order_release);
        tls_publishing_fns = 0;
        return ok;
    }
    if (tls_publishing_fns)
        return 0; /* a signal handler interrupted this thread's own publishing */
    while ((st = atomic_load_explicit(&fns_state, memory_order_acquire)) == FNS_PUBLISHING)
        sched_yield();
    return st == FNS_OK;
}

/* ---- per-context event pools and reference events ----------------------------------- */
#define MAX_CTX 16
#define POOL_CAP 2048 /* events per context at most: bounds what a GPU far behind can hold */

struct ctx_pool {
    CUcontext ctx; /* NULL: slot unused */
    unsigned nfree, created;
    CUevent free_ev[POOL_CAP];
    /* memory of the device when the shim first saw the context */
    int device, mem_known, mem_written;
    uint64_t mem_free, mem_total, mem_ticks;
    /* writer only: reference events on a stream of the shim's own */
    CUstream ref_stream;
    CUevent ref_ev[2];
    int ref_ok;        /* ref_ev[ref_cur] is done and ref_ticks is when it ran */
    int ref_cur, ref_inflight; /* index of a recorded, not yet done reference, or -1 */
    uint64_t ref_ticks, ref_inflight_ticks;
    /* When the reference ran, on the host clock, is bracketed: no event runs
     * before its record call began (a lower bound from every event timed
     * against the reference), none after the writer saw it done (an upper
     * bound). The reference may wait behind other streams' work sharing its
     * hardware queue, so the events that ran at once (idle streams) are what
     * make the lower bound tight. ref_ticks is the lower bound. */
    uint64_t ref_hi;
    int ref_broken;    /* the stream or events could not be made: no mapping */
};
static struct ctx_pool pools[MAX_CTX];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped, under pool_lock, when the pools are let go of (a context destroyed
 * or reset): a pair whose pool was taken before then belongs to a context that
 * may be gone, and its events are never touched again (counted lost). */
static uint32_t contexts_epoch;

struct sample {
    int pool;
    uint32_t epoch; /* contexts_epoch when its pool was taken */
    CUevent e0, e1;
    uint64_t stream, handle, t_launch0, t_launch1, t_e0;
    uint32_t tid, flags;
    uint64_t t_e0_rec; /* when e0's record call began: e0 cannot have run before */
    uint32_t config;   /* the GPU_KERNEL event's result: wsl_launch_config, 0 for a graph */
};
#define QUEUE_CAP 4096
static struct sample queue[QUEUE_CAP]; /* program threads -> writer */
static unsigned queue_n;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sample inflight[QUEUE_CAP]; /* writer only */
static struct sample done[QUEUE_CAP];     /* writer only: finished in this pass */
static double done_raw[QUEUE_CAP];
static unsigned inflight_n;

/* Counters for the log at exit. */
static _Atomic uint64_t n_sampled, n_skipped_capture, n_skipped_other, n_lost;
static _Atomic int timing_closed; /* at exit: the writer makes no more CUDA calls */
static _Atomic int atexit_registered;

static int pool_find_locked(CUcontext ctx)
{
    int empty = -1;
    for (int i = 0; i < MAX_CTX; i++) {
        if (pools[i].ctx == ctx)
            return i;
        if (!pools[i].ctx && empty < 0)
            empty = i;
    }
    if (empty >= 0) {
        memset(&pools[empty], 0, sizeof pools[empty]);
        pools[empty].ctx = ctx;
        pools[empty].ref_inflight = -1;
    }
    return empty;
}

/* Back into pool p, unless the pools were let go of since `epoch` (the events
 * may be gone with their context; the slot may be another context's now). */
static void pool_put(int p, uint32_t epoch, CUevent e0, CUevent e1)
{
    pthread_mutex_lock(&pool_lock);
    struct ctx_pool *cp = &pools[p];
    if (epoch == contexts_epoch && cp->ctx && cp->nfree + 2 <= POOL_CAP) {
        cp->free_ev[cp->nfree++] = e0;
        cp->free_ev[cp->nfree++] = e1;
    }
    pthread_mutex_unlock(&pool_lock);
}

static void at_exit_flush(void);

/* ---- which launches are timed, and names of functions no hook saw named ----------- */

/* Handles the hooks named (cuModuleGetFunction, cuLibraryGetKernel, a kernel's
 * function, and the names asked below), process-wide: open addressing, set
 * without a lock, never removed. A full table names no more: a launch of a
 * handle not found in it asks the driver for its name once per thread. */
#define NAMED_CAP 65536u
static _Atomic uint64_t named[NAMED_CAP];
static _Atomic uint32_t named_count;

void wsl_func_named(uint64_t handle)
{
    if (!handle || atomic_load_explicit(&named_count, memory_order_relaxed) >= NAMED_CAP / 2)
        return;
    uint32_t i = (uint32_t)((handle * 0x9e3779b97f4a7c15ull) >> 48) & (NAMED_CAP - 1);
    for (uint32_t n = 0; n < 64; n++, i = (i + 1) & (NAMED_CAP - 1)) {
        uint64_t k = atomic_load_explicit(&named[i], memory_order_relaxed);
        if (k == handle)
            return;
        if (!k) {
            uint64_t expect = 0;
            if (atomic_compare_exchange_strong(&named[i], &expect, handle)) {
                atomic_fetch_add_explicit(&named_count, 1, memory_order_relaxed);
                return;
            }
            if (expect == handle)
                return;
        }
    }
}

int wsl_func_is_named(uint64_t handle)
{
    uint32_t i = (uint32_t)((handle * 0x9e3779b97f4a7c15ull) >> 48) & (NAMED_CAP - 1);
    for (uint32_t n = 0; n < 64; n++, i = (i + 1) & (NAMED_CAP - 1)) {
        uint64_t k = atomic_load_explicit(&named[i], memory_order_relaxed);
        if (k == handle)
            return 1;
        if (!k)
            return 0;
    }
    return 0;
}

/* cuFuncGetName and cuKernelGetName (CUDA 12.3 on) of the driver that handed
 * out the launch function: looked up once; NULL where the driver lacks them. */
typedef CUresult (*name_fn_t)(const char **, void *);
static name_fn_t _Atomic func_get_name, kernel_get_name;
static _Atomic int name_fns_state; /* 0 not looked up, 1 looked up */

static void name_fns_resolve(void *real_launch)
{
    Dl_info info;
    void *h = NULL;
    if (dladdr(real_launch, &info) && info.dli_fname)
        h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD); /* kept open: the pointers stay valid */
    if (h) {
        atomic_store(&func_get_name, (name_fn_t)wsl_real_dlsym(h, "cuFuncGetName"));
        atomic_store(&kernel_get_name, (name_fn_t)wsl_real_dlsym(h, "cuKernelGetName"));
    }
    atomic_store_explicit(&name_fns_state, 1, memory_order_release);
}

/* A launch of a function no hook named: its name from the driver, as an event
 * of this thread (wslshim_kernel_name: a0 the handle, a1 the name's id). The
 * handle is live here, being launched. */
static void name_from_driver(struct wsl_thread *t, uint64_t handle, void *real_launch)
{
    if (wsl_func_is_named(handle))
        return;
    if (!atomic_load_explicit(&name_fns_state, memory_order_acquire))
        name_fns_resolve(real_launch);
    const char *name = NULL;
    name_fn_t f = atomic_load_explicit(&func_get_name, memory_order_relaxed);
    name_fn_t k = atomic_load_explicit(&kernel_get_name, memory_order_relaxed);
    uint64_t t0 = wsl_ticks();
    if (!(f && f(&name, (void *)(uintptr_t)handle) == CUDA_SUCCESS && name && *name)) {
        name = NULL; /* a CUkernel launched as a function */
        if (!(k && k(&name, (void *)(uintptr_t)handle) == CUDA_SUCCESS && name && *name))
            return;
    }
    uint64_t t1 = wsl_ticks();
    uint32_t id = wsl_string_record(t, name);
    if (!id)
        return;
    struct wsl_event *ev = wsl_ring_reserve(t);
    if (!ev)
        return;
    ev->t_start = t0;
    ev->t_end = t1;
    ev->api = WSL_ID_KERNEL_NAME;
    ev->flags = 0;
    ev->result = 0;
    ev->stream = 0;
    ev->a[0] = handle;
    ev->a[1] = id;
    ev->a[2] = 0;
    ev->a[3] = 0;
    wsl_ring_commit(t);
    wsl_func_named(handle);
}

/* The countdown to the next sampled launch ran out (or was never drawn): this
 * launch is timed, and the next gap is drawn uniformly from [N/2, 3N/2) (mean
 * N): a fixed gap lands on the same kernels of a step whose launch count
 * shares a factor with it, every time. */
int wsl_gpu_sample_next(void)
{
    uint32_t n = (uint32_t)wsl_cfg.gpu_timing;
    if (!n) {
        wsl_tls.launches = WSL_LAUNCHES_MAX;
        return 0;
    }
    uint32_t x = wsl_tls.sample_rng;
    if (!x)
        x = (uint32_t)syscall(SYS_gettid) * 2654435761u | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    wsl_tls.sample_rng = x;
    uint32_t gap = n < 3 ? n : n - n / 2 + x % n;
    int due = wsl_tls.launches != 0; /* 0: the first launch only draws */
    wsl_tls.launches = gap;
    return due || n == 1;
}

/* A launch of a function this thread has not launched WSL_FUNC_COVER times yet
 * (or whose slot another function holds). */
int wsl_func_first_launches(struct wsl_thread *t, uint64_t handle, uint32_t slot, void *real, int graph)
{
    int timing = wsl_cfg.gpu_timing != 0;
    if (handle) {
        uint32_t home = slot;
        for (uint32_t n = 0; n < 32; n++, slot = (slot + 1) & (WSL_FUNC_SEEN - 1)) {
            uint64_t k = t->func_key[slot];
            if (k == handle) {
                if (t->func_timed[slot] < WSL_FUNC_COVER) {
                    if (++t->func_timed[slot] == WSL_FUNC_COVER && slot == home)
                        t->func_hot[home] = handle; /* its next launches: the fast path's test */
                    return 1;
                }
                break; /* covered, in a later slot than its own: sampled */
            }
            if (!k) {
                if (t->func_count >= WSL_FUNC_SEEN_MAX)
                    break;
                t->func_key[slot] = handle;
                t->func_timed[slot] = timing ? 1 : WSL_FUNC_COVER;
                if (t->func_timed[slot] == WSL_FUNC_COVER && slot == home)
                    t->func_hot[home] = handle;
                t->func_count++;
                if (!graph)
                    name_from_driver(t, handle, real);
                if (timing)
                    return 1;
                break;
            }
        }
    }
    if (WSL_LIKELY(wsl_tls.launches > 1)) {
        wsl_tls.launches--;
        return 0;
    }
    return wsl_gpu_sample_next();
}

/* ---- the program's side ---------------------------------------------------------- */
/* The program's thread may be inside a global-mode stream capture of another
 * thread, where event and stream queries are "unsafe" calls that would spoil
 * that capture: the shim's own calls run in the relaxed mode, and the
 * thread's mode is put back before the program's launch. */
static CUstreamCaptureMode relax(void)
{
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    fn.exchange_capture_mode(&m);
    return m;
}

static void unrelax(CUstreamCaptureMode m) { fn.exchange_capture_mode(&m); }

static int sample_begin(struct wsl_gpu_sample *gs, uint64_t stream, uint64_t handle, int per_thread, int graph);

int wsl_gpu_sample_begin(struct wsl_gpu_sample *gs, void *real, uint64_t stream, uint64_t handle,
                         int per_thread, int graph, uint32_t config)
{
    gs->active = 0;
    gs->config = config;
    if (atomic_load_explicit(&timing_closed, memory_order_relaxed) || !resolve_fns(real))
        return 0;
    CUstreamCaptureMode m = relax();
    int r = sample_begin(gs, stream, handle, per_thread, graph);
    unrelax(m);
    return r;
}

static int sample_begin(struct wsl_gpu_sample *gs, uint64_t stream, uint64_t handle, int per_thread, int graph)
{
    CUstream s = (CUstream)(uintptr_t)stream;
    if (per_thread && !s)
        s = CU_STREAM_PER_THREAD; /* what the _ptsz launch meant by stream 0 */
    CUcontext cur = NULL, sctx = NULL;
    if (fn.ctx_get_current(&cur) != CUDA_SUCCESS || !cur) {
        atomic_fetch_add(&n_skipped_other, 1);
        return 0;
    }
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) {
        if (fn.stream_get_ctx(s, &sctx) != CUDA_SUCCESS || sctx != cur) {
            atomic_fetch_add(&n_skipped_other, 1);
            return 0;
        }
    }
    /* Never into a stream being captured; an error (the legacy stream while a
     * global-mode capture runs) counts as "maybe". */
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    if (fn.stream_is_capturing(s, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE) {
        atomic_fetch_add(&n_skipped_capture, 1);
        return 0;
    }
    pthread_mutex_lock(&pool_lock);
    int p = pool_find_locked(cur);
    gs->epoch = contexts_epoch;
    int have = 0, need_mem = 0;
    if (p >= 0) {
        struct ctx_pool *cp = &pools[p];
        if (cp->nfree >= 2) {
            gs->e1 = cp->free_ev[--cp->nfree];
            gs->e0 = cp->free_ev[--cp->nfree];
            have = 1;
        } else if (cp->created + 2 <= POOL_CAP) {
            cp->created += 2; /* made below, outside the lock */
            have = 2;
        }
        need_mem = !cp->mem_known;
        cp->mem_known = 1;
    }
    pthread_mutex_unlock(&pool_lock);
    if (!have) {
        atomic_fetch_add(&n_skipped_other, 1);
        return 0;
    }
    if (need_mem && fn.mem_get_info) {
        size_t fr = 0, tot = 0;
        CUdevice dev = 0;
        if (fn.mem_get_info(&fr, &tot) == CUDA_SUCCESS) {
            if (fn.ctx_get_device)
                fn.ctx_get_device(&dev);
            pthread_mutex_lock(&pool_lock);
            if (gs->epoch == contexts_epoch) {
                pools[p].device = dev;
                pools[p].mem_free = fr;
                pools[p].mem_total = tot;
                pools[p].mem_ticks = wsl_ticks();
            }
            pthread_mutex_unlock(&pool_lock);
        }
    }
    if (have == 2) {
        if (fn.event_create((CUevent *)&gs->e0, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            goto fail_created;
        if (fn.event_create((CUevent *)&gs->e1, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            goto fail_created; /* e0 leaks: the driver frees it with the context */
    }
    if (!atomic_load_explicit(&atexit_registered, memory_order_relaxed) && !atomic_exchange(&atexit_registered, 1))
        atexit(at_exit_flush); /* after the runtime's own: runs before its teardown */
    /* Idle at submit: nothing of the stream's earlier work is still to run. */
    gs->idle = fn.stream_query(s) == CUDA_SUCCESS;
    gs->t_e0_rec = wsl_ticks();
    if (fn.event_record((CUevent)gs->e0, s) != CUDA_SUCCESS) {
        pool_put(p, gs->epoch, gs->e0, gs->e1);
        atomic_fetch_add(&n_skipped_other, 1);
        return 0;
    }
    gs->t_e0 = wsl_ticks();
    gs->pool = p;
    gs->stream = stream;
    gs->s = s;
    gs->handle = handle;
    gs->graph = graph;
    gs->active = 1;
    return 1;
fail_created:
    pthread_mutex_lock(&pool_lock);
    if (gs->epoch == contexts_epoch)
        pools[p].created -= 2;
    pthread_mutex_unlock(&pool_lock);
    atomic_fetch_add(&n_skipped_other, 1);
    return 0;
}

void wsl_gpu_sample_end(struct wsl_gpu_sample *gs, int result, uint64_t t0, uint64_t t1, uint32_t tid)
{
    if (result != CUDA_SUCCESS) {
        pool_put(gs->pool, gs->epoch, gs->e0, gs->e1); /* e0 ran alone; re-recording it later is fine */
        return;
    }
    int idle = gs->idle;
    if (fn.event_record(gs->e1, gs->s) != CUDA_SUCCESS) {
        pool_put(gs->pool, gs->epoch, gs->e0, gs->e1);
        return;
    }
    struct sample sm = {gs->pool, gs->epoch, gs->e0, gs->e1, gs->stream, gs->handle, t0, t1, gs->t_e0, tid,
                        (idle ? WSL_GPU_IDLE_AT_SUBMIT : 0u) | (gs->graph ? WSL_GPU_GRAPH : 0u), gs->t_e0_rec,
                        gs->config};
    int queued = 0;
    pthread_mutex_lock(&queue_lock);
    if (queue_n < QUEUE_CAP) {
        queue[queue_n++] = sm;
        queued = 1;
    }
    pthread_mutex_unlock(&queue_lock);
    if (queued)
        atomic_fetch_add(&n_sampled, 1);
    else {
        pool_put(gs->pool, gs->epoch, gs->e0, gs->e1);
        atomic_fetch_add(&n_lost, 1);
    }
}

/* ---- the writer's side ------------------------------------------------------------ */
static struct wsl_thread *out; /* GPU_KERNEL events go through a ring of their own */
static double ticks_per_ns = 1.0;
static uint64_t rate_t0, rate_m0;
static int writer_relaxed;

/* Ticks per ns of the event clock, from the first call on and refined from
 * that first sample as time goes by. Known once RATE_SPAN_NS have passed since
 * the first sample: until then the writer leaves the queued pairs for its next
 * pass (collect) instead of sleeping for them before its first drain, where a
 * short program's burst of launches filled its ring and dropped events. At the
 * trace's end (`wait`) it sleeps the rest of that span. */
#define RATE_SPAN_NS 2000000ull
static int update_rate(int wait)
{
    if (!wsl_cfg.use_tsc)
        return 1;
    if (!rate_t0) {
        rate_t0 = wsl_ticks();
        rate_m0 = wsl_mono_ns();
    }
    uint64_t t = wsl_ticks(), m = wsl_mono_ns();
    if (m - rate_m0 < RATE_SPAN_NS) {
        if (!wait)
            return 0;
        uint64_t left = RATE_SPAN_NS - (m - rate_m0);
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
        t = wsl_ticks(), m = wsl_mono_ns();
    }
    if (m > rate_m0)
        ticks_per_ns = (double)(t - rate_t0) / (double)(m - rate_m0);
    return 1;
}

static uint64_t ns_to_ticks(double ns) { return ns <= 0 ? 0 : (uint64_t)(ns * ticks_per_ns); }
static double ticks_to_ns(uint64_t ticks) { return (double)ticks / ticks_per_ns; }

/* Keeps a recent reference event per context: recorded on an idle stream of
 * the shim's own, it runs on the GPU right away, so the host time of the
 * record is its GPU time to within the submission latency. */
static void refresh_reference(struct ctx_pool *cp, uint64_t now)
{
    if (cp->ref_broken)
        return;
    if (!cp->ref_stream) {
        if (!fn.ctx_set_current || !fn.stream_create || fn.ctx_set_current(cp->ctx) != CUDA_SUCCESS ||
            fn.stream_create(&cp->ref_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
            fn.event_create(&cp->ref_ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
            fn.event_create(&cp->ref_ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
            cp->ref_broken = 1;
            wsl_log(WSL_LOG_INFO, "GPU timing: no reference stream; kernel times stay unmapped");
            return;
        }
        cp->ref_cur = 1;
    }
    if (cp->ref_inflight >= 0) {
        CUresult q = fn.event_query(cp->ref_ev[cp->ref_inflight]);
        if (q == CUDA_SUCCESS) {
            cp->ref_cur = cp->ref_inflight;
            cp->ref_ticks = cp->ref_inflight_ticks;
            cp->ref_hi = wsl_ticks(); /* done by now; `now` came before the query */
            cp->ref_ok = 1;
            cp->ref_inflight = -1;
        } else if (q != CUDA_ERROR_NOT_READY) {
            cp->ref_broken = 1;
            cp->ref_ok = 0;
        }
        return;
    }
    if (cp->ref_ok && ticks_to_ns(now - cp->ref_ticks) < 500e6)
        return;
    int next = cp->ref_ok ? 1 - cp->ref_cur : 0;
    uint64_t a = wsl_ticks();
    CUresult r = fn.event_record(cp->ref_ev[next], cp->ref_stream);
    uint64_t b = wsl_ticks();
    if (r != CUDA_SUCCESS) {
        cp->ref_broken = 1;
        cp->ref_ok = 0;
        return;
    }
    (void)b;
    cp->ref_inflight = next;
    cp->ref_inflight_ticks = a; /* it cannot run before its record call began */
}

/* GPU time of e after the context's reference, in ns (may be negative). */
static int since_reference(struct ctx_pool *cp, CUevent e, double *ns)
{
    float ms = 0;
    if (!cp->ref_ok || fn.event_elapsed(&ms, cp->ref_ev[cp->ref_cur], e) != CUDA_SUCCESS)
        return 0;
    *ns = (double)ms * 1e6;
    return 1;
}

static uint64_t add_ns(uint64_t ticks, double ns) { return ns >= 0 ? ticks + ns_to_ticks(ns) : ticks - ns_to_ticks(-ns); }

/* Tightens the reference's bracket with a finished pair: e0 ran after its
 * record call began, e1 before the query that saw it done returned (seen). */
static void tighten_reference(struct ctx_pool *cp, const struct sample *sm, double d0, double d1, uint64_t seen)
{
    uint64_t lo = add_ns(sm->t_e0_rec, -d0), hi = add_ns(seen, -d1);
    if (lo > cp->ref_ticks)
        cp->ref_ticks = lo;
    if (hi < cp->ref_hi)
        cp->ref_hi = hi;
}

/* GPU time of e (ticks on the host clock) through the context's reference. */
static int map_event(struct ctx_pool *cp, CUevent e, uint64_t *ticks)
{
    double ns;
    if (!since_reference(cp, e, &ns))
        return 0;
    uint64_t ref = cp->ref_ticks <= cp->ref_hi ? cp->ref_ticks : cp->ref_hi; /* bounds crossed: noise */
    *ticks = add_ns(ref, ns);
    return 1;
}

static int emit_sample(const struct sample *sm, double raw_ns)
{
    struct ctx_pool *cp = &pools[sm->pool];
    uint64_t e0_ticks, start, end;
    uint32_t flags = sm->flags;
    if (map_event(cp, sm->e0, &e0_ticks)) {
        /* The kernel ran from no earlier than its launch call returned (the
         * GPU may have run e0 long before: an idle GPU, or a queue that
         * drained while the host was still submitting) to e1. */
        end = e0_ticks + ns_to_ticks(raw_ns);
        start = e0_ticks > sm->t_launch1 ? e0_ticks : sm->t_launch1;
        if (start > end)
            start = end;
        flags |= WSL_GPU_MAPPED;
        /* e0 ran before the launch call returned: the stream had drained
         * and the GPU waited for the host, even if the query before e0
         * still saw the previous work in flight. */
        if (e0_ticks <= sm->t_launch1)
            flags |= WSL_GPU_IDLE_AT_SUBMIT;
    } else {
        /* No clock mapping: for a launch that found the GPU idle take off the
         * host interval from e0's record to the launch's return. */
        double dur_ns = raw_ns;
        if (sm->flags & WSL_GPU_IDLE_AT_SUBMIT) {
            double gap = sm->t_launch1 > sm->t_e0 ? ticks_to_ns(sm->t_launch1 - sm->t_e0) : 0;
            dur_ns = raw_ns > gap ? raw_ns - gap : 0;
        }
        start = sm->t_launch1;
        end = start + ns_to_ticks(dur_ns);
    }
    struct wsl_event *ev = wsl_ring_reserve(out);
    if (!ev)
        return 0;
    ev->t_start = start;
    ev->t_end = end;
    ev->api = WSL_ID_GPU_KERNEL;
    ev->flags = 0;
    ev->result = (int32_t)sm->config; /* the launch's configuration (trace_format.h) */
    ev->stream = sm->stream;
    ev->a[0] = sm->handle;
    ev->a[1] = sm->t_launch0;
    ev->a[2] = flags | (uint64_t)sm->tid << 32;
    ev->a[3] = raw_ns <= 0 ? 0 : (uint64_t)(raw_ns + 0.5);
    wsl_ring_commit(out);
    return 1;
}

static void emit_memory_info(void (*emit)(uint32_t, const void *, size_t))
{
    for (int i = 0; i < MAX_CTX; i++) {
        struct ctx_pool *cp = &pools[i];
        pthread_mutex_lock(&pool_lock);
        int ready = cp->ctx && cp->mem_total && !cp->mem_written;
        struct wsl_gpu_memory gm = {cp->mem_ticks, cp->mem_free, cp->mem_total, cp->device, 0};
        if (ready)
            cp->mem_written = 1;
        pthread_mutex_unlock(&pool_lock);
        if (ready)
            emit(WSL_CHUNK_GPU_MEMORY, &gm, sizeof gm);
    }
}

/* One pass: collect what the GPU has finished. Returns how many pairs are
 * still in flight. */
static unsigned poll_once(int no_defer)
{
    pthread_mutex_lock(&queue_lock);
    unsigned take = queue_n < QUEUE_CAP - inflight_n ? queue_n : QUEUE_CAP - inflight_n;
    memcpy(&inflight[inflight_n], queue, take * sizeof queue[0]);
    memmove(queue, queue + take, (queue_n - take) * sizeof queue[0]);
    queue_n -= take;
    pthread_mutex_unlock(&queue_lock);
    inflight_n += take;
    if (!inflight_n)
        return 0;
    if (!writer_relaxed && fn.exchange_capture_mode) {
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        fn.exchange_capture_mode(&m);
        writer_relaxed = 1;
    }
    /* Which pools are in use, and the epoch, seen under pool_lock: a program's
     * thread may be setting up an unused one meanwhile; one in use stays so
     * while this thread holds poll_lock (only forget_contexts lets go, under it). */
    int in_use[MAX_CTX];
    pthread_mutex_lock(&pool_lock);
    uint32_t epoch = contexts_epoch;
    for (int i = 0; i < MAX_CTX; i++)
        in_use[i] = pools[i].ctx != NULL;
    pthread_mutex_unlock(&pool_lock);
    uint64_t now = wsl_ticks();
    for (int i = 0; i < MAX_CTX; i++)
        if (in_use[i])
            refresh_reference(&pools[i], now);
    /* Room in the output ring for every pair that may complete. */
    uint64_t room = WSL_RING_EVENTS - (out->head_local - atomic_load(&out->tail));
    uint64_t blocked[16];
    unsigned nblocked = 0, keep = 0, ndone = 0;
    for (unsigned i = 0; i < inflight_n; i++) {
        struct sample *sm = &inflight[i];
        if (WSL_UNLIKELY(sm->epoch != epoch)) {
            /* queued after the pools were let go of, its pool taken before: its
             * context may be gone with its events */
            atomic_fetch_add(&n_lost, 1);
            continue;
        }
        int is_blocked = 0;
        for (unsigned b = 0; b < nblocked; b++)
            is_blocked |= blocked[b] == sm->stream;
        CUresult q = is_blocked || !room ? CUDA_ERROR_NOT_READY : fn.event_query(sm->e1);
        /* e1 was done by the time its query returned, not by `now`: it may
         * have finished while earlier queries of this pass ran. */
        uint64_t seen = q == CUDA_SUCCESS ? wsl_ticks() : now;
        if (q == CUDA_ERROR_NOT_READY) {
            if (!is_blocked && nblocked < 16)
                blocked[nblocked++] = sm->stream; /* later work on it is not done either */
            inflight[keep++] = *sm;
            continue;
        }
        struct ctx_pool *cp = &pools[sm->pool];
        if (q == CUDA_SUCCESS && !no_defer && !cp->ref_ok && !cp->ref_broken &&
            ticks_to_ns(now - sm->t_launch1) < 2e9) {
            inflight[keep++] = *sm; /* done, but wait a little for a reference to place it */
            continue;
        }
        float ms = 0;
        if (q == CUDA_SUCCESS && fn.event_elapsed(&ms, sm->e0, sm->e1) == CUDA_SUCCESS) {
            double d0, d1;
            if (since_reference(cp, sm->e0, &d0) && since_reference(cp, sm->e1, &d1))
                tighten_reference(cp, sm, d0, d1, seen);
            done_raw[ndone] = (double)ms * 1e6;
            done[ndone++] = *sm;
            room--;
        } else {
            atomic_fetch_add(&n_lost, 1); /* the events are gone with their context */
        }
    }
    inflight_n = keep;
    /* Placed once every finished pair of this pass has tightened the bracket. */
    for (unsigned i = 0; i < ndone; i++) {
        emit_sample(&done[i], done_raw[i]);
        pool_put(done[i].pool, done[i].epoch, done[i].e0, done[i].e1);
    }
    return inflight_n;
}

static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;

/* Caller holds poll_lock. With `wait`, gives the GPU a bounded moment (200 ms)
 * to finish what was sampled; what is still out then is counted lost. */
static void collect(int wait)
{
    if (!out && !(out = wsl_thread_claim_aux()))
        return;
    if (!update_rate(wait))
        return; /* the clock's rate is not known yet: the pairs wait for a later pass */
    if (atomic_load(&timing_closed))
        return;
    unsigned left = poll_once(0);
    for (int i = 0; wait && left && i < 40; i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        left = poll_once(i == 39);
    }
    if (wait) {
        atomic_fetch_add(&n_lost, left);
        inflight_n = 0;
    }
}

/* The writer thread, every pass; `final` at the end of the trace. */
void wsl_gpu_timing_poll(int final, void (*emit)(uint32_t, const void *, size_t))
{
    if (atomic_load(&fns_state) != FNS_OK)
        return;
    pthread_mutex_lock(&poll_lock);
    collect(final);
    emit_memory_info(emit);
    pthread_mutex_unlock(&poll_lock);
    if (final && atomic_load(&n_sampled))
        wsl_log(WSL_LOG_INFO,
                "GPU timing: %llu launches sampled, %llu skipped (stream capture), %llu skipped (other), %llu lost",
                (unsigned long long)atomic_load(&n_sampled), (unsigned long long)atomic_load(&n_skipped_capture),
                (unsigned long long)atomic_load(&n_skipped_other), (unsigned long long)atomic_load(&n_lost));
}

/* Registered at the first sample, after the CUDA runtime registered its own
 * teardown, so it runs before it: collect what the GPU finished, then make no
 * more CUDA calls. */
static void at_exit_flush(void)
{
    int saved = errno;
    wsl_tls_depth++;
    pthread_mutex_lock(&poll_lock);
    collect(1);
    atomic_store(&timing_closed, 1);
    pthread_mutex_unlock(&poll_lock);
    wsl_tls_depth--;
    wsl_writer_wake();
    errno = saved;
}

/* Before the program destroys or resets a context: pairs and pools of every
 * context are forgotten (a destroyed context's handle may come back for a new
 * one), after one last look at what is done. */
void wsl_gpu_timing_forget_contexts(void)
{
    if (atomic_load(&fns_state) != FNS_OK)
        return;
    pthread_mutex_lock(&poll_lock);
    if (out && !atomic_load(&timing_closed))
        poll_once(1);
    atomic_fetch_add(&n_lost, inflight_n);
    inflight_n = 0;
    pthread_mutex_lock(&queue_lock);
    atomic_fetch_add(&n_lost, queue_n);
    queue_n = 0;
    pthread_mutex_unlock(&queue_lock);
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < MAX_CTX; i++)
        if (pools[i].ctx)
            pools[i].ctx = NULL; /* memory info not yet written is dropped too */
    contexts_epoch++;
    pthread_mutex_unlock(&pool_lock);
    pthread_mutex_unlock(&poll_lock);
}

/* Forked child: only the forking thread exists and the parent's CUDA objects
 * are not the child's. Start empty, with locks nobody holds. */
void wsl_gpu_timing_after_fork_child(void)
{
    pthread_mutex_init(&pool_lock, NULL);
    pthread_mutex_init(&queue_lock, NULL);
    pthread_mutex_init(&poll_lock, NULL);
    memset(pools, 0, sizeof pools);
    queue_n = 0;
    inflight_n = 0;
    out = NULL;
    writer_relaxed = 0;
    rate_t0 = 0;
}
