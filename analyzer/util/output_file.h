/*
 * Where wslshim-report writes a file it was asked for (--html, --chrome, -o).
 *
 * A regular file, or a name that does not exist yet, is written as NAME.tmp-PID
 * and renamed over NAME once the whole output is written: a failure leaves the
 * old file as it was. Anything else (a device such as /dev/stdout or /dev/null,
 * a FIFO, a socket, a symbolic link) is written in place, never replaced: a
 * rename would put a regular file where it was. "-" is stdout. Every write
 * error (ENOSPC from a full disk or /dev/full, EPIPE from a closed pipe with
 * SIGPIPE ignored) is reported by wsl_output_close.
 */
#ifndef WSLSHIM_OUTPUT_FILE_H
#define WSLSHIM_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct wsl_output {
    FILE *f;            /* write here */
    const char *path;   /* the name asked for ("-": stdout) */
    char *tmp;          /* NAME.tmp-PID, renamed over path at close; NULL when written in place */
    bool is_stdout;
};

/* Opens path for writing. Returns 0, or -1 with err set ("PATH: cannot write: why"). */
int wsl_output_open(struct wsl_output *o, const char *path, char *err, size_t errlen);

/* Flushes and closes; with ok (the output is complete) renames the temporary
 * file over the name, else removes it. Returns 0, or -1 with err set
 * ("PATH: write error: why") when anything failed to reach the file. */
int wsl_output_close(struct wsl_output *o, bool ok, char *err, size_t errlen);

/* What to call the output in messages: its name, or "stdout". */
const char *wsl_output_name(const struct wsl_output *o);

#endif /* WSLSHIM_OUTPUT_FILE_H */
