/*
 * client_launch_args: launches whose every argument differs, for the check that
 * the shim's record of a launch holds what the program passed, whichever of
 * the hook's paths recorded it (tests/preload/launch_records_check.py).
 *
 *   client_launch_args [rounds=12]
 *
 * Kernel and graph launches through the exported symbols (cuLaunchKernel,
 * cuLaunchKernel_ptsz, cuLaunchCooperativeKernel(_ptsz), cuLaunchKernelEx,
 * cuGraphLaunch) and through pointers from cuGetProcAddress_v2 (with and
 * without the per-thread-stream flag), each of three functions `rounds` times:
 * a function's first launches and a launch due for GPU timing take the full
 * hook, the others the launch's fast path. Grids above 65535, every block
 * dimension, shared memory and two streams vary from launch to launch; some
 * launches fail (a block of 0 threads, a NULL function) and are recorded with
 * their error. One line per launch, in order:
 *   L symbol stream function gx gy gz bx by bz shmem result
 * (stream and function as integers), then EXPECT (client_common.h).
 *
 *   client_launch_args signals N FILE
 *
 * N launches of one function with gridDimX 1..N (a 1 ms pause every 4096)
 * while a timer's signal (every 20 us) interrupts them, whose handler reads 16 bytes of FILE with pread (a
 * hooked call; the driver is not async-signal-safe, a handler may not launch):
 * a handler's call inside one of the program's hooked calls passes through
 * unrecorded, any other is recorded. Prints
 *   SIGNALS main N handler H
 * (H: the handler's reads, all of the 16 bytes FILE begins with).
 */
#define _GNU_SOURCE
#include "client_common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

extern CUresult ptsz_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                    CUstream s, void **kp, void **extra) __asm__("cuLaunchKernel_ptsz");
extern CUresult ptsz_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                               unsigned int bx, unsigned int by, unsigned int bz,
                                               unsigned int shmem, CUstream s, void **kp)
    __asm__("cuLaunchCooperativeKernel_ptsz");

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

enum { ROUTE_LINKED, ROUTE_PTSZ, ROUTE_COOP, ROUTE_COOP_PTSZ, ROUTE_EX, ROUTE_PROC, ROUTE_PROC_PT, ROUTES };
static const char *const route_sym[ROUTES] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchCooperativeKernel",
                                              "cuLaunchCooperativeKernel_ptsz", "cuLaunchKernelEx",
                                              "cuLaunchKernel", "cuLaunchKernel_ptsz"};
static launch_fn proc_plain, proc_pt;

static void launch(int route, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shmem, CUstream s, CUresult want) {
  CUresult rc = CUDA_SUCCESS;
  expect_add(route_sym[route], 1);
  switch (route) {
  case ROUTE_LINKED: rc = cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, NULL, NULL); break;
  case ROUTE_PTSZ: rc = ptsz_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, NULL, NULL); break;
  case ROUTE_COOP: rc = cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, NULL); break;
  case ROUTE_COOP_PTSZ: rc = ptsz_cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, NULL); break;
  case ROUTE_EX: {
    CUlaunchConfig c;
    memset(&c, 0, sizeof c);
    c.gridDimX = gx, c.gridDimY = gy, c.gridDimZ = gz;
    c.blockDimX = bx, c.blockDimY = by, c.blockDimZ = bz;
    c.sharedMemBytes = shmem, c.hStream = s;
    rc = cuLaunchKernelEx(&c, f, NULL, NULL);
    break;
  }
  case ROUTE_PROC: rc = proc_plain(f, gx, gy, gz, bx, by, bz, shmem, s, NULL, NULL); break;
  case ROUTE_PROC_PT: rc = proc_pt(f, gx, gy, gz, bx, by, bz, shmem, s, NULL, NULL); break;
  }
  CHECK(rc == want, "%s returned %d, expected %d", route_sym[route], (int)rc, (int)want);
  printf("L %s %llu %llu %u %u %u %u %u %u %u %d\n", route_sym[route], (unsigned long long)(uintptr_t)s,
         (unsigned long long)(uintptr_t)f, gx, gy, gz, bx, by, bz, shmem, (int)rc);
}

static int sig_fd = -1;
static volatile sig_atomic_t sig_reads, sig_failed;
static char sig_want[16];

