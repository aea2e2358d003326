/*
 * client_runtime: reaches the driver exactly the way the CUDA runtime does
 * (docs/facts.md): dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2"),
 * cuGetProcAddress("cuGetProcAddress", 11030 | 12000) for the 4- and 5-argument
 * lookups, then everything else by base name + cudaVersion + flags.
 *
 *   client_runtime [threads=4] [iterations=1000] [--strict-pointers]
 *
 * Two API tables are resolved, one through each lookup function; even threads
 * call through the first, odd threads through the second. Every thread does
 * the same `iterations` rounds, so the counts in EXPECT are exact.
 *
 * --strict-pointers also checks the resolved addresses: equal to dlsym() of
 * the exact variant (or, with FAKE_CUDA_PROC_ALIASES=1, different for the
 * kernel launches), and equal between the two lookup functions. Only
 * meaningful without an interposer in between.
 */
#include "client_common.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

typedef CUresult (*gpa4_fn)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
typedef PFN_cuGetProcAddress_v12000 gpa5_fn;

struct api {
  /* set-up and tear-down */
  PFN_cuInit_v2000 init;
  PFN_cuDriverGetVersion_v2020 driverGetVersion;
  PFN_cuDeviceGet_v2000 deviceGet;
  PFN_cuCtxGetCurrent_v4000 ctxGetCurrent;
  PFN_cuModuleLoadData_v2000 moduleLoadData;
  PFN_cuModuleGetFunction_v2000 moduleGetFunction;
  PFN_cuModuleUnload_v2000 moduleUnload;
  PFN_cuStreamCreate_v2000 streamCreate;
  PFN_cuStreamDestroy_v4000 streamDestroy;
  PFN_cuEventCreate_v2000 eventCreate;
  PFN_cuEventDestroy_v4000 eventDestroy;
  PFN_cuGraphCreate_v10000 graphCreate;
  PFN_cuGraphInstantiateWithFlags_v11040 graphInstantiate;
  PFN_cuGraphExecDestroy_v10000 graphExecDestroy;
  PFN_cuGraphDestroy_v10000 graphDestroy;
  /* the work */
  PFN_cuMemAlloc_v3020 memAlloc;
  PFN_cuMemFree_v3020 memFree;
  PFN_cuLaunchKernel_v4000 launchKernel;
  PFN_cuLaunchKernel_v7000_ptsz launchKernel_ptsz;
  PFN_cuLaunchKernelEx_v11060 launchKernelEx;
  PFN_cuLaunchKernelEx_v11060_ptsz launchKernelEx_ptsz;
  PFN_cuMemcpyHtoDAsync_v3020 memcpyHtoDAsync;
  PFN_cuMemcpyHtoDAsync_v7000_ptsz memcpyHtoDAsync_ptsz;
  PFN_cuMemcpyDtoH_v3020 memcpyDtoH;
  PFN_cuStreamSynchronize_v2000 streamSynchronize;
  PFN_cuStreamSynchronize_v7000_ptsz streamSynchronize_ptsz;
  PFN_cuCtxSynchronize_v2000 ctxSynchronize;
  PFN_cuCtxSynchronize_v13000 ctxSynchronize_v2;
  PFN_cuGraphLaunch_v10000 graphLaunch;
  PFN_cuLaunchHostFunc_v10000 launchHostFunc;
  PFN_cuMemAllocAsync_v11020 memAllocAsync;
  PFN_cuMemFreeAsync_v11020 memFreeAsync;
  PFN_cuMemHostAlloc_v2020 memHostAlloc;
  PFN_cuMemFreeHost_v2000 memFreeHost;
  PFN_cuEventRecord_v2000 eventRecord;
  PFN_cuStreamWaitEvent_v3020 streamWaitEvent;
  PFN_cuMemsetD32Async_v3020 memsetD32Async;
  /* per-thread flag on a base whose per-thread variant is newer than asked */
  PFN_cuMemcpyHtoDAsync_v3020 memcpyHtoDAsync_pt3020;
};

