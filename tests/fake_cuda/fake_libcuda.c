/*
 * fake_libcuda.c: a stand-in for the NVIDIA driver (libcuda.so.1) for the
 * shim's preload tests. No GPU involved.
 *
 * As far as a tracer can tell it behaves like the real driver:
 *   - it exports the entry points clients call (legacy 32-bit ABI, _v2,
 *     _ptsz/_ptds), except cuEventRecordWithFlags{,_ptsz}: deliberately
 *     missing, so tests can check that a symbol the driver lacks stays missing;
 *   - cuGetProcAddress / cuGetProcAddress_v2 resolve (base name, cudaVersion,
 *     flags) with the real rules and hand out the exported addresses (or, with
 *     FAKE_CUDA_PROC_ALIASES=1, internal aliases for the kernel launches);
 *   - calls validate their arguments and return the driver's error codes,
 *     device memory is tracked (small allocations are backed by host bytes, so
 *     copies and memsets really move data), handles are registered and checked;
 *   - every call is counted per exported symbol; FAKE_CUDA_COUNTS=path writes
 *     the non-zero counts as JSON at exit;
 *   - FAKE_CUDA_{LAUNCH,SYNC,ALLOC,FREE,COPY,QUERY}_NS busy-wait to simulate
 *     costs (QUERY: cuEventQuery, which looks at the event at the end of it);
 *     FAKE_CUDA_PINNED_MAX (bytes) makes larger pinned allocations fail.
 *   - a simulated GPU: one engine that runs kernels in submission order, each
 *     taking FAKE_CUDA_KERNEL_NS x gridDimX ns (0 by default: work is done when
 *     the call returns). Events complete when the engine passes them, queries
 *     say CUDA_ERROR_NOT_READY before, synchronizations wait for it; a kernel
 *     submitted to an idle engine starts when its launch call returns.
 *   - stream capture (cuStreamBeginCapture ... cuStreamEndCapture into a graph
 *     whose launch runs the captured kernels); FAKE_CUDA_STATS=path writes at
 *     exit how many events were recorded into a capturing stream, kernels run
 *     and the engine's busy time.
 *
 * It represents the driver, so it deliberately does not include the shim's
 * cuda_api.def: its own table below is the driver's truth.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* cuda.h renames these to their newest ABI; the driver exports the old ones
 * under the plain names, so take the macros away. */
#undef cuMemAlloc
#undef cuMemAllocPitch
#undef cuMemFree
#undef cuMemAllocHost
#undef cuMemHostRegister
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemsetD8
#undef cuMemsetD16
#undef cuMemsetD32
#undef cuEventElapsedTime
#undef cuGetProcAddress
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset

typedef unsigned int devptr_v1; /* CUdeviceptr of the pre-3.2 ABI */

/* ---- the driver's symbol table ------------------------------------------------
 * X(symbol, base name for cuGetProcAddress, first cudaVersion, per-thread flavour)
 * Versions are those of the real driver (cudaTypedefs.h PFN_<base>_v<ver>). */
#define FAKE_SYMBOLS(X)                                                        \
  /* initialisation, device, context, lookup */                                \
  X(cuInit, cuInit, 2000, 0)                                                   \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020, 0)                           \
  X(cuDeviceGet, cuDeviceGet, 2000, 0)                                         \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000, 0)                               \
  X(cuDeviceGetName, cuDeviceGetName, 2000, 0)                                 \
  X(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, 4010, 0)                         \
  X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, 0)                            \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, 0)                       \
  X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, 0)            \
  X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, 0)                                 \
  X(cuGetErrorString, cuGetErrorString, 6000, 0)                               \
  X(cuGetErrorName, cuGetErrorName, 6000, 0)                                   \
  X(cuGetExportTable, cuGetExportTable, 3000, 0)                               \
  X(cuGetProcAddress, cuGetProcAddress, 11030, 0)                              \
  X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)                           \
  /* modules, streams, events, graphs: handles for the clients */              \
  X(cuModuleLoad, cuModuleLoad, 2000, 0)                                       \
  X(cuModuleLoadData, cuModuleLoadData, 2000, 0)                               \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010, 0)                           \
  X(cuModuleLoadFatBinary, cuModuleLoadFatBinary, 2000, 0)                     \
  X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, 12000, 0)                    \
  X(cuModuleGetFunction, cuModuleGetFunction, 2000, 0)                         \
  X(cuModuleUnload, cuModuleUnload, 2000, 0)                                   \
  X(cuLibraryLoadData, cuLibraryLoadData, 12000, 0)                            \
  X(cuLibraryUnload, cuLibraryUnload, 12000, 0)                                \
  X(cuLibraryGetKernel, cuLibraryGetKernel, 12000, 0)                          \
  X(cuKernelGetFunction, cuKernelGetFunction, 12000, 0)                        \
  X(cuFuncGetName, cuFuncGetName, 12030, 0)                                    \
  X(cuKernelGetName, cuKernelGetName, 12030, 0)                                \
  X(cuStreamCreate, cuStreamCreate, 2000, 0)                                   \
  X(cuStreamDestroy_v2, cuStreamDestroy, 4000, 0)                              \
  X(cuEventCreate, cuEventCreate, 2000, 0)                                     \
  X(cuEventDestroy_v2, cuEventDestroy, 4000, 0)                                \
  X(cuEventQuery, cuEventQuery, 2000, 0)                                       \
  X(cuEventElapsedTime, cuEventElapsedTime, 2000, 0)                           \
  X(cuEventElapsedTime_v2, cuEventElapsedTime, 12080, 0)                       \
  X(cuGraphCreate, cuGraphCreate, 10000, 0)                                    \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, 0)        \
  X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, 0)                          \
  X(cuGraphDestroy, cuGraphDestroy, 10000, 0)                                  \
  X(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0)                                    \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, 0)                                 \
  X(cuCtxGetDevice, cuCtxGetDevice, 2000, 0)                                   \
  X(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0)                                    \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, 0)             \
  X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0)         \
  X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, 0)                 \
  X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0)             \
  X(cuStreamGetCtx, cuStreamGetCtx, 9020, 0)                                   \
  X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 0)                   \
  X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, 1)              \
  X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, 0)        \
  X(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030, 1)   \
  X(cuStreamEndCapture, cuStreamEndCapture, 10000, 0)                          \
  X(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, 1)                     \
  X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, 0)                        \
  X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010, 0) \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0)               \
  /* kernel launches */                                                        \
  X(cuLaunchKernel, cuLaunchKernel, 4000, 0)                                   \
  X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, 1)                              \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, 0)             \
  X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, 1)        \
  X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, 0)                              \
  X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 1)                         \
  X(cuGraphLaunch, cuGraphLaunch, 10000, 0)                                    \
  X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, 1)                               \
  X(cuLaunchHostFunc, cuLaunchHostFunc, 10000, 0)                              \
  X(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, 10000, 1)                         \
  /* device memory */                                                          \
  X(cuMemAlloc, cuMemAlloc, 2000, 0)                                           \
  X(cuMemAlloc_v2, cuMemAlloc, 3020, 0)                                        \
  X(cuMemAllocPitch, cuMemAllocPitch, 2000, 0)                                 \
  X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0)                              \
  X(cuMemAllocManaged, cuMemAllocManaged, 6000, 0)                             \
  X(cuMemAllocAsync, cuMemAllocAsync, 11020, 0)                                \
  X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 1)                           \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0)                \
  X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 1)           \
  X(cuMemFree, cuMemFree, 2000, 0)                                             \
  X(cuMemFree_v2, cuMemFree, 3020, 0)                                          \
  X(cuMemFreeAsync, cuMemFreeAsync, 11020, 0)                                  \
  X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 1)                             \
  X(cuMemCreate, cuMemCreate, 10020, 0)                                        \
  X(cuMemRelease, cuMemRelease, 10020, 0)                                      \
  X(cuMemMap, cuMemMap, 10020, 0)                                              \
  X(cuMemUnmap, cuMemUnmap, 10020, 0)                                          \
  /* host memory */                                                            \
  X(cuMemHostAlloc, cuMemHostAlloc, 2020, 0)                                   \
  X(cuMemAllocHost, cuMemAllocHost, 2000, 0)                                   \
  X(cuMemAllocHost_v2, cuMemAllocHost, 3020, 0)                                \
  X(cuMemFreeHost, cuMemFreeHost, 2000, 0)                                     \
  X(cuMemHostRegister, cuMemHostRegister, 4000, 0)                             \
  X(cuMemHostRegister_v2, cuMemHostRegister, 6050, 0)                          \
  X(cuMemHostUnregister, cuMemHostUnregister, 4000, 0)                         \
  /* synchronisation, events */                                                \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000, 0)                         \
  X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, 1)                    \
  X(cuCtxSynchronize, cuCtxSynchronize, 2000, 0)                               \
  X(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, 0)                           \
  X(cuEventSynchronize, cuEventSynchronize, 2000, 0)                           \
  X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, 0)                             \
  X(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 7000, 1)                        \
  X(cuStreamQuery, cuStreamQuery, 2000, 0)                                     \
  X(cuStreamQuery_ptsz, cuStreamQuery, 7000, 1)                                \
  X(cuEventRecord, cuEventRecord, 2000, 0)                                     \
  X(cuEventRecord_ptsz, cuEventRecord, 7000, 1)                                \
  /* cuEventRecordWithFlags{,_ptsz} (11010) deliberately absent */             \
  /* copies */                                                                 \
  X(cuMemcpy, cuMemcpy, 4000, 0)                                               \
  X(cuMemcpy_ptds, cuMemcpy, 7000, 1)                                          \
  X(cuMemcpyAsync, cuMemcpyAsync, 4000, 0)                                     \
  X(cuMemcpyAsync_ptsz, cuMemcpyAsync, 7000, 1)                                \
  X(cuMemcpyHtoD, cuMemcpyHtoD, 2000, 0)                                       \
  X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, 0)                                    \
  X(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 7000, 1)                               \
  X(cuMemcpyDtoH, cuMemcpyDtoH, 2000, 0)                                       \
  X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, 0)                                    \
  X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, 1)                               \
  X(cuMemcpyDtoD, cuMemcpyDtoD, 2000, 0)                                       \
  X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, 0)                                    \
  X(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 7000, 1)                               \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, 2000, 0)                             \
  X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, 0)                          \
  X(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 7000, 1)                     \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, 2000, 0)                             \
  X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, 0)                          \
  X(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 7000, 1)                     \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, 3000, 0)                             \
  X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, 0)                          \
  X(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 7000, 1)                     \
  /* memsets */                                                                \
  FAKE_MEMSET_SYMBOLS(X, 8)                                                    \
  FAKE_MEMSET_SYMBOLS(X, 16)                                                   \
  FAKE_MEMSET_SYMBOLS(X, 32)

