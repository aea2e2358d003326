/* Allocation helpers for the report: running out of memory ends the program
 * with the usual one-line message and exit status 2. (The reader does not
 * use these: it reports failures as read errors.) */
#ifndef WSLSHIM_UTIL_H
#define WSLSHIM_UTIL_H

#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Grows an array of `elem`-byte items, *count of them now (0: none yet), so
 * that `index` is in it: the count doubles from `first`, new items are zeroed.
 * Returns the array; *count is its new count. */
void *xgrow_zeroed_to(void *p, size_t *count, size_t index, size_t elem, size_t first);
static inline void *xgrow_zeroed(void *p, size_t *count, size_t index, size_t elem, size_t first)
{
    return index < *count ? p : xgrow_zeroed_to(p, count, index, elem, first); /* (per event: the test inline) */
}
/* n bytes (zeroed) at a 2 MiB boundary in a mapping of their own, asked for as transparent huge
 * pages (madvise): for a large array written once through, where a huge page takes one fault and
 * one clear where 512 small ones take 512. NULL where the mapping fails (the caller allocates as
 * usual then). Freed by wsl_huge_free with the same n. */
void *wsl_huge_alloc(size_t n);
void wsl_huge_free(void *p, size_t n);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A duration with 3-4 significant digits: "812 ns", "4.26 us", "1.25 s". Returns buf. */
const char *wsl_format_ns(char *buf, size_t size, uint64_t ns);
/* A size in binary units: "512 B", "48.8 KiB", "1.21 GiB". Returns buf. */
const char *wsl_format_bytes(char *buf, size_t size, uint64_t bytes);
/* s quoted for a POSIX shell when it needs it ('...', with ' as '\''), in a new string. */
char *wsl_shell_quote(const char *s);

#endif /* WSLSHIM_UTIL_H */
