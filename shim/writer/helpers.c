/*
 * Short helper processes (wslshim run). A wrapper script (a pyenv shim) runs many short helper processes (bash,
 * sed, cat, head...) before it execs the real program, each of which would
 * leave a trace. Under `wslshim run` (WSLSHIM_RUN_ROOT set, the pid of the
 * process the launcher started) a trace that ends with nothing of interest in
 * it is removed when it ends, and one line goes to wslshim-helpers.txt in the
 * trace folder (the launcher counts them). Nothing of interest: no CUDA or
 * NVTX event (only file calls), no driver, no events dropped, at most
 * HELPER_MAX_BYTES read, written or mapped on files the shim saw opened (a
 * pipe, stdout: not counted), at most HELPER_MAX_DIR_OPS renames, unlinks or
 * mkdirs, less than HELPER_MAX_NS since the image started, ended by exit or
 * exec (not by a signal: signals.c keeps it), and no trace in the folder,
 * written since it started, of a child of this pid (a parent of a kept trace
 * stays). The run's root process keeps the trace of its last image (exit),
 * and drops only images it exec'd away from. WSLSHIM_KEEP_HELPERS=1 keeps
 * every trace. A killed helper (SIGKILL) leaves its trace. The counts are
 * gathered by the writer while it encodes events, and only while the trace
 * may still be a helper's. docs/usage.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "writer_internal.h"

#define HELPER_MAX_NS 1000000000ull
#define HELPERS_FILE "wslshim-helpers.txt"

static int helper_root_pid;      /* WSLSHIM_RUN_ROOT, 0: not under wslshim run, or keep every trace */
int wsl_helper_possible;         /* the writer's: nothing of interest written yet */
uint64_t wsl_helper_bytes;
unsigned wsl_helper_dir_ops;
static _Atomic int helper_exec;  /* the trace ends for an exec (exec_hooks.c) */
static _Atomic int helper_keep;  /* keep it whatever it holds (a signal ended the process) */

/* On a program thread (writer_open, writer.c): the settings, read from the environment now. */
void wsl_helper_config(void)
{
    const char *root = wsl_getenv("WSLSHIM_RUN_ROOT"), *keep = wsl_getenv("WSLSHIM_KEEP_HELPERS");
    helper_root_pid = root && *root && !(keep && *keep && strcmp(keep, "0") != 0) ? atoi(root) : 0;
    wsl_helper_possible = helper_root_pid > 0;
    wsl_helper_bytes = 0;
    wsl_helper_dir_ops = 0;
    atomic_store(&helper_keep, 0);
}

void wsl_writer_note_exec(int execing) { atomic_store(&helper_exec, execing); }

void wsl_writer_keep_trace(void) { atomic_store(&helper_keep, 1); }

/* The folder of the trace at wsl_trace_path (a copy in dir). */
static void trace_folder(char *dir, size_t size)
{
    snprintf(dir, size, "%s", wsl_trace_path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
}

/* Is there, in the trace's folder, a trace of a child of this pid, written
 * since this image started? Only the names that start as the pattern's file
 * name does (up to its first %), and only files written since. */
static int helper_children_kept(const char *dir)
{
    const char *pat = strrchr(wsl_cfg.output_pattern, '/');
    pat = pat ? pat + 1 : wsl_cfg.output_pattern;
    size_t prefix = strcspn(pat, "%");
    DIR *d = opendir(dir);
    if (!d)
        return 1; /* cannot tell: keep it */
    int found = 0, self = (int)getpid();
    double since = (double)wsl_start_real / 1e9 - 1.0;
    struct dirent *e;
    char path[PATH_MAX];
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, pat, prefix) != 0 || !strcmp(e->d_name, HELPERS_FILE))
            continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path || !strcmp(path, wsl_trace_path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9 < since)
            continue;
        int ppid = -1, pid = wsl_trace_pid(path, &ppid);
        found = pid >= 0 && pid != self && ppid == self;
    }
    closedir(d);
    return found;
}

/* At the trace's end (writer_finish, the trace closed): removes a helper's
 * trace, and notes it in the folder's HELPERS_FILE. */
void wsl_helper_drop_if_one(void)
{
    if (!wsl_helper_possible || atomic_load(&helper_keep) || wsl_trace_write_failed || wsl_events_dropped ||
        wsl_driver_loaded() || !wsl_trace_path[0])
        return;
    if (helper_root_pid == (int)getpid() && !atomic_load(&helper_exec))
        return; /* the run's program, its last image */
    if (wsl_mono_ns() - wsl_start_mono >= HELPER_MAX_NS)
        return;
    char dir[PATH_MAX];
    trace_folder(dir, sizeof dir);
    if (helper_children_kept(dir))
        return;
    if (syscall(SYS_unlinkat, AT_FDCWD, wsl_trace_path, 0) != 0)
        return;
    char exe[PATH_MAX], line[PATH_MAX + 64], file[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    if (wsl_cfg.io_paths_hash || !*name)
        name = "-";
    int n = snprintf(line, sizeof line, "%d %d %s%s\n", (int)getpid(), (int)getppid(), name,
                     atomic_load(&helper_exec) ? " exec" : "");
    if ((size_t)snprintf(file, sizeof file, "%s/" HELPERS_FILE, dir) >= sizeof file)
        return;
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) != n)
            wsl_log(WSL_LOG_DEBUG, "cannot note the helper in %s", file);
        close(fd);
    }
    wsl_log(WSL_LOG_INFO, "%s removed: a short helper process (WSLSHIM_KEEP_HELPERS=1 keeps it)", wsl_trace_path);
}

