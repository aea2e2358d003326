/*
 * --sqlite FILE (export_sqlite.h): schema in docs/sqlite.md; keep the two in step.
 */
#define _GNU_SOURCE
#include "export_sqlite.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_analysis.h"
#include "trace_reader.h"
#include "u64_map.h"
#include "util.h"

#ifndef WSLSHIM_HAVE_SQLITE

bool wsl_sqlite_available(void) { return false; }

int wsl_sqlite_export(const struct wsl_run *run, const char *path, char *err, size_t errlen)
{
    (void)run;
    (void)path;
    snprintf(err, errlen, "--sqlite: this wslshim-report was built without SQLite (install libsqlite3-dev and "
                          "configure again)");
    return -1;
}

#else
#include <sqlite3.h>

bool wsl_sqlite_available(void) { return true; }

#define SCHEMA_VERSION 1

static const char schema_sql[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value);\n"
    "CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER, ppid INTEGER, exe TEXT, command_line TEXT,\n"
    "  host TEXT, wsl INTEGER, start_ns INTEGER, end_ns INTEGER, events INTEGER, dropped INTEGER,\n"
    "  truncated INTEGER, gpu_device INTEGER, rank TEXT, compiler INTEGER, trace_path TEXT);\n"
    "CREATE TABLE threads (process_id INTEGER, tid INTEGER, name TEXT, api_calls INTEGER, io_calls INTEGER,\n"
    "  first_ns INTEGER, last_ns INTEGER, PRIMARY KEY (process_id, tid));\n"
    "CREATE TABLE api_calls (process_id INTEGER, tid INTEGER, name TEXT, symbol TEXT, category TEXT,\n"
    "  start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, result INTEGER, stream INTEGER,\n"
    "  a0 INTEGER, a1 INTEGER, a2 INTEGER, a3 INTEGER);\n"
    "CREATE TABLE kernels (id INTEGER PRIMARY KEY, name TEXT, mangled TEXT, launches INTEGER, timed INTEGER,\n"
    "  gpu_ns INTEGER, mean_gpu_ns INTEGER, est_gpu_ns INTEGER, idle_at_submit INTEGER, captured INTEGER);\n"
    "CREATE TABLE gpu_samples (process_id INTEGER, launch_tid INTEGER, stream INTEGER, handle INTEGER,\n"
    "  kernel TEXT, graph INTEGER, start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER,\n"
    "  launch_ns INTEGER, idle_at_submit INTEGER, mapped INTEGER, name_id INTEGER);\n"
    "CREATE TABLE nvtx_ranges (process_id INTEGER, tid INTEGER, domain TEXT, name TEXT, kind TEXT,\n"
    "  start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, depth INTEGER, closed INTEGER,\n"
    "  domain_id INTEGER, name_id INTEGER);\n"
    "CREATE TABLE phases (process_id INTEGER, phase TEXT, start_ns INTEGER, end_ns INTEGER,\n"
    "  duration_ns INTEGER, steps INTEGER, step_ns INTEGER);\n"
    "CREATE TABLE files (process_id INTEGER, path_id INTEGER, path TEXT, fstype TEXT, opens INTEGER,\n"
    "  reads INTEGER, bytes_read INTEGER, read_ns INTEGER, PRIMARY KEY (process_id, path_id));\n"
    "CREATE TABLE io_calls (process_id INTEGER, tid INTEGER, call TEXT, symbol TEXT, kind TEXT, start_ns INTEGER,\n"
    "  duration_ns INTEGER, timed INTEGER, calls INTEGER, fd INTEGER, path_id INTEGER, bytes INTEGER,\n"
    "  result INTEGER, fstype TEXT);\n"
    "CREATE TEMP TABLE strings (process_id INTEGER, id INTEGER, text TEXT, PRIMARY KEY (process_id, id));\n"
    "CREATE TEMP TABLE thread_names (process_id INTEGER, tid INTEGER, name_id INTEGER);\n";