#define FAKE_MEMSET_SYMBOLS(X, W)                                              \
  X(cuMemsetD##W, cuMemsetD##W, 2000, 0)                                       \
  X(cuMemsetD##W##_v2, cuMemsetD##W, 3020, 0)                                  \
  X(cuMemsetD##W##_v2_ptds, cuMemsetD##W, 7000, 1)                             \
  X(cuMemsetD##W##Async, cuMemsetD##W##Async, 3020, 0)                         \
  X(cuMemsetD##W##Async_ptsz, cuMemsetD##W##Async, 7000, 1)

enum fake_symbol_id {
#define FAKE_ENUM(sym, base, ver, pt) FK_##sym,
  FAKE_SYMBOLS(FAKE_ENUM)
#undef FAKE_ENUM
  FK_COUNT
};

static const char *const fake_symbol_names[FK_COUNT] = {
#define FAKE_NAME(sym, base, ver, pt) #sym,
  FAKE_SYMBOLS(FAKE_NAME)
#undef FAKE_NAME
};

#define FAKE_API __attribute__((visibility("default"))) CUresult CUDAAPI

/* ---- fixed properties of the fake device ------------------------------------ */
enum {
  FAKE_DRIVER_VERSION = 13000,
  FAKE_CC_MAJOR = 9,
  FAKE_CC_MINOR = 0,
  FAKE_SM_COUNT = 132,
  FAKE_ALLOC_ALIGN = 256,
  FAKE_PITCH_ALIGN = 512,
  FAKE_MAX_THREADS_PER_BLOCK = 1024,
  FAKE_MAX_SHARED_BYTES = 227 * 1024,
};
static const char fake_device_name[] = "Fake GPU";
static const uint64_t fake_total_mem = 80ull << 30;
/* Device address windows: 64-bit allocations far from where Linux maps host
 * memory; legacy (32-bit ABI) allocations must fit in 32 bits. */
static const uint64_t fake_va_base = 0x200000000000ull;
static const uint64_t fake_va_end = 0x300000000000ull;
static const uint64_t fake_va32_base = 0x10000000ull;
static const uint64_t fake_va32_end = 0xF0000000ull;
/* Allocations up to this size get host bytes behind them (copies, memsets
 * move data); larger ones, or past the budget, only exist as address ranges. */
static const uint64_t fake_backed_max = 1ull << 20;
static const uint64_t fake_backed_budget = 256ull << 20;

/* ---- process state ----------------------------------------------------------- */
static _Atomic uint64_t fake_counts[FK_COUNT];
static _Atomic uint64_t fake_alias_calls; /* makes alias bodies differ from the exports */
static atomic_int fake_initialized;

static struct {
  uint64_t launch_ns, sync_ns, alloc_ns, free_ns, copy_ns, kernel_ns, query_ns, module_load_ns;
  uint64_t pinned_max; /* FAKE_CUDA_PINNED_MAX: larger pinned allocations fail (0: no limit) */
  int proc_aliases;
  char counts_path[4096];
  char stats_path[4096];
} fake_config;

#define COUNT(sym) atomic_fetch_add_explicit(&fake_counts[FK_##sym], 1, memory_order_relaxed)
#define REQUIRE_INIT()                                                         \
  do {                                                                         \
    if (!atomic_load_explicit(&fake_initialized, memory_order_acquire))        \
      return CUDA_ERROR_NOT_INITIALIZED;                                       \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Simulated cost: burn the time on the CPU, as the driver's own work would. */
static void spin_ns(uint64_t ns) {
  if (!ns)
    return;
  uint64_t start = now_ns();
  while (now_ns() - start < ns) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

/* ---- sorted address ranges (device memory, host memory, handles) ------------- */
enum region_kind {
  REGION_DEVICE = 1, REGION_MANAGED,          /* device table */
  REGION_PINNED, REGION_REGISTERED,           /* host table */
  HANDLE_MODULE, HANDLE_FUNCTION, HANDLE_STREAM, HANDLE_EVENT, HANDLE_GRAPH,
  HANDLE_GRAPH_EXEC,                          /* handle table */
};

struct region {
  uint64_t base, size;
  unsigned char *data; /* host bytes behind a device range, or NULL */
  int kind;
  uint64_t charged;    /* bytes counted against device memory */
};

struct region_set {
  struct region *v;
  size_t n, cap;
};

/* Index of the first region whose base is > addr. */
static size_t region_upper(const struct region_set *s, uint64_t addr) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid].base <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The region holding [addr, addr+len), or NULL. */
static struct region *region_containing(struct region_set *s, uint64_t addr, uint64_t len) {
  size_t i = region_upper(s, addr);
  if (i == 0)
    return NULL;
  struct region *r = &s->v[i - 1];
  uint64_t off = addr - r->base;
  if (off < r->size && len <= r->size - off)
    return r;
  return NULL;
}

static struct region *region_at(struct region_set *s, uint64_t base, int kind) {
  size_t i = region_upper(s, base);
  if (i == 0 || s->v[i - 1].base != base || (kind && s->v[i - 1].kind != kind))
    return NULL;
  return &s->v[i - 1];
}

static int region_overlaps(const struct region_set *s, uint64_t addr, uint64_t len) {
  size_t i = region_upper(s, addr);
  if (i > 0 && addr - s->v[i - 1].base < s->v[i - 1].size)
    return 1;
  return i < s->n && s->v[i].base - addr < len;
}

static int region_insert(struct region_set *s, struct region r) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    struct region *v = realloc(s->v, cap * sizeof *v);
    if (!v)
      return -1;
    s->v = v;
    s->cap = cap;
  }
  size_t i = region_upper(s, r.base);
  memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
  s->v[i] = r;
  s->n++;
  return 0;
}

static void region_erase(struct region_set *s, struct region *r) {
  size_t i = (size_t)(r - s->v);
  memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
  s->n--;
}

/* Device memory: one lock for the table and the accounting. */
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region_set dev_regions;
static uint64_t dev_used, dev_backed, dev_next = 0x200000000000ull, dev_next32 = 0x10000000ull;

/* Host memory the driver knows (pinned allocations, registered ranges). */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region_set host_regions;

/* Live handles, keyed by address: a handle is valid only while registered, so
 * garbage handles are rejected without being dereferenced. One table per kind:
 * a launch's check of its function searches the functions only, so that its
 * cost does not grow with the events and streams others create (the shim's
 * GPU timing creates events; docs/overhead.md, issue 26). */
static pthread_rwlock_t handle_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct region_set handle_regions[HANDLE_GRAPH_EXEC + 1];
#define HANDLES(kind) (&handle_regions[(kind) >= HANDLE_MODULE && (kind) <= HANDLE_GRAPH_EXEC ? (kind) : 0])

struct fake_object {
  int kind;
  unsigned int flags;
  struct fake_object *owner; /* module of a function */
  _Atomic uint64_t recorded_ns; /* events: 0 = never recorded; else when the GPU passes it */
  _Atomic int capturing;        /* streams: in stream capture */
  _Atomic uint64_t work_ns;     /* capturing stream, graph, graph exec: GPU time of the captured kernels */
  _Atomic uint64_t tail_ns;     /* created streams: when the work submitted to it is done */
  char name[128];               /* functions and kernels: the name they were got by */
  int from_library;             /* kernels: got by cuLibraryGetKernel (a CUkernel) */
};

/* Objects that exist once per process. */
static struct fake_object fake_context = {0};
static struct fake_object fake_default_pool = {0};

/* ---- the simulated GPU: one engine, work in submission order ------------------- */
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gpu_busy_until; /* when the engine has run everything submitted */
static _Atomic uint64_t gpu_kernels, gpu_busy_ns, capture_event_records;
static _Atomic int captures_global; /* streams capturing in CU_STREAM_CAPTURE_MODE_GLOBAL */
static __thread int thread_capture_mode; /* cuThreadExchangeStreamCaptureMode */

static uint64_t gpu_submit(uint64_t ns);

/* Submits `ns` of GPU work now (to created stream so, or NULL); returns when
 * it will be done. An event recorded into a created stream completes when
 * that stream's work is done: other streams' work does not hold it up. */
static uint64_t gpu_submit_on(struct fake_object *so, uint64_t ns) {
  if (!ns && so) {
    uint64_t now = now_ns(), tail = atomic_load(&so->tail_ns);
    return tail > now ? tail : now;
  }
  uint64_t done = gpu_submit(ns);
  if (so)
    atomic_store(&so->tail_ns, done);
  return done;
}

static uint64_t gpu_submit(uint64_t ns) {
  pthread_mutex_lock(&gpu_lock);
  uint64_t now = now_ns(), start = gpu_busy_until > now ? gpu_busy_until : now;
  gpu_busy_until = start + ns;
  uint64_t done = gpu_busy_until;
  pthread_mutex_unlock(&gpu_lock);
  if (ns) {
    atomic_fetch_add(&gpu_kernels, 1);
    atomic_fetch_add(&gpu_busy_ns, ns);
  }
  return done;
}

static uint64_t gpu_idle_at(void) {
  pthread_mutex_lock(&gpu_lock);
  uint64_t t = gpu_busy_until;
  pthread_mutex_unlock(&gpu_lock);
  return t;
}

/* Blocks until the engine reaches `t` (sleeping: waits can be long). */
static void gpu_wait(uint64_t t) {
  for (uint64_t now = now_ns(); now < t; now = now_ns()) {
    uint64_t left = t - now;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    nanosleep(&ts, NULL);
  }
}

static CUresult handle_create(int kind, unsigned int flags, struct fake_object *owner, void **out) {
  struct fake_object *o = calloc(1, sizeof *o);
  if (!o)
    return CUDA_ERROR_OUT_OF_MEMORY;
  o->kind = kind;
  o->flags = flags;
  o->owner = owner;
  pthread_rwlock_wrlock(&handle_lock);
  int rc = region_insert(HANDLES(kind),
                         (struct region){(uint64_t)(uintptr_t)o, sizeof *o, NULL, kind, 0});
  pthread_rwlock_unlock(&handle_lock);
  if (rc) {
    free(o);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = o;
  return CUDA_SUCCESS;
}

/* Caller holds handle_lock. */
static struct fake_object *handle_lookup_locked(const void *h, int kind) {
  if (!h)
    return NULL;
  return region_at(HANDLES(kind), (uint64_t)(uintptr_t)h, kind) ? (struct fake_object *)h : NULL;
}

static int handle_valid(const void *h, int kind) {
  pthread_rwlock_rdlock(&handle_lock);
  int ok = handle_lookup_locked(h, kind) != NULL;
  pthread_rwlock_unlock(&handle_lock);
  return ok;
}

static int handle_destroy(const void *h, int kind) {
  pthread_rwlock_wrlock(&handle_lock);
  struct region *r = h ? region_at(HANDLES(kind), (uint64_t)(uintptr_t)h, kind) : NULL;
  if (r)
    region_erase(HANDLES(kind), r);
  pthread_rwlock_unlock(&handle_lock);
  if (r)
    free((void *)h);
  return r != NULL;
}

/* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are always valid. */
static CUresult check_stream(CUstream s) {
  if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
    return CUDA_SUCCESS;
  return handle_valid(s, HANDLE_STREAM) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* A created stream's object, NULL for the built-in streams (never captured here). */
static struct fake_object *stream_object(CUstream s) {
  if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
    return NULL;
  return handle_valid(s, HANDLE_STREAM) ? (struct fake_object *)s : NULL;
}

/* ---- initialisation, device queries --------------------------------------------- */
FAKE_API cuInit(unsigned int Flags) {
  COUNT(cuInit);
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  atomic_store_explicit(&fake_initialized, 1, memory_order_release);
  return CUDA_SUCCESS;
}

FAKE_API cuDriverGetVersion(int *driverVersion) {
  COUNT(cuDriverGetVersion);
  if (!driverVersion)
    return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = FAKE_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceGetCount(int *count) {
  COUNT(cuDeviceGetCount);
  REQUIRE_INIT();
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceGet(CUdevice *device, int ordinal) {
  COUNT(cuDeviceGet);
  REQUIRE_INIT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceGetName(char *name, int len, CUdevice dev) {
  COUNT(cuDeviceGetName);
  REQUIRE_INIT();
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", fake_device_name);
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev) {
  COUNT(cuDeviceGetPCIBusId);
  REQUIRE_INIT();
  if (!bus || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  snprintf(bus, (size_t)len, "0000:fa:00.0");
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  COUNT(cuDeviceTotalMem_v2);
  REQUIRE_INIT();
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)fake_total_mem;
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  COUNT(cuDeviceGetAttribute);
  REQUIRE_INIT();
  if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = FAKE_CC_MAJOR; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = FAKE_CC_MINOR; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = FAKE_SM_COUNT; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = FAKE_MAX_THREADS_PER_BLOCK; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *pi = 1; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
  default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}

FAKE_API cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  COUNT(cuDeviceGetDefaultMemPool);
  REQUIRE_INIT();
  if (!pool_out)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = (CUmemoryPool)&fake_default_pool;
  return CUDA_SUCCESS;
}

/* After cuInit every thread sees one current context, as after the runtime
 * made the primary context current. */
FAKE_API cuCtxGetCurrent(CUcontext *pctx) {
  COUNT(cuCtxGetCurrent);
  REQUIRE_INIT();
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx = (CUcontext)&fake_context;
  return CUDA_SUCCESS;
}

/* ---- errors ----------------------------------------------------------------------- */
static const struct {
  CUresult code;
  const char *name, *text;
} fake_errors[] = {
  {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
  {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
  {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
  {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
   "part or all of the requested memory range is already mapped"},
  {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
   "pointer does not correspond to a registered memory region"},
  {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult e) {
  for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
    if (fake_errors[i].code == e)
      return (int)i;
  return -1;
}

FAKE_API cuGetErrorString(CUresult error, const char **pStr) {
  COUNT(cuGetErrorString);
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  int i = error_index(error);
  *pStr = i < 0 ? NULL : fake_errors[i].text;
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKE_API cuGetErrorName(CUresult error, const char **pStr) {
  COUNT(cuGetErrorName);
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  int i = error_index(error);
  *pStr = i < 0 ? NULL : fake_errors[i].name;
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* The runtime's private tables do not exist here. */
FAKE_API cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
  COUNT(cuGetExportTable);
  if (!ppExportTable || !pExportTableId)
    return CUDA_ERROR_INVALID_VALUE;
  *ppExportTable = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- modules, streams, events, graphs --------------------------------------------- */
static void module_load_wait(void) { spin_ns(fake_config.module_load_ns); }

FAKE_API cuModuleLoadData(CUmodule *module, const void *image) {
  COUNT(cuModuleLoadData);
  REQUIRE_INIT();
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  module_load_wait();
  return handle_create(HANDLE_MODULE, 0, NULL, (void **)module);
}

/* FAKE_CUDA_MODULE_LOAD_NS: busy-wait in every module and library load (JIT, compilation). */
static void module_load_wait(void);

FAKE_API cuModuleLoad(CUmodule *module, const char *fname) {
  COUNT(cuModuleLoad);
  REQUIRE_INIT();
  if (!module || !fname)
    return CUDA_ERROR_INVALID_VALUE;
  module_load_wait();
  return handle_create(HANDLE_MODULE, 0, NULL, (void **)module);
}

FAKE_API cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n, CUjit_option *opts, void **vals) {
  COUNT(cuModuleLoadDataEx);
  (void)opts, (void)vals;
  REQUIRE_INIT();
  if (!module || !image || (n && (!opts || !vals)))
    return CUDA_ERROR_INVALID_VALUE;
  module_load_wait();
  return handle_create(HANDLE_MODULE, 0, NULL, (void **)module);
}

FAKE_API cuModuleLoadFatBinary(CUmodule *module, const void *fatbin) {
  COUNT(cuModuleLoadFatBinary);
  REQUIRE_INIT();
  if (!module || !fatbin)
    return CUDA_ERROR_INVALID_VALUE;
  module_load_wait();
  return handle_create(HANDLE_MODULE, 0, NULL, (void **)module);
}

FAKE_API cuLibraryLoadFromFile(CUlibrary *library, const char *file, CUjit_option *jo, void **jv, unsigned int nj,
                               CUlibraryOption *lo, void **lv, unsigned int nl) {
  COUNT(cuLibraryLoadFromFile);
  (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
  REQUIRE_INIT();
  if (!library || !file)
    return CUDA_ERROR_INVALID_VALUE;
  module_load_wait();
  return handle_create(HANDLE_MODULE, 0, NULL, (void **)library);
}

FAKE_API cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  COUNT(cuModuleGetFunction);
  REQUIRE_INIT();
  if (!hfunc || !name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!handle_valid(hmod, HANDLE_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name[0])
    return CUDA_ERROR_NOT_FOUND;
  CUresult r = handle_create(HANDLE_FUNCTION, 0, (struct fake_object *)hmod, (void **)hfunc);
  if (r == CUDA_SUCCESS)
    snprintf(((struct fake_object *)*hfunc)->name, sizeof ((struct fake_object *)*hfunc)->name, "%s", name);
  return r;
}

/* Not a driver entry point: a function got where no tracer sees it (as through
 * the runtime's private tables), to test naming by cuFuncGetName. Not counted. */
__attribute__((visibility("default"))) CUresult fake_module_get_function_unseen(CUfunction *hfunc, CUmodule hmod,
                                                                                const char *name) {
  if (!hfunc || !name || !name[0] || !handle_valid(hmod, HANDLE_MODULE))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = handle_create(HANDLE_FUNCTION, 0, (struct fake_object *)hmod, (void **)hfunc);
  if (r == CUDA_SUCCESS)
    snprintf(((struct fake_object *)*hfunc)->name, sizeof ((struct fake_object *)*hfunc)->name, "%s", name);
  return r;
}

/* As the real driver: a function's name, and a kernel's; a CUkernel is not a
 * CUfunction to cuFuncGetName. */
FAKE_API cuFuncGetName(const char **name, CUfunction hfunc) {
  COUNT(cuFuncGetName);
  REQUIRE_INIT();
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!handle_valid(hfunc, HANDLE_FUNCTION) || ((struct fake_object *)hfunc)->from_library)
    return CUDA_ERROR_INVALID_HANDLE;
  *name = ((struct fake_object *)hfunc)->name;
  return CUDA_SUCCESS;
}

FAKE_API cuKernelGetName(const char **name, CUkernel hfunc) {
  COUNT(cuKernelGetName);
  REQUIRE_INIT();
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!handle_valid(hfunc, HANDLE_FUNCTION) || !((struct fake_object *)hfunc)->from_library)
    return CUDA_ERROR_INVALID_HANDLE;
  *name = ((struct fake_object *)hfunc)->name;
  return CUDA_SUCCESS;
}

/* Libraries (CUDA 12): a library is a module here, and a kernel is a function
 * of it; as in the real driver, a CUkernel may be launched as a CUfunction. */
FAKE_API cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jit_options,
                           void **jit_values, unsigned int n_jit, CUlibraryOption *lib_options,
                           void **lib_values, unsigned int n_lib) {
  COUNT(cuLibraryLoadData);
  (void)jit_options, (void)jit_values, (void)n_jit, (void)lib_options, (void)lib_values, (void)n_lib;
  REQUIRE_INIT();
  if (!library || !code)
    return CUDA_ERROR_INVALID_VALUE;
  module_load_wait();
  return handle_create(HANDLE_MODULE, 0, NULL, (void **)library);
}

FAKE_API cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name) {
  COUNT(cuLibraryGetKernel);
  REQUIRE_INIT();
  if (!kernel || !name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!handle_valid(library, HANDLE_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name[0])
    return CUDA_ERROR_NOT_FOUND;
  CUresult r = handle_create(HANDLE_FUNCTION, 0, (struct fake_object *)library, (void **)kernel);
  if (r == CUDA_SUCCESS) {
    struct fake_object *o = (struct fake_object *)*kernel;
    snprintf(o->name, sizeof o->name, "%s", name);
    o->from_library = 1;
  }
  return r;
}

FAKE_API cuKernelGetFunction(CUfunction *func, CUkernel kernel) {
  COUNT(cuKernelGetFunction);
  REQUIRE_INIT();
  if (!func)
    return CUDA_ERROR_INVALID_VALUE;
  if (!handle_valid(kernel, HANDLE_FUNCTION))
    return CUDA_ERROR_INVALID_HANDLE;
  *func = (CUfunction)kernel;
  return CUDA_SUCCESS;
}

static CUresult module_unload(CUmodule hmod);

FAKE_API cuLibraryUnload(CUlibrary library) {
  COUNT(cuLibraryUnload);
  REQUIRE_INIT();
  return module_unload((CUmodule)library);
}

FAKE_API cuModuleUnload(CUmodule hmod) {
  COUNT(cuModuleUnload);
  REQUIRE_INIT();
  return module_unload(hmod);
}

static CUresult module_unload(CUmodule hmod) {
  pthread_rwlock_wrlock(&handle_lock);
  if (!handle_lookup_locked(hmod, HANDLE_MODULE)) {
    pthread_rwlock_unlock(&handle_lock);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  /* The module's functions die with it. */
  struct region_set *fns = HANDLES(HANDLE_FUNCTION);
  for (size_t i = 0; i < fns->n;) {
    struct region *r = &fns->v[i];
    struct fake_object *o = (struct fake_object *)(uintptr_t)r->base;
    if (o->owner == (struct fake_object *)hmod) {
      region_erase(fns, r);
      free(o);
    } else {
      i++;
    }
  }
  struct region *m = region_at(HANDLES(HANDLE_MODULE), (uint64_t)(uintptr_t)hmod, HANDLE_MODULE);
  region_erase(HANDLES(HANDLE_MODULE), m);
  free(hmod);
  pthread_rwlock_unlock(&handle_lock);
  return CUDA_SUCCESS;
}

FAKE_API cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  COUNT(cuStreamCreate);
  REQUIRE_INIT();
  if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  return handle_create(HANDLE_STREAM, Flags, NULL, (void **)phStream);
}

FAKE_API cuStreamDestroy_v2(CUstream hStream) {
  COUNT(cuStreamDestroy_v2);
  REQUIRE_INIT();
  return handle_destroy(hStream, HANDLE_STREAM) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_API cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  COUNT(cuEventCreate);
  REQUIRE_INIT();
  const unsigned valid = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!phEvent || (Flags & ~valid))
    return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_VALUE;
  return handle_create(HANDLE_EVENT, Flags, NULL, (void **)phEvent);
}

FAKE_API cuEventDestroy_v2(CUevent hEvent) {
  COUNT(cuEventDestroy_v2);
  REQUIRE_INIT();
  return handle_destroy(hEvent, HANDLE_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_API cuEventQuery(CUevent hEvent) {
  COUNT(cuEventQuery);
  REQUIRE_INIT();
  pthread_rwlock_rdlock(&handle_lock);
  struct fake_object *o = handle_lookup_locked(hEvent, HANDLE_EVENT);
  uint64_t at = o ? atomic_load(&o->recorded_ns) : 0;
  pthread_rwlock_unlock(&handle_lock);
  if (!o)
    return CUDA_ERROR_INVALID_HANDLE;
  spin_ns(fake_config.query_ns);
  return now_ns() < at ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

static CUresult event_elapsed(float *ms, CUevent start, CUevent end) {
  REQUIRE_INIT();
  if (!ms)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_rwlock_rdlock(&handle_lock);
  struct fake_object *a = handle_lookup_locked(start, HANDLE_EVENT);
  struct fake_object *b = handle_lookup_locked(end, HANDLE_EVENT);
  if (!a || !b || (a->flags & CU_EVENT_DISABLE_TIMING) || (b->flags & CU_EVENT_DISABLE_TIMING)) {
    rc = CUDA_ERROR_INVALID_HANDLE;
  } else {
    uint64_t t0 = atomic_load(&a->recorded_ns), t1 = atomic_load(&b->recorded_ns);
    if (!t0 || !t1)
      rc = CUDA_ERROR_INVALID_HANDLE; /* never recorded */
    else if (now_ns() < (t0 > t1 ? t0 : t1))
      rc = CUDA_ERROR_NOT_READY;
    else
      *ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
  }
  pthread_rwlock_unlock(&handle_lock);
  return rc;
}

FAKE_API cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  COUNT(cuEventElapsedTime);
  return event_elapsed(pMilliseconds, hStart, hEnd);
}

FAKE_API cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  COUNT(cuEventElapsedTime_v2);
  return event_elapsed(pMilliseconds, hStart, hEnd);
}

FAKE_API cuCtxGetDevice(CUdevice *dev) {
  COUNT(cuCtxGetDevice);
  REQUIRE_INIT();
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

/* The one context cannot go away: destroying or resetting it is accepted and
 * changes nothing (the shim must let go of its events all the same). */
FAKE_API cuCtxDestroy_v2(CUcontext ctx) {
  COUNT(cuCtxDestroy_v2);
  REQUIRE_INIT();
  return ctx == (CUcontext)&fake_context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult primary_ctx_op(CUdevice dev) {
  REQUIRE_INIT();
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_API cuDevicePrimaryCtxRelease(CUdevice dev) {
  COUNT(cuDevicePrimaryCtxRelease);
  return primary_ctx_op(dev);
}

FAKE_API cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  COUNT(cuDevicePrimaryCtxRelease_v2);
  return primary_ctx_op(dev);
}

FAKE_API cuDevicePrimaryCtxReset(CUdevice dev) {
  COUNT(cuDevicePrimaryCtxReset);
  return primary_ctx_op(dev);
}

FAKE_API cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  COUNT(cuDevicePrimaryCtxReset_v2);
  return primary_ctx_op(dev);
}

FAKE_API cuCtxSetCurrent(CUcontext ctx) {
  COUNT(cuCtxSetCurrent);
  REQUIRE_INIT();
  return ctx == NULL || ctx == (CUcontext)&fake_context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

FAKE_API cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
  COUNT(cuStreamGetCtx);
  REQUIRE_INIT();
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_stream(hStream);
  if (rc == CUDA_SUCCESS)
    *pctx = (CUcontext)&fake_context;
  return rc;
}

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode);

FAKE_API cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  COUNT(cuStreamBeginCapture_v2);
  return begin_capture(hStream, mode);
}

FAKE_API cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  COUNT(cuStreamBeginCapture_v2_ptsz);
  return begin_capture(hStream, mode);
}

/* Capturing into an existing graph: not simulated. */
FAKE_API cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *deps,
                                     const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode) {
  COUNT(cuStreamBeginCaptureToGraph);
  (void)hStream, (void)hGraph, (void)deps, (void)data, (void)n, (void)mode;
  return CUDA_ERROR_NOT_SUPPORTED;
}

FAKE_API cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *deps,
                                          const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode) {
  COUNT(cuStreamBeginCaptureToGraph_ptsz);
  (void)hStream, (void)hGraph, (void)deps, (void)data, (void)n, (void)mode;
  return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult end_capture(CUstream hStream, CUgraph *phGraph);

FAKE_API cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
  COUNT(cuStreamEndCapture);
  return end_capture(hStream, phGraph);
}

FAKE_API cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
  COUNT(cuStreamEndCapture_ptsz);
  return end_capture(hStream, phGraph);
}

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode) {
  REQUIRE_INIT();
  struct fake_object *so = stream_object(hStream);
  if (!so)
    return hStream == NULL || hStream == CU_STREAM_LEGACY ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                                                          : CUDA_ERROR_INVALID_VALUE;
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  int expect = 0;
  if (!atomic_compare_exchange_strong(&so->capturing, &expect, 1 + (int)mode))
    return CUDA_ERROR_ILLEGAL_STATE;
  atomic_store(&so->work_ns, 0);
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
    atomic_fetch_add(&captures_global, 1);
  return CUDA_SUCCESS;
}

static CUresult end_capture(CUstream hStream, CUgraph *phGraph) {
  REQUIRE_INIT();
  struct fake_object *so = stream_object(hStream);
  if (!so || !phGraph)
    return CUDA_ERROR_INVALID_VALUE;
  int was = atomic_exchange(&so->capturing, 0);
  if (!was)
    return CUDA_ERROR_ILLEGAL_STATE;
  if (was == 1 + CU_STREAM_CAPTURE_MODE_GLOBAL)
    atomic_fetch_sub(&captures_global, 1);
  CUresult rc = handle_create(HANDLE_GRAPH, 0, NULL, (void **)phGraph);
  if (rc == CUDA_SUCCESS)
    atomic_store(&((struct fake_object *)*phGraph)->work_ns, atomic_load(&so->work_ns));
  return rc;
}

/* The legacy stream cannot be asked while a global-mode capture runs (the real
 * driver's CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). */
FAKE_API cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *status) {
  COUNT(cuStreamIsCapturing);
  REQUIRE_INIT();
  if (!status)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_stream(hStream);
  if (rc != CUDA_SUCCESS)
    return rc;
  if ((hStream == NULL || hStream == CU_STREAM_LEGACY) && atomic_load(&captures_global))
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  struct fake_object *so = stream_object(hStream);
  *status = so && atomic_load(&so->capturing) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

FAKE_API cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  COUNT(cuThreadExchangeStreamCaptureMode);
  REQUIRE_INIT();
  if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  int old = thread_capture_mode;
  thread_capture_mode = (int)*mode;
  *mode = (CUstreamCaptureMode)old;
  return CUDA_SUCCESS;
}

FAKE_API cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
  COUNT(cuGraphCreate);
  REQUIRE_INIT();
  if (!phGraph || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return handle_create(HANDLE_GRAPH, 0, NULL, (void **)phGraph);
}

FAKE_API cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
  COUNT(cuGraphInstantiateWithFlags);
  REQUIRE_INIT();
  (void)flags;
  if (!phGraphExec || !handle_valid(hGraph, HANDLE_GRAPH))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = handle_create(HANDLE_GRAPH_EXEC, 0, NULL, (void **)phGraphExec);
  if (rc == CUDA_SUCCESS)
    atomic_store(&((struct fake_object *)*phGraphExec)->work_ns,
                 atomic_load(&((struct fake_object *)hGraph)->work_ns));
  return rc;
}

/* The primary context is the fake's one process-wide context. */
FAKE_API cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  COUNT(cuDevicePrimaryCtxRetain);
  REQUIRE_INIT();
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *pctx = (CUcontext)&fake_context;
  return CUDA_SUCCESS;
}

FAKE_API cuGraphExecDestroy(CUgraphExec hGraphExec) {
  COUNT(cuGraphExecDestroy);
  REQUIRE_INIT();
  return handle_destroy(hGraphExec, HANDLE_GRAPH_EXEC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_API cuGraphDestroy(CUgraph hGraph) {
  COUNT(cuGraphDestroy);
  REQUIRE_INIT();
  return handle_destroy(hGraph, HANDLE_GRAPH) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- kernel launches -------------------------------------------------------------- */
static CUresult launch_impl(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                            CUstream s, void **kp, void **extra) {
  REQUIRE_INIT();
  if (!f || !gx || !gy || !gz || !bx || !by || !bz)
    return CUDA_ERROR_INVALID_VALUE;
  if ((uint64_t)bx * by * bz > FAKE_MAX_THREADS_PER_BLOCK || shmem > FAKE_MAX_SHARED_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  if (kp && extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (!handle_valid(f, HANDLE_FUNCTION))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  spin_ns(fake_config.launch_ns);
  uint64_t work = fake_config.kernel_ns * gx;
  struct fake_object *so = stream_object(s);
  if (so && atomic_load(&so->capturing))
    atomic_fetch_add(&so->work_ns, work); /* a node of the graph being captured */
  else
    gpu_submit_on(so, work);
  return CUDA_SUCCESS;
}

static CUresult launch_ex_impl(const CUlaunchConfig *c, CUfunction f, void **kp, void **extra) {
  REQUIRE_INIT();
  if (!c || (c->numAttrs && !c->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  return launch_impl(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                     c->blockDimZ, c->sharedMemBytes, c->hStream, kp, extra);
}

FAKE_API cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                        CUstream s, void **kp, void **extra) {
  COUNT(cuLaunchKernel);
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, extra);
}

FAKE_API cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                             CUstream s, void **kp, void **extra) {
  COUNT(cuLaunchKernel_ptsz);
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, extra);
}

FAKE_API cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz,
                                   unsigned int shmem, CUstream s, void **kp) {
  COUNT(cuLaunchCooperativeKernel);
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, NULL);
}

FAKE_API cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shmem, CUstream s, void **kp) {
  COUNT(cuLaunchCooperativeKernel_ptsz);
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, NULL);
}

FAKE_API cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kp, void **extra) {
  COUNT(cuLaunchKernelEx);
  return launch_ex_impl(config, f, kp, extra);
}

