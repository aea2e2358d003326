/* Kernels: launches counted per kernel name (names from FUNC_NAME events and
 * PATHS strings, resolved at the end of each trace), demangling, unnamed
 * handles, processes kept apart. Scenarios: kern_scenarios.c. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "kern_scenarios.h"
#include "mem_scenarios.h"
#include "unit_test.h"

#define CHECK_EQ(got, want)                                                                                 \
    CHECKF((uint64_t)(got) == (uint64_t)(want), "%s = %llu, expected %llu", #got, (unsigned long long)(got), \
           (unsigned long long)(want))

static int analyze(struct wsl_run *run, const char *const *paths, size_t n)
{
    wsl_run_init(run);
    for (size_t i = 0; i < n; i++) {
        char err[WSL_READER_ERRLEN];
        CHECKF(wsl_run_add_trace(run, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
    }
    wsl_run_finish(run);
    return 0;
}

static const struct wsl_kernel *kernel(const struct wsl_run *run, const char *name, int32_t pid)
{
    for (size_t i = 0; i < run->kernels.count; i++)
        if (strcmp(run->kernels.items[i].name, name) == 0 && (run->kernels.items[i].mangled || run->kernels.items[i].pid == pid))
            return &run->kernels.items[i];
    return NULL;
}

static uint64_t by_api(const struct wsl_run *run, const struct wsl_kernel *k, const char *api)
{
    for (unsigned a = 0; a < run->kernels.launch_api_count; a++)
        if (strcmp(run->kernels.launch_apis[a], api) == 0)
            return k->by_api[a];
    return 0;
}

int test_kern_demangle(void)
{
    const struct {
        const char *in, *out;
    } cases[] = {
        {"_Z6kernelPfi", "kernel(float*, int)"},
        {"_ZN2at6native13reduce_kernelEv", "at::native::reduce_kernel()"},
        {"_Z3addIfEvPT_S1_i", "void add<float>(float*, float*, int)"},
        {"_Zfoo", "_Zfoo"},                 /* not valid: kept */
        {"vector_add", "vector_add"},       /* extern "C": as it is */
        {"_Z", "_Z"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *d = wsl_kern_demangle(cases[i].in);
        CHECKF(strcmp(d, cases[i].out) == 0, "%s -> %s, expected %s", cases[i].in, d, cases[i].out);
        free(d);
    }
    return 0;
}

/* Names in thread 0, launches in thread 1 whose chunk comes first. */
int test_kern_names_threads(void)
{
    char path[512];
    test_path(path, sizeof path, "kernels");
    CHECK(kern_scenario_write(path, "kernels"));
    const char *paths[] = {path};
    struct wsl_run run;
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_kernels *k = &run.kernels;
    CHECK_EQ(k->launches, 20);
    CHECK_EQ(k->unnamed_launches, 6);
    CHECK_EQ(k->failed_launches, 1);
    CHECK_EQ(k->graph_launches, 3);
    CHECK_EQ(k->untracked_launches, 0);
    CHECK_EQ(k->named_handles, 5);
    CHECK_EQ(k->count, 5);
    const char *order[] = {"kernel(float*, int)", "function 0x9000", "vector_add", "at::native::reduce_kernel()",
                           "_Zfoo"};
    const uint64_t counts[] = {7, 6, 4, 2, 1};
    for (size_t i = 0; i < 5; i++) {
        CHECKF(strcmp(k->items[i].name, order[i]) == 0, "kernel %zu is %s, expected %s", i, k->items[i].name,
               order[i]);
        CHECK_EQ(k->items[i].launches, counts[i]);
    }
    CHECK(strcmp(k->items[0].mangled, "_Z6kernelPfi") == 0);
    CHECK_EQ(by_api(&run, &k->items[0], "cuLaunchKernel"), 7);   /* _ptsz under its base name */
    CHECK(k->items[1].mangled == NULL && k->items[1].pid == 8181 && k->items[1].handle == 0x9000);
    CHECK(strcmp(k->items[2].mangled, "vector_add") == 0);
    CHECK_EQ(by_api(&run, &k->items[2], "cuLaunchKernelEx"), 3); /* cuKernelGetFunction's function */
    CHECK_EQ(by_api(&run, &k->items[2], "cuLaunchKernel"), 1);   /* the CUkernel as the function */
    CHECK_EQ(by_api(&run, &k->items[3], "cuLaunchCooperativeKernel"), 2);
    CHECK(strcmp(k->items[4].mangled, "_Zfoo") == 0);
    /* the API table still has the naming calls */
    bool seen = false;
    for (size_t i = 0; i < run.api_count; i++)
        if (strcmp(run.apis[i].name, "cuModuleGetFunction") == 0) {
            CHECK_EQ(run.apis[i].ns.count, 3);
            CHECK_EQ(run.apis[i].errors, 1);
            CHECK(run.apis[i].category == WSL_CAT_FUNC_NAME);
            seen = true;
        }
    CHECK(seen);
    CHECK(strcmp(wsl_category_name(WSL_CAT_FUNC_NAME), "func_name") == 0);
    /* every category its own name (the JSON's "category" is a string; writes and folder calls had none) */
    for (unsigned c = 1; c < WSL_CAT_COUNT; c++) {
        CHECK(strcmp(wsl_category_name(c), "other") != 0);
        for (unsigned d = 1; d < c; d++)
            CHECK(strcmp(wsl_category_name(c), wsl_category_name(d)) != 0);
    }
    CHECK(strcmp(wsl_category_name(WSL_CAT_IO_WRITE), "io_write") == 0);
    CHECK(strcmp(wsl_category_name(WSL_CAT_COUNT), "other") == 0);
    CHECK_EQ(run.warning_count, 0);
    wsl_run_free(&run);
    return 0;
}

