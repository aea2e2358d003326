/*
 * wslshim trace format, version 1.12 (WSL_TRACE_VERSION_MAJOR, _MINOR below). Shared by the shim (writer) and the
 * analyzer (reader); docs/trace-format.md explains it in prose.
 *
 * A trace file is one zstd stream (one or more frames). Decompressed, it is:
 *
 *   struct wsl_file_header                       (fixed, 32 bytes)
 *   chunk, chunk, ...                            (each: wsl_chunk_header + payload)
 *
 * Integers are in the writing host's byte order (little-endian on x86-64 and
 * aarch64 Linux); the file header's byte_order field lets a reader refuse the
 * other byte order with a clear message. Chunks are self-contained: a reader that meets a chunk cut
 * short (a killed process) stops there and keeps everything before it.
 * The writer ends a zstd frame (of whole chunks) at least every second, so a
 * killed process loses at most about a second of events.
 */
#ifndef WSLSHIM_TRACE_FORMAT_H
#define WSLSHIM_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WSL_TRACE_MAGIC "WSLSHIM"          /* 7 chars + NUL = 8 bytes */
#define WSL_TRACE_BYTE_ORDER 0x01020304u
#define WSL_TRACE_VERSION_MAJOR 1u         /* readers refuse a newer major */
#define WSL_TRACE_VERSION_MINOR 13u        /* additions readers may skip; 1.13 carries a thread's table of
                                              argument sets from one EVENTS_BITS chunk to its next in a frame
                                              (WSL_TBITS_CONTINUES), 1.12 writes PATHS_DROPPED
                                              (the dropped strings so far, for a trace cut short), 1.11 counts a fold's tells and
                                              fstats apart from its slots (WSL_FOLD_META), 1.10 writes
                                              EVENTS_BITS, 1.9
                                              EVENTS_GAPS, 1.8 adds
                                              the EMULATION chunk
                                              and the IO_WRITE and IO_DIR categories
                                              (include/wslshim/emulation.h), 1.7 numbers EVENTS chunks
                                              (wsl_events_header.seq), 1.6 folds untimed opens,
                                              1.5 folds untimed file
                                              calls (WSL_CAT_IO_FOLD), 1.4 writes EVENTS_PACKED,
                                              1.3: sampled file timing (docs/io.md) */
#define WSL_TRACE_VERSION_MINOR_FIRST 2u   /* 1.2 is the first published layout; 1.0 and 1.1 were
                                              development builds (row-wise events): refused */

/* No chunk payload may exceed this; a reader treats larger as corruption. */
#define WSL_CHUNK_MAX_PAYLOAD (64u << 20)

struct wsl_file_header {
    char magic[8];          /* WSL_TRACE_MAGIC, NUL-terminated */
    uint32_t byte_order;    /* WSL_TRACE_BYTE_ORDER as the writer stored it */
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size;   /* sizeof(struct wsl_file_header) */
    uint32_t record_size;   /* sizeof(struct wsl_event) */
    uint64_t reserved;
};
_Static_assert(sizeof(struct wsl_file_header) == 32, "file header is 32 bytes");

enum wsl_chunk_type {
    WSL_CHUNK_PROCESS = 1,  /* who wrote this trace; first chunk */
    WSL_CHUNK_API_TABLE = 2,/* event id -> symbol, base name, category */
    WSL_CHUNK_CLOCK = 3,    /* a (ticks, monotonic ns, realtime ns) sample */
    WSL_CHUNK_EVENTS = 4,   /* encoded events of one thread */
    WSL_CHUNK_DRIVER = 5,   /* driver version and GPUs, once the driver is up */
    WSL_CHUNK_END = 6,      /* clean close: totals; absent after a kill */
    WSL_CHUNK_STRING = 7,   /* id -> string (kernel names: later) */
    WSL_CHUNK_MOUNTS = 8,   /* the mount table the process sees (mountinfo text) */
    WSL_CHUNK_PATHS = 9,    /* path id -> path of files the program opened or looked up */
    WSL_CHUNK_GPU_MEMORY = 10, /* free and total memory of each device when the driver came up */
    WSL_CHUNK_RANK = 11,    /* distributed identity: rank variables, GPUs (KEY=VALUE strings) */
    /* 12: reserved for additions (NVTX) */
    WSL_CHUNK_EVENTS_PACKED = 13, /* encoded events of one thread, table-packed (1.4; replaces EVENTS) */
    WSL_CHUNK_EMULATION = 14, /* the run's WSLSHIM_EMULATE: SPEC and added costs (1.8; wslshim/emulation.h) */
    WSL_CHUNK_EVENTS_GAPS = 15, /* EVENTS_PACKED with the times as gaps (1.9; replaces EVENTS_PACKED) */
    WSL_CHUNK_EVENTS_BITS = 16, /* EVENTS_GAPS' times coded as bits by the writer (1.10; replaces EVENTS_GAPS) */
    WSL_CHUNK_PATHS_DROPPED = 17, /* the strings dropped so far, before the events that name them (1.12) */
};

