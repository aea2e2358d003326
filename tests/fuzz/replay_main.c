/* Runs the fuzz target over saved inputs (files, or every file in a
 * directory) without libFuzzer: the corpus as a regression test under ctest,
 * and under the sanitizer build. Prints how many inputs ran. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_trace_replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_trace_replay: %s: not found\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 2;
            count++;
            continue;
        }
        struct dirent **names;
        int k = scandir(argv[i], &names, NULL, alphasort);
        for (int j = 0; j < k; j++) {
            if (names[j]->d_name[0] != '.') {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], names[j]->d_name);
                if (run_file(path) != 0)
                    return 2;
                count++;
            }
            free(names[j]);
        }
        free(names);
    }
    printf("fuzz_trace_replay: %lu inputs ran\n", count);
    return 0;
}
