/*
 * The functions behind the shim's own: libc's dlsym, through which every layer
 * finds the next definition of a function it interposes (wsl_real_dlsym,
 * wsl_real_resolve), and libc's getenv, through which the shim reads its
 * settings (wsl_getenv). The shim exports a getenv of its own (the NVTX
 * injection hook, hooks/nvtx_hooks.c); its own questions go past it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "shim_internal.h"

/* ---- the real dlsym ----------------------------------------------------------------- */
_Atomic wsl_dlsym_fn wsl_real_dlsym_ptr; /* threads may race to the first lookup: same answer */

/* Uninstrumented under TSan: its runtime's own lookups come through here while
 * it starts (shim_internal.h). */
WSL_NO_TSAN wsl_dlsym_fn wsl_real_dlsym_find(void)
{
    wsl_dlsym_fn f = (wsl_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = (wsl_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!f)
        f = (wsl_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64's first version */
    atomic_store_explicit(&wsl_real_dlsym_ptr, f, memory_order_relaxed);
    return f;
}

WSL_NO_TSAN void *wsl_real_dlsym(void *handle, const char *name)
{
    wsl_dlsym_fn f = atomic_load_explicit(&wsl_real_dlsym_ptr, memory_order_relaxed);
    if (!f)
        f = wsl_real_dlsym_find();
    return f ? f(handle, name) : NULL;
}

/* ---- the environment ---------------------------------------------------------------- */
_Atomic wsl_getenv_fn wsl_real_getenv_ptr;

char *wsl_getenv_first(const char *name)
{
    wsl_getenv_fn f = (wsl_getenv_fn)wsl_real_dlsym(RTLD_NEXT, "getenv");
    if (!f) { /* cannot happen with glibc; answer from environ as getenv would */
        size_t n = strlen(name);
        for (char **e = environ; e && *e; e++)
            if (!strncmp(*e, name, n) && (*e)[n] == '=')
                return *e + n + 1;
        return NULL;
    }
    atomic_store_explicit(&wsl_real_getenv_ptr, f, memory_order_relaxed);
    return f(name);
}
