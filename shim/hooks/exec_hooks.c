/*
 * exec and spawn: the new image keeps the shim (LD_PRELOAD and the WSLSHIM_*
 * settings are put back into an environment that lost them), and the trace
 * of the image being replaced is finished first, since no destructor runs
 * across exec. If exec fails, recording resumes into a new trace.
 *
 * These wrappers also run in a vfork()ed child, which shares the parent's
 * memory: there they touch no shim state and allocate nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim_internal.h"

static char shim_path[4096];
static pid_t recording_pid; /* the process whose trace state this memory holds */

static const char *const carried_vars[] = {
    "WSLSHIM_OUTPUT", "WSLSHIM_GPU_TIMING", "WSLSHIM_IO", "WSLSHIM_LOG", "WSLSHIM_MOUNTINFO", "WSLSHIM_CLOCK",
    "WSLSHIM_SIGNALS", "WSLSHIM_IO_PATHS", "WSLSHIM_IO_PATHS_KEY", "WSLSHIM_RUN_ROOT", "WSLSHIM_KEEP_HELPERS",
};
#define N_CARRIED (sizeof carried_vars / sizeof carried_vars[0])

__attribute__((constructor)) static void exec_hooks_init(void)
{
    Dl_info info;
    if (dladdr((void *)exec_hooks_init, &info) && info.dli_fname)
        snprintf(shim_path, sizeof shim_path, "%s", info.dli_fname);
#if WSL_TSAN
    /* A TSan build preloads TSan's runtime first (shim_internal.h): the two go
     * on together, as one LD_PRELOAD entry pair. */
    Dl_info rt;
    if (shim_path[0] && dladdr((void *)__tsan_init, &rt) && rt.dli_fname) {
        char both[sizeof shim_path];
        if ((size_t)snprintf(both, sizeof both, "%s:%s", rt.dli_fname, shim_path) < sizeof both)
            memcpy(shim_path, both, sizeof both);
    }
#endif
    recording_pid = getpid();
}

void wsl_exec_note_fork_child(void) { recording_pid = getpid(); }

int wsl_exec_in_vfork_child(void) { return getpid() != recording_pid; }

static const char *env_find(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static int preload_has_shim(const char *preload)
{
    if (!preload || !shim_path[0])
        return 0;
    size_t n = strlen(shim_path);
    for (const char *p = preload; (p = strstr(p, shim_path)); p += n)
        if ((p == preload || p[-1] == ':' || p[-1] == ' ') && (p[n] == 0 || p[n] == ':' || p[n] == ' '))
            return 1;
    return 0;
}

/* The environment to pass on: envp itself when it keeps the shim, else a copy
 * on the caller's stack (out, of at least count(envp) + N_CARRIED + 2 slots)
 * with LD_PRELOAD and the settings put back. */
#define ENV_SLOTS(envp) (env_count(envp) + N_CARRIED + 2)
static size_t env_count(char *const *envp)
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    return n;
}

static char *const *env_with_shim(char *const *envp, char **out, char *preload_buf, size_t preload_size)
{
    const char *preload = env_find(envp, "LD_PRELOAD");
    int missing = !preload_has_shim(preload);
    for (size_t i = 0; !missing && i < N_CARRIED; i++)
        missing = wsl_getenv(carried_vars[i]) && !env_find(envp, carried_vars[i]);
    if (!missing || !shim_path[0])
        return envp;
    size_t n = 0;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
            out[n++] = *e;
    if (preload && *preload)
        snprintf(preload_buf, preload_size, "LD_PRELOAD=%s:%s", shim_path, preload);
    else
        snprintf(preload_buf, preload_size, "LD_PRELOAD=%s", shim_path);
    out[n++] = preload_buf;
    for (size_t i = 0; i < N_CARRIED; i++) {
        if (env_find(envp, carried_vars[i]))
            continue;
        size_t len = strlen(carried_vars[i]);
        for (char **e = environ; e && *e; e++)
            if (!strncmp(*e, carried_vars[i], len) && (*e)[len] == '=')
                out[n++] = *e;
    }
    out[n] = NULL;
    return out;
}

static void *real_fn(const char *name)
{
    return wsl_real_dlsym(RTLD_NEXT, name);
}

