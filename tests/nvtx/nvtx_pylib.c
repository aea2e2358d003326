/* A shared library built with the nvtx3 headers, loaded by Python through
 * ctypes after start-up: the way PyTorch's torch.cuda.nvtx reaches NVTX (its
 * own copy of NVTX inside an extension module). */
#include <nvtx3/nvToolsExt.h>

int lib_push(const char *name) { return nvtxRangePushA(name); }
int lib_pop(void) { return nvtxRangePop(); }
