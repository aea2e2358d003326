/*
 * client_common.h: shared by the fake-driver clients.
 *
 * Every driver call a client makes goes through CALL()/CALL_RC(), which adds
 * one to the expected count of the symbol the client believes it reached and
 * checks the return code. At the end the client prints
 *   EXPECT {"symbol": count, ...}
 * (sorted, one line), which compare_counts.py holds against the counts the
 * driver itself recorded (FAKE_CUDA_COUNTS). Any failed check prints FAIL and
 * exits 1 at once.
 */
#ifndef WSLSHIM_FAKE_CLIENT_COMMON_H
#define WSLSHIM_FAKE_CLIENT_COMMON_H

#include <cuda.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLIENT_MAX_SYMBOLS 128

static struct {
  pthread_mutex_t lock;
  int n;
  struct {
    char name[64];
    unsigned long count;
  } v[CLIENT_MAX_SYMBOLS];
} client_expect = {PTHREAD_MUTEX_INITIALIZER, 0, {{"", 0}}};

static inline void client_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void client_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stdout);
  fflush(stderr);
  _exit(1); /* other threads may still be running: no exit handlers */
}

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      client_fail(__VA_ARGS__);                                                \
  } while (0)

static inline void expect_add(const char *sym, unsigned long n) {
  pthread_mutex_lock(&client_expect.lock);
  int i;
  for (i = 0; i < client_expect.n; i++)
    if (strcmp(client_expect.v[i].name, sym) == 0)
      break;
  if (i == client_expect.n) {
    if (i == CLIENT_MAX_SYMBOLS || strlen(sym) >= sizeof client_expect.v[i].name) {
      pthread_mutex_unlock(&client_expect.lock);
      client_fail("expectation table: cannot add %s", sym);
    }
    snprintf(client_expect.v[i].name, sizeof client_expect.v[i].name, "%s", sym);
    client_expect.n++;
  }
  client_expect.v[i].count += n;
  pthread_mutex_unlock(&client_expect.lock);
}

static inline int expect_cmp(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

static inline void expect_print(void) {
  pthread_mutex_lock(&client_expect.lock);
  qsort(client_expect.v, (size_t)client_expect.n, sizeof client_expect.v[0], expect_cmp);
  printf("EXPECT {");
  for (int i = 0; i < client_expect.n; i++)
    printf("%s\"%s\": %lu", i ? ", " : "", client_expect.v[i].name, client_expect.v[i].count);
  printf("}\n");
  pthread_mutex_unlock(&client_expect.lock);
  fflush(stdout);
}

/* One call to the driver symbol `sym` (the exact variant, e.g.
 * "cuLaunchKernel_ptsz"), expected to return `want`. */
#define CALL_RC(sym, want, call)                                               \
  do {                                                                         \
    expect_add(sym, 1);                                                        \
    CUresult rc_ = (call);                                                     \
    if (rc_ != (want))                                                         \
      client_fail("%s:%d: %s returned %d, expected %d (%s)", __FILE__,         \
                  __LINE__, sym, (int)rc_, (int)(want), #call);                \
  } while (0)
#define CALL(sym, call) CALL_RC(sym, CUDA_SUCCESS, call)

/* Positional argument i as a positive count, or dflt when absent. */
static inline long arg_count(int argc, char **argv, int i, long dflt) {
  if (argc <= i)
    return dflt;
  char *end = NULL;
  long v = strtol(argv[i], &end, 10);
  CHECK(end && !*end && v > 0, "argument %d (%s) must be a positive integer", i, argv[i]);
  return v;
}

/* A fixed, recognisable byte pattern. */
static inline void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed * 131u + i * 7u + 1u);
}

static inline int check_pattern(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed * 131u + i * 7u + 1u))
      return 0;
  return 1;
}

#endif
