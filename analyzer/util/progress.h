/*
 * Progress of a long read on stderr: "wslshim-report: reading traces 42%",
 * rewritten in place with \r, only when stderr is a terminal and only once the
 * read has taken more than a second; the line is cleared at the end, so a
 * quick run or a redirected stderr sees nothing.
 */
#ifndef WSLSHIM_PROGRESS_H
#define WSLSHIM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct wsl_progress {
    bool enabled;               /* stderr is a terminal and there is something to read */
    bool shown;                 /* a line is on the screen */
    const char *what;           /* "reading traces" */
    uint64_t total;             /* bytes to read, all passes */
    uint64_t base;              /* bytes of the files already read */
    uint64_t start_ns, last_ns; /* CLOCK_MONOTONIC */
    int last_percent;
    unsigned calls;
};

/* Starts a progress of `total` bytes; force: show it whatever stderr is (tests). */
void wsl_progress_begin(struct wsl_progress *p, const char *what, uint64_t total, bool force);
/* `done` bytes of the current file read (the files before it are in base). */
void wsl_progress_update(struct wsl_progress *p, uint64_t done);
/* The current file is finished: its `bytes` join base. */
void wsl_progress_next_file(struct wsl_progress *p, uint64_t bytes);
/* Clears the line. */
void wsl_progress_end(struct wsl_progress *p);

#endif /* WSLSHIM_PROGRESS_H */