/* After the rows: names resolved, derived tables filled, indexes made (faster after the inserts). */
static const char finish_sql[] =
    "UPDATE nvtx_ranges SET name = coalesce((SELECT text FROM strings s WHERE s.process_id = nvtx_ranges.process_id"
    "  AND s.id = nvtx_ranges.name_id), '(unnamed)');\n"
    "UPDATE nvtx_ranges SET domain = (SELECT text FROM strings s WHERE s.process_id = nvtx_ranges.process_id"
    "  AND s.id = nvtx_ranges.domain_id) WHERE domain_id != 0;\n"
    "UPDATE gpu_samples SET kernel = (SELECT text FROM strings s WHERE s.process_id = gpu_samples.process_id"
    "  AND s.id = gpu_samples.name_id) WHERE name_id != 0;\n"
    "UPDATE gpu_samples SET kernel = '(graph)' WHERE graph = 1;\n"
    "INSERT INTO files SELECT c.process_id, c.path_id, s.text,\n"
    "  max(c.fstype),\n"
    "  sum(CASE WHEN c.kind = 'open' THEN c.calls ELSE 0 END),\n"
    "  sum(CASE WHEN c.kind = 'read' THEN c.calls ELSE 0 END),\n"
    "  sum(CASE WHEN c.kind = 'read' THEN c.bytes ELSE 0 END),\n"
    "  sum(CASE WHEN c.kind = 'read' THEN c.duration_ns ELSE 0 END)\n"
    "  FROM io_calls c LEFT JOIN strings s ON s.process_id = c.process_id AND s.id = c.path_id\n"
    "  WHERE c.path_id != 0 GROUP BY c.process_id, c.path_id;\n"
    "INSERT INTO threads SELECT process_id, tid, NULL, sum(api), sum(io), min(t0), max(t1) FROM (\n"
    "  SELECT process_id, tid, 1 AS api, 0 AS io, start_ns AS t0, end_ns AS t1 FROM api_calls\n"
    "  UNION ALL SELECT process_id, tid, 0, calls, start_ns, start_ns + duration_ns FROM io_calls\n"
    "  UNION ALL SELECT process_id, tid, 0, 0, start_ns, end_ns FROM nvtx_ranges) GROUP BY process_id, tid;\n"
    "UPDATE threads SET name = (SELECT s.text FROM thread_names n JOIN strings s ON s.process_id = n.process_id\n"
    "  AND s.id = n.name_id WHERE n.process_id = threads.process_id AND n.tid = threads.tid);\n"
    "CREATE INDEX api_calls_name ON api_calls (name);\n"
    "CREATE INDEX api_calls_time ON api_calls (process_id, tid, start_ns);\n"
    "CREATE INDEX io_calls_path ON io_calls (process_id, path_id);\n"
    "CREATE INDEX io_calls_time ON io_calls (process_id, tid, start_ns);\n"
    "CREATE INDEX gpu_samples_time ON gpu_samples (start_ns);\n"
    "CREATE INDEX gpu_samples_kernel ON gpu_samples (kernel);\n"
    "CREATE INDEX nvtx_ranges_name ON nvtx_ranges (name);\n"
    "CREATE INDEX nvtx_ranges_time ON nvtx_ranges (process_id, tid, start_ns);\n"
    "CREATE INDEX kernels_mangled ON kernels (mangled);\n"
    "CREATE INDEX files_path ON files (path);\n";

enum stmt_id { ST_PROC, ST_API, ST_IO, ST_GPU, ST_NVTX, ST_STRING, ST_THREAD_NAME, ST_PHASE, ST_KERNEL, ST_META, ST_COUNT };

static const char *const stmt_sql[ST_COUNT] = {
    [ST_PROC] = "INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_API] = "INSERT INTO api_calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_IO] = "INSERT INTO io_calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_GPU] = "INSERT INTO gpu_samples VALUES (?,?,?,?,NULL,?,?,?,?,?,?,?,?)",
    [ST_NVTX] = "INSERT INTO nvtx_ranges VALUES (?,?,NULL,NULL,?,?,?,?,?,?,?,?)",
    [ST_STRING] = "INSERT OR REPLACE INTO strings VALUES (?,?,?)",
    [ST_THREAD_NAME] = "INSERT INTO thread_names VALUES (?,?,?)",
    [ST_PHASE] = "INSERT INTO phases VALUES (?,?,?,?,?,?,?)",
    [ST_KERNEL] = "INSERT INTO kernels VALUES (?,?,?,?,?,?,?,?,?,?)",
    [ST_META] = "INSERT INTO meta VALUES (?,?)",
};

