/*
 * analysis_internal.h: shared by the files that read a trace into the run model (private to them):
 * the state of the trace being read, its API ids, and the functions the files call across.
 *   analysis.c         the run: category names, init, the run's finish (sorts, totals, phases), free
 *   analysis_read.c    one trace read into the run (and a rank's own run): its chunks, its merge at the end
 *   analysis_events.c  its API table and its events, handed to every analysis that reads them
 */
#ifndef WSLSHIM_ANALYSIS_INTERNAL_H
#define WSLSHIM_ANALYSIS_INTERNAL_H

#include "analysis.h"
#include "trace_reader.h"

struct trace_api {              /* one api id of the trace being read */
    uint32_t api;               /* index into run->apis */
    uint32_t variant;           /* index into that API's variants */
    uint16_t category;
    bool io;                    /* a file I/O call: its events also go to the I/O analysis */
    uint8_t mem;                /* enum wsl_mem_op: its events also go to the memory replay */
    uint8_t kern;               /* enum wsl_kern_op: its events also go to the kernel analysis */
    uint8_t launch_slot;        /* launches: the API's slot in run->kernels.launch_apis (the rank's own run,
                                   which reports no launch APIs, counts its launches in the same slots) */
    bool host;                  /* a CUDA call the host analysis reads (syncs, copies, submissions, allocations) */
    bool nvtx;                  /* the NVTX analysis reads all its events, not only those inside ranges */
    bool sampled;               /* a file call whose timing was sampled (WSL_API_IO_SAMPLED) */
    bool fold;                  /* folded file calls (WSL_CAT_IO_FOLD): taken as the calls it holds */
    bool shim_made;             /* an event the shim made, not a call of the program's (wslshim_kernel_name) */
    uint8_t phase;              /* enum wsl_phase_op: its events also go to the phase analysis */
    bool launch_route;          /* a kernel launch API read by the kernel, host and phase analyses and by no
                                   other (take_event's straight path) */
    bool gpu_route;             /* a GPU kernel's event (not sampled, not folded) read by the kernel and NVTX
                                   analyses and by no other (take_event's second straight path) */
    uint32_t solo_api, solo_variant; /* the same in the rank's own run, while it is read (wsl_run_read_trace) */
    uint64_t errors;
    uint64_t events;            /* events, set at the end (ticks.count + untimed_events before expansion) */
    uint64_t untimed;           /* sampled: calls not timed */
    uint64_t untimed_events;    /* and the events that stand for them */
    struct wsl_hist ticks;      /* durations in this trace's ticks (sampled: of the timed calls) */
};

struct trace_state {
    struct trace_api *by_id[WSL_MAX_API_IDS];
    uint32_t io_weight;         /* calls a timed sampled file call stands for (PROCESS io_timing) */
    uint32_t close_id;          /* the sampled close's id (a fold event's close), 0: none */
    bool have_events;
    uint64_t max_event_end;     /* ticks */
    bool have_end;
    uint64_t end_ticks;
    uint64_t max_clock_ns;      /* latest CLOCK sample, monotonic ns */
    uint64_t dropped_in_chunks, dropped_at_end;
    bool windowed;              /* only events in [window_t0, window_t1] (ticks) are taken */
    uint64_t window_t0, window_t1;
    struct wsl_io_trace *io;    /* from the PROCESS chunk on */
    /* A rank's trace read into its own run as well (wsl_run_read_trace): every analysis's state
     * serves both runs; the file I/O state, which writes into the run's tables, through a handle
     * for the rank's run (wsl_io_trace_also). */
    struct wsl_run *solo;
    struct wsl_io_trace *io_solo;
    struct wsl_mem_trace *mem;
    struct wsl_kern_trace *kern;
    struct wsl_nvtx_trace *nvtx;
    struct wsl_host_trace *host;
    struct wsl_phase_trace *phase;
    /* By op of the current EVENTS chunk (take_launch_run_ops), an op whose entry is a launch of the
     * launch route with result 0 (the same at each of its events) and whose launch found its row in
     * the kernel table: the kernel table's counter of it (wsl_kern_trace_op_counters) and its API's
     * histogram; else counter 0 (not known yet, or not one; op 0, a literal, stays 0). Two arrays,
     * each read at op * 8. op_launch_max: the highest set. */
    uint64_t op_counter[256];
    struct wsl_hist *op_hist[256];
    unsigned op_launch_max;
    bool bmi2;                  /* take_launch_run_ops' BMI2 build (wsl_reader_bmi2_path) */
    /* The NVTX step's figures counted on this reading (wsl_nvtx_track_batch): set on a run that
     * reports them, from the API table that names NVTX pushes on (one after the first events: not). */
    bool track, tracking, track_push;
    struct wsl_nvtx_track_before seen; /* events so far (have_events), their latest start, GPU kernels' launch */
    uint16_t track_cat[WSL_MAX_API_IDS];
    bool track_sampled[WSL_MAX_API_IDS];
};

/* analysis.c */
/* Frees what the process holds (not p itself). */
void wsl_free_process(struct wsl_process *p);

/* analysis_events.c */
/* An API_TABLE chunk: the trace's API ids, each found or added among the run's APIs. */
void wsl_take_api_table(struct wsl_run *run, struct trace_state *t, const struct wsl_item *it);
/* Tests only: true takes every event one by one (take_event), without the runs of launches and of
 * GPU kernels: the path the runs stand for, which tests/unit/test_runs.c compares them with. */
extern bool wsl_take_events_one_by_one;
extern bool wsl_take_events_without_ops; /* (tests: the runs of launches without the reader's ops) */
/* An EVENTS batch of thread tid to every analysis that reads it. */
void wsl_take_events(struct trace_state *t, uint32_t tid, uint64_t dropped, const struct wsl_event *ev, uint32_t n,
                     const uint8_t *ops, bool chunk_start);

#endif