FAKE_API cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kp, void **extra) {
  COUNT(cuLaunchKernelEx_ptsz);
  return launch_ex_impl(config, f, kp, extra);
}

/* Internal twins of the launch entry points, handed out by cuGetProcAddress
 * when FAKE_CUDA_PROC_ALIASES=1 (the real driver may return addresses that
 * differ from dlsym's). Same behaviour and count; the alias counter keeps the
 * compiler from folding them into the exported functions. */
#define ALIAS_HIT() atomic_fetch_add_explicit(&fake_alias_calls, 1, memory_order_relaxed)

static CUresult CUDAAPI alias_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                             unsigned int gz, unsigned int bx, unsigned int by,
                                             unsigned int bz, unsigned int shmem, CUstream s,
                                             void **kp, void **extra) {
  COUNT(cuLaunchKernel);
  ALIAS_HIT();
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, extra);
}

static CUresult CUDAAPI alias_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                  unsigned int gz, unsigned int bx, unsigned int by,
                                                  unsigned int bz, unsigned int shmem, CUstream s,
                                                  void **kp, void **extra) {
  COUNT(cuLaunchKernel_ptsz);
  ALIAS_HIT();
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, extra);
}

static CUresult CUDAAPI alias_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx,
                                                        unsigned int gy, unsigned int gz,
                                                        unsigned int bx, unsigned int by,
                                                        unsigned int bz, unsigned int shmem,
                                                        CUstream s, void **kp) {
  COUNT(cuLaunchCooperativeKernel);
  ALIAS_HIT();
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, NULL);
}

