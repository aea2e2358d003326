#!/usr/bin/env python3
"""libwslshim.so exports exactly the interposed entry points: every row of
cuda_api.def and io_api.def, the lookup and process wrappers, the NVTX injection entry and getenv, the calls that make threads, and nothing else
(it is built with -fvisibility=hidden).
    exports_check.py SHIM HOOK_ROWS_EXE IO_API_DEF"""
import re, subprocess, sys

shim, rows_exe, io_def = sys.argv[1:4]
cuda = {l.split()[0] for l in subprocess.run([rows_exe], capture_output=True, text=True, check=True).stdout.splitlines() if l.strip()}
io = set(re.findall(r"^WSL_IO\((\w+),", open(io_def).read(), re.M))
other = {"cuGetProcAddress", "cuGetProcAddress_v2", "dlsym", "execve", "execv", "execvp", "execvpe", "execl",
         "execlp", "execle", "fexecve", "posix_spawn", "posix_spawnp", "_exit", "_Exit", "chdir", "fchdir",
         "getenv", "InitializeInjectionNvtx2",  # NVTX: shim/hooks/nvtx_hooks.c
         "sigaction", "signal", "abort", "close_range", "closefrom", "bsd_signal", "sysv_signal",
         # descriptors copied: the fd table follows them (shim/hooks/io/fds.c)
         "dup", "dup2", "dup3", "fcntl", "fcntl64",
         # the calls that give a program threads of its own (shim/recorder/program_threads.c)
         "pthread_create", "pthread_cancel", "thrd_create", "timer_create", "mq_notify", "aio_read",
         "aio_read64", "aio_write", "aio_write64", "aio_fsync", "aio_fsync64", "lio_listio",
         "lio_listio64", "getaddrinfo_a",
         # and the ends of a thread: the writer shares the program's descriptors before its last one ends
         "pthread_exit", "thrd_exit"}

want = cuda | io | other
# A ThreadSanitizer build also exports the callback TSan's runtime makes once it has started
# (shim/recorder/runtime.c); the runtime itself is then among the shim's needed libraries.
needed = subprocess.run(["readelf", "-d", shim], capture_output=True, text=True, check=True).stdout
if "libtsan" in needed:
    want.add("__tsan_on_initialize")
out = subprocess.run(["nm", "-D", "--defined-only", shim], capture_output=True, text=True, check=True).stdout
have = {l.split()[-1].split("@")[0] for l in out.splitlines() if l.split() and l.split()[-2] in ("T", "W", "i")}
missing, extra = sorted(want - have), sorted(have - want)
if missing or extra:
    sys.exit(f"FAIL: not exported: {missing}; exported but not interposed: {extra}")
print(f"OK: {len(have)} exported symbols: {len(cuda)} CUDA variants, {len(io)} libc I/O, {len(other)} others")