struct wsl_chunk_header {
    uint32_t type;          /* enum wsl_chunk_type; unknown types are skipped */
    uint32_t size;          /* payload bytes that follow, <= WSL_CHUNK_MAX_PAYLOAD */
};
_Static_assert(sizeof(struct wsl_chunk_header) == 8, "chunk header is 8 bytes");

/* ---- PROCESS payload: this fixed part, then strings (see strings_size) ---- */
enum wsl_clock_kind {
    WSL_CLOCK_MONOTONIC_NS = 0, /* ticks are CLOCK_MONOTONIC nanoseconds */
    WSL_CLOCK_TSC = 1,          /* ticks are a cycle counter; CLOCK chunks map them */
};
#define WSL_PROC_WSL1 1u        /* flags: running under WSL 1 */
#define WSL_PROC_WSL2 2u        /* running under WSL 2 */
#define WSL_PROC_FORKED 4u      /* started by fork() of a traced parent */
#define WSL_PROC_EXECED 8u      /* the image of a traced process that called exec */

struct wsl_process_info {
    int32_t pid;
    int32_t ppid;
    uint32_t flags;         /* WSL_PROC_* */
    uint32_t clock_kind;    /* enum wsl_clock_kind */
    uint64_t start_ticks;   /* in the event clock */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC at start */
    uint64_t start_real_ns; /* CLOCK_REALTIME at start (Unix epoch) */
    uint32_t strings_size;  /* bytes of strings that follow */
    uint32_t io_timing;     /* since 1.3: events of API_TABLE ids flagged WSL_API_IO_SAMPLED
                               were timed 1 in io_timing calls (0 in older traces) */
    /* then NUL-terminated strings, in order: host name, executable path,
     * kernel release (uname -r), then the command line as argc NUL-terminated
     * arguments filling the rest of strings_size. */
};
_Static_assert(sizeof(struct wsl_process_info) == 48, "process info is 48 bytes");

/* ---- API_TABLE payload: u32 count, then per entry:
 *      u16 id, u16 category, u8 per_thread_stream, u8 flags (WSL_API_*; 0 before
 *      1.3), 2 reserved bytes, then NUL-terminated symbol and base name. -------- */
/* A file call whose timing is sampled (docs/io.md): an event of this id with
 * t_start != t_end was timed and stands for PROCESS io_timing calls of its kind;
 * one with t_start == t_end was not timed (its time is when it happened, to
 * within the writer's drain period), and an untimed IO_READ stands for a3 alike
 * calls in a row (same fd, path, bytes asked, bytes returned each, result; a2 is
 * their total bytes). */
#define WSL_API_IO_SAMPLED 1u

/* ---- folded file calls (1.5) -------------------------------------------------
 * An event of category WSL_CAT_IO_FOLD stands for untimed calls (sampled
 * timing) on one open file, folded by the thread that made them: stream is the
 * fd, a[0] the path id, a[1..3] up to three slots (0: none). A slot is calls
 * alike in a row: the API_TABLE id they were recorded under, how many, and the
 * value they returned: bytes for a read (which asked for at least one),
 * st_size for an fstat, for an lseek the offset << 1 | 1 for lseek(fd, offset,
 * SEEK_SET), | 0 for lseek(fd, 0, SEEK_CUR). result: bit 0
 * set when the file's close (the sampled close id, successful) follows the
 * slots, bit 1 on the fold's last event, bits 2-4 the index of a[1]'s slot in
 * the fold, bits 5-30 the fold's id. The shim writes an open fold's calls
 * ahead at each drain (events without bit 1), and its last events hold only
 * the calls not written yet: each call is in exactly one event. Its time is
 * when the last of its calls was, to within the writer's drain period. */
/* Counted apart (1.11): a fold's last event may also hold, in a[0]'s upper half,
 * two counts of calls made anywhere in the fold, each 16 bits: the API_TABLE id
 * (bits 0-9) and how many (bits 10-15, at most WSL_FOLD_META_CALLS_MAX). Bits
 * 32-47 count tells (lseek(fd, 0, SEEK_CUR)) that returned 0; bits 48-63
 * fstats that returned st_size = stream >> 32 (stream's low half is the fd).
 * Without them (a[0] < 2^32) stream is the fd, as before 1.11. */
#define WSL_FOLD_META_CALLS_MAX 63u
#define WSL_FOLD_META(api, calls) ((uint32_t)(api) | (uint32_t)(calls) << 10)
#define WSL_FOLD_META_API(m) ((unsigned)((m) & 0x3ffu))
#define WSL_FOLD_META_CALLS(m) ((unsigned)((m) >> 10 & WSL_FOLD_META_CALLS_MAX))
#define WSL_FOLD_META_TELLS(a0) ((uint32_t)((a0) >> 32 & 0xffffu))
#define WSL_FOLD_META_STATS(a0) ((uint32_t)((a0) >> 48))
#define WSL_FOLD_SLOTS_PER_EVENT 3u
#define WSL_FOLD_CALLS_MAX 0x3fffu
#define WSL_FOLD_VALUE_MAX ((1ull << 40) - 1)
#define WSL_FOLD_CLOSED 1
#define WSL_FOLD_LAST 2
#define WSL_FOLD_INDEX(result) ((uint32_t)(result) >> 2 & 7u)
#define WSL_FOLD_ID(result) ((uint32_t)(result) >> 5 & 0x3ffffffu)
#define WSL_FOLD_RESULT(id, index, flags) ((int32_t)(((id) & 0x3ffffffu) << 5 | (uint32_t)(index) << 2 | (flags)))
#define WSL_FOLD_SLOT(api, calls, value) \
    ((uint64_t)(api) | (uint64_t)(calls) << 10 | (uint64_t)(value) << 24)
