/*
 * The file I/O cost model: what one call or one byte costs on a filesystem,
 * from published measurements (docs/io.md cites each source; they are
 * collected in the project's facts). The rules estimate what the calls a run
 * made would have cost elsewhere from this one table.
 */
#ifndef WSLSHIM_IO_COSTS_H
#define WSLSHIM_IO_COSTS_H

enum wsl_io_cost_id {
    WSL_IO_COST_EXT4_WSL2,      /* the distribution's own ext4 disk inside WSL2 */
    WSL_IO_COST_9P_DRVFS,       /* a Windows drive over 9p (/mnt/c) */
    WSL_IO_COST_COUNT
};

struct wsl_io_cost {
    const char *name;
    double call_ns;             /* one stat() (also the floor of any other call: seek, mmap, a read) */
    double open_cycle_ns;       /* one open + small read + close of a small file */
    double read_bytes_per_s;    /* reading a large file */
    const char *sources;
};

extern const struct wsl_io_cost wsl_io_costs[WSL_IO_COST_COUNT];

#endif /* WSLSHIM_IO_COSTS_H */