struct exporter {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    const struct wsl_run *run;
    char *err;
    size_t errlen;
    bool failed;
};

__attribute__((format(printf, 2, 3))) static void set_error(struct exporter *x, const char *fmt, ...)
{
    if (x->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, x->errlen, fmt, ap);
    va_end(ap);
    x->failed = true;
}

/* Binds the values (after the statement's own) and steps it. Values: 'i' int64, 'u' uint64 (as int64, its
 * bits kept: handles and pointers), 't' text (NULL: SQL NULL), 'n' NULL. */
static void row(struct exporter *x, enum stmt_id id, const char *types, ...)
{
    if (x->failed)
        return;
    sqlite3_stmt *s = x->st[id];
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types[i]; i++) {
        switch (types[i]) {
        case 'i':
            sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
            break;
        case 'u':
            sqlite3_bind_int64(s, i + 1, (int64_t)va_arg(ap, uint64_t));
            break;
        case 't': {
            const char *t = va_arg(ap, const char *);
            if (t)
                sqlite3_bind_text(s, i + 1, t, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(s, i + 1);
            break;
        }
        default:
            sqlite3_bind_null(s, i + 1);
            break;
        }
    }
    va_end(ap);
    if (sqlite3_step(s) != SQLITE_DONE)
        set_error(x, "--sqlite: %s", sqlite3_errmsg(x->db));
    sqlite3_reset(s);
}

/* ns from the run's start (negative values kept: a clock fit's error before the first process). */
static int64_t rel(const struct exporter *x, uint64_t ns)
{
    return (int64_t)(ns - x->run->start_ns);
}

/* ---- the per-event pass over one trace ---- */

struct api_info {
    bool known, sampled, io, fold;
    uint16_t category;
    char *base, *symbol;
};

struct open_range {         /* an NVTX push not popped yet, or a start not ended */
    uint32_t tid;
    uint64_t domain, name, start_ticks, key; /* key: range id (start/end) or 0 (push) */
    uint32_t depth;
    bool push;
};

struct trace_pass {
    struct exporter *x;
    int64_t proc_id;
    const struct wsl_process *proc;
    const struct wsl_clock_map *clock;
    struct api_info api[WSL_MAX_API_IDS];
    unsigned close_id;
    struct wsl_u64_map names;   /* kernel handle -> name id (FUNC_NAME) */
    struct open_range *open;
    size_t open_count, open_cap;
    const struct wsl_mount_table *mounts;
    uint64_t last_ticks;
    uint32_t io_weight;         /* calls a timed sampled file call stands for (PROCESS io_timing) */
};

static const char *io_kind(unsigned category)
{
    switch (category) {
    case WSL_CAT_IO_OPEN: return "open";
    case WSL_CAT_IO_READ: return "read";
    case WSL_CAT_IO_MMAP: return "mmap";
    case WSL_CAT_IO_STAT: return "stat";
    case WSL_CAT_IO_SEEK: return "seek";
    case WSL_CAT_IO_CLOSE: return "close";
    default: return "other";
    }
}

static unsigned pass_fold_category(void *ctx, unsigned id)
{
    const struct trace_pass *p = ctx;
    return id < WSL_MAX_API_IDS && p->api[id].known && p->api[id].sampled ? p->api[id].category : WSL_CAT_COUNT;
}