#define WSL_FOLD_API(slot) ((unsigned)((slot) & 0x3ffu))
#define WSL_FOLD_CALLS(slot) ((unsigned)((slot) >> 10 & WSL_FOLD_CALLS_MAX))
#define WSL_FOLD_VALUE(slot) ((slot) >> 24)
#define WSL_FOLD_KEY(slot) ((slot) & ~((uint64_t)WSL_FOLD_CALLS_MAX << 10)) /* api and value */
/* A folded open (1.6): the slot's value holds the device the file lives on
 * and the flags it was opened with, (major << 20 | minor) << 7 | flag bits
 * (bits 0-1 the access mode, then the WSL_FOLD_OPEN_* below); the shim folds
 * an open only when its device fits (major < 4096, minor < 2^20) and its flags
 * are no others, and not when it knew the file's size (an event keeps it). */
#define WSL_FOLD_OPEN_CLOEXEC (1u << 2)
#define WSL_FOLD_OPEN_DIRECTORY (1u << 3)
#define WSL_FOLD_OPEN_NOFOLLOW (1u << 4)
#define WSL_FOLD_OPEN_NONBLOCK (1u << 5)
#define WSL_FOLD_OPEN_NOCTTY (1u << 6)
#define WSL_FOLD_OPEN_VALUE(major, minor, bits) (((uint64_t)(major) << 20 | (uint64_t)(minor)) << 7 | (bits))
#define WSL_FOLD_OPEN_DEV(value) WSL_DEV((value) >> 27, (value) >> 7 & 0xfffffu)
#define WSL_FOLD_OPEN_BITS(value) ((unsigned)((value) & 0x7fu))
#define WSL_IO_WRITE_SYNC (UINT64_MAX - 1) /* a3 of an IO_WRITE event that was fsync or fdatasync */
/* a2 of an IO_DIR event (1.8) */
enum { WSL_DIR_OP_RENAME = 0, WSL_DIR_OP_UNLINK = 1, WSL_DIR_OP_MKDIR = 2, WSL_DIR_OP_LIST = 3 };
/* a3 of a stat-like event: which call it was */
enum { WSL_STAT_KIND_STAT = 0, WSL_STAT_KIND_ACCESS = 1, WSL_STAT_KIND_STATX = 2 };

/* ---- CLOCK payload ---------------------------------------------------------- */
struct wsl_clock_sample {
    uint64_t ticks;
    uint64_t mono_ns;
    uint64_t real_ns;
};
_Static_assert(sizeof(struct wsl_clock_sample) == 24, "clock sample is 24 bytes");

/* ---- DRIVER payload: this, then `devices` x wsl_gpu_info ------------------ */
struct wsl_driver_info {
    int32_t driver_version; /* cuDriverGetVersion, e.g. 13000 */
    int32_t init_result;    /* CUresult of the first cuInit */
    uint32_t devices;
    uint32_t reserved;
    char libcuda_path[256]; /* the libcuda.so.1 this process loaded */
};
struct wsl_gpu_info {
    char name[256];
    uint64_t total_mem;
    int32_t cc_major, cc_minor;
};
_Static_assert(sizeof(struct wsl_driver_info) == 272, "driver info is 272 bytes");
_Static_assert(sizeof(struct wsl_gpu_info) == 272, "gpu info is 272 bytes");

/* ---- GPU_MEMORY payload: one per context, when the shim first sampled a launch in it ---- */
struct wsl_gpu_memory {
    uint64_t ticks;         /* when it was asked (event clock) */
    uint64_t free_bytes;    /* cuMemGetInfo of the context's device */
    uint64_t total_bytes;
    int32_t device;         /* ordinal */
    uint32_t reserved;
};
_Static_assert(sizeof(struct wsl_gpu_memory) == 32, "gpu memory record is 32 bytes");

/* ---- RANK payload: NUL-terminated "KEY=VALUE" strings, one after another, filling the
 * payload (the last one NUL-terminated too). Two kinds of keys:
 *  - the launcher's variables, as the process had them (only these names, when set):
 *    RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
 *    TORCHELASTIC_RUN_ID, OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, PMI_RANK, PMI_SIZE,
 *    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, CUDA_VISIBLE_DEVICES;
 *  - the shim's own facts, lower case and dotted (never an environment variable's name):
 *    "gpu.N.pci_bus_id" (cuDeviceGetPCIBusId of device ordinal N, once the driver is up).
 * Written when recording starts (the environment the process started with, read again
 * after an exec since the new image starts a new trace) and again once the driver is up
 * (the environment then, plus the GPUs). Each RANK chunk is complete: the last one read
 * replaces the earlier ones. Which GPU the process drives: the device of GPU_MEMORY. --- */