static CUresult CUDAAPI alias_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                                             unsigned int gy, unsigned int gz,
                                                             unsigned int bx, unsigned int by,
                                                             unsigned int bz, unsigned int shmem,
                                                             CUstream s, void **kp) {
  COUNT(cuLaunchCooperativeKernel_ptsz);
  ALIAS_HIT();
  return launch_impl(f, gx, gy, gz, bx, by, bz, shmem, s, kp, NULL);
}

static CUresult CUDAAPI alias_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                               void **kp, void **extra) {
  COUNT(cuLaunchKernelEx);
  ALIAS_HIT();
  return launch_ex_impl(config, f, kp, extra);
}

static CUresult CUDAAPI alias_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                    void **kp, void **extra) {
  COUNT(cuLaunchKernelEx_ptsz);
  ALIAS_HIT();
  return launch_ex_impl(config, f, kp, extra);
}

static CUresult graph_launch_impl(CUgraphExec g, CUstream s) {
  REQUIRE_INIT();
  if (!handle_valid(g, HANDLE_GRAPH_EXEC))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  spin_ns(fake_config.launch_ns);
  gpu_submit_on(stream_object(s), atomic_load(&((struct fake_object *)g)->work_ns));
  return CUDA_SUCCESS;
}

FAKE_API cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  COUNT(cuGraphLaunch);
  return graph_launch_impl(hGraphExec, hStream);
}