/* What to look up, and which exported variant the driver must answer with. */
struct lookup {
  const char *base;
  int version;
  cuuint64_t flags;
  const char *variant;
  size_t offset; /* of the slot in struct api */
  int launch;    /* aliased by FAKE_CUDA_PROC_ALIASES=1 */
};

#define L(base, ver, fl, variant, field, launch) \
  {base, ver, fl, variant, offsetof(struct api, field), launch}
static const struct lookup lookups[] = {
  L("cuInit", 2000, 0, "cuInit", init, 0),
  L("cuDriverGetVersion", 2020, 0, "cuDriverGetVersion", driverGetVersion, 0),
  L("cuDeviceGet", 2000, 0, "cuDeviceGet", deviceGet, 0),
  L("cuCtxGetCurrent", 4000, 0, "cuCtxGetCurrent", ctxGetCurrent, 0),
  L("cuModuleLoadData", 2000, 0, "cuModuleLoadData", moduleLoadData, 0),
  L("cuModuleGetFunction", 2000, 0, "cuModuleGetFunction", moduleGetFunction, 0),
  L("cuModuleUnload", 2000, 0, "cuModuleUnload", moduleUnload, 0),
  L("cuStreamCreate", 2000, 0, "cuStreamCreate", streamCreate, 0),
  L("cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2", streamDestroy, 0),
  L("cuEventCreate", 2000, 0, "cuEventCreate", eventCreate, 0),
  L("cuEventDestroy", 4000, 0, "cuEventDestroy_v2", eventDestroy, 0),
  L("cuGraphCreate", 10000, 0, "cuGraphCreate", graphCreate, 0),
  L("cuGraphInstantiateWithFlags", 11040, 0, "cuGraphInstantiateWithFlags", graphInstantiate, 0),
  L("cuGraphExecDestroy", 10000, 0, "cuGraphExecDestroy", graphExecDestroy, 0),
  L("cuGraphDestroy", 10000, 0, "cuGraphDestroy", graphDestroy, 0),
  L("cuMemAlloc", 3020, 0, "cuMemAlloc_v2", memAlloc, 0),
  L("cuMemFree", 3020, 0, "cuMemFree_v2", memFree, 0),
  L("cuLaunchKernel", 4000, 0, "cuLaunchKernel", launchKernel, 1),
  L("cuLaunchKernel", 7000, PT, "cuLaunchKernel_ptsz", launchKernel_ptsz, 1),
  L("cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx", launchKernelEx, 1),
  L("cuLaunchKernelEx", 11060, PT, "cuLaunchKernelEx_ptsz", launchKernelEx_ptsz, 1),
  L("cuMemcpyHtoDAsync", 3020, 0, "cuMemcpyHtoDAsync_v2", memcpyHtoDAsync, 0),
  L("cuMemcpyHtoDAsync", 7000, PT, "cuMemcpyHtoDAsync_v2_ptsz", memcpyHtoDAsync_ptsz, 0),
  L("cuMemcpyDtoH", 3020, 0, "cuMemcpyDtoH_v2", memcpyDtoH, 0),
  L("cuStreamSynchronize", 2000, 0, "cuStreamSynchronize", streamSynchronize, 0),
  L("cuStreamSynchronize", 7000, PT, "cuStreamSynchronize_ptsz", streamSynchronize_ptsz, 0),
  L("cuCtxSynchronize", 2000, 0, "cuCtxSynchronize", ctxSynchronize, 0),
  /* no per-thread cuCtxSynchronize: the flag falls back to the plain variant */
  L("cuCtxSynchronize", 13000, PT, "cuCtxSynchronize_v2", ctxSynchronize_v2, 0),
  L("cuGraphLaunch", 10000, 0, "cuGraphLaunch", graphLaunch, 0),
  L("cuLaunchHostFunc", 10000, 0, "cuLaunchHostFunc", launchHostFunc, 0),
  L("cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", memAllocAsync, 0),
  L("cuMemFreeAsync", 11020, 0, "cuMemFreeAsync", memFreeAsync, 0),
  L("cuMemHostAlloc", 2020, 0, "cuMemHostAlloc", memHostAlloc, 0),
  L("cuMemFreeHost", 2000, 0, "cuMemFreeHost", memFreeHost, 0),
  L("cuEventRecord", 2000, 0, "cuEventRecord", eventRecord, 0),
  L("cuStreamWaitEvent", 3020, 0, "cuStreamWaitEvent", streamWaitEvent, 0),
  L("cuMemsetD32Async", 3020, 0, "cuMemsetD32Async", memsetD32Async, 0),
  L("cuMemcpyHtoDAsync", 3020, PT, "cuMemcpyHtoDAsync_v2", memcpyHtoDAsync_pt3020, 0),
};
#undef L

