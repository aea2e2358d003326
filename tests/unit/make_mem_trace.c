/*
 * make_mem_trace: writes one synthetic trace with memory calls
 * (mem_scenarios.c) or kernel launches (kern_scenarios.c), for the report
 * tests in check_report.py.
 *
 *   make_mem_trace OUT SCENARIO
 */
#include <stdio.h>

#include "host_scenarios.h"
#include "kern_scenarios.h"
#include "mem_scenarios.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_mem_trace OUT SCENARIO (see mem_scenarios.h, kern_scenarios.h)\n");
        return 2;
    }
    if (!mem_scenario_write(argv[1], argv[2]) && !kern_scenario_write(argv[1], argv[2]) &&
        !host_scenario_write(argv[1], argv[2])) {
        fprintf(stderr, "make_mem_trace: no scenario named %s\n", argv[2]);
        return 2;
    }
    return 0;
}
