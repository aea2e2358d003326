/*
 * client_timing: kernels with known simulated GPU durations, for the shim's
 * sampled GPU timing (run with FAKE_CUDA_KERNEL_NS=K: a kernel of gridDimX g
 * takes g*K ns on the fake GPU).
 *
 *   client_timing [queued=120] [starved=30] [graph_replays=5] [periodic_steps]
 *
 * Phases, each with kernels of its own names so a report can tell them apart:
 *   queued   k_small (g=1), k_mid (g=2), k_big (g=4) in turn, back to back,
 *            then one cuCtxSynchronize: the GPU always has work queued
 *   starved  k_sync (g=2), each followed by cuStreamSynchronize: the GPU is
 *            idle whenever a launch arrives
 *   graph    on a stream of its own: stream capture of 8 k_graph (g=1)
 *            launches, then the graph replayed graph_replays times
 *   ptsz     k_ptsz (g=1) launched through cuLaunchKernel_ptsz on stream 0
 *   unseen   k_unseen (g=1) x4, a function got where no hook sees it
 *   periodic p0..p9 (g=1) in turn, periodic_steps times (none by default)
 * Prints EXPECT (driver calls the client made) and a line
 *   PLAN {"k_small": n, ...}  launches per kernel name outside capture.
 */
#include "client_common.h"

extern CUresult ptsz_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                    CUstream s, void **kp, void **extra) __asm__("cuLaunchKernel_ptsz");

/* the fake driver's own, not a driver entry point (fake_libcuda.c) */
extern CUresult fake_module_get_function_unseen(CUfunction *hfunc, CUmodule hmod, const char *name);

static CUfunction get_fn(CUmodule mod, const char *name) {
  CUfunction f = NULL;
  CALL("cuModuleGetFunction", cuModuleGetFunction(&f, mod, name));
  return f;
}

static void launch(CUfunction f, unsigned g, CUstream s) {
  CALL("cuLaunchKernel", cuLaunchKernel(f, g, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

int main(int argc, char **argv) {
  long queued = arg_count(argc, argv, 1, 120);
  long starved = arg_count(argc, argv, 2, 30);
  long replays = arg_count(argc, argv, 3, 5);
  CALL("cuInit", cuInit(0));
  CUmodule mod = NULL;
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  CUfunction k_small = get_fn(mod, "k_small"), k_mid = get_fn(mod, "k_mid"), k_big = get_fn(mod, "k_big");
  CUfunction k_sync = get_fn(mod, "k_sync"), k_graph = get_fn(mod, "k_graph"), k_ptsz = get_fn(mod, "k_ptsz");

  /* queued */
  for (long i = 0; i < queued; i++) {
    static const unsigned g[3] = {1, 2, 4};
    CUfunction f = i % 3 == 0 ? k_small : i % 3 == 1 ? k_mid : k_big;
    launch(f, g[i % 3], NULL);
  }
  CALL("cuCtxSynchronize", cuCtxSynchronize());

  /* starved */
  for (long i = 0; i < starved; i++) {
    launch(k_sync, 2, NULL);
    CALL("cuStreamSynchronize", cuStreamSynchronize(NULL));
  }

  /* graph: capture, instantiate, replay */
  CUstream s = NULL;
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  CALL("cuStreamCreate", cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CALL("cuStreamBeginCapture_v2", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 8; i++)
    launch(k_graph, 1, s);
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  CALL("cuStreamIsCapturing", cuStreamIsCapturing(s, &cs));
  CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE, "stream not capturing");
  CALL("cuStreamEndCapture", cuStreamEndCapture(s, &graph));
  CALL("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags(&exec, graph, 0));
  for (long i = 0; i < replays; i++)
    CALL("cuGraphLaunch", cuGraphLaunch(exec, s));
  CALL("cuStreamSynchronize", cuStreamSynchronize(s));

  /* per-thread default stream */
  for (int i = 0; i < 6; i++)
    CALL("cuLaunchKernel_ptsz", ptsz_cuLaunchKernel(k_ptsz, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  CALL("cuCtxSynchronize", cuCtxSynchronize());

  /* a function got where no hook sees it: named by the shim through cuFuncGetName */
  CUfunction k_unseen = NULL;
  CHECK(fake_module_get_function_unseen(&k_unseen, mod, "k_unseen") == CUDA_SUCCESS, "no k_unseen");
  for (int i = 0; i < 4; i++)
    launch(k_unseen, 1, NULL);
  CALL("cuCtxSynchronize", cuCtxSynchronize());

  /* periodic: a step of 10 distinct kernels, `steps` times (a training loop's shape) */
  long steps = argc > 4 ? arg_count(argc, argv, 4, 1) : 0;
  if (steps) {
    char nm[16];
    CUfunction p[10];
    for (int k = 0; k < 10; k++) {
      snprintf(nm, sizeof nm, "p%d", k);
      p[k] = get_fn(mod, nm);
    }
    for (long i = 0; i < steps; i++)
      for (int k = 0; k < 10; k++)
        launch(p[k], 1, NULL);
    CALL("cuCtxSynchronize", cuCtxSynchronize());
  }

  CALL("cuGraphExecDestroy", cuGraphExecDestroy(exec));
  CALL("cuGraphDestroy", cuGraphDestroy(graph));
  CALL("cuStreamDestroy_v2", cuStreamDestroy(s));
  printf("PLAN {\"k_small\": %ld, \"k_mid\": %ld, \"k_big\": %ld, \"k_sync\": %ld, \"k_graph\": 8, "
         "\"graph_replays\": %ld, \"k_ptsz\": 6, \"k_unseen\": 4, \"periodic_steps\": %ld}\n",
         (queued + 2) / 3, (queued + 1) / 3, queued / 3, starved, replays, steps);
  expect_print();
  return 0;
}
