/*
 * --sqlite FILE: the run as SQLite tables (docs/sqlite.md has the schema and
 * example queries), for SQL or pandas, as `nsys export --type sqlite` does.
 *
 * Per-process and per-kernel figures come from the run model (struct
 * wsl_run, after wsl_run_finish); per-call rows (api_calls, io_calls,
 * gpu_samples, nvtx_ranges) from a second reading of each process's trace,
 * streamed into one transaction through prepared statements: memory stays
 * bounded by the open NVTX ranges and the named kernel handles of one trace.
 */
#ifndef WSLSHIM_EXPORT_SQLITE_H
#define WSLSHIM_EXPORT_SQLITE_H
#include <stdbool.h>
#include <stddef.h>
#include "analysis.h"

/* Whether this build has SQLite (libsqlite3 was found at configure time). */
bool wsl_sqlite_available(void);

/* Writes run to a new database at path (an existing file is replaced once the
 * database is whole). Returns 0, or -1 with a one-line reason in err. */
int wsl_sqlite_export(const struct wsl_run *run, const char *path, char *err, size_t errlen);

#endif /* WSLSHIM_EXPORT_SQLITE_H */