static void io_row(struct trace_pass *p, uint32_t tid, const struct api_info *a, const struct wsl_event *ev,
                   uint64_t calls)
{
    unsigned cat = a->category;
    bool timed = !a->sampled || ev->t_end != ev->t_start;
    uint64_t dur = timed ? wsl_clock_duration_ns(p->clock, ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0) : 0;
    if (a->sampled && timed)
        dur *= p->io_weight; /* a timed sampled call stands for io_timing calls' time (docs/io.md) */
    int64_t bytes = cat == WSL_CAT_IO_READ ? (int64_t)ev->a[2] : cat == WSL_CAT_IO_MMAP ? (int64_t)ev->a[1] : 0;
    const char *fstype = NULL;
    if (cat == WSL_CAT_IO_OPEN && ev->a[1] && p->mounts) {
        const struct wsl_mount *m = wsl_mounts_find(p->mounts, ev->a[1], NULL, 0);
        fstype = m ? m->fstype : NULL;
    }
    row(p->x, ST_IO, "iitttiiiiiiiit", p->proc_id, (int64_t)tid, a->base, a->symbol, io_kind(cat),
        rel(p->x, wsl_clock_to_ns(p->clock, ev->t_start)), (int64_t)dur, (int64_t)timed, (int64_t)calls,
        (int64_t)(int32_t)(uint32_t)ev->stream, (int64_t)(uint32_t)ev->a[0], bytes, (int64_t)ev->result, fstype);
}

static void nvtx_emit(struct trace_pass *p, const struct open_range *r, uint64_t end_ticks, bool closed)
{
    uint64_t t0 = wsl_clock_to_ns(p->clock, r->start_ticks), t1 = wsl_clock_to_ns(p->clock, end_ticks);
    row(p->x, ST_NVTX, "iitiiiiiii", p->proc_id, (int64_t)r->tid, r->push ? "push" : "start", rel(p->x, t0),
        rel(p->x, t1), (int64_t)(t1 >= t0 ? t1 - t0 : 0), (int64_t)r->depth, (int64_t)closed, (int64_t)r->domain,
        (int64_t)r->name);
}

static void open_range_add(struct trace_pass *p, struct open_range r)
{
    if (p->open_count == p->open_cap) {
        p->open_cap = p->open_cap ? 2 * p->open_cap : 64;
        p->open = xrealloc(p->open, p->open_cap * sizeof *p->open);
    }
    p->open[p->open_count++] = r;
}

static void open_range_take(struct trace_pass *p, size_t i, uint64_t end_ticks)
{
    nvtx_emit(p, &p->open[i], end_ticks, true);
    p->open[i] = p->open[--p->open_count];
}

static void nvtx_event(struct trace_pass *p, uint32_t tid, unsigned cat, const struct wsl_event *ev)
{
    switch (cat) {
    case WSL_CAT_NVTX_PUSH:
        open_range_add(p, (struct open_range){.tid = tid, .domain = ev->stream, .name = ev->a[0],
                                              .start_ticks = ev->t_start, .depth = (uint32_t)ev->a[1], .push = true});
        break;
    case WSL_CAT_NVTX_POP: {
        /* the innermost open push of this thread and domain: the latest added (order is kept
         * within a thread's pushes since removal swaps with the last, so search by depth) */
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < p->open_count; i++)
            if (p->open[i].push && p->open[i].tid == tid && p->open[i].domain == ev->stream &&
                (best == SIZE_MAX || p->open[i].start_ticks >= p->open[best].start_ticks))
                best = i;
        if (best != SIZE_MAX)
            open_range_take(p, best, ev->t_start);
        break;
    }
    case WSL_CAT_NVTX_START:
        open_range_add(p, (struct open_range){.tid = tid, .domain = ev->stream, .name = ev->a[0],
                                              .start_ticks = ev->t_start, .key = ev->a[1], .push = false});
        break;
    case WSL_CAT_NVTX_END:
        for (size_t i = 0; i < p->open_count; i++)
            if (!p->open[i].push && p->open[i].key == ev->a[1]) {
                open_range_take(p, i, ev->t_start);
                break;
            }
        break;
    case WSL_CAT_NVTX_NAME_THREAD:
        row(p->x, ST_THREAD_NAME, "iii", p->proc_id, (int64_t)(uint32_t)ev->a[1], (int64_t)ev->a[0]);
        break;
    default:
        break;
    }
}