/* Finishes this image's trace before exec or _exit; returns whether it did. */
static int before_exec(void)
{
    if (getpid() != recording_pid)
        return 0; /* a vfork child: the state is the parent's */
    wsl_writer_note_exec(1); /* a helper's trace may go: the next image's replaces it */
    wsl_writer_shutdown();
    return 1;
}

static void after_failed_exec(int finished)
{
    if (finished)
        wsl_writer_restart();
}

#define EXEC_PRELUDE(envp_in)                                                              \
    char *env_buf[ENV_SLOTS(envp_in)];                                                     \
    char preload_buf[sizeof shim_path + 8192];                                             \
    char *const *env = env_with_shim(envp_in, env_buf, preload_buf, sizeof preload_buf);   \
    int finished = before_exec();

#define EXEC_EPILOGUE(rc)                                                                  \
    int saved = errno;                                                                     \
    after_failed_exec(finished);                                                           \
    errno = saved;                                                                         \
    return rc;

WSL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    int (*real)(const char *, char *const[], char *const[]) = real_fn("execve");
    EXEC_PRELUDE(envp)
    int rc = real ? real(path, argv, env) : (errno = ENOSYS, -1);
    EXEC_EPILOGUE(rc)
}

WSL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    int (*real)(const char *, char *const[], char *const[]) = real_fn("execvpe");
    EXEC_PRELUDE(envp)
    int rc = real ? real(file, argv, env) : (errno = ENOSYS, -1);
    EXEC_EPILOGUE(rc)
}

WSL_EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

WSL_EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

WSL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    int (*real)(int, char *const[], char *const[]) = real_fn("fexecve");
    EXEC_PRELUDE(envp)
    int rc = real ? real(fd, argv, env) : (errno = ENOSYS, -1);
    EXEC_EPILOGUE(rc)
}

/* execl, execlp, execle: gather the arguments, then go through the above. */
#define GATHER_ARGS(arg0, ap, argv)                                                        \
    size_t argc_ = 1;                                                                      \
    va_start(ap, arg0);                                                                    \
    while (va_arg(ap, char *))                                                             \
        argc_++;                                                                           \
    va_end(ap);                                                                            \
    char *argv[argc_ + 1];                                                                 \
    argv[0] = (char *)arg0;                                                                \
    va_start(ap, arg0);                                                                    \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                                 \
        argv[i_] = va_arg(ap, char *);

WSL_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    GATHER_ARGS(arg, ap, argv)
    va_end(ap);
    return execve(path, argv, environ);
}

WSL_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    GATHER_ARGS(arg, ap, argv)
    va_end(ap);
    return execvpe(file, argv, environ);
}

WSL_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    GATHER_ARGS(arg, ap, argv)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

/* _exit and _Exit skip the destructors: finish the trace first (Python's
 * multiprocessing workers, for one, always leave this way). _exit is
 * async-signal-safe and is called from signal handlers: the trace is ended
 * by the lock-free handshake with the writer, never under its lock. */
static void before_exit(void)
{
    if (getpid() == recording_pid)
        wsl_writer_final_flush(2000);
}

WSL_EXPORT void _exit(int status)
{
    void (*real)(int) = real_fn("_exit");
    before_exit();
    if (real)
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

WSL_EXPORT void _Exit(int status)
{
    void (*real)(int) = real_fn("_Exit");
    before_exit();
    if (real)
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* posix_spawn: the parent goes on, so only the child's environment matters. */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

static int spawn_with_shim(const char *name, pid_t *pid, const char *path,
                           const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                           char *const argv[], char *const envp[])
{
    spawn_fn real = (spawn_fn)real_fn(name);
    if (!real)
        return ENOSYS;
    char *env_buf[ENV_SLOTS(envp)];
    char preload_buf[sizeof shim_path + 8192];
    char *const *env = env_with_shim(envp, env_buf, preload_buf, sizeof preload_buf);
    return real(pid, path, fa, attr, argv, env);
}

WSL_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_with_shim("posix_spawn", pid, path, fa, attr, argv, envp);
}

WSL_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_with_shim("posix_spawnp", pid, file, fa, attr, argv, envp);
}
