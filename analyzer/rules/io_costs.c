#include "io_costs.h"

const struct wsl_io_cost wsl_io_costs[WSL_IO_COST_COUNT] = {
    [WSL_IO_COST_EXT4_WSL2] = {
        .name = "ext4 inside WSL2",
        .call_ns = 1500,            /* stat(): 1.1-1.7 us (microsoft/WSL#7038) */
        .open_cycle_ns = 53000,     /* open+write+read+stat loop: 53 us/iteration (microsoft/WSL#9430) */
        .read_bytes_per_s = 1.5e9,  /* read 1 GB: ~1.5 GB/s (enso-org/enso#1542) */
        .sources = "microsoft/WSL#7038, microsoft/WSL#9430, enso-org/enso#1542",
    },
    [WSL_IO_COST_9P_DRVFS] = {
        .name = "Windows drive over 9p (/mnt/c)",
        .call_ns = 1000000,         /* stat(): 900-1100 us (microsoft/WSL#7038) */
        .open_cycle_ns = 1500000,   /* the same loop: ~1.5 ms/iteration (microsoft/WSL#9430) */
        .read_bytes_per_s = 330e6,  /* read 1 GB: ~330 MB/s (enso-org/enso#1542) */
        .sources = "microsoft/WSL#7038, microsoft/WSL#9430, enso-org/enso#1542",
    },
};