#define WSL_RANK_MAX_PAYLOAD 16384u

/* ---- END payload ------------------------------------------------------------ */
struct wsl_end_info {
    uint64_t end_ticks;
    uint64_t events_written;
    uint64_t events_dropped; /* events lost to full buffers, all threads */
    uint32_t threads;        /* threads that recorded anything */
    uint32_t paths_dropped;  /* strings (file paths, kernel and NVTX names) the shim had no room for,
                                all threads: their ids are in events, their text is not (since 1.9;
                                reserved and 0 before); a trace cut short: PATHS_DROPPED (1.12) */
};
_Static_assert(sizeof(struct wsl_end_info) == 32, "end info is 32 bytes");

/* ---- PATHS_DROPPED payload (1.12): strings (file paths, kernel and NVTX names) the shim
 * had no room for so far, all threads, counted as END's paths_dropped (but not capped at
 * 2^32 - 1). Written in a drain when the count grew since the last one written, before
 * that drain's events: every event that names a dropped string comes after a count that
 * includes it, so a trace cut short (SIGKILL: no END) still says names were lost. The
 * count never falls; a reader takes the largest seen (and END's). A later minor version
 * may make the payload longer: the rest is skipped. -------------------------------- */
struct wsl_paths_dropped_info {
    uint64_t paths_dropped;
};
_Static_assert(sizeof(struct wsl_paths_dropped_info) == 8, "paths dropped info is 8 bytes");

/* ---- STRING payload: u32 id, then bytes (not NUL-terminated) ---------------- */

/* ---- MOUNTS payload: the text of /proc/self/mountinfo (or of the file named by
 * WSLSHIM_MOUNTINFO) as the process saw it. Written at start and again whenever
 * the table changes (mounts made after start); each one replaces the previous
 * one for the events that follow it. Lines: "id parent major:minor root
 * mountpoint options [optional fields] - fstype source superoptions". -------- */

/* ---- PATHS payload (strings: file paths and kernel names): a sequence of entries, each
 *      u32 id, u32 length, then `length` bytes of path (not NUL-terminated),
 * as the program named the file (relative paths are made absolute with the
 * working directory at the time). Ids are unique in a process and never 0; an
 * I/O event's a0 refers to one. An entry is written before any EVENTS chunk
 * that refers to it in the same thread. ------------------------------------- */
struct wsl_path_entry_header {
    uint32_t id;
    uint32_t length;
};
#define WSL_PATH_MAX_LENGTH 4096u
#define WSL_DEV(major, minor) ((uint64_t)(major) << 32 | (uint32_t)(minor))

/* ---- Events ------------------------------------------------------------------
 * In memory an event is this fixed 64-byte record; the per-thread buffers hold
 * them and the reader hands them out. Field use by category:
 *
 *   category          stream  a0             a1              a2            a3
 *   LAUNCH            stream  CUfunction     GRID            BLOCK         shared mem
 *   GRAPH             stream  CUgraphExec
 *   HOSTFN            stream  host function
 *   ALLOC(_MANAGED)   stream  device pointer bytes           pool / flags  pitch
 *   FREE              stream  device pointer
 *   HOST_ALLOC        -       host pointer   bytes           flags
 *   HOST_FREE         -       host pointer
 *   HOST_(UN)REGISTER -       host pointer   bytes           flags
 *   SYNC_*            stream  event / ctx
 *   STREAM_WAIT       stream  event                                        flags
 *   EVENT_RECORD      stream  event                                        flags
 *   QUERY             stream
 *   COPY_*            stream  destination    source          bytes
 *   MEMSET(_ASYNC)    stream  destination                    bytes         value
 *   INIT              -       flags
 *   FUNC_NAME         -       handle out     name id         parent
 *     (cuModuleGetFunction, cuLibraryGetKernel: the function or kernel handle the
 *     call returned, 0 if it failed; the id of its name in PATHS; the module or
 *     library. cuKernelGetFunction: the function, no name, the kernel in a2.)
 *
 * File I/O (libc calls; result is 0 on success or -errno):
 *   category   stream          a0        a1                 a2              a3
 *   IO_OPEN    fd (-1 failed)  path id   device (WSL_DEV)   open flags      file size at open
 *   IO_READ    fd              path id   bytes asked        bytes read      offset, or ~0 (file position)
 *   IO_MMAP    fd              path id   length             offset          prot
 *   IO_STAT    fd, or ~0       path id   device of result   file size       what (0 stat, 1 access, 2 statx)
 *   IO_SEEK    fd              path id   offset             whence          resulting position
 *   IO_CLOSE   fd              path id
 * path id 0: unknown (an fd the shim did not see opened). Reads through stdio
 * (fread, fgets, getline...) are IO_READ with the FILE's fd. Device 0: a failed
 * open or stat. File size ~0 at open: not known there (the shim asks fstat only
 * for the first file opened in each directory); a later IO_STAT of the fd or
 * the bytes read up to end of file give it. A path relative to a directory fd
 * other than the working directory is written "<fd N>/name". In a forked child
 * the files inherited from the parent keep their ids and are named again.
 *
 * GPU timing (WSLSHIM_GPU_TIMING; the writer thread writes these once the GPU has run the work):
 *   category    stream   a0                  a1                  a2                    a3
 *   GPU_KERNEL  stream   CUfunction or       t_start of the      flags | launching     elapsed ns of the
 *                        CUgraphExec         LAUNCH/GRAPH event  tid << 32             event pair, raw
 *   t_start/t_end: when the work ran on the GPU, on the event clock (GPU time mapped
 *   through a reference event; flag WSL_GPU_MAPPED). Without a mapping t_start is the
 *   launch's t_end. Either way t_end - t_start is the corrected duration.
 *   Flags: WSL_GPU_IDLE_AT_SUBMIT the GPU had nothing left to run ahead of the kernel on its
 *   stream by the time the launch call returned (cuStreamQuery before the start event said
 *   so, or the start event ran before the call returned: starved), WSL_GPU_MAPPED,
 *   WSL_GPU_GRAPH the timed launch was cuGraphLaunch.
 *   result: the timed launch's configuration, wsl_launch_config() of the LAUNCH event's
 *   a1 (GRID) and a2 (BLOCK) as a uint32_t, never 0; 0: unknown (a graph launch, and every
 *   GPU_KERNEL event of shims before it was written: no minor version marks it, 0 says it).
 *
 * NVTX (include/wslshim/nvtx_api.def; an instant: t_start == t_end; result 0):
 *   category          stream      a0          a1                  a2
 *   NVTX_PUSH         domain id   name id     level               NVTX category
 *   NVTX_POP          domain id               level after the pop
 *   NVTX_START        domain id   name id     range id            NVTX category
 *   NVTX_END          domain id               range id
 *   NVTX_MARK         domain id   name id                         NVTX category
 *   NVTX_NAME_THREAD  -           name id     OS thread id named
 * Ids of names are PATHS entries whose bytes start with WSL_NVTX_NAME_MARK
 * (then the UTF-8 text, wide strings converted); domain id 0 is the default
 * domain, name id 0 a range without a message. A push or pop applies to the
 * recording thread's stack of that domain; level counts the thread's pushes
 * less its pops, all domains together (0 for a top-level push): a reader can
 * resynchronise its stack after dropped events. A range id is unique in the
 * process and its END may come from any thread.
 *
 * GRID = gridX | gridY << 32; BLOCK = gridZ | blockX << 16 | blockY << 32 | blockZ << 48.
 */
