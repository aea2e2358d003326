/*
 * Fuzz target over the trace reader and the whole analyzer (run model, rules,
 * text and JSON reports). The first input byte picks the form:
 *   even: the rest is an uncompressed trace stream (file header and chunks),
 *         compressed here, so that mutations reach the chunk parsers;
 *   odd:  the rest is the trace file's bytes as they are (the zstd layer).
 * Built with clang -fsanitize=fuzzer,address,undefined (.ci/run), or with a
 * replay main (replay_main.c) that runs saved inputs under ctest.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zstd.h>

#include "analysis.h"
#include "rules.h"
#include "report_output.h"
#include "trace_reader.h"

static void read_all_items(const void *data, size_t size)
{
    char err[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return;
    struct wsl_item item;
    while (wsl_reader_next(r, &item) == WSL_READ_ITEM) {
        size_t pos = 0;
        struct wsl_path_ref ref;
        if (item.type == WSL_CHUNK_PATHS)
            while (wsl_paths_next(&item, &pos, &ref))
                ;
    }
    (void)wsl_reader_message(r);
    wsl_reader_close(r);
}

static void analyze(const void *data, size_t size)
{
    int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
    if (fd < 0)
        return;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct wsl_run run;
    wsl_run_init(&run);
    char err[WSL_READER_ERRLEN];
    if (wsl_run_add_trace(&run, path, err, sizeof err) == 0) {
        wsl_run_finish(&run);
        FILE *devnull = fopen("/dev/null", "w");
        if (devnull) {
            report_write_json(&run, NULL, NULL, devnull);
            report_write_text(&run, devnull, false);
            fclose(devnull);
        }
    }
    wsl_run_free(&run);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int raw = data[0] & 1;
    data++, size--;
    if (raw) {
        read_all_items(data, size);
        analyze(data, size);
        return 0;
    }
    size_t cap = ZSTD_compressBound(size);
    void *z = malloc(cap);
    if (!z)
        return 0;
    size_t n = ZSTD_compress(z, cap, data, size, 1);
    if (!ZSTD_isError(n)) {
        read_all_items(z, n);
        analyze(z, n);
    }
    free(z);
    return 0;
}
