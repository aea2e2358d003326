/* Progress line on stderr (progress.h). */
#define _GNU_SOURCE
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHOW_AFTER_NS 1000000000ull     /* reads quicker than this show nothing */
#define REDRAW_NS 100000000ull          /* at most ten redraws a second */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void wsl_progress_begin(struct wsl_progress *p, const char *what, uint64_t total, bool force)
{
    memset(p, 0, sizeof *p);
    p->what = what;
    p->total = total;
    /* a dumb terminal cannot erase the line (\033[K) */
    const char *term = getenv("TERM");
    p->enabled = total > 0 && (force || (isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0)));
    p->start_ns = p->last_ns = now_ns();
    p->last_percent = -1;
    if (force)
        p->start_ns -= SHOW_AFTER_NS; /* show from the first update */
}

void wsl_progress_update(struct wsl_progress *p, uint64_t done)
{
    if (!p || !p->enabled)
        return;
    uint64_t t = now_ns();
    if (t - p->start_ns < SHOW_AFTER_NS || (p->shown && t - p->last_ns < REDRAW_NS))
        return;
    uint64_t at = p->base + done;
    int percent = at >= p->total ? 100 : (int)(at * 100 / p->total);
    p->last_ns = t;
    if (percent == p->last_percent)
        return;
    p->last_percent = percent;
    p->shown = true;
    fprintf(stderr, "\rwslshim-report: %s %3d%%", p->what, percent);
    fflush(stderr);
}

void wsl_progress_next_file(struct wsl_progress *p, uint64_t bytes)
{
    if (p)
        p->base += bytes;
}

void wsl_progress_end(struct wsl_progress *p)
{
    if (p && p->shown) {
        /* carriage return, erase to the end of the line */
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->shown = false;
    }
}
