/*
 * client_vmm: physical device memory through the virtual memory management
 * calls (as PyTorch's expandable_segments allocator does): three 2 MiB
 * cuMemCreate, map and unmap, release one, one 4 MiB cuMemCreate, release all.
 * Device memory peaks at 8 MiB. Prints EXPECT like the other clients.
 */
#include "client_common.h"

int main(void) {
  CALL("cuInit", cuInit(0));
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h[4];
  for (int i = 0; i < 3; i++)
    CALL("cuMemCreate", cuMemCreate(&h[i], 2u << 20, &prop, 0));
  CUdeviceptr va = 0x7f0000000000ull;
  CALL("cuMemMap", cuMemMap(va, 2u << 20, 0, h[0], 0));
  CALL("cuMemUnmap", cuMemUnmap(va, 2u << 20));
  CALL("cuMemRelease", cuMemRelease(h[1]));
  CALL("cuMemCreate", cuMemCreate(&h[3], 4u << 20, &prop, 0));
  CALL_RC("cuMemRelease", CUDA_ERROR_INVALID_VALUE, cuMemRelease(h[1])); /* released twice: the driver refuses */
  CALL("cuMemRelease", cuMemRelease(h[0]));
  CALL("cuMemRelease", cuMemRelease(h[2]));
  CALL("cuMemRelease", cuMemRelease(h[3]));
  expect_print();
  return 0;
}