enum { BYTES = 4096, ASYNC_BYTES = 512, SEED_WORDS = 4 };
static const CUdeviceptr SENTINEL = 0xdeadbeefdeadbeefull;

static struct api apis[2]; /* [0] through the 5-argument lookup, [1] the 4-argument one */
static CUfunction kernel;
static CUgraphExec graph_exec;
static CUcontext context;
static long iterations;
static atomic_long host_fn_runs;

struct worker {
  pthread_t thread;
  int index;
  CUstream stream;
  CUevent event;
};

static void CUDA_CB count_host_fn(void *arg) {
  atomic_fetch_add((atomic_long *)arg, 1);
}

static void *work(void *arg) {
  struct worker *w = arg;
  const struct api *a = &apis[w->index % 2];
  unsigned char in[BYTES], out[BYTES];
  CUdeviceptr d = 0;
  void *params[] = {&d};
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = 8, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 256, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.hStream = w->stream;

  for (long i = 0; i < iterations; i++) {
    unsigned seed = (unsigned)(w->index * 100003 + i);
    /* cuMemAlloc at 3020 must be the 64-bit ABI: all 8 bytes written. */
    d = SENTINEL;
    CALL("cuMemAlloc_v2", a->memAlloc(&d, BYTES));
    CHECK((d >> 32) != (SENTINEL >> 32) && d != 0 && d % 256 == 0, "cuMemAlloc@3020 gave %llx",
          (unsigned long long)d);
    fill_pattern(in, BYTES, seed);
    CALL("cuMemcpyHtoDAsync_v2", a->memcpyHtoDAsync(d, in, BYTES / 2, w->stream));
    CALL("cuMemcpyHtoDAsync_v2_ptsz",
         a->memcpyHtoDAsync_ptsz(d + BYTES / 2, in + BYTES / 2, BYTES / 2, CU_STREAM_PER_THREAD));
    CALL("cuMemsetD32Async", a->memsetD32Async(d, seed, SEED_WORDS, w->stream));

    CALL("cuLaunchKernel", a->launchKernel(kernel, 8, 1, 1, 256, 1, 1, 0, w->stream, params, NULL));
    CALL("cuLaunchKernel_ptsz",
         a->launchKernel_ptsz(kernel, 8, 1, 1, 256, 1, 1, 0, CU_STREAM_PER_THREAD, params, NULL));
    CALL("cuLaunchKernelEx", a->launchKernelEx(&cfg, kernel, params, NULL));
    CALL("cuLaunchKernelEx_ptsz", a->launchKernelEx_ptsz(&cfg, kernel, params, NULL));
    CALL("cuEventRecord", a->eventRecord(w->event, w->stream));
    CALL("cuStreamWaitEvent", a->streamWaitEvent(NULL, w->event, 0));
    CALL("cuLaunchHostFunc", a->launchHostFunc(w->stream, count_host_fn, &host_fn_runs));
    CALL("cuGraphLaunch", a->graphLaunch(graph_exec, w->stream));

    CUdeviceptr ad = 0;
    CALL("cuMemAllocAsync", a->memAllocAsync(&ad, ASYNC_BYTES, w->stream));
    CHECK(ad && ad != d, "cuMemAllocAsync gave %llx", (unsigned long long)ad);
    CALL("cuMemFreeAsync", a->memFreeAsync(ad, w->stream));
    void *pinned = NULL;
    CALL("cuMemHostAlloc", a->memHostAlloc(&pinned, 256, CU_MEMHOSTALLOC_PORTABLE));
    memset(pinned, (int)(seed & 0xff), 256);
    CALL("cuMemFreeHost", a->memFreeHost(pinned));

    CALL("cuStreamSynchronize", a->streamSynchronize(w->stream));
    CALL("cuStreamSynchronize_ptsz", a->streamSynchronize_ptsz(CU_STREAM_PER_THREAD));
    memset(out, 0, sizeof out);
    CALL("cuMemcpyDtoH_v2", a->memcpyDtoH(out, d, BYTES));
    for (int k = 0; k < SEED_WORDS; k++) {
      uint32_t word;
      memcpy(&word, out + 4 * k, 4);
      CHECK(word == seed, "thread %d: memset word %d is %u, expected %u", w->index, k, word, seed);
    }
    CHECK(memcmp(out + 4 * SEED_WORDS, in + 4 * SEED_WORDS, BYTES - 4 * SEED_WORDS) == 0,
          "thread %d iteration %ld: data lost in the round trip", w->index, i);
    CALL("cuCtxSynchronize", a->ctxSynchronize());
    CALL("cuCtxSynchronize_v2", a->ctxSynchronize_v2(context));
    CALL("cuMemFree_v2", a->memFree(d));
  }
  return NULL;
}