static void take_events(struct trace_pass *p, uint32_t tid, const struct wsl_event *evs, uint32_t n)
{
    for (uint32_t i = 0; i < n && !p->x->failed; i++) {
        const struct wsl_event *ev = &evs[i];
        if (ev->t_end > p->last_ticks)
            p->last_ticks = ev->t_end;
        if (ev->api >= WSL_MAX_API_IDS || !p->api[ev->api].known)
            continue;
        const struct api_info *a = &p->api[ev->api];
        unsigned cat = a->category;
        if (a->fold) {
            struct wsl_fold_call c[WSL_FOLD_EVENT_CALLS];
            unsigned k = wsl_fold_calls(ev, p->close_id, pass_fold_category, p, c);
            for (unsigned j = 0; j < k; j++)
                io_row(p, tid, &p->api[c[j].ev.api], &c[j].ev, c[j].calls);
            continue;
        }
        if (a->io) {
            io_row(p, tid, a, ev, wsl_event_calls(cat, a->sampled, ev));
            continue;
        }
        uint64_t t0 = wsl_clock_to_ns(p->clock, ev->t_start), t1 = wsl_clock_to_ns(p->clock, ev->t_end);
        if (cat == WSL_CAT_GPU_KERNEL) {
            struct wsl_u64_slot *s = ev->a[0] ? wsl_u64_map_find(&p->names, ev->a[0]) : NULL;
            bool graph = (ev->a[2] & WSL_GPU_GRAPH) != 0;
            row(p->x, ST_GPU, "iiuuiiiiiiii", p->proc_id, (int64_t)(ev->a[2] >> 32), ev->stream, ev->a[0],
                (int64_t)graph, rel(p->x, t0), rel(p->x, t1), (int64_t)(t1 >= t0 ? t1 - t0 : 0),
                rel(p->x, wsl_clock_to_ns(p->clock, ev->a[1])), (int64_t)((ev->a[2] & WSL_GPU_IDLE_AT_SUBMIT) != 0),
                (int64_t)((ev->a[2] & WSL_GPU_MAPPED) != 0), (int64_t)(s && !graph ? s->value : 0));
            continue;
        }
        if (cat == WSL_CAT_FUNC_NAME && ev->a[0] && ev->a[1]) {
            struct wsl_u64_slot *s = wsl_u64_map_find(&p->names, ev->a[0]);
            if (s)
                s->value = ev->a[1];
            else
                wsl_u64_map_insert(&p->names, ev->a[0], ev->a[1]);
        }
        if (wsl_is_nvtx_category(cat))
            nvtx_event(p, tid, cat, ev);
        row(p->x, ST_API, "iitttiiiiuuuuu", p->proc_id, (int64_t)tid, a->base, a->symbol, wsl_category_name(cat),
            rel(p->x, t0), rel(p->x, t1), (int64_t)(t1 >= t0 ? t1 - t0 : 0), (int64_t)ev->result, ev->stream, ev->a[0],
            ev->a[1], ev->a[2], ev->a[3]);
    }
}

static void take_paths(struct trace_pass *p, const struct wsl_item *it)
{
    size_t pos = 0;
    struct wsl_path_ref ref;
    while (!p->x->failed && wsl_paths_next(it, &pos, &ref)) {
        const char *b = ref.bytes;
        uint32_t len = ref.length;
        if (len && b[0] == WSL_NVTX_NAME_MARK)
            b++, len--;
        sqlite3_stmt *s = p->x->st[ST_STRING];
        sqlite3_bind_int64(s, 1, p->proc_id);
        sqlite3_bind_int64(s, 2, ref.id);
        sqlite3_bind_text(s, 3, b, (int)len, SQLITE_TRANSIENT);
        if (sqlite3_step(s) != SQLITE_DONE)
            set_error(p->x, "--sqlite: %s", sqlite3_errmsg(p->x->db));
        sqlite3_reset(s);
    }
}

