/*
 * Event ids: the CUDA entry points of cuda_api.def, then the libc I/O entry
 * points of io_api.def, then the NVTX ones of nvtx_api.def, in list order. The trace carries the table (id,
 * category, names), so ids may change between versions of the shim.
 */
#ifndef WSLSHIM_API_IDS_H
#define WSLSHIM_API_IDS_H

enum wsl_api_id {
#define WSL_HOOK(sym, base, ver, pt, cat, pfn, params, args, rec) WSL_ID_##sym,
#include "wslshim/cuda_api.def"
#undef WSL_HOOK
    WSL_ID_COUNT, /* CUDA ids are below this */
    WSL_IO_ID_BEFORE_FIRST = WSL_ID_COUNT - 1,
#define WSL_IO(sym, base, cat) WSL_IO_ID_##sym,
#include "wslshim/io_api.def"
#undef WSL_IO
    WSL_ID_GPU_KERNEL, /* written by the writer: a launch timed on the GPU */
#define WSL_NVTX(sym, base, cat) WSL_NVTX_ID_##sym,
#include "wslshim/nvtx_api.def"
#undef WSL_NVTX
    /* The file calls again, for events on local files whose timing is sampled
     * (API_TABLE flag WSL_API_IO_SAMPLED): id + WSL_IO_SAMPLED. */
#define WSL_IO(sym, base, cat) WSL_IO_S_ID_##sym,
#include "wslshim/io_api.def"
#undef WSL_IO
    WSL_ID_IO_FOLD, /* untimed calls on one file, folded (hooks/io/fold.c) */
    WSL_ID_KERNEL_NAME, /* a launched function's name, asked of the driver (gpu_timing.c) */
    WSL_ID_IO_COPY_OUT, /* the destination of a copy in the kernel (sendfile, copy_file_range): a write */
    WSL_API_COUNT
};

#define WSL_IO_SAMPLED (WSL_IO_S_ID_open - WSL_IO_ID_open)

#endif