/* The same handle values in two processes name different kernels; the same
 * name in both adds up; unnamed handles stay per process. */
int test_kern_two_processes(void)
{
    char a[512], b[512];
    test_path(a, sizeof a, "kern_a");
    test_path(b, sizeof b, "kern_b");
    CHECK(kern_scenario_write(a, "kernels") && kern_scenario_write(b, "kernels_b"));
    const char *paths[] = {a, b};
    struct wsl_run run;
    if (analyze(&run, paths, 2))
        return 1;
    const struct wsl_kernels *k = &run.kernels;
    CHECK_EQ(k->launches, 35);
    CHECK_EQ(k->unnamed_launches, 7);
    CHECK_EQ(k->count, 7);
    const struct wsl_kernel *v = kernel(&run, "vector_add", 0), *f1 = kernel(&run, "kernel(float*, int)", 0),
                            *o = kernel(&run, "other_kernel", 0), *u1 = kernel(&run, "function 0x9000", 8181),
                            *u2 = kernel(&run, "function 0x9000", 8282);
    CHECK(v && f1 && o && u1 && u2 && u1 != u2);
    CHECK(v == &k->items[0]);
    CHECK_EQ(v->launches, 14);
    CHECK_EQ(f1->launches, 7);
    CHECK_EQ(o->launches, 4);
    CHECK_EQ(u1->launches, 6);
    CHECK_EQ(u2->launches, 1);
    wsl_run_free(&run);
    return 0;
}

/* No FUNC_NAME events (a trace from before the names were recorded, or names
 * the shim missed): every launch unnamed, per handle; a name id that refers
 * to a file path is no name; null function handles count in the totals. */
int test_kern_no_names(void)
{
    char path[512];
    test_path(path, sizeof path, "kern_none");
    struct mem_builder *b = mb_open(path, 9191, 0, 0);
    const uint32_t ids[] = {7};
    const char *const names[] = {"/data/x.bin"};
    mb_paths(b, ids, names, 1);
    mb_call_args(b, 0, 100, 10, "cuModuleGetFunction", 0, 0, 0xa000, 7, 0x1, 0);  /* id of a path */
    mb_call_args(b, 0, 200, 10, "cuModuleGetFunction", 0, 0, 0xb000, 99, 0x1, 0); /* id never defined */
    mb_call_args(b, 0, 300, 10, "cuKernelGetFunction", 0, 0, 0xc000, 0, 0xd000, 0); /* kernel never named */
    uint64_t handles[] = {0xa000, 0xb000, 0xc000, 0xa000, 0, 0xe000};
    for (unsigned i = 0; i < 6; i++)
        mb_call_args(b, 1, 1000 + 100 * i, 10, "cuLaunchKernel", 0, 0, handles[i], 0, 0, 0);
    mb_close(b, NULL);
    const char *paths[] = {path};
    struct wsl_run run;
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_kernels *k = &run.kernels;
    CHECK_EQ(k->launches, 6);
    CHECK_EQ(k->unnamed_launches, 6);
    CHECK_EQ(k->count, 4);      /* a000, b000, c000, e000; the null handle in no item */
    CHECK(strcmp(k->items[0].name, "function 0xa000") == 0 && k->items[0].launches == 2);
    for (size_t i = 0; i < k->count; i++)
        CHECK(k->items[i].mangled == NULL && k->items[i].pid == 9191);
    wsl_run_free(&run);
    return 0;
}

/* More distinct launched handles than WSL_KERN_MAX_HANDLES: the rest are in
 * the totals only (untracked_launches), with a warning. */
int test_kern_handles_bounded(void)
{
    char path[512];
    test_path(path, sizeof path, "kern_many");
    struct mem_builder *b = mb_open(path, 9292, 0, 0);
    const unsigned n = WSL_KERN_MAX_HANDLES + 5;
    for (unsigned i = 0; i < n; i++)
        mb_call_args(b, 0, 1000 + 10ull * i, 5, "cuLaunchKernel", 0, 0, 0x10000 + 16ull * i, 0, 0, 0);
    mb_close(b, NULL);
    const char *paths[] = {path};
    struct wsl_run run;
    if (analyze(&run, paths, 1))
        return 1;
    CHECK_EQ(run.kernels.launches, n);
    CHECK_EQ(run.kernels.count, WSL_KERN_MAX_HANDLES);
    CHECK_EQ(run.kernels.untracked_launches, 5);
    CHECK_EQ(run.kernels.unnamed_launches, WSL_KERN_MAX_HANDLES);
    bool warned = false;
    for (size_t i = 0; i < run.warning_count; i++)
        warned |= strstr(run.warnings[i], "distinct launched functions") != NULL;
    CHECK(warned);
    wsl_run_free(&run);
    return 0;
}
