/*
 * hook_rows: prints the shim's hook list (cuda_api.def) as
 * "symbol base version per_thread" lines, for fake_driver_test.py to hold the
 * fake driver against. A test helper only: the fake driver itself stays
 * independent of the shim's list.
 */
#include <stdio.h>

int main(void) {
#define WSL_HOOK(sym, base, ver, pt, ...) printf("%s %s %d %d\n", #sym, #base, ver, pt);
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
  return 0;
}
