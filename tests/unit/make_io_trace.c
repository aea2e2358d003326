/*
 * make_io_trace: writes one synthetic trace with file I/O (io_scenarios.c),
 * for the report tests in check_report.py.
 *
 *   make_io_trace OUT SCENARIO
 */
#include <stdio.h>

#include "io_scenarios.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_io_trace OUT SCENARIO (see io_scenarios.h)\n");
        return 2;
    }
    if (!io_scenario_write(argv[1], argv[2])) {
        fprintf(stderr, "make_io_trace: no scenario named %s\n", argv[2]);
        return 2;
    }
    return 0;
}
