/*
 * Synthetic traces with kernel names and launches (built with mem_scenarios.h's
 * builder), for the unit tests and make_mem_trace. Scenarios (kern_scenarios.c
 * says what each holds and the figures expected):
 *   kernels    pid 8181: names from cuModuleGetFunction, cuLibraryGetKernel and
 *              cuKernelGetFunction in thread 0, launched in thread 1 whose chunk
 *              comes first; a mangled name, an invalid one, an unknown handle,
 *              a failed launch, graph launches.
 *   kernels_b  pid 8282: the handle values of `kernels` naming other kernels.
 */
#ifndef WSLSHIM_KERN_SCENARIOS_H
#define WSLSHIM_KERN_SCENARIOS_H

#include <stdbool.h>

/* Writes scenario `name`; false when there is none. */
bool kern_scenario_write(const char *path, const char *name);

#endif /* WSLSHIM_KERN_SCENARIOS_H */