struct wsl_event {
    uint64_t t_start;       /* event clock ticks */
    uint64_t t_end;
    uint16_t api;           /* id in this trace's API table */
    uint16_t flags;         /* reserved, 0 */
    int32_t result;         /* CUresult (or -errno for libc calls, later) */
    uint64_t stream;
    uint64_t a[4];
};
_Static_assert(sizeof(struct wsl_event) == 64, "event record is 64 bytes");

enum wsl_category {
    WSL_CAT_OTHER = 0,
    WSL_CAT_INIT,
    WSL_CAT_LAUNCH,
    WSL_CAT_GRAPH,
    WSL_CAT_HOSTFN,
    WSL_CAT_ALLOC,
    WSL_CAT_ALLOC_MANAGED,
    WSL_CAT_FREE,
    WSL_CAT_HOST_ALLOC,
    WSL_CAT_HOST_FREE,
    WSL_CAT_HOST_REGISTER,
    WSL_CAT_HOST_UNREGISTER,
    WSL_CAT_SYNC_STREAM,
    WSL_CAT_SYNC_CTX,
    WSL_CAT_SYNC_EVENT,
    WSL_CAT_STREAM_WAIT,
    WSL_CAT_QUERY,
    WSL_CAT_EVENT_RECORD,
    WSL_CAT_COPY_ANY,
    WSL_CAT_COPY_ANY_ASYNC,
    WSL_CAT_COPY_HTOD,
    WSL_CAT_COPY_HTOD_ASYNC,
    WSL_CAT_COPY_DTOH,
    WSL_CAT_COPY_DTOH_ASYNC,
    WSL_CAT_COPY_DTOD,
    WSL_CAT_COPY_DTOD_ASYNC,
    WSL_CAT_MEMSET,
    WSL_CAT_MEMSET_ASYNC,
    WSL_CAT_IO_OPEN,
    WSL_CAT_IO_READ,
    WSL_CAT_IO_MMAP,
    WSL_CAT_IO_STAT,
    WSL_CAT_IO_SEEK,
    WSL_CAT_IO_CLOSE,
    WSL_CAT_FUNC_NAME,
    WSL_CAT_GPU_KERNEL,     /* a launch timed on the GPU (WSLSHIM_GPU_TIMING); written by the writer */
    WSL_CAT_NVTX_PUSH,      /* NVTX ranges and marks (docs/nvtx.md); fields in the table above */
    WSL_CAT_NVTX_POP,
    WSL_CAT_NVTX_START,
    WSL_CAT_NVTX_END,
    WSL_CAT_NVTX_MARK,
    WSL_CAT_NVTX_NAME_THREAD,
    WSL_CAT_IO_FOLD,        /* untimed file calls folded (1.5; the layout above) */
    WSL_CAT_IO_WRITE,       /* write, pwrite, writev, fwrite, fsync, fdatasync (1.8): stream fd, a0 path id
                               (0: an fd the shim did not see opened: stdout, a pipe...), a1 bytes asked (0 for
                               a sync), a2 bytes written, a3 offset (~0: none; ~1: a sync); always timed */
    WSL_CAT_IO_DIR,         /* rename, unlink, mkdir, opendir (1.8): stream the dirfd (AT_FDCWD) or -1, a0 the
                               path id of the path named (rename: the source), a1 its folder's device when known
                               (0: not), a2 enum wsl_dir_op; always timed */
    WSL_CAT_IO_WAIT,        /* poll, ppoll (added 2026-11-27; no minor version marks it: an older reader counts
                               them as "other" calls): stream the first pollfd's fd (-1: none), a0 its path id (0:
                               a pipe, a socket, an fd not seen opened), a1 nfds, a2 the timeout in ms as an i64 (-1:
                               none), a3 the descriptors ready (0 on a timeout or a failure); always timed.
                               sem_wait, sem_timedwait, sem_clockwait (ids of their own names): stream -1, a0 0,
                               a1 0, a2 a timed wait's clock as an i64 (-1: sem_wait), a3 0 */
    WSL_CAT_COUNT
};