FAKE_API cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  COUNT(cuGraphLaunch_ptsz);
  return graph_launch_impl(hGraphExec, hStream);
}

/* The real driver runs the function later on its own thread; the fake runs it
 * before returning, which keeps everything deterministic. */
static CUresult host_func_impl(CUstream s, CUhostFn fn, void *ud) {
  REQUIRE_INIT();
  if (!fn)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  spin_ns(fake_config.launch_ns);
  fn(ud);
  return CUDA_SUCCESS;
}

FAKE_API cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
  COUNT(cuLaunchHostFunc);
  return host_func_impl(hStream, fn, userData);
}

FAKE_API cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData) {
  COUNT(cuLaunchHostFunc_ptsz);
  return host_func_impl(hStream, fn, userData);
}

/* ---- device memory -------------------------------------------------------------------- */
enum alloc_flavour { ALLOC_64, ALLOC_32, ALLOC_MANAGED };

static CUresult dev_alloc(CUdeviceptr *out, uint64_t n, enum alloc_flavour fl) {
  REQUIRE_INIT();
  if (!out || n == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (n > fake_total_mem)
    return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t rounded = (n + FAKE_ALLOC_ALIGN - 1) / FAKE_ALLOC_ALIGN * FAKE_ALLOC_ALIGN;
  unsigned char *data = NULL;
  if (fl == ALLOC_MANAGED) {
    /* Managed memory is host-accessible: real memory, its address is the
     * device pointer. */
    void *p = NULL;
    if (posix_memalign(&p, FAKE_ALLOC_ALIGN, (size_t)rounded))
      return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, 0, (size_t)rounded);
    data = p;
  }
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&dev_lock);
  uint64_t *next = fl == ALLOC_32 ? &dev_next32 : &dev_next;
  uint64_t end = fl == ALLOC_32 ? fake_va32_end : fake_va_end;
  if (dev_used + rounded > fake_total_mem || (fl != ALLOC_MANAGED && end - *next < rounded)) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  uint64_t base = fl == ALLOC_MANAGED ? (uint64_t)(uintptr_t)data : *next;
  int backed_here = 0;
  if (fl != ALLOC_MANAGED && rounded <= fake_backed_max && dev_backed + rounded <= fake_backed_budget) {
    data = calloc(1, (size_t)rounded);
    backed_here = data != NULL;
  }
  if (region_insert(&dev_regions, (struct region){base, n, data,
                                                  fl == ALLOC_MANAGED ? REGION_MANAGED : REGION_DEVICE,
                                                  rounded})) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (backed_here)
      free(data);
    goto out;
  }
  if (backed_here)
    dev_backed += rounded;
  if (fl != ALLOC_MANAGED)
    *next += rounded;
  dev_used += rounded;
  *out = (CUdeviceptr)base;
out:
  pthread_mutex_unlock(&dev_lock);
  if (rc != CUDA_SUCCESS && fl == ALLOC_MANAGED)
    free(data);
  if (rc == CUDA_SUCCESS)
    spin_ns(fake_config.alloc_ns);
  return rc;
}

static CUresult dev_alloc32(devptr_v1 *out, unsigned int n) {
  if (!out) {
    REQUIRE_INIT();
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUdeviceptr d = 0;
  CUresult rc = dev_alloc(&d, n, ALLOC_32);
  if (rc == CUDA_SUCCESS)
    *out = (devptr_v1)d;
  return rc;
}

static CUresult dev_free(CUdeviceptr d) {
  REQUIRE_INIT();
  if (d == 0)
    return CUDA_SUCCESS; /* like free(NULL) */
  pthread_mutex_lock(&dev_lock);
  struct region *r = region_at(&dev_regions, d, 0);
  if (!r) {
    pthread_mutex_unlock(&dev_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct region gone = *r;
  region_erase(&dev_regions, r);
  dev_used -= gone.charged;
  if (gone.kind == REGION_DEVICE && gone.data)
    dev_backed -= gone.charged;
  pthread_mutex_unlock(&dev_lock);
  free(gone.data);
  spin_ns(fake_config.free_ns);
  return CUDA_SUCCESS;
}

static CUresult pitch_alloc(CUdeviceptr *dp, uint64_t *pitch, uint64_t w, uint64_t h,
                            unsigned int esz, enum alloc_flavour fl) {
  REQUIRE_INIT();
  if (!dp || !pitch || w == 0 || h == 0 || (esz != 4 && esz != 8 && esz != 16))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t p = (w + FAKE_PITCH_ALIGN - 1) / FAKE_PITCH_ALIGN * FAKE_PITCH_ALIGN;
  if (h > fake_total_mem / p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = dev_alloc(dp, p * h, fl);
  if (rc == CUDA_SUCCESS)
    *pitch = p;
  return rc;
}

FAKE_API cuMemAlloc(devptr_v1 *dptr, unsigned int bytesize) {
  COUNT(cuMemAlloc);
  return dev_alloc32(dptr, bytesize);
}

FAKE_API cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  COUNT(cuMemAlloc_v2);
  return dev_alloc(dptr, bytesize, ALLOC_64);
}

FAKE_API cuMemAllocPitch(devptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes) {
  COUNT(cuMemAllocPitch);
  CUdeviceptr d = 0;
  uint64_t p = 0;
  if (!dptr || !pPitch) {
    REQUIRE_INIT();
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult rc = pitch_alloc(&d, &p, WidthInBytes, Height, ElementSizeBytes, ALLOC_32);
  if (rc == CUDA_SUCCESS) {
    *dptr = (devptr_v1)d;
    *pPitch = (unsigned int)p;
  }
  return rc;
}

FAKE_API cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  COUNT(cuMemAllocPitch_v2);
  uint64_t p = 0;
  if (!pPitch) {
    REQUIRE_INIT();
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult rc = pitch_alloc(dptr, &p, WidthInBytes, Height, ElementSizeBytes, ALLOC_64);
  if (rc == CUDA_SUCCESS)
    *pPitch = (size_t)p;
  return rc;
}

FAKE_API cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  COUNT(cuMemAllocManaged);
  REQUIRE_INIT();
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  return dev_alloc(dptr, bytesize, ALLOC_MANAGED);
}

static CUresult alloc_async_impl(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, int check_pool,
                                 CUstream s) {
  REQUIRE_INIT();
  if (check_pool && pool != (CUmemoryPool)&fake_default_pool)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  return dev_alloc(dptr, n, ALLOC_64);
}

FAKE_API cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  COUNT(cuMemAllocAsync);
  return alloc_async_impl(dptr, bytesize, NULL, 0, hStream);
}

FAKE_API cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  COUNT(cuMemAllocAsync_ptsz);
  return alloc_async_impl(dptr, bytesize, NULL, 0, hStream);
}

FAKE_API cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  COUNT(cuMemAllocFromPoolAsync);
  return alloc_async_impl(dptr, bytesize, pool, 1, hStream);
}