static void export_trace_rows(struct exporter *x, int64_t proc_id, const struct wsl_process *proc)
{
    char err[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_store_open(x->run->store, proc->trace_path, err, sizeof err);
    if (!r) {
        set_error(x, "%s: %s", proc->trace_path, err);
        return;
    }
    struct trace_pass *p = xcalloc(1, sizeof *p);
    p->x = x;
    p->proc_id = proc_id;
    p->proc = proc;
    p->clock = &proc->clock;
    p->io_weight = 1;
    struct wsl_item it;
    enum wsl_read_result res;
    while (!x->failed && (res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        switch (it.type) {
        case WSL_CHUNK_PROCESS:
            p->io_weight = wsl_io_weight(&it.process.info);
            break;
        case WSL_CHUNK_API_TABLE:
            for (uint32_t i = 0; i < it.api_table.count; i++) {
                const struct wsl_api_entry *e = &it.api_table.entries[i];
                struct api_info *a = &p->api[e->id];
                free(a->base);
                free(a->symbol);
                a->known = true;
                a->category = e->category;
                a->base = xstrdup(e->base);
                a->symbol = xstrdup(e->symbol);
                a->io = wsl_is_io_category(e->category) && e->category != WSL_CAT_IO_FOLD;
                a->fold = e->category == WSL_CAT_IO_FOLD;
                a->sampled = a->io && (e->flags & WSL_API_IO_SAMPLED);
                if (a->sampled && e->category == WSL_CAT_IO_CLOSE && !strcmp(e->symbol, "close"))
                    p->close_id = e->id;
            }
            break;
        case WSL_CHUNK_PATHS:
            take_paths(p, &it);
            break;
        case WSL_CHUNK_MOUNTS:
            p->mounts = it.mounts.table;
            break;
        case WSL_CHUNK_EVENTS:
        case WSL_CHUNK_EVENTS_PACKED:
        case WSL_CHUNK_EVENTS_GAPS:
        case WSL_CHUNK_EVENTS_BITS:
            take_events(p, it.events.tid, it.events.events, it.events.count);
            break;
        default:
            break;
        }
    }
    /* ranges still open at the end of the trace end there (as the report counts them) */
    uint64_t end_ticks = p->last_ticks;
    for (size_t i = 0; i < p->open_count; i++)
        nvtx_emit(p, &p->open[i], end_ticks > p->open[i].start_ticks ? end_ticks : p->open[i].start_ticks, false);
    for (unsigned i = 0; i < WSL_MAX_API_IDS; i++) {
        free(p->api[i].base);
        free(p->api[i].symbol);
    }
    free(p->open);
    wsl_u64_map_free(&p->names);
    free(p);
    wsl_reader_close(r);
}

/* ---- the run model's tables ---- */

static void export_process(struct exporter *x, int64_t id, const struct wsl_process *p)
{
    size_t n = 0;
    for (uint32_t i = 0; i < p->argc; i++)
        n += strlen(p->argv[i]) + 1;
    char *cmd = xcalloc(1, n + 1);
    for (uint32_t i = 0, o = 0; i < p->argc; i++)
        o += (uint32_t)sprintf(cmd + o, "%s%s", i ? " " : "", p->argv[i]);
    const char *rank = wsl_process_rank_var(p, "RANK");
    row(x, ST_PROC, "iiitttiiiiiiitit", id, (int64_t)p->pid, (int64_t)p->ppid, p->exe, cmd, p->host,
        (int64_t)((p->flags & WSL_PROC_WSL2) ? 2 : (p->flags & WSL_PROC_WSL1) ? 1 : 0), rel(x, p->start_ns),
        rel(x, p->end_ns), (int64_t)p->events, (int64_t)p->dropped, (int64_t)p->truncated, (int64_t)p->gpu_device,
        rank, (int64_t)p->compiler, p->trace_path);
    free(cmd);
    const struct wsl_phases *ph = &p->phases;
    if (ph->method != WSL_STEADY_NONE) {
        static const char *const names[4] = {"start-up", "warm-up", "steady state", "teardown"};
        uint64_t t[5] = {ph->start_ns, ph->first_submit_ns, ph->steady_start_ns, ph->steady_end_ns, ph->end_ns};
        for (int i = 0; i < 4; i++) {
            bool steady = i == 2;
            row(x, ST_PHASE, steady ? "itiiiii" : "itiiinn", id, names[i], rel(x, t[i]), rel(x, t[i + 1]),
                (int64_t)(t[i + 1] >= t[i] ? t[i + 1] - t[i] : 0), (int64_t)ph->steps, (int64_t)ph->step_ns);
        }
    }
}

static void export_kernels(struct exporter *x)
{
    const struct wsl_kernels *k = &x->run->kernels;
    for (size_t i = 0; i < k->count; i++) {
        const struct wsl_kernel *e = &k->items[i];
        uint64_t timed = e->gpu_ns.count;
        row(x, ST_KERNEL, "ittiiiiiii", (int64_t)i + 1, e->name, e->mangled, (int64_t)e->launches, (int64_t)timed,
            (int64_t)e->gpu_ns.sum, (int64_t)(timed ? e->gpu_ns.sum / timed : 0), (int64_t)e->est_gpu_ns,
            (int64_t)e->idle_at_submit, (int64_t)e->captured);
    }
}

static void exec_sql(struct exporter *x, const char *sql)
{
    char *msg = NULL;
    if (!x->failed && sqlite3_exec(x->db, sql, NULL, NULL, &msg) != SQLITE_OK)
        set_error(x, "--sqlite: %s", msg ? msg : sqlite3_errmsg(x->db));
    sqlite3_free(msg);
}

int wsl_sqlite_export(const struct wsl_run *run, const char *path, char *err, size_t errlen)
{
    struct exporter x = {.run = run, .err = err, .errlen = errlen};
    /* A new file next to the target, renamed over it once whole: a failed export leaves no half database
     * and never writes into an older one. */
    char *tmp = xasprintf("%s.tmp-%ld", path, (long)getpid());
    unlink(tmp);
    if (sqlite3_open_v2(tmp, &x.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot write: %s", path, x.db ? sqlite3_errmsg(x.db) : "out of memory");
        sqlite3_close(x.db);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    exec_sql(&x, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = FILE;"
                 "PRAGMA cache_size = -65536;");
    exec_sql(&x, "BEGIN");
    exec_sql(&x, schema_sql);
    for (int i = 0; i < ST_COUNT && !x.failed; i++)
        if (sqlite3_prepare_v2(x.db, stmt_sql[i], -1, &x.st[i], NULL) != SQLITE_OK)
            set_error(&x, "--sqlite: %s", sqlite3_errmsg(x.db));
    row(&x, ST_META, "ti", "schema", (int64_t)SCHEMA_VERSION);
    row(&x, ST_META, "ti", "run_start_mono_ns", (int64_t)run->start_ns);
    row(&x, ST_META, "ti", "wall_ns", (int64_t)run->wall_ns);
    row(&x, ST_META, "ti", "processes", (int64_t)run->proc_count);
    for (size_t i = 0; i < run->proc_count && !x.failed; i++) {
        export_process(&x, (int64_t)i + 1, &run->procs[i]);
        if (run->procs[i].trace_path)
            export_trace_rows(&x, (int64_t)i + 1, &run->procs[i]);
    }
    export_kernels(&x);
    exec_sql(&x, finish_sql);
    exec_sql(&x, "DROP TABLE strings; DROP TABLE thread_names;");
    exec_sql(&x, "COMMIT");
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(x.st[i]);
    if (sqlite3_close(x.db) != SQLITE_OK && !x.failed)
        set_error(&x, "%s: cannot write: %s", path, sqlite3_errmsg(x.db));
    if (!x.failed && rename(tmp, path) != 0)
        set_error(&x, "%s: cannot write: %s", path, strerror(errno));
    if (x.failed)
        unlink(tmp);
    free(tmp);
    return x.failed ? -1 : 0;
}
#endif /* WSLSHIM_HAVE_SQLITE */
