/*
 * Distributed identity and the driver: RANK chunks (the launchers' variables
 * that say which rank of a run this process is: at the trace's start, and
 * again at cuInit with each GPU's PCI bus id) and the DRIVER chunk (the
 * driver's version and devices, asked of the driver on the writer thread).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "writer_internal.h"

/* Driver facts, noted by the cuInit hook and written by the writer. */
static void *_Atomic driver_cuInit;
static _Atomic int driver_init_result;
static _Atomic int driver_pending;

/* The launchers' variables a RANK chunk keeps (trace_format.h), and nothing else. */
static const char *const rank_vars[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "CUDA_VISIBLE_DEVICES",
};

/* Appends "key=value\0" when it fits; returns the new length. */
static size_t rank_put(char *buf, size_t n, size_t cap, const char *key, const char *value)
{
    size_t lk = strlen(key), lv = strnlen(value, 1024);
    if (!lk || n + lk + 1 + lv + 1 > cap)
        return n;
    memcpy(buf + n, key, lk);
    buf[n + lk] = '=';
    memcpy(buf + n + lk + 1, value, lv);
    buf[n + lk + 1 + lv] = 0;
    return n + lk + 1 + lv + 1;
}

/* The listed variables as the process has them now. Called on a program
 * thread (recording start, cuInit), never the writer's: the environment is
 * the program's to change. */
static size_t rank_collect(char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *v = wsl_getenv(rank_vars[i]);
        if (v)
            n = rank_put(buf, n, cap, rank_vars[i], v);
    }
    return n;
}

/* Snapshot taken when the driver came up, published with driver_pending. */
static char rank_at_init[WSL_RANK_MAX_PAYLOAD];
static size_t rank_at_init_len;

/* Asks the driver about itself, from the writer thread (never the program's),
 * through the same libcuda the program loaded. */
static void emit_driver(void)
{
    struct wsl_driver_info di;
    struct wsl_gpu_info gpus[16];
    memset(&di, 0, sizeof di);
    memset(gpus, 0, sizeof gpus);
    void *init = atomic_load(&driver_cuInit);
    di.init_result = atomic_load(&driver_init_result);
    Dl_info info;
    void *lib = NULL;
    if (init && dladdr(init, &info) && info.dli_fname) {
        snprintf(di.libcuda_path, sizeof di.libcuda_path, "%s", info.dli_fname);
        lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    if (lib && di.init_result == CUDA_SUCCESS) {
        CUresult (*get_version)(int *) = (CUresult(*)(int *))wsl_real_dlsym(lib, "cuDriverGetVersion");
        CUresult (*get_count)(int *) = (CUresult(*)(int *))wsl_real_dlsym(lib, "cuDeviceGetCount");
        CUresult (*get_dev)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))wsl_real_dlsym(lib, "cuDeviceGet");
        CUresult (*get_name)(char *, int, CUdevice) =
            (CUresult(*)(char *, int, CUdevice))wsl_real_dlsym(lib, "cuDeviceGetName");
        CUresult (*get_mem)(size_t *, CUdevice) = (CUresult(*)(size_t *, CUdevice))wsl_real_dlsym(lib, "cuDeviceTotalMem_v2");
        CUresult (*get_attr)(int *, CUdevice_attribute, CUdevice) =
            (CUresult(*)(int *, CUdevice_attribute, CUdevice))wsl_real_dlsym(lib, "cuDeviceGetAttribute");
        int count = 0;
        if (get_version)
            get_version(&di.driver_version);
        if (get_count && get_count(&count) == CUDA_SUCCESS) {
            for (int i = 0; i < count && i < 16; i++) {
                CUdevice d;
                if (!get_dev || get_dev(&d, i) != CUDA_SUCCESS)
                    continue;
                if (get_name)
                    get_name(gpus[di.devices].name, sizeof gpus[0].name - 1, d);
                if (get_mem)
                    get_mem((size_t *)&gpus[di.devices].total_mem, d);
                if (get_attr) {
                    get_attr(&gpus[di.devices].cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
                    get_attr(&gpus[di.devices].cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
                }
                di.devices++;
            }
        }
    }
    /* The RANK chunk again: the environment at cuInit, plus each GPU's PCI bus id. */
    static char rank_buf[WSL_RANK_MAX_PAYLOAD];
    size_t rn = rank_at_init_len;
    memcpy(rank_buf, rank_at_init, rn);
    if (lib && di.init_result == CUDA_SUCCESS) {
        CUresult (*get_dev)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))wsl_real_dlsym(lib, "cuDeviceGet");
        CUresult (*get_pci)(char *, int, CUdevice) =
            (CUresult(*)(char *, int, CUdevice))wsl_real_dlsym(lib, "cuDeviceGetPCIBusId");
        for (uint32_t i = 0; get_dev && get_pci && i < di.devices; i++) {
            CUdevice d;
            char bus[64] = "", key[32];
            if (get_dev(&d, (int)i) != CUDA_SUCCESS || get_pci(bus, (int)sizeof bus - 1, d) != CUDA_SUCCESS)
                continue;
            snprintf(key, sizeof key, "gpu.%u.pci_bus_id", i);
            rn = rank_put(rank_buf, rn, sizeof rank_buf, key, bus);
        }
    }
    if (lib)
        dlclose(lib);
    wsl_emit_chunk(WSL_CHUNK_DRIVER, &di, sizeof di, gpus, sizeof gpus[0] * di.devices);
    if (rn)
        wsl_emit_chunk(WSL_CHUNK_RANK, rank_buf, rn, NULL, 0);
}

void wsl_writer_note_driver(void *real_cuInit, int init_result)
{
    if (atomic_load(&driver_cuInit))
        return;
    atomic_store(&driver_init_result, init_result);
    void *expect = NULL;
    if (atomic_compare_exchange_strong(&driver_cuInit, &expect, real_cuInit)) {
        /* once per process, on the program's thread; the writer reads it after driver_pending */
        rank_at_init_len = rank_collect(rank_at_init, sizeof rank_at_init);
        atomic_store(&driver_pending, 1);
    }
}

/* The RANK chunk at the trace's start: the environment as the process has it now. */
void wsl_emit_rank_at_start(void)
{
    static char rank_start[WSL_RANK_MAX_PAYLOAD];
    size_t n = rank_collect(rank_start, sizeof rank_start);
    if (n)
        wsl_emit_chunk(WSL_CHUNK_RANK, rank_start, n, NULL, 0);
}

/* The DRIVER chunk and the RANK chunk of cuInit, once the driver came up
 * (the writer thread, sharing the program's descriptors). */
void wsl_emit_driver_if_pending(void)
{
    if (atomic_load(&driver_pending)) {
        atomic_store(&driver_pending, 0);
        emit_driver();
    }
}

/* Whether the program brought the driver up (cuInit). */
int wsl_driver_loaded(void) { return atomic_load(&driver_cuInit) != NULL; }

/* CUDA is not usable in a forked child. */
void wsl_driver_after_fork_child(void) { atomic_store(&driver_pending, 0); }