FAKE_API cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  COUNT(cuMemAllocFromPoolAsync_ptsz);
  return alloc_async_impl(dptr, bytesize, pool, 1, hStream);
}

FAKE_API cuMemFree(devptr_v1 dptr) {
  COUNT(cuMemFree);
  return dev_free(dptr);
}

FAKE_API cuMemFree_v2(CUdeviceptr dptr) {
  COUNT(cuMemFree_v2);
  return dev_free(dptr);
}

static CUresult free_async_impl(CUdeviceptr d, CUstream s) {
  REQUIRE_INIT();
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  if (d == 0)
    return CUDA_ERROR_INVALID_VALUE;
  return dev_free(d);
}

FAKE_API cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  COUNT(cuMemFreeAsync);
  return free_async_impl(dptr, hStream);
}

FAKE_API cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  COUNT(cuMemFreeAsync_ptsz);
  return free_async_impl(dptr, hStream);
}

/* Virtual memory management: physical allocations by handle (no backing
 * bytes), counted in the device's used memory until released. */
#define FAKE_VMM_MAX 4096
static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t vmm_size[FAKE_VMM_MAX]; /* by handle - 1; 0: released */
static unsigned vmm_next;

FAKE_API cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
  COUNT(cuMemCreate);
  REQUIRE_INIT();
  if (!handle || !prop || !size || flags || size % (2u << 20))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&vmm_lock);
  CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (vmm_next < FAKE_VMM_MAX) { /* handles are never reused */
    vmm_size[vmm_next] = size;
    *handle = ++vmm_next;
    rc = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&vmm_lock);
  if (rc == CUDA_SUCCESS) {
    pthread_mutex_lock(&dev_lock);
    dev_used += size;
    pthread_mutex_unlock(&dev_lock);
  }
  return rc;
}

FAKE_API cuMemRelease(CUmemGenericAllocationHandle handle) {
  COUNT(cuMemRelease);
  REQUIRE_INIT();
  uint64_t size = 0;
  pthread_mutex_lock(&vmm_lock);
  if (handle >= 1 && handle <= FAKE_VMM_MAX) {
    size = vmm_size[handle - 1];
    vmm_size[handle - 1] = 0;
  }
  pthread_mutex_unlock(&vmm_lock);
  if (!size)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&dev_lock);
  dev_used -= size;
  pthread_mutex_unlock(&dev_lock);
  return CUDA_SUCCESS;
}

FAKE_API cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  COUNT(cuMemMap);
  REQUIRE_INIT();
  pthread_mutex_lock(&vmm_lock);
  int ok = handle >= 1 && handle <= FAKE_VMM_MAX && vmm_size[handle - 1] && offset + size <= vmm_size[handle - 1];
  pthread_mutex_unlock(&vmm_lock);
  return ok && ptr && !flags ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_API cuMemUnmap(CUdeviceptr ptr, size_t size) {
  COUNT(cuMemUnmap);
  REQUIRE_INIT();
  return ptr && size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_API cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  COUNT(cuMemGetInfo_v2);
  REQUIRE_INIT();
  if (!free_bytes || !total_bytes)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&dev_lock);
  *free_bytes = (size_t)(fake_total_mem - dev_used);
  pthread_mutex_unlock(&dev_lock);
  *total_bytes = (size_t)fake_total_mem;
  return CUDA_SUCCESS;
}

/* ---- host memory -------------------------------------------------------------------------- */
static CUresult host_alloc(void **pp, uint64_t n, unsigned int flags) {
  REQUIRE_INIT();
  const unsigned valid = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                         CU_MEMHOSTALLOC_WRITECOMBINED;
  if (!pp || n == 0 || (flags & ~valid))
    return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (n > fake_total_mem || (fake_config.pinned_max && n > fake_config.pinned_max) ||
      posix_memalign(&p, 4096, (size_t)n))
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&host_lock);
  int rc = region_insert(&host_regions, (struct region){(uint64_t)(uintptr_t)p, n, p, REGION_PINNED, 0});
  pthread_mutex_unlock(&host_lock);
  if (rc) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pp = p;
  spin_ns(fake_config.alloc_ns);
  return CUDA_SUCCESS;
}

FAKE_API cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  COUNT(cuMemHostAlloc);
  return host_alloc(pp, bytesize, Flags);
}

FAKE_API cuMemAllocHost(void **pp, unsigned int bytesize) {
  COUNT(cuMemAllocHost);
  return host_alloc(pp, bytesize, 0);
}

FAKE_API cuMemAllocHost_v2(void **pp, size_t bytesize) {
  COUNT(cuMemAllocHost_v2);
  return host_alloc(pp, bytesize, 0);
}

FAKE_API cuMemFreeHost(void *p) {
  COUNT(cuMemFreeHost);
  REQUIRE_INIT();
  pthread_mutex_lock(&host_lock);
  struct region *r = p ? region_at(&host_regions, (uint64_t)(uintptr_t)p, REGION_PINNED) : NULL;
  if (r)
    region_erase(&host_regions, r);
  pthread_mutex_unlock(&host_lock);
  if (!r)
    return CUDA_ERROR_INVALID_VALUE;
  free(p);
  spin_ns(fake_config.free_ns);
  return CUDA_SUCCESS;
}

static CUresult host_register(void *p, size_t n, unsigned int flags) {
  REQUIRE_INIT();
  const unsigned valid = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                         CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (!p || n == 0 || (flags & ~valid))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  uint64_t a = (uint64_t)(uintptr_t)p;
  pthread_mutex_lock(&host_lock);
  if (region_overlaps(&host_regions, a, n))
    rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  else if (region_insert(&host_regions, (struct region){a, n, p, REGION_REGISTERED, 0}))
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&host_lock);
  return rc;
}

FAKE_API cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
  COUNT(cuMemHostRegister);
  return host_register(p, bytesize, Flags);
}

FAKE_API cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
  COUNT(cuMemHostRegister_v2);
  return host_register(p, bytesize, Flags);
}

FAKE_API cuMemHostUnregister(void *p) {
  COUNT(cuMemHostUnregister);
  REQUIRE_INIT();
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&host_lock);
  struct region *r = region_at(&host_regions, (uint64_t)(uintptr_t)p, REGION_REGISTERED);
  if (r)
    region_erase(&host_regions, r);
  pthread_mutex_unlock(&host_lock);
  return r ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* ---- synchronisation, events -------------------------------------------------------------- */
static CUresult stream_sync_impl(CUstream s) {
  REQUIRE_INIT();
  CUresult rc = check_stream(s);
  if (rc == CUDA_SUCCESS) {
    gpu_wait(gpu_idle_at());
    spin_ns(fake_config.sync_ns);
  }
  return rc;
}

FAKE_API cuStreamSynchronize(CUstream hStream) {
  COUNT(cuStreamSynchronize);
  return stream_sync_impl(hStream);
}

FAKE_API cuStreamSynchronize_ptsz(CUstream hStream) {
  COUNT(cuStreamSynchronize_ptsz);
  return stream_sync_impl(hStream);
}

FAKE_API cuCtxSynchronize(void) {
  COUNT(cuCtxSynchronize);
  REQUIRE_INIT();
  gpu_wait(gpu_idle_at());
  spin_ns(fake_config.sync_ns);
  return CUDA_SUCCESS;
}

/* CUDA 13: NULL means the current context. */
FAKE_API cuCtxSynchronize_v2(CUcontext ctx) {
  COUNT(cuCtxSynchronize_v2);
  REQUIRE_INIT();
  if (ctx != NULL && ctx != (CUcontext)&fake_context)
    return CUDA_ERROR_INVALID_CONTEXT;
  gpu_wait(gpu_idle_at());
  spin_ns(fake_config.sync_ns);
  return CUDA_SUCCESS;
}

FAKE_API cuEventSynchronize(CUevent hEvent) {
  COUNT(cuEventSynchronize);
  REQUIRE_INIT();
  pthread_rwlock_rdlock(&handle_lock);
  struct fake_object *o = handle_lookup_locked(hEvent, HANDLE_EVENT);
  uint64_t at = o ? atomic_load(&o->recorded_ns) : 0;
  pthread_rwlock_unlock(&handle_lock);
  if (!o)
    return CUDA_ERROR_INVALID_HANDLE;
  gpu_wait(at);
  spin_ns(fake_config.sync_ns);
  return CUDA_SUCCESS;
}

static CUresult stream_wait_impl(CUstream s, CUevent e, unsigned int flags) {
  REQUIRE_INIT();
  if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  return handle_valid(e, HANDLE_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_API cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  COUNT(cuStreamWaitEvent);
  return stream_wait_impl(hStream, hEvent, Flags);
}

FAKE_API cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  COUNT(cuStreamWaitEvent_ptsz);
  return stream_wait_impl(hStream, hEvent, Flags);
}

static CUresult stream_query_impl(CUstream s) {
  REQUIRE_INIT();
  CUresult rc = check_stream(s);
  if (rc == CUDA_SUCCESS && now_ns() < gpu_idle_at())
    rc = CUDA_ERROR_NOT_READY;
  return rc;
}

FAKE_API cuStreamQuery(CUstream hStream) {
  COUNT(cuStreamQuery);
  return stream_query_impl(hStream);
}

FAKE_API cuStreamQuery_ptsz(CUstream hStream) {
  COUNT(cuStreamQuery_ptsz);
  return stream_query_impl(hStream);
}

static CUresult event_record_impl(CUevent e, CUstream s) {
  REQUIRE_INIT();
  CUresult rc = check_stream(s);
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fake_object *so = stream_object(s);
  int captured = so && atomic_load(&so->capturing);
  uint64_t at = captured ? 0 : gpu_submit_on(so, 0);
  pthread_rwlock_rdlock(&handle_lock);
  struct fake_object *o = handle_lookup_locked(e, HANDLE_EVENT);
  if (o && captured)
    atomic_fetch_add(&capture_event_records, 1); /* becomes a node of the graph */
  else if (o)
    atomic_store(&o->recorded_ns, at);
  pthread_rwlock_unlock(&handle_lock);
  return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_API cuEventRecord(CUevent hEvent, CUstream hStream) {
  COUNT(cuEventRecord);
  return event_record_impl(hEvent, hStream);
}

FAKE_API cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  COUNT(cuEventRecord_ptsz);
  return event_record_impl(hEvent, hStream);
}

