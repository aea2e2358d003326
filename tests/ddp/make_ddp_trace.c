/*
 * make_ddp_trace: writes one synthetic trace per rank of a data-parallel run
 * (tests/unit/ddp_scenarios.h) into a folder, for ddp_check.py and the
 * benchmark (tests/bench/bench_ddp.py).
 *
 * usage: make_ddp_trace DIR [--ranks N] [--steps N] [--straggler R] [--delay-ms X]
 *                           [--io] [--nvtx] [--no-env] [--every N] [--jitter-us X]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_scenarios.h"

static void usage(void)
{
    fputs("usage: make_ddp_trace DIR [--ranks N] [--steps N] [--straggler R] [--delay-ms X] [--io] [--nvtx] "
          "[--no-env] [--every N] [--jitter-us X]\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    struct ddp_plan p = ddp_plan_default();
    p.rank_env = true;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--io"))
            p.delay_in_io = true;
        else if (!strcmp(a, "--nvtx"))
            p.nvtx = true;
        else if (!strcmp(a, "--no-env"))
            p.rank_env = false;
        else if (!v)
            usage();
        else if (!strcmp(a, "--ranks") && ++i)
            p.ranks = (unsigned)atoi(v);
        else if (!strcmp(a, "--steps") && ++i)
            p.steps = (unsigned)atoi(v);
        else if (!strcmp(a, "--straggler") && ++i)
            p.straggler = atoi(v);
        else if (!strcmp(a, "--delay-ms") && ++i)
            p.delay_ns = (uint64_t)(atof(v) * 1e6);
        else if (!strcmp(a, "--every") && ++i)
            p.timing_every = (unsigned)atoi(v);
        else if (!strcmp(a, "--jitter-us") && ++i)
            p.jitter_ns = (uint64_t)(atof(v) * 1e3);
        else
            usage();
    }
    if (!p.ranks || !p.steps || !p.timing_every)
        usage();
    for (unsigned r = 0; r < p.ranks; r++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%03u.trace.zst", argv[1], r);
        ddp_write_rank(path, &p, r);
    }
    return 0;
}