static void on_timer(int sig) {
  (void)sig;
  int saved = errno;
  char buf[16];
  if (pread(sig_fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf || memcmp(buf, sig_want, sizeof buf))
    sig_failed = 1;
  sig_reads++;
  errno = saved;
}

static int signals_main(long n, const char *file) {
  CUmodule mod = NULL;
  CUfunction f = NULL;
  CALL("cuInit", cuInit(0));
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  CALL("cuModuleGetFunction", cuModuleGetFunction(&f, mod, "k_main"));
  FILE *fp = fopen(file, "w");
  CHECK(fp && fputs("sixteen bytes ok and more", fp) >= 0 && fclose(fp) == 0, "cannot write %s", file);
  memcpy(sig_want, "sixteen bytes ok", sizeof sig_want);
  sig_fd = open(file, O_RDONLY);
  CHECK(sig_fd >= 0, "cannot open %s", file);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_timer;
  sa.sa_flags = SA_RESTART;
  CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
  timer_t timer;
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGALRM;
  sev._sigev_un._tid = gettid();
  CHECK(timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0, "timer_create");
  struct itimerspec its = {{0, 20000}, {0, 20000}};
  CHECK(timer_settime(timer, 0, &its, NULL) == 0, "timer_settime");
  for (long i = 0; i < n; i++) {
    CHECK(cuLaunchKernel(f, (unsigned)i + 1u, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS, "launch %ld", i);
    if ((i + 1) % 4096 == 0) { /* the writer's turn on a loaded machine: no event dropped */
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }
  memset(&its, 0, sizeof its);
  timer_settime(timer, 0, &its, NULL);
  timer_delete(timer);
  CHECK(!sig_failed, "a handler's read failed");
  printf("SIGNALS main %ld handler %ld\n", n, (long)sig_reads);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 3 && !strcmp(argv[1], "signals"))
    return signals_main(arg_count(argc, argv, 2, 100000), argv[3]);
  long rounds = arg_count(argc, argv, 1, 12);
  CALL("cuInit", cuInit(0));
  CUdriverProcAddressQueryResult qr;
  CALL("cuGetProcAddress_v2", cuGetProcAddress_v2("cuLaunchKernel", (void **)&proc_plain, 12000, 0, &qr));
  CALL("cuGetProcAddress_v2", cuGetProcAddress_v2("cuLaunchKernel", (void **)&proc_pt, 12000,
                                                  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &qr));
  CUmodule mod = NULL;
  CUfunction fn[3] = {NULL, NULL, NULL};
  CUstream st = NULL;
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  for (int k = 0; k < 3; k++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", k);
    CALL("cuModuleGetFunction", cuModuleGetFunction(&fn[k], mod, name));
  }
  CALL("cuStreamCreate", cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));

  unsigned i = 0;
  for (long r = 0; r < rounds; r++) {
    for (int route = 0; route < ROUTES; route++) {
      for (int k = 0; k < 3; k++, i++) {
        unsigned gx = 70000u + i * 13u, gy = 1u + i % 65535u, gz = 1u + i % 3u;
        unsigned bx = 1u + (i * 7u) % 256u, by = 1u + i % 2u, bz = 1u + i / 3u % 2u; /* <= 1024 threads */
        unsigned shmem = (i * 97u) % (48u * 1024u);
        CUstream s = i % 2 ? st : NULL;
        launch(route, fn[k], gx, gy, gz, bx, by, bz, shmem, s, CUDA_SUCCESS);
      }
      /* failed launches are recorded with their error, by either path */
      if (r % 4 == 1)
        launch(route, fn[r % 3], 5, 1, 1, 0, 1, 1, 0, NULL, CUDA_ERROR_INVALID_VALUE);
      if (r % 4 == 3)
        launch(route, NULL, 1, 2, 1, 32, 1, 1, 0, st, CUDA_ERROR_INVALID_VALUE);
    }
  }

  /* graphs: a captured one replayed, by its own fast path */
  CUgraph g = NULL;
  CUgraphExec ge = NULL;
  CALL("cuStreamBeginCapture_v2", cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
  launch(ROUTE_LINKED, fn[0], 2, 1, 1, 64, 1, 1, 0, st, CUDA_SUCCESS);
  CALL("cuStreamEndCapture", cuStreamEndCapture(st, &g));
  CALL("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags(&ge, g, 0));
  for (long r = 0; r < rounds; r++) {
    CUstream s = r % 2 ? st : NULL;
    CALL("cuGraphLaunch", cuGraphLaunch(ge, s));
    printf("G cuGraphLaunch %llu %llu 0\n", (unsigned long long)(uintptr_t)s, (unsigned long long)(uintptr_t)ge);
  }
  CALL("cuCtxSynchronize", cuCtxSynchronize());
  expect_print();
  return 0;
}