/* ---- copies and memsets ----------------------------------------------------------------------- */
static int in_device_window(uint64_t a) {
  return (a >= fake_va_base && a < fake_va_end) || (a >= fake_va32_base && a < fake_va32_end);
}

/* One side of a copy, resolved under dev_lock: where its bytes live. */
struct endpoint {
  unsigned char *bytes; /* NULL: device range without backing, nothing to move */
};

/* want_device: 1 device only, 0 host only, -1 either (unified addressing). */
static CUresult resolve_endpoint(uint64_t a, uint64_t n, int want_device, struct endpoint *ep) {
  if (want_device != 0) {
    struct region *r = region_containing(&dev_regions, a, n);
    if (r) {
      ep->bytes = r->data ? r->data + (a - r->base) : NULL;
      return CUDA_SUCCESS;
    }
    if (want_device == 1 || in_device_window(a))
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (a == 0)
    return CUDA_ERROR_INVALID_VALUE;
  ep->bytes = (unsigned char *)(uintptr_t)a; /* host memory: the caller's to get right */
  return CUDA_SUCCESS;
}

static CUresult copy_impl(uint64_t dst, int dst_dev, uint64_t src, int src_dev, uint64_t n,
                          int async, CUstream s) {
  REQUIRE_INIT();
  if (async) {
    CUresult rc = check_stream(s);
    if (rc != CUDA_SUCCESS)
      return rc;
  }
  if (n == 0)
    return CUDA_SUCCESS;
  struct endpoint d = {0}, o = {0};
  pthread_mutex_lock(&dev_lock);
  CUresult rc = resolve_endpoint(dst, n, dst_dev, &d);
  if (rc == CUDA_SUCCESS)
    rc = resolve_endpoint(src, n, src_dev, &o);
  if (rc == CUDA_SUCCESS && d.bytes && o.bytes)
    memmove(d.bytes, o.bytes, (size_t)n);
  else if (rc == CUDA_SUCCESS && d.bytes)
    memset(d.bytes, 0, (size_t)n); /* device memory without backing reads as zeros */
  pthread_mutex_unlock(&dev_lock);
  if (rc == CUDA_SUCCESS)
    spin_ns(fake_config.copy_ns);
  return rc;
}

#define HOST_PTR(p) ((uint64_t)(uintptr_t)(p))
enum { DEV = 1, HOST = 0, ANY = -1 };

FAKE_API cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  COUNT(cuMemcpy);
  return copy_impl(dst, ANY, src, ANY, ByteCount, 0, NULL);
}
FAKE_API cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  COUNT(cuMemcpy_ptds);
  return copy_impl(dst, ANY, src, ANY, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  COUNT(cuMemcpyAsync);
  return copy_impl(dst, ANY, src, ANY, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  COUNT(cuMemcpyAsync_ptsz);
  return copy_impl(dst, ANY, src, ANY, ByteCount, 1, hStream);
}

FAKE_API cuMemcpyHtoD(devptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount) {
  COUNT(cuMemcpyHtoD);
  return copy_impl(dstDevice, DEV, HOST_PTR(srcHost), HOST, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  COUNT(cuMemcpyHtoD_v2);
  return copy_impl(dstDevice, DEV, HOST_PTR(srcHost), HOST, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  COUNT(cuMemcpyHtoD_v2_ptds);
  return copy_impl(dstDevice, DEV, HOST_PTR(srcHost), HOST, ByteCount, 0, NULL);
}

FAKE_API cuMemcpyDtoH(void *dstHost, devptr_v1 srcDevice, unsigned int ByteCount) {
  COUNT(cuMemcpyDtoH);
  return copy_impl(HOST_PTR(dstHost), HOST, srcDevice, DEV, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT(cuMemcpyDtoH_v2);
  return copy_impl(HOST_PTR(dstHost), HOST, srcDevice, DEV, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT(cuMemcpyDtoH_v2_ptds);
  return copy_impl(HOST_PTR(dstHost), HOST, srcDevice, DEV, ByteCount, 0, NULL);
}

FAKE_API cuMemcpyDtoD(devptr_v1 dstDevice, devptr_v1 srcDevice, unsigned int ByteCount) {
  COUNT(cuMemcpyDtoD);
  return copy_impl(dstDevice, DEV, srcDevice, DEV, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT(cuMemcpyDtoD_v2);
  return copy_impl(dstDevice, DEV, srcDevice, DEV, ByteCount, 0, NULL);
}
FAKE_API cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT(cuMemcpyDtoD_v2_ptds);
  return copy_impl(dstDevice, DEV, srcDevice, DEV, ByteCount, 0, NULL);
}

FAKE_API cuMemcpyHtoDAsync(devptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount,
                           CUstream hStream) {
  COUNT(cuMemcpyHtoDAsync);
  return copy_impl(dstDevice, DEV, HOST_PTR(srcHost), HOST, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream) {
  COUNT(cuMemcpyHtoDAsync_v2);
  return copy_impl(dstDevice, DEV, HOST_PTR(srcHost), HOST, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                   CUstream hStream) {
  COUNT(cuMemcpyHtoDAsync_v2_ptsz);
  return copy_impl(dstDevice, DEV, HOST_PTR(srcHost), HOST, ByteCount, 1, hStream);
}

FAKE_API cuMemcpyDtoHAsync(void *dstHost, devptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream) {
  COUNT(cuMemcpyDtoHAsync);
  return copy_impl(HOST_PTR(dstHost), HOST, srcDevice, DEV, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  COUNT(cuMemcpyDtoHAsync_v2);
  return copy_impl(HOST_PTR(dstHost), HOST, srcDevice, DEV, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  COUNT(cuMemcpyDtoHAsync_v2_ptsz);
  return copy_impl(HOST_PTR(dstHost), HOST, srcDevice, DEV, ByteCount, 1, hStream);
}

FAKE_API cuMemcpyDtoDAsync(devptr_v1 dstDevice, devptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream) {
  COUNT(cuMemcpyDtoDAsync);
  return copy_impl(dstDevice, DEV, srcDevice, DEV, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  COUNT(cuMemcpyDtoDAsync_v2);
  return copy_impl(dstDevice, DEV, srcDevice, DEV, ByteCount, 1, hStream);
}
FAKE_API cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  COUNT(cuMemcpyDtoDAsync_v2_ptsz);
  return copy_impl(dstDevice, DEV, srcDevice, DEV, ByteCount, 1, hStream);
}

/* Memsets: count elements of width el bytes. */
static CUresult memset_impl(uint64_t d, uint32_t v, uint64_t count, unsigned el, int async,
                            CUstream s) {
  REQUIRE_INIT();
  if (async) {
    CUresult rc = check_stream(s);
    if (rc != CUDA_SUCCESS)
      return rc;
  }
  if (d % el)
    return CUDA_ERROR_INVALID_VALUE;
  if (count == 0)
    return CUDA_SUCCESS;
  if (count > fake_total_mem / el)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t n = count * el;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&dev_lock);
  struct region *r = region_containing(&dev_regions, d, n);
  if (!r) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else if (r->data) {
    unsigned char *p = r->data + (d - r->base);
    for (uint64_t i = 0; i < count; i++) {
      if (el == 1) {
        p[i] = (unsigned char)v;
      } else if (el == 2) {
        uint16_t x = (uint16_t)v;
        memcpy(p + 2 * i, &x, 2);
      } else {
        memcpy(p + 4 * i, &v, 4);
      }
    }
  }
  pthread_mutex_unlock(&dev_lock);
  return rc;
}

#define FAKE_MEMSET_FUNCS(W, T)                                                                 \
  FAKE_API cuMemsetD##W(devptr_v1 dstDevice, T value, unsigned int N) {                         \
    COUNT(cuMemsetD##W);                                                                        \
    return memset_impl(dstDevice, value, N, W / 8, 0, NULL);                                    \
  }                                                                                             \
  FAKE_API cuMemsetD##W##_v2(CUdeviceptr dstDevice, T value, size_t N) {                        \
    COUNT(cuMemsetD##W##_v2);                                                                   \
    return memset_impl(dstDevice, value, N, W / 8, 0, NULL);                                    \
  }                                                                                             \
  FAKE_API cuMemsetD##W##_v2_ptds(CUdeviceptr dstDevice, T value, size_t N) {                   \
    COUNT(cuMemsetD##W##_v2_ptds);                                                              \
    return memset_impl(dstDevice, value, N, W / 8, 0, NULL);                                    \
  }                                                                                             \
  FAKE_API cuMemsetD##W##Async(CUdeviceptr dstDevice, T value, size_t N, CUstream hStream) {    \
    COUNT(cuMemsetD##W##Async);                                                                 \
    return memset_impl(dstDevice, value, N, W / 8, 1, hStream);                                 \
  }                                                                                             \
  FAKE_API cuMemsetD##W##Async_ptsz(CUdeviceptr dstDevice, T value, size_t N, CUstream hStream) { \
    COUNT(cuMemsetD##W##Async_ptsz);                                                            \
    return memset_impl(dstDevice, value, N, W / 8, 1, hStream);                                 \
  }

FAKE_MEMSET_FUNCS(8, unsigned char)
FAKE_MEMSET_FUNCS(16, unsigned short)
FAKE_MEMSET_FUNCS(32, unsigned int)

/* ---- cuGetProcAddress ----------------------------------------------------------------------- */
struct proc_entry {
  const char *base;
  int version;
  int per_thread;
  int id;
  void *fn;
};

FAKE_API cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

static const struct proc_entry proc_table[] = {
#define FAKE_PROC(sym, base, ver, pt) {#base, ver, pt, FK_##sym, (void *)sym},
  FAKE_SYMBOLS(FAKE_PROC)
#undef FAKE_PROC
};

static void *proc_alias(int id) {
  switch (id) {
  case FK_cuLaunchKernel: return (void *)alias_cuLaunchKernel;
  case FK_cuLaunchKernel_ptsz: return (void *)alias_cuLaunchKernel_ptsz;
  case FK_cuLaunchCooperativeKernel: return (void *)alias_cuLaunchCooperativeKernel;
  case FK_cuLaunchCooperativeKernel_ptsz: return (void *)alias_cuLaunchCooperativeKernel_ptsz;
  case FK_cuLaunchKernelEx: return (void *)alias_cuLaunchKernelEx;
  case FK_cuLaunchKernelEx_ptsz: return (void *)alias_cuLaunchKernelEx_ptsz;
  default: return NULL;
  }
}

/* The real rules: candidates share the base name; CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * prefers a per-thread variant (falling back to the plain ones when the base has
 * none old enough); the newest variant not newer than cudaVersion wins. */
static CUresult proc_lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status) {
  if (pfn)
    *pfn = NULL;
  if (!symbol || !pfn ||
      (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
    return CUDA_ERROR_INVALID_VALUE;
  int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const struct proc_entry *best[2] = {NULL, NULL}; /* [per_thread] */
  int known = 0;
  for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++) {
    const struct proc_entry *e = &proc_table[i];
    if (strcmp(e->base, symbol) != 0)
      continue;
    known = 1;
    if (e->version <= cudaVersion && (!best[e->per_thread] || e->version > best[e->per_thread]->version))
      best[e->per_thread] = e;
  }
  const struct proc_entry *hit = want_pt && best[1] ? best[1] : best[0];
  if (!hit) {
    if (status)
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  void *fn = hit->fn;
  if (fake_config.proc_aliases && proc_alias(hit->id))
    fn = proc_alias(hit->id);
  *pfn = fn;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

/* The CUDA 11.3 ABI (no status). */
FAKE_API cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  COUNT(cuGetProcAddress);
  return proc_lookup(symbol, pfn, cudaVersion, flags, NULL);
}

FAKE_API cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
  COUNT(cuGetProcAddress_v2);
  return proc_lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* ---- signatures: each export must match the driver's typedef ---------------------------------- */
#define SAME_TYPE(sym, pfn) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&sym), pfn), #sym " has the wrong signature");
SAME_TYPE(cuGetProcAddress, PFN_cuGetProcAddress_v11030)
SAME_TYPE(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000)
SAME_TYPE(cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz)
SAME_TYPE(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz)
SAME_TYPE(cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz)
SAME_TYPE(cuGraphLaunch_ptsz, PFN_cuGraphLaunch_v10000_ptsz)
SAME_TYPE(cuLaunchHostFunc_ptsz, PFN_cuLaunchHostFunc_v10000_ptsz)
SAME_TYPE(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz)
SAME_TYPE(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz)
SAME_TYPE(cuMemFreeAsync_ptsz, PFN_cuMemFreeAsync_v11020_ptsz)
SAME_TYPE(cuMemHostRegister, PFN_cuMemHostRegister_v6050) /* same as the 4000 ABI */
SAME_TYPE(cuStreamSynchronize_ptsz, PFN_cuStreamSynchronize_v7000_ptsz)
SAME_TYPE(cuCtxSynchronize_v2, PFN_cuCtxSynchronize_v13000)
SAME_TYPE(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000)
SAME_TYPE(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000)
SAME_TYPE(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000)
SAME_TYPE(cuStreamBeginCapture_v2, PFN_cuStreamBeginCapture_v10010)
SAME_TYPE(cuStreamEndCapture, PFN_cuStreamEndCapture_v10000)
SAME_TYPE(cuStreamWaitEvent_ptsz, PFN_cuStreamWaitEvent_v7000_ptsz)
SAME_TYPE(cuStreamQuery_ptsz, PFN_cuStreamQuery_v7000_ptsz)
SAME_TYPE(cuEventRecord_ptsz, PFN_cuEventRecord_v7000_ptsz)
SAME_TYPE(cuEventElapsedTime, PFN_cuEventElapsedTime_v2000)
SAME_TYPE(cuMemcpy_ptds, PFN_cuMemcpy_v7000_ptds)
SAME_TYPE(cuMemcpyAsync_ptsz, PFN_cuMemcpyAsync_v7000_ptsz)
SAME_TYPE(cuMemcpyHtoD_v2_ptds, PFN_cuMemcpyHtoD_v7000_ptds)
SAME_TYPE(cuMemcpyDtoH_v2_ptds, PFN_cuMemcpyDtoH_v7000_ptds)
SAME_TYPE(cuMemcpyDtoD_v2_ptds, PFN_cuMemcpyDtoD_v7000_ptds)
SAME_TYPE(cuMemcpyHtoDAsync_v2_ptsz, PFN_cuMemcpyHtoDAsync_v7000_ptsz)
SAME_TYPE(cuMemcpyDtoHAsync_v2_ptsz, PFN_cuMemcpyDtoHAsync_v7000_ptsz)
SAME_TYPE(cuMemcpyDtoDAsync_v2_ptsz, PFN_cuMemcpyDtoDAsync_v7000_ptsz)
SAME_TYPE(cuMemsetD8_v2_ptds, PFN_cuMemsetD8_v7000_ptds)
SAME_TYPE(cuMemsetD16_v2_ptds, PFN_cuMemsetD16_v7000_ptds)
SAME_TYPE(cuMemsetD32_v2_ptds, PFN_cuMemsetD32_v7000_ptds)
SAME_TYPE(cuMemsetD8Async_ptsz, PFN_cuMemsetD8Async_v7000_ptsz)
SAME_TYPE(cuMemsetD16Async_ptsz, PFN_cuMemsetD16Async_v7000_ptsz)
SAME_TYPE(cuMemsetD32Async_ptsz, PFN_cuMemsetD32Async_v7000_ptsz)
SAME_TYPE(alias_cuLaunchKernel, PFN_cuLaunchKernel_v4000)
SAME_TYPE(alias_cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz)
SAME_TYPE(alias_cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000)
SAME_TYPE(alias_cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz)
SAME_TYPE(alias_cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060)
SAME_TYPE(alias_cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz)

/* ---- start-up and exit ------------------------------------------------------------------------ */
static uint64_t env_ns(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s)
    return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') {
    fprintf(stderr, "fake libcuda: ignoring %s=%s (want a number of ns)\n", name, s);
    return 0;
  }
  return v;
}

/* A forked child has only the forking thread: a lock another thread held at
 * the fork would never be released there. Start the child with free locks. */
static void fake_after_fork_child(void) {
  pthread_mutex_init(&dev_lock, NULL);
  pthread_mutex_init(&host_lock, NULL);
  pthread_rwlock_init(&handle_lock, NULL);
  pthread_mutex_init(&gpu_lock, NULL);
  pthread_mutex_init(&vmm_lock, NULL);
}

__attribute__((constructor)) static void fake_cuda_start(void) {
  pthread_atfork(NULL, NULL, fake_after_fork_child);
  fake_config.launch_ns = env_ns("FAKE_CUDA_LAUNCH_NS");
  fake_config.sync_ns = env_ns("FAKE_CUDA_SYNC_NS");
  fake_config.alloc_ns = env_ns("FAKE_CUDA_ALLOC_NS");
  fake_config.module_load_ns = env_ns("FAKE_CUDA_MODULE_LOAD_NS");
  fake_config.free_ns = env_ns("FAKE_CUDA_FREE_NS");
  fake_config.copy_ns = env_ns("FAKE_CUDA_COPY_NS");
  fake_config.kernel_ns = env_ns("FAKE_CUDA_KERNEL_NS");
  fake_config.query_ns = env_ns("FAKE_CUDA_QUERY_NS");
  const char *stats = getenv("FAKE_CUDA_STATS");
  if (stats && strlen(stats) < sizeof fake_config.stats_path)
    snprintf(fake_config.stats_path, sizeof fake_config.stats_path, "%s", stats);
  fake_config.pinned_max = env_ns("FAKE_CUDA_PINNED_MAX");
  const char *aliases = getenv("FAKE_CUDA_PROC_ALIASES");
  fake_config.proc_aliases = aliases && strcmp(aliases, "1") == 0;
  const char *path = getenv("FAKE_CUDA_COUNTS");
  if (path && strlen(path) < sizeof fake_config.counts_path)
    snprintf(fake_config.counts_path, sizeof fake_config.counts_path, "%s", path);
  else if (path)
    fprintf(stderr, "fake libcuda: FAKE_CUDA_COUNTS path too long, not writing counts\n");
}

/* FAKE_CUDA_COUNTS with %p replaced by the pid (%% is a literal %). */
static int counts_path(char *out, size_t cap) {
  const char *in = fake_config.counts_path;
  size_t n = 0;
  for (; *in; in++) {
    int w;
    if (in[0] == '%' && in[1] == 'p') {
      w = snprintf(out + n, cap - n, "%ld", (long)getpid());
      in++;
    } else if (in[0] == '%' && in[1] == '%') {
      w = snprintf(out + n, cap - n, "%%");
      in++;
    } else {
      w = snprintf(out + n, cap - n, "%c", *in);
    }
    if (w < 0 || (size_t)w >= cap - n)
      return -1;
    n += (size_t)w;
  }
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(fake_symbol_names[*(const int *)a], fake_symbol_names[*(const int *)b]);
}

static void write_stats(void) {
  FILE *f = fopen(fake_config.stats_path, "w");
  if (!f) {
    fprintf(stderr, "fake libcuda: cannot write %s: %s\n", fake_config.stats_path, strerror(errno));
    return;
  }
  fprintf(f, "{\"capture_event_records\": %llu, \"kernels\": %llu, \"gpu_busy_ns\": %llu}\n",
          (unsigned long long)atomic_load(&capture_event_records),
          (unsigned long long)atomic_load(&gpu_kernels), (unsigned long long)atomic_load(&gpu_busy_ns));
  fclose(f);
}

__attribute__((destructor)) static void fake_cuda_stop(void) {
  if (fake_config.stats_path[0])
    write_stats();
  if (!fake_config.counts_path[0])
    return;
  char path[4200], tmp[4300];
  if (counts_path(path, sizeof path) != 0) {
    fprintf(stderr, "fake libcuda: bad FAKE_CUDA_COUNTS path\n");
    return;
  }
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int order[FK_COUNT];
  for (int i = 0; i < FK_COUNT; i++)
    order[i] = i;
  qsort(order, FK_COUNT, sizeof order[0], by_name);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "fake libcuda: cannot write %s: %s\n", tmp, strerror(errno));
    return;
  }
  fputc('{', f);
  const char *sep = "";
  for (int i = 0; i < FK_COUNT; i++) {
    uint64_t c = atomic_load(&fake_counts[order[i]]);
    if (!c)
      continue;
    fprintf(f, "%s\n  \"%s\": %llu", sep, fake_symbol_names[order[i]], (unsigned long long)c);
    sep = ",";
  }
  fputs("\n}\n", f);
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "fake libcuda: cannot write %s: %s\n", path, strerror(errno));
    unlink(tmp);
  }
}