/* First byte of a PATHS entry that holds an NVTX name (range, mark, domain, thread):
 * never the start of a file path or a kernel name. */
#define WSL_NVTX_NAME_MARK '\x01'

static inline int wsl_is_nvtx_category(unsigned category)
{
    return category >= WSL_CAT_NVTX_PUSH && category <= WSL_CAT_NVTX_NAME_THREAD;
}

#define WSL_GPU_IDLE_AT_SUBMIT 1u
#define WSL_GPU_MAPPED 2u
#define WSL_GPU_GRAPH 4u

#define WSL_GRID(gx, gy) ((uint64_t)(gx) | (uint64_t)(gy) << 32)
#define WSL_BLOCK(gz, bx, by, bz) \
    ((uint64_t)((gz) & 0xffffu) | (uint64_t)((bx) & 0xffffu) << 16 | \
     (uint64_t)((by) & 0xffffu) << 32 | (uint64_t)((bz) & 0xffffu) << 48)

/* A launch configuration (a LAUNCH event's GRID and BLOCK words) in 32 bits, never 0: what a
 * GPU_KERNEL event's result holds, so that a reader can tell the timed launch's grid and block
 * sizes apart (one function launched at several sizes runs for different times) without
 * keeping every launch until its sample comes. The shim computes it for timed launches only;
 * the reader for each launch whose configuration it has not just seen. Two configurations of
 * one function share a value with a chance of 2^-32. */
static inline uint32_t wsl_launch_config(uint64_t grid, uint64_t block)
{
    uint64_t h = (grid * 0x9e3779b97f4a7c15ull) ^ block; /* one-to-one in block for a grid */
    h *= 0xbf58476d1ce4e5b9ull;                           /* then a 64-bit mix (splitmix64's) */
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    uint32_t c = (uint32_t)(h >> 32);
    return c ? c : 1u;
}

/* ---- EVENTS payload -----------------------------------------------------------
 * struct wsl_events_header, then `encoded_size` bytes holding `count` events of
 * one thread in columns (repeating columns, api ids and masks, compress into
 * long zstd matches; only the noisy ones, times and durations, stay literals):
 *
 *   u32 api_bytes, u32 dt_bytes, u32 dur_bytes   column directory (12 bytes)
 *   api column     `count` varints: api id
 *   mask column    `count` bytes: bit0 result, bit1 stream, bit2..5 a[0..3]
 *                  differ from the previous event of the same api; bits 6, 7 are 0
 *   dt column      `count` varints: zigzag(t_start - previous event's t_start),
 *                  the first against base_ticks
 *   dur column     `count` varints: t_end - t_start (0 when negative)
 *   fields column  the rest: for each event in order, for each set mask bit in
 *                  bit order: varint zigzag(result) | varint (value ^ previous)
 *
 * "Previous" is the previous event of the same api id in this chunk (all zero
 * at the chunk's start): decoding needs no state from other chunks. The fields
 * column has encoded_size - 12 - api_bytes - count - dt_bytes - dur_bytes
 * bytes; after `count` events every column must be used up exactly. */
struct wsl_events_header {
    uint32_t tid;
    uint32_t count;
    uint64_t base_ticks;
    uint64_t dropped;       /* events this thread lost since its previous chunk */
    uint32_t encoded_size;  /* bytes that follow: column directory and columns */
    uint32_t seq;           /* 1.7: 1, 2, 3... over the trace's EVENTS chunks in file order, all
                               threads (a reader sees lost, repeated or reordered frames);
                               0: not numbered (older writers, where it was reserved) */
};
_Static_assert(sizeof(struct wsl_events_header) == 32, "events header is 32 bytes");