int main(int argc, char **argv) {
  int strict = 0, npos = 0;
  char *pos[2] = {NULL, NULL};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--strict-pointers") == 0)
      strict = 1;
    else if (npos < 2)
      pos[npos++] = argv[i];
    else
      client_fail("usage: client_runtime [threads] [iterations] [--strict-pointers]");
  }
  char *args[3] = {argv[0], pos[0], pos[1]};
  long threads = arg_count(npos + 1, args, 1, 4);
  iterations = arg_count(npos + 1, args, 2, 1000);
  const char *alias_env = getenv("FAKE_CUDA_PROC_ALIASES");
  int aliases = alias_env && strcmp(alias_env, "1") == 0;

  /* 1. The driver library, and cuGetProcAddress looked up on its handle. */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  CHECK(lib, "dlopen libcuda.so.1: %s", dlerror());
  gpa5_fn gpa5_dl = (gpa5_fn)dlsym(lib, "cuGetProcAddress_v2");
  gpa4_fn gpa4_dl = (gpa4_fn)dlsym(lib, "cuGetProcAddress");
  CHECK(gpa5_dl && gpa4_dl, "dlsym cuGetProcAddress{,_v2} failed");
  dlerror();
  CHECK(dlsym(lib, "cuEventRecordWithFlags") == NULL && dlerror() != NULL,
        "the driver must not export cuEventRecordWithFlags");

  /* 2. cuGetProcAddress itself, at both ABIs. */
  CUdriverProcAddressQueryResult st = -1;
  void *p = NULL;
  gpa4_fn gpa4 = NULL;
  gpa5_fn gpa5 = NULL;
  CALL("cuGetProcAddress_v2", gpa5_dl("cuGetProcAddress", &p, 11030, 0, &st));
  CHECK(p && st == CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress@11030: %p status %d", p, (int)st);
  gpa4 = (gpa4_fn)p;
  st = -1;
  CALL("cuGetProcAddress_v2", gpa5_dl("cuGetProcAddress", &p, 12000, 0, &st));
  CHECK(p && st == CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress@12000: %p status %d", p, (int)st);
  gpa5 = (gpa5_fn)p;
  void *q = NULL;
  CALL("cuGetProcAddress", gpa4_dl("cuGetProcAddress", &q, 12000, 0));
  CHECK(q != NULL, "cuGetProcAddress@12000 through the 4-argument form gave NULL");
  st = -1;
  p = (void *)&st;
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_NOT_FOUND, gpa5_dl("cuGetProcAddress", &p, 11020, 0, &st));
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
        "cuGetProcAddress@11020: %p status %d", p, (int)st);
  if (strict) {
    CHECK((void *)gpa4 == (void *)gpa4_dl, "cuGetProcAddress@11030 is not the exported cuGetProcAddress");
    CHECK((void *)gpa5 == (void *)gpa5_dl && q == (void *)gpa5_dl,
          "cuGetProcAddress@12000 is not the exported cuGetProcAddress_v2");
  }

  /* 3. Everything else by base name + version + flags, through both forms. */
  for (size_t i = 0; i < sizeof lookups / sizeof lookups[0]; i++) {
    const struct lookup *l = &lookups[i];
    void *via5 = NULL, *via4 = NULL;
    st = -1;
    CALL("cuGetProcAddress_v2", gpa5(l->base, &via5, l->version, l->flags, &st));
    CHECK(via5 && st == CU_GET_PROC_ADDRESS_SUCCESS, "%s@%d: %p status %d", l->base, l->version, via5,
          (int)st);
    CALL("cuGetProcAddress", gpa4(l->base, &via4, l->version, l->flags));
    CHECK(via4 != NULL, "%s@%d through the 4-argument form gave NULL", l->base, l->version);
    memcpy((char *)&apis[0] + l->offset, &via5, sizeof via5);
    memcpy((char *)&apis[1] + l->offset, &via4, sizeof via4);
    if (strict) {
      void *exact = dlsym(lib, l->variant);
      CHECK(exact != NULL, "dlsym %s failed", l->variant);
      CHECK(via4 == via5, "%s@%d flags %llu: the two lookup forms disagree", l->base, l->version,
            (unsigned long long)l->flags);
      if (aliases && l->launch)
        CHECK(via5 != exact, "%s@%d: expected an internal alias, got the export", l->base, l->version);
      else
        CHECK(via5 == exact, "%s@%d flags %llu did not resolve to %s", l->base, l->version,
              (unsigned long long)l->flags, l->variant);
    }
  }

  /* 4. What the driver lacks stays missing. */
  p = (void *)&st;
  st = -1;
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_NOT_FOUND, gpa5("cuEventRecordWithFlags", &p, 11010, 0, &st));
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "cuEventRecordWithFlags: %p status %d", p,
        (int)st);
  p = (void *)&st;
  st = -1;
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_NOT_FOUND, gpa5("cuEventRecordWithFlags", &p, 13000, PT, &st));
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "cuEventRecordWithFlags (per-thread): %p status %d",
        p, (int)st);
  p = (void *)&st;
  CALL_RC("cuGetProcAddress", CUDA_ERROR_NOT_FOUND, gpa4("cuEventRecordWithFlags", &p, 13000, 0));
  CHECK(p == NULL, "cuEventRecordWithFlags through the 4-argument form: %p", p);
  p = (void *)&st;
  st = -1;
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_NOT_FOUND, gpa5("cuLaunchKernelEx", &p, 11000, 0, &st));
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "cuLaunchKernelEx@11000: %p status %d", p,
        (int)st);
  p = (void *)&st;
  st = -1;
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_NOT_FOUND, gpa5("cuLaunchKernelEx", &p, 11000, PT, &st));
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "cuLaunchKernelEx@11000 (per-thread): %p status %d",
        p, (int)st);
  p = (void *)&st;
  st = -1;
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_NOT_FOUND, gpa5("cuNoSuchFunction", &p, 13000, 0, &st));
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "cuNoSuchFunction: %p status %d", p, (int)st);
  p = (void *)&st;
  CALL_RC("cuGetProcAddress", CUDA_ERROR_NOT_FOUND, gpa4("cuNoSuchFunction", &p, 13000, 0));
  CHECK(p == NULL, "cuNoSuchFunction through the 4-argument form: %p", p);
  CALL_RC("cuGetProcAddress_v2", CUDA_ERROR_INVALID_VALUE, gpa5("cuInit", &p, 2000, 4, &st));

  /* 5. Set-up, through the resolved pointers. Work before cuInit is refused. */
  const struct api *a = &apis[0];
  CUdeviceptr early = 0;
  CALL_RC("cuMemAlloc_v2", CUDA_ERROR_NOT_INITIALIZED, a->memAlloc(&early, 16));
  CALL("cuInit", a->init(0));
  int version = 0;
  CUdevice dev = -1;
  CALL("cuDriverGetVersion", a->driverGetVersion(&version));
  CHECK(version == 13000, "driver version %d", version);
  CALL("cuDeviceGet", a->deviceGet(&dev, 0));
  CALL("cuCtxGetCurrent", a->ctxGetCurrent(&context));
  CHECK(context != NULL, "no current context");
  CUmodule mod = NULL;
  CALL("cuModuleLoadData", a->moduleLoadData(&mod, "fake cubin"));
  CALL("cuModuleGetFunction", a->moduleGetFunction(&kernel, mod, "kernel"));
  CUgraph graph = NULL;
  CALL("cuGraphCreate", a->graphCreate(&graph, 0));
  CALL("cuGraphInstantiateWithFlags", a->graphInstantiate(&graph_exec, graph, 0));
  /* Invalid calls come back with the driver's code. */
  CALL_RC("cuMemAlloc_v2", CUDA_ERROR_INVALID_VALUE, a->memAlloc(NULL, 16));
  CALL_RC("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, a->launchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  CALL_RC("cuCtxSynchronize_v2", CUDA_ERROR_INVALID_CONTEXT, a->ctxSynchronize_v2((CUcontext)&version));
  /* The per-thread lookup of cuMemcpyHtoDAsync at 3020 got the plain _v2. */
  CUdeviceptr small = 0;
  unsigned char bytes[64] = {0};
  CALL("cuMemAlloc_v2", a->memAlloc(&small, sizeof bytes));
  CALL("cuMemcpyHtoDAsync_v2", a->memcpyHtoDAsync_pt3020(small, bytes, sizeof bytes, NULL));
  CALL("cuMemFree_v2", a->memFree(small));

  /* 6. The work, from several threads. */
  struct worker *workers = calloc((size_t)threads, sizeof *workers);
  CHECK(workers, "out of memory");
  for (long t = 0; t < threads; t++) {
    workers[t].index = (int)t;
    CALL("cuStreamCreate", apis[t % 2].streamCreate(&workers[t].stream, 0));
    CALL("cuEventCreate", apis[t % 2].eventCreate(&workers[t].event, CU_EVENT_DEFAULT));
  }
  for (long t = 0; t < threads; t++)
    CHECK(pthread_create(&workers[t].thread, NULL, work, &workers[t]) == 0, "pthread_create failed");
  for (long t = 0; t < threads; t++)
    pthread_join(workers[t].thread, NULL);
  CHECK(atomic_load(&host_fn_runs) == threads * iterations, "host functions ran %ld times, expected %ld",
        atomic_load(&host_fn_runs), threads * iterations);

  for (long t = 0; t < threads; t++) {
    CALL("cuEventDestroy_v2", apis[t % 2].eventDestroy(workers[t].event));
    CALL("cuStreamDestroy_v2", apis[t % 2].streamDestroy(workers[t].stream));
  }
  free(workers);
  CALL("cuGraphExecDestroy", a->graphExecDestroy(graph_exec));
  CALL("cuGraphDestroy", a->graphDestroy(graph));
  CALL("cuModuleUnload", a->moduleUnload(mod));

  printf("client_runtime: %ld threads x %ld iterations, all checks passed%s\n", threads, iterations,
         strict ? " (strict pointers)" : "");
  expect_print();
  return 0;
}
