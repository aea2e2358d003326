#define _GNU_SOURCE
#include "util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void out_of_memory(void)
{
    fputs("wslshim-report: out of memory\n", stderr);
    exit(2);
}

void *wsl_huge_alloc(size_t n)
{
    const size_t huge = (size_t)2 << 20, page = 4096;
    n = (n + page - 1) & ~(page - 1);
    uint8_t *m = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
    if (p > m) /* the slack before and after: [p, p + n) stays mapped alone */
        munmap(m, (size_t)(p - m));
    if (m + n + huge > p + n)
        munmap(p + n, (size_t)(m + n + huge - (p + n)));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE); /* (a hint: refused, small pages serve) */
#endif
    return p;
}

void wsl_huge_free(void *p, size_t n)
{
    const size_t page = 4096;
    if (p)
        munmap(p, (n + page - 1) & ~(page - 1));
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xrealloc(void *old, size_t size)
{
    void *p = realloc(old, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xgrow_zeroed_to(void *p, size_t *count, size_t index, size_t elem, size_t first)
{
    if (index < *count)
        return p;
    size_t n = *count ? *count : first;
    while (n <= index)
        n *= 2;
    p = xrealloc(p, n * elem);
    memset((char *)p + *count * elem, 0, (n - *count) * elem);
    *count = n;
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        out_of_memory();
    return s;
}

const char *wsl_format_ns(char *buf, size_t size, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, size, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, size, "%.2f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, size, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(buf, size, "%.3f s", (double)ns / 1e9);
    return buf;
}

const char *wsl_format_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024;
    unsigned u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

char *wsl_shell_quote(const char *s)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") == strlen(s))
        return xstrdup(s);  /* nothing the shell would change */
    size_t n = 2;
    for (const char *p = s; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *out = xmalloc(n + 1), *o = out;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = 0;
    return out;
}
