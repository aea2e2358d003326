/* The probes' empty kernel, as PTX the driver compiles at load (no CUDA runtime,
 * no nvcc at build time): what a launch costs with nothing to run. */
#ifndef WSLSHIM_PROBES_EMPTY_KERNEL_H
#define WSLSHIM_PROBES_EMPTY_KERNEL_H
static const char empty_kernel_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry wslshim_probe_empty()\n"
    "{\n"
    "  ret;\n"
    "}\n";
#endif
