/* Allocation helpers for the report: running out of memory ends the program
 * with the usual one-line message and exit status 2. (The reader does not
 * use these: it reports failures as read errors.) */
#ifndef WSLSHIM_UTIL_H
#define WSLSHIM_UTIL_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* WSLSHIM_UTIL_H */
