/*
 * client_phases: programs of known shape for the run's phases and the host-side
 * starvation rules (run with FAKE_CUDA_KERNEL_NS, FAKE_CUDA_LAUNCH_NS and
 * FAKE_CUDA_MODULE_LOAD_NS set by phases_test.py).
 *
 *   client_phases phases    300 ms asleep (start-up), a copy (the first GPU
 *                           submission), 10 module loads (warm-up: a compile
 *                           burst), 1000 steps of the same 10 kernels
 *                           (steady state), 200 ms asleep (teardown)
 *   client_phases dispatch  2000 steps of 10 kernels with 60 us of host work
 *                           before each launch (a framework's work per op)
 *   client_phases loader    a forked worker hands the main thread a 4-byte item
 *                           over a pipe every 5 ms; each item is read (a blocking
 *                           read) and followed by 10 kernels; 200 items
 *   client_phases loader-poll  the same, each item waited for with poll() (with a
 *                           timeout, as a multiprocessing queue's get(timeout=...)
 *                           does) and then read
 *   client_phases loader-threads  as loader-poll, but each item's step launches 2
 *                           kernels from the main thread and 10 from a second thread
 *                           the main thread hands the step to and waits for (as
 *                           PyTorch's autograd thread launches a step's backward):
 *                           the busiest launching thread is not the one that waits;
 *                           a third thread, which launches nothing, polls a pipe of
 *                           its own every 10 ms and reads it every other time (as the
 *                           CUDA driver's event thread does)
 *   client_phases loader-pinned  as loader-poll, but a thread that launches
 *                           nothing polls and reads the pipe and hands each item to
 *                           the main thread through a semaphore (a DataLoader with
 *                           pin_memory=True: its pin-memory thread, a Python queue);
 *                           the main thread waits in sem_timedwait and sem_clockwait
 *   client_phases loader-sync  a forked worker that hands nothing over (it waits for
 *                           the pipe to close); the main thread's 200 steps of 10
 *                           kernels each end in cuCtxSynchronize: its waits are for
 *                           the GPU, not for the worker
 * Prints one line: MEASURED {"...": ns, ...} with what the client timed itself.
 */
#define _GNU_SOURCE
#include "client_common.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin_us(unsigned us) {
  uint64_t end = now_ns() + us * 1000ull;
  while (now_ns() < end)
    ;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000l};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

static CUmodule setup(CUfunction f[10]) {
  CUmodule mod = NULL;
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  for (int k = 0; k < 10; k++) {
    char nm[16];
    snprintf(nm, sizeof nm, "step_k%d", k);
    CALL("cuModuleGetFunction", cuModuleGetFunction(&f[k], mod, nm));
  }
  return mod;
}

static void launch(CUfunction f) {
  CALL("cuLaunchKernel", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
}

/* loader-pinned: the thread that takes the worker's items (launches nothing) */
static sem_t items_ready;
static atomic_int pin_items[200]; /* atomics: TSan does not see sem_clockwait's synchronization */
static int pin_fd;
static void *pin_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) {
    struct pollfd pf = {pin_fd, POLLIN, 0};
    int n;
    while ((n = poll(&pf, 1, 5000)) == 0)
      ;
    CHECK(n == 1 && (pf.revents & POLLIN), "pin poll item %d", i);
    int item = -1;
    CHECK(read(pin_fd, &item, sizeof item) == (ssize_t)sizeof item, "pin read %d", i);
    atomic_store_explicit(&pin_items[i], item, memory_order_relaxed);
    sem_post(&items_ready);
  }
  return NULL;
}

/* loader-pinned: the main thread's wait for the next item, timed as Python's queue.get(timeout=5) */
static void wait_item(int i) {
  struct timespec ts;
  clockid_t clk = i % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
  clock_gettime(clk, &ts);
  ts.tv_sec += 5;
  int r;
  do
    r = i % 2 ? sem_clockwait(&items_ready, clk, &ts) : sem_timedwait(&items_ready, &ts);
  while (r != 0 && errno == EINTR);
  CHECK(r == 0, "wait for item %d", i);
}

/* loader-threads: a thread of the driver's kind, which launches nothing and polls a descriptor of its own
 * the whole run, reading from it now and then (the CUDA driver's event thread) */
static int drv_fd[2];
static atomic_int drv_stop;
static void *driver_thread(void *arg) {
  (void)arg;
  char c;
  for (int n = 0; !atomic_load(&drv_stop); n++) {
    struct pollfd pf = {drv_fd[0], POLLIN, 0};
    if (poll(&pf, 1, 10) == 1)
      CHECK(read(drv_fd[0], &c, 1) == 1, "driver thread read");
    if (n % 2 == 1)
      CHECK(write(drv_fd[1], "x", 1) == 1, "driver thread write");
  }
  return NULL;
}

