/* An NVTX client library whose constructor makes the process's first NVTX
 * call: linked libraries' constructors may run before the shim's, and the
 * shim must answer the NVTX loader then too. */
#include <nvtx3/nvToolsExt.h>

__attribute__((constructor)) static void early_ranges(void)
{
    nvtxRangePushA("constructor_range");
    nvtxRangePop();
}

int early_lib_push(const char *name) { return nvtxRangePushA(name); }
int early_lib_pop(void) { return nvtxRangePop(); }