#define WSL_MAX_API_IDS 1024u
#define WSL_EVENTS_DIRECTORY_SIZE 12u
/* Worst case bytes per event, by column (api ids < WSL_MAX_API_IDS take 2). */
#define WSL_COL_API_MAX 2u
#define WSL_COL_MASK_MAX 1u
#define WSL_COL_DT_MAX 10u
#define WSL_COL_DUR_MAX 10u
#define WSL_COL_FIELDS_MAX (5u + 5u * 10u)
#define WSL_EVENT_MAX_ENCODED \
    (WSL_COL_API_MAX + WSL_COL_MASK_MAX + WSL_COL_DT_MAX + WSL_COL_DUR_MAX + WSL_COL_FIELDS_MAX)
_Static_assert(WSL_MAX_API_IDS <= 1u << 14, "api ids fit a 2-byte varint");

static inline uint8_t *wsl_put_varint(uint8_t *p, uint64_t v)
{
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Returns the byte after the varint, or NULL when it runs past end or is
 * longer than 10 bytes. */
static inline const uint8_t *wsl_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    if (__builtin_expect(end - p >= 2, 1)) { /* the common lengths, 1 and 2 bytes */
        if (p[0] < 0x80) {
            *out = p[0];
            return p + 1;
        }
        if (p[1] < 0x80) {
            *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            return p + 2;
        }
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return NULL;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

static inline uint64_t wsl_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t wsl_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Writes the fields of ev that differ from the previous same-api event pv at f,
 * in mask bit order, ORs their bits into *mask and makes pv ev's fields;
 * returns the byte after them (the inverse of wsl_apply_fields). */
static inline uint8_t *wsl_put_fields(struct wsl_event *pv, const struct wsl_event *ev, uint8_t *f, unsigned *mask)
{
    const uint64_t x[5] = {ev->stream ^ pv->stream, ev->a[0] ^ pv->a[0], ev->a[1] ^ pv->a[1], ev->a[2] ^ pv->a[2],
                           ev->a[3] ^ pv->a[3]};
    if (ev->result != pv->result) {
        *mask |= 1;
        f = wsl_put_varint(f, wsl_zigzag(ev->result));
    }
    for (int i = 0; i < 5; i++)
        if (x[i]) {
            *mask |= 2u << i;
            f = wsl_put_varint(f, x[i]);
        }
    pv->result = ev->result;
    pv->stream = ev->stream;
    memcpy(pv->a, ev->a, sizeof pv->a);
    return f;
}

/* The fields of an event that differ from the previous same-api event pv, in
 * mask bit order (bit 0 result, bit 1 stream, bits 2..5 a[0]..a[3]), applied to
 * pv; returns the byte after them, NULL when they run past end. */
static inline const uint8_t *wsl_apply_fields(struct wsl_event *pv, unsigned mask, const uint8_t *p,
                                              const uint8_t *end)
{
    uint64_t v;
    if (mask & 1) {
        if (!(p = wsl_get_varint(p, end, &v)))
            return NULL;
        pv->result = (int32_t)wsl_unzigzag(v);
    }
    if (mask & 2) {
        if (!(p = wsl_get_varint(p, end, &v)))
            return NULL;
        pv->stream ^= v;
    }
    for (unsigned m = mask >> 2; m; m &= m - 1) {
        if (!(p = wsl_get_varint(p, end, &v)))
            return NULL;
        pv->a[__builtin_ctz(m)] ^= v;
    }
    return p;
}

/* Per-chunk codec state, one slot per api id, shared by encoder and decoder. */
struct wsl_codec_state {
    uint64_t prev_t;
    struct wsl_event prev[WSL_MAX_API_IDS];
};

static inline void wsl_codec_reset(struct wsl_codec_state *st, uint64_t base_ticks)
{
    memset(st, 0, sizeof *st);
    st->prev_t = base_ticks;
}

/* ---- encoding: the writer appends each event to five column buffers --------- */

/* Where the next byte of each column goes. Each buffer must have room for
 * WSL_COL_*_MAX bytes per event still to be encoded (the api column may be
 * written one byte past what it keeps). */
struct wsl_columns_out {
    uint8_t *api, *mask, *dt, *dur, *fld;
};

/* Appends ev to the columns. ev->api must be < WSL_MAX_API_IDS. An event whose
 * arguments repeat the previous call's (the common case) takes the short path:
 * one comparison of all fields, then api, mask 0, dt and dur. */
static inline void wsl_event_encode_columns(struct wsl_codec_state *st, const struct wsl_event *ev,
                                            struct wsl_columns_out *o)
{
    const unsigned api = ev->api, two = api >= 0x80;
    struct wsl_event *pv = &st->prev[api];
    const uint64_t t = ev->t_start, t_end = ev->t_end;
    const uint64_t dt = wsl_zigzag((int64_t)(t - st->prev_t)), dur = t_end >= t ? t_end - t : 0;
    const uint64_t diff = (uint32_t)(ev->result ^ pv->result) | (ev->stream ^ pv->stream) | (ev->a[0] ^ pv->a[0]) |
                          (ev->a[1] ^ pv->a[1]) | (ev->a[2] ^ pv->a[2]) | (ev->a[3] ^ pv->a[3]);
    st->prev_t = t;
    unsigned mask = 0;
    if (__builtin_expect(diff != 0, 0)) {
        /* Read the fields again here rather than keep them live through the
         * short path (a compiler barrier, no instruction). */
        __asm__ volatile("" ::: "memory");
        o->fld = wsl_put_fields(pv, ev, o->fld, &mask);
    }
    uint8_t *pa = o->api;
    pa[0] = (uint8_t)(api | two << 7);
    pa[1] = (uint8_t)(api >> 7);
    o->api = pa + 1 + two;
    *o->mask++ = (uint8_t)mask;
    o->dt = wsl_put_varint(o->dt, dt);
    o->dur = wsl_put_varint(o->dur, dur);
}

/* ---- decoding ------------------------------------------------------------------ */

/* An event's times from its start delta (zigzag) against the previous start, and its duration. */
static inline void wsl_decode_times(struct wsl_codec_state *st, struct wsl_event *ev, uint64_t dt, uint64_t dur)
{
    ev->t_start = st->prev_t + (uint64_t)wsl_unzigzag(dt);
    ev->t_end = ev->t_start + dur;
    st->prev_t = ev->t_start;
}

struct wsl_columns_in {
    const uint8_t *api, *api_end, *mask, *mask_end, *dt, *dt_end, *dur, *dur_end, *fld, *fld_end;
};

enum wsl_columns_status {
    WSL_COLUMNS_OK = 0,
    WSL_COLUMNS_NO_DIRECTORY,   /* encoded bytes shorter than the column directory */
    WSL_COLUMNS_COUNT_TOO_BIG,  /* `count` events cannot fit the api, dt or dur column */
    WSL_COLUMNS_OVERRUN,        /* the columns add up to more than the encoded bytes */
};

/* Splits the `size` encoded bytes at p (what follows the events header) into
 * columns for `count` events; reads the directory, checks that the columns fit
 * and that `count` is at most the bytes of each varint column (so a hostile
 * count cannot make a decoder loop long). */
static inline enum wsl_columns_status wsl_columns_open(struct wsl_columns_in *in, const uint8_t *p, size_t size,
                                                       uint32_t count)
{
    uint32_t dir[3];
    if (size < WSL_EVENTS_DIRECTORY_SIZE)
        return WSL_COLUMNS_NO_DIRECTORY;
    memcpy(dir, p, sizeof dir);
    if (count > dir[0] || count > dir[1] || count > dir[2])
        return WSL_COLUMNS_COUNT_TOO_BIG;
    uint64_t used = (uint64_t)WSL_EVENTS_DIRECTORY_SIZE + dir[0] + count + dir[1] + dir[2];
    if (used > size)
        return WSL_COLUMNS_OVERRUN;
    p += WSL_EVENTS_DIRECTORY_SIZE;
    in->api = p;
    in->api_end = p += dir[0];
    in->mask = p;
    in->mask_end = p += count;
    in->dt = p;
    in->dt_end = p += dir[1];
    in->dur = p;
    in->dur_end = p += dir[2];
    in->fld = p;
    in->fld_end = p + (size - (size_t)used);
    return WSL_COLUMNS_OK;
}

/* Decodes the next event; returns 0 on malformed input (ids >= api_limit, a
 * varint that is bad or runs past its column, reserved mask bits, a column
 * used up). On failure the columns are left anywhere and st must be reset. */
static inline int wsl_event_decode_columns(struct wsl_codec_state *st, struct wsl_columns_in *in,
                                           uint32_t api_limit, struct wsl_event *ev)
{
    uint64_t id, dt, dur;
    const uint8_t *p;
    if (!(p = wsl_get_varint(in->api, in->api_end, &id)) || id >= api_limit || id >= WSL_MAX_API_IDS)
        return 0;
    in->api = p;
    if (in->mask >= in->mask_end)
        return 0;
    unsigned mask = *in->mask++;
    if (mask & 0xc0)
        return 0;
    if (!(p = wsl_get_varint(in->dt, in->dt_end, &dt)))
        return 0;
    in->dt = p;
    if (!(p = wsl_get_varint(in->dur, in->dur_end, &dur)))
        return 0;
    in->dur = p;
    struct wsl_event *pv = &st->prev[id];
    if (mask) {
        if (!(p = wsl_apply_fields(pv, mask, in->fld, in->fld_end)))
            return 0;
        in->fld = p;
    }
    *ev = *pv;
    ev->api = (uint16_t)id;
    wsl_decode_times(st, ev, dt, dur);
    return 1;
}

/* Bytes left unread in the columns: 0 once `count` events used them up exactly. */
static inline size_t wsl_columns_left(const struct wsl_columns_in *in)
{
    return (size_t)(in->api_end - in->api) + (size_t)(in->mask_end - in->mask) + (size_t)(in->dt_end - in->dt) +
           (size_t)(in->dur_end - in->dur) + (size_t)(in->fld_end - in->fld);
}

/* True when every column is used up. */
static inline int wsl_columns_done(const struct wsl_columns_in *in) { return wsl_columns_left(in) == 0; }

#endif /* WSLSHIM_TRACE_FORMAT_H */

/* The packed event codecs (EVENTS_PACKED, EVENTS_GAPS, EVENTS_BITS), after the definitions they use. */
#include "wslshim/trace_codec.h"
