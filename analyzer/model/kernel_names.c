/*
 * Kernels by name: which analysis op a category is, a mangled name made readable, the framework
 * the run's kernel names tell (PyTorch, JAX, CuPy, Triton), and the advice for fewer launches in
 * that framework's terms.
 */
#include "kernel_analysis.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wslshim/trace_format.h"

/* libstdc++'s demangler (the analyzer links libstdc++ for it). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

enum wsl_kern_op wsl_kern_op_of(unsigned category, const char *base)
{
    if (category == WSL_CAT_OTHER && base) {
        if (!strcmp(base, "cuStreamBeginCapture") || !strcmp(base, "cuStreamBeginCaptureToGraph"))
            return WSL_KERN_CAPTURE_BEGIN;
        if (!strcmp(base, "cuStreamEndCapture"))
            return WSL_KERN_CAPTURE_END;
    }
    switch (category) {
    case WSL_CAT_FUNC_NAME: return WSL_KERN_FUNC_NAME;
    case WSL_CAT_LAUNCH: return WSL_KERN_LAUNCH;
    case WSL_CAT_GRAPH: return WSL_KERN_GRAPH;
    case WSL_CAT_GPU_KERNEL: return WSL_KERN_GPU_TIME;
    default: return WSL_KERN_NONE;
    }
}

char *wsl_kern_demangle(const char *mangled)
{
    if (mangled[0] == '_' && mangled[1] == 'Z') {
        int status = -1;
        char *d = __cxa_demangle(mangled, NULL, NULL, &status);
        if (d && status == 0) {
            char *copy = xstrdup(d);    /* xstrdup'd: callers free with the rest */
            free(d);
            return copy;
        }
        free(d);
    }
    return xstrdup(mangled);
}

const char *wsl_kern_framework(const struct wsl_kernels *k)
{
    uint64_t torch = 0, jax = 0, cupy = 0, triton = 0;
    for (size_t i = 0; i < k->count; i++) {
        const struct wsl_kernel *kn = &k->items[i];
        const char *n = kn->mangled ? kn->mangled : "";
        if (strstr(n, "at6native") || strstr(n, "at::native") || strstr(n, "at_cuda_detail") || strstr(n, "2at") ||
            strstr(n, "c10"))
            torch += kn->launches;
        else if (strstr(n, "cupy"))
            cupy += kn->launches;
        else if (strstr(n, "_fusion") || strstr(n, "fusion_") || !strncmp(n, "wrapped_", 8) || !strncmp(n, "loop_", 5) ||
                 !strncmp(n, "input_", 6) || strstr(n, "xla"))
            jax += kn->launches;
        else if (!strncmp(n, "triton_", 7) || strstr(n, "triton"))
            triton += kn->launches;
    }
    uint64_t best = torch;
    const char *name = torch ? "pytorch" : NULL;
    if (jax > best)
        best = jax, name = "jax";
    if (cupy > best)
        best = cupy, name = "cupy";
    if (triton > best && !torch)
        name = "triton";
    return name;
}

const char *wsl_kern_fewer_launches_advice(const char *fw)
{
    if (fw && !strcmp(fw, "jax"))
        return "Hand XLA whole computations, not single operations: jax.jit the training or update step (and the "
               "function around a Python loop), express loops with jax.lax.scan or jax.lax.fori_loop instead of "
               "Python for-loops, keep arrays on the device, and call block_until_ready() only where a result is "
               "needed.";
    if (fw && !strcmp(fw, "cupy"))
        return "Fuse array expressions into one kernel (cupy.fuse, cupy.ElementwiseKernel or a RawKernel), work on "
               "larger arrays per call, and replay a fixed sequence of kernels as a CUDA graph "
               "(cupy.cuda.Stream.begin_capture / end_capture, then graph.launch()).";
    if (fw && !strcmp(fw, "pytorch"))
        return "Cut the Python and framework work per operation: capture the step into a CUDA graph and replay it "
               "(torch.cuda.graphs, or torch.compile(model, mode=\"reduce-overhead\"), which does it for you); "
               "torch.compile(model) fuses operations into fewer kernels; fused optimizers (fused=True or "
               "foreach=True); a larger batch so each kernel does more.";
    return "Submit fewer, larger pieces of work: fuse operations into fewer kernels, replay a fixed sequence of "
           "kernels as a CUDA graph (cuStreamBeginCapture / cuGraphLaunch), and give each kernel more work.";
}