/* loader-threads: the second launching thread (a step's backward) */
static sem_t step_go, step_done;
static CUfunction *step_f;
static int steps_left;
static void *backward_thread(void *arg) {
  (void)arg;
  for (;;) {
    while (sem_wait(&step_go) != 0)
      ;
    if (steps_left-- <= 0)
      return NULL;
    for (int k = 0; k < 10; k++)
      launch(step_f[k]);
    sem_post(&step_done);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  CUfunction f[10];
  if (!strcmp(mode, "phases")) {
    uint64_t t0 = now_ns();
    sleep_ms(300);
    CALL("cuInit", cuInit(0));
    CUdeviceptr d = 0;
    char host[4096] = {0};
    CALL("cuMemAlloc_v2", cuMemAlloc(&d, sizeof host));
    uint64_t t1 = now_ns();
    CALL("cuMemcpyHtoD_v2", cuMemcpyHtoD(d, host, sizeof host)); /* the first submission */
    for (int i = 0; i < 9; i++) {
      CUmodule m = NULL;
      CALL("cuModuleLoadData", cuModuleLoadData(&m, "fake jit output"));
    }
    setup(f);
    uint64_t t2 = now_ns();
    for (int s = 0; s < 1000; s++)
      for (int k = 0; k < 10; k++)
        launch(f[k]);
    CALL("cuCtxSynchronize", cuCtxSynchronize());
    uint64_t t3 = now_ns();
    sleep_ms(200);
    printf("MEASURED {\"startup_ns\": %llu, \"warmup_ns\": %llu, \"steady_ns\": %llu, \"teardown_ns\": %llu}\n",
           (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1), (unsigned long long)(t3 - t2),
           (unsigned long long)(now_ns() - t3));
  } else if (!strcmp(mode, "dispatch")) {
    CALL("cuInit", cuInit(0));
    setup(f);
    uint64_t t0 = now_ns();
    for (int s = 0; s < 2000; s++)
      for (int k = 0; k < 10; k++) {
        spin_us(60);
        launch(f[k]);
      }
    CALL("cuCtxSynchronize", cuCtxSynchronize());
    printf("MEASURED {\"loop_ns\": %llu, \"launches\": 20000}\n", (unsigned long long)(now_ns() - t0));
  } else if (!strcmp(mode, "loader") || !strcmp(mode, "loader-poll") || !strcmp(mode, "loader-threads") ||
             !strcmp(mode, "loader-pinned")) {
    const int threads = !strcmp(mode, "loader-threads");
    const int pinned = !strcmp(mode, "loader-pinned");
    const int use_poll = threads || !strcmp(mode, "loader-poll");
    CALL("cuInit", cuInit(0));
    setup(f);
    pthread_t bw, pt, drv;
    if (threads) {
      step_f = f;
      steps_left = 200;
      CHECK(sem_init(&step_go, 0, 0) == 0 && sem_init(&step_done, 0, 0) == 0, "sem_init");
      CHECK(pthread_create(&bw, NULL, backward_thread, NULL) == 0, "pthread_create");
      CHECK(pipe(drv_fd) == 0 && pthread_create(&drv, NULL, driver_thread, NULL) == 0, "driver thread");
    }
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) { /* the worker: an item every 5 ms */
      close(p[0]);
      for (int i = 0; i < 200; i++) {
        spin_us(5000);
        CHECK(write(p[1], &i, sizeof i) == (ssize_t)sizeof i, "write");
      }
      _exit(0);
    }
    close(p[1]);
    if (pinned) { /* the pipe is the pin thread's; the main thread waits on the semaphore it posts */
      pin_fd = p[0];
      CHECK(sem_init(&items_ready, 0, 0) == 0, "sem_init");
      CHECK(pthread_create(&pt, NULL, pin_thread, NULL) == 0, "pthread_create");
    }
    uint64_t waited = 0, t0 = now_ns();
    for (int i = 0; i < 200; i++) {
      int item = -1;
      uint64_t a = now_ns();
      if (pinned) {
        wait_item(i);
        item = atomic_load_explicit(&pin_items[i], memory_order_relaxed);
      } else {
        if (use_poll) {
          struct pollfd pf = {p[0], POLLIN, 0};
          int n;
          while ((n = poll(&pf, 1, 5000)) == 0)
            ;
          CHECK(n == 1 && (pf.revents & POLLIN), "poll item %d", i);
        }
        CHECK(read(p[0], &item, sizeof item) == (ssize_t)sizeof item, "read item %d", i);
      }
      CHECK(item == i, "item %d", i);
      waited += now_ns() - a;
      if (threads) { /* forward here, backward on the other thread, waited for */
        launch(f[0]);
        launch(f[1]);
        sem_post(&step_go);
        while (sem_wait(&step_done) != 0)
          ;
        continue;
      }
      for (int k = 0; k < 10; k++)
        launch(f[k]);
    }
    if (threads) {
      sem_post(&step_go); /* steps_left is 0: the thread ends */
      CHECK(pthread_join(bw, NULL) == 0, "pthread_join");
      atomic_store(&drv_stop, 1);
      CHECK(pthread_join(drv, NULL) == 0, "pthread_join");
    }
    if (pinned)
      CHECK(pthread_join(pt, NULL) == 0, "pthread_join");
    CALL("cuCtxSynchronize", cuCtxSynchronize());
    int st = 0;
    CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker");
    printf("MEASURED {\"waited_ns\": %llu, \"loop_ns\": %llu}\n", (unsigned long long)waited,
           (unsigned long long)(now_ns() - t0));
  } else if (!strcmp(mode, "loader-sync")) {
    CALL("cuInit", cuInit(0));
    setup(f);
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) { /* a worker that hands nothing over: it waits for the main process to close */
      close(p[1]);
      char c;
      while (read(p[0], &c, 1) > 0)
        ;
      _exit(0);
    }
    close(p[0]);
    uint64_t synced = 0, t0 = now_ns();
    for (int i = 0; i < 200; i++) {
      for (int k = 0; k < 10; k++)
        launch(f[k]);
      uint64_t a = now_ns();
      CALL("cuCtxSynchronize", cuCtxSynchronize());
      synced += now_ns() - a;
    }
    close(p[1]);
    int st = 0;
    CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker");
    printf("MEASURED {\"synced_ns\": %llu, \"loop_ns\": %llu}\n", (unsigned long long)synced,
           (unsigned long long)(now_ns() - t0));
  } else {
    client_fail("usage: client_phases phases|dispatch|loader|loader-poll|loader-threads|loader-pinned|loader-sync");
  }
  return 0;
}
